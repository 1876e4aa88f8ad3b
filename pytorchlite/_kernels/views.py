"""Kernel entries for views and shape operators (device-agnostic: metadata only).

A view is new sizes, strides and offset over the same Storage, sharing the base's version
counter (pytorchlite/_views.make_view), so a write through either is seen by the other
and by autograd's saved-tensor checks. The only operators here that may copy are
`reshape`/`reshape_as`/`ravel` (when the strides cannot express the new shape) and
`resize_` (when the storage is too small).

Argument checks and messages follow ATen (TensorShape.cpp, InferSize.h); dims are wrapped
with pytorchlite._argparse.wrap_dim, which raises PyTorch's IndexError.
"""

from pytorchlite._argparse import wrap_dim
from pytorchlite._core import (check_numel, contiguous_strides, copy_into, make, numel as _numel,
                               storage_nbytes_strided, storage_overflowed)
from pytorchlite._views import make_view


# --- shape arithmetic -------------------------------------------------------------------

def infer_size(shape, numel):
    """`shape` with its one -1 replaced so that it holds `numel` elements (ATen infer_size)."""
    newsize = 1
    infer = None
    for i, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = i
        elif s >= 0:
            newsize *= s
        else:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
    if numel == newsize or (infer is not None and newsize > 0 and numel % newsize == 0):
        if infer is None:
            if not numel and len(shape) > 2:
                check_numel(shape)    # a 0 in the shape can hide an overflowing product
            return tuple(shape)
        if newsize == 0:
            raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                               "unspecified dimension size -1 can be any value and is ambiguous")
        out = list(shape)
        out[infer] = numel // newsize
        return tuple(out)
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")


def compute_stride(oldshape, oldstride, newshape):
    """Strides that view memory laid out as (oldshape, oldstride) at newshape, or None when
    no strides can (ATen computeStride). Dims are grouped into chunks that are contiguous
    with each other; a view may split or merge dims only inside one chunk."""
    if not oldshape:
        return (1,) * len(newshape)
    numel = _numel(oldshape)
    if numel == 0:
        if tuple(oldshape) == tuple(newshape):
            return tuple(oldstride)
        # any strides work for no elements; use the ones a fresh tensor would have
        return contiguous_strides(newshape)
    newstride = [0] * len(newshape)
    view_d = len(newshape) - 1
    chunk_base_stride = oldstride[-1]
    tensor_numel = 1
    view_numel = 1
    for tensor_d in range(len(oldshape) - 1, -1, -1):
        tensor_numel *= oldshape[tensor_d]
        # at the end of a chunk: the view dims that make up tensor_numel must fit in it
        if tensor_d == 0 or (oldshape[tensor_d - 1] != 1 and
                             oldstride[tensor_d - 1] != tensor_numel * chunk_base_stride):
            while view_d >= 0 and (view_numel < tensor_numel or newshape[view_d] == 1):
                newstride[view_d] = view_numel * chunk_base_stride
                view_numel *= newshape[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if tensor_d > 0:
                chunk_base_stride = oldstride[tensor_d - 1]
                tensor_numel = 1
                view_numel = 1
    if view_d != -1:
        return None
    return tuple(newstride)


def _torch_type_name(t):
    return {"float32": "FloatTensor", "float64": "DoubleTensor", "float16": "HalfTensor",
            "bfloat16": "BFloat16Tensor", "int64": "LongTensor", "int32": "IntTensor", "int16": "ShortTensor",
            "int8": "CharTensor", "uint8": "ByteTensor", "bool": "BoolTensor"}[t._dtype.name]


def _restride(t, shape, stride, offset=None):
    return make_view(t, tuple(shape), tuple(stride), t._offset if offset is None else offset)


# --- view / reshape -----------------------------------------------------------------------

_VIEW_ERROR = ("view size is not compatible with input tensor's size and stride (at least one dimension "
               "spans across two contiguous subspaces). Use .reshape(...) instead.")


def view(self, size):
    shape = infer_size(size, _numel(self._shape))
    stride = compute_stride(self._shape, self._stride, shape)
    if stride is None:
        raise RuntimeError(_VIEW_ERROR)
    return _restride(self, shape, stride)


def view_dtype(self, dtype):
    old, new = self._dtype.itemsize, dtype.itemsize
    if dtype is self._dtype or old == new:
        return make_view_dtype(self, self._shape, self._stride, self._offset, dtype)
    what = f"to view {_cpp_name(self._dtype)} as {_cpp_name(dtype)} (different element sizes)"
    nd = len(self._shape)
    if nd == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if self._stride[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {self._stride[-1]}")
    shape, stride = list(self._shape), list(self._stride)
    if old > new:
        ratio = old // new
        stride = [s * ratio for s in stride[:-1]] + [1]
        shape[-1] *= ratio
        offset = self._offset * ratio
    else:
        ratio = new // old
        if shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
        if self._offset % ratio:
            raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {self._offset}")
        for i, s in enumerate(stride[:-1]):
            if s % ratio:
                raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got {s}")
        stride = [s // ratio for s in stride[:-1]] + [1]
        shape[-1] //= ratio
        offset = self._offset // ratio
    return make_view_dtype(self, shape, stride, offset, dtype)


def _cpp_name(dtype):
    from pytorchlite._advanced_indexing import _torch_name
    return _torch_name(dtype)


def make_view_dtype(self, shape, stride, offset, dtype):
    """self's storage read as `dtype`: the same memory and version counter, but, as in
    PyTorch, not a view for autograd (no _base: there is no gradient across dtypes)."""
    return make(self._storage, tuple(shape), tuple(stride), offset, dtype, self._vc)


def view_as(self, other):
    return view(self, other._shape)


def reshape(self, shape):
    shape = infer_size(shape, _numel(self._shape))
    stride = compute_stride(self._shape, self._stride, shape)
    if stride is not None:
        return _restride(self, shape, stride)
    # the strides cannot express the new shape: copy into a fresh contiguous tensor
    from pytorchlite._kernels.copy import clone
    c = clone(self)
    return make(c._storage, shape, contiguous_strides(shape), 0, c._dtype, c._vc, True)


def reshape_as(self, other):
    return reshape(self, other._shape)


def ravel(self):
    # PyTorch: contiguous().view(-1); a strided 1-d view (x[::2].ravel()) is copied too
    from pytorchlite._kernels.copy import clone
    return reshape(self if self.is_contiguous() else clone(self), (-1,))


def flatten(self, start_dim=0, end_dim=-1):
    nd = len(self._shape)
    start = wrap_dim("flatten", start_dim, nd)
    end = wrap_dim("flatten", end_dim, nd)
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if nd == 0:
        return reshape(self, (1,))
    if start == end:
        return self
    n = _numel(self._shape[start:end + 1])
    return reshape(self, self._shape[:start] + (n,) + self._shape[end + 1:])


def unflatten(self, dim, sizes):
    nd = len(self._shape)
    d = wrap_dim("unflatten", dim, nd)
    if len(sizes) == 0:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = self._shape[d] if nd else 1
    try:
        inferred = infer_size(sizes, size)
    except RuntimeError as e:
        if str(e).startswith("numel:"):
            raise
        if "is invalid for input of size" in str(e):
            raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                               f"{d} ({size}) in the input tensor") from None
        raise RuntimeError(f"unflatten got an unexpected error:\n{e}") from None
    return view(self, self._shape[:d] + inferred + self._shape[d + 1:])


# --- reordering dims ----------------------------------------------------------------------

def transpose(self, dim0, dim1):
    nd = len(self._shape)
    a = wrap_dim("transpose", dim0, nd)
    b = wrap_dim("transpose", dim1, nd)
    shape, stride = list(self._shape), list(self._stride)
    if nd:
        shape[a], shape[b] = shape[b], shape[a]
        stride[a], stride[b] = stride[b], stride[a]
    return _restride(self, shape, stride)


def swapaxes(self, axis0, axis1):
    return transpose(self, axis0, axis1)


def swapdims(self, dim0, dim1):
    return transpose(self, dim0, dim1)


def _check_t(op, self):
    if len(self._shape) > 2:
        raise RuntimeError(f"{op}() expects a tensor with <= 2 dimensions, but self is {len(self._shape)}D")


def t(self):
    _check_t("t", self)
    return transpose(self, 0, -1) if len(self._shape) == 2 else _restride(self, self._shape, self._stride)


def permute(self, dims):
    nd = len(self._shape)
    if len(dims) != nd:
        raise RuntimeError("permute(): number of dimensions in the tensor input does not match the length of the "
                           f"desired ordering of dimensions i.e. input.dim() = {nd} is not equal to "
                           f"len(dims) = {len(dims)}")
    wrapped = [wrap_dim("permute", d, nd) for d in dims]
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    return _restride(self, [self._shape[d] for d in wrapped], [self._stride[d] for d in wrapped])


def movedim(self, source, destination):
    nd = len(self._shape)
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(source)} dims) should "
                           f"contain the same number of dims as destination ({list(destination)} dims)")
    src = [wrap_dim("movedim", d, nd) for d in source]
    dst = [wrap_dim("movedim", d, nd) for d in destination]
    if len(set(src)) != len(src):
        raise RuntimeError(f"movedim: repeated dim in `source` ({list(source)})")
    if len(set(dst)) != len(dst):
        raise RuntimeError(f"movedim: repeated dim in `destination` ({list(destination)})")
    if nd == 0:
        return _restride(self, (), ())
    order = [-1] * nd
    for s, d in zip(src, dst):
        order[d] = s
    moved = set(src)
    rest = iter(d for d in range(nd) if d not in moved)
    for i in range(nd):
        if order[i] == -1:
            order[i] = next(rest)
    return permute(self, order)


def moveaxis(self, source, destination):
    return movedim(self, source, destination)


# --- adding and removing dims ------------------------------------------------------------

def expand(self, size, implicit=False):
    nd = len(size)
    tdim = len(self._shape)
    if nd < tdim:
        raise RuntimeError(f"expand(pytorchlite.{_torch_type_name(self)}{{{list(self._shape)}}}, size={list(size)}): "
                           f"the number of sizes provided ({nd}) must be greater or equal to the number of "
                           f"dimensions in the tensor ({tdim})")
    shape = [0] * nd
    stride = [0] * nd
    expanded = False
    for i in range(nd - 1, -1, -1):
        d = tdim - nd + i
        if d >= 0:
            n, s = self._shape[d], self._stride[d]
        else:
            n, s = 1, (shape[i + 1] * stride[i + 1] if i + 1 < nd else 1)
        target = size[i]
        if target == -1:
            if d < 0:
                raise RuntimeError(f"The expanded size of the tensor (-1) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
            target = n
        if n != target:
            if n != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size ({n}) "
                                   f"at non-singleton dimension {i}.  Target sizes: {list(size)}.  "
                                   f"Tensor sizes: {list(self._shape)}")
            n, s = target, 0
            expanded = True
        shape[i], stride[i] = n, s
    if expanded:
        check_numel(shape)     # expanding can name more elements than int64 counts
        for n in shape:
            if n < 0:
                raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
    return _restride(self, shape, stride)


def expand_as(self, other):
    return expand(self, other._shape)


def _squeezed(self, dims):
    """Shape and strides without the size-1 dims among `dims` (wrapped, unique)."""
    shape, stride = [], []
    for d, (n, s) in enumerate(zip(self._shape, self._stride)):
        if d in dims and n == 1:
            continue
        shape.append(n)
        stride.append(s)
    return shape, stride


def _squeeze_dims(op, self, dim):
    nd = len(self._shape)
    if dim is None:
        return set(range(nd))
    dims = [wrap_dim(op, d, nd) for d in dim]
    seen = set()
    for d in dims:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return seen


def squeeze(self, dim=None):
    shape, stride = _squeezed(self, _squeeze_dims("squeeze", self, dim))
    return _restride(self, shape, stride)


def _unsqueezed(op, self, dim):
    nd = len(self._shape)
    d = wrap_dim(op, dim, nd + 1)
    shape, stride = list(self._shape), list(self._stride)
    # PyTorch's choice of stride for the new dim: what a contiguous tensor would have
    stride.insert(d, 1 if d >= nd else shape[d] * stride[d])
    shape.insert(d, 1)
    return shape, stride


def unsqueeze(self, dim):
    shape, stride = _unsqueezed("unsqueeze", self, dim)
    return _restride(self, shape, stride)


# --- picking parts ------------------------------------------------------------------------

def _slice(self, d, start, stop):
    """The view self[..., start:stop] along dim d (0 <= start <= stop <= size)."""
    shape = list(self._shape)
    shape[d] = stop - start
    return make_view(self, tuple(shape), self._stride, self._offset + start * self._stride[d])


def _clamped_slice(self, d, start, stop):
    """Python/ATen slice semantics for start/stop (negative wrap, clamp, stop >= start)."""
    n = self._shape[d]
    if start < 0:
        start += n
    if stop < 0:
        stop += n
    start = min(max(start, 0), n)
    stop = min(max(stop, start), n)
    return _slice(self, d, start, stop)


def narrow(self, dim, start, length):
    nd = len(self._shape)
    if nd == 0:
        raise RuntimeError("narrow() cannot be applied to a 0-dim tensor.")
    if length < 0:
        raise RuntimeError("narrow(): length must be non-negative.")
    d = wrap_dim("narrow", dim, nd)
    n = self._shape[d]
    if start < -n or start > n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but got {start})")
    if start < 0:
        start += n
    if start > n - length:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return _slice(self, d, start, start + length)


def select(self, dim, index):
    nd = len(self._shape)
    if nd == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = wrap_dim("select", dim, nd)
    n = self._shape[d]
    if index < -n or index >= n:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(self._shape)} "
                         f"at dimension {d}")
    if index < 0:
        index += n
    return make_view(self, self._shape[:d] + self._shape[d + 1:], self._stride[:d] + self._stride[d + 1:],
                     self._offset + index * self._stride[d])


def unbind(self, dim=0):
    nd = len(self._shape)
    if nd == 0:
        raise IndexError("Dimension specified as 0 but tensor has no dimensions")
    d = wrap_dim("unbind", dim, nd)
    return tuple(select(self, d, i) for i in range(self._shape[d]))


def split(self, split_size, dim=0):
    nd = len(self._shape)
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    if split_size < 0:
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={split_size}")
    d = wrap_dim("split", dim, nd)
    n = self._shape[d]
    if split_size == 0 and n != 0:
        raise RuntimeError(f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}")
    # split_size > size gives one piece (kept for compatibility, as in PyTorch)
    num = 1 if split_size == 0 else max((n + split_size - 1) // split_size, 1)
    return tuple(_slice(self, d, i * split_size, min((i + 1) * split_size, n)) for i in range(num))


def split_with_sizes(self, split_sizes, dim=0):
    nd = len(self._shape)
    if nd == 0:
        raise RuntimeError("split expects at least a 1-dimensional tensor")
    d = wrap_dim("split_with_sizes", dim, nd)
    n = self._shape[d]
    if any(s < 0 for s in split_sizes):
        raise RuntimeError("split_with_sizes expects split_sizes have only non-negative entries, but got "
                           f"split_sizes={list(split_sizes)}")
    if sum(split_sizes) != n:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                           f"dimension {d}), but got split_sizes={list(split_sizes)}")
    out, start = [], 0
    for s in split_sizes:
        out.append(_slice(self, d, start, start + s))
        start += s
    return tuple(out)


def chunk(self, chunks, dim=0):
    nd = len(self._shape)
    if nd == 0:
        raise RuntimeError("chunk expects at least a 1-dimensional tensor")
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    d = wrap_dim("chunk", dim, nd)
    n = self._shape[d]
    size = (n + chunks - 1) // chunks
    if size == 0 and n == 0:
        # keep the number of (empty) chunks that was asked for
        return split_with_sizes(self, (0,) * chunks, d)
    return split(self, size, d)


def _check_tensor_split(self, dim):
    nd = len(self._shape)
    if nd == 0:
        raise RuntimeError("tensor_split expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    return wrap_dim("tensor_split", dim, nd)


def tensor_split(self, sections, dim=0):
    d = _check_tensor_split(self, dim)
    if sections <= 0:
        raise RuntimeError(f"number of sections must be larger than 0, got {sections}")
    n = self._shape[d]
    small, extra = divmod(n, sections)
    out, start = [], 0
    for i in range(sections):
        size = small + 1 if i < extra else small
        out.append(_slice(self, d, start, start + size))
        start += size
    return tuple(out)


def _tensor_split_indices(self, indices, dim=0):
    d = _check_tensor_split(self, dim)
    out, start = [], 0
    for end in indices:
        out.append(_clamped_slice(self, d, start, end))
        start = end
    out.append(_clamped_slice(self, d, start, self._shape[d]))
    return tuple(out)


def as_strided(self, size, stride, storage_offset=None):
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    offset = self._offset if storage_offset is None else storage_offset
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got strides: "
                           f"{list(stride)}")
    item = self._dtype.itemsize
    need = storage_nbytes_strided(size, stride, item, offset)   # PyTorch's checked (uint64) arithmetic
    check_numel(size)
    have = self._storage.nbytes
    if need > have:
        raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
                           f"itemsize {item} requiring a storage size of {need} are out of bounds for storage of "
                           f"size {have}")
    return make_view(self, tuple(size), tuple(stride), offset)


def diagonal(self, offset=0, dim1=0, dim2=1):
    nd = len(self._shape)
    a = wrap_dim("diagonal", dim1, nd)
    b = wrap_dim("diagonal", dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    start = self._offset
    if offset >= 0:
        n = max(min(self._shape[a], self._shape[b] - offset), 0)
        if n:
            start += offset * self._stride[b]
    else:
        n = max(min(self._shape[a] + offset, self._shape[b]), 0)
        if n:
            start -= offset * self._stride[a]
    shape = [s for i, s in enumerate(self._shape) if i not in (a, b)] + [n]
    stride = [s for i, s in enumerate(self._stride) if i not in (a, b)] + [self._stride[a] + self._stride[b]]
    return make_view(self, tuple(shape), tuple(stride), start)


def unfold(self, dimension, size, step):
    nd = len(self._shape)
    d = wrap_dim("unfold", dimension, nd)
    max_size = self._shape[d] if nd else 1
    if size > max_size:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {max_size} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    shape, stride = list(self._shape), list(self._stride)
    if nd:
        shape[d] = (shape[d] - size) // step + 1
        stride[d] = step * stride[d]
    shape.append(size)
    stride.append(self._stride[d] if nd else 1)
    return _restride(self, shape, stride)


# --- in-place metadata changes ------------------------------------------------------------
# These change the tensor object itself (not its data): PyTorch bumps the version counter
# for them all the same, and the cached contiguity must be recomputed.

def _set_geometry(self, shape, stride):
    self._shape = tuple(shape)
    self._stride = tuple(stride)
    self._contig = None
    self._vc[0] += 1
    return self


def squeeze_(self, dim=None):
    return _set_geometry(self, *_squeezed(self, _squeeze_dims("squeeze_", self, dim)))


def unsqueeze_(self, dim):
    return _set_geometry(self, *_unsqueezed("unsqueeze_", self, dim))


def transpose_(self, dim0, dim1):
    v = transpose(self, dim0, dim1)
    return _set_geometry(self, v._shape, v._stride)


def t_(self):
    _check_t("t_", self)
    return transpose_(self, 0, -1) if len(self._shape) == 2 else _set_geometry(self, self._shape, self._stride)


def resize_(self, size, memory_format=None):
    """Give self the contiguous shape `size`, growing its storage (keeping the bytes it
    holds) when too small. Every tensor on that storage sees the new memory, as in PyTorch."""
    if self._requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    shape = tuple(size)
    check_numel(shape)     # PyTorch checks the count first (a negative size wraps to a huge one)
    for n in size:
        if n < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {n}: {list(size)}")
    err = storage_overflowed(shape, self._dtype.itemsize)
    if err is not None:
        raise err
    need = (self._offset + _numel(shape)) * self._dtype.itemsize
    st = self._storage
    if need > st.nbytes:
        _grow_storage(st, need)
    return _set_geometry(self, shape, contiguous_strides(shape))


def _grow_storage(st, nbytes):
    """Reallocate Storage `st` in place: copy its bytes to a new block, then swap the new
    block into `st` (and the old one into the temporary, which frees it)."""
    if st._free is None:
        raise RuntimeError("Trying to resize storage that is not resizable")
    from pytorchlite import _dtype as D
    new = type(st).allocate(nbytes, st.device)
    old_n = st.nbytes
    if old_n:
        # move the old bytes through uint8 views of both blocks
        dst = make(new, (old_n,), (1,), 0, D.uint8)
        src = make(st, (old_n,), (1,), 0, D.uint8)
        copy_into(dst, src)
    st._swap_memory(new)
