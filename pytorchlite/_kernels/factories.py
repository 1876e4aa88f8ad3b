"""Kernel entries for factories: empty/zeros/ones/full (and _like), arange, linspace, eye."""

import math

from pytorchlite import _backends
from pytorchlite import _dtype as D
from pytorchlite._device import CPU
from pytorchlite._core import empty as _empty, fill
from pytorchlite._core import contiguous_strides, copy_into  # noqa: F401


def _check_size(op, size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")


def _check_pin_memory(pin_memory):
    """pin_memory=True needs page-locked host memory, which only the CUDA backend provides."""
    if not pin_memory:
        return
    if not any(_backends.get(t).pinned_memory_available() for t in _backends.registered()):
        raise RuntimeError("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                           "allocator is available on this system.")
    raise NotImplementedError("pin_memory=True: pinned host allocations are not implemented yet")


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


# PyTorch names the C type in "value cannot be converted to type X without overflow"
_C_TYPE_NAMES = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
                 "float16": "c10::Half", "bfloat16": "c10::BFloat16", "float32": "float", "float64": "double"}


def check_fits(value, dtype):
    """PyTorch's checked scalar conversion for fill values: a number outside the target
    type's range is an error (integers may wrap into unsigned types from below; infinities
    and NaN stay valid for floating types; bool is not checked)."""
    name = _C_TYPE_NAMES.get(dtype.name)
    if name is None or isinstance(value, bool):
        return
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, complex):
        return
    if isinstance(value, int) and not (-2 ** 63 <= value < 2 ** 64):
        raise OverflowError("int too big to convert")
    if dtype.is_floating_point:
        ok = not math.isfinite(value) or abs(value) <= D.finfo(dtype).max
    else:
        info = D.iinfo(dtype)
        if isinstance(value, int) and info.min == 0 and value < 0:
            ok = True
        else:
            ok = value == value and info.min <= value <= info.max
    if not ok:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")


def fill_(self, value):
    check_fits(value, self._dtype)
    fill(self, value)
    self._vc[0] += 1
    return self


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    _check_size("empty", size)
    _check_pin_memory(pin_memory)
    return _finish(_empty(tuple(size), dtype or D.get_default_dtype(), _dev(device)), requires_grad)


def _full(op, size, value, dtype, device, requires_grad, pin_memory=None):
    _check_size(op, size)
    _check_pin_memory(pin_memory)
    check_fits(value, dtype)
    t = _empty(tuple(size), dtype, _dev(device))
    return _finish(fill(t, value), requires_grad)


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    return _full("zeros", size, 0, dtype or D.get_default_dtype(), device, requires_grad, pin_memory)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    return _full("ones", size, 1, dtype or D.get_default_dtype(), device, requires_grad, pin_memory)


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    if dtype is None:
        from pytorchlite._promotion import scalar_dtype
        dtype = scalar_dtype(fill_value)
    return _full("full", size, fill_value, dtype, device, requires_grad, pin_memory)


def _like(op, input, dtype, device, requires_grad, memory_format, value=None, pin_memory=None):
    """The *_like factories: input's shape and (preserve_format) layout."""
    from pytorchlite._kernels.copy import empty_preserving
    _check_pin_memory(pin_memory)
    dtype = dtype or input._dtype
    if value is not None:
        check_fits(value, dtype)
    t = empty_preserving(input, dtype, _dev(device) if device is not None else None, memory_format)
    if value is not None:
        fill(t, value)      # on t's device (its backend's fill for an accelerator)
    return _finish(t, requires_grad)


def empty_like(input, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    return _like("empty_like", input, dtype, device, requires_grad, memory_format, None, pin_memory)


def zeros_like(input, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    return _like("zeros_like", input, dtype, device, requires_grad, memory_format, 0, pin_memory)


def ones_like(input, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    return _like("ones_like", input, dtype, device, requires_grad, memory_format, 1, pin_memory)


def full_like(input, fill_value, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
              memory_format=None):
    # input's dtype is kept (not inferred from fill_value), as in PyTorch
    return _like("full_like", input, dtype, device, requires_grad, memory_format, fill_value, pin_memory)


def _dev(device):
    from pytorchlite._argparse import factory_device
    return factory_device(device)


def _values_into(t, values):
    """Write a NumPy array of values into a new tensor (arange/linspace/eye compute their
    values on the host; an accelerator tensor gets them by one copy)."""
    import numpy as np
    host = t if t._device.type == "cpu" else _empty(t._shape, t._dtype, CPU)
    if host._dtype is D.bfloat16:
        tmp = _empty(host._shape, D.float32, CPU)
        tmp._numpy_view()[...] = values
        copy_into(host, tmp)
    else:
        host._numpy_view()[...] = np.asarray(values).astype(host._dtype.np_dtype, copy=False)
    if host is not t:
        copy_into(t, host)
    return t


def arange(start, end=None, step=1, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    import numpy as np
    _check_pin_memory(pin_memory)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange(): unsupported range: {start} -> {end}")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("arange(): upper bound and lower bound inconsistent with step sign")
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else D.int64
    if dtype is D.bool:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    if dtype.is_floating_point:
        # PyTorch computes the length in double precision
        n = int(math.ceil((end - start) / step))
        vals = start + np.arange(n, dtype=np.float64) * step
    else:
        # integer results: start, end and step are first truncated to integers (PyTorch's
        # accumulate type); int64 sizes the result with integer arithmetic on them, the
        # narrower types from the double values as given
        xstart, xend, xstep = int(start), int(end), int(step)
        if dtype is D.int64:
            if xstep == 0:
                raise ValueError("arange(): step must be nonzero")
            sgn = (xstep > 0) - (xstep < 0)
            num = xend - xstart + xstep - sgn
            n = abs(num) // abs(xstep) * (1 if (num >= 0) == (xstep > 0) else -1)   # C's truncating division
        else:
            n = int(math.ceil((end - start) / step))
        vals = (np.arange(n, dtype=np.int64) * xstep + xstart)   # narrower dtypes wrap, as in C
    t = _empty((n,), dtype, _dev(device))
    return _finish(_values_into(t, vals), requires_grad)


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    import numpy as np
    _check_pin_memory(pin_memory)
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dtype = dtype or D.get_default_dtype()
    if dtype is D.bool:
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    t = _empty((steps,), dtype, _dev(device))
    if steps == 1:
        vals = np.array([start], dtype=np.float64)
    else:
        # PyTorch fills the first half from start and the second half from end, which keeps
        # both end points exact
        step = (end - start) / (steps - 1)
        idx = np.arange(steps, dtype=np.float64)
        half = steps // 2
        vals = np.where(idx < half, start + step * idx, end - step * (steps - 1 - idx))
    if not dtype.is_floating_point:
        vals = np.trunc(vals)
    return _finish(_values_into(t, vals), requires_grad)


def eye(n, m=None, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    import numpy as np
    _check_pin_memory(pin_memory)
    if m is None:
        m = n
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n must be greater or equal to 0, got {min(n, m)}")
    dtype = dtype or D.get_default_dtype()
    t = _empty((n, m), dtype, _dev(device))
    return _finish(_values_into(t, np.eye(n, m)), requires_grad)
