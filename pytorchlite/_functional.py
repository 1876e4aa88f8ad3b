"""torch.functional's Python-level forms: `einsum` with its operands given one by one,
and `tensordot` with `dims` as a count or as two lists (or a tensor of either). They
normalise the arguments for the operators of the same name in ops.yaml, as PyTorch's
torch/functional.py does for its native ones, and are the pytorchlite namespace's
`einsum` and `tensordot` (functions only, as in PyTorch).
"""

from pytorchlite._tensor import Tensor
from pytorchlite.generated import functions as _F


def _is_int(v):
    return not isinstance(v, bool) and (isinstance(v, int) or (hasattr(v, "__index__") and not isinstance(v, Tensor)))


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
