"""Advanced indexing: gathering (`x[idx]`, index_select, masked_select) and scattering
(`x[idx] = v`, index_put_) through integer index tensors, on the CPU kernels of
kernels/index.c.

`getitem` / `setitem` take a full Python index (see pytorchlite/_indexing.py, which
applies its basic parts as a view first). `index` / `index_put_` take that view and one
entry per dim: None, or the tensor indexing it (int64, int32, or a bool mask).

The result's dims follow PyTorch (and NumPy): the index tensors broadcast together to one
shape B. When the indexed dims are adjacent, B replaces them in place
(x[:, i, j] -> [x.shape[0], *B]); when they are separated by other dims, B goes first
(x[i, :, j] -> [*B, x.shape[1]]). The kernel sees it the way ATen's index kernels do: the
tensor being indexed is restrided to the result's shape (stride 0 along B's dims) and
each index tensor is expanded to it; every index value is bounds-checked in C.
"""

from pytorchlite import _dtype as D
from pytorchlite._C import MAX_DIMS, check, ffi, lib
from pytorchlite._core import squeeze_dims, TensorBase as Tensor, broadcast_shapes, empty as _empty, expand_strides, is_contiguous_layout as _is_contiguous, make, numel as _numel, to_dtype

_INT64 = D.int64


def getitem(t, index):
    from pytorchlite import _indexing
    view, advanced = _indexing.parse(t, index)
    if advanced is None:
        return view
    return index(view, advanced)


def setitem(t, index, value):
    from pytorchlite import _indexing
    _indexing.setitem(t, index, value)


# --- preparing the index tensors ----------------------------------------------------------

def _torch_name(dtype):
    """PyTorch's C++ scalar type name (used in its dtype messages)."""
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}[dtype.name]


def _without_ones(t):
    """t without its size-1 dims (a view for the kernels; not recorded by autograd)."""
    keep = squeeze_dims(t._shape)
    return make(t._storage, tuple(t._shape[k] for k in keep), tuple(t._stride[k] for k in keep), t._offset,
                t._dtype)


def nonzero_coords(t):
    """The coordinates of t's nonzero elements (in row-major order): int64 [n, t.dim()]."""
    if t._device.type != "cpu":
        raise NotImplementedError(f"nonzero(): no kernel for device '{t._device.type}'")
    nd = len(t._shape)
    if nd > MAX_DIMS:
        # PyTorch takes more dims than a descriptor holds: find the elements in t without
        # its size-1 dims (their coordinate is 0)
        if 0 in t._shape:
            return make(_empty((nd, 0), D.int64, t._device)._storage, (0, nd), (1, 0), 0, D.int64)
        keep = squeeze_dims(t._shape)
        sq = nonzero_coords(_without_ones(t))
        n = sq._shape[0]
        coords = _empty((nd, n), D.int64, t._device)
        c = coords._numpy_view()
        c[...] = 0
        c[keep] = sq._numpy_view().T
        return make(coords._storage, (n, nd), (1, n), 0, D.int64)
    d = ffi.new("ptl_tensor *")
    _desc(d, t, t._shape, t._stride)
    count = ffi.new("int64_t *")
    check(lib.ptl_count_nonzero(d, count), "nonzero")
    n = count[0]
    nd = len(t._shape)
    # PyTorch's layout: [n, ndim] with strides (1, n), each dim's coordinates contiguous
    coords = _empty((nd, n), D.int64, t._device)
    if n and nd:
        check(lib.ptl_nonzero(d, ffi.cast("int64_t *", coords._storage.ptr), n, count), "nonzero")
    return make(coords._storage, (n, nd), (1, n), 0, D.int64)


def _expand_masks(src, indices):
    """Replace each k-d bool mask by k int64 tensors (its nonzero coordinates), after
    checking the mask's shape against the dims it covers. Returns (src, indices).

    A mask that is the only index, over dims whose strides let them merge into one
    (a contiguous tensor's always do), becomes one index of flat positions into src
    viewed with those dims merged: one index to read per element instead of k."""
    out = list(indices)
    only = [ix for ix in out if ix is not None]
    pos = 0
    while pos < len(out):
        m = out[pos]
        if isinstance(m, Tensor) and m._dtype is D.bool:
            k = len(m._shape)
            for j in range(k):
                if pos + j >= len(src._shape) or m._shape[j] != src._shape[pos + j]:
                    raise IndexError(f"The shape of the mask {list(m._shape)} at index {j} does not match the shape "
                                     f"of the indexed tensor {list(src._shape)} at index {pos + j}")
            if k > MAX_DIMS:
                # more coordinates than a kernel takes: the mask's size-1 dims select
                # nothing, so drop them from the mask and from src (a view: setitem writes
                # through it)
                drop = {pos + j for j in range(k) if m._shape[j] == 1}
                keep = [d for d in range(len(src._shape)) if d not in drop]
                src = make(src._storage, tuple(src._shape[d] for d in keep), tuple(src._stride[d] for d in keep),
                           src._offset, src._dtype, src._vc)
                m = _without_ones(m)
                k = len(m._shape)
                if k > MAX_DIMS:     # (only with size-0 dims: nothing is selected)
                    raise RuntimeError(f"only tensors with up to {MAX_DIMS} dims are supported")
            if len(only) == 1 and k:
                merged = _merge_dims(src, pos, k)
                if merged is not None:
                    out[pos] = _flat_positions(m)
                    return merged, out
            if k == 0:
                # a 0-d mask covers no dim: like x[True] / x[False], a new size-1 dim
                # indexed by [0] or []
                from pytorchlite._kernels.views import unsqueeze
                src = unsqueeze(src, pos)
                out[pos] = _flat_positions(m.view(1))
                pos += 1
                continue
            coords = nonzero_coords(m)
            out[pos:pos + 1] = [_column(coords, j) for j in range(k)]
            pos += k
        else:
            pos += 1
    return src, out


def _merge_dims(src, pos, k):
    """src with dims [pos, pos + k) merged into one, as a view; None if strides forbid."""
    from pytorchlite._kernels.views import compute_stride
    from pytorchlite._views import make_view
    shape, stride = src._shape, src._stride
    n = _numel(shape[pos:pos + k])
    st = compute_stride(shape[pos:pos + k], stride[pos:pos + k], (n,))
    if st is None:
        return None
    return make_view(src, shape[:pos] + (n,) + shape[pos + k:], stride[:pos] + tuple(st) + stride[pos + k:],
                     src._offset)


def _flat_positions(m):
    """int64 [n]: the row-major positions of the True elements of bool mask m."""
    if m._device.type != "cpu":
        raise NotImplementedError(f"index(): boolean masks have no kernel for device '{m._device.type}'")
    if len(m._shape) > MAX_DIMS:
        if 0 in m._shape:
            return _empty((0,), D.int64, m._device)
        m = _without_ones(m)       # the same elements in the same row-major order
    d = ffi.new("ptl_tensor *")
    _desc(d, m, m._shape, m._stride)
    count = ffi.new("int64_t *")
    check(lib.ptl_count_nonzero(d, count), "index")
    n = count[0]
    out = _empty((n,), D.int64, m._device)
    if n:
        check(lib.ptl_nonzero_flat(d, ffi.cast("int64_t *", out._storage.ptr), n, count), "index")
    return out


def _column(coords, j):
    from pytorchlite._views import make_view
    return make_view(coords, (coords._shape[0],), (coords._stride[0],), coords._offset + j * coords._stride[1])


def _prepare(src, indices):
    """Normalise (view, indices) for a kernel.

    Returns (src, p0, idx, bshape): src possibly permuted so the indexed dims are the
    adjacent block [p0, p0 + len(idx)), idx the int64 index tensors for those dims in
    order, and bshape their broadcast shape.
    """
    if any(ix is not None and ix._dtype is not _INT64 for ix in indices):
        for ix in indices:
            if ix is not None and ix._dtype not in (D.int64, D.int32, D.bool, D.uint8):
                raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        indices = [ix.to(D.bool) if ix is not None and ix._dtype is D.uint8 else ix for ix in indices]
        src, indices = _expand_masks(src, indices)
        indices = [to_dtype(ix, D.int64) if ix is not None else None for ix in indices]
    if len(indices) > len(src._shape):
        raise IndexError(f"too many indices for tensor of dimension {len(src._shape)}")
    dev = src._device
    positions = []
    idx = []
    for p, ix in enumerate(indices):
        if ix is not None:
            if ix._device != dev and ix._device.type != "cpu":
                raise RuntimeError(f"indices should be either on cpu or on the same device as the indexed tensor "
                                   f"({dev})")
            positions.append(p)
            idx.append(ix)
    if len(idx) == 1:
        bshape = idx[0]._shape
    else:
        try:
            bshape = broadcast_shapes("index", [ix._shape for ix in idx])
        except RuntimeError:
            raise IndexError("shape mismatch: indexing tensors could not be broadcast together with shapes "
                             + ", ".join(str(list(ix._shape)) for ix in idx)) from None
    p0 = positions[0]
    if positions[-1] - p0 != len(positions) - 1:
        # separated by other dims: the broadcast dims go first (PyTorch's transposeToFront)
        from pytorchlite._kernels.views import permute
        rest = [d for d in range(len(src._shape)) if d not in set(positions)]
        src = permute(src, positions + rest)
        p0 = 0
    return src, p0, idx, bshape


# --- descriptors and kernels --------------------------------------------------------------

_cast = ffi.cast
_new = ffi.new


def _desc(d, t, shape, stride):
    """Fill descriptor d for tensor t viewed at (shape, stride)."""
    d.data = _cast("void *", t._storage.ptr + t._offset * t._dtype.itemsize)
    d.dtype = t._dtype.code
    n = len(shape)
    d.ndim = n
    if n:
        d.sizes[0:n] = shape
        d.strides[0:n] = stride


def _bstrides(ix, bshape):
    """ix's strides when expanded to bshape (0 where it broadcasts)."""
    if ix._shape == bshape:
        return list(ix._stride)
    off = len(bshape) - len(ix._shape)
    st = [0] * len(bshape)
    for i, (n, s) in enumerate(zip(ix._shape, ix._stride)):
        st[off + i] = 0 if (n == 1 and bshape[off + i] != 1) else s
    return st


def _plan(t, p0, idx, bshape):
    """What both kernels take: the result shape, descriptors [slot for the other
    operand, t restrided to the result, the index tensors], one int64 array
    [isize * k, istride * k, bad value, bad index], and the dims of the result the
    descriptors keep (None: all of them; see _at)."""
    k = len(idx)
    shape, stride = t._shape, t._stride
    pre = shape[:p0]
    out_shape = tuple(pre) + tuple(bshape) + tuple(shape[p0 + k:])
    nb = len(bshape)
    lead = [0] * len(pre)
    trail = [0] * (len(out_shape) - len(pre) - nb)
    strides = [tuple(stride[:p0]) + (0,) * nb + tuple(stride[p0 + k:])] + \
        [lead + _bstrides(ix, bshape) + trail for ix in idx]
    keep, kshape = None, out_shape
    if len(out_shape) > MAX_DIMS:
        if not _numel(out_shape):
            return out_shape, None, None, None      # (the callers stop there)
        # the kernels are elementwise over the result: they run without its size-1 dims
        keep = squeeze_dims(out_shape)
        kshape, strides = tuple(out_shape[d] for d in keep), [[st[d] for d in keep] for st in strides]
    descs = _new("ptl_tensor[]", k + 2)
    _desc(descs[1], t, kshape, strides[0])
    for j, ix in enumerate(idx):
        _desc(descs[2 + j], ix, kshape, strides[1 + j])
    ints = _new("int64_t[]", [shape[p0 + j] for j in range(k)] + [stride[p0 + j] for j in range(k)] + [0, 0])
    return out_shape, descs, ints, keep


def _at(keep, shape, stride):
    """(shape, stride) as the descriptors of _plan see the result: without the dims it
    dropped."""
    if keep is None:
        return shape, stride
    return tuple(shape[d] for d in keep), tuple(stride[d] for d in keep)


def _out_of_bounds(value, k, size):
    return IndexError(f"index {value} is out of bounds for dimension {k} with size {size}")


def gather(src, p0, idx, bshape, error=_out_of_bounds):
    """out[..., b, ...] = src[..., idx_0[b], idx_1[b], ..., ...] (dims p0.. indexed)."""
    if src._device.type != "cpu":
        raise NotImplementedError(f"index(): advanced indexing has no kernel for device '{src._device.type}'")
    out_shape, descs, ints, keep = _plan(src, p0, idx, bshape)
    out = _empty(out_shape, src._dtype, src._device)
    if _numel(out_shape) == 0:
        return out
    k = len(idx)
    _desc(descs[0], out, *_at(keep, out_shape, out._stride))
    status = lib.ptl_index_gather(descs, descs + 1, k, descs + 2, ints, ints + k, ints + 2 * k)
    if status == 5:
        bad = ints[2 * k + 1]
        raise error(ints[2 * k], bad, ints[bad])
    check(status, "index")
    return out


def scatter(dst, p0, idx, bshape, values, accumulate):
    """dst[..., idx_0[b], ..., ...] (+)= values[..., b, ...]; values already has dst's
    dtype and broadcasts to the result shape (checked by the caller)."""
    if dst._device.type != "cpu":
        raise NotImplementedError(f"index_put_(): advanced indexing has no kernel for device '{dst._device.type}'")
    out_shape, descs, ints, keep = _plan(dst, p0, idx, bshape)
    if _numel(out_shape) == 0:
        return
    k = len(idx)
    _desc(descs[0], values, *_at(keep, out_shape, values._stride if values._shape == out_shape else
                                  expand_strides(values, out_shape)))
    status = lib.ptl_index_scatter(descs + 1, descs, k, descs + 2, ints, ints + k, 1 if accumulate else 0,
                                   ints + 2 * k)
    if status == 5:
        bad = ints[2 * k + 1]
        raise _out_of_bounds(ints[2 * k], bad, ints[bad])
    check(status, "index_put_")


# --- the operations -----------------------------------------------------------------------

def index(src, indices):
    """src[indices] for one entry per dim of src (None or an index tensor)."""
    if len(indices) == 1:
        ix = indices[0]
        if ix is not None and ix._dtype is _INT64 and src._shape and ix._device == src._device:
            return gather(src, 0, [ix], ix._shape)     # x[i]: the common case, short path
    if all(ix is None for ix in indices):
        return src
    src, p0, idx, bshape = _prepare(src, indices)
    return gather(src, p0, idx, bshape)


def _overlap(a, b):
    """Whether a and b's element ranges in one storage intersect."""
    if a._storage is not b._storage or not _numel(a._shape) or not _numel(b._shape):
        return False
    lo_a = a._offset
    hi_a = a._offset + sum((n - 1) * s for n, s in zip(a._shape, a._stride))
    lo_b = b._offset
    hi_b = b._offset + sum((n - 1) * s for n, s in zip(b._shape, b._stride))
    return lo_a <= hi_b and lo_b <= hi_a


def index_put_(dst, indices, values, accumulate):
    """dst[indices] = values (or +=), in place; bumps dst's version. Checks in PyTorch's
    order: memory overlap, the indices, the value's shape, then its dtype."""
    from pytorchlite._kernels.copy import clone
    if dst._device.type != "cpu":
        raise NotImplementedError(f"index_put_(): advanced indexing has no kernel for device '{dst._device.type}'")
    if values._device != dst._device:
        if values._shape:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two devices, "
                               f"{dst._device} and {values._device}!")
        values = values.to(dst._device)
    if _overlap(dst, values):
        # PyTorch refuses when it can tell the memory overlaps; strided cases get a copy
        if _is_contiguous(dst._shape, dst._stride) and _is_contiguous(values._shape, values._stride):
            raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                               "refer to a single memory location. Please clone() the tensor before performing "
                               "the operation.")
        values = clone(values)
    if all(ix is None for ix in indices):
        target, p0, idx, bshape = dst, 0, [], ()
    else:
        target, p0, idx, bshape = _prepare(dst, indices)
    k = len(idx)
    out_shape = tuple(target._shape[:p0]) + tuple(bshape) + tuple(target._shape[p0 + k:])
    if not _broadcastable(values._shape, out_shape):
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(values._shape)} cannot be broadcast to "
                           f"indexing result of shape {list(out_shape)}")
    if values._dtype is not dst._dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_torch_name(dst._dtype)} for the destination and {_torch_name(values._dtype)} "
                           "for the source.")
    if not idx:
        from pytorchlite._kernels.views import expand
        target.copy_(expand(values, out_shape) if not accumulate else target + values)
        return dst
    scatter(target, p0, idx, bshape, values, accumulate)
    dst._vc[0] += 1
    return dst


def _broadcastable(shape, target):
    if len(shape) > len(target):
        return False
    for n, m in zip(reversed(shape), reversed(target)):
        if n != m and n != 1:
            return False
    return True
