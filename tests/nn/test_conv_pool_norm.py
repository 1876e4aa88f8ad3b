"""Softmax, convolution, pooling, normalisation, embedding and dropout, functional and as
layers, against PyTorch from identical inputs and weights: outputs and every gradient, in
float32 and float64, train and eval modes, odd shapes, non-contiguous inputs and bad
arguments. (Gradcheck and gradgradcheck of each new operator in float64 live in
tests/autograd/test_gradcheck_ops.py.)"""

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F

import numpy_oracles as npo  # noqa: E402
from parity import HAVE_TORCH, torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped
TF = torch.nn.functional
# torch warns that it pads a copy of the input for padding='same' with an even kernel
pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same'")

DTYPES = [(P.float32, torch.float32, 1e-5), (P.float64, torch.float64, 1e-10)]
_rng = np.random.default_rng(0)


def _data(shape, scale=1.0):
    return _rng.standard_normal(shape) * scale


def _pair(a, dtype, tdtype, grad=True, layout="contiguous"):
    """The same values as a pytorchlite and a torch leaf; layout 't' gives a view with the
    last two dims swapped in memory, 's' a step-sliced view (both non-contiguous). Without
    a torch dtype (tdtype None) the torch leaf is None."""
    if tdtype is None:
        p, _ = _pair_p(a, dtype, layout)
        return (p.detach().requires_grad_() if grad else p), None
    if layout == "t":
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        p = P.tensor(base, dtype=dtype).transpose(-1, -2)
        t = torch.tensor(base, dtype=tdtype).transpose(-1, -2)
    elif layout == "s":
        wide = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,))
        wide[..., ::2] = a
        p = P.tensor(wide, dtype=dtype)[..., ::2]
        t = torch.tensor(wide, dtype=tdtype)[..., ::2]
    else:
        p, t = P.tensor(a, dtype=dtype), torch.tensor(a, dtype=tdtype)
    if layout != "contiguous" and a.ndim >= 2 and a.shape[-1] > 1:
        assert not p.is_contiguous()
    if grad:
        p = p.detach().requires_grad_()
        t = t.detach().requires_grad_()
    return p, t


def _pair_p(a, dtype, layout):
    if layout == "t":
        return P.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), dtype=dtype).transpose(-1, -2), None
    if layout == "s":
        wide = np.zeros(a.shape[:-1] + (a.shape[-1] * 2,))
        wide[..., ::2] = a
        return P.tensor(wide, dtype=dtype)[..., ::2], None
    return P.tensor(a, dtype=dtype), None


def _close(ours, theirs, tol, what=""):
    o = ours.detach().numpy() if isinstance(ours, P.Tensor) else np.asarray(ours)
    t = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    assert o.shape == t.shape, f"{what}: shape {o.shape} != {t.shape}"
    np.testing.assert_allclose(o, t, rtol=tol * 10, atol=tol * 10, err_msg=what)


def _check_numpy(fn_p, fn_np, inputs, dtype, tol, layouts, seed_grad):
    pairs = [_pair(a, dtype, None, grad=np.issubdtype(a.dtype, np.floating), layout=lay) if a is not None
             else (None, None) for a, lay in zip(inputs, layouts)]
    out_p = fn_p(*[p for p, _ in pairs])
    want = np.asarray(fn_np(*inputs))
    _close(out_p, want, tol, "output (NumPy float64 oracle)")
    assert out_p.dtype == dtype
    if seed_grad:
        g = _data(want.shape)
        out_p.backward(P.tensor(g, dtype=dtype))
        for k, (p, _) in enumerate(pairs):
            if p is not None and p.requires_grad:
                assert p.grad is not None, f"no gradient for input {k}"
                _close(p.grad, npo.numeric_grad(fn_np, inputs, k, g), max(tol, 1e-7),
                       f"gradient of input {k} (central differences)")
    return out_p, None


def _check(fn_p, fn_t, inputs, dtype, tdtype, tol, layouts=None, seed_grad=True, numpy_fn=None):
    """Run fn on the same inputs in both libraries; compare the output and the gradient of
    every input (with a random upstream gradient). Without PyTorch, `numpy_fn` (a float64
    NumPy form of fn) is the oracle where given, its gradients central differences."""
    layouts = layouts or ["contiguous"] * len(inputs)
    if not HAVE_TORCH and numpy_fn is not None:
        return _check_numpy(fn_p, numpy_fn, inputs, dtype, tol, layouts, seed_grad)
    pairs = [_pair(a, dtype, tdtype, grad=a is not None and np.issubdtype(a.dtype, np.floating), layout=lay)
             if a is not None else (None, None) for a, lay in zip(inputs, layouts)]
    out_p = fn_p(*[p for p, _ in pairs])
    out_t = fn_t(*[t for _, t in pairs])
    _close(out_p, out_t, tol, "output")
    assert out_p.dtype == dtype
    if seed_grad:
        g = _data(tuple(out_t.shape))
        out_p.backward(P.tensor(g, dtype=dtype))
        out_t.backward(torch.tensor(g, dtype=tdtype))
        for k, (p, t) in enumerate(pairs):
            if p is not None and t.grad is not None:
                _close(p.grad, t.grad, tol, f"gradient of input {k}")
    return out_p, out_t


# --- softmax ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim,layout", [((5,), 0, "contiguous"), ((3, 7), 1, "contiguous"),
                                              ((3, 7), 0, "t"), ((2, 3, 4), 1, "s"), ((2, 3, 4), -1, "t"),
                                              ((4, 1), 1, "contiguous"), ((), 0, "contiguous"),
                                              ((3, 1000), 1, "contiguous")])
def test_softmax_matches_torch(name, shape, dim, layout, dtype, tdtype, tol):
    a = _data(shape, 3.0)
    ref = lambda x: npo.softmax(x, dim, log=name == "log_softmax")   # noqa: E731
    _check(lambda x: getattr(P, name)(x, dim), lambda x: getattr(torch, name)(x, dim), [a], dtype, tdtype, tol,
           [layout], numpy_fn=ref)
    _check(lambda x: getattr(F, name)(x, dim=dim), lambda x: getattr(TF, name)(x, dim=dim), [a], dtype, tdtype, tol,
           numpy_fn=ref)
    _check(lambda x: getattr(x, name)(dim), lambda x: getattr(x, name)(dim), [a], dtype, tdtype, tol, numpy_fn=ref)


def test_softmax_extremes_and_dtype_argument():
    x = np.array([[1000.0, 0.0, -1000.0], [-np.inf, 0.0, -np.inf], [-np.inf] * 3, [np.nan, 1.0, 2.0]])
    for name in ("softmax", "log_softmax"):
        for dt, tdt in ((P.float32, torch.float32), (P.float64, torch.float64)):
            o = getattr(P, name)(P.tensor(x, dtype=dt), 1).numpy()
            t = getattr(torch, name)(torch.tensor(x, dtype=tdt), 1).numpy()
            np.testing.assert_allclose(o, t, rtol=1e-6, atol=1e-6)
    assert (P.softmax(P.tensor(x), 1).numpy()[1] == [0.0, 1.0, 0.0]).all()
    r = P.softmax(P.tensor([1, 2, 3]), 0, dtype=P.float64)
    assert r.dtype == P.float64
    np.testing.assert_allclose(r.numpy(), torch.softmax(torch.tensor([1, 2, 3]), 0, dtype=torch.float64).numpy())
    h = P.softmax(P.tensor([1.0, 2.0], dtype=P.float16), 0)
    assert h.dtype == P.float16
    np.testing.assert_allclose(h.float().numpy(), torch.softmax(torch.tensor([1.0, 2.0]).half(), 0).float().numpy(),
                               rtol=1e-3)
    e = P.softmax(P.zeros(0, 3), 1)
    assert tuple(e.shape) == (0, 3)
    with pytest.warns(UserWarning, match="Implicit dimension"):
        d = F.softmax(P.ones(2, 3))
    assert np.allclose(d.numpy(), 1 / 3)


def test_softmax_errors():
    with pytest.raises(NotImplementedError, match="softmax_lastdim_kernel_impl\" not implemented for 'Long'"):
        P.softmax(P.tensor([1, 2]), 0)
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        P.softmax(P.ones(2, 3), 2)
    with pytest.raises(RuntimeError, match="half to float"):
        P._softmax(P.ones(2, dtype=P.float16), 0, True)


def test_softmax_double_backward_matches_torch():
    a = _data((3, 5))
    for name in ("softmax", "log_softmax"):
        x = P.tensor(a, requires_grad=True)
        tx = torch.tensor(a, requires_grad=True)
        w = _data((3, 5))
        g, = P.autograd.grad((getattr(P, name)(x, 1) * P.tensor(w)).sum(), x, create_graph=True)
        tg, = torch.autograd.grad((getattr(torch, name)(tx, 1) * torch.tensor(w)).sum(), tx, create_graph=True)
        (g * g).sum().backward()
        (tg * tg).sum().backward()
        _close(x.grad, tx.grad, 1e-10, name)


# --- convolution ------------------------------------------------------------------------------

CONV2D_CASES = [
    # x shape, weight shape, kwargs
    ((2, 3, 7, 6), (4, 3, 3, 3), {}),
    ((2, 3, 7, 6), (4, 3, 3, 2), {"stride": 2, "padding": 1}),
    ((1, 4, 9, 8), (6, 2, 3, 3), {"groups": 2, "dilation": 2, "padding": (2, 1)}),
    ((3, 6, 5, 5), (6, 1, 3, 3), {"groups": 6, "padding": 1, "stride": (1, 2)}),
    ((2, 2, 6, 6), (3, 2, 1, 1), {}),
    ((2, 2, 5, 7), (3, 2, 2, 4), {"padding": "same"}),
    ((2, 2, 5, 7), (3, 2, 3, 3), {"padding": "same", "dilation": (1, 2)}),
    ((2, 2, 5, 7), (3, 2, 3, 3), {"padding": "valid"}),
    ((3, 5, 5), (2, 3, 3, 3), {"padding": 1}),            # unbatched
    ((1, 1, 3, 3), (1, 1, 3, 3), {}),                      # 1x1 output
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,ws,kw", CONV2D_CASES)
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_torch(xs, ws, kw, bias, dtype, tdtype, tol):
    inputs = [_data(xs), _data(ws, 0.3), _data((ws[0],)) if bias else None]
    _check(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw), inputs, dtype, tdtype,
           tol, numpy_fn=lambda x, w, b: npo.conv2d(x, w, b, **kw))


@pytest.mark.parametrize("layout", ["t", "s"])
def test_conv2d_noncontiguous_input_and_weight(layout):
    inputs = [_data((2, 3, 6, 7)), _data((4, 3, 3, 3)), _data((4,))]
    _check(lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda x, w, b: TF.conv2d(x, w, b, padding=1), inputs,
           P.float64, torch.float64, 1e-10, [layout, layout, "contiguous"])


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,ws,kw", [((2, 3, 10), (4, 3, 3), {}), ((2, 4, 11), (6, 2, 4), {"groups": 2, "stride": 3}),
                                      ((1, 2, 9), (3, 2, 3), {"padding": "same", "dilation": 3}),
                                      ((2, 2, 8), (3, 2, 2), {"padding": "same"}), ((3, 8), (2, 3, 3), {"padding": 2})])
def test_conv1d_matches_torch(xs, ws, kw, dtype, tdtype, tol):
    inputs = [_data(xs), _data(ws, 0.3), _data((ws[0],))]
    _check(lambda x, w, b: F.conv1d(x, w, b, **kw), lambda x, w, b: TF.conv1d(x, w, b, **kw), inputs, dtype, tdtype,
           tol)


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,ws,kw", [((2, 4, 5, 5), (4, 3, 3, 3), {}),
                                      ((2, 4, 5, 4), (4, 2, 3, 2), {"stride": 2, "padding": 1, "output_padding": 1}),
                                      ((1, 4, 4, 4), (4, 1, 3, 3), {"groups": 2, "dilation": 2, "stride": (2, 1)}),
                                      ((4, 3, 3), (4, 2, 2, 2), {"stride": 2})])
def test_conv_transpose2d_matches_torch(xs, ws, kw, dtype, tdtype, tol):
    nout = ws[1] * kw.get("groups", 1)
    inputs = [_data(xs), _data(ws, 0.3), _data((nout,))]
    _check(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), lambda x, w, b: TF.conv_transpose2d(x, w, b, **kw),
           inputs, dtype, tdtype, tol)


def test_conv_transpose1d_matches_torch():
    inputs = [_data((2, 3, 6)), _data((3, 2, 3), 0.3), None]
    _check(lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2),
           lambda x, w, b: TF.conv_transpose1d(x, w, b, stride=2),
           inputs, P.float64, torch.float64, 1e-10)


def test_conv2d_large_batch_is_chunked():
    # more columns than one chunk holds (kernels/nn.c COLS_BUDGET): the chunks must agree
    inputs = [_data((40, 8, 40, 40)), _data((4, 8, 5, 5), 0.1), _data((4,))]
    _check(lambda x, w, b: F.conv2d(x, w, b, padding=2), lambda x, w, b: TF.conv2d(x, w, b, padding=2), inputs,
           P.float32, torch.float32, 1e-4)


def test_conv_half_and_empty_batch():
    x, w = _data((2, 2, 5, 5)), _data((3, 2, 3, 3))
    o = F.conv2d(P.tensor(x, dtype=P.bfloat16), P.tensor(w, dtype=P.bfloat16))
    assert o.dtype == P.bfloat16
    t = TF.conv2d(torch.tensor(x, dtype=torch.bfloat16), torch.tensor(w, dtype=torch.bfloat16))
    np.testing.assert_allclose(o.float().numpy(), t.float().numpy(), rtol=0.05, atol=0.1)
    e = F.conv2d(P.zeros(0, 2, 5, 5), P.ones(3, 2, 3, 3))
    assert tuple(e.shape) == (0, 3, 3, 3)


def test_conv_errors():
    x = P.ones(2, 4, 5, 5)
    cases = [
        (lambda: F.conv2d(x, P.ones(6, 3, 3, 3)), RuntimeError,
         r"Given groups=1, weight of size \[6, 3, 3, 3\], expected input\[2, 4, 5, 5\] to have 3 channels, but got 4"),
        (lambda: F.conv2d(x, P.ones(6, 4, 7, 7)), RuntimeError, "Kernel size can't be greater than actual input size"),
        (lambda: F.conv2d(x, P.ones(6, 4, 3, 3), P.ones(5)), RuntimeError,
         "expected bias to be 1-dimensional with 6 elements, but got bias of size"),
        (lambda: F.conv2d(x, P.ones(6, 4, 3, 3, dtype=P.float64)), RuntimeError,
         r"Input type \(\w+.FloatTensor\) and weight type \(\w+.DoubleTensor\) should be the same"),
        (lambda: F.conv2d(P.ones(5, 5), P.ones(6, 4, 3, 3)), RuntimeError,
         r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d, but got input of size: \[5, 5\]"),
        (lambda: F.conv2d(x, P.ones(6, 4, 3, 3), stride=0), RuntimeError, "non-positive stride is not supported"),
        (lambda: F.conv2d(x, P.ones(6, 4, 3, 3), padding=-1), RuntimeError, "negative padding is not supported"),
        (lambda: F.conv2d(x, P.ones(6, 4, 3, 3), padding="same", stride=2), RuntimeError,
         "padding='same' is not supported for strided convolutions"),
        (lambda: F.conv2d(x, P.ones(6, 4, 3, 3), padding="foo"), RuntimeError, "Invalid padding string: 'foo'"),
        (lambda: F.conv2d(x, P.ones(6, 2, 3, 3), groups=3), RuntimeError, "Given groups=3"),
        (lambda: F.conv2d(x.int(), P.ones(6, 4, 3, 3).int()), NotImplementedError, "not implemented for 'Int'"),
    ]
    for fn, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            fn()


# --- pooling ------------------------------------------------------------------------------------

MAXPOOL_CASES = [
    ((2, 3, 7, 7), {"kernel_size": 3}),
    ((2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((1, 2, 9, 8), {"kernel_size": (2, 3), "dilation": 2, "padding": 1}),
    ((3, 5, 5), {"kernel_size": 2}),
    ((1, 1, 6, 6), {"kernel_size": 2, "stride": 1}),
    ((2, 2, 5, 5), {"kernel_size": 2, "ceil_mode": True}),
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,kw", MAXPOOL_CASES)
def test_max_pool2d_matches_torch(xs, kw, dtype, tdtype, tol):
    _check(lambda x: F.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw), [_data(xs)], dtype, tdtype, tol, ["t"])
    xp, xt = _pair(_data(xs), dtype, tdtype, grad=False)
    o, i = F.max_pool2d(xp, return_indices=True, **kw)
    t, ti = TF.max_pool2d(xt, return_indices=True, **kw)
    assert i.dtype == P.int64
    np.testing.assert_array_equal(i.numpy(), ti.numpy())


def test_max_pool2d_ties_nan_and_integers():
    x = np.array([[[[1.0, 1.0], [0.0, np.nan]], [[2.0, 2.0], [2.0, 2.0]]]])
    o, i = F.max_pool2d(P.tensor(x), 2, return_indices=True)
    t, ti = TF.max_pool2d(torch.tensor(x), 2, return_indices=True)
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    np.testing.assert_array_equal(o.numpy(), t.numpy())
    xi = _rng.integers(-50, 50, (2, 3, 4, 4))
    oi = F.max_pool2d(P.tensor(xi), 2)
    assert oi.dtype == P.int64
    np.testing.assert_array_equal(oi.numpy(), TF.max_pool2d(torch.tensor(xi), 2).numpy())


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,kw", [((2, 3, 7, 7), {"kernel_size": 3}),
                                   ((2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
                                   ((2, 3, 7, 6), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
                                                   "count_include_pad": False}),
                                   ((1, 2, 6, 5), {"kernel_size": (2, 3), "padding": (1, 1),
                                                   "count_include_pad": False}),
                                   ((2, 4, 4), {"kernel_size": 2, "divisor_override": 3}),
                                   ((1, 1, 5, 5), {"kernel_size": 2, "stride": 3, "ceil_mode": True})])
def test_avg_pool2d_matches_torch(xs, kw, dtype, tdtype, tol):
    _check(lambda x: F.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw), [_data(xs)], dtype, tdtype, tol, ["s"])


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,size", [((2, 3, 7, 7), (3, 3)), ((2, 3, 7, 6), 1), ((1, 2, 5, 9), (4, 5)),
                                     ((3, 5, 5), (None, 2)), ((1, 1, 3, 3), (6, 5))])
def test_adaptive_avg_pool2d_matches_torch(xs, size, dtype, tdtype, tol):
    _check(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size), [_data(xs)], dtype,
           tdtype, tol, ["t"])


def test_pool_errors():
    x = P.ones(2, 4, 5, 5)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2, "
                                           "kernel_size=3 and dilation=1"):
        F.max_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match=r"Given input size: \(4x5x5\). Calculated output size: \(4x0x0\). "
                                           "Output size is too small"):
        F.max_pool2d(x, 7)
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        F.avg_pool2d(x, 3, padding=2)
    with pytest.raises(RuntimeError, match="stride should not be zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="Expected 3D or 4D"):
        F.max_pool2d(P.ones(4, 4), 2)
    with pytest.raises(NotImplementedError, match="\"adaptive_avg_pool2d\" not implemented for 'Long'"):
        F.adaptive_avg_pool2d(x.long(), 2)


def test_pool_double_backward_matches_torch():
    a = _data((2, 2, 6, 6))
    for name, kw in (("max_pool2d", {"kernel_size": 2}), ("avg_pool2d", {"kernel_size": 3, "padding": 1}),
                     ("adaptive_avg_pool2d", {"output_size": (4, 3)})):
        x, tx = P.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        y, ty = getattr(F, name)(x, **kw), getattr(TF, name)(tx, **kw)
        w = _data(tuple(ty.shape))
        g, = P.autograd.grad((y * y * P.tensor(w)).sum(), x, create_graph=True)
        tg, = torch.autograd.grad((ty * ty * torch.tensor(w)).sum(), tx, create_graph=True)
        (g * g).sum().backward()
        (tg * tg).sum().backward()
        _close(x.grad, tx.grad, 1e-10, name)


# --- normalisation and embedding -----------------------------------------------------------------

@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,ns,affine", [((4, 5), (5,), True), ((2, 3, 4), (3, 4), True), ((2, 3, 4), (4,), False),
                                          ((3, 6), (6,), "weight")])
def test_layer_norm_matches_torch(xs, ns, affine, dtype, tdtype, tol):
    w = _data(ns) if affine else None
    b = _data(ns) if affine is True else None
    _check(lambda x, w, b: F.layer_norm(x, ns, w, b), lambda x, w, b: TF.layer_norm(x, ns, w, b), [_data(xs), w, b],
           dtype, tdtype, tol, ["t", "contiguous", "contiguous"], numpy_fn=lambda x, w, b: npo.layer_norm(x, ns, w, b))


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs,groups", [((2, 6, 3, 3), 3), ((4, 4, 5), 1), ((2, 6, 2, 2), 6), ((3, 4), 2)])
def test_group_norm_matches_torch(xs, groups, dtype, tdtype, tol):
    inputs = [_data(xs), _data((xs[1],)), _data((xs[1],))]
    _check(lambda x, w, b: F.group_norm(x, groups, w, b), lambda x, w, b: TF.group_norm(x, groups, w, b), inputs,
           dtype, tdtype, tol)


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("xs", [(4, 3), (2, 3, 5), (3, 2, 4, 4)])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_torch(xs, training, dtype, tdtype, tol):
    c = xs[1]
    rm, rv = _data((c,)), np.abs(_data((c,))) + 0.5
    prm, prv = P.tensor(rm, dtype=dtype), P.tensor(rv, dtype=dtype)
    trm, trv = torch.tensor(rm, dtype=tdtype), torch.tensor(rv, dtype=tdtype)
    inputs = [_data(xs), _data((c,)), _data((c,))]
    _check(lambda x, w, b: F.batch_norm(x, prm, prv, w, b, training, 0.2, 1e-3),
           lambda x, w, b: TF.batch_norm(x, trm, trv, w, b, training, 0.2, 1e-3), inputs, dtype, tdtype, tol)
    _close(prm, trm, tol, "running_mean")
    _close(prv, trv, tol, "running_var")


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(P.ones(1, 3), P.zeros(3), P.ones(3), training=True)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        F.layer_norm(P.ones(2, 3), [4])
    with pytest.raises(RuntimeError, match="divisible by num_groups"):
        F.group_norm(P.ones(2, 3, 4), 2)


@pytest.mark.parametrize("padding_idx", [None, 0, 2, -1])
def test_embedding_matches_torch(padding_idx):
    w = _data((5, 3))
    idx = np.array([[0, 2, 2], [4, 1, 2]])
    pw, tw = _pair(w, P.float64, torch.float64)
    o = F.embedding(P.tensor(idx), pw, padding_idx=padding_idx)
    t = TF.embedding(torch.tensor(idx), tw, padding_idx=padding_idx)
    _close(o, t, 1e-12)
    g = _data(tuple(t.shape))
    o.backward(P.tensor(g))
    t.backward(torch.tensor(g))
    _close(pw.grad, tw.grad, 1e-12, "embedding weight gradient (repeated rows accumulate)")
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices'"):
        F.embedding(P.tensor([0.5]), pw)
    for shape in [(5,), (5, 3, 1), ()]:       # PyTorch checks the weight first
        for call in (lambda w: F.embedding(P.tensor([0.5]), w), lambda w: P.embedding(w, P.tensor([0, 1]))):
            with pytest.raises(RuntimeError, match="^'weight' must be 2-D$"):
                call(P.ones(shape))
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        F.embedding(P.tensor([0]), P.ones(()), padding_idx=0)
    with pytest.raises(RuntimeError, match=r"Expected normalized_shape to be at least 1-dimensional"):
        F.layer_norm(P.ones(2, 3), [])


def test_dropout_statistics_and_scaling():
    P.manual_seed(0)
    x = P.ones(200, 500)
    y = F.dropout(x, 0.3)
    kept = (y != 0).float().mean().item()
    assert abs(kept - 0.7) < 0.01
    assert np.allclose(y.numpy()[y.numpy() != 0], 1 / 0.7)
    assert F.dropout(x, 0.3, training=False) is x
    P.manual_seed(5)
    a = F.dropout(x, 0.5).numpy()
    P.manual_seed(5)
    b = F.dropout(x, 0.5).numpy()
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)


# --- layers ---------------------------------------------------------------------------------------

def _copy_params(ours, theirs, dtype):
    with torch.no_grad():
        for (n, p), (tn, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
            assert n == tn
            tp.copy_(torch.tensor(p.detach().numpy()))
    ours.to(dtype)
    theirs.to({P.float32: torch.float32, P.float64: torch.float64}[dtype])


LAYERS = [
    (lambda m: m.Conv2d(3, 4, 3, padding=1), (2, 3, 6, 6)),
    (lambda m: m.Conv2d(4, 6, (3, 2), stride=2, groups=2, bias=False), (2, 4, 7, 7)),
    (lambda m: m.Conv2d(2, 2, 3, padding="same", dilation=2), (1, 2, 6, 5)),
    (lambda m: m.Conv1d(3, 4, 3, stride=2), (2, 3, 9)),
    (lambda m: m.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1), (2, 4, 4, 4)),
    (lambda m: m.MaxPool2d(2), (2, 3, 6, 6)),
    (lambda m: m.MaxPool2d(3, 2, 1, ceil_mode=True), (2, 3, 7, 7)),
    (lambda m: m.AvgPool2d(3, 2, 1), (2, 3, 7, 7)),
    (lambda m: m.AdaptiveAvgPool2d((2, 3)), (2, 3, 7, 7)),
    (lambda m: m.BatchNorm2d(3), (4, 3, 5, 5)),
    (lambda m: m.BatchNorm1d(3, momentum=None), (4, 3)),
    (lambda m: m.BatchNorm1d(3, affine=False), (4, 3, 6)),
    (lambda m: m.LayerNorm((3, 4)), (2, 3, 4)),
    (lambda m: m.LayerNorm(4, bias=False), (2, 4)),
    (lambda m: m.GroupNorm(2, 4), (2, 4, 3, 3)),
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("make,xs", LAYERS)
def test_layer_matches_torch_in_train_and_eval(make, xs, dtype, tdtype, tol):
    ours, theirs = make(nn), make(torch.nn)
    assert repr(ours) == repr(theirs)
    _copy_params(ours, theirs, dtype)
    for mode in ("train", "eval", "train"):
        getattr(ours, mode)()
        getattr(theirs, mode)()
        ours.zero_grad()
        theirs.zero_grad()
        _check(ours, theirs, [_data(xs)], dtype, tdtype, tol)
        for (n, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
            _close(p.grad, tp.grad, tol, f"{mode}: gradient of {n}")
        for (n, b), (_, tb) in zip(ours.named_buffers(), theirs.named_buffers()):
            _close(b, tb, tol, f"{mode}: buffer {n}")


def test_embedding_layer_and_default_initialisation():
    P.manual_seed(0)
    e = nn.Embedding(10, 4, padding_idx=-2)
    assert repr(e) == repr(torch.nn.Embedding(10, 4, padding_idx=-2)) == "Embedding(10, 4, padding_idx=8)"
    assert (e.weight[8].detach().numpy() == 0).all()
    out = e(P.tensor([[1, 8], [8, 3]]))
    out.sum().backward()
    assert (e.weight.grad[8].numpy() == 0).all() and (e.weight.grad[1].numpy() == 1).all()
    c = nn.Conv2d(8, 16, 3)
    bound = 1 / np.sqrt(8 * 9)    # kaiming_uniform(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in))
    w = c.weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(c.bias.detach().numpy()).max() <= bound
    bn = nn.BatchNorm2d(5)
    assert (bn.weight.detach().numpy() == 1).all() and (bn.running_var.numpy() == 1).all()
    assert int(bn.num_batches_tracked.item()) == 0


def test_small_cnn_trains():
    """A few Adam steps of a conv-pool-linear net on a fixed batch drive the loss down."""
    P.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.BatchNorm2d(4),
                          nn.Flatten(), nn.Linear(4 * 4 * 4, 3), nn.LogSoftmax(1))
    x = P.tensor(_data((12, 1, 8, 8)), dtype=P.float32)
    y = P.tensor(_rng.integers(0, 3, 12))
    opt = P.optim.Adam(model.parameters(), lr=0.02)
    first = None
    for _ in range(30):
        loss = F.nll_loss(model(x), y)
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.5 * first


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
def test_native_layer_norm_statistics_match_torch(dtype, tdtype, tol):
    x = _data((2, 3, 5))
    o = P.native_layer_norm(P.tensor(x, dtype=dtype), [5], None, None, 1e-5)
    t = torch.native_layer_norm(torch.tensor(x, dtype=tdtype), [5], None, None, 1e-5)
    for k in range(3):
        _close(o[k], t[k], tol, f"output {k}")
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        P.native_layer_norm(P.ones(2, 5), [5], P.ones(4), None, 1e-5)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        P.native_layer_norm(P.ones(2, 5).long(), [5], None, None, 1e-5)


def test_functional_layer_norm_wants_a_sequence_as_pytorch():
    import pytorchlite.nn.functional as F
    with pytest.raises(TypeError, match="argument 'normalized_shape' \\(position 2\\) must be tuple of ints, not int"):
        F.layer_norm(P.randn(2, 5), 5)
    assert tuple(nn.LayerNorm(5)(P.randn(2, 5)).shape) == (2, 5)     # the module takes an int
