"""pytorchlite.linalg (LAPACK-backed factorizations), einsum, tensordot, kron, trace and the
norms, against NumPy (float64) and PyTorch: values, shapes, dtypes, strides of results,
batched / non-contiguous / empty inputs, and PyTorch's errors word for word.
Gradients are checked in tests/autograd/test_gradcheck_ops.py (SAMPLES)."""

import numpy as np
import pytest

import pytorchlite as P

from parity import HAVE_TORCH, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped (NumPy checks run)


def oracle(with_torch, with_numpy):
    """PyTorch's answer where it is installed, else NumPy's (both callables)."""
    return with_torch() if HAVE_TORCH else with_numpy()

RNG = np.random.default_rng(7)
DTYPES = [("float32", 1e-4), ("float64", 1e-10)]


def mk(a, dtype="float64", layout="c"):
    """A pytorchlite tensor with a's values: contiguous ('c'), transposed in memory ('t') or
    step-sliced ('s')."""
    dt = getattr(P, dtype)
    if layout == "t":
        return P.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dt).transpose(-1, -2)
    if layout == "s":
        wide = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,))
        wide[..., ::2] = a
        return P.tensor(wide, dtype=dt)[..., ::2]
    return P.tensor(a, dtype=dt)


def tt(x):
    return torch.tensor(np.asarray(x.numpy()))


def close(got, want, tol):
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got, dtype=np.float64)
    want = np.asarray(want.numpy() if isinstance(want, torch.Tensor) else want, dtype=np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got, want, rtol=tol * 10, atol=tol * 10)


def well(shape):
    a = RNG.standard_normal(shape)
    return a + 4 * np.eye(shape[-1]) if shape[-1] == shape[-2] else a


def spd(shape):
    a = RNG.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + np.eye(shape[-1])


SHAPES = [(3, 3), (2, 4, 4), (2, 1, 3, 3)]
LAYOUTS = ["c", "t", "s"]


# --- inv / det / slogdet / solve -----------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_inv_det_slogdet(dtype, tol, shape, layout):
    a = well(shape)
    x = mk(a, dtype, layout)
    inv = P.linalg.inv(x)
    close(inv, np.linalg.inv(a), tol)
    assert inv.dtype == x.dtype
    if HAVE_TORCH:
        assert inv.stride() == torch.linalg.inv(tt(x)).stride()
    close(P.linalg.det(x), np.linalg.det(a), tol)
    s, la = np.linalg.slogdet(a)
    r = P.linalg.slogdet(x)
    close(r.sign, s, tol)
    close(r.logabsdet, la, tol)
    close(x.det(), np.linalg.det(a), tol)
    close(x.inverse(), np.linalg.inv(a), tol)
    s_ = spd(shape)
    close(P.logdet(mk(s_, dtype)), np.log(np.linalg.det(s_)), tol * 10)


def test_det_singular_and_empty():
    z = P.tensor([[1., 2.], [2., 4.]])
    assert P.linalg.det(z).item() == 0
    r = P.linalg.slogdet(z)
    assert r.sign.item() == 0 and r.logabsdet.item() == float("-inf")
    assert P.linalg.det(P.ones(2, 0, 0)).tolist() == [1.0, 1.0]
    assert P.linalg.inv(P.ones(0, 3, 3)).shape == (0, 3, 3)
    assert P.linalg.det(P.ones(0, 2, 2)).shape == (0,)
    assert P.linalg.inv(P.ones(0, 0)).shape == (0, 0)


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_solve(dtype, tol):
    a = well((2, 3, 3))
    b = RNG.standard_normal((2, 3, 4))
    for la in LAYOUTS:
        close(P.linalg.solve(mk(a, dtype, la), mk(b, dtype, la)), np.linalg.solve(a, b), tol)
    # vector right-hand sides, broadcasting of batches, left=False
    v = RNG.standard_normal((2, 3))
    close(P.linalg.solve(mk(a, dtype), mk(v, dtype)), np.linalg.solve(a, v[..., None])[..., 0], tol)
    v1 = RNG.standard_normal(3)
    close(P.linalg.solve(mk(a, dtype), mk(v1, dtype)),
          oracle(lambda: torch.linalg.solve(torch.tensor(a), torch.tensor(v1)), lambda: np.linalg.solve(a, v1)), tol)
    bb = RNG.standard_normal((5, 1, 3, 2))
    close(P.linalg.solve(mk(a, dtype), mk(bb, dtype)),
          oracle(lambda: torch.linalg.solve(torch.tensor(a), torch.tensor(bb)), lambda: np.linalg.solve(a, bb)), tol)
    bl = RNG.standard_normal((4, 3))
    close(P.linalg.solve(mk(a, dtype), mk(bl, dtype), left=False),
          oracle(lambda: torch.linalg.solve(torch.tensor(a), torch.tensor(bl), left=False),
                 lambda: np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), bl.T), -1, -2)), tol)
    assert P.linalg.solve(P.eye(3).expand(0, 3, 3), P.ones(3, 2)).shape == (0, 3, 2)


# --- factorizations ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cholesky(dtype, tol, layout):
    a = spd((2, 4, 4))
    L = P.linalg.cholesky(mk(a, dtype, layout))
    close(L, np.linalg.cholesky(a), tol)
    close(P.linalg.cholesky(mk(a, dtype, layout), upper=True), np.swapaxes(np.linalg.cholesky(a), -1, -2), tol)
    if HAVE_TORCH:
        assert L.stride() == torch.linalg.cholesky(torch.tensor(a)).stride()


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 6, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, tol, shape, mode):
    a = RNG.standard_normal(shape)
    q, r = P.linalg.qr(mk(a, dtype, "t"), mode)
    # (NumPy's qr is LAPACK's geqrf too: the same signs)
    tq, tr = oracle(lambda: torch.linalg.qr(torch.tensor(a), mode),
                    lambda: (np.empty(0), np.linalg.qr(a, "r")) if mode == "r" else np.linalg.qr(a, mode))
    assert tuple(q.shape) == tuple(tq.shape) and tuple(r.shape) == tuple(tr.shape)
    # LAPACK's signs: the same routine as PyTorch's, so the factors agree
    close(r, tr, tol)
    if mode != "r":
        close(q, tq, tol)
        close(q.numpy() @ r.numpy(), a, tol)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 3, 6, 2)])
@pytest.mark.parametrize("full", [True, False])
def test_svd(dtype, tol, shape, full):
    a = RNG.standard_normal(shape)
    u, s, vh = P.linalg.svd(mk(a, dtype, "s"), full_matrices=full)
    tu, ts, tvh = oracle(lambda: torch.linalg.svd(torch.tensor(a), full_matrices=full),
                         lambda: np.linalg.svd(a, full_matrices=full))
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    close(s, np.linalg.svd(a, compute_uv=False), tol)
    k = s.shape[-1]
    rec = (u.numpy()[..., :k] * s.numpy()[..., None, :]) @ vh.numpy()[..., :k, :]
    close(rec, a, tol)
    close(P.linalg.svdvals(mk(a, dtype)), ts, tol)
    if HAVE_TORCH:
        assert u.stride() == tu.stride()


def test_svd_empty():
    u, s, vh = P.linalg.svd(P.ones(2, 0, 3))
    tu, ts, tvh = torch.linalg.svd(torch.ones(2, 0, 3))
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    close(vh, tvh, 1e-7)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(dtype, tol, uplo):
    a = RNG.standard_normal((2, 4, 4))
    w, v = P.linalg.eigh(mk(a, dtype, "t"), UPLO=uplo)
    nw, nv = np.linalg.eigh(a, UPLO=uplo)
    close(w, nw, tol)
    # eigenvectors up to sign
    close(np.abs(np.einsum("...ij,...ij->...j", v.numpy(), nv)), np.ones((2, 4)), tol)
    close(P.linalg.eigvalsh(mk(a, dtype), UPLO=uplo), nw, tol)
    assert P.linalg.eigh(P.ones(0, 0)).eigenvectors.shape == (0, 0)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("driver", [None, "gelsy", "gelsd", "gels", "gelss"])
@pytest.mark.parametrize("shape", [((6, 3), (6, 2)), ((2, 6, 3), (2, 6, 2)), ((3, 5), (3, 2)), ((2, 6, 3), (2, 6))])
def test_lstsq(dtype, tol, driver, shape):
    sa, sb = shape
    if driver == "gels" and sa[-2] < sa[-1]:
        pytest.skip("gels needs full column rank")
    a, b = RNG.standard_normal(sa), RNG.standard_normal(sb)
    r = P.linalg.lstsq(mk(a, dtype, "t"), mk(b, dtype), driver=driver)
    t = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    close(r.solution, t.solution, tol)
    for f in ("residuals", "rank", "singular_values"):
        assert tuple(getattr(r, f).shape) == tuple(getattr(t, f).shape), f
        close(getattr(r, f), getattr(t, f), tol)
    assert r.rank.dtype == P.int64


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gels", "gelss"])
@pytest.mark.parametrize("shape", [((4, 0), (4, 2)), ((0, 3), (0, 2)), ((0, 4, 3), (1, 4, 2)), ((4, 3), (4, 0))])
def test_lstsq_empty(driver, shape):
    """Empty problems: the solution is zeros, the residuals of an m x 0 system are B's
    squared norms, rank 0, as in PyTorch (gelsd without right-hand sides, where PyTorch
    fails an internal assert, is left out)."""
    sa, sb = shape
    if driver in ("gelsd", "gelss") and sb[-1] == 0:
        return
    b = RNG.standard_normal(sb)
    r = P.linalg.lstsq(P.ones(sa, dtype=P.float64), P.tensor(b), driver=driver)
    t = torch.linalg.lstsq(torch.ones(sa, dtype=torch.float64), torch.tensor(b), driver=driver)
    for f in ("solution", "residuals", "rank", "singular_values"):
        got, want = getattr(r, f), getattr(t, f)
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride(), f
        close(got, want, 1e-12)


def test_solve_without_right_hand_sides_still_factors():
    """A singular A is an error even when B has no columns, as in PyTorch."""
    _same_error(lambda: P.linalg.solve(P.zeros(2, 2), P.zeros(2, 0)),
                lambda: torch.linalg.solve(torch.zeros(2, 2), torch.zeros(2, 0)))
    assert P.linalg.solve(P.eye(2), P.zeros(3, 2, 0)).shape == (3, 2, 0)


# --- errors --------------------------------------------------------------------------------

def _same_error(ours, theirs):
    with pytest.raises(Exception) as e_t:
        theirs()
    with pytest.raises(Exception) as e_o:
        ours()
    assert str(e_o.value) == str(e_t.value)
    if isinstance(e_t.value, torch.linalg.LinAlgError):
        assert isinstance(e_o.value, P.linalg.LinAlgError) and isinstance(e_o.value, RuntimeError)
    else:
        assert type(e_o.value).__name__ == type(e_t.value).__name__


ERRORS = [
    ("inv", lambda L, T: L.linalg.inv(T.tensor([[1., 2.], [2., 4.]]))),
    ("inv batched", lambda L, T: L.linalg.inv(T.tensor([[[1., 0.], [0., 1.]], [[1., 2.], [2., 4.]]]))),
    ("inv nonsquare", lambda L, T: L.linalg.inv(T.ones(2, 3))),
    ("inv 1d", lambda L, T: L.linalg.inv(T.ones(3))),
    ("inv int", lambda L, T: L.linalg.inv(T.ones(2, 2, dtype=T.int64))),
    ("inv half", lambda L, T: L.linalg.inv(T.ones(2, 2, dtype=T.float16))),
    ("det int", lambda L, T: L.linalg.det(T.ones(2, 2, dtype=T.int32))),
    ("det half", lambda L, T: L.linalg.det(T.ones(2, 2, dtype=T.float16))),
    ("det nonsquare", lambda L, T: L.linalg.det(T.ones(2, 3))),
    ("solve singular", lambda L, T: L.linalg.solve(T.tensor([[1., 2.], [2., 4.]]), T.ones(2))),
    ("solve shapes", lambda L, T: L.linalg.solve(T.eye(2), T.ones(3, 3))),
    ("solve shapes right", lambda L, T: L.linalg.solve(T.eye(2), T.ones(2, 3), left=False)),
    ("solve dtypes", lambda L, T: L.linalg.solve(T.eye(2), T.ones(2, dtype=T.float64))),
    ("solve int", lambda L, T: L.linalg.solve(T.eye(2, dtype=T.int64), T.ones(2, dtype=T.int64))),
    ("solve batch", lambda L, T: L.linalg.solve(T.eye(2).expand(3, 2, 2), T.ones(2, 2, 5))),
    ("cholesky not pd", lambda L, T: L.linalg.cholesky(-T.eye(3))),
    ("cholesky int", lambda L, T: L.linalg.cholesky(T.ones(2, 2, dtype=T.int32))),
    ("qr mode", lambda L, T: L.linalg.qr(T.ones(2, 2), mode="foo")),
    ("qr 1d", lambda L, T: L.linalg.qr(T.ones(2))),
    ("svd int", lambda L, T: L.linalg.svd(T.ones(2, 2, dtype=T.int32))),
    ("svd nan", lambda L, T: L.linalg.svd(T.full((2, 2), float("nan")))),
    ("eigh uplo", lambda L, T: L.linalg.eigh(T.ones(2, 2), UPLO="X")),
    ("eigh int", lambda L, T: L.linalg.eigh(T.ones(2, 2, dtype=T.int32))),
    ("eigh nonsquare", lambda L, T: L.linalg.eigh(T.ones(2, 3))),
    ("lstsq rows", lambda L, T: L.linalg.lstsq(T.ones(3, 2), T.ones(2, 2))),
    ("lstsq int", lambda L, T: L.linalg.lstsq(T.ones(3, 2, dtype=T.int32), T.ones(3, 2, dtype=T.int32))),
    ("lstsq driver", lambda L, T: L.linalg.lstsq(T.ones(3, 2), T.ones(3, 2), driver="foo")),
    ("lstsq dtypes", lambda L, T: L.linalg.lstsq(T.ones(3, 2), T.ones(3, 2, dtype=T.float64))),
    ("einsum operands", lambda L, T: L.einsum("ij,jk", T.ones(2, 3))),
    ("einsum no operand", lambda L, T: L.einsum("i")),
    ("einsum dtypes", lambda L, T: L.einsum("ij,jk->ik", T.ones(2, 3), T.ones(3, 4, dtype=T.float64))),
    ("einsum bool", lambda L, T: L.einsum("i,i", T.ones(3, dtype=T.bool), T.ones(3, dtype=T.bool))),
    ("einsum dots", lambda L, T: L.einsum("..i,i", T.ones(2, 3), T.ones(3))),
    ("einsum size", lambda L, T: L.einsum("ij,jk->ik", T.ones(2, 3), T.ones(4, 4))),
    ("einsum ndim", lambda L, T: L.einsum("ijk,jk->ik", T.ones(2, 3), T.ones(3, 4))),
    ("einsum out", lambda L, T: L.einsum("ij,jk->iz", T.ones(2, 3), T.ones(3, 4))),
    ("einsum out twice", lambda L, T: L.einsum("ij,jk->ii", T.ones(2, 3), T.ones(3, 4))),
    ("einsum subscript", lambda L, T: L.einsum("i1", T.ones(2, 3))),
    ("einsum diag", lambda L, T: L.einsum("ii", T.ones(2, 3))),
    ("einsum ellipsis", lambda L, T: L.einsum("...ij,...jk", T.ones(5, 2, 3), T.ones(4, 3, 4))),
    ("tensordot dims", lambda L, T: L.tensordot(T.ones(2, 3), T.ones(3, 4), dims=-1)),
    ("tensordot sizes", lambda L, T: L.tensordot(T.ones(2, 3), T.ones(3, 4), dims=([1], [1]))),
    ("trace 3d", lambda L, T: L.trace(T.ones(2, 2, 2))),
    ("matrix_norm 1d", lambda L, T: L.linalg.matrix_norm(T.ones(3))),
    ("matrix_norm ord", lambda L, T: L.linalg.matrix_norm(T.ones(3, 3), 3)),
    ("matrix_norm int", lambda L, T: L.linalg.matrix_norm(T.ones(3, 3, dtype=T.int64))),
    ("vector_norm int", lambda L, T: L.linalg.vector_norm(T.ones(3, dtype=T.int64))),
    ("norm 3d", lambda L, T: L.linalg.norm(T.ones(3, 3, 3), "fro")),
]


@pytest.mark.parametrize("name,call", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(name, call):
    _same_error(lambda: call(P, P), lambda: call(torch, torch))


# --- einsum, tensordot, kron, trace --------------------------------------------------------

EINSUM = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]), ("bij,bjk", [(2, 3, 4), (2, 4, 5)]), ("ii", [(3, 3)]),
    ("ii->i", [(3, 3)]), ("bii->bi", [(2, 3, 3)]), ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("ij,kl->ijkl", [(2, 3), (4, 2)]), ("bij->", [(2, 3, 4)]), ("i,i->", [(4,), (4,)]),
    ("bij,bkj->bik", [(2, 3, 4), (2, 5, 4)]), ("iij->j", [(3, 3, 2)]), ("ab,bc,cd->ad", [(2, 3), (3, 4), (4, 2)]),
    ("i,j", [(3,), (4,)]), ("ba,ab", [(2, 3), (3, 2)]), ("...,...", [(2, 3), (3,)]), ("ij->ji", [(2, 3)]),
    ("i,i->", [(1,), (3,)]), ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("ijk,jil->kl", [(2, 3, 4), (3, 2, 5)]),
    (" i j , j k -> i k ", [(2, 3), (3, 4)]), ("a,b,c->abc", [(2,), (3,), (2,)]), ("", [()]),
]


@pytest.mark.parametrize("eq,shapes", EINSUM, ids=[e[0] or "scalar" for e in EINSUM])
@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_einsum(eq, shapes, dtype, tol):
    arrs = [RNG.standard_normal(s) for s in shapes]
    xs = [mk(a, dtype, "t" if a.ndim >= 2 else "c") for a in arrs]
    got = P.einsum(eq, *xs)
    want = oracle(lambda: torch.einsum(eq, *[tt(x) for x in xs]),
                  lambda: np.einsum(eq.replace(" ", ""), *[x.numpy().astype(np.float64) for x in xs]))
    close(got, want, tol)
    assert got.dtype == xs[0].dtype
    close(P.einsum(eq, xs), want, tol)     # the list form


def test_einsum_integers_and_empty():
    a = P.arange(6).view(2, 3)
    assert P.einsum("ij,kj->ik", a, a).tolist() == (torch.arange(6).view(2, 3) @ torch.arange(6).view(2, 3).T).tolist()
    assert P.einsum("bij,bjk->bik", P.ones(0, 2, 3), P.ones(0, 3, 4)).shape == (0, 2, 4)
    assert P.einsum("ij,jk->ik", P.ones(2, 0), P.ones(0, 4)).tolist() == [[0.0] * 4] * 2


def test_tensordot_kron_trace():
    a, b = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 4, 5))
    close(P.tensordot(mk(a), mk(b), 2), np.tensordot(a, b, 2), 1e-12)
    close(P.tensordot(mk(a), mk(b), dims=([1, 2], [0, 1])), np.tensordot(a, b, ([1, 2], [0, 1])), 1e-12)
    close(P.tensordot(mk(a), mk(b), dims=0), np.tensordot(a, b, 0), 1e-12)
    x, y = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 2, 2))
    close(P.kron(mk(x), mk(y)), np.kron(x, y), 1e-12)
    assert P.kron(P.tensor([1, 2]), P.tensor([1., 10.])).dtype == P.float32
    close(mk(x[:, :2], layout="t").trace(), np.trace(x[:, :2]), 1e-12)
    assert P.trace(P.ones(2, 3, dtype=P.int32)).dtype == P.int64


# --- norms -----------------------------------------------------------------------------------

ORDS = ["fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("ord", ORDS, ids=[str(o) for o in ORDS])
@pytest.mark.parametrize("keepdim", [False, True])
def test_matrix_norm(dtype, tol, ord, keepdim):
    a = RNG.standard_normal((2, 3, 4))
    x = mk(a, dtype, "s")
    close(P.linalg.matrix_norm(x, ord, keepdim=keepdim),
          oracle(lambda: torch.linalg.matrix_norm(tt(x), ord, keepdim=keepdim),
                 lambda: np.linalg.norm(a, ord, axis=(-2, -1), keepdims=keepdim)), tol)
    close(P.linalg.matrix_norm(x, ord, dim=(0, 2), keepdim=keepdim),
          oracle(lambda: torch.linalg.matrix_norm(tt(x), ord, dim=(0, 2), keepdim=keepdim),
                 lambda: np.linalg.norm(a, ord, axis=(0, 2), keepdims=keepdim)), tol)
    close(P.linalg.norm(x[0], ord), oracle(lambda: torch.linalg.norm(tt(x[0]), ord), lambda: np.linalg.norm(a[0], ord)),
          tol)
    close(P.linalg.norm(x, ord, dim=(1, 2)), np.linalg.norm(a, ord, axis=(1, 2)), tol)


@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, float("inf"), -float("inf")])
def test_vector_norm(ord):
    a = RNG.standard_normal((3, 4))
    x = mk(a, "float32", "t")
    close(P.linalg.vector_norm(x, ord), oracle(lambda: torch.linalg.vector_norm(tt(x), ord),
                                               lambda: np.linalg.norm(a.ravel(), ord)), 1e-5)
    close(P.linalg.vector_norm(x, ord, dim=1, keepdim=True),
          oracle(lambda: torch.linalg.vector_norm(tt(x), ord, dim=1, keepdim=True),
                 lambda: np.linalg.norm(a, ord, axis=1, keepdims=True)), 1e-5)
    close(P.linalg.norm(x[0], ord), np.linalg.norm(a[0], ord), 1e-5)
    assert P.linalg.vector_norm(x, dtype=P.float64).dtype == P.float64
    close(P.linalg.norm(x), np.linalg.norm(a), 1e-5)
    close(P.linalg.norm(x, dim=(0, 1), keepdim=True),
          oracle(lambda: torch.linalg.norm(tt(x), dim=(0, 1), keepdim=True),
                 lambda: np.linalg.norm(a, axis=(0, 1), keepdims=True)), 1e-5)


# --- cross, dist, cdist --------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_cross_dist_cdist(dtype, tol):
    a, b = RNG.standard_normal((4, 3)), RNG.standard_normal((1, 3))
    close(P.linalg.cross(mk(a, dtype), mk(b, dtype)), np.cross(a, b), tol)
    close(P.cross(mk(a.T.copy(), dtype, "t"), mk(a.T.copy(), dtype), dim=0), np.zeros((3, 4)), tol)
    assert P.linalg.cross(P.tensor([1, 0, 0]), P.tensor([0, 1, 0])).tolist() == [0, 0, 1]
    x, y = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((4, 3))
    for p in (2.0, 1.0, 0.0, 3.0, float("inf")):
        close(P.cdist(mk(x, dtype), mk(y, dtype), p=p), torch.cdist(torch.tensor(x), torch.tensor(y), p=p), tol)
        close(P.dist(mk(x, dtype), mk(y[:1], dtype), p), torch.dist(torch.tensor(x), torch.tensor(y[:1]), p), tol)
    assert P.dist(P.ones(3), P.ones(3, dtype=P.float64)).dtype == P.float64


CROSS_ERRORS = [
    ("cross ndim", lambda L, T: L.linalg.cross(T.ones(3, 3), T.ones(3))),
    ("cross length", lambda L, T: L.linalg.cross(T.ones(3, 2), T.ones(3, 2))),
    ("cross dtype", lambda L, T: L.linalg.cross(T.ones(3, 3), T.ones(3, 3, dtype=T.float64))),
    ("cross no 3", lambda L, T: L.cross(T.ones(2, 2), T.ones(2, 2))),
    ("dist int", lambda L, T: L.dist(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64))),
    ("cdist 1d", lambda L, T: L.cdist(T.ones(3), T.ones(3))),
    ("cdist p", lambda L, T: L.cdist(T.ones(2, 3), T.ones(3, 3), p=-1)),
    ("cdist int", lambda L, T: L.cdist(T.ones(2, 3, dtype=T.int64), T.ones(3, 3, dtype=T.int64))),
    ("cdist cols", lambda L, T: L.cdist(T.ones(3, 2), T.ones(4, 3))),
    ("cdist batch", lambda L, T: L.cdist(T.ones(2, 3, 3), T.ones(3, 4, 3))),
]


@pytest.mark.filterwarnings("ignore:Using torch.cross without")
@pytest.mark.parametrize("name,call", CROSS_ERRORS, ids=[e[0] for e in CROSS_ERRORS])
def test_cross_dist_errors(name, call):
    _same_error(lambda: call(P, P), lambda: call(torch, torch))


# --- gradients at special points, out= ------------------------------------------------------

def test_det_gradient_of_singular_matrix_is_the_cofactor_matrix():
    a = np.array([[1., 2., 3.], [2., 4., 6.], [0., 1., 1.]])
    x = P.tensor(a, requires_grad=True)
    P.linalg.det(x).backward()
    cof = np.array([[np.linalg.det(np.delete(np.delete(a, i, 0), j, 1)) * (-1) ** (i + j) for j in range(3)]
                    for i in range(3)])
    close(x.grad, cof, 1e-12)
    y = P.tensor(well((2, 3, 3)), requires_grad=True)
    P.linalg.det(y).sum().backward()
    ty = torch.tensor(y.detach().numpy(), requires_grad=True)
    torch.linalg.det(ty).sum().backward()
    close(y.grad, ty.grad, 1e-12)


def test_out_forms():
    a = well((3, 3))
    o = P.empty(3, 3, dtype=P.float64)
    assert P.linalg.inv(mk(a), out=o) is o
    close(o, np.linalg.inv(a), 1e-12)
    o = P.empty(0, dtype=P.float64)
    P.linalg.det(mk(a), out=o)
    close(o, np.linalg.det(a), 1e-12)
    o = P.empty(3, dtype=P.float64)
    P.linalg.solve(mk(a), mk(np.ones(3)), out=o)
    close(o, np.linalg.solve(a, np.ones(3)), 1e-12)
    s = spd((3, 3))
    o = P.empty(3, 3, dtype=P.float64)
    P.linalg.cholesky(mk(s), out=o)
    close(o, np.linalg.cholesky(s), 1e-12)
    o = P.empty((), dtype=P.float64)
    P.linalg.vector_norm(mk(a), out=o)
    close(o, np.linalg.norm(a), 1e-12)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        P.linalg.inv(P.eye(2, requires_grad=True), out=P.empty(2, 2))


# --- pinv, matrix_rank, multi_dot, matrix_power, solve_triangular, _ex, vecdot, cond, matrix_exp

def _ref(x):
    """The float64 NumPy array of a pytorchlite tensor (for the NumPy oracle)."""
    return np.asarray(x.numpy(), dtype=np.float64)


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (2, 4, 4), (2, 1, 3, 2)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_pinv(dtype, tol, shape, layout):
    a = RNG.standard_normal(shape)
    x = mk(a, dtype, layout)
    got = P.linalg.pinv(x)
    close(got, np.linalg.pinv(a), tol * 10)
    assert got.dtype == x.dtype and got.shape == np.linalg.pinv(a).shape
    close(P.pinverse(x), oracle(lambda: torch.pinverse(tt(x)), lambda: np.linalg.pinv(a)), tol * 10)
    close(x.pinverse(), np.linalg.pinv(a), tol * 10)
    # tolerances: a matrix with known singular values
    u, _ = np.linalg.qr(RNG.standard_normal((4, 4)))
    d = u @ np.diag([4.0, 1.0, 0.3, 0.0]) @ u.T
    xd = mk(d, dtype, layout)
    for kw in ({}, {"atol": 0.5}, {"rtol": 0.1}, {"atol": 0.2, "rtol": 0.2}, {"atol": 0.0}):
        if not HAVE_TORCH:
            continue        # (PyTorch's atol/rtol pair has no NumPy twin; the default is checked above)
        close(P.linalg.pinv(xd, **kw), torch.linalg.pinv(tt(xd), **kw), tol * 1e3)
        close(P.linalg.pinv(xd, hermitian=True, **kw), torch.linalg.pinv(tt(xd), hermitian=True, **kw), tol * 1e3)
    # the deprecated rcond: relative to the largest singular value, as NumPy's
    close(P.linalg.pinv(xd, 0.1), oracle(lambda: torch.linalg.pinv(tt(xd), 0.1), lambda: np.linalg.pinv(d, rcond=0.1)),
          tol * 1e3)
    close(P.linalg.pinv(xd, rcond=0.1), oracle(lambda: torch.linalg.pinv(tt(xd), rcond=0.1),
                                               lambda: np.linalg.pinv(d, rcond=0.1)), tol * 1e3)


def test_pinv_tensor_tolerances_and_empty():
    u, _ = np.linalg.qr(RNG.standard_normal((3, 3)))
    d = np.stack([u @ np.diag([2.0, 1.0, 0.1]) @ u.T] * 2)
    atol = np.array([0.5, 0.05])
    got = P.linalg.pinv(mk(d), atol=P.tensor(atol))
    close(got, torch.linalg.pinv(torch.tensor(d), atol=torch.tensor(atol)), 1e-10)
    assert P.linalg.matrix_rank(mk(d), atol=P.tensor(atol)).tolist() == [2, 3]
    assert P.linalg.pinv(P.ones(2, 0, 3)).shape == (2, 3, 0)
    assert P.linalg.pinv(P.ones(0, 3)).shape == (3, 0)
    o = P.empty(0)
    assert P.linalg.pinv(P.eye(2) * 2, out=o) is o and o.tolist() == [[0.5, 0.0], [0.0, 0.5]]


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_matrix_rank(dtype, tol):
    a = RNG.standard_normal((3, 5, 2)) @ RNG.standard_normal((3, 2, 4))     # rank 2
    a[1, :, 0] = 0
    for layout in LAYOUTS:
        x = mk(a, dtype, layout)
        r = P.linalg.matrix_rank(x)
        assert r.dtype == P.int64 and r.tolist() == np.linalg.matrix_rank(a).tolist()
    s = a[..., :4, :] @ np.swapaxes(a[..., :4, :], -1, -2)
    assert P.linalg.matrix_rank(mk(s, dtype), hermitian=True).tolist() == \
        torch.linalg.matrix_rank(torch.tensor(s), hermitian=True).tolist()
    e = mk(np.diag([1.0, 0.5, 0.1]), dtype)
    for args, kw in (((), {"atol": 0.2}), ((), {"rtol": 0.3}), ((0.2,), {}), ((), {"atol": 0.2, "rtol": 0.9})):
        assert P.linalg.matrix_rank(e, *args, **kw).item() == torch.linalg.matrix_rank(tt(e), *args, **kw).item()
    assert P.linalg.matrix_rank(P.ones(2, 0, 3)).tolist() == [0, 0]


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_multi_dot(dtype, tol):
    for shapes in ([(3, 4), (4, 5)], [(4,), (4, 5)], [(3, 4), (4,)], [(4,), (4,)], [(2, 30), (30, 3), (3, 40)],
                   [(40, 3), (3, 30), (30, 2)], [(5,), (5, 2), (2, 7), (7, 3), (3, 4), (4,)],
                   [(10, 30), (30, 5), (5, 60), (60, 2), (2, 8)]):
        arrs = [RNG.standard_normal(s) for s in shapes]
        xs = [mk(a, dtype, "t" if a.ndim == 2 and i % 2 else "c") for i, a in enumerate(arrs)]
        got = P.linalg.multi_dot(xs)
        close(got, np.linalg.multi_dot(arrs), tol * 10)
        assert got.shape == torch.linalg.multi_dot([tt(x) for x in xs]).shape and got.dtype == xs[0].dtype
    assert P.linalg.multi_dot((P.ones(0, 3), P.ones(3, 2), P.ones(2))).shape == (0,)
    ints = [P.arange(6).reshape(2, 3), P.arange(6).reshape(3, 2), P.arange(2)]
    assert P.linalg.multi_dot(ints).tolist() == torch.linalg.multi_dot([tt(i) for i in ints]).tolist()


def test_multi_dot_order_is_the_cheapest():
    """(10x100)(100x5)(5x50): (AB)C costs 7500 multiplications, A(BC) 75000; reversed and
    transposed, A(BC) is the cheap one. The order shows in the graph: which operand of the
    last product is itself a product."""
    a, b, c = (P.randn(10, 100, requires_grad=True), P.randn(100, 5, requires_grad=True),
               P.randn(5, 50, requires_grad=True))

    def last_product_operands(r):
        mm = r.grad_fn
        while type(mm).__name__ != "MmBackward0":
            mm = mm.next_functions[0][0]
        return [type(n).__name__ for n, _ in mm.next_functions]
    assert last_product_operands(P.linalg.multi_dot([a, b, c]))[0] == "MmBackward0"
    assert last_product_operands(P.linalg.multi_dot([c.mT, b.mT, a.mT]))[1] == "MmBackward0"
    chain = [P.randn(*s, requires_grad=True) for s in [(2, 30), (30, 40), (40, 3), (3, 50)]]
    # optimal: (A (B C)) D, as NumPy's multi_dot chooses
    ops = last_product_operands(P.linalg.multi_dot(chain))
    assert ops == ["MmBackward0", "AccumulateGrad"]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 2, 3, 6, 13, -1, -2, -5])
def test_matrix_power(dtype, tol, n):
    a = RNG.standard_normal((2, 3, 3)) / 2 + np.eye(3)
    for layout in LAYOUTS:
        got = P.linalg.matrix_power(mk(a, dtype, layout), n)
        close(got, np.linalg.matrix_power(a, n), tol * 100)
        assert got.dtype == getattr(P, dtype) and got.shape == (2, 3, 3)
    close(mk(a, dtype).matrix_power(n), np.linalg.matrix_power(a, n), tol * 100)
    close(P.matrix_power(mk(a[0], dtype), n), np.linalg.matrix_power(a[0], n), tol * 100)


def test_matrix_power_integers_and_zero_power_gradient():
    m = P.tensor([[1, 1], [1, 0]])
    assert P.linalg.matrix_power(m, 10).tolist() == [[89, 55], [55, 34]]
    assert P.linalg.matrix_power(m, 0).tolist() == [[1, 0], [0, 1]] and P.linalg.matrix_power(m, 0).dtype == P.int64
    x = P.randn(3, 3, dtype=P.float64, requires_grad=True)
    P.linalg.matrix_power(x, 0).sum().backward()       # in the graph, with a zero gradient (as PyTorch)
    assert x.grad.tolist() == [[0.0] * 3] * 3


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(dtype, tol, upper, left, unit):
    tri = np.triu if upper else np.tril
    a = RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)     # the other triangle must be ignored
    a_tri = tri(a)
    if unit:
        a_tri = a_tri * (1 - np.eye(4)) + np.eye(4)        # the diagonal is taken as ones
    b = RNG.standard_normal((2, 4, 3) if left else (2, 3, 4))
    want = np.linalg.solve(a_tri, b) if left else np.swapaxes(np.linalg.solve(np.swapaxes(a_tri, -1, -2),
                                                                                np.swapaxes(b, -1, -2)), -1, -2)
    for la in LAYOUTS:
        x = P.linalg.solve_triangular(mk(a, dtype, la), mk(b, dtype, la), upper=upper, left=left, unitriangular=unit)
        close(x, want, tol)
        assert x.dtype == mk(a, dtype).dtype
        if HAVE_TORCH:
            t = torch.linalg.solve_triangular(tt(mk(a, dtype)), tt(mk(b, dtype)), upper=upper, left=left,
                                              unitriangular=unit)
            assert x.stride() == t.stride()


def test_solve_triangular_broadcast_cast_and_empty():
    a = np.triu(RNG.standard_normal((2, 1, 3, 3))) + 3 * np.eye(3)
    b = RNG.standard_normal((4, 3, 2))
    got = P.linalg.solve_triangular(mk(a, "float32"), mk(b), upper=True)       # B is cast to A's dtype
    want = torch.linalg.solve_triangular(torch.tensor(a, dtype=torch.float32), torch.tensor(b), upper=True)
    assert got.dtype == P.float32 and got.shape == (2, 4, 3, 2) and got.stride() == want.stride()
    close(got, want, 1e-4)
    assert P.linalg.solve_triangular(P.eye(3).expand(0, 3, 3), P.ones(3, 2), upper=True).shape == (0, 3, 2)
    assert P.linalg.solve_triangular(P.eye(3), P.ones(3, 0), upper=False).shape == (3, 0)
    sing = P.linalg.solve_triangular(P.zeros(2, 2), P.ones(2, 1), upper=True)   # no error: inf/nan, like PyTorch
    assert not np.isfinite(sing.numpy()).any()
    o = P.empty(0)
    assert P.linalg.solve_triangular(P.eye(2) * 2, P.ones(2, 1), upper=True, out=o) is o and o.tolist() == [[0.5]] * 2


def test_solve_triangular_gradient_matches_torch():
    a = np.triu(RNG.standard_normal((3, 3))) + 3 * np.eye(3)
    b = RNG.standard_normal((2, 3, 2))
    x, y = P.tensor(a, requires_grad=True), P.tensor(b, requires_grad=True)
    tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (P.linalg.solve_triangular(x, y, upper=True, unitriangular=True) ** 2).sum().backward()
    (torch.linalg.solve_triangular(tx, ty, upper=True, unitriangular=True) ** 2).sum().backward()
    close(x.grad, tx.grad, 1e-12)
    close(y.grad, ty.grad, 1e-12)


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_inv_ex_cholesky_ex(dtype, tol):
    a = well((2, 3, 3))
    for la in LAYOUTS:
        r = P.linalg.inv_ex(mk(a, dtype, la))
        close(r.inverse, np.linalg.inv(a), tol)
        assert r.info.dtype == P.int32 and r.info.tolist() == [0, 0]
        s = spd((2, 3, 3))
        c = P.linalg.cholesky_ex(mk(s, dtype, la))
        close(c.L, np.linalg.cholesky(s), tol)
        close(P.linalg.cholesky_ex(mk(s, dtype, la), upper=True).L, np.swapaxes(np.linalg.cholesky(s), -1, -2), tol)
        assert c.info.dtype == P.int32 and c.info.tolist() == [0, 0]
        assert c.L.stride() == torch.linalg.cholesky_ex(torch.tensor(s)).L.stride()
    sing = np.stack([np.eye(2), np.zeros((2, 2)), [[1.0, 2.0], [2.0, 4.0]]])
    r, t = P.linalg.inv_ex(mk(sing, dtype)), torch.linalg.inv_ex(tt(mk(sing, dtype)))
    assert r.info.tolist() == t.info.tolist() == [0, 1, 2]
    close(r.inverse[0], np.eye(2), tol)
    notpd = np.stack([np.eye(3), [[1.0, 2.0, 0.0], [2.0, 1.0, 0.0], [0.0, 0.0, 1.0]], -np.eye(3)])
    for upper in (False, True):
        r, t = P.linalg.cholesky_ex(mk(notpd, dtype), upper=upper), torch.linalg.cholesky_ex(tt(mk(notpd, dtype)),
                                                                                            upper=upper)
        assert r.info.tolist() == t.info.tolist() == [0, 2, 1]
        close(r.L[:2], t.L[:2], tol)       # the partial factor, zeros in the other triangle
    e = P.linalg.inv_ex(P.ones(2, 0, 0))
    assert e.inverse.shape == (2, 0, 0) and e.info.tolist() == [0, 0]
    assert P.linalg.cholesky_ex(P.ones(0, 2, 2)).info.shape == (0,)
    assert P.linalg.inv_ex(P.eye(2)).info.shape == ()


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_vecdot(dtype, tol):
    x, y = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((3, 4))
    for la in LAYOUTS:
        close(P.linalg.vecdot(mk(x, dtype, la), mk(y, dtype, la)), np.sum(x * y, -1), tol)
        close(P.linalg.vecdot(mk(x, dtype, la), mk(y, dtype, la), dim=1), np.sum(x * y, 1), tol)
    assert P.linalg.vecdot(P.ones(3), P.ones(3)).shape == ()
    assert P.linalg.vecdot(P.ones(2, 0), P.ones(2, 0)).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("p", [None, 2, -2, 1, -1, float("inf"), -float("inf"), "fro", "nuc"])
def test_cond(dtype, tol, p):
    a = RNG.standard_normal((2, 3, 3))
    for la in LAYOUTS:
        x = mk(a, dtype, la)
        got = P.linalg.cond(x, p)
        close(got, np.linalg.cond(a, p), tol * 1e3)
        assert got.dtype == x.dtype and got.shape == (2,)
    sing = P.tensor([[[1.0, 2.0], [2.0, 4.0]], [[1.0, 0.0], [0.0, 2.0]]], dtype=getattr(P, dtype))
    if p in (1, -1, float("inf"), -float("inf"), "fro"):
        assert P.linalg.cond(sing, p).tolist()[0] == float("inf")     # singular: inf, as PyTorch
    if p != "nuc":   # 'nuc' inverts directly, as PyTorch's: an exactly singular matrix raises
        close(P.linalg.cond(sing, p)[1], torch.linalg.cond(tt(sing), p)[1], tol)
    close(P.linalg.cond(sing[1], p), torch.linalg.cond(tt(sing[1]), p), tol)
    assert P.linalg.cond(P.ones(2, 0, 0), p).tolist() == [0.0, 0.0]
    if p in (None, 2, -2):
        close(P.linalg.cond(mk(a[:, :2], dtype), p), torch.linalg.cond(torch.tensor(a[:, :2]), p), tol * 1e3)


@pytest.mark.parametrize("dtype,tol", DTYPES)
def test_matrix_exp(dtype, tol):
    scipy_linalg = pytest.importorskip("scipy.linalg")
    a = RNG.standard_normal((4, 4, 4))
    a *= np.array([1e-3, 0.5, 3.0, 20.0])[:, None, None]      # inside and far outside the Pade range
    want = np.stack([scipy_linalg.expm(m) for m in a])
    for la in LAYOUTS:
        got = P.linalg.matrix_exp(mk(a, dtype, la))
        assert got.dtype == getattr(P, dtype) and got.shape == (4, 4, 4)
        np.testing.assert_allclose(_ref(got), want, rtol=tol * 1e3, atol=tol * 1e3 * np.abs(want).max())
    close(P.linalg.matrix_exp(mk(a[1], dtype)), torch.linalg.matrix_exp(torch.tensor(a[1])), tol * 10)
    close(P.matrix_exp(mk(a[1], dtype)), want[1], tol * 10)
    close(mk(a[1], dtype).matrix_exp(), want[1], tol * 10)
    nil = P.tensor([[0.0, 1.0, 2.0], [0.0, 0.0, 3.0], [0.0, 0.0, 0.0]])
    close(P.linalg.matrix_exp(nil), [[1.0, 1.0, 3.5], [0.0, 1.0, 3.0], [0.0, 0.0, 1.0]], 1e-6)
    assert P.linalg.matrix_exp(P.ones(2, 0, 0)).shape == (2, 0, 0)
    close(P.linalg.matrix_exp(P.ones(2, 1, 1)), np.full((2, 1, 1), np.e), 1e-6)


NEW_ERRORS = [
    ("pinv int", lambda L, T: L.linalg.pinv(T.ones(3, 3, dtype=T.int64))),
    ("pinv 1d", lambda L, T: L.linalg.pinv(T.ones(3))),
    ("pinv 0d", lambda L, T: L.linalg.pinv(T.ones(()))),
    ("pinv half", lambda L, T: L.linalg.pinv(T.ones(2, 2, dtype=T.float16))),
    ("pinv hermitian nonsquare", lambda L, T: L.linalg.pinv(T.ones(2, 3), hermitian=True)),
    ("pinverse 1d", lambda L, T: L.pinverse(T.ones(3))),
    ("matrix_rank 1d", lambda L, T: L.linalg.matrix_rank(T.ones(3))),
    ("matrix_rank int", lambda L, T: L.linalg.matrix_rank(T.ones(3, 3, dtype=T.int64))),
    ("matrix_rank hermitian nonsquare", lambda L, T: L.linalg.matrix_rank(T.ones(2, 3), hermitian=True)),
    ("multi_dot one", lambda L, T: L.linalg.multi_dot([T.ones(2, 2)])),
    ("multi_dot none", lambda L, T: L.linalg.multi_dot([])),
    ("multi_dot first 3d", lambda L, T: L.linalg.multi_dot([T.ones(2, 3, 3), T.ones(3, 3)])),
    ("multi_dot first 0d", lambda L, T: L.linalg.multi_dot([T.ones(()), T.ones(3, 3)])),
    ("multi_dot last 3d", lambda L, T: L.linalg.multi_dot([T.ones(3, 3), T.ones(2, 3, 3)])),
    ("multi_dot middle 1d", lambda L, T: L.linalg.multi_dot([T.ones(3, 3), T.ones(3), T.ones(3, 3)])),
    ("multi_dot dtypes", lambda L, T: L.linalg.multi_dot([T.ones(3, 3), T.ones(3, 3, dtype=T.float64)])),
    ("multi_dot int dtypes", lambda L, T: L.linalg.multi_dot([T.ones(2, 2, dtype=T.int64),
                                                              T.ones(2, 2, dtype=T.int32)])),
    ("multi_dot shapes", lambda L, T: L.linalg.multi_dot([T.ones(3, 4), T.ones(3, 4)])),
    ("multi_dot shapes 1d", lambda L, T: L.linalg.multi_dot([T.ones(3), T.ones(3, 2), T.ones(4)])),
    ("matrix_power 1d", lambda L, T: L.linalg.matrix_power(T.ones(3), 2)),
    ("matrix_power nonsquare", lambda L, T: L.linalg.matrix_power(T.ones(3, 4), 2)),
    ("matrix_power int negative", lambda L, T: L.linalg.matrix_power(T.ones(3, 3, dtype=T.int64), -1)),
    ("matrix_power singular", lambda L, T: L.linalg.matrix_power(T.zeros(3, 3), -2)),
    ("matrix_power float n", lambda L, T: L.linalg.matrix_power(T.ones(3, 3), 2.0)),
    ("solve_triangular 1d B", lambda L, T: L.linalg.solve_triangular(T.eye(3), T.ones(3), upper=True)),
    ("solve_triangular 1d A", lambda L, T: L.linalg.solve_triangular(T.ones(3), T.ones(3, 1), upper=True)),
    ("solve_triangular nonsquare", lambda L, T: L.linalg.solve_triangular(T.ones(3, 4), T.ones(3, 1), upper=True)),
    ("solve_triangular shapes", lambda L, T: L.linalg.solve_triangular(T.eye(3), T.ones(4, 2), upper=True)),
    ("solve_triangular shapes right", lambda L, T: L.linalg.solve_triangular(T.eye(3), T.ones(4, 2), upper=True,
                                                                             left=False)),
    ("solve_triangular int", lambda L, T: L.linalg.solve_triangular(T.ones(3, 3, dtype=T.int64), T.ones(3, 1),
                                                                    upper=True)),
    ("solve_triangular half", lambda L, T: L.linalg.solve_triangular(T.ones(3, 3, dtype=T.float16), T.ones(3, 1),
                                                                     upper=True)),
    ("solve_triangular batch", lambda L, T: L.linalg.solve_triangular(T.ones(2, 3, 3), T.ones(3, 3, 2), upper=True)),
    ("inv_ex singular checked", lambda L, T: L.linalg.inv_ex(T.tensor([[[1., 0.], [0., 1.]], [[0., 0.], [0., 0.]]]),
                                                             check_errors=True)),
    ("inv_ex int", lambda L, T: L.linalg.inv_ex(T.ones(3, 3, dtype=T.int64))),
    ("inv_ex nonsquare", lambda L, T: L.linalg.inv_ex(T.ones(3, 4))),
    ("inv_ex half", lambda L, T: L.linalg.inv_ex(T.ones(2, 2, dtype=T.float16))),
    ("cholesky_ex checked", lambda L, T: L.linalg.cholesky_ex(T.tensor([[1., 2.], [2., 1.]]), check_errors=True)),
    ("cholesky_ex checked batched", lambda L, T: L.linalg.cholesky_ex(
        T.stack([T.eye(2), T.tensor([[1., 2.], [2., 1.]])]), check_errors=True)),
    ("cholesky_ex int", lambda L, T: L.linalg.cholesky_ex(T.ones(3, 3, dtype=T.int64))),
    ("cholesky_ex half", lambda L, T: L.linalg.cholesky_ex(T.ones(3, 3, dtype=T.float16))),
    ("cholesky_ex nonsquare", lambda L, T: L.linalg.cholesky_ex(T.ones(3, 4))),
    ("vecdot int", lambda L, T: L.linalg.vecdot(T.ones(3, dtype=T.int64), T.ones(3, dtype=T.int64))),
    ("vecdot dtypes", lambda L, T: L.linalg.vecdot(T.ones(3), T.ones(3, dtype=T.float64))),
    ("vecdot dim", lambda L, T: L.linalg.vecdot(T.ones(2, 3), T.ones(2, 3), dim=2)),
    ("vecdot sizes", lambda L, T: L.linalg.vecdot(T.ones(2, 3), T.ones(2, 4))),
    ("cond 1d", lambda L, T: L.linalg.cond(T.ones(3))),
    ("cond 1d fro", lambda L, T: L.linalg.cond(T.ones(3), "fro")),
    ("cond ord", lambda L, T: L.linalg.cond(T.ones(3, 3), 3)),
    ("cond ord str", lambda L, T: L.linalg.cond(T.eye(3), "foo")),
    ("cond nonsquare 1", lambda L, T: L.linalg.cond(T.ones(3, 4), 1)),
    ("cond nonsquare 1.0", lambda L, T: L.linalg.cond(T.ones(3, 4), 1.0)),
    ("cond nonsquare inf", lambda L, T: L.linalg.cond(T.ones(3, 4), float("inf"))),
    ("cond nonsquare nuc", lambda L, T: L.linalg.cond(T.ones(3, 4), "nuc")),
    ("cond int", lambda L, T: L.linalg.cond(T.ones(3, 3, dtype=T.int64))),
    ("cond int 1", lambda L, T: L.linalg.cond(T.ones(3, 3, dtype=T.int64), 1)),
    ("cond half", lambda L, T: L.linalg.cond(T.ones(3, 3, dtype=T.float16))),
    ("matrix_exp 1d", lambda L, T: L.linalg.matrix_exp(T.ones(3))),
    ("matrix_exp nonsquare", lambda L, T: L.linalg.matrix_exp(T.ones(3, 4))),
    ("matrix_exp int", lambda L, T: L.linalg.matrix_exp(T.ones(3, 3, dtype=T.int64))),
    # fuzz-found: bool trace, vector_norm's dtype= and empty-dimension checks (in PyTorch's order)
    ("trace bool", lambda L, T: L.trace(T.ones(2, 2, dtype=T.bool))),
    ("trace bool 3d", lambda L, T: L.trace(T.ones(2, 2, 2, dtype=T.bool))),
    ("vector_norm narrowing dtype", lambda L, T: L.linalg.vector_norm(T.ones(3, dtype=T.float64), dtype=T.float32)),
    ("vector_norm half dtype", lambda L, T: L.linalg.vector_norm(T.ones(3), dtype=T.float16)),
    ("vector_norm int dtype", lambda L, T: L.linalg.vector_norm(T.ones(3), dtype=T.int64)),
    ("vector_norm empty before dtype", lambda L, T: L.linalg.vector_norm(T.ones(0), float("inf"), dtype=T.float16)),
    ("vector_norm empty dim", lambda L, T: L.linalg.vector_norm(T.ones(2, 0), -1, dim=(0, -1))),
    ("vector_norm dim range first", lambda L, T: L.linalg.vector_norm(T.ones(0), float("inf"), dim=(1, 0))),
]


@pytest.mark.parametrize("name,call", NEW_ERRORS, ids=[e[0] for e in NEW_ERRORS])
def test_new_errors(name, call):
    _same_error(lambda: call(P, P), lambda: call(torch, torch))


def test_vector_norm_of_0d_along_dim():
    for ord in (float("inf"), -float("inf"), 2, 0):
        for dim in (0, -1):
            assert P.linalg.vector_norm(P.tensor(-3.0), ord, dim).item() == \
                torch.linalg.vector_norm(torch.tensor(-3.0), ord, dim).item()


def test_solve_triangular_upper_is_required():
    with pytest.raises(TypeError, match="upper"):
        P.linalg.solve_triangular(P.eye(3), P.ones(3, 1))


def test_torch_level_aliases():
    for name in ("pinverse", "matrix_power", "matrix_exp"):
        assert callable(getattr(P, name)) and callable(getattr(P.Tensor, name)), name
    for name in ("pinv", "matrix_rank", "multi_dot", "matrix_power", "solve_triangular", "inv_ex", "cholesky_ex",
                 "vecdot", "cond", "matrix_exp"):
        assert callable(getattr(P.linalg, name)), name
