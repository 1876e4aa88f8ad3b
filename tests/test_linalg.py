"""pytorchlite.linalg (LAPACK-backed factorizations), einsum, tensordot, kron, trace and the
norms, against NumPy (float64) and PyTorch: values, shapes, dtypes, strides of results,
batched / non-contiguous / empty inputs, and PyTorch's errors word for word.
Gradients are checked in tests/autograd/test_gradcheck_ops.py (SAMPLES)."""

import numpy as np
import pytest

import pytorchlite as P

torch = pytest.importorskip("torch")

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
    assert inv.dtype == x.dtype and inv.stride() == torch.linalg.inv(tt(x)).stride()
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
    close(P.linalg.solve(mk(a, dtype), mk(v1, dtype)), torch.linalg.solve(torch.tensor(a), torch.tensor(v1)), tol)
    bb = RNG.standard_normal((5, 1, 3, 2))
    close(P.linalg.solve(mk(a, dtype), mk(bb, dtype)), torch.linalg.solve(torch.tensor(a), torch.tensor(bb)), tol)
    bl = RNG.standard_normal((4, 3))
    close(P.linalg.solve(mk(a, dtype), mk(bl, dtype), left=False),
          torch.linalg.solve(torch.tensor(a), torch.tensor(bl), left=False), tol)
    assert P.linalg.solve(P.eye(3).expand(0, 3, 3), P.ones(3, 2)).shape == (0, 3, 2)


# --- factorizations ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cholesky(dtype, tol, layout):
    a = spd((2, 4, 4))
    L = P.linalg.cholesky(mk(a, dtype, layout))
    close(L, np.linalg.cholesky(a), tol)
    close(P.linalg.cholesky(mk(a, dtype, layout), upper=True), np.swapaxes(np.linalg.cholesky(a), -1, -2), tol)
    assert L.stride() == torch.linalg.cholesky(torch.tensor(a)).stride()


@pytest.mark.parametrize("dtype,tol", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (2, 6, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr(dtype, tol, shape, mode):
    a = RNG.standard_normal(shape)
    q, r = P.linalg.qr(mk(a, dtype, "t"), mode)
    tq, tr = torch.linalg.qr(torch.tensor(a), mode)
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
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    close(s, np.linalg.svd(a, compute_uv=False), tol)
    k = s.shape[-1]
    rec = (u.numpy()[..., :k] * s.numpy()[..., None, :]) @ vh.numpy()[..., :k, :]
    close(rec, a, tol)
    close(P.linalg.svdvals(mk(a, dtype)), ts, tol)
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
    want = torch.einsum(eq, *[tt(x) for x in xs])
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
    close(P.linalg.matrix_norm(x, ord, keepdim=keepdim), torch.linalg.matrix_norm(tt(x), ord, keepdim=keepdim), tol)
    close(P.linalg.matrix_norm(x, ord, dim=(0, 2), keepdim=keepdim),
          torch.linalg.matrix_norm(tt(x), ord, dim=(0, 2), keepdim=keepdim), tol)
    close(P.linalg.norm(x[0], ord), torch.linalg.norm(tt(x[0]), ord), tol)
    close(P.linalg.norm(x, ord, dim=(1, 2)), np.linalg.norm(a, ord, axis=(1, 2)), tol)


@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, float("inf"), -float("inf")])
def test_vector_norm(ord):
    a = RNG.standard_normal((3, 4))
    x = mk(a, "float32", "t")
    close(P.linalg.vector_norm(x, ord), torch.linalg.vector_norm(tt(x), ord), 1e-5)
    close(P.linalg.vector_norm(x, ord, dim=1, keepdim=True), torch.linalg.vector_norm(tt(x), ord, dim=1,
                                                                                      keepdim=True), 1e-5)
    close(P.linalg.norm(x[0], ord), np.linalg.norm(a[0], ord), 1e-5)
    assert P.linalg.vector_norm(x, dtype=P.float64).dtype == P.float64
    close(P.linalg.norm(x), np.linalg.norm(a), 1e-5)
    close(P.linalg.norm(x, dim=(0, 1), keepdim=True), torch.linalg.norm(tt(x), dim=(0, 1), keepdim=True), 1e-5)


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
