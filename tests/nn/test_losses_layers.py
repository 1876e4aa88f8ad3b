"""Regression, binary and likelihood losses (mse, l1, smooth L1, Huber, BCE, BCE with
logits, KL divergence, nll_loss), bilinear, and the small layers (activations, Unflatten, Bilinear, ModuleDict)
against PyTorch from identical data and weights: values, gradients with respect to input
and target, every reduction, float32 and float64, broadcasting, weights, extreme values,
printed form, state_dict keys and PyTorch's error types and warnings."""

import doctest
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F

from numpy_oracles import numeric_grad  # noqa: E402
from parity import HAVE_TORCH, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped
TF = torch.nn.functional

DTYPES = [(P.float32, torch.float32, 1e-5), (P.float64, torch.float64, 1e-10)]
REDUCTIONS = ["none", "mean", "sum"]
_rng = np.random.default_rng(7)


def _data(shape, scale=1.0):
    return _rng.standard_normal(shape) * scale


def _probs(shape):
    return _rng.uniform(0.02, 0.98, shape)


def _np(t):
    return t.detach().numpy() if isinstance(t, (P.Tensor, torch.Tensor)) else np.asarray(t)


def _close(ours, theirs, tol, what):
    o, t = _np(ours), _np(theirs)
    assert o.shape == t.shape, f"{what}: shape {o.shape} != {t.shape}"
    np.testing.assert_allclose(o, t, rtol=tol * 10, atol=tol * 10, err_msg=what)


def _numpy_parity(fn_p, fn_np, arrays, dtype, tol, grads, upstream):
    """_parity without PyTorch: the output against a float64 NumPy form of the loss, the
    gradients against its central differences (at least 1e-6 apart: the differences' own error)."""
    arrays = [None if a is None else np.asarray(a, dtype=np.float64) for a in arrays]
    ps = [None if a is None else P.tensor(a, dtype=dtype) for a in arrays]
    for k in grads:
        ps[k].requires_grad_()
    out_p = fn_p(*ps)
    want = np.asarray(fn_np(*arrays))
    _close(out_p, want, tol, "output (NumPy float64 oracle)")
    assert out_p.dtype == dtype, f"output dtype {out_p.dtype}"
    if grads:
        g = _data(want.shape) if upstream else np.ones(want.shape)
        out_p.backward(P.tensor(g, dtype=dtype))
        for k in grads:
            assert ps[k].grad is not None, f"no gradient for argument {k}"
            _close(ps[k].grad, numeric_grad(fn_np, arrays, k, g), max(tol, 1e-7),
                   f"gradient of argument {k} (central differences)")
    return ps


def _reduce(v, reduction):
    return {"none": v, "mean": v.mean(), "sum": v.sum()}[reduction]


def _np_regression(name, reduction, beta=1.0, delta=1.0):
    """The NumPy (float64) form of a regression loss."""
    def loss(a, b):
        d = np.abs(a - b)
        if name == "mse_loss":
            v = d * d
        elif name == "l1_loss":
            v = d
        elif name == "smooth_l1_loss":
            v = d if beta == 0 else np.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
        else:   # huber_loss
            v = np.where(d < delta, 0.5 * d * d, delta * (d - 0.5 * delta))
        return _reduce(v, reduction)
    return loss


def _np_binary_cross_entropy(reduction):
    def loss(x, y, w=None):
        # PyTorch clamps each log at -100
        v = -(y * np.maximum(np.log(x), -100) + (1 - y) * np.maximum(np.log1p(-x), -100))
        return _reduce(v if w is None else v * w, reduction)
    return loss


def _parity(fn_p, fn_t, arrays, dtype, tdtype, tol, grads=None, upstream=True, numpy_fn=None):
    """Run fn on the same arrays in both libraries (None stays None); compare the output, its
    dtype, and the gradient of every array listed in `grads` (all by default) under a random
    upstream gradient. Without PyTorch, `numpy_fn` (a float64 NumPy form of fn) is the oracle
    where given. Returns the pytorchlite leaves."""
    grads = range(len(arrays)) if grads is None else grads
    if not HAVE_TORCH and numpy_fn is not None:
        return _numpy_parity(fn_p, numpy_fn, arrays, dtype, tol, [k for k in grads if arrays[k] is not None],
                             upstream)
    ps, ts = [], []
    for k, a in enumerate(arrays):
        if a is None:
            ps.append(None)
            ts.append(None)
            continue
        p, t = P.tensor(a, dtype=dtype), torch.tensor(a, dtype=tdtype)
        if k in grads:
            p.requires_grad_()
            t.requires_grad_()
        ps.append(p)
        ts.append(t)
    out_p, out_t = fn_p(*ps), fn_t(*ts)
    _close(out_p, out_t, tol, "output")
    assert out_p.dtype == dtype, f"output dtype {out_p.dtype}"
    if grads:
        g = _data(tuple(out_t.shape)) if upstream else np.ones(tuple(out_t.shape))
        out_p.backward(P.tensor(g, dtype=dtype))
        out_t.backward(torch.tensor(g, dtype=tdtype))
        for k in grads:
            assert ps[k].grad is not None, f"no gradient for argument {k}"
            _close(ps[k].grad, ts[k].grad, tol, f"gradient of argument {k}")
    return ps


def _raise_alike(fn_p, fn_t, exc, match=None):
    """Both libraries raise `exc`; ours with a message matching `match` (when given)."""
    with pytest.raises(exc):
        fn_t()
    with pytest.raises(exc, match=match):
        fn_p()


# --- regression losses -----------------------------------------------------------------------

REGRESSION = [
    ("mse_loss", {}),
    ("l1_loss", {}),
    ("smooth_l1_loss", {}),
    ("smooth_l1_loss", {"beta": 0.4}),
    ("smooth_l1_loss", {"beta": 0.0}),
    ("huber_loss", {}),
    ("huber_loss", {"delta": 2.5}),
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kw", REGRESSION, ids=[f"{n}-{kw}" for n, kw in REGRESSION])
def test_regression_losses_match_torch(name, kw, reduction, dtype, tdtype, tol):
    # scale 2 puts elements on both sides of beta / delta
    x, y = _data((3, 5), 2.0), _data((3, 5), 2.0)
    _parity(lambda a, b: getattr(F, name)(a, b, reduction=reduction, **kw),
            lambda a, b: getattr(TF, name)(a, b, reduction=reduction, **kw), [x, y], dtype, tdtype, tol,
            numpy_fn=_np_regression(name, reduction, **kw))


@pytest.mark.parametrize("name,kw", REGRESSION, ids=[f"{n}-{kw}" for n, kw in REGRESSION])
def test_regression_losses_edges(name, kw):
    # exact ties: d = 0, d = +-beta / +-delta, and a 0-d pair
    edge = kw.get("beta", kw.get("delta", 1.0))
    x = np.array([0.0, edge, -edge, 3.0, -0.25, 1e6])
    y = np.zeros_like(x)
    for reduction in REDUCTIONS:
        _parity(lambda a, b: getattr(F, name)(a, b, reduction=reduction, **kw),
                lambda a, b: getattr(TF, name)(a, b, reduction=reduction, **kw), [x, y], P.float64, torch.float64,
                1e-10)
    _parity(lambda a, b: getattr(F, name)(a, b, **kw), lambda a, b: getattr(TF, name)(a, b, **kw),
            [np.array(0.3), np.array(-0.1)], P.float64, torch.float64, 1e-10)
    # empty input: 'mean' is nan, 'sum' 0, as PyTorch
    for reduction in REDUCTIONS:
        o = getattr(F, name)(P.zeros(0, 3), P.zeros(0, 3), reduction=reduction, **kw)
        t = getattr(TF, name)(torch.zeros(0, 3), torch.zeros(0, 3), reduction=reduction, **kw)
        np.testing.assert_array_equal(_np(o), _np(t))


@pytest.mark.parametrize("name,kw", REGRESSION, ids=[f"{n}-{kw}" for n, kw in REGRESSION])
def test_regression_losses_broadcast_with_warning(name, kw):
    x, y = _data((3, 4), 2.0), _data((1, 4), 2.0)
    for reduction in REDUCTIONS:
        with pytest.warns(UserWarning, match="Using a target size") as theirs:
            out_t = getattr(TF, name)(torch.tensor(x), torch.tensor(y), reduction=reduction, **kw)
        with pytest.warns(UserWarning, match=r"Using a target size \(pytorchlite.Size\(\[1, 4\]\)\) that is "
                                             r"different to the input size \(pytorchlite.Size\(\[3, 4\]\)\)\. This "
                                             r"will likely lead to incorrect results due to broadcasting") as ours:
            out_p = getattr(F, name)(P.tensor(x), P.tensor(y), reduction=reduction, **kw)
        _close(out_p, out_t, 1e-10, f"{name} broadcast {reduction}")
        # the warning points at the caller, as PyTorch's stacklevel=2
        assert ours[0].filename == __file__ and theirs[0].filename == __file__
    with pytest.warns(UserWarning, match="Using a target size"):
        _parity(lambda a, b: getattr(F, name)(a, b, **kw), lambda a, b: getattr(TF, name)(a, b, **kw), [x, y],
                P.float64, torch.float64, 1e-10)
    # the same size never warns, and shapes that do not broadcast raise as in PyTorch
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        getattr(F, name)(P.ones(3), P.zeros(3), **kw)
    with pytest.warns(UserWarning):
        _raise_alike(lambda: getattr(F, name)(P.ones(2), P.ones(3), **kw),
                     lambda: getattr(TF, name)(torch.ones(2), torch.ones(3), **kw), RuntimeError, "size")


@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("huber_loss", {"delta": 0.7})])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_regression_losses_match_torch(name, kw, reduction):
    x, y, w = _data((4, 3), 2.0), _data((4, 3), 2.0), _rng.uniform(0.1, 2.0, (4, 3))
    _parity(lambda a, b, c: getattr(F, name)(a, b, reduction=reduction, weight=c, **kw),
            lambda a, b, c: getattr(TF, name)(a, b, reduction=reduction, weight=c, **kw), [x, y, w], P.float64,
            torch.float64, 1e-10, grads=[0, 1])
    _raise_alike(lambda: getattr(F, name)(P.ones(2), P.ones(2), weight=P.ones(1), **kw),
                 lambda: getattr(TF, name)(torch.ones(2), torch.ones(2), weight=torch.ones(1), **kw), ValueError,
                 "Weights and input must have the same size")


def test_regression_loss_parameter_errors():
    x, y = P.ones(3), P.zeros(3)
    tx, ty = torch.ones(3), torch.zeros(3)
    _raise_alike(lambda: F.smooth_l1_loss(x, y, beta=-0.5), lambda: TF.smooth_l1_loss(tx, ty, beta=-0.5),
                 RuntimeError, "smooth_l1_loss does not support negative values for beta.")
    for delta in (0.0, -1.0):
        _raise_alike(lambda: F.huber_loss(x, y, delta=delta), lambda: TF.huber_loss(tx, ty, delta=delta),
                     RuntimeError, "huber_loss does not support non-positive values for delta.")


# --- negative log likelihood ----------------------------------------------------------------

@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("xshape, tshape", [((5, 4), (5,)), ((4,), ()), ((2, 4, 3, 2), (2, 3, 2))])
def test_nll_loss_matches_torch(xshape, tshape, weighted, reduction, dtype, tdtype, tol):
    c = xshape[1] if len(xshape) > 1 else xshape[0]
    target = np.asarray(_rng.integers(0, c, tshape))
    if target.ndim:
        target.flat[0] = 2      # ignored (ignore_index=2) wherever it is not the only target
    w = _rng.uniform(0.1, 2.0, (c,)) if weighted else None
    tp, tt = P.tensor(target), torch.tensor(target)
    ignore = 2 if target.ndim else -100
    _parity(lambda a, b: F.nll_loss(a, tp, b, ignore_index=ignore, reduction=reduction),
            lambda a, b: TF.nll_loss(a, tt, b, ignore_index=ignore, reduction=reduction), [_data(xshape), w], dtype,
            tdtype, tol, grads=[0])


def test_nll_loss_byte_targets_and_half_input():
    x = _data((3, 4))
    ours = F.nll_loss(P.tensor(x, dtype=P.float16), P.tensor([0, 3, 1], dtype=P.uint8))
    theirs = TF.nll_loss(torch.tensor(x, dtype=torch.float16), torch.tensor([0, 3, 1], dtype=torch.uint8))
    assert ours.dtype == P.float16
    _close(ours.float(), theirs.float(), 1e-3, "float16 input, uint8 targets")


def test_nll_loss_errors():
    x = _data((2, 3))
    p, t = P.tensor(x), torch.tensor(x)
    # the kernel finds the target out of range; the message names it, as PyTorch's
    for bad in (7, -1):
        _raise_alike(lambda: F.nll_loss(p, P.tensor([0, bad])), lambda: TF.nll_loss(t, torch.tensor([0, bad])),
                     IndexError, rf"^Target {bad} is out of bounds\.$")
    _raise_alike(lambda: F.nll_loss(P.tensor(_data((1, 3, 2, 2))), P.tensor([[[0, 1], [5, 2]]])),
                 lambda: TF.nll_loss(torch.tensor(_data((1, 3, 2, 2))), torch.tensor([[[0, 1], [5, 2]]])),
                 IndexError, r"^Target 5 is out of bounds\.$")
    _raise_alike(lambda: F.nll_loss(p, P.tensor([0.0, 1.0])), lambda: TF.nll_loss(t, torch.tensor([0.0, 1.0])),
                 RuntimeError, "expected target dtype to be Long or Byte, but got Float")
    _raise_alike(lambda: F.nll_loss(p, P.tensor([0, 1, 1])), lambda: TF.nll_loss(t, torch.tensor([0, 1, 1])),
                 ValueError, r"Expected input batch_size \(2\) to match target batch_size \(3\)")


# --- binary cross entropy --------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape", [None, (4,), (3, 4), (1, 4)])
def test_binary_cross_entropy_matches_torch(weight_shape, reduction, dtype, tdtype, tol):
    x, y = _probs((3, 4)), _rng.uniform(0, 1, (3, 4))
    y[0] = np.round(y[0])   # hard labels too
    w = None if weight_shape is None else _rng.uniform(0.1, 2.0, weight_shape)
    _parity(lambda a, b, c: F.binary_cross_entropy(a, b, c, reduction=reduction),
            lambda a, b, c: TF.binary_cross_entropy(a, b, c, reduction=reduction), [x, y, w], dtype, tdtype, tol,
            grads=[0, 1], numpy_fn=_np_binary_cross_entropy(reduction))


@pytest.mark.parametrize("dtype,tdtype", [(P.float32, torch.float32), (P.float64, torch.float64)])
def test_binary_cross_entropy_saturated_probabilities(dtype, tdtype):
    # log clamped at -100; the gradient stays finite at x = 0 and 1 (PyTorch's eps 1e-12), and
    # the target's gradient is -logit(x): +-inf there
    x = np.array([0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.5, 1e-30])
    y = np.array([0.0, 1.0, 0.0, 1.0, 0.3, 0.7, 0.5, 1.0])
    for reduction in REDUCTIONS:
        _parity(lambda a, b: F.binary_cross_entropy(a, b, reduction=reduction),
                lambda a, b: TF.binary_cross_entropy(a, b, reduction=reduction), [x, y], dtype, tdtype, 1e-6,
                upstream=False)
    # a float32 sigmoid saturates to exactly 1.0: no nan reaches the logits
    z = P.tensor([20.0, -120.0, 0.0], requires_grad=True)
    loss = F.binary_cross_entropy(z.sigmoid(), P.tensor([1.0, 0.0, 1.0]))
    loss.backward()
    assert not bool(z.grad.isnan().any())
    tz = torch.tensor([20.0, -120.0, 0.0], requires_grad=True)
    TF.binary_cross_entropy(tz.sigmoid(), torch.tensor([1.0, 0.0, 1.0])).backward()
    _close(z.grad, tz.grad, 1e-5, "saturated sigmoid")


def test_binary_cross_entropy_errors():
    p, t = P.tensor([0.2, 0.7]), torch.tensor([0.2, 0.7])
    for bad in (1.5, -0.5, float("nan")):
        _raise_alike(lambda: F.binary_cross_entropy(P.tensor([0.5, bad]), P.tensor([1.0, 0.0])),
                     lambda: TF.binary_cross_entropy(torch.tensor([0.5, bad]), torch.tensor([1.0, 0.0])),
                     RuntimeError, "all elements of input should be between 0 and 1")
    _raise_alike(lambda: F.binary_cross_entropy(p, P.tensor([1.5, 0.0])),
                 lambda: TF.binary_cross_entropy(t, torch.tensor([1.5, 0.0])), RuntimeError,
                 "all elements of target should be between 0 and 1")
    _raise_alike(lambda: F.binary_cross_entropy(p, P.tensor([1.0])),
                 lambda: TF.binary_cross_entropy(t, torch.tensor([1.0])), ValueError,
                 r"Using a target size \(pytorchlite.Size\(\[1\]\)\) that is different to the input size "
                 r"\(pytorchlite.Size\(\[2\]\)\) is deprecated")
    _raise_alike(lambda: F.binary_cross_entropy(p.double(), P.tensor([1.0, 0.0])),
                 lambda: TF.binary_cross_entropy(t.double(), torch.tensor([1.0, 0.0])), RuntimeError, "dtype")
    _raise_alike(lambda: F.binary_cross_entropy(p, P.tensor([1, 0])),
                 lambda: TF.binary_cross_entropy(t, torch.tensor([1, 0])), RuntimeError, "dtype")
    # a weight that would grow the result
    _raise_alike(lambda: F.binary_cross_entropy(p.view(1, 2), P.ones(1, 2), P.ones(3, 1)),
                 lambda: TF.binary_cross_entropy(t.view(1, 2), torch.ones(1, 2), torch.ones(3, 1)), RuntimeError,
                 "does not broadcast")
    _raise_alike(lambda: F.binary_cross_entropy(p, P.ones(2), P.ones(3)),
                 lambda: TF.binary_cross_entropy(t, torch.ones(2), torch.ones(3)), RuntimeError)


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weight_shape,pos_shape", [(None, None), ((4,), None), (None, (4,)), ((3, 1), (4,)),
                                                    ((3, 4), (3, 4))])
def test_bce_with_logits_matches_torch(weight_shape, pos_shape, reduction, dtype, tdtype, tol):
    x, y = _data((3, 4), 3.0), _rng.uniform(0, 1, (3, 4))
    y[1] = np.round(y[1])
    w = None if weight_shape is None else _rng.uniform(0.1, 2.0, weight_shape)
    pw = None if pos_shape is None else _rng.uniform(0.1, 4.0, pos_shape)
    _parity(lambda a, b, c, d: F.binary_cross_entropy_with_logits(a, b, c, reduction=reduction, pos_weight=d),
            lambda a, b, c, d: TF.binary_cross_entropy_with_logits(a, b, c, reduction=reduction, pos_weight=d),
            [x, y, w, pw], dtype, tdtype, tol, grads=[0, 1])


@pytest.mark.parametrize("dtype,tdtype", [(P.float32, torch.float32), (P.float64, torch.float64)])
@pytest.mark.parametrize("pos_weight", [None, 3.0])
def test_bce_with_logits_extreme_logits(dtype, tdtype, pos_weight):
    x = np.array([1000.0, 1000.0, -1000.0, -1000.0, 0.0, 0.0, 40.0, -40.0, 100.0, -100.0, 20.0, -20.0])
    y = np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.5, 0.0, 1.0, 0.25, 0.75, 0.0, 1.0])
    pw = None if pos_weight is None else np.full(x.shape, pos_weight)
    for reduction in REDUCTIONS:
        ps = _parity(lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=c),
                     lambda a, b, c: TF.binary_cross_entropy_with_logits(a, b, reduction=reduction, pos_weight=c),
                     [x, y, pw], dtype, tdtype, 1e-6, grads=[0, 1])
        assert np.isfinite(_np(ps[0].grad)).all() and np.isfinite(_np(ps[1].grad)).all()
    out = F.binary_cross_entropy_with_logits(P.tensor(x, dtype=dtype), P.tensor(y, dtype=dtype), reduction="none")
    assert np.isfinite(_np(out)).all()
    assert _np(out)[1] == 1000.0 and _np(out)[2] == 1000.0 and _np(out)[0] == 0.0


def test_bce_with_logits_errors():
    _raise_alike(lambda: F.binary_cross_entropy_with_logits(P.zeros(2), P.zeros(1)),
                 lambda: TF.binary_cross_entropy_with_logits(torch.zeros(2), torch.zeros(1)), ValueError,
                 r"Target size \(pytorchlite.Size\(\[1\]\)\) must be the same as input size")
    _raise_alike(lambda: F.binary_cross_entropy_with_logits(P.zeros(2), P.tensor([1, 0])),
                 lambda: TF.binary_cross_entropy_with_logits(torch.zeros(2), torch.tensor([1, 0])), RuntimeError,
                 "floating-point target")
    _raise_alike(lambda: F.binary_cross_entropy_with_logits(P.zeros(2), P.zeros(2), pos_weight=P.ones(3)),
                 lambda: TF.binary_cross_entropy_with_logits(torch.zeros(2), torch.zeros(2),
                                                             pos_weight=torch.ones(3)), RuntimeError)
    _raise_alike(lambda: F.binary_cross_entropy_with_logits(P.zeros(2), P.zeros(2), P.ones(3, 2)),
                 lambda: TF.binary_cross_entropy_with_logits(torch.zeros(2), torch.zeros(2), torch.ones(3, 2)),
                 RuntimeError, "must broadcast to the input's size")


def test_bce_double_backward_matches_torch():
    x, y = _probs((2, 3)), _rng.uniform(0, 1, (2, 3))
    z = _data((2, 3), 2.0)
    for fp, ft, a in ((F.binary_cross_entropy, TF.binary_cross_entropy, x),
                      (F.binary_cross_entropy_with_logits, TF.binary_cross_entropy_with_logits, z)):
        pa, ta = P.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        pb, tb = P.tensor(y, requires_grad=True), torch.tensor(y, requires_grad=True)
        g, = P.autograd.grad(fp(pa, pb, reduction="sum"), pa, create_graph=True)
        tg, = torch.autograd.grad(ft(ta, tb, reduction="sum"), ta, create_graph=True)
        _close(g, tg, 1e-10, "first gradient")
        (g * g).sum().backward()
        (tg * tg).sum().backward()
        # PyTorch's double-backward formula for BCE adds its 1e-12 differently: agree to ~1e-9
        _close(pa.grad, ta.grad, 1e-9, "second derivative, input")
        _close(pb.grad, tb.grad, 1e-9, "second derivative, target")


# --- KL divergence -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean", "mean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div_matches_torch(reduction, log_target, dtype, tdtype, tol):
    logits = _data((4, 5))
    inp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    q = np.exp(_data((4, 5)))
    q /= q.sum(1, keepdims=True)
    if not log_target:
        q[0, 1] = 0.0   # 0 * log 0 counts 0
    tgt = np.log(q) if log_target else q
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _parity(lambda a, b: F.kl_div(a, b, reduction=reduction, log_target=log_target),
                lambda a, b: TF.kl_div(a, b, reduction=reduction, log_target=log_target), [inp, tgt], dtype, tdtype,
                tol)


def test_kl_div_mean_warns_and_batchmean_edges():
    a, b = P.tensor([[-1.0, -2.0]]), P.tensor([[0.3, 0.7]])
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size") as rec:
        F.kl_div(a, b)
    assert rec[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for reduction in ("none", "sum", "batchmean"):
            F.kl_div(a, b, reduction=reduction)
    # batchmean: a 0-d input is not divided, an empty batch gives nan; broadcast targets as torch
    for x, y in ((np.array(-0.5), np.array(0.25)), (np.zeros((0, 3)), np.zeros((0, 3))),
                 (_data((3, 2)), np.array([0.4, 0.6]))):
        o = F.kl_div(P.tensor(x), P.tensor(y), reduction="batchmean")
        t = TF.kl_div(torch.tensor(x), torch.tensor(y), reduction="batchmean")
        np.testing.assert_allclose(_np(o), _np(t), rtol=1e-12)
    # negative probabilities give nan (xlogy of a negative), as PyTorch
    o = F.kl_div(P.tensor([-1.0, -1.0]), P.tensor([0.0, -0.5]), reduction="none")
    t = TF.kl_div(torch.tensor([-1.0, -1.0]), torch.tensor([0.0, -0.5]), reduction="none")
    np.testing.assert_array_equal(_np(o), _np(t))


# --- reductions are checked everywhere -------------------------------------------------------------

BAD_REDUCTION_CALLS = [
    ("mse_loss", lambda m, T: m.mse_loss(T.ones(2), T.ones(2), reduction="avg")),
    ("l1_loss", lambda m, T: m.l1_loss(T.ones(2), T.ones(2), reduction="avg")),
    ("smooth_l1_loss", lambda m, T: m.smooth_l1_loss(T.ones(2), T.ones(2), reduction="batchmean")),
    ("huber_loss", lambda m, T: m.huber_loss(T.ones(2), T.ones(2), reduction="avg")),
    ("binary_cross_entropy", lambda m, T: m.binary_cross_entropy(T.ones(2) / 2, T.ones(2), reduction="avg")),
    ("binary_cross_entropy_with_logits",
     lambda m, T: m.binary_cross_entropy_with_logits(T.ones(2), T.ones(2), reduction="avg")),
    ("kl_div", lambda m, T: m.kl_div(T.ones(2), T.ones(2), reduction="avg")),
]


@pytest.mark.parametrize("name,call", BAD_REDUCTION_CALLS, ids=[n for n, _ in BAD_REDUCTION_CALLS])
def test_bad_reduction_raises_value_error(name, call):
    _raise_alike(lambda: call(F, P), lambda: call(TF, torch), ValueError, "is not a valid value for reduction")


# --- gradcheck along random directions in float64 ------------------------------------------------

GRADCHECK = [
    ("smooth_l1", lambda a, b: F.smooth_l1_loss(a, b, reduction="sum", beta=0.7), _data, _data),
    ("huber", lambda a, b: F.huber_loss(a, b, reduction="none", delta=0.6), _data, _data),
    ("bce", lambda a, b: F.binary_cross_entropy(a, b, reduction="none"), _probs, _probs),
    ("bce_logits", lambda a, b: F.binary_cross_entropy_with_logits(a, b, pos_weight=P.tensor([2.0, 0.5, 1.0])),
     _data, _probs),
    ("kl_div", lambda a, b: F.kl_div(a, b, reduction="batchmean"), _data, _probs),
    ("kl_div_log", lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True), _data, _data),
]


@pytest.mark.parametrize("name,fn,gen_a,gen_b", GRADCHECK, ids=[g[0] for g in GRADCHECK])
def test_losses_gradcheck(name, fn, gen_a, gen_b):
    a = P.tensor(gen_a((2, 3)), dtype=P.float64, requires_grad=True)
    b = P.tensor(gen_b((2, 3)), dtype=P.float64, requires_grad=True)
    assert P.autograd.gradcheck(fn, (a, b), eps=1e-6, atol=1e-5)


def test_bilinear_gradcheck():
    args = [P.tensor(_data(s), dtype=P.float64, requires_grad=True) for s in ((2, 3), (2, 4), (5, 3, 4), (5,))]
    assert P.autograd.gradcheck(F.bilinear, tuple(args), eps=1e-6, atol=1e-5)


# --- bilinear ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("s1,s2", [((6, 3), (6, 4)), ((3,), (4,)), ((2, 5, 3), (2, 5, 4)), ((0, 3), (0, 4)),
                                   ((1, 3), (1, 4))])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(s1, s2, bias, dtype, tdtype, tol):
    arrays = [_data(s1), _data(s2), _data((5, 3, 4), 0.5), _data((5,)) if bias else None]
    grads = [0, 1, 2, 3] if bias else [0, 1, 2]
    _parity(F.bilinear, TF.bilinear, arrays, dtype, tdtype, tol, grads=grads)


def test_bilinear_noncontiguous_inputs():
    a, b, w = _data((4, 6)), _data((4, 4)), _data((2, 3, 4))
    x1, x2 = P.tensor(a)[:, ::2], P.tensor(b).t()
    assert not x1.is_contiguous() and not x2.is_contiguous()
    o = F.bilinear(x1, x2, P.tensor(w))
    t = TF.bilinear(torch.tensor(a)[:, ::2], torch.tensor(b).t(), torch.tensor(w))
    _close(o, t, 1e-10, "non-contiguous bilinear")


def test_bilinear_errors():
    w, b = P.ones(4, 3, 5), P.ones(4)
    tw, tb = torch.ones(4, 3, 5), torch.ones(4)
    cases = [
        ((P.ones(6, 2, 3), P.ones(6, 5), w, b), (torch.ones(6, 2, 3), torch.ones(6, 5), tw, tb), RuntimeError,
         "bilinear\\(\\): input dimensions do not match: got 3 and 2"),
        ((P.ones(2, 4), P.ones(2, 5), w, b), (torch.ones(2, 4), torch.ones(2, 5), tw, tb), RuntimeError,
         "input1 size does not match weight size: got 4 but expected 3"),
        ((P.ones(2, 3), P.ones(2, 6), w, b), (torch.ones(2, 3), torch.ones(2, 6), tw, tb), RuntimeError,
         "input2 size does not match weight size: got 6 but expected 5"),
        ((P.ones(2, 3), P.ones(2, 5), w, P.ones(3)), (torch.ones(2, 3), torch.ones(2, 5), tw, torch.ones(3)),
         RuntimeError, "bias size does not match weight size: got 3 but expected 4"),
        ((P.ones(2, 3), P.ones(3, 5), w, b), (torch.ones(2, 3), torch.ones(3, 5), tw, tb), RuntimeError,
         "input batch dimensions do not match at dim 0: got 2 and 3"),
        ((P.ones(2, 3).double(), P.ones(2, 5), w, b), (torch.ones(2, 3).double(), torch.ones(2, 5), tw, tb),
         RuntimeError, "All tensors must have the same dtype"),
        ((P.ones(2, 3), P.ones(2, 5), P.ones(4, 3), b), (torch.ones(2, 3), torch.ones(2, 5), torch.ones(4, 3), tb),
         IndexError, "Dimension out of range"),
    ]
    for ours, theirs, exc, match in cases:
        _raise_alike(lambda: F.bilinear(*ours), lambda: TF.bilinear(*theirs), exc, match)


def test_bilinear_module_matches_torch():
    P.manual_seed(0)
    m = nn.Bilinear(3, 4, 5)
    tm = torch.nn.Bilinear(3, 4, 5).double()
    m.double()
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(m.weight.detach().numpy()))
        tm.bias.copy_(torch.tensor(m.bias.detach().numpy()))
    a, b = _data((7, 3)), _data((7, 4))
    x1, x2 = P.tensor(a, requires_grad=True), P.tensor(b, requires_grad=True)
    t1, t2 = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    out, tout = m(x1, x2), tm(t1, t2)
    _close(out, tout, 1e-10, "Bilinear output")
    g = _data((7, 5))
    out.backward(P.tensor(g))
    tout.backward(torch.tensor(g))
    for ours, theirs, what in ((x1.grad, t1.grad, "input1"), (x2.grad, t2.grad, "input2"),
                               (m.weight.grad, tm.weight.grad, "weight"), (m.bias.grad, tm.bias.grad, "bias")):
        _close(ours, theirs, 1e-10, f"Bilinear gradient of {what}")
    assert repr(m) == repr(tm) == "Bilinear(in1_features=3, in2_features=4, out_features=5, bias=True)"
    assert repr(nn.Bilinear(3, 4, 5, bias=False)) == repr(torch.nn.Bilinear(3, 4, 5, bias=False))
    assert list(m.state_dict()) == list(tm.state_dict()) == ["weight", "bias"]
    assert list(nn.Bilinear(3, 4, 5, bias=False).state_dict()) == ["weight"]
    assert nn.Bilinear(3, 4, 5, bias=False).bias is None
    assert nn.Bilinear(2, 3, 4, dtype=P.float64).weight.dtype == P.float64
    with pytest.raises(ValueError, match=r"in1_features must be > 0, but got \(in1_features=0\)"):
        nn.Bilinear(0, 4, 5)
    with pytest.raises(ValueError):
        torch.nn.Bilinear(0, 4, 5)


def test_bilinear_default_init():
    # uniform(-1/sqrt(in1_features), 1/sqrt(in1_features)) for weight and bias, as PyTorch
    P.manual_seed(1)
    m = nn.Bilinear(16, 40, 30)
    bound = 1 / math.sqrt(16)
    w, b = _np(m.weight), _np(m.bias)
    assert w.shape == (30, 16, 40) and b.shape == (30,)
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    assert np.abs(w).max() > 0.99 * bound and np.abs(b).max() > 0.5 * bound
    assert abs(w.mean()) < 0.01 and abs(w.std() - bound / math.sqrt(3)) < 0.01
    assert m.weight.requires_grad and m.bias.requires_grad


# --- activation modules ------------------------------------------------------------------------

ACTIVATIONS = [
    ("ReLU", (), {}), ("ReLU", (), {"inplace": True}),
    ("SiLU", (), {}), ("SiLU", (), {"inplace": True}),
    ("Mish", (), {}), ("Mish", (), {"inplace": True}),
    ("Hardsigmoid", (), {}), ("Hardsigmoid", (), {"inplace": True}),
    ("Hardswish", (), {}), ("Hardswish", (), {"inplace": True}),
    ("LeakyReLU", (), {}), ("LeakyReLU", (0.2,), {}), ("LeakyReLU", (), {"negative_slope": 0.3, "inplace": True}),
    ("ELU", (), {}), ("ELU", (0.5,), {}), ("ELU", (), {"alpha": 2.0, "inplace": True}),
    ("Softplus", (), {}), ("Softplus", (2, 3), {}), ("Softplus", (), {"beta": 0.5, "threshold": 5.0}),
    ("Hardtanh", (), {}), ("Hardtanh", (-2, 3), {}), ("Hardtanh", (-0.5, 0.5, True), {}),
    ("ReLU6", (), {}), ("ReLU6", (True,), {}),
    ("GELU", (), {}), ("GELU", (), {"approximate": "tanh"}), ("Tanh", (), {}), ("Sigmoid", (), {}),
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("name,args,kw", ACTIVATIONS, ids=[f"{n}{a}{k}" for n, a, k in ACTIVATIONS])
def test_activation_modules_match_torch(name, args, kw, dtype, tdtype, tol):
    m, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(m) == repr(tm)
    # the kinks of every activation (+-3 for the hard ones; see also test_hardswish_gradient_at_its_kinks)
    kinks = [-3.0, 3.0]
    a = np.concatenate([_data(20, 4.0), [0.0, 6.0, -1.0, 1.0, 25.0, -25.0, 100.0, -100.0], kinks]).reshape(5, 6)
    if name == "Hardsigmoid" and dtype == P.float64:
        tol = 1e-8   # PyTorch's CPU kernel multiplies by 1.0f / 6.0f, a float32 constant, in float64 too
    if kw.get("inplace") or (name in ("Hardtanh", "ReLU6") and True in args):
        # in place on a non-leaf: the input itself changes, and the gradient flows through it
        x = P.tensor(a, dtype=dtype, requires_grad=True)
        tx = torch.tensor(a, dtype=tdtype, requires_grad=True)
        h, th = x * 1.0, tx * 1.0
        out, tout = m(h), tm(th)
        _close(h, th, tol, "input after the in-place op")
        _close(out, tout, tol, "output")
        g = _data((5, 6))
        out.backward(P.tensor(g, dtype=dtype))
        tout.backward(torch.tensor(g, dtype=tdtype))
        _close(x.grad, tx.grad, tol, "gradient")
    else:
        _parity(m, tm, [a], dtype, tdtype, tol)
        # a non-contiguous view
        x = P.tensor(a.T.copy(), dtype=dtype).t()
        assert not x.is_contiguous()
        _close(m(x), tm(torch.tensor(a, dtype=tdtype)), tol, "non-contiguous input")


def test_hardswish_gradient_at_its_kinks():
    x = P.tensor([-3.0, 3.0], dtype=P.float64, requires_grad=True)
    tx = torch.tensor([-3.0, 3.0], dtype=torch.float64, requires_grad=True)
    nn.Hardswish()(x).sum().backward()
    torch.nn.Hardswish()(tx).sum().backward()
    _close(x.grad, tx.grad, 1e-12, "Hardswish gradient at -3 and 3")


def test_activation_module_attributes_and_errors():
    for name, args, kw in ACTIVATIONS:
        m, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
        for attr in ("inplace", "negative_slope", "alpha", "beta", "threshold", "min_val", "max_val"):
            assert getattr(m, attr, None) == getattr(tm, attr, None), f"{name}.{attr}"
        assert list(m.state_dict()) == [] and list(m.parameters()) == []
    _raise_alike(lambda: nn.Hardtanh(1.0, -1.0), lambda: torch.nn.Hardtanh(1.0, -1.0), AssertionError,
                 r"max_val \(-1.0\) must be greater than min_val \(1.0\)")
    _raise_alike(lambda: nn.Hardtanh(0.5, 0.5), lambda: torch.nn.Hardtanh(0.5, 0.5), AssertionError, "max_val")
    with pytest.warns(FutureWarning, match="`min_value` is deprecated"):
        h = nn.Hardtanh(min_value=-3.0)
    with pytest.warns(FutureWarning, match="`max_value` is deprecated"):
        h2 = nn.Hardtanh(max_value=4.0)
    assert (h.min_val, h.max_val, h2.min_val, h2.max_val) == (-3.0, 1.0, -1.0, 4.0)
    assert isinstance(nn.ReLU6(), nn.Hardtanh)
    assert repr(nn.Sigmoid()) == "Sigmoid()" and repr(nn.Tanh()) == "Tanh()"


def test_leaky_relu_functional_is_exported():
    assert hasattr(F, "leaky_relu")
    a = _data((3, 4), 2.0)
    _parity(lambda x: F.leaky_relu(x, 0.2), lambda x: TF.leaky_relu(x, 0.2), [a], P.float64, torch.float64, 1e-10)
    _parity(lambda x: F.leaky_relu(x), lambda x: TF.leaky_relu(x), [a], P.float32, torch.float32, 1e-5)


def test_print_model_matches_torch():
    def build(lib):
        return lib.nn.Sequential(
            lib.nn.Linear(6, 8), lib.nn.LeakyReLU(0.1, inplace=True), lib.nn.Unflatten(1, (2, 4)),
            lib.nn.ELU(), lib.nn.Flatten(), lib.nn.Hardtanh(-2.0, 2.0), lib.nn.ReLU(inplace=True), lib.nn.ReLU6(),
            lib.nn.Softplus(beta=2.0), lib.nn.Mish(), lib.nn.Hardswish(), lib.nn.Hardsigmoid(), lib.nn.SiLU(),
            lib.nn.ModuleDict({"head": lib.nn.Linear(8, 2), "act": lib.nn.Sigmoid()}),
            lib.nn.BCEWithLogitsLoss(pos_weight=lib.ones(2)), lib.nn.KLDivLoss(reduction="batchmean"),
        )
    assert repr(build(P)) == repr(build(torch))


# --- Unflatten ---------------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dim,size", [((2, 12), 1, (3, 4)), ((2, 12), -1, [2, 3, 2]), ((6, 5), 0, (2, -1)),
                                            ((4, 6, 2), 1, (1, 6, 1)), ((3, 4), 1, (4,))])
def test_unflatten_matches_torch(shape, dim, size):
    m, tm = nn.Unflatten(dim, size), torch.nn.Unflatten(dim, size)
    _parity(m, tm, [_data(shape)], P.float64, torch.float64, 1e-10)
    assert repr(m) == repr(tm)
    assert m.dim == dim and m.unflattened_size == size


def test_unflatten_size_types_and_errors():
    m = nn.Unflatten(1, P.Size([2, 3]))
    assert repr(m) == repr(torch.nn.Unflatten(1, torch.Size([2, 3]))).replace("torch.", "pytorchlite.")
    assert tuple(m(P.zeros(4, 6)).shape) == (4, 2, 3)
    _raise_alike(lambda: nn.Unflatten(1, 6), lambda: torch.nn.Unflatten(1, 6), TypeError,
                 "unflattened_size must be a tuple of ints, but found type int")
    _raise_alike(lambda: nn.Unflatten(1, (2, 3.0)), lambda: torch.nn.Unflatten(1, (2, 3.0)), TypeError,
                 "unflattened_size must be tuple of ints, but found element of type float at pos 1")
    _raise_alike(lambda: nn.Unflatten(1, (4, 2))(P.zeros(2, 6)), lambda: torch.nn.Unflatten(1, (4, 2))(
        torch.zeros(2, 6)), RuntimeError)


# --- loss modules --------------------------------------------------------------------------------

def _loss_inputs(name):
    x, y = _data((3, 4), 2.0), _data((3, 4), 2.0)
    if name == "BCELoss":
        x, y = _probs((3, 4)), _rng.uniform(0, 1, (3, 4))
    elif name == "BCEWithLogitsLoss":
        y = _rng.uniform(0, 1, (3, 4))
    elif name == "KLDivLoss":
        y = _probs((3, 4))
    return x, y


LOSS_MODULES = [
    ("MSELoss", {}), ("L1Loss", {"reduction": "sum"}),
    ("SmoothL1Loss", {}), ("SmoothL1Loss", {"beta": 0.5, "reduction": "none"}), ("SmoothL1Loss", {"beta": 0.0}),
    ("HuberLoss", {}), ("HuberLoss", {"delta": 0.3, "reduction": "sum"}),
    ("BCELoss", {}), ("BCELoss", {"weight": (4,), "reduction": "none"}),
    ("BCEWithLogitsLoss", {}), ("BCEWithLogitsLoss", {"weight": (3, 1), "pos_weight": (4,), "reduction": "sum"}),
    ("BCEWithLogitsLoss", {"pos_weight": (4,)}),
    ("KLDivLoss", {"reduction": "batchmean"}), ("KLDivLoss", {"reduction": "sum", "log_target": True}),
    ("KLDivLoss", {}),
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("name,kw", LOSS_MODULES, ids=[f"{n}-{k}" for n, k in LOSS_MODULES])
def test_loss_modules_match_torch(name, kw, dtype, tdtype, tol):
    ours_kw, theirs_kw = {}, {}
    for k, v in kw.items():
        if k in ("weight", "pos_weight"):
            a = _rng.uniform(0.1, 2.0, v)
            ours_kw[k], theirs_kw[k] = P.tensor(a, dtype=dtype), torch.tensor(a, dtype=tdtype)
        else:
            ours_kw[k] = theirs_kw[k] = v
    m, tm = getattr(nn, name)(**ours_kw), getattr(torch.nn, name)(**theirs_kw)
    assert repr(m) == repr(tm)
    assert m.reduction == tm.reduction
    for attr in ("beta", "delta", "log_target"):
        assert getattr(m, attr, None) == getattr(tm, attr, None)
    # weight and pos_weight are buffers (saved, moved with .to(), never trained)
    assert list(m.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in tm.named_buffers()]
    assert list(m.parameters()) == []
    x, y = _loss_inputs(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # KLDivLoss's 'mean' warning
        _parity(m, tm, [x, y], dtype, tdtype, tol)


def test_loss_module_buffers_follow_dtype_and_state_dict():
    m = nn.BCEWithLogitsLoss(weight=P.ones(3), pos_weight=P.tensor([1.0, 2.0, 3.0]))
    assert list(m.state_dict()) == ["weight", "pos_weight"]
    m.double()
    assert m.weight.dtype == P.float64 and m.pos_weight.dtype == P.float64
    m2 = nn.BCEWithLogitsLoss(weight=P.zeros(3), pos_weight=P.zeros(3))
    m2.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(_np(m2.pos_weight), [1.0, 2.0, 3.0])
    assert list(nn.BCELoss().state_dict()) == [] and "weight" in dict(nn.BCELoss()._buffers)
    with pytest.warns(UserWarning, match="batchmean"):
        nn.KLDivLoss()(P.tensor([[-1.0, -1.0]]), P.tensor([[0.5, 0.5]]))
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        nn.SmoothL1Loss(reduction="avg")(P.ones(2), P.ones(2))


# --- ModuleDict ----------------------------------------------------------------------------------

def _pair_dicts():
    ours = nn.ModuleDict({"conv": nn.Linear(3, 4), "act": nn.ReLU()})
    theirs = torch.nn.ModuleDict({"conv": torch.nn.Linear(3, 4), "act": torch.nn.ReLU()})
    return ours, theirs


def test_module_dict_mapping_api():
    d, td = _pair_dicts()
    assert len(d) == len(td) == 2
    assert list(d) == list(td) == ["conv", "act"]
    assert list(d.keys()) == ["conv", "act"]
    assert [type(v).__name__ for v in d.values()] == ["Linear", "ReLU"]
    assert [(k, type(v).__name__) for k, v in d.items()] == [("conv", "Linear"), ("act", "ReLU")]
    assert "conv" in d and "nope" not in d
    assert isinstance(d["conv"], nn.Linear) and d.conv is d["conv"]
    lin = nn.Linear(4, 1)
    d["out"] = lin
    assert d["out"] is lin and list(d) == ["conv", "act", "out"]
    d["act"] = nn.Tanh()   # replacing keeps the position, as dict
    assert list(d) == ["conv", "act", "out"] and isinstance(d["act"], nn.Tanh)
    del d["act"]
    assert list(d) == ["conv", "out"]
    with pytest.raises(KeyError):
        d["act"]
    with pytest.raises(KeyError):
        del d["act"]
    popped = d.pop("out")
    assert popped is lin and list(d) == ["conv"]
    with pytest.raises(KeyError):
        d.pop("out")
    d.clear()
    assert len(d) == 0 and list(d) == [] and list(d.parameters()) == []
    assert len(nn.ModuleDict()) == 0


def test_module_dict_update_forms():
    d = nn.ModuleDict()
    d.update([("a", nn.ReLU()), ("b", nn.Linear(2, 2))])
    d.update(OrderedDict([("c", nn.Tanh()), ("a", nn.Sigmoid())]))
    d.update({"d": nn.ELU()})
    d.update(nn.ModuleDict({"e": nn.Mish()}))
    d.update((k, v) for k, v in [("f", nn.SiLU())])
    assert list(d) == ["a", "b", "c", "d", "e", "f"] and isinstance(d["a"], nn.Sigmoid)
    td = torch.nn.ModuleDict()
    for bad, exc, match in ((3, TypeError, "ModuleDict.update should be called with an iterable of key/value pairs, "
                                           "but got int"),
                            ([("a", nn.ReLU()), 5], TypeError, "ModuleDict update sequence element #1 should be "
                                                                "Iterable; isint"),
                            ([("a", nn.ReLU(), 1)], ValueError, "ModuleDict update sequence element #0 has length 3; "
                                                                "2 is required")):
        tbad = [(x[0], torch.nn.ReLU(), *x[2:]) if isinstance(x, tuple) else x for x in bad] \
            if isinstance(bad, list) else bad
        _raise_alike(lambda: d.update(bad), lambda: td.update(tbad), exc, match)
    with pytest.raises(TypeError, match="is not a Module subclass"):
        d["x"] = 3


def test_module_dict_registers_parameters_repr_and_state_dict():
    d, td = _pair_dicts()
    assert repr(d) == repr(td)
    assert repr(nn.ModuleDict()) == repr(torch.nn.ModuleDict()) == "ModuleDict()"
    assert list(d.state_dict()) == list(td.state_dict()) == ["conv.weight", "conv.bias"]
    assert [n for n, _ in d.named_parameters()] == ["conv.weight", "conv.bias"]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "reg": nn.Linear(4, 1)})
            self.body = nn.Linear(2, 4)

        def forward(self, x, head):
            return self.heads[head](self.body(x))

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.heads = torch.nn.ModuleDict({"cls": torch.nn.Linear(4, 3), "reg": torch.nn.Linear(4, 1)})
            self.body = torch.nn.Linear(2, 4)

    net, tnet = Net(), TNet()
    assert list(net.state_dict()) == list(tnet.state_dict())
    assert repr(net).replace("Net(", "") == repr(tnet).replace("TNet(", "")
    assert tuple(net(P.ones(5, 2), "cls").shape) == (5, 3)
    net.eval()
    assert not net.heads.training and not net.heads["reg"].training
    # load a state dict into a ModuleDict model, then the weights are those
    sd = {k: P.tensor(v.detach().numpy()) for k, v in tnet.state_dict().items()}
    net.load_state_dict(sd)
    np.testing.assert_array_equal(_np(net.heads["reg"].weight), tnet.heads["reg"].weight.detach().numpy())
    with pytest.raises(NotImplementedError):
        d(P.ones(1, 3))
    with pytest.raises(NotImplementedError):
        td(torch.ones(1, 3))


# --- docstring examples of the new functions -------------------------------------------------------

@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
                                  "binary_cross_entropy_with_logits", "kl_div", "bilinear"])
def test_docstring_examples(name):
    fn = getattr(F, name)
    assert ">>>" in fn.__doc__
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for test in doctest.DocTestFinder(recurse=False).find(fn, name, globs=dict(vars(F))):
            runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
