"""Kernel entries for the data-movement operators: cat, gather and the scatter family
(scatter, scatter_add, scatter_reduce, index_add/copy/fill, take, put), masked_scatter,
flip, diag, diag_embed, repeat_interleave's index and nn.functional.pad.

The C side (kernels/movement.c) sees every gather/scatter operand viewed at the index's
shape, with the indexed tensor "restrided": its stride along `dim` is 0 and the real size
and stride of `dim` are passed apart. Everything is checked here before a kernel runs; the
kernels still bound-check every index and report the first bad value.
"""

from array import array as _array

import numpy as _np

from pytorchlite import _dtype as D
from pytorchlite._C import MAX_DIMS, check, ffi, lib
from pytorchlite._argparse import wrap_dim
from pytorchlite._core import check_ndim, descriptors as _descriptors, elementwise_geometry, squeeze_dims, empty as _empty, scalar_pair as _scalar_arg, copy_into, scalar_tensor, to_dtype
from pytorchlite._core import TensorBase as Tensor, broadcast_shapes, contiguous_strides, make, numel as _numel, overlaps as _overlaps, self_overlapping as _self_overlapping
from pytorchlite._views import make_view

_new = ffi.new
_from_buffer = ffi.from_buffer
_set_desc = lib.ptl_set_desc


def _ptr(t):
    return t._storage.ptr + t._offset * t._dtype.itemsize


def _desc_array(entries):
    """ptl_tensor[] from (tensor, shape, strides) triples."""
    descs = _new("ptl_tensor[]", len(entries))
    for k, (t, shape, stride) in enumerate(entries):
        if _set_desc(descs, k, _ptr(t), t._dtype.code, len(shape), shape, stride):
            check_ndim("", len(shape))
    return descs


def _is_contiguous(t):
    c = t._contig
    if c is None:
        c = t.is_contiguous()
    return c


def _contiguous(t):
    if _is_contiguous(t):
        return t
    out = _empty(t._shape, t._dtype, t._device)
    copy_into(out, t)
    return out


# --- cat -------------------------------------------------------------------------------------

def _cat_check(tensors, k, t, shape, d):
    """PyTorch's error for piece k whose shape does not fit (None when it is a skipped
    1-d empty tensor)."""
    ts = t._shape
    if not ts:
        raise RuntimeError(f"zero-dimensional tensor (at position {k}) cannot be concatenated")
    if len(ts) == 1 and ts[0] == 0:
        return None
    if len(ts) != len(shape):
        raise RuntimeError(f"Tensors must have same number of dimensions: got {len(shape)} and {len(ts)}")
    for j in range(len(shape)):
        if j != d and ts[j] != shape[j]:
            raise RuntimeError(f"Sizes of tensors must match except in dimension {d}. Expected size "
                               f"{shape[j]} but got size {ts[j]} for tensor number {k} in the list.")
    return t


def _cat_pieces(tensors, shape, d, dtype, dev):
    """The general pass of cat: shape checks (PyTorch's errors), skipped 1-d empty pieces,
    dtype promotion and the data pointers."""
    nd = len(shape)
    pre, post = shape[:d], shape[d + 1:]
    item = dtype.itemsize
    pieces, ptrs = [], []
    plain = True       # every piece contiguous, of the result dtype
    same = True        # every piece has `shape` (so the same size along d)
    for k, t in enumerate(tensors):
        ts = t._shape
        if ts is not shape and ts != shape:
            same = False
            if (len(ts) != nd or ts[:d] != pre or ts[d + 1:] != post) and _cat_check(tensors, k, t, shape, d) is None:
                if t._dtype is not dtype:      # skipped, but still promoted with the rest
                    dtype = D.promote_types(dtype, t._dtype)
                    plain = False
                continue
        if t._dtype is not dtype:
            dtype = D.promote_types(dtype, t._dtype)
            plain = False
        if t._device is not dev and t._device != dev:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dev} and {t._device}! (when checking argument for cat())")
        if not _is_contiguous(t):
            plain = False
        pieces.append(t)
        ptrs.append(t._storage.ptr + t._offset * item)
    return pieces, ptrs, plain, same, dtype


def cat(tensors, dim=0):
    return _cat(tensors, dim)[0]


def _cat(tensors, dim):
    """(the concatenation, whether every piece had the same shape, dtype and device and
    was contiguous: the fast path, which stack() relies on to skip its own shape check)."""
    if not tensors:
        raise ValueError("torch.cat(): expected a non-empty list of Tensors")
    first = tensors[0]
    dtype, dev = first._dtype, first._device
    # the shape every piece must share outside `dim`: the first that is not a 1-d empty
    # tensor (PyTorch's legacy rule skips those whatever the other shapes)
    ref = first
    if len(ref._shape) == 1 and ref._shape[0] == 0:
        ref = next((t for t in tensors if not (len(t._shape) == 1 and t._shape[0] == 0)), first)
    shape = ref._shape
    if not shape:
        raise RuntimeError(f"zero-dimensional tensor (at position {list(tensors).index(ref)}) cannot be "
                           "concatenated")
    nd = len(shape)
    d = wrap_dim("cat", dim, nd)
    pre, post = shape[:d], shape[d + 1:]
    item = dtype.itemsize
    n = len(tensors)
    # the common case, checked with one list comprehension (list.count compares by identity
    # first): every piece of the same shape, dtype and device, contiguous
    uniform = n > 1 and [t._shape for t in tensors if t._dtype is dtype and t._device is dev and t._contig].count(
        shape) == n
    if uniform:
        pieces = tensors
        offsets = [t._offset for t in tensors]
        ptrs = [t._storage.ptr for t in tensors]
        if offsets.count(0) != n:
            ptrs = [p + o * item for p, o in zip(ptrs, offsets)]
        plain = same = True
    else:
        pieces, ptrs, plain, same, dtype = _cat_pieces(tensors, shape, d, dtype, dev)
    total = shape[d] * len(pieces) if same else sum([t._shape[d] for t in pieces])
    oshape = pre + (total,) + post
    out = _empty(oshape, dtype, dev)
    if not _numel(oshape):
        return out, uniform
    if dev.type != "cpu":
        from pytorchlite._kernels.views import narrow
        start = 0
        for t in pieces:
            copy_into(narrow(out, d, start, t._shape[d]), t)
            start += t._shape[d]
        return out, uniform
    inner = _numel(post) * dtype.itemsize
    keep = None
    if not plain:
        keep = []    # converted copies, alive through the call
        for k, t in enumerate(pieces):
            if t._dtype is not dtype:
                t = to_dtype(t, dtype)
            elif not _is_contiguous(t):
                t = _contiguous(t)
            keep.append(t)
            ptrs[k] = t._storage.ptr + t._offset * dtype.itemsize
    # arrays handed over as buffers: cffi converts a Python list item by item
    rows = _array("q", [shape[d] * inner]) * len(pieces) if same else _array("q", [t._shape[d] * inner for t in pieces])
    check(lib.ptl_cat(_ptr(out), _numel(pre), total * inner, len(ptrs),
                      # (np.fromiter converts a long list of addresses twice as fast as array())
                      _from_buffer("intptr_t[]", _np.fromiter(ptrs, _np.int64, len(ptrs))),
                      _from_buffer("int64_t[]", rows)), "cat")
    del keep
    return out, uniform


# --- gather / scatter ---------------------------------------------------------------------------

def _restrided(t, ishape, d):
    """t's strides for viewing it at the index's shape, 0 along `d` (and everywhere for a 0-d t)."""
    if not t._shape:
        return [0] * len(ishape)
    st = list(t._stride)
    st[d] = 0
    return st


def _check_index_dtype(op, index, allow_int32=True):
    if index._dtype is D.int64 or (allow_int32 and index._dtype is D.int32):
        return
    raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")


def _long_index(index):
    return index if index._dtype is D.int64 else to_dtype(index, D.int64)


def _gather_into(op, out, src, d, index, wrap=False):
    """out (at index's shape) = src gathered along d; src restrided."""
    ishape = index._shape
    st = _restrided(src, ishape, d)
    dsize = src._shape[d] if src._shape else 1
    dstride = src._stride[d] if src._shape else 0
    ost, ist = out._stride, index._stride
    if len(ishape) > MAX_DIMS:      # the kernel is elementwise over ishape: drop its size-1 dims
        ishape, (ost, st, ist) = elementwise_geometry(ishape, [ost, st, ist])
    descs = _desc_array([(out, ishape, ost), (src, ishape, st), (index, ishape, ist)])
    bad = _new("int64_t[2]")
    status = lib.ptl_gather(descs, dsize, dstride, 1 if wrap else 0, bad)
    if status == 5:
        return bad[0]
    check(status, op)
    return None


def gather(self, dim, index, sparse_grad=False):
    _check_index_dtype("gather", index)
    nd = len(self._shape)
    d = wrap_dim("gather", dim, nd)
    ind = len(index._shape)
    if max(ind, 1) != max(nd, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for j in range(ind):
        if j != d and index._shape[j] > self._shape[j]:
            raise RuntimeError(f"Size does not match at dimension {j} expected index {list(index._shape)} to be no "
                               f"larger than self {list(self._shape)} apart from dimension {d}")
    out = _empty(index._shape, self._dtype, self._device)
    if not _numel(index._shape):
        return out
    if nd == 0 or ind == 0:
        idx = make_view(index, (1,) * max(ind, 1), (0,) * max(ind, 1), index._offset)
        src = make_view(self, (1,) * max(nd, 1), (0,) * max(nd, 1), self._offset)
        o = make(out._storage, (1,), (1,), 0, out._dtype)
        bad = _gather_into("gather", o, src, 0, _long_index(idx))
    else:
        bad = _gather_into("gather", out, self, d, _long_index(index))
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                           f"{self._shape[d] if nd else 1}")
    return out


_SCATTER_OPS = {None: 0, "add": 1, "sum": 1, "multiply": 2, "prod": 2, "amax": 3, "amin": 4}


def _scatter_into(op, dst, d, index, src, code, wrap=False, precheck=False):
    """dst (in place) op= src along d at index; returns the bad index or None."""
    ishape = index._shape
    if not _numel(ishape):
        return None
    dshape = dst._shape
    if not dshape:
        dst = make_view(dst, (1,), (0,), dst._offset)
    dsize = dst._shape[d]
    dstride = dst._stride[d]
    src_st = list(src._stride) if src._shape else [0] * len(ishape)
    dst_st, ist = _restrided(dst, ishape, d), index._stride
    if len(ishape) > MAX_DIMS:      # drop the size-1 dims but d (the kernel plans its threads by d)
        nd = d
        d = squeeze_dims(ishape, d).index(d)
        ishape, (dst_st, src_st, ist) = elementwise_geometry(ishape, [dst_st, src_st, ist], nd)
    descs = _desc_array([(dst, ishape, dst_st), (src, ishape, src_st), (index, ishape, ist)])
    bad = _new("int64_t[2]")
    # Into a fresh tensor (dropped on error) indices are checked as they are used, with no
    # pass of their own; into a live one (precheck) all of them before anything is written.
    status = lib.ptl_scatter(descs, dsize, dstride, d if len(ishape) else -1, code, 1 if wrap else 0,
                             1 if precheck else 0, bad)
    if status == 5:
        return bad[0]
    check(status, op)
    return None


def _destination(self, into, *inputs):
    """Where a scatter-like kernel writes: self itself for an in-place call (`into` is self,
    see ops.yaml inplace_kernel), else a fresh copy of self. Returns (tensor, whether it is
    self). In place, PyTorch's errors where it raises them: self's elements sharing memory
    (an expanded self), or an operand sharing self's memory when both are contiguous (where
    PyTorch can tell). Sharing PyTorch does not detect (strided views) is computed as if
    the operands were read first: through a copy of self."""
    if into is self:
        if _self_overlapping(self):
            raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                               "single memory location. Please clone() the tensor before performing the operation.")
        shared = [t for t in inputs if isinstance(t, Tensor) and t._storage is self._storage and (
            _overlaps(self, t) or (t._offset == self._offset and t._stride == self._stride and _numel(t._shape)))]
        if not shared:
            return self, True
        if self.is_contiguous() and any(t.is_contiguous() for t in shared):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                               "refer to a single memory location. Please clone() the tensor before performing "
                               "the operation.")
    from pytorchlite._kernels.copy import clone
    return clone(self), False


def _scatter_checks(op, self, dim, index, src):
    """PyTorch's scatter shape/dtype checks; returns the wrapped dim."""
    _check_index_dtype(op, index)
    nd = len(self._shape)
    d = wrap_dim(op, dim, nd)
    ind = len(index._shape)
    if isinstance(src, Tensor) and src._dtype is not self._dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if max(ind, 1) != max(nd, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as self tensor")
    if isinstance(src, Tensor) and max(len(src._shape), 1) != max(ind, 1):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    if _numel(index._shape):
        bad_self = any(j != d and index._shape[j] > self._shape[j] for j in range(ind))
        bad_src = isinstance(src, Tensor) and any(index._shape[j] > src._shape[j] for j in range(len(src._shape)))
        if bad_self or bad_src:
            if isinstance(src, Tensor):
                raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self "
                                   f"{list(self._shape)} apart from dimension {d} and to be no larger size than "
                                   f"src {list(src._shape)}")
            raise RuntimeError(f"Expected index {list(index._shape)} to be no larger than self {list(self._shape)} "
                               f"apart from dimension {d}")
    return d


def _src_operand(src, dtype, device):
    """A tensor src as is; a number as a 0-d tensor of self's dtype (read with stride 0)."""
    if isinstance(src, Tensor):
        return src
    return scalar_tensor(src, dtype, device)


def _scatter_out(op, self, dim, index, src, code, into=None):
    d = _scatter_checks(op, self, dim, index, src)
    out, live = _destination(self, into, index, src)
    srct = _src_operand(src, self._dtype, self._device)
    bad = _scatter_into(op, out, d, _long_index(index), srct, code, precheck=live)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                           f"{self._shape[d] if self._shape else 1}")
    return out


def scatter(self, dim, index, src, reduce=None, _into=None):
    if reduce is not None and reduce not in ("add", "multiply"):
        raise RuntimeError("reduce argument must be either add or multiply.")
    if reduce is not None and isinstance(src, Tensor):
        import warnings
        warnings.warn("The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
                      "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.")
    return _scatter_out("scatter", self, dim, index, src, _SCATTER_OPS[reduce], _into)


def scatter_add(self, dim, index, src, _into=None):
    return _scatter_out("scatter_add", self, dim, index, src, 1, _into)


_REDUCES = ("sum", "prod", "mean", "amax", "amin")


def _identity(reduce, dtype):
    if reduce in ("sum", "mean"):
        return False if dtype is D.bool else 0
    if reduce == "prod":
        return True if dtype is D.bool else 1
    if dtype is D.bool:
        return reduce == "amin"
    if dtype.is_floating_point:
        return float("-inf") if reduce == "amax" else float("inf")
    info = D.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def scatter_reduce(self, dim, index, src, reduce, include_self=True):
    if reduce not in _REDUCES:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    d = _scatter_checks("scatter_reduce", self, dim, index, src)
    if reduce == "mean" and self._dtype is D.bool:
        raise NotImplementedError("\"scatter_gather_tensor_cpu_reduce_mean\" not implemented for 'Bool'")
    from pytorchlite._kernels.copy import clone
    idx = _long_index(index)
    out = clone(self)
    if not include_self:
        # the scattered-to places start at the reduction's identity, the rest keep self
        ident = scalar_tensor(_identity(reduce, self._dtype), self._dtype, self._device)
        bad = _scatter_into("scatter_reduce", out, d, idx, ident, 0)
        if bad is not None:
            raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                               f"{self._shape[d] if self._shape else 1}")
    code = {"sum": 1, "mean": 1, "prod": 2, "amax": 3, "amin": 4}[reduce]
    bad = _scatter_into("scatter_reduce", out, d, idx, src, code)
    if bad is not None:
        raise RuntimeError(f"index {bad} is out of bounds for dimension {d} with size "
                           f"{self._shape[d] if self._shape else 1}")
    if reduce == "mean":
        count = _empty(self._shape, self._dtype if self._dtype is not D.bool else D.int64, self._device)
        lib.ptl_fill(_descriptors((count,), count._shape), *_scalar_arg(1 if include_self else 0))
        ones = scalar_tensor(1, count._dtype, self._device)
        _scatter_into("scatter_reduce", count, d, idx, ones, 1)
        count = count.masked_fill(count == 0, 1)
        if self._dtype.is_floating_point:
            out = out.div(count).to(self._dtype)
        else:
            out = out.div(count, rounding_mode="floor").to(self._dtype)
    return out


# --- index_add / index_copy / index_fill ---------------------------------------------------------

def _index_vector_checks(op, self, dim, index, source, *, long_only=False, long_msg=None):
    if long_only:
        if index._dtype is not D.int64:
            raise long_msg
    elif index._dtype not in (D.int64, D.int32):
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {index._dtype._torch_name}")
    if len(index._shape) > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {len(index._shape)} with type: "
                         f"{index._dtype._torch_name} and size: {list(index._shape)}")
    return wrap_dim(op, dim, len(self._shape))


def _expanded_index(index, shape, d):
    """The 1-d index viewed along dim d of `shape` (stride 0 elsewhere), as int64."""
    idx = _long_index(index)
    if not shape:
        return make_view(idx, (), (), idx._offset)
    st = [0] * len(shape)
    st[d] = idx._stride[0] if idx._shape else 0
    return make_view(idx, tuple(shape), tuple(st), idx._offset)


def _index_out_of_range(op, bad, d, size, prefix=""):
    return (IndexError if prefix else RuntimeError)(
        f"{prefix}index {bad} is out of bounds for dimension {d} with size {size}")


def index_add(self, dim, index, source, alpha=1, _into=None):
    d = _index_vector_checks("index_add_", self, dim, index, source)
    n = _numel(index._shape)
    nd = len(self._shape)
    if source._dtype is not self._dtype:
        raise RuntimeError(f"index_add_(): self ({self._dtype._torch_name}) and source "
                           f"({source._dtype._torch_name}) must have the same scalar type")
    ssize = source._shape[d] if source._shape else 1
    if n != ssize:
        raise RuntimeError(f"index_add_(): Number of indices ({n}) should be equal to source.size(dim): ({ssize}), "
                           f"for dim: {d}")
    if max(len(source._shape), 1) != max(nd, 1) or any(
            j != d and source._shape[j] != self._shape[j] for j in range(len(source._shape))):
        raise RuntimeError("source tensor shape must match self tensor shape, excluding the specified dimension. "
                           f"Got self.shape = {list(self._shape)} source.shape = {list(source._shape)}")
    out, live = _destination(self, _into, index, source)
    src = source
    if alpha != 1:
        src = source.mul(alpha)
    sshape = source._shape if source._shape else ((1,) if nd else ())
    if not source._shape and nd:
        src = make_view(src, (1,), (0,), src._offset)
    bad = _scatter_into("index_add_", out, d, _expanded_index(index, sshape, d), src, 1, precheck=live)
    if bad is not None:
        if nd <= 1:     # PyTorch's CPU index_add words it so for 0-d and 1-d self
            raise IndexError("index out of range in self")
        raise _index_out_of_range("index_add_", bad, d, self._shape[d] if nd else 1)
    return out


def index_copy(self, dim, index, source, _into=None):
    d = _index_vector_checks("index_copy_", self, dim, index, source, long_only=True, long_msg=RuntimeError(
        f"index_copy_(): Expected a long tensor for index, but got {index._dtype._torch_name}"))
    nd = len(self._shape)
    n = _numel(index._shape)
    if source._dtype is not self._dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{self._dtype._torch_name} and (source) {source._dtype._torch_name}")
    if max(len(source._shape), 1) != max(nd, 1) or (nd and len(source._shape) == nd and any(
            j != d and source._shape[j] != self._shape[j] for j in range(nd))):
        for j in range(min(nd, len(source._shape))):
            if j != d and source._shape[j] != self._shape[j]:
                raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                                   f"Destination slice shape: {self._shape[j]} at dimension {j} and source slice "
                                   f"shape: {source._shape[j]} at dimension {j}.")
        raise RuntimeError("index_copy_(): When source and destination are not scalars, their dimensionality must "
                           f"match. Source dimensionality ({len(source._shape)}), destination dimensionality ({nd})")
    ssize = source._shape[d] if source._shape else 1
    if n != ssize:
        raise IndexError(f"index_copy_(): Number of indices ({n}) should be equal to source.size(dim) ({ssize})")
    out, live = _destination(self, _into, index, source)
    src = source
    sshape = source._shape if source._shape else ((1,) if nd else ())
    if not source._shape and nd:
        src = make_view(src, (1,), (0,), src._offset)
    bad = _scatter_into("index_copy_", out, d, _expanded_index(index, sshape, d), src, 0, precheck=live)
    if bad is not None:
        raise _index_out_of_range("index_copy_", bad, d, self._shape[d] if nd else 1, prefix="index_copy_(): ")
    return out


def index_fill(self, dim, index, value):
    if index._dtype is not D.int64:
        raise IndexError("index_fill_(): Expected dtype int64 for index.")
    if isinstance(value, Tensor):
        if value._shape:
            raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                               f"{len(value._shape)} dimension(s).")
        value = value.item()
    if len(index._shape) > 1:
        raise IndexError(f"index_fill_(): Index is supposed to be a vector, but got dim: {len(index._shape)} "
                         f"with type: Long and size: {list(index._shape)}")
    nd = len(self._shape)
    d = wrap_dim("index_fill_", dim, nd)
    from pytorchlite._kernels.copy import clone
    out = clone(self)
    n = _numel(index._shape)
    shape = list(self._shape) if nd else [1]
    shape[d] = n
    dst = out if nd else make_view(out, (1,), (0,), out._offset)
    val = scalar_tensor(value, self._dtype, self._device)
    # index_fill wraps negative indices (PyTorch does)
    bad = _scatter_into("index_fill_", dst, d, _expanded_index(index, tuple(shape), d), val, 0, wrap=True)
    if bad is not None:
        raise _index_out_of_range("index_fill_", bad, d, self._shape[d] if nd else 1, prefix=" ")
    return out


# --- take / put ----------------------------------------------------------------------------------

def take(self, index):
    if index._dtype is not D.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {index._dtype._torch_name}")
    n = _numel(self._shape)
    out = _empty(index._shape, self._dtype, self._device)
    m = _numel(index._shape)
    if not m:
        return out
    if not n:
        raise IndexError("take(): tried to take from an empty tensor")
    flat = _contiguous(self)
    src = make(flat._storage, (n,), (1,), flat._offset, flat._dtype)
    idx = _contiguous(index)
    idx = make(idx._storage, (m,), (1,), idx._offset, D.int64)
    o = make(out._storage, (m,), (1,), 0, out._dtype)
    bad = _gather_into("take", o, src, 0, idx, wrap=True)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return out


def put(self, index, source, accumulate=False):
    if index._dtype is not D.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {index._dtype._torch_name}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{self._dtype._torch_name} and source.dtype = {source._dtype._torch_name}")
    m = _numel(index._shape)
    if _numel(source._shape) != m:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {_numel(source._shape)}, index.numel() = {m}")
    n = _numel(self._shape)
    out = _empty(self._shape, self._dtype, self._device)
    copy_into(out, self)
    if not m:
        return out
    if not n:
        raise IndexError("put_(): Tried to put elements into an empty tensor")
    dst = make(out._storage, (n,), (1,), 0, out._dtype)
    idx = _contiguous(index)
    idx = make(idx._storage, (m,), (1,), idx._offset, D.int64)
    src = _contiguous(source)
    src = make(src._storage, (m,), (1,), src._offset, src._dtype)
    bad = _scatter_into("put_", dst, 0, idx, src, 1 if accumulate else 0, wrap=True)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} elements.")
    return out


# --- masked_scatter --------------------------------------------------------------------------------

def masked_scatter(self, mask, source):
    if mask._dtype is not D.bool:
        from pytorchlite._kernels.indexing import _CPP_NAMES  # noqa: F401
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{mask._dtype._torch_name}")
    if source._dtype is not self._dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{self._dtype._torch_name} and {source._dtype._torch_name}")
    from pytorchlite._kernels.views import expand
    shape = broadcast_shapes("masked_scatter", [self._shape, mask._shape])
    out = _empty(shape, self._dtype, self._device)
    copy_into(out, self)
    m = mask if mask._shape == shape else expand(mask, shape)
    count = int(m.sum().item()) if _numel(shape) else 0
    if count > _numel(source._shape):
        raise RuntimeError("Number of elements of source < number of ones in mask")
    if not count:
        return out
    from pytorchlite import _advanced_indexing as A
    src = _contiguous(source)
    vals = make(src._storage, (count,), (1,), src._offset, src._dtype)
    if shape:
        A.index_put_(out, [m], vals, False)
    else:
        copy_into(out, make(vals._storage, (), (), vals._offset, vals._dtype))
    return out


# --- flip, diag, diag_embed ------------------------------------------------------------------------

def _dims_list(op, dims, nd):
    out = []
    for x in dims:
        d = wrap_dim(op, x, nd)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def flip(self, dims):
    nd = len(self._shape)
    check_ndim("flip", nd)     # PyTorch keeps the flipped dims in a 64-bit mask
    ds = _dims_list("flip", dims, nd)
    out = _empty(self._shape, self._dtype, self._device)
    if not _numel(self._shape):
        return out
    if not nd:
        copy_into(out, self)
        return out
    if self._device.type != "cpu":
        raise NotImplementedError(f"flip() is not implemented for device {self._device}")
    # read self through a descriptor with negated strides on the flipped dims, starting at
    # their last element: one strided copy
    st = list(self._stride)
    off = self._offset
    for d in ds:
        off += (self._shape[d] - 1) * st[d]
        st[d] = -st[d]
    descs = _new("ptl_tensor[]", 2)
    item = self._dtype.itemsize
    _set_desc(descs, 0, _ptr(out), out._dtype.code, nd, self._shape, out._stride)
    _set_desc(descs, 1, self._storage.ptr + off * item, self._dtype.code, nd, self._shape, st)
    check(lib.ptl_copy(descs), "flip")
    return out


def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    nd = len(self._shape) + 1
    d1 = wrap_dim("diag_embed", dim1, nd)
    d2 = wrap_dim("diag_embed", dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = (self._shape[-1] if self._shape else 1) + abs(offset)
    rest = list(self._shape[:-1])
    shape = []
    for k in range(nd):
        if k in (d1, d2):
            shape.append(n)
        else:
            shape.append(rest.pop(0))
    out = _empty(tuple(shape), self._dtype, self._device)
    lib.ptl_fill(_descriptors((out,), out._shape), 0.0, 0)
    if not _numel(out._shape):
        return out
    from pytorchlite._kernels.views import diagonal
    copy_into(diagonal(out, offset, d1, d2), self)
    return out


def diag(self, diagonal=0):
    nd = len(self._shape)
    if nd == 1:
        n = self._shape[0] + abs(diagonal)
        out = _empty((n, n), self._dtype, self._device)
        lib.ptl_fill(_descriptors((out,), out._shape), 0.0, 0)
        if n:
            from pytorchlite._kernels.views import diagonal as diag_view
            copy_into(diag_view(out, diagonal, 0, 1), self)
        return out
    if nd == 2:
        from pytorchlite._kernels.views import diagonal as diag_view
        v = diag_view(self, diagonal, 0, 1)
        from pytorchlite._kernels.copy import clone
        return clone(v)
    raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {nd}D")


# --- repeat_interleave ------------------------------------------------------------------------------

def repeat_interleave_index(repeats, output_size=None):
    """The index that repeats position i repeats[i] times (torch.repeat_interleave(repeats))."""
    if len(repeats._shape) > 1:
        raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
    if repeats._dtype not in (D.int64, D.int32):
        raise NotImplementedError(f"\"repeat_interleave_cpu\" not implemented for '{repeats._dtype._torch_name}'")
    import numpy as np
    r = np.asarray(repeats.tolist(), dtype=np.int64).reshape(-1)
    if r.size and r.min() < 0:
        raise RuntimeError("repeats can not be negative")
    total = int(r.sum())
    if output_size is not None and output_size != total:
        raise RuntimeError("allocated size does not match required size")
    idx = np.repeat(np.arange(r.size, dtype=np.int64), r)
    from pytorchlite._creation import tensor as _tensor
    return _tensor(idx, dtype=repeats._dtype, device=repeats._device)


# --- nn.functional.pad ---------------------------------------------------------------------------

def _pad_pairs(pad, nd):
    """[(dim, before, after)] for the padded dims, last dim first."""
    return [(nd - 1 - k, pad[2 * k], pad[2 * k + 1]) for k in range(len(pad) // 2)]


def _check_pad(self, pad, mode, value):
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    nd = len(self._shape)
    if len(pad) // 2 > nd:
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {nd}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value is not None and value != 0:
            raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
        k = len(pad) // 2
        if not 1 <= k <= 3 or nd not in (k + 1, k + 2):
            raise NotImplementedError(f"Padding size {len(pad)} is not supported for {nd}D input tensor.")
        for d in range(1 if nd == k + 2 else 0, nd):   # only a batch dim may be empty
            if self._shape[d] == 0:
                raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size "
                                   f"and other non-zero dimensions for input, but got: {list(self._shape)}")
        for d, a, b in _pad_pairs(pad, nd):
            n = self._shape[d]
            if mode == "reflect" and (a >= n or b >= n):
                raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input "
                                   f"dimension, but got: padding ({a}, {b}) at dimension {d} of input "
                                   f"{list(self._shape)}")
            if mode == "circular" and (a > n or b > n):
                raise RuntimeError("Padding value causes wrapping around more than once.")


def pad_indices(n, a, b, mode):
    """The source position of each output position along one padded dim (a before, b after)."""
    if mode == "circular":
        # PyTorch wraps around the cropped input (negative pads crop first)
        lo = max(-a, 0)
        m = n - lo - max(-b, 0)
        return [lo + j % m for j in range(-max(a, 0), m + max(b, 0))]
    out = []
    for j in range(-a, n + b):
        if mode == "reflect":
            p = -j if j < 0 else (2 * (n - 1) - j if j >= n else j)
        else:   # replicate
            p = min(max(j, 0), n - 1)
        out.append(p)
    return out


def pad(self, pad, mode="constant", value=None):
    _check_pad(self, pad, mode, value)
    nd = len(self._shape)
    if mode == "constant":
        shape = list(self._shape)
        for d, a, b in _pad_pairs(pad, nd):
            shape[d] += a + b
            if shape[d] < 0:
                raise RuntimeError(f"The input size {self._shape[d]}, plus negative padding {a} and {b} resulted in "
                                   f"a negative output size, which is invalid. Check dimension {d} of your input.")
            if self._shape[d] - max(-a, 0) - max(-b, 0) < 0:
                raise RuntimeError("narrow(): length must be non-negative.")
        out = _empty(tuple(shape), self._dtype, self._device)
        v = 0 if value is None else value
        if _numel(out._shape):
            lib.ptl_fill(_descriptors((out,), out._shape), *_scalar_arg(v))
        # the part of self that survives (negative pads crop) into its place in out
        from pytorchlite._kernels.views import narrow
        dst, src = out, self
        for d, a, b in _pad_pairs(pad, nd):
            n = self._shape[d]
            s0, s1 = max(-a, 0), n - max(-b, 0)
            if s1 <= s0:
                return out
            src = narrow(src, d, s0, s1 - s0)
            dst = narrow(dst, d, max(a, 0), s1 - s0)
        if _numel(src._shape):
            copy_into(dst, src)
        return out
    from pytorchlite._creation import tensor as _tensor
    out = self
    for d, a, b in _pad_pairs(pad, nd):
        idx = _tensor(pad_indices(self._shape[d], a, b, mode), dtype=D.int64)
        from pytorchlite._kernels.indexing import index_select
        out = index_select(out, d, idx)
    return out if out is not self else _contiguous(self).clone()


# --- stack -----------------------------------------------------------------------------------------

def stack(tensors, dim=0):
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    s0 = tensors[0]._shape
    n = len(tensors)
    nd = len(s0)
    d = wrap_dim("stack", dim, nd + 1)
    if d < nd and n > 1:
        # joining along an existing dim lays the pieces out exactly as stacking them
        # along a new dim before it: one cat, then the shape with the new dim (cat's fast
        # path has checked the shapes are all equal; otherwise check here, after or
        # instead of cat's own error)
        try:
            out, uniform = _cat(tensors, d)
        except RuntimeError:
            _check_stack_shapes(tensors, s0)
            raise
        if not uniform:
            _check_stack_shapes(tensors, s0)
        shape = s0[:d] + (n,) + s0[d:]
        return make(out._storage, shape, contiguous_strides(shape), out._offset, out._dtype, None, True)
    _check_stack_shapes(tensors, s0)
    if d < nd:
        out = cat(tensors, d)
        shape = s0[:d] + (n,) + s0[d:]
        return make(out._storage, shape, contiguous_strides(shape), out._offset, out._dtype, None, True)
    shape = s0 + (1,)
    return cat([make_view(t, shape, t._stride + (1,), t._offset) for t in tensors], d)


def _check_stack_shapes(tensors, s0):
    if [t._shape for t in tensors].count(s0) != len(tensors):
        for k, t in enumerate(tensors):
            if t._shape != s0:
                raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(s0)} at entry 0 and "
                                   f"{list(t._shape)} at entry {k}")
