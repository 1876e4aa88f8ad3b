"""Tensors of many dims: operators work up to 64 dims (PyTorch's TensorIterator and
dim-mask limit) on inputs that cannot be coalesced down to a few, and beyond 64 where
PyTorch allows it (creation, views, pointwise, copy, full reductions, matmul), with
PyTorch's error where it refuses.

Shapes are mostly 1 with a few dims of 2 or 3, so every tensor stays small; the
non-contiguous inputs are step-sliced and permuted views whose dims no kernel can merge.
NumPy (which allows 64 dims since NumPy 2) is the oracle, and PyTorch where installed.
"""

import numpy as np
import pytest

import pytorchlite

NDIMS = (20, 33, 64)
LIMIT_MSG = "only tensors with up to 64 dims are supported"


def _shape(nd, big=(2, 3, 2, 2, 3, 2, 2, 2)):
    """nd dims, mostly 1; the sizes in `big` spread evenly over them (at most 8 dims > 1)."""
    shape = [1] * nd
    k = min(len(big), nd)
    for j in range(k):
        shape[(j * nd) // k + (nd // (2 * k))] = big[j]
    return tuple(shape)


def _big_dims(shape):
    return [d for d, s in enumerate(shape) if s > 1]


def _pair(shape, contiguous, seed=0, dtype=np.float64):
    """(numpy array, pytorchlite tensor) with equal values and shape `shape`. The
    non-contiguous form is a step-2 slice of a larger buffer along one dim, with two dims
    larger than 1 swapped: neither merges with a neighbour."""
    rng = np.random.default_rng(seed)
    if contiguous:
        a = rng.standard_normal(shape).astype(dtype)
        return a, pytorchlite.tensor(a)
    bigs = _big_dims(shape)
    i, j = bigs[0], bigs[-1]
    perm = list(range(len(shape)))
    perm[i], perm[j] = perm[j], perm[i]
    pshape = tuple(shape[p] for p in perm)        # shape before the swap
    k = _big_dims(pshape)[len(bigs) // 2]
    base_shape = pshape[:k] + (pshape[k] * 2,) + pshape[k + 1:]
    base = rng.standard_normal(base_shape).astype(dtype)
    sl = (slice(None),) * k + (slice(None, None, 2),)
    a = base[sl].transpose(perm)
    t = pytorchlite.tensor(base)[sl].permute(*perm)
    assert tuple(t.shape) == shape and not t.is_contiguous()
    return a, t


def _close(t, a, rtol=1e-10, atol=1e-12):
    got = t.numpy()
    assert got.shape == np.shape(a), (got.shape, np.shape(a))
    np.testing.assert_allclose(got, a, rtol=rtol, atol=atol)


def _torch():
    return pytest.importorskip("torch")


# ---- pointwise --------------------------------------------------------------------------

@pytest.mark.parametrize("nd", NDIMS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_binary_broadcast(nd, contiguous):
    shape = _shape(nd)
    a, x = _pair(shape, contiguous)
    # b broadcasts along every other dim larger than 1 and has fewer leading dims
    bshape = tuple(1 if (d in _big_dims(shape)[::2]) else s for d, s in enumerate(shape))[3:]
    b, y = _pair(bshape, contiguous=True, seed=1)
    _close(x + y, a + b)
    _close(x * y - x, a * b - a)
    _close(pytorchlite.where(x > y, x, y), np.where(a > b, a, b))
    _close(pytorchlite.add(x, y, alpha=2), a + 2 * b)
    out = pytorchlite.empty(shape, dtype=pytorchlite.float64)
    pytorchlite.mul(x, y, out=out)
    _close(out, a * b)


@pytest.mark.parametrize("nd", NDIMS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_unary_and_inplace(nd, contiguous):
    a, x = _pair(_shape(nd), contiguous)
    _close(x.exp(), np.exp(a))
    _close(-x, -a)
    _close(x.clamp(-0.5, 0.5), np.clip(a, -0.5, 0.5))
    _close(x.to(pytorchlite.float32), a.astype(np.float32), rtol=1e-6, atol=1e-6)
    y = x.clone()
    y.mul_(3).add_(1)
    _close(y, a * 3 + 1)
    y.zero_()
    _close(y, np.zeros_like(a))


# ---- reductions -------------------------------------------------------------------------

@pytest.mark.parametrize("nd", NDIMS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_reductions(nd, contiguous):
    shape = _shape(nd)
    a, x = _pair(shape, contiguous)
    bigs = _big_dims(shape)
    dims = (bigs[0], bigs[2], bigs[-1], nd // 2)
    _close(x.sum(), a.sum())
    _close(x.sum(dims), a.sum(axis=dims))
    _close(x.sum(dims, keepdim=True), a.sum(axis=dims, keepdims=True))
    _close(x.mean(bigs[1]), a.mean(axis=bigs[1]))
    _close(x.amax(dims), a.max(axis=dims))
    _close(x.var(dims), a.var(axis=dims, ddof=1))
    _close(x.argmax(bigs[1]), a.argmax(axis=bigs[1]))
    v, i = x.max(bigs[-1], keepdim=True)
    _close(v, a.max(axis=bigs[-1], keepdims=True))
    _close(i, a.argmax(axis=bigs[-1], keepdims=True))
    _close(x.cumsum(bigs[1]), np.cumsum(a, axis=bigs[1]))
    _close(x.logsumexp(bigs[0]), np.log(np.exp(a).sum(axis=bigs[0])))
    assert bool((x > 0).any()) == bool((a > 0).any())


# ---- movement, copies, views -------------------------------------------------------------

@pytest.mark.parametrize("nd", NDIMS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_permute_transpose_copy(nd, contiguous):
    a, x = _pair(_shape(nd), contiguous)
    perm = list(reversed(range(nd)))
    _close(x.permute(*perm).contiguous(), np.ascontiguousarray(a.transpose(perm)))
    _close(x.transpose(1, nd - 2).clone(), a.swapaxes(1, nd - 2).copy())
    y = pytorchlite.empty(x.shape, dtype=pytorchlite.float64).permute(*perm)
    y.copy_(x.permute(*perm))
    _close(y, a.transpose(perm))
    _close(x.flatten(), a.reshape(-1))
    _close(x.reshape(-1, 2), a.reshape(-1, 2))
    _close(x.squeeze(), a.squeeze())
    _close(x.flip(_big_dims(x.shape)[1]), np.flip(a, _big_dims(x.shape)[1]))
    if nd < 64:
        _close(x.unsqueeze(3), np.expand_dims(a, 3))


@pytest.mark.parametrize("nd", NDIMS)
@pytest.mark.parametrize("contiguous", [True, False])
def test_cat_index_select_gather(nd, contiguous):
    shape = _shape(nd)
    a, x = _pair(shape, contiguous)
    d = _big_dims(shape)[2]
    _close(pytorchlite.cat([x, x * 2], d), np.concatenate([a, a * 2], axis=d))
    _close(pytorchlite.cat([x, x], 0), np.concatenate([a, a], axis=0))
    if nd < 64:
        _close(pytorchlite.stack([x, -x], 1), np.stack([a, -a], axis=1))
    idx = np.array([1, 0, 1, 1])
    _close(x.index_select(d, pytorchlite.tensor(idx)), np.take(a, idx, axis=d))
    rng = np.random.default_rng(3)
    gi = rng.integers(0, shape[d], size=shape)
    # (NumPy's take_along_axis stops at 63 dims: take it on the dims larger than 1)
    sq = tuple(k for k, n in enumerate(shape) if n == 1)
    want = np.take_along_axis(a.squeeze(sq), gi.squeeze(sq), axis=_big_dims(shape).index(d)).reshape(shape)
    _close(x.gather(d, pytorchlite.tensor(gi)), want)
    s = pytorchlite.zeros(shape, dtype=pytorchlite.float64).scatter_add(d, pytorchlite.tensor(gi), x)
    want = np.zeros(shape)
    for pos in np.ndindex(*shape):
        tgt = list(pos)
        tgt[d] = gi[pos]
        want[tuple(tgt)] += a[pos]
    _close(s, want)
    _close(x[(0,) * 5], a[(0,) * 5])
    m = a > 0
    _close(x[pytorchlite.tensor(m)], a[m])


@pytest.mark.parametrize("nd", NDIMS)
def test_sort(nd):
    shape = _shape(nd)
    for contiguous in (True, False):
        a, x = _pair(shape, contiguous)
        d = _big_dims(shape)[1]
        v, i = x.sort(d, descending=True)
        # (NumPy sorts at most 32 dims: sort the dims larger than 1)
        sq, ax = tuple(k for k, n in enumerate(shape) if n == 1), _big_dims(shape).index(d)
        _close(v, -np.sort(-a.squeeze(sq), axis=ax).reshape(shape))
        _close(i, np.argsort(-a.squeeze(sq), axis=ax, kind="stable").reshape(shape))
        _close(x.topk(1, d).values, np.max(a, axis=d, keepdims=True))


# ---- matmul -------------------------------------------------------------------------------

@pytest.mark.parametrize("nd", NDIMS)
def test_matmul_batch_dims(nd):
    shape = _shape(nd - 2) + (2, 3)
    a, x = _pair(shape, contiguous=True)
    # the right operand broadcasts over half of the batch dims
    bshape = tuple(1 if d % 2 else s for d, s in enumerate(shape[:-2])) + (3, 2)
    b, y = _pair(bshape, contiguous=False, seed=2)
    _close(x @ y, a @ b)
    _close(pytorchlite.matmul(x, y[(0,) * (nd - 2)]), a @ b[(0,) * (nd - 2)])


# ---- autograd -----------------------------------------------------------------------------

@pytest.mark.parametrize("nd", NDIMS)
def test_backward_matches_torch(nd):
    torch = _torch()
    shape = _shape(nd)
    a, x = _pair(shape, contiguous=False)
    bshape = tuple(1 if d in _big_dims(shape)[:2] else s for d, s in enumerate(shape))
    b, y = _pair(bshape, contiguous=True, seed=4)
    dims = tuple(_big_dims(shape)[1:4])

    def f(lib, p, q):
        z = (p * q).sum(dims, keepdim=True).exp() + p.permute(*reversed(range(nd))).contiguous().mT.sum()
        r = lib.cat([p * z, p], 0).amax(0)
        return r.sum() + (p.sort(dims[0]).values * q).sum()

    xs, ys = x.detach().clone().requires_grad_(), y.detach().clone().requires_grad_()
    f(pytorchlite, xs, ys).backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.tensor(b, requires_grad=True)
    f(torch, tx, ty).backward()
    _close(xs.grad, tx.grad.numpy())
    _close(ys.grad, ty.grad.numpy())


# ---- beyond 64 dims -----------------------------------------------------------------------

def _over(nd=70):
    """A tensor of nd > 64 dims with 4 elements, and the same data squeezed (for NumPy)."""
    shape = (1,) * (nd - 3) + (2, 1, 2)
    a = np.arange(4.0).reshape(2, 2)
    return shape, a, pytorchlite.tensor(a).view(shape)


def test_creation_and_views_beyond_64():
    shape, a, x = _over()
    for t in (pytorchlite.zeros(shape), pytorchlite.ones(shape, dtype=pytorchlite.int64), pytorchlite.empty(shape),
              pytorchlite.full(shape, 2.5), pytorchlite.randn(shape), pytorchlite.rand(*shape)):
        assert tuple(t.shape) == shape
    assert float(pytorchlite.full(shape, 2.5).sum()) == 10.0
    assert tuple(x.unsqueeze(0).shape) == (1,) + shape
    assert tuple(x.permute(*reversed(range(len(shape)))).shape) == shape[::-1]
    _close(x.squeeze(), a)
    _close(x.permute(*reversed(range(len(shape)))).contiguous().squeeze(), a.T)
    _close(x.expand(*shape[:-2], 3, 2).contiguous().squeeze(), np.broadcast_to(a[:, None, :], (2, 3, 2)))
    _close(x.reshape(-1), a.reshape(-1))


def test_pointwise_copy_and_full_reductions_beyond_64():
    shape, a, x = _over()
    _close((x + x * 2).squeeze(), a * 3)
    _close((x.exp() - 1).squeeze(), np.exp(a) - 1)
    _close((x + pytorchlite.tensor([10.0, 20.0])).squeeze(), a + [10.0, 20.0])
    xt = x.transpose(-1, -3)
    _close(xt.contiguous().squeeze(), a.T)
    y = pytorchlite.zeros(shape)
    y.copy_(x)
    _close(y.squeeze(), a)
    _close(x.sum(), a.sum())
    _close(x.mean(), a.mean())
    _close(x.amax(), a.max())
    _close(x.argmax(), a.argmax())
    _close(x.norm(), np.linalg.norm(a))
    _close(x.var(), a.var(ddof=1))
    z = pytorchlite.zeros((1,) * 66 + (0,))
    assert float((z + 1).sum()) == 0.0


def test_matmul_beyond_64():
    shape = (1,) * 63 + (2, 2, 3)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 2, 3)), rng.standard_normal((3, 2))
    x = pytorchlite.tensor(a).view(shape)
    got = x @ pytorchlite.tensor(b)
    assert tuple(got.shape) == (1,) * 63 + (2, 2, 2)
    _close(got.reshape(2, 2, 2), a @ b)


@pytest.mark.parametrize("op", [
    lambda x: x.sum(0), lambda x: x.sum(dim=None, keepdim=True), lambda x: x.mean(-1),
    lambda x: x.amax(1), lambda x: x.argmax(2), lambda x: x.max(0), lambda x: x.flip(0),
    lambda x: x.all(), lambda x: x.any(), lambda x: x.logsumexp(0),
])
def test_error_beyond_64_matches_torch(op):
    _shape_, _a, x = _over(65)
    with pytest.raises(RuntimeError, match=LIMIT_MSG):
        op(x)
    try:
        import torch
    except ImportError:
        return
    with pytest.raises(RuntimeError, match=LIMIT_MSG):
        op(torch.zeros(tuple(x.shape)))


def test_at_64_no_error():
    x = pytorchlite.zeros((1,) * 62 + (2, 2))
    assert tuple(x.sum(0).shape) == (1,) * 61 + (2, 2)
    assert tuple(x.flip(0).shape) == tuple(x.shape)


def test_dim_ops_beyond_64():
    """Sort, scans, topk, gather/scatter, nonzero and boolean masks take tensors of more
    than 64 dims (as PyTorch does); the kernels see them without their size-1 dims."""
    nd = 72
    shape = [1] * nd
    shape[40], shape[71] = 2, 3
    shape = tuple(shape)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, 3))
    x = pytorchlite.tensor(a).view(shape)
    xt = pytorchlite.tensor(a.T.copy()).t().reshape(shape)    # (a non-contiguous view)
    assert not xt.is_contiguous()
    for t in (x, xt):
        v, i = t.sort(nd - 1)
        assert tuple(v.shape) == shape
        _close(v.reshape(2, 3), np.sort(a, axis=1))
        _close(i.reshape(2, 3), np.argsort(a, axis=1))
        _close(t.argsort(40, descending=True).reshape(2, 3), np.argsort(-a, axis=0))
        _close(t.cumsum(40).reshape(2, 3), np.cumsum(a, axis=0))
        _close(t.cumprod(-1).reshape(2, 3), np.cumprod(a, axis=1))
        top = t.topk(2, -1)
        assert tuple(top.values.shape) == shape[:-1] + (2,)
        _close(top.values.reshape(2, 2), -np.sort(-a, axis=1)[:, :2])
        gi = rng.integers(0, 3, size=(2, 3))
        gt = pytorchlite.tensor(gi).view(shape)
        _close(t.gather(-1, gt).reshape(2, 3), np.take_along_axis(a, gi, axis=1))
        s = pytorchlite.zeros(shape, dtype=pytorchlite.float64).scatter_add(-1, gt, t)
        want = np.zeros((2, 3))
        np.add.at(want, (np.arange(2)[:, None], gi), a)
        _close(s.reshape(2, 3), want)
        m = t > 0
        _close(t[m], a[a > 0])
        w = pytorchlite.tensor(a.T.copy()).t().reshape(shape)     # written through its mask
        w[m] = 0.0
        _close(w.reshape(2, 3), np.where(a > 0, 0.0, a))
        nz = m.nonzero()
        rows, cols = np.nonzero(a > 0)
        want = np.zeros((len(rows), nd), dtype=np.int64)
        want[:, 40], want[:, 71] = rows, cols
        _close(nz, want)
    assert pytorchlite.equal(x, xt) and not pytorchlite.equal(x, x + 1)
    nested = x.tolist()
    for _ in range(40):
        nested = nested[0]
    assert len(nested) == 2 and np.array(nested).reshape(2, 3).tolist() == a.tolist()


def test_tolist_beyond_64_matches_torch():
    torch = _torch()
    for shape in ((1,) * 65 + (2,), (1,) * 30 + (2,) + (1,) * 40, (1,) * 66 + (0,), (2,) + (1,) * 70 + (0, 3)):
        n = int(np.prod(shape))
        assert pytorchlite.arange(float(n)).reshape(shape).tolist() == torch.arange(float(n)).reshape(shape).tolist()


@pytest.mark.parametrize("shape", [(1,) * 65 + (2, 3), (2,) + (1,) * 66 + (3,), (1,) * 70, (1,) * 65 + (40, 40),
                                   (1,) * 66 + (0,), (1,) * 30 + (2,) + (1,) * 40 + (2,)])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_repr_beyond_64_matches_torch(shape, dtype):
    torch = _torch()
    n = int(np.prod(shape))
    a = pytorchlite.arange(n).to(getattr(pytorchlite, dtype)).reshape(shape) * 3
    b = torch.arange(n).to(getattr(torch, dtype)).reshape(shape) * 3
    assert repr(a) == repr(b).replace("torch.", "pytorchlite.")


def test_selections_beyond_64():
    shape = (1,) * 40 + (2,) + (1,) * 30 + (3,)
    a = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    x = pytorchlite.tensor(a).reshape(shape)
    v, i = x.median(-1)
    assert v.dim() == 71 and i.dim() == 71
    _close(v.reshape(-1), np.median(a, axis=1))
    _close(i.reshape(-1), np.argsort(a, axis=1)[:, 1])
    v, i = x.kthvalue(1, 40, keepdim=True)
    assert tuple(v.shape) == shape[:40] + (1,) + shape[41:]
    _close(v.reshape(-1), a.min(axis=0))
    _close(i.reshape(-1), a.argmin(axis=0))
    _close(x.mode(-1).values.reshape(-1), a.min(axis=1))    # (no repeats: the smallest)


def test_backward_beyond_64_matches_the_squeezed_tensor():
    """Backward through tensors of 72 dims gives the gradient of the same computation on
    the (2, 3) tensor it holds (PyTorch's own backward refuses most of these: its sum
    backward keeps dims in a 64-bit mask)."""
    shape = (1,) * 40 + (2,) + (1,) * 30 + (3,)
    a = np.random.default_rng(7).standard_normal((2, 3))

    def f(x, d0, rows):
        y = (x * x).exp() + x.sort(-1).values * 2 + x.cumsum(d0) + x.gather(-1, pytorchlite.zeros(
            x.shape, dtype=pytorchlite.int64))
        y = y + x.index_select(-1, pytorchlite.tensor([2, 1, 0])) + x[..., [0, 0, 1]]
        z = (rows(x) @ rows(x).transpose(-1, -2)).sum() + x.topk(2, -1).values.sum() + x.median(-1).values.sum()
        return y.sum() + z + x.max()

    big = pytorchlite.tensor(a).reshape(shape).requires_grad_()
    f(big, 40, lambda x: x).backward()              # (its last two dims are (1, 3): rows)
    small = pytorchlite.tensor(a).requires_grad_()
    f(small, 0, lambda x: x.unsqueeze(-2)).backward()
    assert tuple(big.grad.shape) == shape
    _close(big.grad.reshape(2, 3), small.grad.numpy())
