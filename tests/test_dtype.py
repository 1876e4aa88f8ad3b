"""Dtypes against PyTorch: the promotion table (all 100 pairs), can_cast, result_type with
weak Python scalars and 0-d tensors, finfo/iinfo, and the rounding of stores into
float16/bfloat16 (round to nearest even, subnormals, overflow, NaN) checked bit for bit
over many float32 bit patterns.
"""

import itertools

import numpy as np
import pytest

import pytorchlite as ptl

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

from parity import torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

NAMES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
PAIRS = list(itertools.product(NAMES, NAMES))


def name(dt):
    return str(dt).split(".")[-1]


# --- the dtype objects ------------------------------------------------------------------------

@pytest.mark.parametrize("n", NAMES)
def test_dtype_attributes(n):
    p, t = getattr(ptl, n), getattr(torch, n)
    assert repr(p) == repr(t).replace("torch.", "pytorchlite.")
    assert p.is_floating_point == t.is_floating_point
    assert p.is_signed == t.is_signed
    assert p.itemsize == t.itemsize
    assert p.is_complex == t.is_complex is False
    assert p == p and p is getattr(ptl, n)


def test_aliases():
    for a in ("half", "float", "double", "short", "int", "long"):
        assert name(getattr(ptl, a)) == name(getattr(torch, a))


# --- promote_types / can_cast -------------------------------------------------------------------

@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_all_pairs(a, b):
    got = ptl.promote_types(getattr(ptl, a), getattr(ptl, b))
    want = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert name(got) == name(want)


@pytest.mark.parametrize("a,b", PAIRS)
def test_can_cast_all_pairs(a, b):
    assert ptl.can_cast(getattr(ptl, a), getattr(ptl, b)) == torch.can_cast(getattr(torch, a), getattr(torch, b))


def test_promote_types_rejects_non_dtypes():
    with pytest.raises(TypeError, match="promote_types"):
        ptl.promote_types(ptl.float32, "float64")
    with pytest.raises(TypeError, match="can_cast"):
        ptl.can_cast(1, ptl.float32)


# --- result_type --------------------------------------------------------------------------------

SCALARS = [True, 3, -2, 2.5, float("inf")]


def operand(lib, kind, dtype_name=None, value=None):
    if kind == "scalar":
        return value
    dt = getattr(lib, dtype_name)
    data = [1, 0] if kind == "dim" else 1
    return lib.tensor(data, dtype=dt)


@pytest.mark.parametrize("dt", NAMES)
@pytest.mark.parametrize("scalar", SCALARS)
def test_result_type_tensor_and_scalar(dt, scalar):
    for kind in ("dim", "zerodim"):
        p = ptl.result_type(operand(ptl, kind, dt), scalar)
        t = torch.result_type(operand(torch, kind, dt), scalar)
        assert name(p) == name(t), (kind, dt, scalar)


@pytest.mark.parametrize("a,b", PAIRS)
def test_result_type_tensor_tiers(a, b):
    # dimensioned tensors outrank 0-d tensors unless the 0-d one is of a higher category
    for ka, kb in (("dim", "dim"), ("dim", "zerodim"), ("zerodim", "dim"), ("zerodim", "zerodim")):
        p = ptl.result_type(operand(ptl, ka, a), operand(ptl, kb, b))
        t = torch.result_type(operand(torch, ka, a), operand(torch, kb, b))
        assert name(p) == name(t), (ka, a, kb, b)


def test_result_type_follows_default_dtype():
    try:
        for d in ("float64", "float16", "bfloat16"):
            ptl.set_default_dtype(getattr(ptl, d))
            torch.set_default_dtype(getattr(torch, d))
            for dt in NAMES:
                p = ptl.result_type(operand(ptl, "dim", dt), 1.5)
                t = torch.result_type(operand(torch, "dim", dt), 1.5)
                assert name(p) == name(t), (d, dt)
    finally:
        ptl.set_default_dtype(ptl.float32)
        torch.set_default_dtype(torch.float32)


def test_result_type_bad_argument():
    with pytest.raises(TypeError, match="result_type"):
        ptl.result_type(ptl.zeros(1), "a")


# --- finfo / iinfo ------------------------------------------------------------------------------

@pytest.mark.parametrize("n", ["float16", "bfloat16", "float32", "float64"])
def test_finfo_matches_torch(n):
    p, t = ptl.finfo(getattr(ptl, n)), torch.finfo(getattr(torch, n))
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(p, field) == getattr(t, field), field
    assert p.dtype == t.dtype
    if hasattr(t, "smallest_subnormal"):
        assert p.smallest_subnormal == t.smallest_subnormal


def test_finfo_default_and_errors():
    assert ptl.finfo().bits == torch.finfo().bits == 32
    with pytest.raises(TypeError):
        ptl.finfo(ptl.int32)


@pytest.mark.parametrize("n", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(n):
    p, t = ptl.iinfo(getattr(ptl, n)), torch.iinfo(getattr(torch, n))
    assert (p.bits, p.min, p.max, p.dtype) == (t.bits, t.min, t.max, t.dtype)


def test_iinfo_rejects_floats():
    with pytest.raises(TypeError):
        ptl.iinfo(ptl.float32)


# --- float32 -> float16 / bfloat16 rounding ---------------------------------------------------------

def _patterns():
    """float32 bit patterns that exercise every rounding case of both 16-bit formats:
    every sign/exponent with mantissas at and around each half-way point (ties to even
    up and down), the subnormal and overflow boundaries, infinities and NaNs with
    payloads, plus random patterns."""
    rng = np.random.default_rng(1234)
    high = np.arange(1 << 9, dtype=np.uint32) << 23                   # sign + exponent
    mant = np.array([0, 1, 0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x10000, 0x17FFF, 0x18000, 0x18001,   # bfloat16 ties
                     0x0FFF, 0x1000, 0x1001, 0x2FFF, 0x3000, 0x3001, 0x2000, 0x6000,             # float16 ties
                     0x7FFFFF, 0x7FFFFE, 0x400000, 0x400001, 0x3FFFFF], dtype=np.uint32)
    grid = (high[:, None] | mant[None, :]).ravel()
    rand = rng.integers(0, 1 << 32, size=1 << 19, dtype=np.uint64).astype(np.uint32)
    # dense sweeps through the float16 subnormal range and the overflow threshold
    sub = np.arange(0x33000000, 0x38900000, 0x1001, dtype=np.uint32)
    top = np.arange(0x477F0000, 0x47810000, 0x11, dtype=np.uint32)
    bf_top = np.arange(0x7F7F0000, 0x7F800000, 0x7, dtype=np.uint32)
    allp = np.concatenate([grid, rand, sub, top, bf_top])
    return np.concatenate([allp, allp | np.uint32(0x80000000)])


PATTERNS = _patterns()


def _bits32(x):
    return np.ascontiguousarray(x).view(np.uint32)


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_float32_to_16_bit_rounds_like_torch(target):
    src = PATTERNS.view(np.float32)
    got = ptl.from_numpy(src).to(getattr(ptl, target)).float().numpy()
    want = torch.from_numpy(src).to(getattr(torch, target)).float().numpy()
    g, w = _bits32(got), _bits32(want)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bad = np.nonzero((g != w) & ~nan)[0]
    assert bad.size == 0, [(hex(int(PATTERNS[i])), hex(int(g[i])), hex(int(w[i]))) for i in bad[:10]]


@pytest.mark.parametrize("target", ["float16", "bfloat16"])
def test_float64_to_16_bit_rounds_like_torch(target):
    rng = np.random.default_rng(7)
    src = np.concatenate([rng.standard_normal(1 << 16) * 10.0 ** rng.integers(-10, 10, 1 << 16),
                          np.array([65519.99, 65520.0, 3.3961e38, 1 + 2**-11 + 2**-40, 1 + 2**-8 + 2**-40,
                                    5.96e-8, 2.98e-8, 2.99e-8, np.inf, -np.inf, np.nan, -0.0])])
    got = ptl.from_numpy(src).to(getattr(ptl, target)).double().numpy()
    want = torch.from_numpy(src).to(getattr(torch, target)).double().numpy()
    np.testing.assert_array_equal(got, want)


def test_16_bit_store_from_integers():
    vals = np.array([0, 1, -1, 2049, 2051, 65504, 65519, 65520, 100000, -300000, 2**24 + 1, 2**40 + 2**31],
                    dtype=np.int64)
    for target in ("float16", "bfloat16"):
        got = ptl.from_numpy(vals).to(getattr(ptl, target)).double().numpy()
        want = torch.from_numpy(vals).to(getattr(torch, target)).double().numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("source", ["float16", "bfloat16"])
def test_16_bit_widening_is_exact(source):
    # every 16-bit pattern widens exactly to float32 (and NaNs stay NaN)
    bits = np.arange(1 << 16, dtype=np.uint16)
    if source == "float16":
        p = ptl.from_numpy(bits.view(np.float16))
        t = torch.from_numpy(bits.view(np.float16))
    else:
        t = torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
        p = ptl.from_numpy(t.float().numpy()).to(ptl.bfloat16)    # exact: every value is a bfloat16
    got, want = p.float().numpy(), t.float().numpy()
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(_bits32(got)[~nan], _bits32(want)[~nan])
    assert np.array_equal(p.double().numpy()[~nan], t.double().numpy()[~nan])
