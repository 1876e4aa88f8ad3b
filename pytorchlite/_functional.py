"""Python-level operators over the generated ones, where PyTorch's Python API takes one
name with several argument kinds (its overloads, or torch/functional.py and
torch/_tensor.py): `split` with an int or a list of sizes, `tensor_split` with sections,
indices or a tensor of either, `nonzero(as_tuple=)`.

Each picks the generated binding for the kind it was given (so device dispatch, and
later autograd, are the bindings'). `install` puts them in the pytorchlite namespace and
on Tensor, replacing the single-kind bindings of the same name.
"""

from pytorchlite import _dtype as D
from pytorchlite._tensor import Tensor
from pytorchlite.generated import functions as _F

_split_int = _F.split
_tensor_split_int = _F.tensor_split
_nonzero = _F.nonzero


def _is_int(v):
    return not isinstance(v, bool) and (isinstance(v, int) or (hasattr(v, "__index__") and not isinstance(v, Tensor)))


def split(tensor, split_size_or_sections, dim=0):
    """Views of `split_size` elements along `dim` (the last may be shorter), or, given a
    list, views of those sizes.

    >>> pytorchlite.split(pytorchlite.arange(5), [1, 4])
    (tensor([0]), tensor([1, 2, 3, 4]))
    """
    s = split_size_or_sections
    if isinstance(s, Tensor) and not s._shape:
        s = s.item()
    if _is_int(s):
        return _split_int(tensor, s, dim)
    return _F.split_with_sizes(tensor, s, dim)


def _tensor_split_arg(s):
    if isinstance(s, Tensor):
        if s._dtype is not D.int64:
            from pytorchlite._advanced_indexing import _torch_name
            raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                               f"{_torch_name(s._dtype)}")
        if len(s._shape) > 1:
            raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                               f"one-dimensional tensor, but got a tensor with {len(s._shape)} dims")
        return s.item() if not s._shape else tuple(s.tolist())
    return s


def tensor_split(input, indices_or_sections, dim=0):
    """Exactly `sections` views along `dim` (the first `size % sections` one longer), or
    the views between the given indices (NumPy's array_split).

    >>> pytorchlite.tensor_split(pytorchlite.arange(7), [1, 5])
    (tensor([0]), tensor([1, 2, 3, 4]), tensor([5, 6]))
    """
    s = _tensor_split_arg(indices_or_sections)
    if _is_int(s):
        return _tensor_split_int(input, s, dim)
    return _F._tensor_split_indices(input, s, dim)


def nonzero(input, *, as_tuple=False):
    """The indices of the nonzero entries: a [n, input.dim()] int64 tensor, or with
    `as_tuple=True` one 1-d tensor per dim (a 0-d input counts as 1-d).

    >>> pytorchlite.nonzero(pytorchlite.tensor([0, 3, 4]), as_tuple=True)
    (tensor([1, 2]),)
    """
    if not as_tuple:
        return _nonzero(input)
    t = input if input._shape else input.unsqueeze(0)
    return _F.unbind(_nonzero(t), 1)


_view_shape = _F.METHODS["view"]


def view(self, *shape, dtype=None, size=None):
    """`self.view(*shape)` (see the `view` operator) or `self.view(dtype)`: the same
    bytes read as another dtype.

    >>> pytorchlite.arange(4).view(2, 2).shape
    pytorchlite.Size([2, 2])
    """
    if dtype is None and len(shape) == 1 and isinstance(shape[0], D.dtype):
        dtype = shape[0]
    if dtype is not None:
        return _F._view_dtype(self, dtype)
    return _view_shape(self, *shape) if size is None else _view_shape(self, size)


def einsum(equation, *operands):
    """Einstein summation over the operands, given one by one or as one list (see the
    `einsum` operator).

    >>> pytorchlite.einsum('i,i->', pytorchlite.tensor([1., 2.]), pytorchlite.tensor([3., 4.]))
    tensor(11.)
    """
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = operands[0]
    return _F.einsum(equation, list(operands))


def tensordot(a, b, dims=2):
    """Contract the last `dims` dims of a with the first `dims` of b, or the dims listed in
    `dims = (dims_a, dims_b)` (see the `tensordot` operator).

    >>> pytorchlite.tensordot(pytorchlite.ones(2, 3), pytorchlite.ones(3, 4), dims=([1], [0])).shape
    pytorchlite.Size([2, 4])
    """
    if isinstance(dims, Tensor):
        dims = dims.item() if not dims._shape else dims.tolist()
    if _is_int(dims):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        na = len(a.shape)
        if dims > na:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        return _F.tensordot(a, b, list(range(na - dims, na)), list(range(dims)))
    da, db = dims
    da = [da] if _is_int(da) else list(da)
    db = [db] if _is_int(db) else list(db)
    return _F.tensordot(a, b, da, db)


def _method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


def install(namespace, tensor_cls):
    for fn in (split, tensor_split, nonzero):
        namespace[fn.__name__] = fn
        setattr(tensor_cls, fn.__name__, _method(fn))
    namespace["einsum"] = einsum            # functions only, as in PyTorch
    namespace["tensordot"] = tensordot
    tensor_cls.view = view
