"""1-d and adaptive max pooling, normalize, cosine_similarity, pairwise_distance, prelu,
channel dropout (dropout1d / dropout2d) and the padding layers, functional and as modules,
against PyTorch from identical data and weights: values, indices, gradients under a random
upstream gradient, batched and unbatched input, printed form, and PyTorch's error types
(and messages, where they are PyTorch's own). Dropout is checked by its structure (whole
channels zeroed, the rest scaled by 1/(1-p)), not by random equality with PyTorch."""

import doctest
import math
import warnings

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F

from parity import torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped
TF = torch.nn.functional

_rng = np.random.default_rng(11)
F64 = (P.float64, torch.float64, 1e-10)
F32 = (P.float32, torch.float32, 1e-5)


def _data(shape, scale=1.0):
    return _rng.standard_normal(shape) * scale


def _np(t):
    return t.detach().numpy()


def _close(ours, theirs, tol, what):
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: shape {tuple(ours.shape)} != {tuple(theirs.shape)}"
    assert str(ours.dtype).rsplit(".")[-1] == str(theirs.dtype).rsplit(".")[-1], \
        f"{what}: dtype {ours.dtype} != {theirs.dtype}"
    np.testing.assert_allclose(_np(ours), _np(theirs), rtol=tol, atol=tol, err_msg=what)


def _parity(fn_p, fn_t, arrays, dtypes=F64, grads=None):
    """Run fn on the same arrays (NumPy, or integer-valued Python data) in both libraries and
    compare every output (a tuple's later members, such as indices, too), then the gradient
    of each array listed in `grads` (all floating ones by default) under one random upstream
    gradient of the first output. Returns pytorchlite's outputs."""
    dtype, tdtype, tol = dtypes
    ps, ts = [], []
    for k, a in enumerate(arrays):
        floating = np.asarray(a).dtype.kind == "f"
        p = P.tensor(a, dtype=dtype) if floating else P.tensor(a)
        t = torch.tensor(a, dtype=tdtype) if floating else torch.tensor(a)
        if floating and (grads is None or k in grads):
            p.requires_grad_()
            t.requires_grad_()
        ps.append(p)
        ts.append(t)
    out_p, out_t = fn_p(*ps), fn_t(*ts)
    outs_p = out_p if isinstance(out_p, tuple) else (out_p,)
    outs_t = out_t if isinstance(out_t, tuple) else (out_t,)
    assert len(outs_p) == len(outs_t), f"{len(outs_p)} outputs, torch gives {len(outs_t)}"
    for i, (o, t) in enumerate(zip(outs_p, outs_t)):
        _close(o, t, tol, f"output {i}")
    if outs_t[0].requires_grad:
        g = _data(tuple(outs_t[0].shape))
        outs_p[0].backward(P.tensor(g, dtype=dtype))
        outs_t[0].backward(torch.tensor(g, dtype=tdtype))
        for k, (p, t) in enumerate(zip(ps, ts)):
            if t.requires_grad:
                assert p.grad is not None, f"no gradient for argument {k}"
                _close(p.grad, t.grad, tol, f"gradient of argument {k}")
    return out_p


def _same_error(fn_p, fn_t, message=True):
    """Both raise, ours an exception of torch's type (and with its message, when asked)."""
    with pytest.raises(Exception) as theirs:
        fn_t()
    with pytest.raises(type(theirs.value)) as ours:
        fn_p()
    if message:
        assert str(ours.value) == str(theirs.value)


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [(w.category, str(w.message)) for w in caught]


# --- 1-d pooling -----------------------------------------------------------------------------------

SHAPES_1D = [(2, 3, 9), (3, 9), (0, 3, 9)]

POOL1D = [
    ("max_pool1d", (3,), {}),
    ("max_pool1d", ((3,),), {"stride": 2, "padding": 1}),
    ("max_pool1d", (2,), {"dilation": 2, "ceil_mode": True}),
    ("max_pool1d", (4, 3, 2), {"ceil_mode": True, "return_indices": True}),
    ("max_pool1d", (3, None, 1, 2, False, True), {}),
    ("avg_pool1d", (3,), {}),
    ("avg_pool1d", (3, 2, 1), {}),
    ("avg_pool1d", (3,), {"stride": 2, "padding": 1, "count_include_pad": False}),
    ("avg_pool1d", (4, 3, 2, True, False), {}),
    ("adaptive_avg_pool1d", (4,), {}),
    ("adaptive_avg_pool1d", ((5,),), {}),
    ("adaptive_avg_pool1d", (9,), {}),
    ("adaptive_max_pool1d", (4,), {}),
    ("adaptive_max_pool1d", (5, True), {}),
    ("adaptive_max_pool1d", (1,), {"return_indices": True}),
]


@pytest.mark.parametrize("shape", SHAPES_1D, ids=str)
@pytest.mark.parametrize("name,args,kw", POOL1D, ids=[f"{n}{a}{k}" for n, a, k in POOL1D])
def test_pool1d_matches_torch(name, args, kw, shape):
    _parity(lambda x: getattr(F, name)(x, *args, **kw), lambda x: getattr(TF, name)(x, *args, **kw), [_data(shape)])


@pytest.mark.parametrize("name", ["max_pool1d", "avg_pool1d", "adaptive_max_pool1d", "adaptive_avg_pool1d"])
def test_pool1d_keeps_float32(name):
    _parity(lambda x: getattr(F, name)(x, 2), lambda x: getattr(TF, name)(x, 2), [_data((2, 3, 8))], F32)


def test_max_pool_ties_send_the_gradient_to_the_first_maximum():
    x = _rng.integers(0, 3, (2, 3, 12)).astype(np.float64)
    _parity(lambda a: F.max_pool1d(a, 3, return_indices=True), lambda a: TF.max_pool1d(a, 3, return_indices=True),
            [x])
    _parity(lambda a: F.adaptive_max_pool1d(a, 5, return_indices=True),
            lambda a: TF.adaptive_max_pool1d(a, 5, return_indices=True), [x])


POOL1D_ERRORS = [
    ("avg_pool1d", (2, 3, 4, 5), (2,), True),
    ("adaptive_avg_pool1d", (5,), (2,), True),
    ("adaptive_max_pool1d", (5,), (2,), True),
    ("avg_pool1d", (2, 3, 7), ((2, 2),), True),
    ("adaptive_avg_pool1d", (2, 3, 7), ((2, 2),), True),
    ("adaptive_max_pool1d", (2, 3, 7), ((2, 2),), True),
    ("avg_pool1d", (2, 3, 7), (2, 2, 2), True),        # padding over half the kernel
    ("avg_pool1d", (2, 3, 7), (10,), True),            # output size 0
    # PyTorch's max_pool1d words these differently without return_indices; same type
    ("max_pool1d", (2, 3, 4, 5), (2,), False),
    ("max_pool1d", (2, 3, 7), ((2, 2),), False),
    ("max_pool1d", (2, 3, 7), (2, 2, 2), False),
    ("max_pool1d", (2, 3, 7), (10,), False),
    ("adaptive_avg_pool1d", (2, 3, 7), (None,), False),
]


@pytest.mark.parametrize("name,shape,args,message", POOL1D_ERRORS,
                         ids=[f"{n}{s}{a}" for n, s, a, _ in POOL1D_ERRORS])
def test_pool1d_errors_match_torch(name, shape, args, message):
    x = _data(shape)
    _same_error(lambda: getattr(F, name)(P.tensor(x), *args), lambda: getattr(TF, name)(torch.tensor(x), *args),
                message)


# --- adaptive max pooling in 2-d -------------------------------------------------------------------

@pytest.mark.parametrize("shape", [(2, 3, 7, 9), (3, 7, 9), (0, 2, 5, 5)], ids=str)
@pytest.mark.parametrize("size", [(3, 4), 1, (None, 4), (7, 9), (5, 2), (9, 11)], ids=str)
@pytest.mark.parametrize("return_indices", [False, True])
def test_adaptive_max_pool2d_matches_torch(shape, size, return_indices):
    _parity(lambda x: F.adaptive_max_pool2d(x, size, return_indices),
            lambda x: TF.adaptive_max_pool2d(x, size, return_indices), [_data(shape)])


def test_adaptive_max_pool2d_ties_float32_and_empty_output():
    x = _rng.integers(0, 2, (2, 3, 6, 7)).astype(np.float64)
    _parity(lambda a: F.adaptive_max_pool2d(a, (4, 3), True), lambda a: TF.adaptive_max_pool2d(a, (4, 3), True), [x])
    _parity(lambda a: F.adaptive_max_pool2d(a, 3), lambda a: TF.adaptive_max_pool2d(a, 3), [_data((2, 5, 5))], F32)
    # (PyTorch's backward refuses an empty output, so only the values here)
    _parity(lambda a: F.adaptive_max_pool2d(a, (0, 3), True), lambda a: TF.adaptive_max_pool2d(a, (0, 3), True),
            [_data((2, 5, 5))], grads=())


@pytest.mark.parametrize("shape,size", [((5, 3), 2), ((2, 0, 3), 2), ((2, 3, 0, 4), 2), ((2, 3, 5), (2, -1))],
                         ids=str)
def test_adaptive_max_pool2d_errors_match_torch(shape, size):
    x = np.zeros(shape)
    _same_error(lambda: F.adaptive_max_pool2d(P.tensor(x), size), lambda: TF.adaptive_max_pool2d(torch.tensor(x), size))


# --- normalize, cosine_similarity, pairwise_distance -----------------------------------------------

NORMALIZE = [
    ((4, 5), {}),
    ((5,), {"dim": 0}),
    ((2, 3, 4), {"dim": -1, "p": 1}),
    ((2, 3, 4), {"dim": (1, 2)}),
    ((2, 3, 4), {"p": math.inf, "eps": 0.5}),
    ((3, 4), {"p": 3.0, "dim": 0}),
]


@pytest.mark.parametrize("shape,kw", NORMALIZE, ids=[f"{s}{k}" for s, k in NORMALIZE])
def test_normalize_matches_torch(shape, kw):
    _parity(lambda x: F.normalize(x, **kw), lambda x: TF.normalize(x, **kw), [_data(shape)])


def test_normalize_clamps_small_norms_and_writes_out():
    x = _data((4, 3))
    x[1] = 0.0
    x[2] *= 1e-14       # a norm below eps
    _parity(F.normalize, TF.normalize, [x])
    out = P.empty(4, 3, dtype=P.float64)
    assert F.normalize(P.tensor(x), out=out) is out
    np.testing.assert_allclose(out.numpy(), TF.normalize(torch.tensor(x)).numpy(), rtol=1e-12)


COSINE = [
    ((5, 7), (5, 7), {}),
    ((2, 3, 4), (2, 3, 4), {"dim": -1}),
    ((6,), (6,), {"dim": 0}),
    ((3, 1, 4), (5, 4), {"dim": -1}),       # broadcast: the norms are the broadcast rows'
    ((4, 1), (4, 6), {}),
    ((4, 6), (4, 6), {"dim": 0, "eps": 0.5}),
]


@pytest.mark.parametrize("s1,s2,kw", COSINE, ids=[f"{a}{b}{k}" for a, b, k in COSINE])
def test_cosine_similarity_matches_torch(s1, s2, kw):
    _parity(lambda a, b: F.cosine_similarity(a, b, **kw), lambda a, b: TF.cosine_similarity(a, b, **kw),
            [_data(s1), _data(s2)])
    _parity(lambda a, b: nn.CosineSimilarity(**kw)(a, b), lambda a, b: torch.nn.CosineSimilarity(**kw)(a, b),
            [_data(s1), _data(s2)])


def test_cosine_similarity_clamps_each_norm_separately():
    # zero and tiny rows: each norm is clamped by eps on its own, and, as in PyTorch, the
    # gradient still flows into a clamped norm
    x1, x2 = _data((5, 4)), _data((5, 4))
    x1[0] = 0.0
    x1[1] *= 1e-12
    x2[2] *= 1e-12
    x1[3] *= 1e-5
    x2[3] *= 1e-5        # the product of the norms is below eps, neither norm alone
    _parity(F.cosine_similarity, TF.cosine_similarity, [x1, x2])
    big = np.full((1, 3), 1e200)      # the product of the norms would overflow
    _parity(F.cosine_similarity, TF.cosine_similarity, [big, big])


def test_cosine_similarity_dtypes_and_errors():
    ints, floats = [[1, 2, 3], [0, 0, 1]], _data((2, 3))
    _parity(F.cosine_similarity, TF.cosine_similarity, [ints, floats])
    _parity(F.cosine_similarity, TF.cosine_similarity, [floats, ints])
    _parity(F.cosine_similarity, TF.cosine_similarity, [floats, floats], F32)
    _same_error(lambda: F.cosine_similarity(P.tensor(ints), P.tensor(ints)),
                lambda: TF.cosine_similarity(torch.tensor(ints), torch.tensor(ints)))
    _same_error(lambda: F.cosine_similarity(P.zeros(2, 3), P.zeros(2, 4)),
                lambda: TF.cosine_similarity(torch.zeros(2, 3), torch.zeros(2, 4)))
    _same_error(lambda: F.cosine_similarity(P.zeros(2, 3), P.zeros(2, 3), dim=2),
                lambda: TF.cosine_similarity(torch.zeros(2, 3), torch.zeros(2, 3), dim=2), message=False)


PAIRWISE = [
    ((5, 7), (5, 7), {}),
    ((7,), (7,), {}),
    ((5, 7), (7,), {"keepdim": True}),
    ((2, 3, 4), (3, 4), {"p": 1.0}),
    ((5, 7), (5, 7), {"p": 3.0, "eps": 0.0}),
    ((5, 7), (5, 7), {"p": math.inf}),
    ((5, 7), (5, 7), {"p": 0.5}),
    ((), (), {}),
]


@pytest.mark.parametrize("s1,s2,kw", PAIRWISE, ids=[f"{a}{b}{k}" for a, b, k in PAIRWISE])
def test_pairwise_distance_matches_torch(s1, s2, kw):
    _parity(lambda a, b: F.pairwise_distance(a, b, **kw), lambda a, b: TF.pairwise_distance(a, b, **kw),
            [_data(s1), _data(s2)])
    ctor = {"p": kw.get("p", 2.0), "eps": kw.get("eps", 1e-6), "keepdim": kw.get("keepdim", False)}
    _parity(lambda a, b: nn.PairwiseDistance(**ctor)(a, b), lambda a, b: torch.nn.PairwiseDistance(**ctor)(a, b),
            [_data(s1), _data(s2)])


def test_pairwise_distance_integers_and_errors():
    a, b = [[1, 2, 3], [4, 5, 6]], [[0, 0, 0], [4, 5, 6]]
    _parity(F.pairwise_distance, TF.pairwise_distance, [a, b])
    _same_error(lambda: F.pairwise_distance(P.zeros(2, 3), P.zeros(4)),
                lambda: TF.pairwise_distance(torch.zeros(2, 3), torch.zeros(4)))


# --- prelu -----------------------------------------------------------------------------------------

PRELU = [((4, 3), (3,)), ((2, 3, 5), (3,)), ((2, 3, 4, 5), (3,)), ((2, 3, 4, 5), (1,)), ((6,), (1,)),
         ((), (1,)), ((), ()), ((2, 3, 4), ())]


@pytest.mark.parametrize("shape,wshape", PRELU, ids=str)
def test_prelu_matches_torch(shape, wshape):
    x = _data(shape)
    if x.size:
        x.flat[0] = 0.0      # the gradient at exactly 0 takes the slope branch
    _parity(F.prelu, TF.prelu, [x, _data(wshape)])


@pytest.mark.parametrize("shape,wshape", [((2, 3), (4,)), ((3,), (3,)), ((), (3,)), ((2, 3), (3, 1))], ids=str)
def test_prelu_errors_match_torch(shape, wshape):
    x, w = np.zeros(shape), np.ones(wshape)
    _same_error(lambda: F.prelu(P.tensor(x), P.tensor(w)), lambda: TF.prelu(torch.tensor(x), torch.tensor(w)))


def test_prelu_rejects_mixed_dtypes():
    _same_error(lambda: F.prelu(P.ones(2, 3), P.ones(3, dtype=P.float64)),
                lambda: TF.prelu(torch.ones(2, 3), torch.ones(3, dtype=torch.float64)))


@pytest.mark.parametrize("num,init,shape", [(1, 0.25, (2, 3, 4)), (3, 0.1, (2, 3, 4)), (3, -0.5, (5, 3))], ids=str)
def test_prelu_module_matches_torch(num, init, shape):
    ours, theirs = nn.PReLU(num, init, dtype=P.float64), torch.nn.PReLU(num, init, dtype=torch.float64)
    assert list(ours.state_dict()) == ["weight"] and ours.weight.shape == (num,)
    np.testing.assert_array_equal(ours.weight.detach().numpy(), theirs.weight.detach().numpy())
    x, g = _data(shape), _data(shape)
    y_p, y_t = ours(P.tensor(x)), theirs(torch.tensor(x))
    _close(y_p, y_t, 1e-12, "output")
    y_p.backward(P.tensor(g))
    y_t.backward(torch.tensor(g))
    _close(ours.weight.grad, theirs.weight.grad, 1e-10, "weight gradient")


# --- pooling, distance and padding modules ---------------------------------------------------------

MODULES = [
    ("MaxPool1d", (3,), {}, (2, 3, 10)),
    ("MaxPool1d", (3, 2, 1), {"return_indices": True, "ceil_mode": True}, (3, 10)),
    ("AvgPool1d", (3,), {}, (2, 3, 10)),
    ("AvgPool1d", (3, 2, 1, True, False), {}, (3, 10)),
    ("AdaptiveAvgPool1d", (4,), {}, (2, 3, 10)),
    ("AdaptiveMaxPool1d", (4, True), {}, (3, 10)),
    ("AdaptiveMaxPool2d", ((3, None),), {}, (2, 3, 5, 6)),
    ("AdaptiveMaxPool2d", (2,), {"return_indices": True}, (3, 5, 6)),
    ("ZeroPad1d", (2,), {}, (2, 3, 5)),
    ("ZeroPad1d", ((1, 3),), {}, (3, 5)),
    ("ZeroPad2d", ((1, 2, 0, 3),), {}, (2, 3, 4, 5)),
    ("ZeroPad2d", (1,), {}, (3, 4, 5)),
    ("ConstantPad1d", (2, 3.5), {}, (2, 3, 5)),
    ("ConstantPad1d", ((2, -1), -1.0), {}, (3, 5)),
    ("ConstantPad2d", ((1, 2, 3, 4), 0.5), {}, (2, 3, 4, 5)),
    ("ConstantPad2d", (2, 0), {}, (3, 4, 5)),
    ("ReflectionPad1d", (2,), {}, (2, 3, 5)),
    ("ReflectionPad1d", ((4, 1),), {}, (3, 5)),
    ("ReflectionPad2d", ((1, 2, 3, 0),), {}, (2, 3, 4, 5)),
    ("ReflectionPad2d", (3,), {}, (3, 4, 5)),
    ("ReplicationPad1d", (2,), {}, (2, 3, 5)),
    ("ReplicationPad1d", ((0, 4),), {}, (3, 5)),
    ("ReplicationPad2d", ((1, 2, 3, 4),), {}, (2, 3, 4, 5)),
    ("ReplicationPad2d", (6,), {}, (3, 4, 5)),
]


@pytest.mark.parametrize("name,args,kw,shape", MODULES, ids=[f"{n}{a}{k}{s}" for n, a, k, s in MODULES])
def test_modules_match_torch(name, args, kw, shape):
    ours, theirs = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(ours) == repr(theirs)
    _parity(ours, theirs, [_data(shape)])


def test_module_reprs_match_torch():
    for name, args in [("MaxPool2d", (2,)), ("AvgPool2d", (3, 1)), ("AdaptiveAvgPool2d", ((2, None),)),
                       ("CosineSimilarity", (0, 1e-3)), ("PairwiseDistance", (1.0,)), ("Dropout1d", (0.2,)),
                       ("Dropout2d", (0.3, True)), ("Dropout", ()), ("PReLU", (4,))]:
        assert repr(getattr(nn, name)(*args)) == repr(getattr(torch.nn, name)(*args))
    assert nn.PairwiseDistance(3.0).norm == 3.0 and nn.ZeroPad2d(1).value == 0.0
    assert isinstance(nn.ZeroPad1d(1), nn.ConstantPad1d) and nn.ConstantPad1d((1, 2), 0).padding == (1, 2)


@pytest.mark.parametrize("name,shape", [("ReflectionPad1d", (5,)), ("ReflectionPad1d", (2, 3, 2)),
                                        ("ReplicationPad2d", (4, 5)), ("ReflectionPad2d", (1, 2, 2, 2))], ids=str)
def test_padding_module_errors_match_torch(name, shape):
    x = np.zeros(shape)
    _same_error(lambda: getattr(nn, name)(2)(P.tensor(x)), lambda: getattr(torch.nn, name)(2)(torch.tensor(x)),
                message=False)


# --- channel dropout -------------------------------------------------------------------------------

def _channels(y, kept_dims):
    """y (a ones input after dropout) as rows of one channel each."""
    a = y.detach().numpy()
    return a.reshape(int(np.prod(a.shape[:kept_dims])), -1)


def _check_channel_structure(y, p, kept_dims):
    rows = _channels(y, kept_dims)
    zeroed = (rows == 0).all(axis=1)
    kept = np.isclose(rows, 1 / (1 - p), rtol=1e-6).all(axis=1)
    assert (zeroed | kept).all(), "a channel was partly zeroed or wrongly scaled"
    return zeroed.mean()


@pytest.mark.parametrize("fn,shape,kept_dims", [
    (F.dropout1d, (40, 50, 7), 2), (F.dropout1d, (2000, 7), 1), (F.dropout2d, (40, 50, 3, 4), 2)], ids=str)
def test_channel_dropout_zeroes_whole_channels(fn, shape, kept_dims):
    P.manual_seed(0)
    x = P.ones(shape, dtype=P.float64, requires_grad=True)
    y = fn(x, 0.3)
    frac = _check_channel_structure(y, 0.3, kept_dims)
    assert abs(frac - 0.3) < 5 * math.sqrt(0.3 * 0.7 / 2000)
    # the gradient is the same mask: upstream ones give back the output
    y.backward(P.ones(shape, dtype=P.float64))
    np.testing.assert_array_equal(x.grad.numpy(), y.detach().numpy())


@pytest.mark.parametrize("fn,shape", [(F.dropout1d, (2, 3, 4)), (F.dropout1d, (3, 4)), (F.dropout2d, (2, 3, 4, 5))],
                         ids=str)
def test_channel_dropout_eval_p0_p1_and_inplace(fn, shape):
    x = P.ones(shape)
    assert fn(x, 0.5, training=False) is x
    assert fn(x, 0.0) is x
    # p = 1 multiplies by zero, as PyTorch: nan and inf stay nan
    data = _data(shape)
    data.flat[0], data.flat[-1] = math.nan, math.inf
    np.testing.assert_array_equal(fn(P.tensor(data), 1.0).numpy(), getattr(TF, fn.__name__)(torch.tensor(data),
                                                                                             1.0).numpy())
    y = fn(x, 0.5, inplace=True)
    assert y is x and tuple(x.shape) == shape
    _check_channel_structure(x, 0.5, len(shape) - 1 if fn is F.dropout1d else 2)
    z = P.zeros(shape)
    assert fn(z, 1.0, inplace=True) is z


def test_channel_dropout_modules_train_and_eval():
    for ours, theirs, shape, kept in [(nn.Dropout1d(0.4), torch.nn.Dropout1d(0.4), (30, 40, 6), 2),
                                      (nn.Dropout2d(0.4), torch.nn.Dropout2d(0.4), (30, 40, 2, 3), 2)]:
        x = P.ones(shape)
        _check_channel_structure(ours(x), 0.4, kept)
        ours.eval()
        assert ours(x) is x
        assert repr(ours) == repr(theirs)


def test_dropout2d_warns_as_torch_for_other_sizes():
    for shape in [(2, 3, 4), (3, 4), (2, 3, 4, 5, 6), (2, 3, 4, 5)]:
        x = np.ones(shape)
        ours = _warnings(lambda: F.dropout2d(P.tensor(x), 0.5))
        theirs = _warnings(lambda: TF.dropout2d(torch.tensor(x), 0.5))
        assert ours == theirs, shape
    # 3-d input is (N, C, L): one draw per (n, c)
    P.manual_seed(1)
    with pytest.warns(UserWarning, match="assuming that channel-wise 1D dropout"):
        y = F.dropout2d(P.ones(50, 40, 6), 0.5)
    _check_channel_structure(y, 0.5, 2)


def test_channel_dropout_errors_match_torch():
    for p in (-0.1, 1.5):
        for fn in ("dropout1d", "dropout2d"):
            _same_error(lambda: getattr(F, fn)(P.ones(2, 3, 4), p), lambda: getattr(TF, fn)(torch.ones(2, 3, 4), p))
        for name in ("Dropout1d", "Dropout2d"):
            _same_error(lambda: getattr(nn, name)(p), lambda: getattr(torch.nn, name)(p))
    for shape in [(5,), (2, 3, 4, 5)]:
        # checked before `training`, as PyTorch
        _same_error(lambda: F.dropout1d(P.ones(shape), training=False),
                    lambda: TF.dropout1d(torch.ones(shape), training=False))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same_error(lambda: F.dropout2d(P.ones(5)), lambda: TF.dropout2d(torch.ones(5)))
        assert F.dropout2d(P.ones(5), 1.0).sum().item() == 0.0    # p = 1 never draws, as PyTorch


def test_dropout_shares_the_channel_dropout_path():
    P.manual_seed(2)
    x = P.ones(4000, dtype=P.float64)
    y = F.dropout(x, 0.25)
    assert set(np.unique(y.numpy())) <= {0.0, 1 / 0.75}
    assert abs((y.numpy() == 0).mean() - 0.25) < 0.05
    assert F.dropout(x, 1.0, inplace=True) is x and x.sum().item() == 0.0


# --- docstring examples ----------------------------------------------------------------------------

def test_docstring_examples_run():
    from pytorchlite.nn import padding
    names = ["max_pool1d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d", "adaptive_max_pool2d",
             "normalize", "cosine_similarity", "pairwise_distance", "prelu", "dropout1d", "dropout2d"]
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    finder = doctest.DocTestFinder(recurse=False)
    for name in names:
        for test in finder.find(getattr(F, name), name, globs=dict(vars(F))):
            runner.run(test)
    result = doctest.testmod(padding, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert runner.summarize(verbose=False).failed == 0 and result.failed == 0
    assert runner.summarize(verbose=False).attempted >= 2 * len(names) and result.attempted > 0
