"""Composite shape and indexing operators: stacking, repeating, rolling, rotating,
triangles, take_along_dim, repeat_interleave, and the tensor and tuple forms of
tensor_split, nonzero and where, written in views, cat, gather and index_select."""

from pytorchlite import _dtype as D
from pytorchlite._core import storage_overflowed as _storage_overflowed
from pytorchlite._ops import ops as F


def hstack(tensors):
    if not tensors:
        raise RuntimeError("hstack expects a non-empty TensorList")
    ts = [t if t.dim() >= 1 else t.reshape(1) for t in tensors]
    return F.cat(ts, 0 if ts[0].dim() == 1 else 1)


def vstack(tensors):
    if not tensors:
        raise RuntimeError("vstack expects a non-empty TensorList")
    return F.cat([t.reshape(1, -1) if t.dim() < 2 else t for t in tensors], 0)


def dstack(tensors):
    if not tensors:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return F.cat([_as3d(t) for t in tensors], 2)


def _as3d(t):
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.reshape(1, -1, 1)
    if t.dim() == 2:
        return t.unsqueeze(-1)
    return t


def _check_dim(dim, ndim):
    n = ndim if ndim else 1
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim % n


def take_along_dim(self, indices, dim=None):
    if indices.dtype is not D.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got "
                           f"{indices.dtype._torch_name}")
    if dim is None:
        return self.reshape(-1).gather(0, indices.reshape(-1))
    if self.dim() != indices.dim():
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same number of "
                           f"dimensions, but got {self.dim()} dimensions for input, and {indices.dim()} "
                           f"dimensions for indices")
    nd = self.dim()
    d = _check_dim(dim, nd)
    ss, si = list(self.shape), list(indices.shape)
    for j in range(nd):
        if j == d or ss[j] == si[j]:
            continue
        if ss[j] != 1 and si[j] != 1:
            raise RuntimeError(f"The size of tensor a ({ss[j]}) must match the size of tensor b ({si[j]}) at "
                               f"non-singleton dimension {j}")
        ss[j] = si[j] = ss[j] if si[j] == 1 else si[j]
    return self.expand(ss).gather(d, indices.expand(si))


def repeat(self, repeats):
    reps = list(repeats)
    if len(reps) < self.dim():
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number of dimensions "
                           "of tensor")
    shape = [1] * (len(reps) - self.dim()) + list(self.shape)
    target = [r * n for r, n in zip(reps, shape)]
    for r, n in zip(reps, target):
        if r < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {target}")
    # the result's size first: the expanded intermediate below has more dims and could fail
    # with a different message
    err = _storage_overflowed(target, self.dtype.itemsize)
    if err is not None:
        raise err
    inter, big = [], []
    for r, n in zip(reps, shape):
        inter += [1, n]
        big += [r, n]
    return self.reshape(inter).expand(big).clone().reshape(target)


def tile(self, dims):
    reps = list(dims)
    reps = [1] * (self.dim() - len(reps)) + reps
    return self.repeat(reps)


def repeat_interleave_int(self, repeats, dim=None, *, output_size=None):
    x, d = _interleave_input(self, dim)
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    shape = list(x.shape)
    big = shape[:d + 1] + [repeats] + shape[d + 1:]
    shape[d] *= repeats
    return x.unsqueeze(d + 1).expand(big).clone().reshape(shape)


def repeat_interleave_tensor(self, repeats, dim=None, *, output_size=None):
    x, d = _interleave_input(self, dim)
    if repeats.dim() > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    n = x.shape[d]
    if repeats.dim() == 0 or repeats.shape[0] == 1:
        repeats = repeats.reshape(1).expand(n)
    elif repeats.shape[0] != n:
        raise RuntimeError(f"repeats must have the same size as input along dim, but got repeats.size(0) = "
                           f"{repeats.shape[0]} and input.size({d}) = {n}")
    return x.index_select(d, F._repeat_interleave_index(repeats, output_size=output_size))


def _interleave_input(self, dim):
    """The tensor repeat_interleave works on (flattened without dim, 1-d at least) and its dim."""
    x = self.reshape(-1) if dim is None else self
    d = _check_dim(0 if dim is None else dim, x.dim())
    return (x.reshape(1) if x.dim() == 0 else x), d


def fliplr(self):
    if self.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return self.flip(1)


def flipud(self):
    if self.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return self.flip(0)


def roll(self, shifts, dims=()):
    shifts, dims = list(shifts), list(dims)
    if not shifts:
        raise RuntimeError("`shifts` required")
    if not dims:
        if len(shifts) != 1:
            raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
        return roll(self.reshape(-1), shifts, [0]).view(self.shape)
    if len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}")
    out = self
    for s, d in zip(shifts, dims):
        n = out.shape[d]
        s = s % n if n else 0
        if s:
            out = F.cat([out.narrow(d, n - s, s), out.narrow(d, 0, n - s)], d)
    return out if out is not self else self.clone()


def rot90(self, k=1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    nd = self.dim()
    if nd < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {nd}")
    d0, d1 = dims
    for x in (d0, d1):
        if not -nd <= x < nd:
            raise IndexError(f"Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {x})")
    if d0 % nd == d1 % nd:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    k = k % 4
    if k == 1:
        return self.flip(d1).transpose(d0, d1)
    if k == 2:
        return self.flip(d0, d1)
    if k == 3:
        return self.flip(d0).transpose(d0, d1)
    return self.clone()


def tril(self, diagonal=0):
    return self.masked_fill(_triangle("tril", self, diagonal, above=True), 0)


def triu(self, diagonal=0):
    return self.masked_fill(_triangle("triu", self, diagonal, above=False), 0)


def _triangle(op, t, diagonal, above):
    """The mask of the entries strictly above (or below) the given diagonal."""
    if t.dim() < 2:
        raise RuntimeError(f"{op}: input tensor must have at least 2 dimensions")
    n, m = t.shape[-2], t.shape[-1]
    cols = F.arange(m, device=t.device)
    rows = F.arange(n, device=t.device).unsqueeze(-1) + diagonal
    return cols > rows if above else cols < rows


def tensor_split_tensor(self, tensor_indices_or_sections, dim=0):
    # the tensor form: a 0-d tensor of sections or a 1-d tensor of indices, as PyTorch
    s = tensor_indices_or_sections
    if s.dtype is not D.int64:
        raise RuntimeError(f"tensor_split expected tensor_indices_or_sections to have dtype of long, but got "
                           f"{s.dtype._torch_name}")
    if s.dim() > 1:
        raise RuntimeError("tensor_split expected tensor_indices_or_sections to be a zero-dimensional or "
                           f"one-dimensional tensor, but got a tensor with {s.dim()} dims")
    if s.dim() == 0:
        return F.tensor_split(self, s.item(), dim)
    return F.tensor_split(self, s.tolist(), dim)


def nonzero_tuple(self, *, as_tuple=False):
    if not as_tuple:
        return F.nonzero(self)
    return nonzero_numpy(self)


def nonzero_numpy(self):
    # one 1-d tensor of indices per dim (a 0-d input counts as 1-d)
    return F.unbind(F.nonzero(self if self.dim() else self.unsqueeze(0)), 1)
