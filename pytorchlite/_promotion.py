"""Type promotion with PyTorch's three tiers: tensors with dimensions outrank 0-d
tensors, which outrank Python scalars ("weak"), unless the lower tier is of a higher
category (bool < integer < floating)."""

from pytorchlite import _dtype as D
from pytorchlite._core import TensorBase as Tensor

_PROMOTE = D._PROMOTE_TABLE


def _combine(higher, lower):
    if higher is None:
        return lower
    if lower is None:
        return higher
    if higher.is_floating_point:
        return higher
    if higher is D.bool or lower.is_floating_point:
        return _PROMOTE[(higher, lower)]
    return higher


def scalar_dtype(v):
    """The dtype a Python scalar contributes as a weak operand."""
    if isinstance(v, bool):
        return D.bool
    if isinstance(v, int):
        return D.int64
    if isinstance(v, float):
        return D.get_default_dtype()
    raise TypeError(f"expected a Tensor or a Python number, got {type(v).__name__}")


def result_type_of(operands):
    dim_r = zero_r = wrapped_r = None
    for x in operands:
        if isinstance(x, Tensor):
            if x._shape:
                dim_r = x._dtype if dim_r is None else _PROMOTE[(dim_r, x._dtype)]
            else:
                zero_r = x._dtype if zero_r is None else _PROMOTE[(zero_r, x._dtype)]
        else:
            d = scalar_dtype(x)
            wrapped_r = d if wrapped_r is None else _PROMOTE[(wrapped_r, d)]
    return _combine(dim_r, _combine(zero_r, wrapped_r))


def result_type(tensor, other):
    """`pytorchlite.result_type(tensor, other)`: the dtype an arithmetic op on the two
    would produce.

    >>> import pytorchlite
    >>> pytorchlite.result_type(pytorchlite.tensor([1, 2], dtype=pytorchlite.int32), 1.0)
    pytorchlite.float32
    """
    for name, v in (("tensor", tensor), ("other", other)):
        if not isinstance(v, (Tensor, bool, int, float)):
            raise TypeError(f"result_type(): argument '{name}' must be Tensor or Number, not {type(v).__name__}")
    return result_type_of((tensor, other))
