"""Sorting, selection, scans and counting against PyTorch (same data, same call) and
NumPy: sort / argsort / msort, topk, kthvalue, median, nanmedian, mode, unique,
unique_consecutive, searchsorted, bucketize, bincount, histc, one_hot, cumsum, cumprod,
cummax, cummin, logcumsumexp. Every dtype, 0-d and empty inputs, non-contiguous views,
ties (stability), NaN and -0.0, the radix / quicksort / heap / select paths of
kernels/sort.c, out= forms, autograd corner cases and the error messages.
"""

import numpy as np
import pytest

import pytorchlite as ptl

from numpy_oracles import NUMPY_REDUCTIONS, NpTensor  # noqa: E402
from parity import HAVE_TORCH, NumpyRef, to_numpy, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped
# the oracle library: PyTorch, or without it NumPy's stable sort (tests/numpy_oracles.py)
lib = torch if HAVE_TORCH else NUMPY_REDUCTIONS

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
NUMERIC = [d for d in DTYPES if d != "bool"]


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread():
    if not HAVE_TORCH:
        yield
        return
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def values(dtype, shape, seed=0, ties=True, specials=False):
    """Values exact in `dtype`; with ties (few distinct values) unless ties=False."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        v = rng.random(shape) < 0.5
    elif dtype == "uint8":
        v = rng.integers(0, 6 if ties else 256, shape)
    elif dtype.startswith("int"):
        hi = {"int8": 127, "int16": 30000}.get(dtype, 2 ** 31 - 1)
        v = rng.integers(-5, 6, shape) if ties else rng.integers(-hi, hi, shape)
    else:
        v = np.round(rng.standard_normal(shape) * (2 if ties else 64)) / (2 if ties else 64)
        if specials and v.size >= 8:
            flat = v.reshape(-1)
            flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, np.nan]
            rng.shuffle(flat)
    return v


def pair(dtype, vals):
    """(pytorchlite tensor, torch tensor) with the same values."""
    arr = np.asarray(vals)
    if dtype == "bool":
        arr = arr.astype(bool)
    elif dtype in ("float16", "bfloat16"):
        arr = arr.astype(np.float32)
    else:
        arr = arr.astype(dtype)
    p = ptl.tensor(arr).to(getattr(ptl, dtype))
    if not HAVE_TORCH:      # exactly the values pytorchlite holds
        return p, NpTensor(to_numpy(p), dtype)
    t = torch.tensor(arr).to(getattr(torch, dtype))
    return p, t


def np_of(t):
    if isinstance(t, NumpyRef):
        return t.values
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.numpy()
    if t.dtype == ptl.bfloat16:
        t = t.float()
    return t.numpy()


def same(got, want, exact=True, rtol=0, atol=0, what=""):
    g, w = np_of(got), np_of(want)
    assert tuple(got.shape) == tuple(want.shape), (what, got.shape, want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (what, got.dtype, want.dtype)
    if exact:
        np.testing.assert_array_equal(g, w, err_msg=what)
    else:
        np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True, err_msg=what)


def layouts(dtype, shape, **kw):
    """The same values as a contiguous tensor, a transposed view and a step-sliced view."""
    v = values(dtype, shape, **kw)
    p, t = pair(dtype, v)
    yield "contiguous", p, t
    if len(shape) == 2:
        pT, tT = pair(dtype, np.ascontiguousarray(v.T))
        yield "transposed", pT.transpose(0, 1), tT.transpose(0, 1)
        wide = np.zeros((shape[0], shape[1] * 2), dtype=v.dtype)
        wide[:, ::2] = v
        pw, tw = pair(dtype, wide)
        yield "step-sliced", pw[:, ::2], tw[:, ::2]


# --- sort -------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(7,), (5, 9), (3, 70), (2, 600), (4, 3, 5)])
def test_sort_stable_matches_torch(dtype, shape):
    """With stable=True the order of ties is fixed, so indices must match exactly; covers
    the insertion, quicksort and radix paths (rows of 7 to 600 elements)."""
    for label, p, t in layouts(dtype, shape, specials=True):
        for dim in range(-len(shape), len(shape)):
            for desc in (False, True):
                got = ptl.sort(p, dim, desc, stable=True)
                want = lib.sort(t, dim=dim, descending=desc, stable=True)
                same(got.values, want.values, what=f"{label} dim={dim} desc={desc}")
                same(got.indices, want.indices, what=f"{label} dim={dim} desc={desc}")
                same(ptl.argsort(p, dim, desc, stable=True), lib.argsort(t, dim=dim, descending=desc,
                                                                         stable=True))


@pytest.mark.parametrize("dtype", ["int64", "float64", "float32", "int32", "float16"])
def test_sort_large_rows_radix(dtype):
    """A 1-d sort over the radix path (and the 64-bit keys with a separate index array)."""
    for ties in (True, False):
        p, t = pair(dtype, values(dtype, (20000,), seed=3, ties=ties, specials=True))
        for desc in (False, True):
            got, want = p.sort(descending=desc, stable=True), t.sort(descending=desc, stable=True)
            same(got.values, want.values)
            same(got.indices, want.indices)


def test_sort_nan_negative_zero_and_payloads():
    x = np.array([1.0, np.nan, 0.0, -0.0, 2.0, 2.0, -np.nan, -np.inf, np.inf], np.float64)
    for dt in ("float32", "float64", "float16", "bfloat16"):
        p, t = pair(dt, x)
        for desc in (False, True):
            got, want = p.sort(descending=desc, stable=True), t.sort(descending=desc, stable=True)
            same(got.indices, want.indices, what=dt)
            same(got.values, want.values, what=dt)
            # -0.0 keeps its sign in the values (PyTorch returns the stored elements)
            g = np_of(got.values)
            assert list(np.signbit(g[g == 0])) == list(np.signbit(np_of(want.values)[np_of(want.values) == 0]))


def test_sort_matches_numpy_float64():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((30, 257))
    got = ptl.tensor(x).sort(dim=1)
    np.testing.assert_array_equal(got.values.numpy(), np.sort(x, axis=1))
    np.testing.assert_array_equal(got.indices.numpy(), np.argsort(x, axis=1, kind="stable"))
    np.testing.assert_array_equal(ptl.msort(ptl.tensor(x)).numpy(), np.sort(x, axis=0))


def test_sort_edge_shapes():
    for shape in [(), (0,), (3, 0), (0, 4), (1,), (1, 1)]:
        v = values("float32", shape)
        p, t = pair("float32", v)
        got, want = p.sort(), t.sort()
        same(got.values, want.values, what=str(shape))
        same(got.indices, want.indices, what=str(shape))
    pe = ptl.tensor([[3., 1., 2.]]).expand(4, 3)
    te = torch.tensor([[3., 1., 2.]]).expand(4, 3)
    same(pe.sort(1).values, te.sort(1).values)
    same(pe.sort(0, stable=True).indices, te.sort(dim=0, stable=True).indices)


def test_sort_out_and_method_forms():
    x = ptl.tensor([3., 1., 2.])
    v, i = ptl.empty(0), ptl.empty(0, dtype=ptl.int64)
    r = ptl.sort(x, out=(v, i))
    assert r.values is v and r.indices is i
    assert v.tolist() == [1., 2., 3.] and i.tolist() == [1, 2, 0]
    assert type(r).__name__ == "sort" and r._fields == ("values", "indices")
    with pytest.raises(TypeError):
        ptl.sort(x, out=v)
    assert x.msort().tolist() == [1., 2., 3.]
    assert x.argsort(descending=True).tolist() == [0, 2, 1]


def test_sort_errors():
    x = ptl.tensor([1., 2.])
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-1, 0\], but got 2\)"):
        x.sort(dim=2)
    with pytest.raises(TypeError, match="sort"):
        ptl.sort("nope")
    with pytest.raises(TypeError, match="descending"):
        x.sort(0, "yes")


# --- topk ---------------------------------------------------------------------------------------

def _check_topk(p, t, k, dim, largest, what):
    got = ptl.topk(p, k, dim, largest)
    want = lib.topk(t, k, dim, largest)
    same(got.values, want.values, what=what)
    assert got.indices.dtype == ptl.int64
    # ties may pick different (equal) elements: the indices must select the values
    picked = np.take_along_axis(np_of(p).reshape(tuple(p.shape) or (1,)),
                                np_of(got.indices).reshape(tuple(got.indices.shape) or (1,)),
                                axis=dim if p.dim() else 0)
    np.testing.assert_array_equal(picked.reshape(np_of(got.values).shape), np_of(got.values), err_msg=what)


@pytest.mark.parametrize("dtype", NUMERIC)
def test_topk_matches_torch(dtype):
    for label, p, t in layouts(dtype, (6, 40), specials=True):
        for dim in (0, 1, -1):
            n = p.shape[dim]
            for k in sorted({0, 1, 2, n // 4, n}):
                for largest in (True, False):
                    _check_topk(p, t, k, dim, largest, f"{label} dim={dim} k={k} largest={largest}")


@pytest.mark.parametrize("n,k", [(5000, 3), (5000, 200), (5000, 2000), (700, 700), (100, 10)])
def test_topk_paths(n, k):
    """heap (k small), select + sort (k <= n/4) and full sort (k large), in 16-, 32- and
    64-bit keys."""
    for dtype in ("float32", "float64", "int16", "bfloat16"):
        p, t = pair(dtype, values(dtype, (2, n), seed=n + k, ties=dtype != "bfloat16", specials=True))
        for largest in (True, False):
            _check_topk(p, t, k, 1, largest, f"{dtype} n={n} k={k}")


def test_topk_without_ties_has_torch_indices_and_nan_is_largest():
    x = [1., float("nan"), 5., -2., 4.]
    got = ptl.tensor(x).topk(2)
    assert got.indices.tolist() == [1, 2]
    assert np.isnan(got.values[0].item()) and got.values[1].item() == 5.
    assert ptl.tensor(x).topk(2, largest=False).indices.tolist() == [3, 0]


def test_topk_edges_and_errors():
    same(ptl.tensor(3.).topk(1).values, torch.tensor(3.).topk(1).values)
    same(ptl.tensor(3.).topk(0).indices, torch.tensor(3.).topk(0).indices)
    same(ptl.zeros(0, 3).topk(2).values, torch.zeros(0, 3).topk(2).values)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ptl.zeros(3).topk(4)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        ptl.zeros(3).topk(-1)
    with pytest.raises(RuntimeError, match="topk does not support bool dtypes on CPU"):
        ptl.tensor([True]).topk(1)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ptl.zeros(3).topk(1, dim=1)
    v, i = ptl.empty(0), ptl.empty(0, dtype=ptl.int64)
    ptl.topk(ptl.tensor([1., 3., 2.]), 2, out=(v, i))
    assert v.tolist() == [3., 2.] and i.tolist() == [1, 2]


# --- kthvalue, median, nanmedian, mode ------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC)
def test_kthvalue_and_median_match_torch(dtype):
    for label, p, t in layouts(dtype, (5, 9), specials=dtype not in ("float16", "bfloat16")):
        for dim in (0, 1, -1):
            n = p.shape[dim]
            for keep in (False, True):
                for k in (1, (n + 1) // 2, n):
                    got, want = ptl.kthvalue(p, k, dim, keep), torch.kthvalue(t, k, dim, keep)
                    same(got.values, want.values, what=f"kthvalue {label} {dim} {k}")
                    picked = np.take_along_axis(np_of(p), np_of(got.indices if keep else got.indices.unsqueeze(dim)),
                                                axis=dim)
                    np.testing.assert_array_equal(picked.squeeze() if not keep else picked,
                                                  np_of(got.values).squeeze() if not keep else np_of(got.values))
                for op in ("median", "nanmedian"):
                    got = getattr(ptl, op)(p, dim, keep)
                    want = getattr(torch, op)(t, dim, keep)
                    same(got.values, want.values, what=f"{op} {label} {dim}")
                    assert type(got).__name__ == op
        same(ptl.median(p), torch.median(t), what=f"median {label}")
        same(ptl.nanmedian(p), torch.nanmedian(t), what=f"nanmedian {label}")


def test_median_nan_rules():
    x = [[1., float("nan"), 3.], [float("nan")] * 3, [2., 1., 5.]]
    p, t = ptl.tensor(x), torch.tensor(x)
    for op in ("median", "nanmedian"):
        got, want = getattr(ptl, op)(p, 1), getattr(torch, op)(t, 1)
        same(got.values, want.values, what=op)
        same(got.indices, want.indices, what=op)
        same(getattr(ptl, op)(p), getattr(torch, op)(t), what=op)
    # numpy: the lower median is np.sort(x)[(n - 1) // 2]
    rng = np.random.default_rng(2)
    a = rng.standard_normal(1001)
    assert ptl.tensor(a).median().item() == np.sort(a)[500]
    assert ptl.tensor(a[:1000]).median().item() == np.sort(a[:1000])[499]


def test_median_empty_and_errors():
    assert np.isnan(ptl.zeros(0).median().item())
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size."):
        ptl.zeros(2, 0).median(1)
    with pytest.raises(IndexError, match=r"median\(\): Expected reduction dim 1 to have non-zero size."):
        ptl.zeros(2, 0).nanmedian(1)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 1 to have non-zero size."):
        ptl.zeros(2, 0).kthvalue(1, 1)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range for dimension 0"):
        ptl.tensor([1., 2.]).kthvalue(3, 0)
    with pytest.raises(RuntimeError, match="selected number k out of range"):
        ptl.tensor([1., 2.]).kthvalue(0)
    with pytest.raises(IndexError, match=r"mode\(\): Expected reduction dim 0 to have non-zero size."):
        ptl.zeros(0).mode()
    same(ptl.tensor(4.).kthvalue(1).values, torch.tensor(4.).kthvalue(1).values)
    same(ptl.tensor(4.).median(0).indices, torch.tensor(4.).median(0).indices)


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_of_bool_is_not_implemented(op):
    """PyTorch's median kernels have no bool instance; an empty bool tensor still gives NaN
    cast to bool (True), and dim errors come first."""
    b = ptl.tensor([[True, False], [True, True]])
    with pytest.raises(NotImplementedError, match="\"median_cpu\" not implemented for 'Bool'"):
        getattr(b, op)()
    with pytest.raises(NotImplementedError, match="\"median_out\" not implemented for 'Bool'"):
        getattr(b, op)(0)
    with pytest.raises(NotImplementedError, match="\"median_out\" not implemented for 'Bool'"):
        getattr(ptl.ones((), dtype=ptl.bool), op)(0, keepdim=True)
    with pytest.raises(IndexError, match="Expected reduction dim 1 to have non-zero size"):
        getattr(ptl.ones(3, 0, dtype=ptl.bool), op)(1)
    assert getattr(ptl.ones(0, dtype=ptl.bool), op)().item() is getattr(torch.ones(0, dtype=torch.bool), op)().item()


@pytest.mark.parametrize("dtype", DTYPES)
def test_mode_matches_torch(dtype):
    for label, p, t in layouts(dtype, (4, 30)):
        for dim in (0, 1):
            for keep in (False, True):
                got, want = ptl.mode(p, dim, keep), torch.mode(t, dim, keep)
                same(got.values, want.values, what=f"{label} dim={dim}")
                # PyTorch's index is one occurrence of the value (which one depends on its
                # unstable sort); ours is the last one. Both must point at the value.
                idx = np_of(got.indices if keep else got.indices.unsqueeze(dim))
                picked = np.take_along_axis(np_of(p), idx, axis=dim)
                np.testing.assert_array_equal(picked, np_of(got.values if keep else got.values.unsqueeze(dim)))
                last = np.array([np.flatnonzero(r == v)[-1] for r, v in
                                 zip(np.moveaxis(np_of(p), dim, -1), np_of(got.values).reshape(-1))])
                np.testing.assert_array_equal(idx.reshape(-1), last)


def test_mode_nan_each_distinct():
    got = ptl.tensor([1., float("nan"), float("nan")]).mode()
    assert got.values.item() == 1. and got.indices.item() == 0


# --- scans ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_cumsum_cumprod_match_torch(dtype):
    for label, p, t in layouts(dtype, (5, 7)):
        for dim in (0, 1, -1):
            for op in ("cumsum", "cumprod"):
                got, want = getattr(ptl, op)(p, dim), getattr(torch, op)(t, dim)
                tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6, "float64": 1e-12}.get(dtype, 0)
                same(got, want, exact=tol == 0, rtol=tol, atol=tol, what=f"{op} {label} {dim}")
                for odt in ("float64", "int32"):
                    got = getattr(ptl, op)(p, dim, dtype=getattr(ptl, odt))
                    want = getattr(torch, op)(t, dim, dtype=getattr(torch, odt))
                    same(got, want, exact=odt != "float64", rtol=1e-12, atol=1e-12, what=f"{op} dtype={odt}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_cumsum_starts_from_zero_as_pytorch_does(dtype):
    """cumsum adds to its identity 0, so a leading -0.0 sums to +0.0 along rows and
    columns alike (PyTorch's result; the declared `identity: 0` of ops.yaml)."""
    for shape, dim in (((3,), 0), ((3, 4), 0), ((4, 3), 1)):
        got = ptl.full(shape, -0.0, dtype=getattr(ptl, dtype)).cumsum(dim).to(ptl.float32).numpy()
        want = torch.full(shape, -0.0, dtype=getattr(torch, dtype)).cumsum(dim).float().numpy()
        assert (np.signbit(got) == np.signbit(want)).all() and not np.signbit(got).any(), (shape, dim)


def test_cumsum_large_and_numpy():
    rng = np.random.default_rng(0)
    for shape, dim in [((100000,), 0), ((300, 500), 1), ((300, 500), 0), ((20, 30, 40), 1)]:
        x = rng.standard_normal(shape)
        np.testing.assert_allclose(ptl.tensor(x).cumsum(dim).numpy(), np.cumsum(x, dim), rtol=1e-10, atol=1e-10)
        x32 = x.astype(np.float32)
        np.testing.assert_allclose(ptl.tensor(x32).cumsum(dim).numpy(), np.cumsum(x, dim), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(ptl.tensor(x / 10 + 1).cumprod(dim).numpy(), np.cumprod(x / 10 + 1, dim),
                                   rtol=1e-9)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cummax_cummin_match_torch(dtype):
    for label, p, t in layouts(dtype, (6, 11), specials=True):
        for dim in (0, 1):
            for op in ("cummax", "cummin"):
                got, want = getattr(ptl, op)(p, dim), getattr(torch, op)(t, dim)
                same(got.values, want.values, what=f"{op} {label}")
                same(got.indices, want.indices, what=f"{op} {label}")
                assert type(got).__name__ == op


@pytest.mark.parametrize("dtype", FLOATS)
def test_logcumsumexp_matches_torch(dtype):
    for label, p, t in layouts(dtype, (4, 9), specials=True):
        for dim in (0, 1):
            tol = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-6, "float64": 1e-12}[dtype]
            same(ptl.logcumsumexp(p, dim), torch.logcumsumexp(t, dim), exact=False, rtol=tol, atol=tol,
                 what=label)
    big = [1000., 1000., -1000.]
    same(ptl.tensor(big).logcumsumexp(0), torch.tensor(big).logcumsumexp(0), exact=False, rtol=1e-6)


def test_scan_edges_forms_and_errors():
    for shape in [(), (0,), (3, 0)]:
        p, t = pair("float32", np.ones(shape))
        for op in ("cumsum", "cumprod", "logcumsumexp"):
            same(getattr(ptl, op)(p, 0), getattr(torch, op)(t, 0), what=f"{op} {shape}")
        same(ptl.cummax(p, 0).indices, torch.cummax(t, 0).indices)
    assert ptl.tensor([True, True]).cumsum(0).dtype == ptl.int64
    x = ptl.tensor([1., 2., 3.])
    y = x.clone()
    assert y.cumsum_(0) is y and y.tolist() == [1., 3., 6.]
    out = ptl.empty(3)
    assert ptl.cumprod(x, 0, out=out) is out and out.tolist() == [1., 2., 6.]
    v, i = ptl.empty(0), ptl.empty(0, dtype=ptl.int64)
    ptl.cummax(x, 0, out=(v, i))
    assert i.tolist() == [0, 1, 2]
    with pytest.raises(NotImplementedError, match="\"logcumsumexp_out_cpu\" not implemented for 'Long'"):
        ptl.tensor([1, 2]).logcumsumexp(0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.cumsum(1)
    with pytest.raises(TypeError):
        x.cumsum()
    with pytest.raises(RuntimeError, match="can't be cast"):
        ptl.tensor([1, 2]).cumsum_(0, dtype=ptl.float32)


def test_scan_gradients_against_torch():
    rng = np.random.default_rng(4)
    xs = rng.uniform(-1, 1, (3, 5))
    xs[0, 2] = 0.0
    xs[2, 1] = xs[2, 3] = 0.0         # two zeros in a row: cumprod's exact branch
    for op, kw in [("cumsum", {}), ("cumprod", {}), ("logcumsumexp", {}), ("cummax", {}), ("cummin", {})]:
        for dim in (0, 1):
            p = ptl.tensor(xs).requires_grad_()
            t = torch.tensor(xs).requires_grad_()
            gp = getattr(ptl, op)(p, dim)
            gt = getattr(torch, op)(t, dim)
            gp = gp[0] if isinstance(gp, tuple) else gp
            gt = gt[0] if isinstance(gt, tuple) else gt
            w = rng.standard_normal(xs.shape)
            (gp * ptl.tensor(w)).sum().backward()
            (gt * torch.tensor(w)).sum().backward()
            np.testing.assert_allclose(p.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=op)


def test_sort_topk_gradients_against_torch():
    rng = np.random.default_rng(6)
    xs = rng.permutation(24).reshape(4, 6).astype(np.float64) / 7
    for fn in (lambda m, x: m.sort(x, 1, True).values, lambda m, x: m.topk(x, 3, 0).values,
               lambda m, x: m.kthvalue(x, 2, 1).values, lambda m, x: m.median(x, 0).values,
               lambda m, x: m.median(x), lambda m, x: m.mode(x, 1).values):
        p = ptl.tensor(xs).requires_grad_()
        t = torch.tensor(xs).requires_grad_()
        (fn(ptl, p) * 3).sum().backward()
        (fn(torch, t) * 3).sum().backward()
        np.testing.assert_array_equal(p.grad.numpy(), t.grad.numpy())
    p = ptl.tensor(xs).requires_grad_()
    r = p.sort(1)
    assert not r.indices.requires_grad and r.values.requires_grad


# --- unique --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_unique_matches_torch(dtype):
    for label, p, t in layouts(dtype, (6, 13), specials=True):
        for inv in (False, True):
            for cnt in (False, True):
                got = ptl.unique(p, return_inverse=inv, return_counts=cnt)
                want = torch.unique(t, return_inverse=inv, return_counts=cnt)
                got = got if isinstance(got, tuple) else (got,)
                want = want if isinstance(want, tuple) else (want,)
                assert len(got) == len(want)
                for g, w in zip(got, want):
                    same(g, w, what=f"{label} inverse={inv} counts={cnt}")
        got = ptl.unique_consecutive(p, return_inverse=True, return_counts=True)
        want = torch.unique_consecutive(t, return_inverse=True, return_counts=True)
        for g, w in zip(got, want):
            same(g, w, what=f"unique_consecutive {label}")


def test_unique_numpy_and_edges():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 50, 10000)
    u, inv, cnt = ptl.unique(ptl.tensor(x), return_inverse=True, return_counts=True)
    nu, ninv, ncnt = np.unique(x, return_inverse=True, return_counts=True)
    np.testing.assert_array_equal(u.numpy(), nu)
    np.testing.assert_array_equal(inv.numpy(), ninv.reshape(x.shape))
    np.testing.assert_array_equal(cnt.numpy(), ncnt)
    for shape in [(), (0,), (2, 0)]:
        p, t = pair("int64", np.full(shape, 5))
        for g, w in zip(ptl.unique(p, return_inverse=True), torch.unique(t, return_inverse=True)):
            same(g, w, what=str(shape))
        same(ptl.unique_consecutive(p), torch.unique_consecutive(t))
    assert ptl.tensor([3, 1, 3]).unique().tolist() == [1, 3]


@pytest.mark.parametrize("dtype", ["bool", "int32", "float32", "bfloat16"])
def test_unique_dim_matches_torch(dtype):
    rng = np.random.default_rng(3)
    base = values(dtype, (4, 3), seed=1)
    v = base[rng.integers(0, 4, 9)]                       # repeated rows
    v = np.stack([v, v[::-1]], axis=2)                    # (9, 3, 2)
    for label, p, t in [("contiguous",) + pair(dtype, v),
                        ("transposed",) + tuple(x.transpose(0, 2) for x in pair(dtype, np.ascontiguousarray(
                            v.transpose(2, 1, 0))))]:
        for dim in (0, 1, 2, -1):
            for op in ("unique", "unique_consecutive"):
                got = getattr(ptl, op)(p, dim=dim, return_inverse=True, return_counts=True)
                want = getattr(torch, op)(t, dim=dim, return_inverse=True, return_counts=True)
                for g, w in zip(got, want):
                    same(g, w, what=f"{op} {label} dim={dim}")
    for shape, dim in [((0, 3), 0), ((2, 0), 1), ((2, 0), 0), ((), 0), ((2, 3), 2)]:
        p, t = pair("float32", np.zeros(shape))
        try:
            want = torch.unique(t, dim=dim, return_inverse=True, return_counts=True)
        except Exception as e:
            with pytest.raises(type(e)):
                ptl.unique(p, dim=dim)
            continue
        for g, w in zip(ptl.unique(p, dim=dim, return_inverse=True, return_counts=True), want):
            same(g, w, what=str(shape))


# --- searchsorted, bucketize ----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC)
def test_searchsorted_matches_torch(dtype):
    rng = np.random.default_rng(0)
    seq = np.sort(values(dtype, (40,), seed=1))
    vals = values(dtype, (3, 7), seed=2)
    ps, ts = pair(dtype, seq)
    pv, tv = pair(dtype, vals)
    for right in (False, True):
        for i32 in (False, True):
            same(ptl.searchsorted(ps, pv, right=right, out_int32=i32),
                 torch.searchsorted(ts, tv, right=right, out_int32=i32))
            same(ptl.bucketize(pv, ps, right=right, out_int32=i32),
                 torch.bucketize(tv, ts, right=right, out_int32=i32))
    same(ptl.searchsorted(ps, pv, side="right"), torch.searchsorted(ts, tv, side="right"))
    # batched sequences and a sorter
    seq2 = values(dtype, (3, 20), seed=3)
    order = np.argsort(seq2, axis=1, kind="stable")
    ps2, ts2 = pair(dtype, seq2)
    po, to = pair("int64", order)
    same(ptl.searchsorted(ps2, pv, sorter=po), torch.searchsorted(ts2, tv, sorter=to))
    pss, tss = pair(dtype, np.sort(seq2, axis=1))
    same(ptl.searchsorted(pss, pv[:, :3].contiguous()), torch.searchsorted(tss, tv[:, :3].contiguous()))


def test_searchsorted_scalars_mixed_dtypes_edges_and_errors():
    s, ts = ptl.tensor([1, 3, 5]), torch.tensor([1, 3, 5])
    same(ptl.searchsorted(s, 3), torch.searchsorted(ts, 3))
    same(ptl.searchsorted(s, ptl.tensor([2.5])), torch.searchsorted(ts, torch.tensor([2.5])))
    same(ptl.bucketize(3, s), torch.bucketize(3, ts))
    same(ptl.searchsorted(s, ptl.zeros(0)), torch.searchsorted(ts, torch.zeros(0)))
    same(ptl.searchsorted(ptl.tensor([1., float("nan")]), ptl.tensor([float("nan"), 2.])),
         torch.searchsorted(torch.tensor([1., float("nan")]), torch.tensor([float("nan"), 2.])))
    out = ptl.empty(0, dtype=ptl.int64)
    assert ptl.searchsorted(s, ptl.tensor([4]), out=out) is out and out.tolist() == [2]
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got lft"):
        ptl.searchsorted(s, ptl.tensor([1]), side="lft")
    with pytest.raises(RuntimeError, match="side and right can't be set to opposites"):
        ptl.searchsorted(s, ptl.tensor([1]), side="left", right=True)
    with pytest.raises(RuntimeError, match="boundaries tensor should be 1 dimension or the first N-1"):
        ptl.searchsorted(ptl.tensor([[1, 2, 3]]), ptl.tensor([[2], [3]]))
    with pytest.raises(RuntimeError, match="boundaries tensor should have positive dimension"):
        ptl.searchsorted(ptl.tensor(1), ptl.tensor([2]))
    with pytest.raises(RuntimeError, match="boundary and sorter must have the same size"):
        ptl.searchsorted(s, ptl.tensor([2]), sorter=ptl.tensor([0, 1]))
    with pytest.raises(RuntimeError, match="sorter must be a tensor of long dtype but got dtype Int"):
        ptl.searchsorted(s, ptl.tensor([2]), sorter=ptl.tensor([0, 1, 2], dtype=ptl.int32))
    with pytest.raises(RuntimeError, match="sorter index out of range"):
        ptl.searchsorted(s, ptl.tensor([2]), sorter=ptl.tensor([0, 1, 5]))
    with pytest.raises(RuntimeError, match=r"boundaries tensor must be 1 dimension, but got dim\(2\)"):
        ptl.bucketize(ptl.tensor([1]), ptl.tensor([[1, 2]]))


# --- bincount, histc, one_hot ----------------------------------------------------------------------------

def test_bincount_matches_torch_and_numpy():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 20, 500)
    for dt in ("uint8", "int8", "int16", "int32", "int64"):
        p, t = pair(dt, x)
        same(ptl.bincount(p), torch.bincount(t))
        same(ptl.bincount(p, minlength=30), torch.bincount(t, minlength=30))
        for wdt in ("float32", "float64", "int32", "float16"):
            pw, tw = pair(wdt, rng.integers(-3, 4, 500))
            same(ptl.bincount(p, pw), torch.bincount(t, tw), exact=False, rtol=1e-6, what=wdt)
    np.testing.assert_array_equal(ptl.bincount(ptl.tensor(x)).numpy(), np.bincount(x))
    same(ptl.bincount(ptl.zeros(0, dtype=ptl.int64)), torch.bincount(torch.zeros(0, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        ptl.bincount(ptl.tensor([-1]))
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        ptl.bincount(ptl.zeros(2, 2, dtype=ptl.int64))
    with pytest.raises(NotImplementedError, match="\"bincount_cpu\" not implemented for 'Float'"):
        ptl.bincount(ptl.zeros(2))
    with pytest.raises(RuntimeError, match="minlength should be >= 0"):
        ptl.bincount(ptl.tensor([1]), minlength=-1)
    with pytest.raises(RuntimeError, match="weights should be 1-d and have the same length as input"):
        ptl.bincount(ptl.tensor([1, 2]), ptl.tensor([1.]))


@pytest.mark.parametrize("dtype", FLOATS)
def test_histc_matches_torch(dtype):
    rng = np.random.default_rng(0)
    # under 256 elements: PyTorch counts bfloat16 histograms in bfloat16, where 256 + 1 == 256
    p, t = pair(dtype, np.round(rng.standard_normal((10, 20)) * 8) / 8)
    for bins, lo, hi in [(10, 0, 0), (7, -1, 1), (1, -3, 3), (100, 0.5, 2)]:
        if dtype == "bfloat16" and bins == 100:
            # PyTorch finds a bfloat16 element's bin in bfloat16 arithmetic, which can put a
            # value next to an edge into the neighbouring bin; ours computes in float64
            got = ptl.histc(p, bins, lo, hi)
            assert got.sum().item() == torch.histc(t, bins, lo, hi).sum().item()
            continue
        same(ptl.histc(p, bins, lo, hi), torch.histc(t, bins, lo, hi), what=f"{bins} {lo} {hi}")
    same(ptl.histc(p.transpose(0, 1), 5), torch.histc(t.transpose(0, 1), 5))
    same(ptl.histc(ptl.tensor([1., 1.]), 2), torch.histc(torch.tensor([1., 1.]), 2))
    same(ptl.histc(ptl.zeros(0), 2), torch.histc(torch.zeros(0), 2))
    np.testing.assert_array_equal(ptl.histc(ptl.tensor([0., 1., 2., 3.]), 3, 0, 3).numpy(),
                                  np.histogram([0., 1., 2., 3.], 3, (0, 3))[0])


def test_histc_errors():
    with pytest.raises(RuntimeError, match=r"torch.histogram\(\): bins must be > 0, but got 0 for dimension 0"):
        ptl.histc(ptl.zeros(2), bins=0)
    with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
        ptl.histc(ptl.zeros(2), min=2, max=1)
    with pytest.raises(RuntimeError, match=r"torch.histc: range of \[1, inf\] is not finite"):
        ptl.histc(ptl.tensor([1., float("inf")]), bins=2)
    with pytest.raises(NotImplementedError, match="\"histogram_cpu\" not implemented for 'Long'"):
        ptl.histc(ptl.tensor([1, 2]), bins=3)


def test_one_hot():
    F, TF = ptl.nn.functional, torch.nn.functional
    for x, n in [([0, 2, 1], -1), ([[1, 0], [3, 3]], 5), ([], 3), (4, 6)]:
        p, t = pair("int64", np.array(x, dtype=np.int64))
        same(F.one_hot(p, n), TF.one_hot(t, n), what=str(x))
    same(F.one_hot(ptl.arange(6)[::2], 6), TF.one_hot(torch.arange(6)[::2], 6))
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor of type LongTensor."):
        F.one_hot(ptl.tensor([1.]))
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(ptl.tensor([3]), 2)
    with pytest.raises(RuntimeError, match="Class values must be non-negative."):
        F.one_hot(ptl.tensor([-1]))
    with pytest.raises(RuntimeError, match="Can not infer total number of classes from empty tensor."):
        F.one_hot(ptl.zeros(0, dtype=ptl.int64))


# --- threads -------------------------------------------------------------------------------------------

def test_parallel_rows_match_serial():
    rng = np.random.default_rng(9)
    x = ptl.tensor(rng.standard_normal((257, 300)).astype(np.float32))
    n = ptl.get_num_threads()
    try:
        ptl.set_num_threads(1)
        serial = [x.sort(1), x.topk(7, 1), x.kthvalue(100, 1), x.cumsum(0), x.cummax(1)]
        ptl.set_num_threads(2)
        par = [x.sort(1), x.topk(7, 1), x.kthvalue(100, 1), x.cumsum(0), x.cummax(1)]
    finally:
        ptl.set_num_threads(n)
    for a, b in zip(serial, par):
        for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            np.testing.assert_array_equal(u.numpy(), v.numpy())
