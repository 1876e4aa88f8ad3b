"""Data-movement operators against PyTorch (same data, same call, via tests/parity.py) and
NumPy float64: cat/stack family, gather and the scatter family, take/put, masked_scatter,
repeat/tile/repeat_interleave, flip/roll/rot90, tril/triu, diag/diag_embed and
nn.functional.pad, over dtypes (bool, integers, float16/bfloat16/float32/float64),
non-contiguous inputs, empty and 0-d tensors, negative dims, in-place and out= forms, and
the errors PyTorch raises for bad input.
"""

import numpy as np
import pytest

import pytorchlite as P
from parity import check_parity, from_values, to_oracle

from numpy_oracles import movement_reference  # noqa: E402
from parity import HAVE_TORCH, MissingTorch, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
_rng = np.random.default_rng(7)


def vals(shape, dtype="float32", seed=None):
    rng = _rng if seed is None else np.random.default_rng(seed)
    if dtype == "bool":
        return from_values(rng.random(shape) < 0.5, dtype)
    if dtype == "uint8":
        return from_values(rng.integers(0, 9, shape), dtype)
    if dtype.startswith("int"):
        return from_values(rng.integers(-9, 9, shape), dtype)
    return from_values(np.round(rng.standard_normal(shape) * 8) / 8, dtype)


def idx(values):
    return P.tensor(values, dtype=P.int64)


def noncontig(t):
    """The same values as t, laid out transposed-in-memory (for >= 2 dims) or step-sliced."""
    if t.dim() >= 2:
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if t.dim() == 1:
        wide = P.stack([t, t], dim=1).reshape(-1)
        return wide[::2]
    return t


def _oracle_arg(v):
    if isinstance(v, P.Tensor):
        return to_oracle(v).reshape(tuple(v.shape))     # keeps 0-d tensors 0-d
    if isinstance(v, (list, tuple)):
        return type(v)(_oracle_arg(x) for x in v)
    return v


def _data_dtype(args):
    first = args[0][0] if isinstance(args[0], (list, tuple)) else args[0]
    return first.dtype if isinstance(first, P.Tensor) else None


def same(ours, oracle, *args, **kw):
    """check_parity, with the oracle's arguments converted here (0-d stays 0-d). Without
    PyTorch, the NumPy reference of tests/numpy_oracles.py stands in where there is one."""
    def run_oracle(*_a, **_k):
        return oracle(*[_oracle_arg(a) for a in args], **{k: _oracle_arg(v) for k, v in kw.items()})
    numpy_oracle = None
    if not HAVE_TORCH and isinstance(oracle, MissingTorch):
        numpy_oracle = movement_reference(oracle._path, _data_dtype(args))
    return check_parity(ours, run_oracle, *args, numpy_oracle=numpy_oracle, **kw)


# --- cat / stack ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_cat_dtypes_and_dims(dtype):
    a, b = vals((2, 3, 4), dtype), vals((2, 5, 4), dtype)
    for dim in (1, -2):
        r = same(P.cat, torch.cat, [a, b], dim)
        if dtype == "float32":
            np.testing.assert_array_equal(r.numpy(), np.concatenate([a.numpy(), b.numpy()], axis=1))
    same(P.cat, torch.cat, [a, noncontig(vals((2, 3, 4), dtype)), a], 0)
    same(P.cat, torch.cat, [noncontig(a), noncontig(a)], -1)


def test_cat_promotion_empty_and_legacy():
    f, i = vals((2, 3)), vals((2, 2), "int64")
    same(P.cat, torch.cat, [f, i], 1)
    same(P.cat, torch.cat, [i, vals((2, 1), "float64"), vals((2, 1), "float16")], 1)
    same(P.cat, torch.cat, [f, P.zeros(0)], 0)            # 1-d empty pieces are skipped
    same(P.cat, torch.cat, [P.zeros(0), f, P.zeros(0)], 1)
    same(P.cat, torch.cat, [P.zeros(0, 3), f], 0)
    same(P.cat, torch.cat, [P.zeros(0), P.zeros(0)], 0)
    same(P.cat, torch.cat, [P.zeros(0, 0, dtype=P.bool), P.zeros(0, dtype=P.uint8)], 0)   # skipped, yet promoted
    same(P.cat, torch.cat, [vals((2, 2), "int32"), P.zeros(0, dtype=P.float64)], 1)
    same(P.cat, torch.cat, [f], 0)
    same(P.concat, torch.concat, [f, f], 1)
    same(P.concatenate, torch.concatenate, [f, f], -1)


def test_cat_out_and_many_pieces():
    pieces = [vals((3,)) for _ in range(1000)]
    r = P.cat(pieces)
    np.testing.assert_array_equal(r.numpy(), np.concatenate([p.numpy() for p in pieces]))
    pieces2 = [vals((4, k % 3 + 1)) for k in range(300)]
    np.testing.assert_array_equal(P.cat(pieces2, 1).numpy(), np.concatenate([p.numpy() for p in pieces2], 1))
    out = P.empty(6, 3)
    res = P.cat([vals((2, 3)), vals((4, 3))], out=out)
    assert res is out and out.shape == (6, 3)
    big = [vals((600, 700)), vals((600, 100))]   # the threaded paths
    np.testing.assert_array_equal(P.cat(big, 1).numpy(), np.concatenate([b.numpy() for b in big], 1))
    np.testing.assert_array_equal(P.cat(big[:1] * 2, 0).numpy(), np.concatenate([big[0].numpy()] * 2, 0))


def test_cat_errors():
    x = vals((2, 3))
    same(P.cat, torch.cat, [x, vals((2, 2))], 0)
    same(P.cat, torch.cat, [x, vals((3,))], 0)
    same(P.cat, torch.cat, [P.tensor(1.), P.tensor(2.)], 0)
    same(P.cat, torch.cat, [x], 2)
    with pytest.raises(ValueError, match="non-empty"):
        P.cat([])
    with pytest.raises(TypeError, match="cat"):
        P.cat(x)
    with pytest.raises(RuntimeError, match="Sizes of tensors must match except in dimension 0"):
        P.cat([x, vals((2, 2))])


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float64"])
def test_stack_family(dtype):
    a, b = vals((2, 3), dtype), vals((2, 3), dtype)
    for dim in (0, 1, 2, -1, -3):
        same(P.stack, torch.stack, [a, noncontig(b)], dim)
    for f, g in ((P.hstack, torch.hstack), (P.vstack, torch.vstack), (P.dstack, torch.dstack)):
        same(f, g, [a, b])
        same(f, g, [vals((3,), dtype), vals((3,), dtype)])
        same(f, g, [P.tensor(1, dtype=a.dtype), P.tensor(0, dtype=a.dtype)])
        same(f, g, [vals((2, 3, 2), dtype), vals((2, 3, 2), dtype)])
    out = P.empty(2, 2, 3, dtype=a.dtype)
    assert P.stack([a, b], out=out) is out


def test_stack_errors():
    x = vals((2, 3))
    same(P.stack, torch.stack, [x, vals((2, 2))])
    same(P.stack, torch.stack, [x, x], 3)
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        P.stack([])
    with pytest.raises(RuntimeError, match="hstack expects a non-empty TensorList"):
        P.hstack([])


# --- gather / scatter ----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_gather(dtype):
    x = vals((4, 5), dtype)
    i1 = idx(_rng.integers(0, 5, (3, 7)))
    i0 = idx(_rng.integers(0, 4, (6, 2)))
    r = same(P.gather, torch.gather, x, 1, i1)
    same(P.gather, torch.gather, x, -2, i0)
    same(P.gather, torch.gather, noncontig(x), 1, noncontig(idx(_rng.integers(0, 5, (4, 3)))))
    same(P.gather, torch.gather, x, 0, i0.int())
    if dtype == "float64":
        np.testing.assert_array_equal(r.numpy(), np.take_along_axis(x.numpy()[:3], i1.numpy(), 1))


def test_gather_edges():
    x = vals((3, 4))
    same(P.gather, torch.gather, x, 1, idx(np.zeros((0, 2), dtype=np.int64)))
    same(P.gather, torch.gather, P.tensor(2.5), 0, P.tensor(0))
    same(P.gather, torch.gather, vals((5,)), 0, idx([4, 0, -0]))
    same(P.gather, torch.gather, x.expand(2, 3, 4), 2, idx(_rng.integers(0, 4, (2, 3, 6))))
    big = vals((300, 400))
    bi = idx(_rng.integers(0, 400, (300, 400)))
    np.testing.assert_array_equal(P.gather(big, 1, bi).numpy(), np.take_along_axis(big.numpy(), bi.numpy(), 1))
    out = P.empty(3, 2)
    assert P.gather(x, 1, idx([[0, 1], [1, 2], [3, 3]]), out=out) is out


def test_gather_errors():
    x = vals((2, 3))
    same(P.gather, torch.gather, x, 1, idx([[5]]))
    same(P.gather, torch.gather, x, 1, idx([[-1]]))
    same(P.gather, torch.gather, x, 1, idx([0]))
    same(P.gather, torch.gather, x, 2, idx([[0]]))
    same(P.gather, torch.gather, x, 1, P.tensor([[0]], dtype=P.int16))
    same(P.gather, torch.gather, x, 0, idx(np.zeros((3, 1), dtype=np.int64)))
    with pytest.raises(RuntimeError, match="index 5 is out of bounds for dimension 1 with size 3"):
        P.gather(x, 1, idx([[5]]))
    with pytest.raises(RuntimeError, match="gather\\(\\): Expected dtype int32/int64 for index"):
        P.gather(x, 1, P.tensor([[0.]]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_forms(dtype):
    x = vals((4, 5), dtype)
    src = vals((3, 5), dtype)
    # unique indices along dim for plain scatter (duplicates make the winner unspecified)
    perm = idx(np.stack([_rng.permutation(4)[:3] for _ in range(5)], 1))
    same(P.scatter, torch.scatter, x, 0, perm, src)
    same(lambda *a: P.Tensor.scatter(*a), lambda *a: torch.Tensor.scatter(*a), x, 0, perm, 1)
    same(P.scatter_add, torch.scatter_add, x, 0, idx(_rng.integers(0, 4, (3, 5))), src)
    same(P.scatter_add, torch.scatter_add, x, -1, idx(_rng.integers(0, 5, (4, 8))), vals((4, 8), dtype))
    same(P.scatter_add, torch.scatter_add, noncontig(x), 1, noncontig(idx(_rng.integers(0, 5, (4, 3)))),
         noncontig(vals((4, 3), dtype)))


def test_scatter_reduce_arg_and_inplace():
    x = vals((3, 4))
    i = idx(_rng.integers(0, 4, (3, 4)))
    s = vals((3, 4))
    with pytest.warns(UserWarning):
        same(lambda *a: P.scatter(*a, reduce="multiply"), lambda *a: torch.scatter(*a, reduce="multiply"), x, 1, i, s)
    same(lambda *a: P.scatter(*a, reduce="add"), lambda *a: torch.scatter(*a, reduce="add"), x, 1, i, 2.0)
    same(lambda *a: P.scatter(*a, reduce="sum"), lambda *a: torch.scatter(*a, reduce="sum"), x, 1, i, 2.0)
    a, t = x.clone(), torch.tensor(x.numpy())
    a.scatter_add_(1, i, s)
    t.scatter_add_(1, torch.tensor(i.numpy()), torch.tensor(s.numpy()))
    np.testing.assert_array_equal(a.numpy(), t.numpy())
    out = P.empty(3, 4)
    assert P.scatter_add(x, 1, i, s, out=out) is out
    np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_scatter_numpy_float64():
    x = vals((5, 6), "float64")
    i = idx(_rng.integers(0, 5, (7, 6)))
    s = vals((7, 6), "float64")
    expect = x.numpy().copy()
    for r in range(7):
        for c in range(6):
            expect[i.numpy()[r, c], c] += s.numpy()[r, c]
    np.testing.assert_allclose(P.scatter_add(x, 0, i, s).numpy(), expect, rtol=1e-12)


def test_scatter_parallel_paths():
    # large enough for the threaded rows / columns splits; results must equal torch's
    x = vals((400, 300))
    for dim, ishape in ((0, (500, 300)), (1, (400, 500))):
        i = idx(_rng.integers(0, x.shape[dim], ishape))
        s = from_values(np.ones(ishape), "float32")
        same(P.scatter_add, torch.scatter_add, x, dim, i, s)
        same(lambda *a: P.scatter_reduce(*a, "amax"), lambda *a: torch.scatter_reduce(*a, "amax"), x, dim, i,
             vals(ishape))


def test_scatter_errors():
    x = vals((2, 3))
    i = idx([[0, 1], [1, 0]])
    same(P.scatter, torch.scatter, x, 1, i, vals((2, 2), "int64"))
    same(P.scatter, torch.scatter, x, 1, idx([[7]]), 1.5)
    same(P.scatter, torch.scatter, x, 1, i, vals((1, 1)))
    same(P.scatter, torch.scatter, x, 1, idx(np.zeros((3, 1), dtype=np.int64)), 1.0)
    same(P.scatter, torch.scatter, x, 1, P.tensor([[0.]]), 1.0)
    same(P.scatter_add, torch.scatter_add, x, 1, i, vals((2, 2), "float64"))
    with pytest.raises(RuntimeError, match="reduce argument must be either add or multiply"):
        P.scatter(x, 1, i, 1.0, reduce="foo")
    before = x.clone()
    with pytest.raises(RuntimeError, match="index 7 is out of bounds for dimension 1 with size 3"):
        x.scatter_(1, idx([[0, 7]]), 9.0)
    np.testing.assert_array_equal(x.numpy(), before.numpy())     # nothing written


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dtype", ["int32", "int64", "float16", "float32", "float64", "uint8"])
def test_scatter_reduce(reduce, include_self, dtype):
    x = vals((4, 5), dtype)
    i = idx(_rng.integers(0, 4, (6, 5)))
    s = vals((6, 5), dtype)
    same(lambda *a: P.scatter_reduce(*a, reduce, include_self=include_self),
         lambda *a: torch.scatter_reduce(*a, reduce, include_self=include_self), x, 0, i, s)
    same(lambda *a: P.Tensor.scatter_reduce(*a, reduce, include_self=include_self),
         lambda *a: torch.Tensor.scatter_reduce(*a, reduce, include_self=include_self),
         noncontig(x), 1, idx(_rng.integers(0, 5, (4, 2))), vals((4, 2), dtype))


def test_scatter_reduce_nan_and_errors():
    x = P.tensor([1., 2., 3.])
    s = P.tensor([float("nan"), 5., -1.])
    i = idx([0, 0, 2])
    for r in ("amax", "amin"):
        same(lambda *a: P.scatter_reduce(*a, r), lambda *a: torch.scatter_reduce(*a, r), x, 0, i, s)
    same(lambda *a: P.scatter_reduce(*a, "foo"), lambda *a: torch.scatter_reduce(*a, "foo"), x, 0, i, s)
    b, bs = from_values([False, True, False], "bool"), from_values([True, False, True], "bool")
    for r in ("sum", "prod", "mean", "amax", "amin"):
        same(lambda *a: P.scatter_reduce(*a, r, include_self=False),
             lambda *a: torch.scatter_reduce(*a, r, include_self=False), b, 0, i, bs)
    with pytest.raises(RuntimeError, match="reduce argument must be either sum, prod, mean, amax or amin, got foo"):
        P.scatter_reduce(x, 0, i, s, "foo")
    a = x.clone()
    a.scatter_reduce_(0, i, s, "sum", include_self=False)
    t = torch.tensor([1., 2., 3.]).scatter_reduce_(0, torch.tensor([0, 0, 2]), torch.tensor(s.numpy()), "sum",
                                                    include_self=False)
    np.testing.assert_array_equal(a.numpy(), t.numpy())


# --- index_add / index_copy / index_fill ----------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_index_ops(dtype):
    x = vals((4, 3), dtype)
    src = vals((5, 3), dtype)
    i = idx([0, 3, 3, -0, 1])
    if dtype != "bool":
        same(P.index_add, torch.index_add, x, 0, i, src)
        same(lambda *a: P.index_add(*a, alpha=2), lambda *a: torch.index_add(*a, alpha=2), x, 0, i.int(), src)
    same(P.index_add, torch.index_add, noncontig(x), 1, idx([2, 0]), noncontig(vals((4, 2), dtype)))
    same(P.index_copy, torch.index_copy, x, 0, idx([3, 0]), vals((2, 3), dtype))
    same(P.index_copy, torch.index_copy, noncontig(x), -1, idx([2]), vals((4, 1), dtype))
    same(P.index_fill, torch.index_fill, x, 1, idx([0, 2, -1]), 1)
    same(P.index_fill, torch.index_fill, x, 0, idx([1]), P.tensor(0, dtype=x.dtype))


def test_index_ops_edges_inplace():
    x = vals((4, 3))
    same(P.index_add, torch.index_add, x, 0, idx([]), vals((0, 3)))
    same(P.index_add, torch.index_add, P.tensor(1.5), 0, idx([0]), P.tensor(2.))
    same(P.index_copy, torch.index_copy, P.tensor(1.5), 0, idx([0]), P.tensor(2.))
    same(P.index_fill, torch.index_fill, P.tensor(1.5), 0, idx([0]), 3.)
    a = x.clone()
    a.index_add_(0, idx([1, 1]), from_values(np.ones((2, 3)), "float32"), alpha=0.5)
    expect = x.numpy().copy()
    expect[1] += 1
    np.testing.assert_allclose(a.numpy(), expect)
    a.index_fill_(1, idx([0]), -1.)
    assert (a.numpy()[:, 0] == -1).all()
    a.index_copy_(0, idx([2]), from_values(np.full((1, 3), 7.), "float32"))
    assert (a.numpy()[2] == 7).all()


def test_index_ops_errors():
    x = vals((2, 3))
    same(P.index_add, torch.index_add, x, 0, idx([0, 0]), vals((2, 4)))
    same(P.index_add, torch.index_add, x, 0, idx([0, 5]), vals((2, 3)))
    same(P.index_add, torch.index_add, x, 0, idx([0, 1]), vals((3, 3)))
    same(P.index_add, torch.index_add, x, 0, P.tensor([0., 1.]), vals((2, 3)))
    same(P.index_add, torch.index_add, x, 0, idx([[0, 1]]), vals((2, 3)))
    same(P.index_add, torch.index_add, x, 0, idx([0, 1]), vals((2, 3), "float64"))
    same(P.index_copy, torch.index_copy, x, 0, idx([0, 5]), vals((2, 3)))
    same(P.index_copy, torch.index_copy, x, 0, idx([0, 1]), vals((2, 4)))
    same(P.index_copy, torch.index_copy, x, 0, idx([0, 1]).int(), vals((2, 3)))
    same(P.index_fill, torch.index_fill, x, 0, idx([0, 5]), 1.)
    same(P.index_fill, torch.index_fill, x, 0, idx([0, 1]).int(), 1.)
    same(P.index_fill, torch.index_fill, x, 1, idx([0]), P.tensor([1.]))
    same(P.index_add, torch.index_add, x, 0, idx([-1]), vals((1, 3)))
    same(P.index_add, torch.index_add, vals((3,)), 0, idx([-1]), vals((1,)))
    same(P.index_add, torch.index_add, vals((3,)), 0, idx([3]), vals((1,)))
    same(P.index_copy, torch.index_copy, x, 0, idx([-1]), vals((1, 3)))
    same(P.scatter_add, torch.scatter_add, x, 0, idx([[-1]]), vals((1, 1)))
    with pytest.raises(RuntimeError, match="index_add_\\(\\): Number of indices \\(2\\) should be equal"):
        P.index_add(x, 0, idx([0, 1]), vals((3, 3)))


# --- take / put / take_along_dim / masked_scatter --------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_take_put(dtype):
    x = vals((3, 4), dtype)
    i = idx(_rng.integers(-12, 12, (2, 5)))
    r = same(P.take, torch.take, noncontig(x), i)
    if dtype != "bfloat16":
        np.testing.assert_array_equal(r.numpy(), np.take(x.numpy(), i.numpy()))
    same(P.take, torch.take, x, idx([]))
    same(P.take, torch.take, P.tensor(3, dtype=x.dtype), idx([0, -1]))
    pi = idx(_rng.permutation(12)[:5])
    same(P.put, torch.put, x, pi, vals((5,), dtype))
    same(P.put, torch.put, noncontig(x), pi.reshape(5, 1), vals((5, 1), dtype))
    if dtype != "bool":
        same(lambda *a: P.put(*a, accumulate=True), lambda *a: torch.put(*a, accumulate=True), x,
             idx([0, 0, -1, 5]), vals((4,), dtype))
    a = x.clone()
    assert a.put_(idx([1]), vals((1,), dtype)) is a


def test_take_put_errors():
    x = vals((2, 3))
    same(P.take, torch.take, x, idx([10]))
    same(P.take, torch.take, x, idx([1]).int())
    same(P.put, torch.put, x, idx([10]), vals((1,)))
    same(P.put, torch.put, x, idx([1, 2]), vals((1,)))
    same(P.put, torch.put, x, idx([1]), vals((1,), "float64"))
    with pytest.raises(IndexError, match="out of range: tried to access index 10 on a tensor of 6 elements."):
        P.take(x, idx([10]))


@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "float32"])
def test_take_along_dim(dtype):
    x = vals((3, 4), dtype)
    same(P.take_along_dim, torch.take_along_dim, x, idx(_rng.integers(0, 4, (3, 2))), 1)
    same(P.take_along_dim, torch.take_along_dim, x, idx(_rng.integers(0, 3, (1, 4))), 0)
    same(P.take_along_dim, torch.take_along_dim, x, idx(_rng.integers(0, 4, (1, 6))), -1)   # broadcast
    same(P.take_along_dim, torch.take_along_dim, noncontig(x), idx([0, 11, 5]))
    same(P.take_along_dim, torch.take_along_dim, x, idx([[0], [1]]).int(), 1)
    same(P.take_along_dim, torch.take_along_dim, x, idx([[[0]]]), 1)
    same(P.take_along_dim, torch.take_along_dim, x, idx(np.zeros((2, 1), dtype=np.int64)), 1)


@pytest.mark.parametrize("dtype", ["bool", "int32", "bfloat16", "float64"])
def test_masked_scatter(dtype):
    x = vals((3, 4), dtype)
    m = from_values(_rng.random((3, 4)) < 0.5, "bool")
    src = vals((20,), dtype)
    same(P.masked_scatter, torch.masked_scatter, x, m, src)
    same(P.masked_scatter, torch.masked_scatter, noncontig(x), from_values([True, False, False, True], "bool"),
         vals((3, 3), dtype))
    same(P.masked_scatter, torch.masked_scatter, vals((4,), dtype), from_values(_rng.random((2, 4)) < .5, "bool"),
         src)
    a = x.clone()
    assert a.masked_scatter_(m, src) is a


def test_masked_scatter_errors():
    x = vals((2, 3))
    same(P.masked_scatter, torch.masked_scatter, x, from_values([True, False, True], "bool"), vals((3,)))
    same(P.masked_scatter, torch.masked_scatter, x, idx([1, 0, 1]), vals((10,)))
    same(P.masked_scatter, torch.masked_scatter, x, from_values([True, False, True], "bool"), vals((10,), "float64"))


# --- repeat / tile / repeat_interleave -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "float32"])
def test_repeat_tile(dtype):
    x = vals((2, 3), dtype)
    for reps in ((2, 1), (1, 1), (2, 3, 2), (0, 2)):
        r = same(lambda t, *a: t.repeat(*a), lambda t, *a: t.repeat(*a), noncontig(x), reps)
        if dtype == "float32":
            np.testing.assert_array_equal(r.numpy(), np.tile(x.numpy(), reps))
    same(P.tile, torch.tile, x, (2,))
    same(P.tile, torch.tile, x, (2, 1, 2))
    same(lambda t, *a: t.repeat(*a), lambda t, *a: t.repeat(*a), P.tensor(1, dtype=x.dtype), (3,))
    same(lambda t, *a: t.repeat(*a), lambda t, *a: t.repeat(*a), x, (2,))
    same(lambda t, *a: t.repeat(*a), lambda t, *a: t.repeat(*a), x, (-1, 2))


def test_repeat_returns_a_copy():
    x = P.arange(6.).reshape(2, 3)
    r = x.repeat(1, 1)
    r.add_(1)
    assert x.numpy()[0, 0] == 0


@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_repeat_interleave(dtype):
    x = vals((2, 3), dtype)
    same(P.repeat_interleave, torch.repeat_interleave, x, 2)
    same(P.repeat_interleave, torch.repeat_interleave, x, 2, 1)
    same(P.repeat_interleave, torch.repeat_interleave, noncontig(x), idx([1, 2]), 0)
    same(P.repeat_interleave, torch.repeat_interleave, x, idx([2]), -1)
    same(P.repeat_interleave, torch.repeat_interleave, x, idx([0, 1, 3]), 1)
    same(P.repeat_interleave, torch.repeat_interleave, P.tensor(1, dtype=x.dtype), 3)
    r = P.repeat_interleave(vals((4,), "float64"), 3)
    np.testing.assert_array_equal(r.numpy(), np.repeat(r.numpy()[::3], 3))
    same(P.repeat_interleave, torch.repeat_interleave, idx([1, 0, 2]))


def test_repeat_interleave_errors():
    x = vals((2, 3))
    same(P.repeat_interleave, torch.repeat_interleave, x, idx([1, 2, 3]), 0)
    same(P.repeat_interleave, torch.repeat_interleave, x, idx([-1, 2]), 0)
    same(P.repeat_interleave, torch.repeat_interleave, x, -1)
    same(P.repeat_interleave, torch.repeat_interleave, x, idx([[2]]), 1)


# --- flip / roll / rot90 -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_flip(dtype):
    x = vals((2, 3, 4), dtype)
    for dims in ((0,), (2,), (-1, 0), (0, 1, 2), ()):
        r = same(P.flip, torch.flip, noncontig(x), dims)
        if dtype == "float64":
            np.testing.assert_array_equal(r.numpy(), np.flip(x.numpy(), dims))
    same(P.flip, torch.flip, x[:, ::2], (1,))
    same(P.flip, torch.flip, P.zeros(0, 3), (0,))
    same(P.flip, torch.flip, P.tensor(2.), (0,))
    assert x.flip(0, 2).shape == (2, 3, 4)
    same(P.fliplr, torch.fliplr, x)
    same(P.flipud, torch.flipud, x)


def test_flip_errors():
    x = vals((2, 3))
    same(P.flip, torch.flip, x, (0, 0))
    same(P.flip, torch.flip, x, (2,))
    same(P.fliplr, torch.fliplr, vals((3,)))
    same(P.flipud, torch.flipud, P.tensor(1.))


@pytest.mark.parametrize("dtype", ["bool", "int16", "float32"])
def test_roll_rot90(dtype):
    x = vals((3, 4), dtype)
    for shifts, dims in ((1, ()), (-5, ()), (2, 1), ((1, -1), (0, 1)), (7, -1), (0, 0)):
        r = same(P.roll, torch.roll, noncontig(x), shifts, dims)
        if dtype == "float32" and dims != ():
            np.testing.assert_array_equal(r.numpy(), np.roll(x.numpy(), shifts, dims))
    same(P.roll, torch.roll, P.zeros(0, 3), 1, 0)
    same(P.roll, torch.roll, x, (1, 1), (0,))
    same(P.roll, torch.roll, x, (), ())
    for k in (-3, -1, 0, 1, 2, 3, 5):
        r = same(P.rot90, torch.rot90, x, k)
        if dtype == "float32":
            np.testing.assert_array_equal(r.numpy(), np.rot90(x.numpy(), k))
    same(P.rot90, torch.rot90, vals((2, 3, 4), dtype), 1, (2, 0))
    same(P.rot90, torch.rot90, x, 1, (0, 0))
    same(P.rot90, torch.rot90, vals((3,), dtype), 1)
    same(P.rot90, torch.rot90, x, 1, (0, 2))


# --- tril / triu / diag / diag_embed -----------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["bool", "uint8", "int64", "float16", "float64"])
def test_tril_triu(dtype):
    x = vals((3, 5), dtype)
    for k in (-4, -1, 0, 2, 9):
        r = same(P.tril, torch.tril, noncontig(x), k)
        same(P.triu, torch.triu, x, k)
        if dtype == "float64":
            np.testing.assert_array_equal(r.numpy(), np.tril(x.numpy(), k))
    same(P.tril, torch.tril, vals((2, 4, 3), dtype), 1)
    same(P.triu, torch.triu, P.zeros(0, 3), 0)
    same(P.tril, torch.tril, vals((3,), dtype))
    a = x.clone()
    assert a.triu_(1) is a
    np.testing.assert_array_equal(a.numpy(), np.triu(x.numpy(), 1))
    out = P.empty(3, 5, dtype=x.dtype)
    assert P.tril(x, out=out) is out


@pytest.mark.parametrize("dtype", ["bool", "int32", "float32"])
def test_diag_and_embed(dtype):
    v, m = vals((4,), dtype), vals((3, 5), dtype)
    for k in (-2, 0, 1, 7):
        same(P.diag, torch.diag, v, k)
        same(P.diag, torch.diag, noncontig(m), k)
    same(P.diag, torch.diag, vals((2, 2, 2), dtype))
    same(P.diag, torch.diag, P.zeros(0), 0)
    before = m.numpy().copy()
    P.diag(m).zero_()                               # a copy, not a view
    np.testing.assert_array_equal(m.numpy(), before)
    x = vals((2, 3), dtype)
    for args in ((), (1,), (-1, 0, 2), (0, 2, 0), (1, -1, -3)):
        same(P.diag_embed, torch.diag_embed, noncontig(x), *args)
    same(P.diag_embed, torch.diag_embed, x, 0, 0, 0)
    same(P.diag_embed, torch.diag_embed, x, 0, 0, 3)


# --- nn.functional.pad --------------------------------------------------------------------------------

F = P.nn.functional
TF = torch.nn.functional


@pytest.mark.parametrize("dtype", ["bool", "int64", "float16", "float32"])
def test_pad_constant(dtype):
    x = vals((2, 3, 4), dtype)
    for pad in ((1, 2), (0, 0, 2, 1), (1, 1, 1, 1, 1, 1), (-1, 2), (-2, -1, 1, 0), (3, -4)):
        same(F.pad, TF.pad, noncontig(x), pad)
    if dtype != "bool":
        same(lambda *a: F.pad(*a, value=5), lambda *a: TF.pad(*a, value=5), x, (1, 1))
    r = F.pad(vals((2, 3), "float64"), (1, 2, 0, 1), value=-1.0)
    x64 = r.numpy()[0:2, 1:4]
    np.testing.assert_array_equal(r.numpy(), np.pad(x64, ((0, 1), (1, 2)), constant_values=-1))


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(mode):
    x = vals((2, 3, 5))
    same(lambda *a: F.pad(*a, mode=mode), lambda *a: TF.pad(*a, mode=mode), x, (2, 1))
    same(lambda *a: F.pad(*a, mode=mode), lambda *a: TF.pad(*a, mode=mode), noncontig(x), (1, 2, 2, 0))
    same(lambda *a: F.pad(*a, mode=mode), lambda *a: TF.pad(*a, mode=mode), vals((1, 2, 3, 4)), (1, 1, 2, 2))
    same(lambda *a: F.pad(*a, mode=mode), lambda *a: TF.pad(*a, mode=mode), vals((1, 2, 3, 3, 3)), (1, 1, 0, 2, 1, 0))
    same(lambda *a: F.pad(*a, mode=mode), lambda *a: TF.pad(*a, mode=mode), x, (-1, 2))
    np_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    x64 = vals((2, 6), "float64")
    np.testing.assert_array_equal(F.pad(x64, (2, 3), mode=mode).numpy(),
                                  np.pad(x64.numpy(), ((0, 0), (2, 3)), mode=np_mode))


def test_pad_errors():
    x = vals((2, 3))
    for pad, kw in (((1,), {}), ((1, 1), {"mode": "reflect", "value": 1.}), ((3, 3), {"mode": "reflect"}),
                    ((1, 1, 1, 1), {"mode": "reflect"}), ((1, 1, 1, 1, 1, 1), {}), ((1, 1), {"mode": "foo"}),
                    ((4, 1), {"mode": "circular"}), ((-4, 1), {}), ((-3, 0), {})):
        same(lambda *a: F.pad(*a, **kw), lambda *a: TF.pad(*a, **kw), x, pad)
    same(lambda *a: F.pad(*a, mode="reflect"), lambda *a: TF.pad(*a, mode="reflect"), vals((3,)), (1, 1))
    same(lambda *a: F.pad(*a, mode="replicate"), lambda *a: TF.pad(*a, mode="replicate"), P.zeros(0, 3), (1, 1))


# --- autograd through the composites ---------------------------------------------------------------

def test_gradients_flow_through_composites():
    x = P.tensor(np.arange(6.).reshape(2, 3), dtype=P.float64, requires_grad=True)
    y = (P.stack([x, x * 2], 0).sum() + x.repeat(2, 1).sum() + x.roll(1, 1)[0, 0] + P.tril(x).sum()
         + x.rot90().sum() + P.repeat_interleave(x, 2, 0).sum() + P.take_along_dim(x, idx([[0], [2]]), 1).sum())
    y.backward()
    xt = torch.tensor(np.arange(6.).reshape(2, 3), requires_grad=True)
    yt = (torch.stack([xt, xt * 2], 0).sum() + xt.repeat(2, 1).sum() + xt.roll(1, 1)[0, 0] + torch.tril(xt).sum()
          + xt.rot90().sum() + torch.repeat_interleave(xt, 2, 0).sum()
          + torch.take_along_dim(xt, torch.tensor([[0], [2]]), 1).sum())
    yt.backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())


@pytest.mark.parametrize("n_threads", [1, 2])
def test_scatter_out_of_range_index_writes_nothing_and_names_the_first(n_threads):
    """Indices are checked as the scatter uses them (no pass of their own), into a fresh
    copy of self: on a bad index self, in place or not, is left as it was, and the error
    names the first bad index in row-major order whatever thread met one first."""
    old = P.get_num_threads()
    P.set_num_threads(n_threads)
    try:
        rng = np.random.default_rng(5)
        self = P.tensor(rng.standard_normal((512, 300)).astype(np.float32))
        before = self.numpy().copy()
        idx = rng.integers(0, 300, (512, 300))
        idx[400, 7] = 300
        idx[100, 3] = -1
        src = P.ones(512, 300)
        for call in (lambda: self.scatter_add(1, P.tensor(idx), src), lambda: self.scatter_add_(1, P.tensor(idx), src),
                     lambda: self.scatter_(1, P.tensor(idx), src)):
            with pytest.raises(RuntimeError, match=r"index -1 is out of bounds for dimension 1 with size 300"):
                call()
            np.testing.assert_array_equal(self.numpy(), before)
        rows = P.tensor(np.r_[rng.integers(0, 512, 2000), [512], rng.integers(0, 512, 10)])
        with pytest.raises(RuntimeError, match=r"index 512 is out of bounds for dimension 0 with size 512"):
            self.index_add_(0, rows, P.ones(2011, 300))
        np.testing.assert_array_equal(self.numpy(), before)
    finally:
        P.set_num_threads(old)


def test_inplace_scatter_kernels_write_self_directly_and_alike():
    """scatter_, scatter_add_, index_add_ and index_copy_ write into self itself (ops.yaml
    inplace_kernel): PyTorch's values, one version bump, self's storage kept, self left as
    it was when an index is out of range, and PyTorch's errors when an operand shares
    self's memory or self's elements share theirs."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    base = rng.standard_normal((6, 5)).astype(np.float32)
    idx = rng.integers(0, 5, (6, 5))
    rows = np.array([4, 0, 4, 2, 1, 5])
    cases = [
        ("scatter_", lambda t, m: t.scatter_(1, m.tensor(idx), m.tensor(base * 2))),
        ("scatter_add_", lambda t, m: t.scatter_add_(1, m.tensor(idx), m.tensor(base * 2))),
        ("index_add_", lambda t, m: t.index_add_(0, m.tensor(rows), m.tensor(base[::-1].copy()), alpha=2)),
        ("index_copy_", lambda t, m: t.index_copy_(0, m.tensor(rows[[1, 3, 4, 5, 0, 2]]), m.tensor(base * 3))),
        # a non-contiguous self (a transposed view) is written through its strides
        ("scatter_add_ on a view", lambda t, m: t.t().scatter_add_(0, m.tensor(idx.T.copy()), m.tensor(base.T.copy()))),
    ]
    for name, fn in cases:
        ours, theirs = P.tensor(base), torch.tensor(base)
        ptr, v0 = ours.data_ptr(), ours._version
        r = fn(ours, P)
        fn(theirs, torch)
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, err_msg=name)
        assert ours.data_ptr() == ptr and ours._version == v0 + 1, name
        assert r.data_ptr() == ptr or name.endswith("on a view"), name
    for fn in (lambda t: t.index_add_(0, P.tensor(rows), t), lambda t: t.scatter_add_(1, P.tensor(idx), t),
               lambda t: t.index_copy_(0, P.tensor(rows[[1, 3, 4, 5, 0, 2]]), t)):
        with pytest.raises(RuntimeError, match="some elements of the input tensor and the written-to tensor"):
            fn(P.tensor(base))
    # strided views sharing memory: PyTorch cannot tell and goes on; so do we, reading the
    # source as it was before the write
    ours, theirs = P.tensor(base), torch.tensor(base)
    for t, m in ((ours, P), (theirs, torch)):
        t[:, :3].index_copy_(1, m.tensor([0, 2]), t[:, 1:3].clone())
    shared = P.tensor(base)
    shared[:, :3].index_copy_(1, P.tensor([0, 2]), shared[:, 1:3])
    np.testing.assert_allclose(shared.numpy(), theirs.numpy())
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        P.zeros(1, 5).expand(6, 5).scatter_add_(1, P.tensor(idx), P.ones(6, 5))
    bad = idx.copy()
    bad[5, 4] = 9
    ours = P.tensor(base)
    with pytest.raises(RuntimeError, match="index 9 is out of bounds"):
        ours.scatter_add_(1, P.tensor(bad), P.ones(6, 5))
    np.testing.assert_array_equal(ours.numpy(), base)
