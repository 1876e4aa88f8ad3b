"""Kernel entries for copying: copy_, _to_copy (dtype/device conversion), clone, contiguous."""

from pytorchlite import _backends
from pytorchlite._argparse import INTERNAL_OVERLAP, PARTIAL_OVERLAP
from pytorchlite._core import broadcast_shapes, copy_into, empty as _empty, overlaps as _overlaps, self_overlapping as _self_overlapping
from pytorchlite._core import overlap_status as _overlap_status
from pytorchlite._kernels.pointwise import _alloc
from pytorchlite._memory_format import contiguous_format, preserve_format, check_memory_format
from pytorchlite._core import INT64_MAX, TensorBase as Tensor, contiguous_strides, make, numel as _numel, scalar_tensor


def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        src = scalar_tensor(src, self._dtype, self._device)
    shape = broadcast_shapes("copy_", [self._shape, src._shape])
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")
    if _self_overlapping(self) and self.numel() > 1:
        raise RuntimeError(INTERNAL_OVERLAP)
    if src._storage is self._storage:
        if _overlap_status(self, src) == 1:     # PyTorch's TensorIterator rule, as for every write
            raise RuntimeError(PARTIAL_OVERLAP)
        if _overlaps(self, src):
            # strided views PyTorch does not judge (x[::2].copy_(x[1::2])): read a copy
            src = clone(src)
    if self._device != src._device:
        _cross_device_copy(self, src, non_blocking)
    else:
        copy_into(self, src)
    self._vc[0] += 1
    return self


def _to_copy(self, dtype=None, device=None, non_blocking=False):
    out = _empty(self._shape, dtype or self._dtype, device or self._device)
    if out._device != self._device:
        _cross_device_copy(out, self, non_blocking)
    else:
        copy_into(out, self)
    return out


def _cross_device_copy(dst, src, non_blocking):
    """A copy between devices goes to the backend of the device that is not the CPU (the
    destination's when both are accelerators)."""
    other = dst._device if dst._device.type != "cpu" else src._device
    _backends.get(other.type).copy(dst, src, non_blocking)


def _dense_layout(t):
    """Strides for a new tensor laid out like `t` (PyTorch's preserve_format): t's own
    strides when they are dense and non-overlapping (a permutation of a contiguous
    layout), otherwise dense strides in the order of t's strides, found as PyTorch does:
    an insertion sort from the innermost dim in which stride-0 dims compare as unordered."""
    shape, stride = t._shape, t._stride
    dims = sorted((d for d in range(len(shape)) if shape[d] != 1), key=lambda d: stride[d])
    expected = 1
    for d in dims:
        if stride[d] != expected:
            break
        expected *= shape[d]
    else:
        return stride

    def should_swap(a, b):
        if stride[a] == 0 or stride[b] == 0:
            return 0
        if stride[a] != stride[b]:
            return -1 if stride[a] < stride[b] else 1
        return 1 if shape[a] > shape[b] else 0

    perm = list(range(len(shape)))[::-1]   # innermost first
    for i in range(1, len(perm)):
        moving = i
        for j in range(i - 1, -1, -1):
            c = should_swap(perm[j], perm[moving])
            if c > 0:
                perm[j], perm[moving] = perm[moving], perm[j]
                moving = j
            elif c < 0:
                break
    out = [0] * len(shape)
    acc = 1
    for d in perm:
        out[d] = acc
        acc *= shape[d]
    return tuple(out)


def empty_preserving(t, dtype=None, device=None, memory_format=None):
    """An uninitialised tensor shaped like `t` in the layout `memory_format` asks for
    (None means preserve_format, as in PyTorch's clone and *_like factories)."""
    fmt = check_memory_format(memory_format, preserve_format)
    dtype = dtype or t._dtype
    device = device or t._device
    if fmt is contiguous_format or t.is_contiguous():
        return _empty(t._shape, dtype, device)
    stride = _dense_layout(t)
    nbytes = _numel(t._shape) * dtype.itemsize
    if nbytes > INT64_MAX:
        # PyTorch allocates a preserved layout with empty_strided, whose message names strides
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(t._shape)} and "
                           f"strides={list(stride)}")
    if stride == contiguous_strides(t._shape):
        return _empty(t._shape, dtype, device)
    return make(_alloc(nbytes, device), t._shape, stride, 0, dtype)


def clone(self, memory_format=contiguous_format):
    """A copy with its own memory; contiguous unless asked to preserve the layout. Kernels
    call this (and rely on the contiguous result); the public operator is clone_op."""
    out = empty_preserving(self, memory_format=memory_format)
    copy_into(out, self)
    return out


def clone_op(self, memory_format=None):
    """The `clone` operator: PyTorch's default memory_format is preserve_format."""
    return clone(self, check_memory_format(memory_format, preserve_format))


def contiguous(self, memory_format=None):
    check_memory_format(memory_format, contiguous_format)
    if self.is_contiguous():
        return self
    return clone(self, memory_format=contiguous_format)
