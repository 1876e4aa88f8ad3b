"""Inputs that made a kernel do something undefined, found by the sanitizer build
(tools/sanitize.py, README's "Sanitizers"). Under a normal build each test checks the
result (against PyTorch where installed); under the sanitizer build the old code aborted."""

import math

import numpy as np
import pytest

import pytorchlite as ptl

# float -> integer conversions of values out of the integer's range (undefined in C): the
# results PyTorch's CPU casts give (x86-64's conversion instructions)
EDGE = [math.nan, math.inf, -math.inf, 1e20, -1e30, 2.0 ** 63, -2.0 ** 63, 1e19, 5e9 + 1795, -5e9 - 3,
        4294967596.0, 2147483648.0, 2147483647.0, -2147483648.0, -2147483649.0, 70000.0, -70000.5,
        -129.5, 255.9, 300.7, -1.5, 0.5, -0.0]
INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8", "bool"]
FLOAT_DTYPES = ["float64", "float32", "float16", "bfloat16"]


@pytest.mark.parametrize("src", FLOAT_DTYPES)
@pytest.mark.parametrize("dst", INT_DTYPES)
def test_float_to_int_cast_out_of_range_matches_torch(src, dst):
    torch = pytest.importorskip("torch")
    want = torch.tensor(EDGE, dtype=torch.float64).to(getattr(torch, src))
    got = ptl.tensor(EDGE, dtype=ptl.float64).to(getattr(ptl, src))
    assert got.tolist() == pytest.approx(want.tolist(), nan_ok=True)
    # contiguous, strided (a step) and transposed sources take different loops
    for w, g in [(want, got), (want.repeat(3)[::2], got.repeat(3)[::2]),
                 (want.repeat(2).reshape(2, -1).t(), got.repeat(2).reshape(2, -1).t())]:
        assert g.to(getattr(ptl, dst)).tolist() == w.to(getattr(torch, dst)).tolist()


def test_float_to_int_cast_gives_the_minimum_for_nan_and_out_of_range():
    """The x86-64 rule, on every machine: NaN and out-of-range values give the minimum of
    the conversion's width (int32 for the narrow types, then wrapped)."""
    x = ptl.tensor([math.nan, math.inf, -1e30, 3e9, 7.9, -7.9], dtype=ptl.float32)
    assert x.to(ptl.int32).tolist() == [-2 ** 31] * 4 + [7, -7]
    assert x.to(ptl.int64).tolist() == [-2 ** 63] * 3 + [3000000000, 7, -7]
    assert x.to(ptl.int16).tolist() == [0, 0, 0, 0, 7, -7]
    assert x.double().to(ptl.int64).tolist() == [-2 ** 63] * 3 + [3000000000, 7, -7]
    assert x.double().to(ptl.uint8).tolist() == [0, 0, 0, np.int64(3000000000).astype(np.uint8), 7, 249]


# Integer + - * and negation wrap around in PyTorch (two's complement); in C a signed
# overflow is undefined, and the pointwise loops once computed in the signed type.
INTS = ["int8", "int16", "int32", "int64", "uint8"]


def _extremes(dtype):
    info = np.iinfo(dtype)
    a = np.array([info.max, info.min, info.max, 3, info.min, -1 if info.min else 1], dtype=dtype)
    b = np.array([1, -1 if info.min else 1, info.max, info.min, info.min, info.max], dtype=dtype)
    return a, b


@pytest.mark.parametrize("dtype", INTS)
def test_integer_arithmetic_wraps_like_numpy(dtype):
    a, b = _extremes(dtype)
    x, y = ptl.tensor(a), ptl.tensor(b)
    with np.errstate(over="ignore"):
        assert (x + y).numpy().tolist() == (a + b).tolist()
        assert (x - y).numpy().tolist() == (a - b).tolist()
        assert (x * y).numpy().tolist() == (a * b).tolist()
        assert (-x).numpy().tolist() == (-a).tolist()
        assert x.abs().numpy().tolist() == np.abs(a).tolist()
        # a Python scalar operand, a broadcast row and a strided view take other loops
        assert (x + 1).numpy().tolist() == (a + a.dtype.type(1)).tolist()
        assert (x * y[:1]).numpy().tolist() == (a * b[:1]).tolist()
        assert (x[::2] * y[::2]).numpy().tolist() == (a[::2] * b[::2]).tolist()
        assert ptl.add(x, y, alpha=3).numpy().tolist() == (a + b * a.dtype.type(3)).tolist()


@pytest.mark.parametrize("dtype", INTS)
def test_integer_shift_pow_abs_neg_wrap_like_torch(dtype):
    torch = pytest.importorskip("torch")
    a, b = _extremes(dtype)
    x, tx = ptl.tensor(a), torch.tensor(a)
    assert (x << 15).tolist() == (tx << 15).tolist()   # int16: (uint16_t)-1 << 15 was an int overflow
    assert (x << 7).tolist() == (tx << 7).tolist()
    assert ptl.pow(x, 3).tolist() == torch.pow(tx, 3).tolist()   # 65535 * 65535 overflowed int
    assert ptl.pow(ptl.tensor([300, -300, 255]).to(getattr(ptl, dtype)), 5).tolist() == \
        torch.pow(torch.tensor([300, -300, 255]).to(getattr(torch, dtype)), 5).tolist()
    assert (-x).tolist() == (-tx).tolist()
    assert x.abs().tolist() == tx.abs().tolist()


# exp's vectorised polynomial turned x into an int exponent before it checked for nan
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_exp_and_softmax_of_nan(dtype):
    d = getattr(ptl, dtype)
    x = ptl.tensor([[math.nan, 1.0, 2.0], [0.0, 1.0, 2.0]], dtype=d)
    e = ptl.exp(x).numpy()
    assert math.isnan(e[0, 0]) and e[0, 1:].tolist() == pytest.approx(np.exp([1.0, 2.0]).tolist(), rel=1e-6)
    for f in (ptl.softmax, ptl.log_softmax):
        r = f(x, 1).numpy()
        assert np.isnan(r[0]).all() and np.isfinite(r[1]).all()
    assert np.isnan(ptl.sigmoid(x).numpy()[0, 0]) and np.isnan(ptl.tanh(x).numpy()[0, 0])
