"""Reductions against PyTorch (same data, same call) and NumPy float64 (without PyTorch,
the calls written for both libraries run against tests/numpy_oracles.py's NumPy reductions): every operator
of ops.yaml's reductions section over all dtypes, dims (None, int, negative, tuple, ()),
keepdim, dtype=, 0-d and size-0 inputs, non-contiguous views (transposed, step-sliced,
expanded), NaN/inf, the parallel row / column paths of kernels/reduce.c, accuracy on
large inputs, out= and the error messages.
"""

import math
import os
import warnings

import numpy as np
import pytest

import pytorchlite as ptl

from numpy_oracles import NUMPY_REDUCTIONS, CannotSay, NpTensor  # noqa: E402
from parity import HAVE_TORCH, NumpyRef, needs_torch, to_numpy, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
# agreement with PyTorch, relative and absolute: half types may differ by a rounding of
# the result (both accumulate in higher precision, but not in the same order)
TOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 2e-5, "float64": 1e-10}



@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    """PyTorch's thread pool costs it milliseconds per tiny reduction on a busy 2-core
    machine; the oracle needs no threads (pytorchlite's own threading is tested below)."""
    if not HAVE_TORCH:
        yield
        return
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


# --- the parity helper ----------------------------------------------------------------------

def values_for(dtype, shape, seed=0, ties=False):
    """Values representable in `dtype`, with ties and zeros so that first-occurrence rules
    and all/any are exercised."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.6
    if dtype == "uint8":
        return rng.integers(0, 6, shape)
    if dtype.startswith("int"):
        return rng.integers(-5, 6, shape)
    scale = 2 if ties else 8
    return np.round(rng.standard_normal(shape) * scale) / scale


def both(dtype, shape, seed=0, data=None):
    """The same values in pytorchlite and in the oracle: a torch tensor, or without PyTorch
    an NpTensor holding exactly the values pytorchlite holds."""
    d = values_for(dtype, shape, seed) if data is None else data
    p = ptl.tensor(d).to(getattr(ptl, dtype))
    if not HAVE_TORCH:
        return p, NpTensor(to_numpy(p), dtype)
    t = torch.tensor(d).to(getattr(torch, dtype))
    return p, t


def layout(x, kind):
    """The same view in either library: contiguous, transposed, step-sliced, expanded."""
    if kind == "contiguous" or x.dim() == 0:
        return x
    if kind == "transposed":
        return x.transpose(0, -1)
    if kind == "sliced":
        return x[::2]
    if kind == "expanded":
        return x[:1].expand(*x.shape)
    raise ValueError(kind)


def as_np(r):
    if isinstance(r, NumpyRef):
        return r.values.astype(np.float64), r.dtype, tuple(r.shape)
    if isinstance(r, torch.Tensor):
        return r.detach().to(torch.float64).numpy(), str(r.dtype).split(".")[-1], tuple(r.shape)
    return r.double().numpy(), str(r.dtype).split(".")[-1], tuple(r.shape)


def assert_same(what, got, want, tol=None):
    """Value, dtype and shape of a pytorchlite result against PyTorch's (tuples too)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want), f"{what}: got {got!r}, want {want!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(f"{what}[{k}]", g, w, tol)
        return
    gv, gd, gs = as_np(got)
    wv, wd, ws = as_np(want)
    oracle = "PyTorch" if HAVE_TORCH else "NumPy"
    assert gd == wd, f"{what}: dtype {gd}, {oracle} {wd}"
    assert gs == ws, f"{what}: shape {gs}, {oracle} {ws}"
    t = TOL.get(wd, 0) if tol is None else tol
    ok = np.allclose(gv, wv, rtol=t, atol=t, equal_nan=True) if t else np.array_equal(gv, wv, equal_nan=True)
    assert ok, f"{what}: values differ\n got  {gv.ravel()[:8]}\n want {wv.ravel()[:8]}"


def assert_parity(what, fn, p, t, tol=None):
    """Run fn on both libraries; same result, or the same exception type and message.
    Without PyTorch, `t` is an NpTensor and NumPy's reductions answer; where they cannot
    (PyTorch's errors), the case is left to the PyTorch run."""
    if not HAVE_TORCH:
        try:
            want = fn(NUMPY_REDUCTIONS, t)
        except CannotSay:
            return False
        assert_same(what, fn(ptl, p), want, tol)
        return True
    try:
        want = fn(torch, t)
    except Exception as e:  # noqa: BLE001 - any PyTorch error must be matched
        with pytest.raises(type(e)) as info:
            fn(ptl, p)
        if "invalid combination" not in str(e):   # PyTorch's overload-resolution text is its own
            assert str(info.value).split("\n")[0] == str(e).split("\n")[0], what
        return True
    assert_same(what, fn(ptl, p), want, tol)
    return True


def skip_if_nothing_checked(checked):
    """Without PyTorch, a test whose every case is one of PyTorch's errors checked nothing."""
    if not checked:
        pytest.skip("every case here is an error PyTorch raises with its own message: left to the PyTorch run")


# --- every operator x dtype x layout x dims ---------------------------------------------------------

def _dimsets(nd):
    if nd == 0:
        return [None, 0, -1]
    out = [None, 0, -1, ()]
    if nd >= 2:
        out += [(0, -1), (-1, 0)]
    if nd >= 3:
        out += [(0, 2), 1]
    return out


def _int_dim(d):
    return d if isinstance(d, int) else None


# name -> fn(lib, x, dim, keepdim); `dim` comes from _dimsets
OPS = {
    "sum": lambda m, x, d, k: m.sum(x, d, k) if d is not None else m.sum(x),
    "nansum": lambda m, x, d, k: m.nansum(x, d, k) if d is not None else m.nansum(x),
    "mean": lambda m, x, d, k: m.mean(x, d, k) if d is not None else m.mean(x),
    "nanmean": lambda m, x, d, k: m.nanmean(x, d, k),
    "prod": lambda m, x, d, k: m.prod(x, _int_dim(d), k) if _int_dim(d) is not None else m.prod(x),
    "amax": lambda m, x, d, k: m.amax(x, () if d is None else d, k),
    "amin": lambda m, x, d, k: m.amin(x, () if d is None else d, k),
    "max": lambda m, x, d, k: m.max(x, _int_dim(d), k) if _int_dim(d) is not None else m.max(x),
    "min": lambda m, x, d, k: m.min(x, _int_dim(d), k) if _int_dim(d) is not None else m.min(x),
    "argmax": lambda m, x, d, k: m.argmax(x, _int_dim(d), k),
    "argmin": lambda m, x, d, k: m.argmin(x, _int_dim(d), k),
    "aminmax": lambda m, x, d, k: tuple(m.aminmax(x, dim=_int_dim(d), keepdim=k)),
    "var": lambda m, x, d, k: m.var(x, d, keepdim=k),
    "std": lambda m, x, d, k: m.std(x, d, keepdim=k, correction=0),
    "var_mean": lambda m, x, d, k: m.var_mean(x, d, keepdim=k, correction=2),
    "std_mean": lambda m, x, d, k: m.std_mean(x, d, False, k),
    "all": lambda m, x, d, k: m.all(x, d, k) if d is not None else m.all(x),
    "any": lambda m, x, d, k: m.any(x, d, k) if d is not None else m.any(x),
    "count_nonzero": lambda m, x, d, k: m.count_nonzero(x, d),
    # PyTorch's logsumexp(dim=()) fails on a shape check of its own; () is tested below
    "logsumexp": lambda m, x, d, k: m.logsumexp(x, (0,) if d is None or d == () else d, k),
    "norm": lambda m, x, d, k: m.norm(x, 2, d, k),
}


def test_every_reduction_is_tested():
    """The operators under test are the ones ops.yaml sends to the reduction kernels."""
    from codegen.model import load_ops
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    declared = {op.name for op in load_ops(os.path.join(root, "ops.yaml"))
                if any(target.startswith("pytorchlite._kernels.reduce.") for _, target in op.kernels)}
    assert declared == set(OPS)


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_op_dtypes_dims_layouts(name, dtype):
    fn = OPS[name]
    checked = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # var's "degrees of freedom <= 0" on tiny slices
        for shape in [(), (5,), (4, 6), (3, 4, 5), (2, 0, 3)]:
            pb, tb = both(dtype, shape, seed=len(shape))
            kinds = ["contiguous"] if not shape else ["contiguous", "transposed", "sliced", "expanded"]
            for kind in kinds:
                p, t = layout(pb, kind), layout(tb, kind)
                for i, d in enumerate(_dimsets(len(shape))):
                    k = (i + len(kind)) % 2 == 1      # keepdim alternates, covering both per dims
                    checked += assert_parity(f"{name}({dtype}{list(shape)} {kind}, dim={d}, keepdim={k})",
                                             lambda m, x: fn(m, x, d, k), p, t)
    skip_if_nothing_checked(checked)


# --- special values, ties, first occurrence -----------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_nan_and_inf(dtype):
    inf, nan = float("inf"), float("nan")
    rows = [[1, nan, 3, nan], [inf, -inf, 2, 1], [-inf, -inf, -inf, -inf], [inf, inf, 5, nan],
            [nan, nan, nan, nan], [0, -0.0, 0, 1]]
    p, t = both(dtype, None, data=np.array(rows))
    for name in ["sum", "nansum", "mean", "nanmean", "amax", "amin", "max", "min", "argmax", "argmin",
                 "var", "logsumexp", "norm", "all", "any", "count_nonzero", "prod"]:
        fn = OPS[name]
        for d in [None, 0, 1]:
            assert_parity(f"{name}(dim={d})", lambda m, x: fn(m, x, d, False), p, t)
        assert_parity(f"{name} transposed", lambda m, x: fn(m, x.t(), 1, False), p, t)


def test_first_nan_wins_in_long_rows():
    """The vectorised argmax finds block extremes first; a NaN anywhere must still win, and
    the first of several NaNs (or of several equal maxima) is reported."""
    for n in [63, 64, 65, 511, 512, 513, 5000]:
        for pos in sorted({0, 1, n // 2, n - 1}):
            d = np.zeros(n)
            d[pos] = np.nan
            d[(pos + 7) % n] = np.nan
            d[(pos + 3) % n] = 100.0
            for dtype in ["float32", "float64"]:
                p, t = both(dtype, None, data=d)
                for op in ["argmax", "argmin"]:
                    assert getattr(p, op)().item() == getattr(t, op)().item(), (n, pos, dtype, op)
                assert_same("max(0)", tuple(p.max(0)), tuple(t.max(0)))
        d = np.ones(n)
        d[n // 3] = d[n // 2] = 7.0
        p, t = both("float32", None, data=d)
        assert p.argmax().item() == t.argmax().item() == n // 3


@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32", "float64", "int64"])
@pytest.mark.parametrize("shape, dim", [((3, 50001), 1), ((50001, 3), 0), ((2, 70000), 1), ((70000, 2), 0),
                                        ((7, 9000), 0), ((9000, 7), 1), ((40000,), 0)])
def test_ties_across_threads(dtype, shape, dim):
    """Large inputs split across threads mid-row or mid-column: partial states are merged
    in order, so max/argmax still report the first occurrence."""
    data = values_for(dtype, shape, seed=3, ties=True)
    p, t = both(dtype, shape, data=data)
    for threads in (1, 2):
        ptl.set_num_threads(threads)
        try:
            for op in ["max", "min"]:
                assert_same(f"{op}({dim})", tuple(getattr(p, op)(dim)), tuple(getattr(t, op)(dim)))
            for op in ["argmax", "argmin"]:
                assert_same(f"{op}()", getattr(p, op)(), getattr(t, op)())
                assert_same(f"{op}({dim})", getattr(p, op)(dim), getattr(t, op)(dim))
            assert_same("sum", p.sum(dim), t.sum(dim), tol=1e-4 if dtype == "float32" else None)
            assert_same("amax", p.amax(dim), t.amax(dim))
            assert_same("count_nonzero", p.count_nonzero(dim), t.count_nonzero(dim))
        finally:
            ptl.set_num_threads(2)


@pytest.mark.parametrize("shape, dims", [((130, 260, 3), (0,)), ((130, 260, 3), (1,)), ((130, 260, 3), (0, 2)),
                                         ((130, 260, 3), (0, 1)), ((5, 7000, 3), (1,)), ((2, 3, 9000), (0, 2)),
                                         ((9000, 11), (0, 1)), ((11, 9000), (0,)), ((300, 200), (1,))])
@pytest.mark.parametrize("kind", ["contiguous", "transposed", "sliced"])
def test_parallel_paths_float64_reference(shape, dims, kind):
    """Row and column paths, tiles and thread splits, against NumPy in float64."""
    data = np.random.default_rng(4).standard_normal(shape)
    p = layout(ptl.tensor(data), kind)
    ref = data.transpose(*range(len(shape) - 1, -1, -1)) if kind == "transposed" else data
    ref = ref[::2] if kind == "sliced" else ref
    for threads in (1, 2):
        ptl.set_num_threads(threads)
        try:
            np.testing.assert_allclose(p.sum(dims).numpy(), ref.sum(axis=dims), rtol=1e-12, atol=1e-10)
            np.testing.assert_allclose(p.mean(dims).numpy(), ref.mean(axis=dims), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(p.var(dims).numpy(), ref.var(axis=dims, ddof=1), rtol=1e-10)
            np.testing.assert_allclose(p.amax(dims).numpy(), ref.max(axis=dims))
            np.testing.assert_allclose(p.norm(2, dims).numpy(), np.sqrt((ref * ref).sum(axis=dims)), rtol=1e-12)
            m = ref.max(axis=dims, keepdims=True)
            lse = np.log(np.exp(ref - m).sum(axis=dims)) + np.squeeze(m, axis=dims)
            np.testing.assert_allclose(p.logsumexp(dims).numpy(), lse, rtol=1e-12)
            f = p.float()
            np.testing.assert_allclose(f.sum(dims).numpy(), ref.astype(np.float32).astype(np.float64).sum(axis=dims),
                                       rtol=1e-5, atol=1e-4)
        finally:
            ptl.set_num_threads(2)


# --- accuracy on large inputs ---------------------------------------------------------------------------

def test_large_float32_sum_accuracy():
    """2**22 float32 values: within float32 rounding of the exact (float64) sum, with a
    nonzero mean (cancellation-free) and with mean zero (heavy cancellation)."""
    rng = np.random.default_rng(5)
    n = 1 << 22
    for data in [rng.random(n).astype(np.float32), rng.standard_normal(n).astype(np.float32),
                 (rng.standard_normal(n) + 100).astype(np.float32)]:
        exact = math.fsum(data.astype(np.float64))
        p = ptl.from_numpy(data)
        scale = np.abs(data.astype(np.float64)).sum()
        assert abs(p.sum().item() - exact) <= 1e-5 * abs(exact) + 1e-7 * scale
        assert abs(p.mean().item() - exact / n) <= 1e-5 * abs(exact / n) + 1e-7 * scale / n
        rows = p.reshape(1024, 4096)
        np.testing.assert_allclose(rows.sum(1).numpy(), data.reshape(1024, 4096).astype(np.float64).sum(1),
                                   rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(rows.sum(0).numpy(), data.reshape(1024, 4096).astype(np.float64).sum(0),
                                   rtol=1e-5, atol=1e-5)


def test_large_float64_and_half_accuracy():
    rng = np.random.default_rng(6)
    d64 = rng.standard_normal(1 << 21) * 1e3
    assert ptl.from_numpy(d64).sum().item() == pytest.approx(math.fsum(d64), rel=1e-13, abs=1e-9)
    # float16 accumulates in double: only the final rounding to float16 remains
    d16 = rng.random(1 << 16).astype(np.float16)
    exact = math.fsum(d16.astype(np.float64))
    assert ptl.from_numpy(d16).sum().item() == float(np.float16(exact))
    b = ptl.from_numpy(d16.astype(np.float32)).to(ptl.bfloat16)
    assert b.sum().item() == pytest.approx(math.fsum(b.float().numpy().astype(np.float64)), rel=8e-3)


def test_variance_with_large_offset():
    """A large mean over a small spread: the naive sum-of-squares formula would lose every
    digit; two-pass blocks (rows) and shifted sums (columns) keep them."""
    rng = np.random.default_rng(7)
    data = 1e6 + rng.standard_normal((2048, 64))
    p = ptl.tensor(data)
    np.testing.assert_allclose(p.var().item(), data.var(ddof=1), rtol=1e-8)
    np.testing.assert_allclose(p.var(0).numpy(), data.var(axis=0, ddof=1), rtol=1e-8)
    np.testing.assert_allclose(p.var(1).numpy(), data.var(axis=1, ddof=1), rtol=1e-8)
    np.testing.assert_allclose(p.float().var(0).numpy(), data.astype(np.float32).astype(np.float64).var(axis=0, ddof=1),
                               rtol=1e-4)


def test_integer_sums_widen_and_wrap():
    big = np.full(1000, 2**31 - 1, dtype=np.int32)
    assert ptl.from_numpy(big).sum().item() == int(big.astype(np.int64).sum())
    assert ptl.from_numpy(big).sum().dtype == ptl.int64
    assert ptl.from_numpy(big).sum(dtype=ptl.int32).item() == int(big.astype(np.int64).sum().astype(np.int32))
    huge = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    with np.errstate(over="ignore"):
        assert ptl.from_numpy(huge).sum().item() == int(huge.sum())   # wraps like int64 (as torch's)
    assert ptl.tensor([True, True, False]).sum().item() == 2
    assert ptl.tensor([3, 5, 7], dtype=ptl.int8).prod().item() == 105


# --- dtype=, 0-d, empty --------------------------------------------------------------------------------

@pytest.mark.parametrize("src", ["int8", "int32", "bool", "float32", "float64"])
@pytest.mark.parametrize("dst", ["int32", "int64", "float16", "float32", "float64", "bool"])
def test_dtype_argument(src, dst):
    p, t = both(src, (3, 4), seed=8)
    tdt, pdt = getattr(torch, dst), getattr(ptl, dst)
    for name in ["sum", "nansum", "mean", "nanmean", "prod"]:
        assert_parity(f"{name}(dtype={dst})", lambda m, x: getattr(m, name)(x, dtype=tdt if m is torch else pdt), p, t)
        assert_parity(f"{name}(1, dtype={dst})",
                      lambda m, x: getattr(m, name)(x, 1, dtype=tdt if m is torch else pdt), p, t)
    if dst.startswith("float"):
        assert_parity("norm(dtype)", lambda m, x: m.norm(x.float() if x.is_floating_point() else x, 2, 1,
                                                          dtype=tdt if m is torch else pdt), p, t)


def test_zero_dim():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # one element: no degrees of freedom for var
        for dtype in DTYPES:
            p, t = both(dtype, ())
            for name, fn in OPS.items():
                for d in [None, 0, -1, (0,), ()]:
                    for k in (False, True):
                        assert_parity(f"{name}({dtype} 0-d, {d}, {k})", lambda m, x: fn(m, x, d, k), p, t)


def test_empty_inputs():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in [(0,), (0, 3), (3, 0), (2, 0, 4)]:
            p, t = both("float32", shape)
            for name, fn in OPS.items():
                for d in [None, 0, -1, ()]:
                    for k in (False, True):
                        assert_parity(f"{name}({list(shape)}, {d}, {k})", lambda m, x: fn(m, x, d, k), p, t)
    e = ptl.empty(0)
    assert e.sum().item() == 0 and e.prod().item() == 1 and math.isnan(e.mean().item())
    assert e.all().item() is True and e.any().item() is False
    assert ptl.empty(2, 0).logsumexp(1).tolist() == [-math.inf, -math.inf]


def test_empty_errors_say_what_pytorch_says():
    with pytest.raises(RuntimeError, match=r"^max\(\): Expected reduction dim to be specified for input.numel\(\) "
                                           r"== 0. Specify the reduction dim with the 'dim' argument.$"):
        ptl.empty(0).max()
    with pytest.raises(IndexError, match=r"^amax\(\): Expected reduction dim 1 to have non-zero size.$"):
        ptl.empty(2, 0).amax(1)
    with pytest.raises(IndexError, match=r"^argmax\(\): Expected reduction dim to be specified for "
                                         r"input.numel\(\) == 0.$"):
        ptl.empty(0).argmax()
    with pytest.raises(RuntimeError, match="cannot compute aminmax over an empty dimension"):
        ptl.empty(0).aminmax()
    with pytest.raises(RuntimeError, match="cannot compute the inf norm on an empty tensor"):
        ptl.empty(0).norm(float("inf"))
    assert ptl.empty(2, 0).max(0).values.shape == (0,)


# --- errors -------------------------------------------------------------------------------------------------

def test_errors():
    x = ptl.ones(2, 3)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times in the list of dims"):
        x.sum((0, -2))
    with pytest.raises(RuntimeError, match=r"^mean\(\): could not infer output dtype. Input dtype must be either a "
                                           r"floating point or complex dtype. Got: Long$"):
        ptl.tensor([1, 2]).mean()
    with pytest.raises(RuntimeError, match=r"Optional dtype must be either a floating point or complex dtype. Got: Int"):
        x.mean(dtype=ptl.int32)
    with pytest.raises(RuntimeError, match="std and var only support floating point and complex dtypes"):
        ptl.tensor([1, 2]).var()
    with pytest.raises(RuntimeError, match=r"argmax\(\): does not support bool input"):
        ptl.tensor([True]).argmax()
    with pytest.raises(RuntimeError, match=r"nanmean\(\): expected input to have floating point"):
        ptl.tensor([1, 2]).nanmean()
    with pytest.raises(RuntimeError, match="linalg.vector_norm: Expected a floating point"):
        ptl.tensor([1, 2]).norm()
    with pytest.raises(TypeError, match=r"sum\(\): argument 'dim' \(position 2\) must be tuple of ints"):
        x.sum(1.5)
    with pytest.raises(TypeError, match=r"max\(\) received an invalid combination of arguments - got \(float\), "
                                        r"but expected one of:\n \* \(\)\n"):
        x.max(0.5)
    with pytest.raises(TypeError):
        x.var(0, True, correction=0)
    with pytest.raises(TypeError, match=r"argmax\(\): argument 'dim'"):
        x.argmax((0,))


@needs_torch
def test_variance_warning_and_correction():
    p, t = both("float64", (4, 5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for corr in [0, 1, 2, 1.5, 4]:
            assert_same(f"var(correction={corr})", p.var(1, correction=corr), t.var(1, correction=corr))
            assert_same(f"std(correction={corr})", p.std(0, correction=corr), t.std(0, correction=corr))
    assert_same("var(unbiased=False)", p.var(1, False), t.var(1, False))
    assert_same("var(0, True, True)", p.var(0, True, True), t.var(0, True, True))
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        r = ptl.tensor([1.0]).var()
    assert math.isnan(r.item())
    with pytest.warns(UserWarning, match=r"std\(\): degrees of freedom is <= 0"):
        assert ptl.tensor([1.0, 2.0]).std(correction=3).item() == math.inf
    with pytest.warns(UserWarning, match=r"var_mean\(\): degrees of freedom is <= 0"):
        ptl.var_mean(ptl.tensor([1.0]))


# --- API surface: methods, named tuples, out=, the binary max --------------------------------------------

def test_methods_and_named_tuples():
    p = ptl.tensor([[1.0, 5.0, 5.0], [4.0, 2.0, 4.0]])
    r = p.max(dim=1)
    assert isinstance(r, tuple) and r.values.tolist() == [5.0, 4.0] and r.indices.tolist() == [1, 0]
    values, indices = p.min(0, keepdim=True)
    assert values.tolist() == [[1.0, 2.0, 4.0]] and indices.tolist() == [[0, 1, 1]]
    assert type(r).__name__ == "max" and repr(r).startswith("pytorchlite.return_types.max(\nvalues=")
    lo, hi = p.aminmax()
    assert (lo.item(), hi.item()) == (1.0, 5.0)
    assert p.aminmax(dim=0).max.tolist() == [4.0, 5.0, 5.0]
    assert p.sum(1).tolist() == [11.0, 10.0] and p.mean().item() == pytest.approx(3.5)
    assert p.argmax().item() == 1 and p.argmin(1, True).tolist() == [[0], [1]]
    assert p.logsumexp(1).shape == (2,) and p.count_nonzero().item() == 6
    assert ptl.var_mean(p, 1)[1].tolist() == pytest.approx([11 / 3, 10 / 3])


@needs_torch
def test_out_argument():
    p, t = both("float32", (3, 4), seed=9)
    for name, call in [("sum", lambda m, x, o: m.sum(x, 1, out=o)), ("mean", lambda m, x, o: m.mean(x, 0, out=o)),
                       ("amax", lambda m, x, o: m.amax(x, 1, out=o)), ("var", lambda m, x, o: m.var(x, 1, out=o)),
                       ("logsumexp", lambda m, x, o: m.logsumexp(x, 1, out=o)),
                       ("prod", lambda m, x, o: m.prod(x, 1, out=o)), ("norm", lambda m, x, o: m.norm(x, 2, 1, out=o))]:
        po, to = ptl.empty(0), torch.empty(0)
        rp, rt = call(ptl, p, po), call(torch, t, to)
        assert rp is po
        assert_same(f"{name}(out=)", po, to)
    po, to = ptl.empty(3, dtype=ptl.int64), torch.empty(3, dtype=torch.int64)
    ptl.argmax(p, 1, out=po)
    torch.argmax(t, 1, out=to)
    assert_same("argmax(out=)", po, to)
    po = ptl.empty(4, dtype=ptl.bool)
    ptl.any(p > 0 if hasattr(ptl, "gt") else p, 0, out=po)
    assert po.dtype == ptl.bool and po.shape == (4,)


def test_max_with_a_tensor_is_elementwise():
    a = ptl.tensor([1.0, 5.0, 3.0])
    b = ptl.tensor([4.0, 2.0, 3.0])
    if not hasattr(ptl, "maximum"):
        with pytest.raises(NotImplementedError, match="maximum"):
            ptl.max(a, b)
        return
    assert ptl.max(a, b).tolist() == [4.0, 5.0, 3.0]
    assert ptl.min(a, b).tolist() == [1.0, 2.0, 3.0]
    assert a.max(b).tolist() == [4.0, 5.0, 3.0]


def test_all_any_dtypes_and_empty_dim_list():
    u = ptl.tensor([[0, 3], [1, 1]], dtype=ptl.uint8)
    assert u.all().dtype == ptl.uint8 and u.any(1).dtype == ptl.uint8
    assert ptl.tensor([0.5, float("nan")]).all().item() is True      # NaN is nonzero
    p, t = both("float32", (2, 3), data=np.array([[1.0, 0.0, 3.0], [4.0, 5.0, 6.0]]))
    assert_same("all(())", p.all(()), t.all(()))     # () reduces nothing for all/any
    assert_same("sum(())", p.sum(()), t.sum(()))     # ... but everything for sum


def test_portable_loops_match_avx2():
    """The hand-vectorised loops have a portable version (used without AVX2); it runs the
    same operations in the same order, so a float32 sum is bit-identical."""
    import subprocess
    import sys
    code = ("import numpy as np, pytorchlite as p\n"
            "x = p.from_numpy(np.random.default_rng(11).standard_normal(300007).astype(np.float32))\n"
            "y = x.double()\n"
            "print(repr([x.sum().item(), x[:300000].reshape(600, 500).sum(1).tolist()[:5], x.amax().item(),\n"
            "            x.amin().item(), x.argmax().item(), x.argmin().item(), y.sum().item(), y.var().item(),\n"
            "            x.var().item(), y.amax().item(), y.argmin().item()]))\n")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outs = []
    for flag in ("0", "1"):
        env = dict(os.environ, PTL_DISABLE_AVX2=flag)
        outs.append(subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                                   check=True).stdout)
    assert outs[0] == outs[1]


def test_isclose_allclose_equal_match_pytorch():
    torch = pytest.importorskip("torch")
    nan, inf = float("nan"), float("inf")
    cases = [([1.0, nan, inf, 2.0, -inf], [1.0 + 1e-9, nan, inf, 2.1, inf], {}),
             ([1.0, nan], [1.0, nan], {"equal_nan": True}),
             ([1, 2, 5], [1, 3, 7], {"atol": 1}),
             ([1.0, 2.0], [[1.0], [2.0]], {"rtol": 0.0, "atol": 0.0})]
    for a, b, kw in cases:
        ta, tb = torch.tensor(a), torch.tensor(b)
        pa, pb = ptl.tensor(a), ptl.tensor(b)
        assert ptl.isclose(pa, pb, **kw).tolist() == torch.isclose(ta, tb, **kw).tolist()
        assert ptl.allclose(pa, pb, **kw) is torch.allclose(ta, tb, **kw)
        assert pa.isclose(pb, **kw).tolist() == ta.isclose(tb, **kw).tolist()
    assert ptl.equal(ptl.tensor([1, 2]), ptl.tensor([1.0, 2.0])) is True
    assert ptl.equal(ptl.tensor([1.0, nan]), ptl.tensor([1.0, nan])) is False
    assert ptl.tensor([1, 2]).equal(ptl.tensor([1, 2, 3])) is False
    with pytest.raises(RuntimeError, match="Long did not match Float"):
        ptl.isclose(ptl.tensor([1]), ptl.tensor([1.0]))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero, but got -1"):
        ptl.allclose(ptl.tensor([1.0]), ptl.tensor([1.0]), rtol=-1)
