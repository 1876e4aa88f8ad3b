"""Host-side helpers for kernels/cuda/philox.cu: the uniform upper bound and the packed
kernel argument for it. The per-element arithmetic itself lives in philox.cu and is
checked against kernels/random.c on the CPU (tests/cuda/test_philox_host.py)."""

import math
import struct

import numpy as np

# dtype codes (kernels/ptl.h)
F16, BF16, F32, F64 = 6, 7, 8, 9


def _f2bf_bits(x):
    """float -> bfloat16 bits, round to nearest even (kernels/ptl.h ptl_f2bf)."""
    u = int(np.array(x, dtype=np.float32).view(np.uint32))
    if (u & 0x7FFFFFFF) > 0x7F800000:
        return ((u >> 16) | 0x40) & 0xFFFF
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFFFFFF
    return u >> 16


def _bf_bits2f(h):
    return float(np.array(h << 16, dtype=np.uint32).view(np.float32))


def _nextdown16(h):
    if h == 0x0000:
        return 0x8001
    return h + 1 if h & 0x8000 else h - 1


def upper_bound(dtype_code, to, from_=None):
    """(to, hi_d, hi_f, hi_16) as random.c's make_upper_bound: the largest value of the
    dtype strictly below `to`. With from_ >= to, `to` is +inf (every value is `from`)."""
    hi_d = math.nextafter(to, -math.inf)
    f = np.float32(to)
    if float(f) >= to:
        f = np.nextafter(f, np.float32(-np.inf))
    hi_16 = 0
    if dtype_code == F16:
        h = int(np.array(to, dtype=np.float32).astype(np.float16).view(np.uint16))
        while float(np.array(h, dtype=np.uint16).view(np.float16)) >= to:
            h = _nextdown16(h)
        hi_16 = h
    elif dtype_code == BF16:
        h = _f2bf_bits(to)
        while _bf_bits2f(h) >= to:
            h = _nextdown16(h)
        hi_16 = h
    bound = math.inf if (from_ is not None and not from_ < to) else to
    return (bound, hi_d, float(f), hi_16)


UBOUND_FORMAT = "<ddfH2x"     # ptl_upper_bound (kernels/ptl_philox.h): double to, double hi_d, float hi_f, uint16 hi_16


def pack_upper_bound(ub):
    return struct.pack(UBOUND_FORMAT, *ub)
