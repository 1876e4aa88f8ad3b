"""Kernel entries for factories: empty/zeros/ones/full (and _like), arange, linspace, eye."""

import math

from pytorchlite import _backends
from pytorchlite import _dtype as D
from pytorchlite._device import CPU
from pytorchlite._core import INT64_MAX as _INT64_MAX, check_numel, empty as _empty, fill, make, storage_nbytes_strided
from pytorchlite._storage import Storage
from pytorchlite._core import contiguous_strides, copy_into  # noqa: F401


def _check_size(op, size):
    for s in size:
        if s < 0:
            if op == "zeros":   # PyTorch's zeros has its own wording
                raise RuntimeError("zeros: Dimension size must be non-negative.")
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


def empty_strided(size, stride, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    _check_size("empty_strided", size)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    _check_pin_memory(pin_memory)
    dtype = dtype or D.get_default_dtype()
    nbytes = storage_nbytes_strided(size, stride, dtype.itemsize)   # PyTorch's checks, in its order:
    st = Storage.allocate(nbytes, _dev(device))                     # bytes, allocation, element count
    check_numel(size)
    return _finish(make(st, tuple(size), tuple(stride), 0, dtype), requires_grad)


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
    if not (step > 0 or step < 0):      # 0 or NaN
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
    if dtype is D.int64:
        # start, end and step are truncated to int64 (PyTorch's accumulate type) and the
        # length is computed in int64 arithmetic, which wraps as in C
        for v in (start, end, step):
            if isinstance(v, int) and not -2 ** 63 <= v <= _INT64_MAX:
                if not -2 ** 63 <= v < 2 ** 64:     # beyond what PyTorch's Scalar holds at all
                    raise OverflowError("int too big to convert")
                raise RuntimeError("value cannot be converted to type int64_t without overflow")
        xstart, xend, xstep = int(start), int(end), int(step)
        if xstep == 0:
            raise ValueError("arange(): step must be nonzero")
        sgn = (xstep > 0) - (xstep < 0)
        num = _wrap_int64(xend - xstart + xstep - sgn)
        size_d = float(abs(num) // abs(xstep) * (1 if (num >= 0) == (xstep > 0) else -1))  # C's truncating division
    else:
        # PyTorch computes the length in double precision
        q = (float(end) - float(start)) / float(step)
        size_d = float(math.ceil(q)) if math.isfinite(q) else q
    if not 0 <= size_d <= float(_INT64_MAX):
        raise RuntimeError("invalid size, possible overflow?")
    n = int(size_d)
    if n > _INT64_MAX:
        # float(INT64_MAX) is 2**63, which C's cast to int64_t turns into INT64_MIN
        raise RuntimeError("IntArrayRef contains an int that cannot be represented as a SymInt: "
                           "-9223372036854775808")
    t = _empty((n,), dtype, _dev(device))    # before the values: a huge n fails here, as in PyTorch
    if dtype.is_floating_point:
        vals = start + np.arange(n, dtype=np.float64) * step
    else:
        vals = (np.arange(n, dtype=np.int64) * int(step) + int(start))   # narrower dtypes wrap, as in C
    return _finish(_values_into(t, vals), requires_grad)


def _wrap_int64(v):
    return ((v + 2 ** 63) & ((1 << 64) - 1)) - 2 ** 63


def _check_int64(v):
    """PyTorch's parser of an int argument (THPUtils_unpackLong) refuses values beyond int64."""
    if not -2 ** 63 <= v <= _INT64_MAX:
        raise ValueError("Overflow when unpacking long long")


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    import numpy as np
    _check_pin_memory(pin_memory)
    _check_int64(steps)
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
    _check_int64(n)
    _check_int64(m)
    if n < 0:
        raise RuntimeError(f"eye(): n must be greater or equal to 0, got {n}")
    if m < 0:
        raise RuntimeError(f"eye(): m must be greater or equal to 0, got {m}")
    dtype = dtype or D.get_default_dtype()
    check_numel((n, m))    # PyTorch resizes an empty tensor: the element count is checked first
    t = _empty((n, m), dtype, _dev(device))
    if not n or not m:      # (NumPy refuses np.eye(0, 2**62) although it holds nothing)
        return _finish(t, requires_grad)
    return _finish(_values_into(t, np.eye(n, m)), requires_grad)
