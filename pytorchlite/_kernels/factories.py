"""Kernel entries for factories: empty/zeros/ones/full (and _like), arange, linspace, eye."""

import math

from pytorchlite import _dtype as D
from pytorchlite._C import check, lib
from pytorchlite._kernels.pointwise import _descs, _empty, _scalar_arg
from pytorchlite._tensor import contiguous_strides  # noqa: F401


def _check_size(op, size):
    for s in size:
        if s < 0:
            raise RuntimeError(f"{op}(): Trying to create tensor with negative dimension {s}: {list(size)}")


def _finish(t, requires_grad):
    if requires_grad:
        t.requires_grad_(True)
    return t


def fill_(self, value):
    d, i = _scalar_arg(value)
    check(lib.ptl_fill(_descs((self,), self._shape), d, i), "fill_")
    self._vc[0] += 1
    return self


def empty(size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    _check_size("empty", size)
    return _finish(_empty(tuple(size), dtype or D.get_default_dtype(), _dev(device)), requires_grad)


def _full(op, size, value, dtype, device, requires_grad):
    _check_size(op, size)
    t = _empty(tuple(size), dtype, _dev(device))
    d, i = _scalar_arg(value)
    check(lib.ptl_fill(_descs((t,), t._shape), d, i), op)
    return _finish(t, requires_grad)


def zeros(size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    return _full("zeros", size, 0, dtype or D.get_default_dtype(), device, requires_grad)


def ones(size, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    return _full("ones", size, 1, dtype or D.get_default_dtype(), device, requires_grad)


def full(size, fill_value, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    if dtype is None:
        from pytorchlite._promotion import scalar_dtype
        dtype = scalar_dtype(fill_value)
    return _full("full", size, fill_value, dtype, device, requires_grad)


def _like(t, dtype, device):
    return tuple(t._shape), dtype or t._dtype, device or t._device


def empty_like(input, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    s, d, dev = _like(input, dtype, device)
    return empty(s, d, None, dev, None, requires_grad)


def zeros_like(input, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    s, d, dev = _like(input, dtype, device)
    return zeros(s, d, None, dev, None, requires_grad)


def ones_like(input, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False, memory_format=None):
    s, d, dev = _like(input, dtype, device)
    return ones(s, d, None, dev, None, requires_grad)


def full_like(input, fill_value, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False,
              memory_format=None):
    s, d, dev = _like(input, dtype, device)
    return full(s, fill_value, d, None, dev, None, requires_grad)


def _dev(device):
    from pytorchlite._argparse import factory_device
    return factory_device(device)


def _values_into(t, values):
    """Write a NumPy array of values into a new CPU tensor (used by arange/linspace/eye)."""
    import numpy as np
    if t._dtype is D.bfloat16:
        from pytorchlite._kernels.pointwise import copy_into
        tmp = _empty(t._shape, D.float32, t._device)
        tmp._numpy_view()[...] = values
        copy_into(t, tmp)
    else:
        t._numpy_view()[...] = np.asarray(values).astype(t._dtype.np_dtype, copy=False)
    return t


def arange(start, end=None, step=1, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    import numpy as np
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange(): step must be nonzero")
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, float) and not math.isfinite(v):
            raise RuntimeError(f"arange(): unsupported range: {start} -> {end}")
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("arange(): upper bound and larger bound inconsistent with step sign")
    if dtype is None:
        dtype = D.get_default_dtype() if any(isinstance(v, float) for v in (start, end, step)) else D.int64
    # PyTorch computes the length in double precision
    n = int(math.ceil((end - start) / step))
    t = _empty((n,), dtype, _dev(device))
    if dtype.is_floating_point:
        vals = start + np.arange(n, dtype=np.float64) * step
    else:
        vals = (np.arange(n, dtype=np.int64) * int(step) + int(start)) if all(
            isinstance(v, int) for v in (start, step)) else np.floor(start + np.arange(n) * step)
    return _finish(_values_into(t, vals), requires_grad)


def linspace(start, end, steps, dtype=None, layout=None, device=None, pin_memory=None, requires_grad=False):
    import numpy as np
    if steps < 0:
        raise RuntimeError("linspace(): number of steps must be non-negative")
    dtype = dtype or D.get_default_dtype()
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
    if m is None:
        m = n
    if n < 0 or m < 0:
        raise RuntimeError(f"eye(): n must be greater or equal to 0, got {min(n, m)}")
    dtype = dtype or D.get_default_dtype()
    t = _empty((n, m), dtype, _dev(device))
    return _finish(_values_into(t, np.eye(n, m)), requires_grad)
