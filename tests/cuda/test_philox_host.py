"""kernels/cuda/philox.cu computed on the CPU: the same per-element functions the CUDA
kernels call, compiled as C with gcc, must give kernels/random.c's numbers bit for bit.

This checks the arithmetic of the GPU random streams without a GPU. (What it cannot
check: CUDA's libdevice log / sin / cos in the float64 normal and exponential paths; the
rest is IEEE +, *, /, sqrt, floor, and NVRTC compiles philox.cu with --fmad=false.)
"""

import ctypes
import os
import shutil
import subprocess

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite._C import ffi, lib
from pytorchlite._kernels.random import _desc
from pytorchlite.cuda import _philox

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "kernels", "cuda", "philox.cu")

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")


class UBound(ctypes.Structure):
    _fields_ = [("to", ctypes.c_double), ("hi_d", ctypes.c_double), ("hi_f", ctypes.c_float),
                ("hi_16", ctypes.c_uint16)]


@pytest.fixture(scope="module")
def phx(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("philox") / "philox_host.so")
    cmd = ["gcc", "-O2", "-std=gnu11", "-Wall", "-Werror", "-ffp-contract=off", "-DPTL_PHILOX_HOST_TEST",
           "-I" + os.path.join(ROOT, "kernels"),
           "-I" + os.path.join(ROOT, "generated"), "-shared", "-fPIC", "-x", "c", SRC, "-o", out, "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    so = ctypes.CDLL(out)
    u64, i64, dbl = ctypes.c_uint64, ctypes.c_int64, ctypes.c_double
    for name, args in {
        "phx_test_words": [u64, u64, i64, ctypes.c_void_p],
        "phx_test_uniform_f32": [u64, u64, i64, dbl, dbl, ctypes.POINTER(UBound), ctypes.c_void_p],
        "phx_test_uniform_f64": [u64, u64, i64, dbl, dbl, ctypes.POINTER(UBound), ctypes.c_void_p],
        "phx_test_uniform_f16": [u64, u64, i64, dbl, dbl, ctypes.POINTER(UBound), ctypes.c_void_p],
        "phx_test_uniform_bf16": [u64, u64, i64, dbl, dbl, ctypes.POINTER(UBound), ctypes.c_void_p],
        "phx_test_normal_f32": [u64, u64, i64, dbl, dbl, ctypes.c_void_p],
        "phx_test_normal_f64": [u64, u64, i64, dbl, dbl, ctypes.c_void_p],
        "phx_test_exponential_f64": [u64, u64, i64, ctypes.c_int, dbl, ctypes.c_void_p],
        "phx_test_bernoulli": [u64, u64, i64, dbl, ctypes.c_void_p],
        "phx_test_integers": [u64, u64, i64, i64, u64, ctypes.c_void_p],
    }.items():
        getattr(so, name).argtypes = args
        getattr(so, name).restype = None
    return so


SEEDS = [0, 42, 2 ** 40 + 7, 2 ** 64 - 1]
OFFSETS = [0, 5, 2 ** 32 - 2, 2 ** 64 - 3]     # the last two cross a 32-bit / 64-bit wrap
N = 1027                                          # odd: normal's last pair is half used

_NP = {"float32": np.float32, "float64": np.float64, "float16": np.uint16, "bfloat16": np.uint16,
       "int64": np.int64, "int32": np.int32, "uint8": np.uint8, "bool": np.uint8}


def _raw(t):
    """A CPU tensor's bytes as a numpy array (16-bit floats as their bit patterns)."""
    dt = np.dtype(_NP[t.dtype.name if hasattr(t.dtype, "name") else str(t.dtype)])
    buf = ffi.buffer(ffi.cast("char *", t._storage.ptr + t._offset * dt.itemsize), t.numel() * dt.itemsize)
    return np.frombuffer(bytes(buf), dtype=dt)


def _cpu(fn, dtype, *args):
    t = ptl.empty(N, dtype=dtype)
    assert fn(_desc(t), *args) == 0
    return _raw(t)


def _host(so, name, np_dtype, *args):
    out = np.empty(N, dtype=np_dtype)
    getattr(so, name)(*args, out.ctypes.data)
    return out


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("offset", OFFSETS)
def test_words_match_the_cpu_philox(phx, seed, offset):
    """The word stream against ptl_philox4x32_10 (random.c) called block by block."""
    got = _host(phx, "phx_test_words", np.uint32, seed, offset, N)
    ctr, key, out = ffi.new("uint32_t[4]"), ffi.new("uint32_t[2]"), ffi.new("uint32_t[4]")
    key[0], key[1] = seed & 0xFFFFFFFF, seed >> 32
    want = []
    for b in range((N + 3) // 4):
        c = (offset + b) % 2 ** 64
        ctr[0], ctr[1], ctr[2], ctr[3] = c & 0xFFFFFFFF, c >> 32, 0, 0
        lib.ptl_philox4x32_10(ctr, key, out)
        want.extend(out[k] for k in range(4))
    np.testing.assert_array_equal(got, np.array(want[:N], dtype=np.uint32))


@pytest.mark.parametrize("dtype,name", [("float32", "f32"), ("float64", "f64"), ("float16", "f16"),
                                        ("bfloat16", "bf16")])
@pytest.mark.parametrize("seed,offset", [(0, 0), (42, 5), (2 ** 40 + 7, 2 ** 32 - 2)])
@pytest.mark.parametrize("frm,to", [(0.0, 1.0), (-3.0, 2.5), (1.0, 1.0 + 2 ** -20)])
def test_uniform_bit_for_bit(phx, dtype, name, seed, offset, frm, to):
    dt = getattr(ptl, dtype)
    want = _cpu(lib.ptl_random_uniform, dt, seed, offset, frm, to)
    ub = UBound(*_philox.upper_bound(dt.code, to, frm))
    got = _host(phx, f"phx_test_uniform_{name}", want.dtype, seed, offset, N, frm, to - frm, ctypes.byref(ub))
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("seed,offset", [(0, 0), (42, 5), (2 ** 40 + 7, 2 ** 64 - 3)])
@pytest.mark.parametrize("mean,std", [(0.0, 1.0), (1.5, 0.25)])
def test_normal_bit_for_bit(phx, seed, offset, mean, std):
    for dtype, name in (("float32", "f32"), ("float64", "f64")):
        dt = getattr(ptl, dtype)
        want = _cpu(lambda d, *a: lib.ptl_random_normal(d, ffi.NULL, ffi.NULL, *a), dt, seed, offset, mean, std)
        got = _host(phx, f"phx_test_normal_{name}", want.dtype, seed, offset, N, mean, std)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("seed,offset", [(3, 0), (2 ** 40 + 7, 2 ** 32 - 2)])
def test_exponential_bit_for_bit(phx, seed, offset):
    for dtype, wide in (("float32", 0), ("float64", 1)):
        dt = getattr(ptl, dtype)
        want = _cpu(lib.ptl_random_exponential, dt, seed, offset, 0.5)
        got = _host(phx, "phx_test_exponential_f64", np.float64, seed, offset, N, wide, 0.5)
        if not wide:
            got = got.astype(np.float32)
        np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_bernoulli_bit_for_bit(phx, p):
    want = _cpu(lambda d, *a: lib.ptl_random_bernoulli(d, ffi.NULL, *a), ptl.float64, 9, 17, p)
    got = _host(phx, "phx_test_bernoulli", np.float64, 9, 17, N, p)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("frm,rng", [(0, 10), (-5, 2 ** 32), (-(2 ** 40), 2 ** 32 + 1), (-(2 ** 63), 0),
                                     (7, 2 ** 63 + 12345)])
@pytest.mark.parametrize("seed,offset", [(1, 0), (2 ** 40 + 7, 2 ** 64 - 3)])
def test_integers_bit_for_bit(phx, frm, rng, seed, offset):
    want = _cpu(lib.ptl_random_integers, ptl.int64, seed, offset, frm, rng)
    got = _host(phx, "phx_test_integers", np.int64, seed, offset, N, frm, rng)
    np.testing.assert_array_equal(got, want)


def test_upper_bound_matches_random_c():
    """The host's bound keeps uniform_ below `to` where the dtype would round up to it."""
    for code, to in ((_philox.F16, 1.0), (_philox.BF16, 1.0), (_philox.F32, 1.0), (_philox.F16, 0.1)):
        b, hi_d, hi_f, hi_16 = _philox.upper_bound(code, to)
        assert b == to and hi_d < to and hi_f < to
        if code == _philox.F16:
            assert float(np.array(hi_16, dtype=np.uint16).view(np.float16)) < to
    assert _philox.upper_bound(_philox.F32, 1.0, 1.0)[0] == float("inf")
    assert len(_philox.pack_upper_bound(_philox.upper_bound(_philox.F32, 1.0))) == 24
