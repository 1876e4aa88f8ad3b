"""Indexing (`x[index]`, `x[index] = v`) and the indexing operators (index_select,
masked_fill, masked_select, nonzero, index_put_) against PyTorch and NumPy: result
shapes (PyTorch's rule for where the broadcast index dims go), values, which results are
views, writes through views, version counters, every error, and random basic and
advanced indices checked against NumPy with hypothesis."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pytorchlite

try:
    import torch
except ImportError:  # pragma: no cover - the NumPy-only tests still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


# --- the parity helper ----------------------------------------------------------------------

def describe(r, mod):
    if isinstance(r, (tuple, list)):
        return [describe(x, mod) for x in r]
    if isinstance(r, mod.Tensor):
        view = r._base is not None
        # a view's place in memory must agree too; a copy's layout is its own business
        where = (tuple(r.stride()), r.storage_offset()) if view else None
        return ("tensor", tuple(r.shape), str(r.dtype).split(".")[-1], r.tolist(), view, where)
    return ("value", r)


def env(mod):
    return {
        "x": mod.arange(12.).reshape(3, 4),
        "y": mod.arange(12.).reshape(3, 2, 2),
        "z": mod.arange(60).reshape(3, 4, 5),
        "m": mod.tensor([[True, False, True, True], [False] * 4, [True, True, False, True]]),
        "m2": mod.tensor([[True, False, True, True, False]] * 4),
        "s": mod.tensor(5.),
    }


def outcome(mod, src, statement=False):
    scope = env(mod)
    scope.update(torch=mod, np=np)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if statement:
                exec(src, scope)
                return ("ok", scope["x"].tolist(), scope["x"]._version, scope["z"].tolist(), scope["z"]._version)
            return describe(eval(src, scope), mod)
    except Exception as e:  # noqa: BLE001 - errors are part of what is compared
        return ("error", type(e).__name__, str(e).split("\n")[0].replace("torch.", "pytorchlite."))


def assert_parity(src, statement=False):
    theirs = outcome(torch, src, statement)
    ours = outcome(pytorchlite, src, statement)
    assert ours == theirs, f"{src}\n  pytorchlite: {ours}\n  torch:       {theirs}"


# --- x[index] vs PyTorch ------------------------------------------------------------------------

BASIC = [
    "x[1]", "x[-1]", "x[1, 2]", "x[:, 1]", "x[1:]", "x[::2]", "x[1::2, ::3]", "x[:, -3:-1]", "x[5:2]", "x[2:1]",
    "x[1:1]", "x[:, 3:3]", "x[:, 10:]", "x[-100:100]", "x[None]", "x[:, None]", "x[..., None]", "x[None, ..., None]",
    "x[...]", "x[..., ...]", "x[..., 1]", "x[0, ...]", "x[1:2, None, ::2]", "x[(None,) * 5]", "x[0][None]",
    "x[torch.tensor(1)]", "x[torch.tensor(1):]", "x[:torch.tensor(-1)]", "x[np.int64(1)]", "x[0, np.int32(-1)]",
    "y[1, :, 0]", "y[..., 1]", "y[:, None, 1]", "x.t()[1:, ::2]", "x.t()[2]", "x[::2][:, 1::2]",
    "s[None]", "s[...]", "s[..., None]",
    # errors
    "x[::-1]", "x[::0]", "x[0, 0, 0]", "x[5]", "x[-4]", "x[:, 4]", "x[None, 5]", "x[..., 5]", "x[0, ..., 9]",
    "x[1.5]", "x[1.0:]", "x[np.bool_(True)]", "s[0]", "s[(0,)]", "s[torch.tensor(0)]",
]

ADVANCED = [
    "x[[0, 2]]", "x[[2, 0, 2]]", "x[[-1, -3]]", "x[[]]", "x[(0, 1),]", "x[[0, 1], [1, 2]]", "x[[[0, 1], [1, 2]]]",
    "x[[0, [1]]]", "x[np.array([0, 1])]", "x[np.array([[0, 1], [1, 2]])]", "x[np.array([True, False, True])]",
    "x[(np.array([0, 1]),)]", "x[[np.array([0, 1])]]", "x[torch.tensor([[0, 1], [1, 2]])]", "x[[True, False, True]]",
    "x[torch.tensor([0, 1], dtype=torch.int32)]", "x[[0, 1], torch.tensor([0, 1], dtype=torch.int32)]",
    "x[torch.tensor([], dtype=torch.long)]", "x[torch.tensor([], dtype=torch.int32)]", "x[[0, 1.0]]",
    "x[True]", "x[False]", "x[torch.tensor(True)]", "x[torch.tensor(1, dtype=torch.uint8)]",
    "x[torch.tensor(0, dtype=torch.uint8)]", "x[torch.tensor([1, 0, 1], dtype=torch.uint8)]",
    "x[0:2, [0, 1]]", "x[[0, 1], 1:3]", "x[:, [0, 3]]", "x[::2, [0, 3]]", "x[1:, ::3][[0, 1]]", "x.t()[[3, 0]]",
    "x.expand(2, 3, 4)[[1, 0], :, [0, 3]]", "x[:, [0, 1]][[1]]", "x[torch.tensor([0, 1]).t()]",
    "y[[0, 1], :, [0, 1]]", "y[:, [0, 1], [0, 1]]", "y[[0, 1], 1, [0, 1]]", "y[1, :, [0, 1]]", "y[:, 1, [0, 1]]",
    "y[[0, 1], None, [0, 1]]", "y[None, [0, 1], [0, 1]]", "y[[0, 1], ..., [0, 1]]", "y[[[0], [1]], :, [0, 1]]",
    "y[[[0], [1]], True, [0, 1]]", "y[[0], True]", "y[[0], :, True]",
    "z[m]", "z[m, 0:2]", "z[0:2, m2]", "z[m, None]", "z[:, m2, None]", "z[m, [1]]", "z[[1], m2]", "z[..., m2]", "z[m, ...]",
    "z[m, ..., 1]", "z[1, m2]", "z[[0, 2], 1, [1, 2]]", "z[[0, 2], 1:3, 1]", "z[1, 1:3, [0, 2]]",
    "z[torch.tensor(1), 1:3, [0, 2]]", "z[torch.tensor([1]), 1:3, [0, 2]]", "z[[[0], [2]], :, [[1, 2, 3]]]",
    "z[:, [[0], [2]], [[1, 2, 3]]]", "z[[[0], [2]], [[1, 2, 3]]]", "z[:, :, [4, -5]]", "z.transpose(0, 2)[[0, 1], :, [1, 2]]",
    "z[None, [0, 1]]", "z[None, :, [0, 1]]", "z[..., None, [0, 1]]", "z[True, [0, 1]]", "z[[0, 1], False]",
    "z[torch.tensor([1]), torch.tensor([True, False, True, True])]", "z[:, ::2][m[:, ::2]]",
    "s[torch.tensor(True)]", "s[torch.tensor(False)]", "s[None, True]", "s[True]",
    "torch.zeros(0, 3)[[]]", "torch.zeros(0, 3)[:, [0, 1]]", "torch.zeros(0, 3)[:, [5]]", "torch.zeros(3, 0)[[5]]",
    # errors
    "x[torch.tensor([0.])]", "x[torch.tensor([])]", "x[torch.tensor([1], dtype=torch.int16)]",
    "x[torch.tensor([5])]", "x[:, torch.tensor([5])]", "x[:, torch.tensor([-5])]", "x[:, [-5]]", "x[[0, 3]]",
    "x[torch.tensor(5)]", "x[:, torch.tensor(5)]", "x[torch.ones(2, 2, dtype=torch.bool)]",
    "x[torch.ones(3, 2, dtype=torch.bool)]", "x[[True, False]]", "x[torch.tensor([1], dtype=torch.uint8)]",
    "x[[0, 1], [0, 1, 2]]", "x[[[True, False, True, False]] * 3]", "z[m, 1, 1]", "x[torch.arange(6).view(2, 3)[:, ::2]]",
]

OPERATORS = [
    "x.index_select(1, torch.tensor([2, 0, 2]))", "x.index_select(0, torch.tensor([1]))", "x.t().index_select(0, torch.tensor([3, 1]))",
    "x.index_select(-1, torch.tensor(1))", "torch.index_select(x, 1, torch.tensor([1], dtype=torch.int32))",
    "x.index_select(1, torch.tensor([], dtype=torch.long))", "x.index_select(1, torch.tensor([[1]]))",
    "x.index_select(1, torch.tensor([1.]))", "x.index_select(2, torch.tensor([1]))",
    "torch.index_select(s, 0, torch.tensor([0]))", "torch.index_select(s, 0, torch.tensor(0))",
    "torch.arange(6.).masked_fill(torch.tensor([True, False] * 3), 7)",
    "torch.arange(6.).masked_fill(torch.tensor([1, 0] * 3), 7)",
    "torch.arange(6.).masked_fill(torch.tensor([True, False] * 3), torch.tensor([7.]))",
    "torch.arange(6.).masked_fill(torch.tensor([True, False] * 3), torch.tensor(7))",
    "torch.arange(6).masked_fill(torch.tensor([True, False] * 3), 7.5)",
    "torch.arange(6).masked_fill(torch.tensor([True, False] * 3), torch.tensor(7.5))",
    "torch.arange(6).masked_fill(torch.tensor([True, False] * 3), True)",
    "torch.arange(6).reshape(1, 6).masked_fill(torch.ones(2, 1, dtype=torch.bool), 7.5)",
    "torch.arange(6).reshape(1, 6).masked_fill(torch.ones(2, 2, dtype=torch.bool), 7.5)",
    "x.t().masked_fill(torch.tensor([True, False, True]), -1.)", "s.masked_fill(torch.tensor(True), 2)",
    "torch.masked_fill(torch.zeros(2, 0), torch.tensor(True), 1.)",
    "torch.arange(6.).masked_select(torch.tensor([True, False] * 3))",
    "torch.arange(6.).masked_select(torch.tensor([1, 0] * 3))",
    "torch.arange(6.).reshape(1, 6).masked_select(torch.ones(2, 1, dtype=torch.bool))",
    "s.masked_select(torch.tensor(True))", "s.masked_select(torch.tensor([True, False]))", "x.t().masked_select(m.t())",
    "torch.tensor([[1, 0], [0, 3]]).nonzero()", "torch.tensor([[1, 0], [0, 3]]).nonzero(as_tuple=True)",
    "torch.tensor(5).nonzero()", "torch.tensor(5).nonzero(as_tuple=True)", "torch.tensor(0).nonzero(as_tuple=True)",
    "torch.nonzero(torch.tensor([0., -0., float('nan'), 1]))", "torch.nonzero(torch.zeros(2, 0))",
    "torch.nonzero(x.t())", "torch.nonzero(m, as_tuple=True)", "x.t().nonzero()",
    "torch.zeros(3).index_put_((torch.tensor([0, 0]),), torch.tensor([1., 2]), accumulate=True)",
    "torch.zeros(3).index_put((torch.tensor([0, 0]),), torch.tensor(1.), accumulate=True)",
    "torch.zeros(3).index_put_((torch.tensor([0, 0]),), torch.tensor([1, 2]), accumulate=True)",
    "torch.zeros(3).index_put_((torch.tensor([0, 5]),), torch.tensor([1., 2]), accumulate=True)",
    "torch.zeros(3).index_put_([torch.tensor([0, 2])], torch.tensor([1., 2]))",
    "torch.zeros(3).index_put_((torch.tensor([True, False, True]),), torch.tensor([1., 2]))",
    "torch.zeros(2, 3).index_put_((torch.tensor([1, 1, 0]), torch.tensor([0, 0, 2])), torch.tensor([1., 2, 3]), True)",
    "torch.zeros(2, 3).index_put_((torch.tensor([1]),), torch.tensor([1., 2, 3]))",
    "torch.zeros(2, 3).index_put_((torch.tensor([1]),), torch.tensor([1., 2]))",
    "torch.index_put(x, (torch.tensor([1]), torch.tensor([2])), torch.tensor(-1.))",
    "torch.arange(5).split(torch.tensor(2))", "torch.split(torch.arange(5), [2, 3])",
]


@needs_torch
@pytest.mark.parametrize("src", BASIC + ADVANCED + OPERATORS)
def test_getitem_and_operators_match_torch(src):
    assert_parity(src)


SETITEM = [
    "x[0] = 5", "x[0] = torch.tensor([1., 2, 3, 4])", "x[:, 1] = torch.tensor([[[7.]]])", "x[0:2] = torch.ones(1, 1, 4)",
    "x[0:2] = torch.zeros(3)", "x[...] = 1", "x[None] = 2", "x[1:, ::2] = torch.tensor([1, 2])", "x[0] = torch.tensor(3)",
    "x[0] = [1, 2, 3, 4]", "x[0] = np.array([1, 2, 3, 4])", "x[0] = 'a'", "x[0] = None", "x[0] = np.float32(2.5)",
    "x[0] = np.int64(2)", "x[0] = np.float64(2.5)", "x[0] = True", "x[0] = np.bool_(True)", "x.t()[1] = -1.",
    "x[::-1] = 1", "x[5] = 1", "x[0:0] = torch.ones(5)", "x[1] = x[0]", "x[:, 1] = x[:, 2]",
    "x[[0, 2]] = 1", "x[[0, 2]] = torch.tensor([1., 2, 3, 4])", "x[[0, 2]] = torch.tensor([[1.], [2]])",
    "x[[0, 2]] = torch.tensor([1, 2, 3, 4])", "x[[0, 2]] = torch.tensor(3)", "x[[0, 2]] = torch.tensor(3.)",
    "x[[0, 2]] = torch.ones(3)", "x[[0, 2], [1, 5]] = 1", "x[:, [0, 2]] = torch.tensor([[1., 2]])",
    "x[torch.tensor([True, False, True])] = torch.arange(4.)",
    "x[torch.tensor([True, False, True])] = torch.arange(8.).view(2, 4)",
    "x[[1, 1, 1], [0, 0, 0]] = torch.tensor(5.)", "x[True] = 3", "x[False] = 3", "x[False] = 'a'",
    "x[1, [0, 1]] = torch.tensor([5., 6])", "x[[0, 1], 1:3] = torch.tensor([[1., 2], [3, 4]])",
    "x[[0, 1], 1:3] = torch.tensor([[[1., 2], [3, 4]]])", "x[torch.tensor([0.])] = 1", "x[[0, 1]] = [1., 2.]",
    "z[1, :, [0, 2]] = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])", "z[[0, 1], :, [0, 2]] = torch.arange(8).view(2, 4)",
    "z[:, [0, 1], [0, 2]] = torch.tensor([100, 200])", "z[[[0], [1]], [[1, 2]]] = torch.tensor(-1)",
    "z[..., [4, -5]] = 0", "z[None, [0, 1], None] = torch.arange(40).view(2, 1, 4, 5)", "z[m] = -7", "z[:, m2] = 9",
    "x[[1, 2, 3]] = x[:-1]", "x.view(-1)[[1, 2, 3]] = x.view(-1)[:3]", "x[[0, 1]] = x[[1, 0]]", "x[:, [0, 1]] = x[:, 2:].clone()",
    "x.t()[[0, 1]] = torch.tensor(1.)", "x[[]] = 5", "x[torch.tensor([], dtype=torch.long)] = torch.ones(4)",
    "x[::2, [1, 3]] = torch.tensor([[1.], [2.]])", "x.t()[::2, [0, 2]] = -2.",
    "x.index_put_((torch.tensor([0, 0]), torch.tensor([1, 1])), torch.tensor([1., 2]), accumulate=True)",
    "x.index_put_((torch.tensor([0, 0]),), torch.tensor([1., 2, 3, 4]), accumulate=True)",
    "x.index_put_((torch.tensor([True, False, True]),), torch.tensor(2.))",
    "x.index_put_((torch.tensor([1]),), torch.tensor(2))",
    "x[1:].masked_fill_(torch.tensor([True, False, True, False]), -1.)",
    "x.t()[1:].masked_fill_(torch.tensor([True, False, True]), -1.)",
    "x.masked_fill_(torch.tensor([True, False, True]), -1.)",
    "x.masked_fill_(torch.tensor([[True], [False], [True]]), torch.tensor(-3))",
    "x.resize_(2, 2).masked_fill_(torch.ones(1, 1, dtype=torch.bool), 0.5)",
]


@needs_torch
@pytest.mark.parametrize("src", SETITEM)
def test_setitem_matches_torch(src):
    assert_parity(src, statement=True)


@needs_torch
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_advanced_dtypes_match_torch(dtype):
    def run(mod):
        dt = getattr(mod, dtype)
        x = mod.tensor([[0, 1, 2, 3], [4, 5, 0, 7], [1, 0, 3, 2]], dtype=dt)
        got = [x[[2, 0]].tolist(), x[:, [3, 0]].tolist(), x.t()[[1, 1]].tolist(),
               x[mod.tensor([[True, False, True, False]] * 3)].tolist(), x.nonzero().tolist(),
               x.index_select(1, mod.tensor([2, 1])).tolist(), x.masked_fill(mod.tensor([True, False, True, True]), 1).tolist()]
        x[[1, 2], [0, 3]] = mod.tensor([1, 0], dtype=dt)
        x.index_put_((mod.tensor([0, 0]), mod.tensor([1, 1])), mod.tensor([1, 1], dtype=dt), accumulate=True)
        got.append(x.tolist())
        return got
    assert run(pytorchlite) == run(torch)


# --- what indexing results are --------------------------------------------------------------

def test_basic_index_is_a_view_that_writes_through():
    x = pytorchlite.arange(12.).reshape(3, 4)
    v = x[1:, ::2]
    assert v._base is x._base and v.untyped_storage() is x.untyped_storage()
    assert v.stride() == (4, 2) and v.storage_offset() == 4
    v[0, 1] = 100.
    assert x[1, 2].item() == 100.
    assert x._version == v._version == 1


def test_advanced_index_is_a_copy():
    x = pytorchlite.arange(12.).reshape(3, 4)
    r = x[[0, 2]]
    assert r._base is None and r.untyped_storage() is not x.untyped_storage()
    r.fill_(0)
    assert x[0, 1].item() == 1.
    assert x._version == 0


def test_setitem_bumps_the_version_once_and_through_views():
    x = pytorchlite.zeros(3, 4)
    v = x[1:]
    x[0] = 1.
    assert x._version == v._version == 1
    v[[0, 1], [0, 0]] = 2.
    assert x._version == 2 and x[:, 0].tolist() == [1., 2., 2.]
    x[pytorchlite.tensor([True, False, False])] = 3.
    assert x._version == 3
    x.index_put_((pytorchlite.tensor([0]),), pytorchlite.tensor(4.), accumulate=True)
    assert x._version == 4 and x[0, 0].item() == 7.


def test_failed_setitem_leaves_the_tensor_unchanged():
    x = pytorchlite.arange(6.)
    with pytest.raises(IndexError, match="index 6 is out of bounds for dimension 0 with size 6"):
        x[[0, 1, 6]] = -1.
    with pytest.raises(IndexError, match="index -7 is out of bounds"):
        x.index_put_((pytorchlite.tensor([0, -7]),), pytorchlite.tensor(1.), accumulate=True)
    assert x.tolist() == [0., 1., 2., 3., 4., 5.] and x._version == 0


def test_setitem_value_errors():
    x = pytorchlite.zeros(3)
    with pytest.raises(TypeError, match="invalid data type 'str'"):
        x["a"]
    with pytest.raises(TypeError, match="can't assign a list to a pytorchlite.FloatTensor"):
        x[0:2] = [1, 2]
    with pytest.raises(RuntimeError, match=r"shape mismatch: value tensor of shape \[3\] cannot be broadcast to "
                                           r"indexing result of shape \[2\]"):
        x[[0, 1]] = pytorchlite.ones(3)
    with pytest.raises(RuntimeError, match="Index put requires the source and destination dtypes match, got Float "
                                           "for the destination and Long for the source."):
        x[[0, 1]] = pytorchlite.tensor([1, 2])
    with pytest.raises(RuntimeError, match=r"The expanded size of the tensor \(2\) must match the existing size \(3\)"):
        x[0:2] = pytorchlite.zeros(3)
    with pytest.raises(ValueError, match="step must be greater than zero"):
        x[::-1] = 1.
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool tensors"):
        x[pytorchlite.tensor([0.5])] = 1.


def test_result_dims_adjacent_vs_separated():
    z = pytorchlite.zeros(5, 6, 7, 8)
    i = pytorchlite.tensor([[0, 1, 2]])     # broadcast shape [1, 3]
    assert z[:, i, i].shape == (5, 1, 3, 8)         # adjacent: replaces them in place
    assert z[:, i, :, i].shape == (1, 3, 5, 7)      # separated: broadcast dims go first
    assert z[i, :, :, i].shape == (1, 3, 6, 7)
    assert z[..., i].shape == (5, 6, 7, 1, 3)
    assert z[:, 1, :, i].shape == (5, 7, 1, 3)      # an int is a view (select), not an index


def test_large_gather_and_scatter_match_numpy():
    # big enough for the kernels' multi-threaded path
    rng = np.random.default_rng(0)
    a = rng.standard_normal((300, 257)).astype(np.float32)
    rows = rng.integers(-300, 300, size=200)
    cols = rng.integers(0, 257, size=(50, 1))
    x = pytorchlite.tensor(a)
    np.testing.assert_array_equal(x[pytorchlite.tensor(rows)].numpy(), a[rows])
    np.testing.assert_array_equal(x[:, pytorchlite.tensor(cols[:, 0])].numpy(), a[:, cols[:, 0]])
    np.testing.assert_array_equal(x.t()[pytorchlite.tensor(cols)].numpy(), a.T[cols])
    v = rng.standard_normal((200, 257)).astype(np.float32)
    uniq = np.unique(rows % 300)[:150]
    x[pytorchlite.tensor(uniq)] = pytorchlite.tensor(v[:len(uniq)])
    a[uniq] = v[:len(uniq)]
    np.testing.assert_array_equal(x.numpy(), a)
    # accumulate sums repeated indices (np.add.at is the unbuffered oracle)
    acc = pytorchlite.zeros(300, 257, dtype=pytorchlite.float64)
    w = rng.standard_normal((200, 257))
    acc.index_put_((pytorchlite.tensor(rows),), pytorchlite.tensor(w), accumulate=True)
    expected = np.zeros((300, 257))
    np.add.at(expected, rows, w)
    np.testing.assert_allclose(acc.numpy(), expected, rtol=1e-12, atol=1e-12)


def test_masks_match_numpy():
    rng = np.random.default_rng(1)
    a = rng.standard_normal((4, 5, 6))
    m = rng.random((4, 5)) > 0.5
    x = pytorchlite.tensor(a)
    np.testing.assert_array_equal(x[pytorchlite.tensor(m)].numpy(), a[m])
    np.testing.assert_array_equal(x.masked_select(pytorchlite.tensor(a > 0)).numpy(), a[a > 0])
    np.testing.assert_array_equal(x.nonzero().numpy(), np.argwhere(a))
    for got, want in zip(x.nonzero(as_tuple=True), np.nonzero(a)):
        np.testing.assert_array_equal(got.numpy(), want)
    x[pytorchlite.tensor(m)] = 0.
    a[m] = 0.
    np.testing.assert_array_equal(x.numpy(), a)
    np.testing.assert_array_equal(x.masked_fill(pytorchlite.tensor(m[..., None]), 2.).numpy(),
                                  np.where(m[..., None], 2., a))


def test_cuda_tensors_say_there_is_no_kernel():
    # the CPU-only kernels refuse other devices by name (exercised without a GPU via dispatch)
    from pytorchlite.generated import dispatch
    assert "cpu" in dispatch.OP_index_select.kernels and "cuda" not in dispatch.OP_index_select.kernels


# --- random indices vs NumPy (hypothesis) -------------------------------------------------------

@st.composite
def basic_case(draw):
    shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=4)))
    items = []
    dim = 0
    use_ellipsis = draw(st.booleans())
    ellipsis_at = draw(st.integers(0, len(shape))) if use_ellipsis else -1
    while dim < len(shape):
        if dim == ellipsis_at:
            items.append(Ellipsis)
            ellipsis_at = -1
            dim = len(shape) - draw(st.integers(0, len(shape) - dim))
            continue
        kind = draw(st.sampled_from(["int", "slice", "none", "skip"]))
        n = shape[dim]
        if (kind == "int" and n == 0) or (kind == "skip" and Ellipsis in items):
            kind = "slice"      # items after an Ellipsis must reach the last dim
        if kind == "int":
            items.append(draw(st.integers(-n, n - 1)))
            dim += 1
        elif kind == "slice":
            start = draw(st.none() | st.integers(-6, 6))
            stop = draw(st.none() | st.integers(-6, 6))
            step = draw(st.none() | st.integers(1, 4))
            items.append(slice(start, stop, step))
            dim += 1
        elif kind == "none":
            items.append(None)
        else:
            break
    if draw(st.booleans()):
        items.append(None)
    return shape, tuple(items)


@settings(max_examples=300, deadline=None)
@given(basic_case(), st.sampled_from(["c", "t", "step"]))
def test_basic_indexing_matches_numpy(case, layout):
    shape, index = case
    n = int(np.prod(shape))
    a = np.arange(n, dtype=np.float64).reshape(shape)
    if layout == "t" and len(shape) >= 2:    # a permuted tensor (non-contiguous), same values
        x = pytorchlite.tensor(np.ascontiguousarray(a.T)).permute(*range(len(shape) - 1, -1, -1))
    elif layout == "step":                   # every other element of a larger storage
        x = pytorchlite.tensor(np.arange(2 * n, dtype=np.float64))[::2].view(shape)
        a = np.arange(2 * n, dtype=np.float64)[::2].reshape(shape)
    else:
        x = pytorchlite.tensor(a)
    r = x[index]
    expected = a[index]
    assert tuple(r.shape) == expected.shape
    np.testing.assert_array_equal(r.numpy(), expected)
    assert r.untyped_storage() is x.untyped_storage()    # a view
    # writing through the same index writes the same elements as NumPy
    a = a.copy()
    vals = np.arange(expected.size, dtype=np.float64).reshape(expected.shape) + 1000
    x[index] = pytorchlite.tensor(vals)
    a[index] = vals
    np.testing.assert_array_equal(x.numpy(), a)
    x[index] = -5.
    a[index] = -5.
    np.testing.assert_array_equal(x.numpy(), a)


@st.composite
def advanced_case(draw):
    """Integer arrays mixed with slices / None / Ellipsis (no ints: NumPy treats an int
    beside arrays as an array, PyTorch as a select, so there the two rules differ)."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    # arrays of at least one dim: a 0-d one counts as an int (a select) in PyTorch
    bshape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=2)))
    items = []
    kinds = [draw(st.sampled_from(["array", "slice", "none", "array"])) for _ in shape]
    if "array" not in kinds:
        kinds[draw(st.integers(0, len(shape) - 1))] = "array"
    for n, kind in zip(shape, kinds):
        if kind == "array":
            sub = bshape[len(bshape) - draw(st.integers(1, len(bshape))):]
            arr = np.array(draw(st.lists(st.integers(-n, n - 1), min_size=int(np.prod(sub)),
                                         max_size=int(np.prod(sub))))).reshape(sub).astype(np.int64)
            items.append(arr)
        elif kind == "slice":
            items.append(slice(draw(st.none() | st.integers(-5, 5)), draw(st.none() | st.integers(-5, 5)),
                               draw(st.none() | st.integers(1, 3))))
        else:
            items.append(None)
            items.append(slice(None))
    return shape, tuple(items)


@settings(max_examples=300, deadline=None)
@given(advanced_case())
def test_advanced_indexing_matches_numpy(case):
    shape, index = case
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = pytorchlite.tensor(a)
    ours = tuple(pytorchlite.tensor(i) if isinstance(i, np.ndarray) else i for i in index)
    expected = a[index]
    r = x[ours]
    assert tuple(r.shape) == expected.shape
    np.testing.assert_array_equal(r.numpy(), expected)
    # scatter: unique positions make the written values well defined
    vals = np.arange(expected.size, dtype=np.float32).reshape(expected.shape) + 100
    b = a.copy()
    b[index] = vals
    probe = np.zeros(shape, dtype=np.float32)
    probe[index] = 1
    if probe.sum() == expected.size:         # no element written twice
        x[ours] = pytorchlite.tensor(vals)
        np.testing.assert_array_equal(x.numpy(), b)


def test_zero_dim_masks_in_index_put():
    # a 0-d mask covers no dim: like x[True] / x[False] (PyTorch asserts internally on some of these)
    x = pytorchlite.zeros(3)
    x.index_put_((pytorchlite.tensor(False),), pytorchlite.tensor(1.))
    assert x.tolist() == [0., 0., 0.]
    x.index_put_((pytorchlite.tensor(True),), pytorchlite.tensor(1.))
    assert x.tolist() == [1., 1., 1.]
    y = pytorchlite.zeros(2, 3).index_put((pytorchlite.tensor(True), pytorchlite.tensor([0])), pytorchlite.tensor([5.]))
    assert y.tolist() == [[5., 5., 5.], [0., 0., 0.]]


def test_many_dims_index_up_to_and_beyond_the_descriptor_limit():
    v = pytorchlite.arange(6.).view([1] * 63 + [6])      # 64 dims: the kernels take them
    assert v[[0]].dim() == 64 and v[..., [5, 0]].tolist() == pytorchlite.tensor([5., 0.]).view(
        [1] * 63 + [2]).tolist()
    w = pytorchlite.arange(6.).view([1] * 65 + [6])       # beyond the descriptors' 64 dims
    assert w.dim() == 66
    assert w[[0]].dim() == 66 and w[..., [4, 1]].reshape(-1).tolist() == [4., 1.]
    w[..., [4, 1]] = -1.0
    assert w.reshape(-1).tolist() == [0., -1., 2., 3., -1., 5.]


def test_out_of_range_indices_fuzz_matches_numpy():
    """Random index values, many out of range: an IndexError exactly when NumPy raises
    one, and a failed write changes nothing (every index is checked before any write)."""
    rng = np.random.default_rng(2)
    for _ in range(300):
        shape = tuple(rng.integers(1, 5, size=rng.integers(1, 4)))
        a = rng.standard_normal(shape)
        k = int(rng.integers(1, len(shape) + 1))
        m = int(rng.integers(0, 4))
        idx = tuple(rng.integers(-2 * n, 2 * n, size=m) for n in shape[:k])
        x = pytorchlite.tensor(a)
        ours_idx = tuple(pytorchlite.tensor(i) for i in idx)
        try:
            expected = a[idx]
        except IndexError:
            with pytest.raises(IndexError, match="out of bounds"):
                x[ours_idx]
            with pytest.raises(IndexError, match="out of bounds"):
                x[ours_idx] = 1.
            np.testing.assert_array_equal(x.numpy(), a)
            assert x._version == 0
            continue
        np.testing.assert_array_equal(x[ours_idx].numpy(), expected)
