"""Kernel entries for copying: copy_, _to_copy (dtype/device conversion), clone, contiguous."""

from pytorchlite._argparse import wrap_dim  # noqa: F401  (kept for symmetry with other entries)
from pytorchlite._kernels.pointwise import broadcast_shapes, copy_into, _empty, _overlaps, _self_overlapping
from pytorchlite._tensor import Tensor


def copy_(self, src, non_blocking=False):
    if not isinstance(src, Tensor):
        from pytorchlite._kernels.pointwise import scalar_tensor
        src = scalar_tensor(src, self._dtype, self._device)
    shape = broadcast_shapes("copy_", [self._shape, src._shape])
    if shape != self._shape:
        raise RuntimeError(f"output with shape {list(self._shape)} doesn't match the broadcast shape {list(shape)}")
    if _self_overlapping(self) and self.numel() > 1:
        raise RuntimeError("unsupported operation: more than one element of the written-to tensor refers to a "
                           "single memory location. Please clone() the tensor before performing the operation.")
    if _overlaps(self, src):
        src = clone(src)
    if self._device != src._device:
        from pytorchlite import cuda
        cuda._copy(self, src, non_blocking)
    else:
        copy_into(self, src)
    self._vc[0] += 1
    return self


def _to_copy(self, dtype=None, device=None, non_blocking=False):
    out = _empty(self._shape, dtype or self._dtype, device or self._device)
    if out._device != self._device:
        from pytorchlite import cuda
        cuda._copy(out, self, non_blocking)
    else:
        copy_into(out, self)
    return out


def clone(self, memory_format=None):
    out = _empty(self._shape, self._dtype, self._device)
    copy_into(out, self)
    return out


def contiguous(self, memory_format=None):
    if self.is_contiguous():
        return self
    return clone(self)
