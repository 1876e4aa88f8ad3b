"""Views and shape operators against PyTorch (sizes, strides, offsets, values, errors) and
NumPy (values), plus what makes a view a view: shared storage, writes that land in the
base, one version counter, and the copy `reshape` makes when strides cannot express it."""

import numpy as np
import pytest

import pytorchlite

try:
    import torch
except ImportError:  # pragma: no cover - the NumPy-only tests still run
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

ALL_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


# --- the parity helper ----------------------------------------------------------------------

def describe(r, mod):
    """What must agree between the two libraries: for a tensor its shape, strides,
    storage offset, dtype and values; for an error its type and first line."""
    if isinstance(r, (tuple, list)):
        return [describe(x, mod) for x in r]
    if isinstance(r, mod.Tensor):
        return ("tensor", tuple(r.shape), tuple(r.stride()), r.storage_offset(), str(r.dtype).split(".")[-1],
                r.tolist())
    return ("value", r)


def outcome(mod, src, env):
    scope = dict(env(mod))
    scope.update(torch=mod, np=np)
    try:
        return describe(eval(src, scope), mod)
    except Exception as e:  # noqa: BLE001 - errors are part of what is compared
        return ("error", type(e).__name__, str(e).split("\n")[0].replace("torch.", "pytorchlite."))


def assert_parity(src, env):
    """Evaluate `src` with `torch` bound to PyTorch and to pytorchlite; same outcome."""
    theirs = outcome(torch, src, env)
    ours = outcome(pytorchlite, src, env)
    assert ours == theirs, f"{src}\n  pytorchlite: {ours}\n  torch:       {theirs}"


def env_x(mod):
    return {"x": mod.arange(6.).reshape(2, 3), "y": mod.arange(24).reshape(2, 3, 4)}


# --- metadata and values vs PyTorch ---------------------------------------------------------

CASES = [
    # view / reshape (computeStride), -1 inference and its errors
    "x.view(2, 5)", "x.view(6)", "x.view(-1)", "x.view(3, -1)", "x.view((3, 2))", "x.t().view(6)", "x.t().view(3, 2)",
    "x.view(-1, -1)", "x.view(-1, 4)", "x.view(-2, 3)", "x.view(0, -1)", "x.view(())", "x.view(1, 2, 1, 3, 1)",
    "torch.zeros(0, 3).view(-1, 0)", "torch.zeros(0, 3).view(0, -1)", "torch.zeros(0, 3).view(-1)",
    "torch.zeros(0, 3).view(3, 0, 1)", "torch.tensor(1.).view(())", "torch.tensor(1.).view(1, 1)",
    "torch.tensor(1.).view(-1)", "x[:, :2].view(4)", "y[:, :, :2].view(6, 2)", "y.transpose(0, 1).view(3, 8)",
    "y.transpose(0, 1).view(3, 2, 2, 2)", "torch.zeros(4, 1, 3).expand(4, 5, 3).view(4, 15)",
    "torch.zeros(4, 1, 3).expand(4, 5, 3).view(20, 3)", "torch.zeros(4, 1, 3)[:, :, ::2].view(4, 1, 1, 2)",
    "torch.zeros(4, 1, 3)[:, :, ::2].view(8)", "x.view_as(torch.zeros(3, 2))",
    "x.reshape(3, -1)", "x.t().reshape(6)", "x.t().reshape(3, 2)", "x.t().reshape(-1, 1)", "x.reshape(7)",
    "torch.reshape(x, (6,))", "x.reshape_as(torch.zeros(3, 2))", "x.unsqueeze(0).expand(3, 2, 3).reshape(6, 3)",
    "x.unsqueeze(0).expand(3, 2, 3).reshape(3, 6)", "x.unsqueeze(1).expand(2, 3, 3).reshape(6, 3)",
    "y.permute(2, 0, 1).reshape(4, 6)", "y[:, ::2].reshape(-1)",
    # view(dtype)
    "x.view(torch.int32)", "x.view(torch.int64)", "x.view(torch.float16)", "x.t().view(torch.float16)",
    "x[:, :1].view(torch.float16)", "x.view(torch.uint8)", "torch.tensor(1.).view(torch.int16)",
    "torch.arange(4, dtype=torch.int16)[1:].view(torch.int32)",
    # expand
    "x.expand(3, 3)", "x.expand(2, 2, 3)", "x.expand(-1, 3)", "x.expand(-1, -1, 3)", "x.expand(3, -1)", "x.expand(1, 3)",
    "x.expand(2)", "x[:, :1].expand(2, 4)", "x.expand(2, -2)", "x.expand(0, 2, 3)", "x.expand(1, 2, 3)",
    "torch.zeros(0).expand(2, 0)", "torch.tensor(1.).expand(2, 3)", "x.expand_as(torch.zeros(4, 2, 3))",
    # transpose / t / permute / movedim
    "x.transpose(0, 1)", "x.transpose(0, 2)", "x.transpose(-3, 0)", "y.transpose(-1, 0)", "x.t()", "y.t()",
    "torch.tensor(1.).t()", "torch.zeros(4).t()", "torch.t(x)", "x.swapaxes(0, 1)", "x.swapdims(0, 1)",
    "x.permute(1, 0)", "x.permute((1, 0))", "y.permute(2, 0, 1)", "x.permute(1, 1)", "x.permute(0, 2)", "x.permute(-1, 0)",
    "torch.tensor(1.).permute(())", "torch.permute(y, (1, 2, 0))", "torch.tensor(1.).transpose(0, -1)",
    "y.movedim(0, 2)", "y.movedim((0, 1), (2, 0))", "y.movedim((0, 0), (2, 1))", "y.movedim((0, 1), (2, 2))",
    "y.movedim((0, 1), (2,))", "y.moveaxis(-1, 0)", "torch.movedim(y, 1, -1)", "torch.tensor(1.).movedim(0, 0)",
    "x.movedim(2, 0)", "x.movedim(0, 2)",
    # squeeze / unsqueeze / flatten / unflatten
    "x.squeeze(0)", "x.squeeze(2)", "x.squeeze(-3)", "torch.zeros(1, 2, 1).squeeze()", "torch.zeros(1, 2, 1).squeeze((0, 2))",
    "torch.zeros(1, 2, 1).squeeze((0, 0))", "torch.zeros(1, 2, 1).squeeze((0, 5))", "torch.zeros(1, 2, 1).squeeze(-1)",
    "torch.tensor(1.).squeeze()", "torch.tensor(1.).squeeze(0)", "torch.tensor(1.).squeeze(-1)", "torch.tensor(1.).squeeze(1)",
    "torch.squeeze(torch.zeros(1, 1, 0))", "torch.zeros(1, 0, 1).squeeze(1)",
    "x.unsqueeze(0)", "x.unsqueeze(1)", "x.unsqueeze(2)", "x.unsqueeze(-1)", "x.unsqueeze(3)", "x.unsqueeze(-4)",
    "x.t().unsqueeze(1)", "torch.tensor(1.).unsqueeze(0)", "torch.tensor(1.).unsqueeze(-1)", "torch.tensor(1.).unsqueeze(-2)",
    "x.flatten()", "x.t().flatten()", "torch.tensor(1.).flatten()", "y.flatten(1)", "y.flatten(2, 1)", "y.flatten(0, -2)",
    "y.permute(2, 0, 1).flatten(1)", "x.flatten(0, 0)", "torch.tensor(1.).flatten(0, 0)", "torch.flatten(y, -2)",
    "x.unflatten(1, (3, 1))", "x.unflatten(1, (-1, 1))", "x.unflatten(1, (2, 2))", "x.unflatten(1, ())",
    "x.unflatten(-1, (3,))", "torch.zeros(2, 0).unflatten(1, (3, 0))", "torch.zeros(2, 0).unflatten(1, (-1, 2))",
    "x.t().unflatten(0, (3, 1))", "x.unflatten(-1, (3, 3))",
    # narrow / select / unbind / split / chunk / tensor_split
    "x.narrow(1, 1, 2)", "x.narrow(1, 2, 2)", "x.narrow(1, -1, 1)", "x.narrow(1, -4, 1)", "x.narrow(1, 0, -1)",
    "x.narrow(1, 3, 0)", "x.narrow(1, 4, 0)", "torch.tensor(1.).narrow(0, 0, 1)", "x.narrow(2, 0, 1)", "x.t().narrow(0, 1, 2)",
    "x.select(1, 2)", "x.select(1, 3)", "x.select(1, -3)", "x.select(1, -4)", "x.select(-1, 0)", "x.select(2, 0)",
    "torch.tensor(1.).select(0, 0)", "torch.select(y, 2, 3)",
    "x.unbind(1)", "torch.unbind(x)", "torch.tensor(1.).unbind()", "torch.zeros(0, 2).unbind()", "y.unbind(-1)",
    "x.split(2, 1)", "x.split([1, 2], 1)", "x.split([1, 1], 1)", "x.split(0, 1)", "x.split(-1, 1)", "x.split(5, 1)",
    "x.split(1, 2)", "torch.zeros(0).split(0)", "torch.zeros(0, 3).split(2)", "torch.tensor(1.).split(1)",
    "torch.split(x, 1)", "torch.split(x, [2, 1], dim=-1)", "x.split([3, -1], 1)", "x.split_with_sizes([1, 2], 1)",
    "x.chunk(2, 1)", "x.chunk(4, 1)", "torch.zeros(5).chunk(3)", "torch.zeros(5).chunk(4)", "torch.zeros(6).chunk(4)",
    "torch.zeros(0).chunk(3)", "x.chunk(0)", "x.chunk(-1)", "torch.tensor(1.).chunk(1)", "x.chunk(1, 2)", "torch.chunk(y, 2, -1)",
    "x.tensor_split(2, 1)", "torch.zeros(7).tensor_split(3)", "torch.zeros(7).tensor_split([1, 5])",
    "torch.zeros(7).tensor_split((5, 1))", "torch.zeros(7).tensor_split(0)", "torch.zeros(7).tensor_split([-2, 10])",
    "torch.zeros(7).tensor_split(torch.tensor(3))", "torch.zeros(7).tensor_split(torch.tensor([1, 5]))",
    "torch.zeros(7).tensor_split(torch.tensor([1.]))", "torch.zeros(7).tensor_split(torch.tensor([[1]]))",
    "torch.tensor(1.).tensor_split(1)", "torch.tensor_split(y, 3, dim=-1)", "torch.tensor_split(y, [1], 1)",
    # as_strided / diagonal / unfold / ravel
    "x.as_strided((2, 2), (1, 2))", "x.as_strided((2, 2), (1, 2), 1)", "x.as_strided((2, 2), (1, 2), 10)",
    "x.as_strided((2, 2), (1, -2))", "x.as_strided((2,), (1, 2))", "x[:, 1:].as_strided((2, 2), (1, 2))",
    "x.as_strided((2, 2), (1, 2), -1)", "x.as_strided((2, 0), (1, 2), 100)", "x.as_strided((6,), (0,), 5)",
    "torch.as_strided(x, (3,), (2,))",
    "x.diagonal()", "x.diagonal(1)", "x.diagonal(-1)", "x.diagonal(5)", "x.diagonal(-5)", "x.diagonal(0, 1, 0)",
    "x.diagonal(0, 0, 0)", "y.diagonal(0, -1, 0)", "y.diagonal(1, 1, 2)", "torch.tensor(1.).diagonal()",
    "x.diagonal(0, -2, -1)", "torch.diagonal(y, -1, 2, 1)", "x.t().diagonal()",
    "torch.arange(7.).unfold(0, 2, 2)", "torch.arange(7.).unfold(0, 3, 1)", "x.unfold(1, 2, 1)", "x.unfold(0, 3, 1)",
    "x.unfold(1, 2, 0)", "x.unfold(1, 0, 1)", "torch.tensor(1.).unfold(0, 1, 1)", "torch.tensor(1.).unfold(0, 2, 1)",
    "x.unfold(1, -1, 1)", "x.unfold(2, 1, 1)", "x.unfold(-1, 1, 1)", "y.unfold(1, 2, 1)", "x.t().unfold(0, 2, 1)",
    "x.ravel()", "x.t().ravel()", "torch.ravel(y[:, 1])", "torch.tensor(3.).ravel()",
    # properties built on these
    "x.T", "x.mT", "y.mT", "list(x)", "list(y[0])",
]


@needs_torch
@pytest.mark.parametrize("src", CASES)
def test_matches_torch(src):
    assert_parity(src, env_x)


@needs_torch
@pytest.mark.parametrize("dtype", ALL_DTYPES)
@pytest.mark.parametrize("src", ["x.view(3, 2)", "x.t()", "x.t().reshape(6)", "x.expand(2, 2, 3)", "x.unsqueeze(1)",
                                 "x.diagonal()", "x.unfold(1, 2, 1)", "x[:, 1:].split(1, 1)", "x.movedim(0, 1)",
                                 "x.t().flatten()", "x[1]"])
def test_dtypes(dtype, src):
    def env(mod):
        return {"x": mod.tensor([[0, 1, 2], [3, 0, 1]], dtype=getattr(mod, dtype))}
    assert_parity(src, env)


# --- errors spelled out (also where PyTorch's message is an internal one) -------------------

@pytest.mark.parametrize("fn, exc, msg", [
    (lambda x: x.t().view(6), RuntimeError,
     "view size is not compatible with input tensor's size and stride (at least one dimension spans across two "
     "contiguous subspaces). Use .reshape(...) instead."),
    (lambda x: x.view(2, 5), RuntimeError, "shape '[2, 5]' is invalid for input of size 6"),
    (lambda x: x.view(-1, -1), RuntimeError, "only one dimension can be inferred"),
    (lambda x: x.transpose(0, 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda x: x.unsqueeze(-4), IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got -4)"),
    (lambda x: x.permute(0), RuntimeError, "number of dimensions in the tensor input does not match"),
    (lambda x: x.expand(3, 3), RuntimeError, "The expanded size of the tensor (3) must match the existing size (2) at "
                                             "non-singleton dimension 0.  Target sizes: [3, 3].  Tensor sizes: [2, 3]"),
    (lambda x: x.expand(3), RuntimeError, "expand(pytorchlite.FloatTensor{[2, 3]}, size=[3]): the number of sizes "
                                          "provided (1) must be greater or equal to the number of dimensions in the "
                                          "tensor (2)"),
    (lambda x: x.expand(-1, 2, 3), RuntimeError, "The expanded size of the tensor (-1) isn't allowed in a leading, "
                                                 "non-existing dimension 0"),
    (lambda x: x.expand(-2, 2, 3), RuntimeError, "numel: integer multiplication overflow"),   # as in torch
    (lambda x: x.select(1, 3), IndexError, "select(): index 3 out of range for tensor of size [2, 3] at dimension 1"),
    (lambda x: x.narrow(1, 2, 2), RuntimeError, "start (2) + length (2) exceeds dimension size (3)."),
    (lambda x: x.as_strided((2, 2), (1, 2), 10), RuntimeError, "out of bounds for storage of size 24"),
    (lambda x: x.resize_(-1), RuntimeError, "numel: integer multiplication overflow"),   # -1 wraps, as in torch
    (lambda x: x.view(1.5), TypeError, "view() received an invalid combination of arguments - got (float), but "
                                       "expected one of:\n * (pytorchlite.dtype dtype)\n"),
    (lambda x: x.reshape("a"), TypeError, "reshape(): argument 'shape'"),
    (lambda x: x.transpose(0, 1.0), TypeError, "transpose(): argument 'dim1'"),
])
def test_errors(fn, exc, msg):
    x = pytorchlite.arange(6.).reshape(2, 3)
    with pytest.raises(exc) as info:
        fn(x)
    assert msg in str(info.value)


# --- views share storage, writes and the version counter ------------------------------------

VIEWS = [
    ("view", lambda x: x.view(3, 4), lambda a: a.reshape(3, 4)),
    ("view_as", lambda x: x.view_as(pytorchlite.empty(4, 3)), lambda a: a.reshape(4, 3)),
    ("reshape", lambda x: x.reshape(-1), lambda a: a.reshape(-1)),
    ("transpose", lambda x: x.transpose(0, 1), lambda a: a.T),
    ("t", lambda x: x.t(), lambda a: a.T),
    ("permute", lambda x: x.permute(1, 0), lambda a: a.transpose(1, 0)),
    ("expand", lambda x: x[:1].expand(5, 4), lambda a: np.broadcast_to(a[:1], (5, 4))),
    ("squeeze", lambda x: x[:1].squeeze(0), lambda a: a[0]),
    ("unsqueeze", lambda x: x.unsqueeze(1), lambda a: a[:, None]),
    ("flatten", lambda x: x.flatten(), lambda a: a.reshape(-1)),
    ("unflatten", lambda x: x.unflatten(1, (2, 2)), lambda a: a.reshape(3, 2, 2)),
    ("narrow", lambda x: x.narrow(1, 1, 2), lambda a: a[:, 1:3]),
    ("select", lambda x: x.select(1, 2), lambda a: a[:, 2]),
    ("unbind", lambda x: x.unbind(1)[3], lambda a: a[:, 3]),
    ("split", lambda x: x.split(2, 1)[1], lambda a: a[:, 2:]),
    ("split_list", lambda x: x.split([1, 3], 1)[1], lambda a: a[:, 1:]),
    ("chunk", lambda x: x.chunk(2, 0)[1], lambda a: a[2:]),
    ("tensor_split", lambda x: x.tensor_split([1, 3], 1)[1], lambda a: a[:, 1:3]),
    ("as_strided", lambda x: x.as_strided((2, 2), (4, 1), 1), lambda a: a[:2, 1:3]),
    ("diagonal", lambda x: x.diagonal(1), lambda a: np.diagonal(a, 1)),
    ("movedim", lambda x: x.movedim(0, 1), lambda a: np.moveaxis(a, 0, 1)),
    ("ravel", lambda x: x.ravel(), lambda a: a.ravel()),
    ("unfold", lambda x: x.unfold(1, 2, 2), lambda a: np.lib.stride_tricks.sliding_window_view(a, 2, 1)[:, ::2]),
    ("getitem", lambda x: x[1:, ::2], lambda a: a[1:, ::2]),
    ("view_dtype", lambda x: x.view(pytorchlite.int32), lambda a: a.view(np.int32)),
]


@pytest.mark.parametrize("name, make_view, np_view", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_shares_storage_and_version(name, make_view, np_view):
    expected = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = pytorchlite.tensor(expected)
    v = make_view(x)
    assert v.untyped_storage() is x.untyped_storage()
    assert v._base is (x if name != "view_dtype" else None)    # as in PyTorch
    assert v._version == x._version == 0
    np.testing.assert_array_equal(v.numpy(), np_view(expected))
    # a write through the view lands in the base (where the view's strides say), and
    # bumps the shared counter once
    v.fill_(7)
    flat = expected.reshape(-1).view(v.numpy().dtype)
    item = flat.itemsize
    np.lib.stride_tricks.as_strided(flat[v.storage_offset():], v.shape, [s * item for s in v.stride()])[...] = 7
    np.testing.assert_array_equal(x.numpy(), expected)
    assert x._version == v._version == 1
    # a write to the base is seen through the view
    x.fill_(-1)
    assert (v.numpy() == (-1 if name != "view_dtype" else np.float32(-1).view(np.int32))).all()
    assert x._version == v._version == 2


def test_view_of_view_keeps_the_root_base():
    x = pytorchlite.arange(12.)
    v = x.view(3, 4).t().unsqueeze(0)[0]
    assert v._base is x
    v[1, 2] = 100.
    assert x[9].item() == 100.


def test_reshape_copies_when_strides_cannot_express_it():
    x = pytorchlite.arange(6.).reshape(2, 3)
    with pytest.raises(RuntimeError, match="Use .reshape"):
        x.t().view(6)
    r = x.t().reshape(6)
    assert r.tolist() == [0., 3., 1., 4., 2., 5.]
    assert r.untyped_storage() is not x.untyped_storage()
    r.fill_(0)
    assert x.tolist() == [[0., 1., 2.], [3., 4., 5.]]
    assert x._version == 0
    # when it can, reshape is a view
    assert x.t().reshape(3, 2).untyped_storage() is x.untyped_storage()


def test_expanded_view_has_stride_zero_and_writes_alias():
    x = pytorchlite.tensor([[1.], [2.]])
    e = x.expand(2, 3)
    assert e.stride() == (1, 0)
    x[0, 0] = 5.
    assert e.tolist() == [[5., 5., 5.], [2., 2., 2.]]


def test_size_zero_and_zero_dim():
    z = pytorchlite.empty(0, 3)
    assert z.view(3, 0, 1).shape == (3, 0, 1)
    assert z.t().reshape(-1).shape == (0,)
    assert z.unbind(1)[2].shape == (0,)
    s = pytorchlite.tensor(4.)
    assert s.view(1, 1).tolist() == [[4.]]
    assert s.unsqueeze(0).squeeze(0).shape == ()
    assert s.expand(2, 2).tolist() == [[4., 4.], [4., 4.]]
    assert s.flatten().tolist() == [4.]
    assert s.t().shape == ()


def test_split_chunk_values_match_numpy():
    a = np.arange(35.).reshape(5, 7)
    x = pytorchlite.tensor(a)
    for got, want in zip(x.tensor_split(3, 1), np.array_split(a, 3, axis=1)):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(x.tensor_split([2, 3, 9], 1), np.split(a, [2, 3, 9], axis=1)):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(x.split([2, 5], 1), np.split(a, [2], axis=1)):
        np.testing.assert_array_equal(got.numpy(), want)
    for got, want in zip(pytorchlite.split(x, 2), np.split(a, [2, 4])):
        np.testing.assert_array_equal(got.numpy(), want)


# --- in-place metadata methods ------------------------------------------------------------

@needs_torch
@pytest.mark.parametrize("src", ["x.squeeze_()", "x.squeeze_(0)", "x.squeeze_((0, 2))", "x.squeeze_(3)",
                                 "x.unsqueeze_(0)", "x.unsqueeze_(-1)", "x.unsqueeze_(5)", "x[0].t_()", "x[:, 0].t_()",
                                 "x.t_()", "x.transpose_(0, 1)", "x.transpose_(-1, 1)", "x.transpose_(0, 3)",
                                 "x.resize_(2, 2)", "x.resize_(0)", "x.resize_((3, 2))", "x[0].t().resize_(3, 1)"])
def test_inplace_metadata_matches_torch(src):
    def env(mod):
        return {"x": mod.arange(6.).reshape(1, 2, 3)}

    def run(mod):
        e = env(mod)
        x = e["x"]
        try:
            r = eval(src, {"x": x, "torch": mod})
        except Exception as exc:  # noqa: BLE001
            return ("error", type(exc).__name__, str(exc).split("\n")[0])
        return (tuple(r.shape), tuple(r.stride()), r.is_contiguous(), r._version, r.tolist())
    assert run(pytorchlite) == run(torch)


def test_inplace_metadata_returns_self_and_resets_contiguity():
    x = pytorchlite.arange(6.).reshape(2, 3)
    assert x.is_contiguous()          # cached
    assert x.t_() is x
    assert x.shape == (3, 2) and x.stride() == (1, 3)
    assert not x.is_contiguous()
    assert x.transpose_(0, 1) is x and x.is_contiguous()
    assert x.unsqueeze_(1) is x and x.shape == (2, 1, 3)
    assert x.squeeze_() is x and x.shape == (2, 3)
    assert x._version == 4
    with pytest.raises(RuntimeError, match=r"t_\(\) expects a tensor with <= 2 dimensions, but self is 3D"):
        pytorchlite.zeros(1, 2, 3).t_()


def test_resize_grows_keeping_data_and_views_see_it():
    x = pytorchlite.arange(6.)
    v = x[2:]
    x.resize_(2, 2)
    assert x.tolist() == [[0., 1.], [2., 3.]] and x._version == 1
    x.resize_(3, 4)                       # larger than the storage: reallocates
    assert x.untyped_storage().size() >= 48
    assert x.view(-1)[:6].tolist() == [0., 1., 2., 3., 4., 5.]
    assert v.untyped_storage() is x.untyped_storage()
    assert v.tolist() == [2., 3., 4., 5.]
    x.view(-1)[3] = 30.
    assert v[1].item() == 30.             # the view reads the new memory
    y = pytorchlite.arange(6.)[1:]
    y.resize_(6)
    assert y.storage_offset() == 1 and y[:5].tolist() == [1., 2., 3., 4., 5.]


def test_resize_refuses_borrowed_memory_and_grad():
    a = np.zeros(3)
    t = pytorchlite.from_numpy(a)
    with pytest.raises(RuntimeError, match="Trying to resize storage that is not resizable"):
        t.resize_(10)
    t.resize_(2)                          # shrinking needs no new memory
    assert t.shape == (2,)
    g = pytorchlite.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot resize variables that require grad"):
        g.resize_(1)


def test_resize_is_used_by_out_arguments():
    out = pytorchlite.empty(0)
    pytorchlite._argparse.resize_out("op", out, (2, 3))
    assert out.shape == (2, 3) and out.is_contiguous()
