"""DLPack exchange for tensors (the capsule mechanics live in _dlpack.py)."""

import enum

from pytorchlite import _backends
from pytorchlite import _dtype as D
from pytorchlite._device import CPU, device as _device
from pytorchlite._storage import Storage
from pytorchlite._core import TensorBase as Tensor, make


class DLDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3


def dlpack_device(t):
    dev = t._device
    return (DLDeviceType(_backends.get(dev.type).dlpack_device_type()), dev.index or 0)


def to_dlpack(t, *, stream=None, max_version=None, dl_device=None, copy=None):
    from pytorchlite import _dlpack
    if t._requires_grad:
        raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
    if copy:
        t = t.clone()
    if t._device.type == "cpu" and stream is not None:
        raise BufferError("stream must be None for a CPU tensor")
    if dl_device is not None and tuple(dl_device) != tuple(dlpack_device(t)):
        raise BufferError(f"cannot export a {t._device} tensor to device {tuple(dl_device)} without a copy")
    _backends.get(t._device.type).dlpack_sync(t, stream)
    versioned = max_version is not None and max_version[0] >= 1
    dt, did = dlpack_device(t)
    return _dlpack.to_dlpack_capsule(
        data_ptr=t.data_ptr() if t.numel() else t.data_ptr(), shape=t._shape, strides=t._stride,
        dtype_code=t._dtype.code, device_type=int(dt), device_id=did, owner=t, versioned=versioned)


_INVALID_CAPSULE = ("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only "
                    "once, so you might have already constructed a tensor from it once.")


def from_dlpack(ext_tensor):
    """A tensor sharing memory with any object that speaks DLPack (NumPy arrays, PyTorch
    tensors, ...) or with a DLPack capsule.

    >>> import numpy as np, pytorchlite
    >>> pytorchlite.from_dlpack(np.arange(3))
    tensor([0, 1, 2])
    """
    from pytorchlite import _dlpack
    if isinstance(ext_tensor, Tensor):
        return ext_tensor
    backends = {_backends.get(t).dlpack_device_type(): t for t in _backends.registered()
                if _backends.get(t).dlpack_device_type() is not None}
    if hasattr(ext_tensor, "__dlpack__"):
        stream = None
        code, index = (int(v) for v in ext_tensor.__dlpack_device__())
        if code != DLDeviceType.kDLCPU and code in backends:
            # the producer orders its pending work before our current stream
            stream = _backends.get(backends[code]).dlpack_consumer_stream(index)
        imp = _dlpack.from_dlpack_object(ext_tensor, stream=stream, accept=tuple(backends))
    else:
        try:
            imp = _dlpack.from_dlpack_capsule(ext_tensor)
        except (TypeError, ValueError):
            # not a capsule, not a DLPack capsule, or one already consumed: PyTorch cannot
            # tell these apart either and says so in one message
            raise RuntimeError(_INVALID_CAPSULE) from None
    dt = D.BY_CODE[imp.dtype_code]
    if imp.device_type == DLDeviceType.kDLCPU:
        dev = CPU
    elif imp.device_type in backends:
        dev = _device(backends[imp.device_type], imp.device_id)
    else:
        raise BufferError(f"from_dlpack: unsupported device type {imp.device_type}")
    if any(s < 0 for s in imp.strides):
        # tensors never have negative strides here (as in PyTorch's from_numpy)
        raise BufferError(f"from_dlpack: negative strides {tuple(imp.strides)} are not supported; "
                          "make a copy of the producer's array first")
    item = dt.itemsize
    extent = item + sum((n - 1) * s * item for n, s in zip(imp.shape, imp.strides)) if all(imp.shape) else 0
    st = Storage(imp.data_ptr, extent, dev, owner=imp)
    return make(st, tuple(imp.shape), tuple(imp.strides), 0, dt)
