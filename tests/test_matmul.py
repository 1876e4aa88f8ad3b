"""Matrix products (mm, bmm, matmul, addmm, baddbmm, addbmm, mv, addmv, dot, vdot, outer,
ger, addr) against NumPy in float64 and against PyTorch for shapes, dtypes and errors.

Operands come in every layout the kernel treats differently: contiguous, transposed
(handed to BLAS as Trans), step-sliced (a leading dimension > cols), expanded (stride 0,
which BLAS cannot read and the kernel packs) and sliced both ways (packed too).
"""

import numpy as np
import pytest

import pytorchlite as P

RNG = np.random.default_rng(0)

FLOATS = [P.float32, P.float64, P.float16, P.bfloat16]
INTS = [P.uint8, P.int8, P.int16, P.int32, P.int64]
NUMERIC = FLOATS + INTS


# --- helpers ---------------------------------------------------------------------------

def _values(shape, dtype):
    """Random data as float64 (floats) or int64 (ints) with values every dtype holds."""
    if dtype.is_floating_point:
        return RNG.standard_normal(shape)
    lo, hi = (0, 6) if dtype is P.uint8 else (-5, 6)
    return RNG.integers(lo, hi, size=shape).astype(np.int64)


def _laid_out(arr, layout):
    """A NumPy view of `arr` (same values) with the requested memory layout."""
    if layout == "contiguous" or arr.ndim < 2:
        return np.ascontiguousarray(arr)
    if layout == "transposed":               # column-major matrices
        return np.ascontiguousarray(np.swapaxes(arr, -1, -2)).swapaxes(-1, -2)
    if layout == "sliced":                   # every other column of a wider buffer
        buf = np.zeros(arr.shape[:-1] + (arr.shape[-1] * 2,), arr.dtype)
        buf[..., ::2] = arr
        return buf[..., ::2]
    if layout == "both":                     # step-sliced rows and columns: no BLAS layout
        buf = np.zeros(arr.shape[:-2] + (arr.shape[-2] * 2, arr.shape[-1] * 3), arr.dtype)
        buf[..., ::2, ::3] = arr
        return buf[..., ::2, ::3]
    raise ValueError(layout)


def _tensor(arr, dtype, layout="contiguous"):
    """A pytorchlite tensor of `dtype` holding arr, in `layout` (bfloat16 via float32:
    NumPy has no bfloat16, and the conversion keeps the layout by slicing afterwards)."""
    if dtype is P.bfloat16:
        t = P.from_numpy(np.ascontiguousarray(arr, dtype=np.float32)).to(P.bfloat16)
        if layout == "sliced" and arr.ndim >= 2:
            wide = P.zeros(*arr.shape[:-1], arr.shape[-1] * 2, dtype=P.bfloat16)
            wide[..., ::2] = t
            return wide[..., ::2]
        return t
    return P.from_numpy(_laid_out(np.asarray(arr).astype(dtype.np_dtype), layout))


def _rounded(arr, dtype):
    """arr as the dtype stores it, back in float64/int64 (what the kernel really sees)."""
    if dtype is P.bfloat16:
        return P.from_numpy(arr.astype(np.float32)).to(P.bfloat16).float().numpy().astype(np.float64)
    if dtype.is_floating_point:
        return arr.astype(dtype.np_dtype).astype(np.float64)
    return arr.astype(dtype.np_dtype).astype(np.int64)


def _as_np(t):
    if t.dtype is P.bfloat16:
        return t.float().numpy()
    return t.numpy()


def _expected(fn, dtype, *arrays):
    """fn over float64 (or int64, wrapping like the dtype) copies of the stored values."""
    r = fn(*[_rounded(a, dtype) for a in arrays])
    if dtype.is_floating_point:
        return np.asarray(r, np.float64)
    return np.asarray(r, np.int64).astype(dtype.np_dtype)


def _check(got, want, dtype, k=1):
    assert got.dtype is dtype, (got.dtype, dtype)
    g = _as_np(got)
    assert g.shape == np.shape(want), (g.shape, np.shape(want))
    if dtype.is_floating_point:
        tol = {P.float64: 1e-12, P.float32: 1e-5, P.float16: 4e-3, P.bfloat16: 2e-2}[dtype]
        np.testing.assert_allclose(g.astype(np.float64), want, rtol=tol, atol=tol * max(1, k) ** 0.5 * 4)
    else:
        np.testing.assert_array_equal(g, want)


def _torch():
    return pytest.importorskip("torch")


# --- every rank combination of matmul ----------------------------------------------------

RANK_CASES = [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
    ((5, 2, 3), (3,)), ((3,), (5, 3, 4)), ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)),
    ((5, 2, 3), (5, 3, 4)), ((5, 1, 2, 3), (4, 3, 2)), ((1, 2, 3), (6, 3, 4)),
    ((2, 1, 2, 3), (1, 3, 3, 4)), ((4, 3), (2, 2, 3, 5)), ((2, 2, 4, 3), (3,)),
    ((3,), (2, 2, 3, 1)), ((1, 1, 3), (3, 1)),
]


@pytest.mark.parametrize("sa, sb", RANK_CASES, ids=[f"{a}@{b}" for a, b in RANK_CASES])
def test_matmul_ranks_match_numpy_and_torch(sa, sb):
    a, b = _values(sa, P.float64), _values(sb, P.float64)
    got = P.matmul(P.from_numpy(a), P.from_numpy(b))
    _check(got, np.matmul(a, b), P.float64)
    assert (P.from_numpy(a) @ P.from_numpy(b)).shape == got.shape
    torch = _torch()
    ref = torch.matmul(torch.from_numpy(a), torch.from_numpy(b))
    assert tuple(ref.shape) == tuple(got.shape)
    np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)


def test_matmul_1d_1d_is_0d():
    r = P.matmul(P.tensor([1., 2., 3.]), P.tensor([4., 5., 6.]))
    assert r.shape == () and r.item() == 32.0
    assert P.linalg.matmul(P.tensor([1., 2.]), P.tensor([3., 4.])).item() == 11.0


@pytest.mark.parametrize("la", ["contiguous", "transposed", "sliced", "both"])
@pytest.mark.parametrize("lb", ["contiguous", "transposed", "sliced", "both"])
@pytest.mark.parametrize("dtype", [P.float32, P.float64, P.int32, P.float16])
def test_mm_layouts(la, lb, dtype):
    a, b = _values((7, 5), dtype), _values((5, 6), dtype)
    ta, tb = _tensor(a, dtype, la), _tensor(b, dtype, lb)
    _check(P.mm(ta, tb), _expected(np.matmul, dtype, a, b), dtype, k=5)


def _broadcast(arr, dtype, shape):
    """A stride-0 (expanded) tensor: a writable NumPy broadcast view shared by from_numpy
    (np.broadcast_to would be read-only, which from_numpy warns about)."""
    src = np.ascontiguousarray(arr.astype(dtype.np_dtype))
    view = np.broadcast_to(src, shape)
    return P.from_numpy(np.lib.stride_tricks.as_strided(src, shape, view.strides))


@pytest.mark.parametrize("dtype", [P.float32, P.float64, P.int64, P.float16], ids=str)
def test_expanded_operands(dtype):
    row, col = _values((1, 5), dtype), _values((5, 1), dtype)
    a, b = _broadcast(row, dtype, (4, 5)), _broadcast(col, dtype, (5, 3))
    assert a.stride() == (0, 1) and b.stride() == (1, 0)
    want = _expected(np.matmul, dtype, np.broadcast_to(row, (4, 5)), np.broadcast_to(col, (5, 3)))
    _check(P.mm(a, b), want, dtype, k=5)
    # a broadcast batch (stride 0 over 6 x 2 batches) against a broadcast matrix
    m, n = _values((3, 4), dtype), _values((4, 2), dtype)
    got = P.matmul(_broadcast(m, dtype, (6, 2, 3, 4)), _tensor(n, dtype))
    _check(got, _expected(lambda m, n: np.broadcast_to(m, (6, 2, 3, 4)) @ n, dtype, m, n), dtype, k=4)
    got = P.bmm(_broadcast(m, dtype, (5, 3, 4)), _broadcast(n, dtype, (5, 4, 2)))
    _check(got, _expected(lambda m, n: np.broadcast_to(m @ n, (5, 3, 2)), dtype, m, n), dtype, k=4)
    # an expanded vector (stride 0) in mv and dot
    v, mat = _values((1,), dtype), _values((3, 5), dtype)
    ve = _broadcast(v, dtype, (5,))
    assert ve.stride() == (0,)
    _check(P.mv(_tensor(mat, dtype), ve), _expected(lambda m, v: m @ np.repeat(v, 5), dtype, mat, v), dtype, k=5)
    _check(P.dot(ve, ve), _expected(lambda v: np.repeat(v, 5) @ np.repeat(v, 5), dtype, v), dtype, k=5)


def test_batch_broadcast_and_noncontiguous_batches():
    a = _values((3, 4, 2, 5), P.float64)
    b = _values((1, 4, 5, 6), P.float64)
    # batch dims permuted: neither foldable nor mergeable into one batch stride
    ta = P.from_numpy(np.ascontiguousarray(a.transpose(1, 0, 2, 3)).transpose(1, 0, 2, 3))
    tb = P.from_numpy(_laid_out(b, "transposed"))
    _check(P.matmul(ta, tb), np.matmul(a, b), P.float64)
    # a batch of transposed matrices against one vector (not foldable: goes the bmm way)
    _check(P.matmul(ta, P.from_numpy(b[0, 0, :, 0])), np.matmul(a, b[0, 0, :, 0]), P.float64)
    # step-sliced batch dim
    c = _values((8, 2, 5), P.float64)
    tc = P.from_numpy(c)[::2]
    _check(P.matmul(tc, P.from_numpy(b[0])), np.matmul(c[::2], b[0]), P.float64)
    _check(P.bmm(tc, P.from_numpy(b[0])), np.matmul(c[::2], b[0]), P.float64)


def test_many_small_batches_and_large_products():
    a, b = _values((300, 6, 7), P.float32), _values((300, 7, 5), P.float32)
    _check(P.bmm(_tensor(a, P.float32), _tensor(b, P.float32, "transposed")),
           _expected(np.matmul, P.float32, a, b), P.float32, k=7)
    a, b = _values((257, 300), P.float32), _values((300, 129), P.float32)
    _check(P.mm(_tensor(a, P.float32, "transposed"), _tensor(b, P.float32)),
           _expected(np.matmul, P.float32, a, b), P.float32, k=300)
    ia, ib = _values((70, 600), P.int64), _values((600, 80), P.int64)
    _check(P.mm(_tensor(ia, P.int64), _tensor(ib, P.int64, "transposed")),
           _expected(np.matmul, P.int64, ia, ib), P.int64)


# --- every dtype -------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", NUMERIC, ids=str)
def test_every_dtype(dtype):
    a, b = _values((4, 3), dtype), _values((3, 5), dtype)
    ta, tb = _tensor(a, dtype), _tensor(b, dtype)
    _check(P.mm(ta, tb), _expected(np.matmul, dtype, a, b), dtype, k=3)
    _check(ta @ tb, _expected(np.matmul, dtype, a, b), dtype, k=3)
    _check(P.mv(ta, _tensor(b[:, 0], dtype)), _expected(np.matmul, dtype, a, b[:, 0]), dtype, k=3)
    _check(P.dot(_tensor(a[0], dtype), _tensor(b[:, 1], dtype)), _expected(np.dot, dtype, a[0], b[:, 1]), dtype, k=3)
    _check(P.vdot(_tensor(a[0], dtype), _tensor(b[:, 1], dtype)), _expected(np.dot, dtype, a[0], b[:, 1]), dtype, k=3)
    ba, bb = _values((2, 4, 3), dtype), _values((2, 3, 5), dtype)
    _check(P.bmm(_tensor(ba, dtype), _tensor(bb, dtype)), _expected(np.matmul, dtype, ba, bb), dtype, k=3)
    _check(P.matmul(_tensor(ba, dtype), tb), _expected(np.matmul, dtype, ba, b), dtype, k=3)
    _check(P.matmul(_tensor(a[0], dtype), _tensor(bb, dtype)), _expected(np.matmul, dtype, a[0], bb), dtype, k=3)


@pytest.mark.parametrize("dtype", [P.int8, P.uint8, P.int16, P.int32, P.int64], ids=str)
def test_integer_products_wrap_like_the_dtype(dtype):
    info = np.iinfo(dtype.np_dtype)
    a = RNG.integers(info.min // 2, info.max // 2, size=(6, 40), dtype=np.int64)
    b = RNG.integers(info.min // 2, info.max // 2, size=(40, 3), dtype=np.int64)
    a, b = a.astype(dtype.np_dtype), b.astype(dtype.np_dtype)
    want = (a.astype(np.int64) @ b.astype(np.int64)).astype(dtype.np_dtype)   # wraps mod 2^64, then 2^bits
    np.testing.assert_array_equal(P.mm(P.from_numpy(a), P.from_numpy(b)).numpy(), want)
    torch = _torch()
    ref = torch.mm(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    np.testing.assert_array_equal(ref, want)


@pytest.mark.parametrize("call, name", [
    (lambda M, x: M.mm(x(2, 2), x(2, 2)), "addmm_impl_cpu_"),
    (lambda M, x: M.matmul(x(2, 2), x(2, 2)), "addmm_impl_cpu_"),
    (lambda M, x: M.addmm(x(2, 2), x(2, 2), x(2, 2)), "addmm_impl_cpu_"),
    (lambda M, x: M.addbmm(x(2, 2), x(1, 2, 2), x(1, 2, 2)), "addmm_impl_cpu_"),
    (lambda M, x: M.mv(x(2, 2), x(2)), "addmv_impl_cpu"),
    (lambda M, x: M.matmul(x(2, 2), x(2)), "addmv_impl_cpu"),
    (lambda M, x: M.addmv(x(2), x(2, 2), x(2)), "addmv_impl_cpu"),
    (lambda M, x: M.dot(x(2), x(2)), "dot"),
    (lambda M, x: M.vdot(x(2), x(2)), "dot"),
    (lambda M, x: M.matmul(x(2), x(2)), "dot"),
    (lambda M, x: M.bmm(x(1, 2, 2), x(1, 2, 2)), "bmm"),
    (lambda M, x: M.matmul(x(3, 2, 2), x(3, 2, 2)), "bmm"),
    (lambda M, x: M.baddbmm(x(1, 2, 2), x(1, 2, 2), x(1, 2, 2)), "baddbmm"),
])
def test_bool_is_not_implemented_like_torch(call, name):
    with pytest.raises(NotImplementedError, match=f"^\"{name}\" not implemented for 'Bool'$"):
        call(P, lambda *s: P.ones(*s, dtype=P.bool))
    torch = _torch()
    with pytest.raises(NotImplementedError, match=f"^\"{name}\" not implemented for 'Bool'$"):
        call(torch, lambda *s: torch.ones(*s, dtype=torch.bool))


# --- size 0 ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [P.float32, P.float64, P.float16, P.int64, P.int8], ids=str)
def test_size_zero(dtype):
    z = P.mm(P.ones(3, 0, dtype=dtype), P.ones(0, 2, dtype=dtype))        # k = 0: zeros
    _check(z, np.zeros((3, 2)), dtype)
    _check(P.mm(P.ones(0, 4, dtype=dtype), P.ones(4, 2, dtype=dtype)), np.zeros((0, 2)), dtype)
    _check(P.mm(P.ones(3, 4, dtype=dtype), P.ones(4, 0, dtype=dtype)), np.zeros((3, 0)), dtype)
    _check(P.dot(P.ones(0, dtype=dtype), P.ones(0, dtype=dtype)), np.zeros(()), dtype)
    _check(P.mv(P.ones(3, 0, dtype=dtype), P.ones(0, dtype=dtype)), np.zeros(3), dtype)
    _check(P.bmm(P.ones(0, 2, 3, dtype=dtype), P.ones(0, 3, 2, dtype=dtype)), np.zeros((0, 2, 2)), dtype)
    _check(P.bmm(P.ones(2, 2, 0, dtype=dtype), P.ones(2, 0, 2, dtype=dtype)), np.zeros((2, 2, 2)), dtype)
    _check(P.matmul(P.ones(2, 1, 3, 0, dtype=dtype), P.ones(4, 0, 2, dtype=dtype)), np.zeros((2, 4, 3, 2)), dtype)
    _check(P.matmul(P.ones(0, 3, 4, dtype=dtype), P.ones(4, dtype=dtype)), np.zeros((0, 3)), dtype)
    three = P.full((2, 2), 3, dtype=dtype)
    _check(P.addmm(three, P.ones(2, 0, dtype=dtype), P.ones(0, 2, dtype=dtype), beta=2), np.full((2, 2), 6), dtype)
    _check(P.addbmm(three, P.ones(0, 2, 3, dtype=dtype), P.ones(0, 3, 2, dtype=dtype), beta=2),
           np.full((2, 2), 6), dtype)
    _check(P.baddbmm(three, P.ones(1, 2, 0, dtype=dtype), P.ones(1, 0, 2, dtype=dtype)), np.full((1, 2, 2), 3), dtype)


def test_k_zero_with_nan_self():
    nan = P.full((2, 2), float("nan"))
    assert P.addmm(nan, P.ones(2, 0), P.ones(0, 2), beta=0).tolist() == [[0.0, 0.0], [0.0, 0.0]]
    assert all(v != v for row in P.addmm(nan, P.ones(2, 0), P.ones(0, 2)).tolist() for v in row)


# --- add* forms ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [P.float32, P.float64, P.bfloat16, P.int32, P.int64], ids=str)
def test_addmm_beta_alpha_broadcast(dtype):
    s, a, b = _values((4,), dtype), _values((3, 5), dtype), _values((5, 4), dtype)
    beta, alpha = (2, 3) if not dtype.is_floating_point else (0.5, -1.5)
    got = P.addmm(_tensor(s, dtype), _tensor(a, dtype, "sliced"), _tensor(b, dtype), beta=beta, alpha=alpha)
    _check(got, _expected(lambda s, a, b: beta * s + alpha * (a @ b), dtype, s, a, b), dtype, k=5)
    m = _tensor(_values((3, 4), dtype), dtype)
    ref = _as_np(m).astype(np.float64)
    m.addmm_(_tensor(a, dtype), _tensor(b, dtype), alpha=alpha)
    _check(m, _expected(lambda a, b: ref + alpha * (a @ b), dtype, a, b), dtype, k=5)
    out = P.empty(3, 4, dtype=dtype)
    r = P.addmm(_tensor(s, dtype), _tensor(a, dtype), _tensor(b, dtype), out=out)
    assert r is out
    _check(out, _expected(lambda s, a, b: s + a @ b, dtype, s, a, b), dtype, k=5)


def test_beta_zero_ignores_nan_and_int_scalars_truncate():
    nan = P.full((2, 4), float("nan"))
    r = P.addmm(nan, P.ones(2, 3), P.ones(3, 4), beta=0)
    assert r.tolist() == [[3.0] * 4] * 2
    r = P.addmv(P.full((2,), float("nan")), P.ones(2, 3), P.ones(3), beta=0)
    assert r.tolist() == [3.0, 3.0]
    r = P.baddbmm(P.full((1, 2, 4), float("nan")), P.ones(1, 2, 3), P.ones(1, 3, 4), beta=0)
    assert r.tolist() == [[[3.0] * 4] * 2]
    r = P.addbmm(P.full((2, 4), float("nan")), P.ones(2, 2, 3), P.ones(2, 3, 4), beta=0)
    assert r.tolist() == [[6.0] * 4] * 2
    i = P.ones(2, 4, dtype=P.int64)
    # PyTorch converts 1.5 to the integer 1 (toward zero) for integer results
    assert P.addmm(i, P.ones(2, 3, dtype=P.int64), P.ones(3, 4, dtype=P.int64), beta=1.5, alpha=2).tolist() == \
        [[7] * 4] * 2
    assert P.addmm(i, P.ones(2, 3, dtype=P.int64), P.ones(3, 4, dtype=P.int64), beta=2, alpha=2.5).tolist() == \
        [[8] * 4] * 2


@pytest.mark.parametrize("dtype", [P.float32, P.float64, P.float16, P.int64, P.int16], ids=str)
def test_baddbmm_addbmm(dtype):
    s, b1, b2 = _values((1, 4), dtype), _values((3, 2, 5), dtype), _values((3, 5, 4), dtype)
    beta, alpha = (3, 2) if not dtype.is_floating_point else (0.25, 2.0)
    got = P.baddbmm(_tensor(s, dtype), _tensor(b1, dtype, "transposed"), _tensor(b2, dtype), beta=beta, alpha=alpha)
    _check(got, _expected(lambda s, x, y: beta * s + alpha * (x @ y), dtype, s, b1, b2), dtype, k=5)
    got = P.addbmm(_tensor(s, dtype), _tensor(b1, dtype), _tensor(b2, dtype, "sliced"), beta=beta, alpha=alpha)
    _check(got, _expected(lambda s, x, y: beta * s + alpha * (x @ y).sum(0), dtype, s, b1, b2), dtype, k=15)
    t = P.zeros(3, 2, 4, dtype=dtype)
    t.baddbmm_(_tensor(b1, dtype), _tensor(b2, dtype))
    _check(t, _expected(lambda x, y: x @ y, dtype, b1, b2), dtype, k=5)
    t = P.zeros(2, 4, dtype=dtype)
    t.addbmm_(_tensor(b1, dtype), _tensor(b2, dtype))
    _check(t, _expected(lambda x, y: (x @ y).sum(0), dtype, b1, b2), dtype, k=15)


@pytest.mark.parametrize("dtype", [P.float32, P.float64, P.int32], ids=str)
def test_addmv(dtype):
    m, v = _values((3, 4), dtype), _values((4,), dtype)
    beta, alpha = (2, -1) if not dtype.is_floating_point else (1.5, 0.5)
    for s in (_values((3,), dtype), _values((1,), dtype), _values((), dtype)):
        got = P.addmv(_tensor(s, dtype), _tensor(m, dtype, "transposed"), _tensor(v, dtype), beta=beta, alpha=alpha)
        _check(got, _expected(lambda s, m, v: beta * s + alpha * (m @ v), dtype, s, m, v), dtype, k=4)
    t = _tensor(np.zeros(3), dtype)
    t.addmv_(_tensor(m, dtype), _tensor(v, dtype))
    _check(t, _expected(np.matmul, dtype, m, v), dtype, k=4)


def test_outer_ger_addr_promote_like_torch():
    torch = _torch()
    a, b = np.array([1, 2, 3], np.int32), np.array([0.5, -1.0])
    for fn in ("outer", "ger"):
        got = getattr(P, fn)(P.from_numpy(a), P.from_numpy(b))
        ref = getattr(torch, fn)(torch.from_numpy(a), torch.from_numpy(b))
        assert str(got.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
    x, y = P.tensor([True, False]), P.tensor([True, True, False])
    assert P.outer(x, y).dtype is P.bool and P.outer(x, y).tolist() == [[True, True, False], [False] * 3]
    s = np.arange(6.).reshape(2, 3)
    cases = [
        (dict(), np.float64, np.float32),
        (dict(beta=0.5, alpha=2), np.float32, np.float32),
        (dict(beta=0), np.float32, np.float32),
        (dict(beta=2, alpha=3), np.int64, np.int32),
    ]
    for kw, sd, vd in cases:
        args = (s.astype(sd), np.array([1, -2], vd), np.array([3, 4, 5], vd))
        got = P.addr(*map(P.from_numpy, args), **kw)
        ref = torch.addr(*map(torch.from_numpy, args), **kw)
        assert str(got.dtype).split(".")[1] == str(ref.dtype).split(".")[1]
        np.testing.assert_allclose(got.numpy(), ref.numpy())
    # a broadcast self, 0-d self that promotes as a dimensioned tensor, nan ignored at beta=0
    got = P.addr(P.tensor(1., dtype=P.float64), P.tensor([1., 2.]), P.tensor([1., 1., 1.]))
    assert got.dtype is P.float64 and got.tolist() == [[2.0] * 3, [3.0] * 3]
    got = P.addr(P.full((2, 3), float("nan")), P.tensor([1., 2.]), P.tensor([1., 1., 1.]), beta=0)
    assert got.tolist() == [[1.0] * 3, [2.0] * 3]
    bools = (P.ones(2, 3, dtype=P.bool), P.tensor([True, False]), P.tensor([True, True, False]))
    assert P.addr(*bools).tolist() == [[True] * 3] * 2
    assert P.addr(*bools, beta=False).tolist() == [[True, True, False], [False] * 3]
    assert P.addr(*bools, beta=0, alpha=0).tolist() == [[False] * 3] * 2
    t = P.ones(2, 3)
    t.addr_(P.tensor([1., 2.], dtype=P.float64), P.tensor([1., 1., 1.]))
    assert t.dtype is P.float32 and t.tolist() == [[2.0] * 3, [3.0] * 3]


# --- out= ------------------------------------------------------------------------------

def test_out_forms():
    a, b = P.from_numpy(_values((2, 3), P.float32).astype(np.float32)), P.ones(3, 4)
    for fn, args in [(P.mm, (a, b)), (P.matmul, (a, b)), (P.matmul, (a, P.ones(3))), (P.mv, (a, P.ones(3))),
                     (P.bmm, (P.ones(2, 2, 3), P.ones(2, 3, 1))), (P.dot, (P.ones(3), P.ones(3))),
                     (P.vdot, (P.ones(3), P.ones(3))), (P.outer, (P.ones(3), P.ones(2))),
                     (P.linalg.matmul, (a, b))]:
        want = fn(*args)
        out = P.empty(want.shape)
        assert fn(*args, out=out) is out
        assert out.tolist() == want.tolist()


def test_threads_reach_openblas():
    from pytorchlite import _threads
    old = P.get_num_threads()
    try:
        P.set_num_threads(1)
        if _threads._openblas is not None:
            assert _threads._openblas.scipy_openblas_get_num_threads() == 1
        a = P.from_numpy(_values((64, 64), P.float32).astype(np.float32))
        one = P.mm(a, a).numpy()
        P.set_num_threads(2)
        if _threads._openblas is not None:
            assert _threads._openblas.scipy_openblas_get_num_threads() == 2
        np.testing.assert_allclose(P.mm(a, a).numpy(), one, rtol=1e-5, atol=1e-5)
    finally:
        P.set_num_threads(old)


# --- errors, word for word with PyTorch ----------------------------------------------------

def _f(M, *shape, dtype="float32"):
    return M.ones(*shape, dtype=getattr(M, dtype))


ERRORS = [
    lambda M: M.mm(_f(M, 1, 2), _f(M, 6, 64)),
    lambda M: M.mm(_f(M, 2, 3), _f(M, 3, 4, dtype="float64")),
    lambda M: M.mm(_f(M, 2, 3), _f(M, 6, 4, dtype="float64")),
    lambda M: M.mm(_f(M, 3, 2, dtype="int32"), _f(M, 2, 3, dtype="int64")),
    lambda M: M.mm(_f(M, 4), _f(M, 4, 4)),
    lambda M: M.mm(_f(M, 4, 4), _f(M, 4)),
    lambda M: M.matmul(_f(M, 2, 3), _f(M, 3, 4, dtype="float64")),
    lambda M: M.matmul(_f(M, 1, 2), _f(M, 6, 64)),
    lambda M: M.matmul(M.tensor(1.), _f(M, 4)),
    lambda M: M.matmul(_f(M, 4), M.tensor(1.)),
    lambda M: M.matmul(_f(M, 3), _f(M, 4)),
    lambda M: M.matmul(_f(M, 2, 3), _f(M, 4)),
    lambda M: M.matmul(_f(M, 3), _f(M, 4, 5)),
    lambda M: M.matmul(_f(M, 2, 2, 3), _f(M, 4)),
    lambda M: M.matmul(_f(M, 2, 4, 5), _f(M, 6, 7)),
    lambda M: M.matmul(_f(M, 3), _f(M, 2, 4, 5)),
    lambda M: M.matmul(_f(M, 2, 2, 3), _f(M, 3, 4, 5)),
    lambda M: M.matmul(_f(M, 2, 2, 3), _f(M, 2, 4, 5)),
    lambda M: M.matmul(_f(M, 3, dtype="int32"), _f(M, 3, dtype="int64")),
    lambda M: M.matmul(_f(M, 3, 3, dtype="int32"), _f(M, 3, dtype="int64")),
    lambda M: M.matmul(_f(M, 2, 3, 3, dtype="int32"), _f(M, 3, dtype="int64")),
    lambda M: M.matmul(_f(M, 2, 3, 3, dtype="int32"), _f(M, 2, 3, 3, dtype="int64")),
    lambda M: M.matmul(_f(M, 3, dtype="int32"), _f(M, 3, 3, dtype="int64")),
    lambda M: M.bmm(_f(M, 2, 3, 4), _f(M, 2, 5, 4)),
    lambda M: M.bmm(_f(M, 2, 3, 4), _f(M, 3, 4, 5)),
    lambda M: M.bmm(_f(M, 3, 4), _f(M, 3, 4, 5)),
    lambda M: M.bmm(_f(M, 2, 3, 4), _f(M, 4, 5)),
    lambda M: M.bmm(_f(M, 2, 3, 4), _f(M, 2, 4, 5, dtype="float64")),
    lambda M: M.dot(_f(M, 3), _f(M, 4)),
    lambda M: M.dot(_f(M, 3, 3), _f(M, 3, 3)),
    lambda M: M.dot(_f(M, 3), _f(M, 3, dtype="float64")),
    lambda M: M.vdot(_f(M, 3), _f(M, 3, 3)),
    lambda M: M.mv(_f(M, 3, 4), _f(M, 3)),
    lambda M: M.mv(_f(M, 3, 4), _f(M, 4, 1)),
    lambda M: M.mv(_f(M, 4), _f(M, 4)),
    lambda M: M.mv(M.tensor(1.), _f(M, 3)),
    lambda M: M.mv(_f(M, 3, 4), _f(M, 4, dtype="float64")),
    lambda M: M.addmm(_f(M, 2, 4), _f(M, 2, 3), _f(M, 3, 4, dtype="float64")),
    lambda M: M.addmm(_f(M, 2, 4, dtype="float64"), _f(M, 2, 3), _f(M, 3, 4)),
    lambda M: M.addmm(_f(M, 2, 4), _f(M, 2, 3), _f(M, 6, 4)),
    lambda M: M.addmm(_f(M, 5), _f(M, 2, 3), _f(M, 3, 4)),
    lambda M: M.addmm(_f(M, 3, 4), _f(M, 2, 3), _f(M, 3, 4)),
    lambda M: M.addmm(_f(M, 2, 2, 4), _f(M, 2, 3), _f(M, 3, 4)),
    lambda M: M.addmm(_f(M, 4), _f(M, 3), _f(M, 3, 4)),
    lambda M: M.addmm(_f(M, 4), _f(M, 2, 3), _f(M, 3)),
    lambda M: M.baddbmm(_f(M, 2, 1, 4), _f(M, 2, 2, 3), _f(M, 2, 3, 4, dtype="float64")),
    lambda M: M.baddbmm(_f(M, 2, 1, 4, dtype="float64"), _f(M, 2, 2, 3), _f(M, 2, 3, 4)),
    lambda M: M.baddbmm(_f(M, 3, 1, 4), _f(M, 2, 2, 3), _f(M, 2, 3, 4)),
    lambda M: M.baddbmm(_f(M, 2, 1, 4), _f(M, 2, 2, 3), _f(M, 2, 4, 4)),
    lambda M: M.baddbmm(_f(M, 2, 1, 4), _f(M, 2, 2, 3), _f(M, 3, 4)),
    lambda M: M.baddbmm(_f(M, 2, 1, 4), _f(M, 2, 3), _f(M, 2, 3, 4)),
    lambda M: M.addbmm(_f(M, 2, 4), _f(M, 2, 2, 3), _f(M, 3, 3, 4)),
    lambda M: M.addbmm(_f(M, 2, 4), _f(M, 2, 2, 3), _f(M, 2, 4, 4)),
    lambda M: M.addbmm(_f(M, 2, 4), _f(M, 2, 2, 3), _f(M, 2, 3, 4, dtype="float64")),
    lambda M: M.addbmm(_f(M, 2, 4, dtype="float64"), _f(M, 2, 2, 3), _f(M, 2, 3, 4)),
    lambda M: M.addbmm(_f(M, 2, 4), _f(M, 2, 3), _f(M, 2, 3, 4)),
    lambda M: M.addbmm(_f(M, 2, 4), _f(M, 2, 2, 3), _f(M, 3, 4)),
    lambda M: M.addbmm(_f(M, 3, 5), _f(M, 2, 2, 3), _f(M, 2, 3, 4)),
    lambda M: M.addmv(_f(M, 2), _f(M, 3, 4), _f(M, 4)),
    lambda M: M.addmv(_f(M, 3, 1), _f(M, 3, 4), _f(M, 4)),
    lambda M: M.addmv(_f(M, 3), _f(M, 3, 4), _f(M, 5)),
    lambda M: M.addmv(_f(M, 3), _f(M, 3, 4), _f(M, 4, dtype="float64")),
    lambda M: M.addmv(_f(M, 3, dtype="float64"), _f(M, 3, 4), _f(M, 4)),
    lambda M: M.outer(_f(M, 3, 2), _f(M, 4)),
    lambda M: M.outer(_f(M, 3), _f(M, 4, 2)),
    lambda M: M.outer(_f(M, 3), M.tensor(1.)),
    lambda M: M.addr(_f(M, 2, 4), _f(M, 3), _f(M, 4)),
    lambda M: M.addr(_f(M, 3, 4), _f(M, 3, 1), _f(M, 4)),
    lambda M: M.addr(_f(M, 3, 4), _f(M, 3), _f(M, 4), alpha=True),
    lambda M: M.addr(_f(M, 3, 4, dtype="int64"), _f(M, 3, dtype="int64"), _f(M, 4, dtype="int64"), beta=2.5),
    lambda M: M.addr(_f(M, 3, 4, dtype="int64"), _f(M, 3, dtype="int64"), _f(M, 4, dtype="int64"), beta=True),
    lambda M: M.addr(_f(M, 3, 4, dtype="bool"), _f(M, 3, dtype="bool"), _f(M, 4, dtype="bool"), alpha=2.5),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    torch = _torch()
    with pytest.raises(Exception) as ref:
        ERRORS[case](torch)
    with pytest.raises(type(ref.value)) as got:
        ERRORS[case](P)
    assert type(got.value) is type(ref.value)
    # the one intended difference: PyTorch's type names say torch.FloatTensor
    assert str(got.value).split("\n")[0].replace("pytorchlite.", "torch.") == str(ref.value).split("\n")[0]


def test_argument_type_errors_name_the_op():
    with pytest.raises(TypeError, match="mm"):
        P.mm(P.ones(2, 2), [[1.0]])
    with pytest.raises(TypeError, match="addmm"):
        P.addmm(P.ones(2, 2), P.ones(2, 2), P.ones(2, 2), beta="x")
