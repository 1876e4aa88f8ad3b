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
