"""RNN, LSTM, GRU and their cells against PyTorch from identical weights (copied by name):
outputs, final states and the gradients of the input, the initial states and every
parameter, in float32 and float64, time- and batch-major, stacked and bidirectional, with
and without initial states, unbatched; plus state_dict keys, default initialisation,
inter-layer dropout, repr and PyTorch's errors for bad arguments."""

import math
import re

import numpy as np
import pytest

import pytorchlite as P
import pytorchlite.nn as nn

from parity import torch_or_missing  # noqa: E402

torch = torch_or_missing()      # without PyTorch, a test that calls it is skipped
# torch notes that its oneDNN path has no LSTM projections and it falls back
pytestmark = pytest.mark.filterwarnings("ignore:LSTM with projections is not supported")

DTYPES = [(P.float32, torch.float32, 1e-5), (P.float64, torch.float64, 1e-10)]
_rng = np.random.default_rng(0)

# (name used for the module, extra constructor kwargs)
KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {})]
KIND_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]


def _data(shape, scale=1.0):
    return _rng.standard_normal(shape) * scale


def _close(ours, theirs, tol, what):
    o = ours.detach().numpy()
    t = theirs.detach().numpy()
    assert o.shape == t.shape, f"{what}: shape {o.shape} != {t.shape}"
    np.testing.assert_allclose(o, t, rtol=tol * 10, atol=tol * 10, err_msg=what)


def _copy_weights(ours, theirs):
    """Give `ours` the weights of the torch module `theirs`, matched by name."""
    mine = dict(ours.named_parameters())
    assert list(mine) == [n for n, _ in theirs.named_parameters()]
    with P.no_grad():
        for name, w in theirs.named_parameters():
            assert tuple(mine[name].shape) == tuple(w.shape), name
            mine[name].copy_(P.tensor(w.detach().numpy()))


def _pair(kind, extra, dtype, tdtype, *args, **kwargs):
    theirs = getattr(torch.nn, kind)(*args, **extra, **kwargs).to(tdtype)
    ours = getattr(nn, kind)(*args, **extra, **kwargs).to(dtype)
    _copy_weights(ours, theirs)
    return ours, theirs


def _leaf(a, dtype, tdtype):
    return (P.tensor(a, dtype=dtype).requires_grad_(), torch.tensor(a, dtype=tdtype).requires_grad_())


def _compare_run(ours, theirs, x, states, dtype, tdtype, tol):
    """Run both on the same input and initial states (a list of arrays, or None), then
    backpropagate the same random upstream gradients from every output and compare the
    outputs and all gradients."""
    xp, xt = _leaf(x, dtype, tdtype)
    if states is None:
        out_p, hid_p = ours(xp)
        out_t, hid_t = theirs(xt)
        leaves = [("input", xp, xt)]
    else:
        pairs = [_leaf(s, dtype, tdtype) for s in states]
        arg_p = tuple(p for p, _ in pairs) if len(pairs) == 2 else pairs[0][0]
        arg_t = tuple(t for _, t in pairs) if len(pairs) == 2 else pairs[0][1]
        out_p, hid_p = ours(xp, arg_p)
        out_t, hid_t = theirs(xt, arg_t)
        leaves = [("input", xp, xt)] + [(f"initial state {k}", p, t) for k, (p, t) in enumerate(pairs)]
    hid_p = list(hid_p) if isinstance(hid_p, tuple) else [hid_p]
    hid_t = list(hid_t) if isinstance(hid_t, tuple) else [hid_t]
    assert out_p.dtype == dtype
    _close(out_p, out_t, tol, "output")
    for k, (hp, ht) in enumerate(zip(hid_p, hid_t)):
        _close(hp, ht, tol, f"final state {k}")
    loss_p, loss_t = 0, 0
    for op, ot in zip([out_p] + hid_p, [out_t] + hid_t):
        g = _data(tuple(ot.shape))
        loss_p = loss_p + (op * P.tensor(g, dtype=dtype)).sum()
        loss_t = loss_t + (ot * torch.tensor(g, dtype=tdtype)).sum()
    loss_p.backward()
    loss_t.backward()
    for what, p, t in leaves:
        _close(p.grad, t.grad, tol, f"gradient of {what}")
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert p.grad is not None, f"no gradient for {name}"
        _close(p.grad, theirs_params[name].grad, tol, f"gradient of {name}")
    return out_p, hid_p


def _states(kind, layers_dirs, batch, hidden, proj=0, unbatched=False):
    lead = (layers_dirs,) if unbatched else (layers_dirs, batch)
    h = _data(lead + (proj or hidden,))
    return [h, _data(lead + (hidden,))] if kind == "LSTM" else [h]


CONFIGS = [
    {},
    {"batch_first": True},
    {"num_layers": 3},
    {"bidirectional": True},
    {"num_layers": 2, "bidirectional": True, "batch_first": True},
    {"bias": False, "num_layers": 2},
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("kind,extra", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()) or "default")
@pytest.mark.parametrize("with_h0", [False, True], ids=["no_h0", "h0"])
def test_layer_matches_torch(kind, extra, config, with_h0, dtype, tdtype, tol):
    seq, batch, inp, hidden = 5, 3, 4, 6
    ours, theirs = _pair(kind, extra, dtype, tdtype, inp, hidden, **config)
    x = _data((batch, seq, inp) if config.get("batch_first") else (seq, batch, inp))
    ld = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    states = _states(kind, ld, batch, hidden) if with_h0 else None
    out, hid = _compare_run(ours, theirs, x, states, dtype, tdtype, tol)
    d = 2 if config.get("bidirectional") else 1
    assert tuple(out.shape) == ((batch, seq, d * hidden) if config.get("batch_first") else (seq, batch, d * hidden))
    assert all(tuple(h.shape) == (ld, batch, hidden) for h in hid)


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("kind,extra", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("config", [{}, {"batch_first": True, "num_layers": 2, "bidirectional": True}],
                         ids=["default", "stacked_bidirectional_batch_first"])
@pytest.mark.parametrize("with_h0", [False, True], ids=["no_h0", "h0"])
def test_unbatched_input_matches_torch(kind, extra, config, with_h0, dtype, tdtype, tol):
    seq, inp, hidden = 4, 3, 5
    ours, theirs = _pair(kind, extra, dtype, tdtype, inp, hidden, **config)
    ld = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    states = _states(kind, ld, None, hidden, unbatched=True) if with_h0 else None
    out, hid = _compare_run(ours, theirs, _data((seq, inp)), states, dtype, tdtype, tol)
    assert out.dim() == 2 and all(h.dim() == 2 for h in hid)


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("config", [{}, {"num_layers": 2, "bidirectional": True, "batch_first": True}],
                         ids=["default", "stacked_bidirectional_batch_first"])
@pytest.mark.parametrize("with_h0", [False, True], ids=["no_h0", "h0"])
def test_lstm_projection_matches_torch(config, with_h0, dtype, tdtype, tol):
    seq, batch, inp, hidden, proj = 4, 2, 3, 6, 2
    ours, theirs = _pair("LSTM", {}, dtype, tdtype, inp, hidden, proj_size=proj, **config)
    ld = config.get("num_layers", 1) * (2 if config.get("bidirectional") else 1)
    x = _data((batch, seq, inp) if config.get("batch_first") else (seq, batch, inp))
    states = _states("LSTM", ld, batch, hidden, proj=proj) if with_h0 else None
    out, (h_n, c_n) = _compare_run(ours, theirs, x, states, dtype, tdtype, tol)
    assert out.shape[-1] == proj * (2 if config.get("bidirectional") else 1)
    assert tuple(h_n.shape) == (ld, batch, proj) and tuple(c_n.shape) == (ld, batch, hidden)


def test_noncontiguous_input_and_state_match_torch():
    ours, theirs = _pair("LSTM", {}, P.float64, torch.float64, 4, 5, num_layers=2)
    x = _data((3, 6, 4))                   # stored batch-major, fed as a time-major view
    xp = P.tensor(x).transpose(0, 1)
    xt = torch.tensor(x).transpose(0, 1)
    h = _data((2, 5, 3))
    hp, ht = P.tensor(h).transpose(1, 2), torch.tensor(h).transpose(1, 2)
    assert not xp.is_contiguous() and not hp.is_contiguous()
    out_p, (h_p, _) = ours(xp, (hp, hp * 0.5))
    out_t, (h_t, _) = theirs(xt, (ht, ht * 0.5))
    _close(out_p, out_t, 1e-10, "output")
    _close(h_p, h_t, 1e-10, "h_n")


def test_sequence_of_length_one_and_long_sequence():
    for seq in (1, 60):
        ours, theirs = _pair("GRU", {}, P.float64, torch.float64, 2, 3, bidirectional=True)
        _compare_run(ours, theirs, _data((seq, 2, 2)), None, P.float64, torch.float64, 1e-10)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_empty_batch_matches_torch_shapes(kind):
    ours, theirs = _pair(kind, {}, P.float32, torch.float32, 3, 4, num_layers=2, bidirectional=True)
    out, hid = ours(P.zeros(5, 0, 3))
    tout, thid = theirs(torch.zeros(5, 0, 3))
    assert tuple(out.shape) == tuple(tout.shape) == (5, 0, 8)
    hid = hid if isinstance(hid, tuple) else (hid,)
    thid = thid if isinstance(thid, tuple) else (thid,)
    assert [tuple(h.shape) for h in hid] == [tuple(h.shape) for h in thid]


# --- cells ------------------------------------------------------------------------------------

CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}), ("GRUCell", {})]
CELL_IDS = ["rnn_tanh", "rnn_relu", "lstm", "gru"]


def _compare_cell(ours, theirs, x, states, dtype, tdtype, tol):
    xp, xt = _leaf(x, dtype, tdtype)
    leaves = [("input", xp, xt)]
    if states is None:
        rp, rt = ours(xp), theirs(xt)
    else:
        pairs = [_leaf(s, dtype, tdtype) for s in states]
        leaves += [(f"state {k}", p, t) for k, (p, t) in enumerate(pairs)]
        if len(pairs) == 2:
            rp = ours(xp, (pairs[0][0], pairs[1][0]))
            rt = theirs(xt, (pairs[0][1], pairs[1][1]))
        else:
            rp, rt = ours(xp, pairs[0][0]), theirs(xt, pairs[0][1])
    rp = list(rp) if isinstance(rp, tuple) else [rp]
    rt = list(rt) if isinstance(rt, tuple) else [rt]
    loss_p, loss_t = 0, 0
    for k, (a, b) in enumerate(zip(rp, rt)):
        _close(a, b, tol, f"result {k}")
        assert a.dtype == dtype
        g = _data(tuple(b.shape))
        loss_p = loss_p + (a * P.tensor(g, dtype=dtype)).sum()
        loss_t = loss_t + (b * torch.tensor(g, dtype=tdtype)).sum()
    loss_p.backward()
    loss_t.backward()
    for what, p, t in leaves:
        _close(p.grad, t.grad, tol, f"gradient of {what}")
    theirs_params = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        _close(p.grad, theirs_params[name].grad, tol, f"gradient of {name}")
    return rp


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES, ids=["f32", "f64"])
@pytest.mark.parametrize("kind,extra", CELLS, ids=CELL_IDS)
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("with_h0", [False, True], ids=["no_h0", "h0"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
def test_cell_matches_torch(kind, extra, batched, with_h0, bias, dtype, tdtype, tol):
    inp, hidden, batch = 4, 5, 3
    ours, theirs = _pair(kind, extra, dtype, tdtype, inp, hidden, bias=bias)
    lead = (batch,) if batched else ()
    states = None
    if with_h0:
        states = [_data(lead + (hidden,))] * (2 if kind == "LSTMCell" else 1)
    res = _compare_cell(ours, theirs, _data(lead + (inp,)), states, dtype, tdtype, tol)
    assert all(tuple(r.shape) == lead + (hidden,) for r in res)


def test_cell_unrolled_equals_layer():
    """An LSTMCell stepped over a sequence gives the LSTM layer's output (same weights)."""
    layer = nn.LSTM(3, 4).double()
    cell = nn.LSTMCell(3, 4).double()
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = P.tensor(_data((5, 2, 3)))
    out, (h_n, c_n) = layer(x)
    h = c = P.zeros(2, 4, dtype=P.float64)
    for t in range(5):
        h, c = cell(x[t], (h, c))
        np.testing.assert_allclose(h.detach().numpy(), out[t].detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(c.detach().numpy(), c_n[0].detach().numpy(), rtol=1e-12, atol=1e-12)


# --- parameters, state dict, init, repr ------------------------------------------------------------

@pytest.mark.parametrize("kind,kwargs", [
    ("RNN", {}), ("RNN", {"num_layers": 2, "bidirectional": True, "nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 3, "bidirectional": True}), ("LSTM", {"num_layers": 2, "proj_size": 3}),
    ("LSTM", {"bidirectional": True, "bias": False, "proj_size": 2}), ("GRU", {"num_layers": 2, "bias": False}),
    ("RNNCell", {}), ("LSTMCell", {"bias": False}), ("GRUCell", {}),
])
def test_state_dict_keys_shapes_and_repr_match_torch(kind, kwargs):
    ours, theirs = getattr(nn, kind)(7, 5, **kwargs), getattr(torch.nn, kind)(7, 5, **kwargs)
    sp, st = ours.state_dict(), theirs.state_dict()
    assert list(sp) == list(st)
    for k in st:
        assert tuple(sp[k].shape) == tuple(st[k].shape), k
    assert repr(ours) == repr(theirs)
    # torch's state dict loads into ours and the other way round
    ours.load_state_dict({k: P.tensor(v.numpy()) for k, v in st.items()})
    theirs.load_state_dict({k: torch.tensor(v.numpy()) for k, v in ours.state_dict().items()})
    if hasattr(theirs, "all_weights"):
        assert [[tuple(w.shape) for w in ws] for ws in ours.all_weights] == \
               [[tuple(w.shape) for w in ws] for ws in theirs.all_weights]


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_default_init_is_uniform_in_plus_minus_one_over_sqrt_hidden(kind):
    hidden = 64
    P.manual_seed(0)
    kwargs = {"num_layers": 2, "bidirectional": True} if not kind.endswith("Cell") else {}
    m = getattr(nn, kind)(32, hidden, **kwargs)
    bound = 1 / math.sqrt(hidden)
    values = []
    for name, p in m.named_parameters():
        a = p.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound, name
        values.append(a.ravel())
    allv = np.concatenate(values)
    # uniform on [-b, b]: fills the interval, mean 0, variance b^2 / 3
    assert allv.min() < -0.99 * bound and allv.max() > 0.99 * bound
    assert abs(allv.mean()) < 0.02 * bound
    assert abs(allv.var() / (bound * bound / 3) - 1) < 0.05
    # reset_parameters redraws
    name = "weight_hh" if kind.endswith("Cell") else "weight_hh_l0"
    before = getattr(m, name).detach().numpy().copy()
    m.reset_parameters()
    assert not np.array_equal(before, getattr(m, name).detach().numpy())


def test_dtype_and_device_arguments():
    m = nn.GRU(3, 4, dtype=P.float64)
    assert all(p.dtype == P.float64 for p in m.parameters())
    out, h = m(P.randn(2, 1, 3, dtype=P.float64))
    assert out.dtype == P.float64 and h.dtype == P.float64
    c = nn.LSTMCell(3, 4, device="cpu", dtype=P.float64)
    assert all(p.dtype == P.float64 for p in c.parameters())
    # converting the module later works too (parameters are looked up by name at each call)
    m2 = nn.LSTM(3, 4).double()
    assert m2(P.randn(2, 1, 3, dtype=P.float64))[0].dtype == P.float64


# --- dropout between layers -----------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers(kind):
    ours, theirs = _pair(kind, {}, P.float64, torch.float64, 3, 4, num_layers=3, dropout=0.5)
    x = _data((6, 2, 3))
    # eval mode: no dropout, the same numbers as torch
    ours.eval()
    theirs.eval()
    _compare_run(ours, theirs, x, None, P.float64, torch.float64, 1e-10)
    ref = ours(P.tensor(x))[0].detach().numpy()
    # training mode: random, so two calls differ and both differ from eval
    ours.train()
    a = ours(P.tensor(x))[0].detach().numpy()
    b = ours(P.tensor(x))[0].detach().numpy()
    assert not np.allclose(a, ref) and not np.allclose(a, b)
    # a single layer has nothing to drop between: training equals eval
    single = getattr(nn, kind)(3, 4)
    single.train()
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        single_d = getattr(nn, kind)(3, 4, dropout=0.5)
    single_d.load_state_dict(single.state_dict())
    np.testing.assert_array_equal(single(P.tensor(x, dtype=P.float32))[0].detach().numpy(),
                                  single_d(P.tensor(x, dtype=P.float32))[0].detach().numpy())


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_one_zeroes_the_input_of_upper_layers_as_torch(kind):
    # p = 1 is deterministic: layers above the first see zeros, in both libraries
    ours, theirs = _pair(kind, {}, P.float64, torch.float64, 3, 4, num_layers=2, dropout=1.0, bidirectional=True)
    _compare_run(ours, theirs, _data((5, 2, 3)), None, P.float64, torch.float64, 1e-10)
    np.testing.assert_array_equal(ours.weight_ih_l1.grad.numpy(), 0.0)


def test_dropout_scales_kept_values():
    """In training, what reaches layer 2 is either 0 or (layer-1 output) / (1 - p): with an
    identity-like second layer (relu RNN, W_ih = I, W_hh = 0, no bias) it can be read off."""
    P.manual_seed(1)
    m = nn.RNN(4, 4, num_layers=2, nonlinearity="relu", bias=False, dropout=0.25)
    with P.no_grad():
        m.weight_ih_l1.copy_(P.eye(4))
        m.weight_hh_l1.zero_()
    x = P.tensor(np.abs(_data((50, 8, 4))), dtype=P.float32)
    m.eval()
    clean = m(x)[0].detach().numpy()
    m.train()
    noisy = m(x)[0].detach().numpy()
    kept = noisy != 0
    zero_frac = 1 - kept[clean > 0].mean()
    assert 0.2 < zero_frac < 0.3
    np.testing.assert_allclose(noisy[kept], clean[kept] / 0.75, rtol=1e-5)


# --- errors -------------------------------------------------------------------------------------

def _both_raise(exc, make, call, match=None):
    """The same exception type from both libraries, with our message checked by `match`
    (PyTorch's wording; a regex)."""
    with pytest.raises(exc) as ours:
        call(make(nn), P)
    with pytest.raises(exc) as theirs:
        call(make(torch.nn), torch)
    if match is not None:
        assert re.search(match, str(ours.value)), str(ours.value)
        assert re.search(match, str(theirs.value).replace("torch.", "pytorchlite.")), str(theirs.value)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_layer_input_errors_match_torch(kind):
    make = lambda lib: getattr(lib, kind)(4, 3, num_layers=2)  # noqa: E731
    name = kind
    tail = "tensor instead" if kind == "RNN" else "instead"
    _both_raise(ValueError, make, lambda m, lib: m(lib.randn(2, 3, 4, 5)),
                f"{name}: Expected input to be 2D or 3D, got 4D {tail}")
    _both_raise(ValueError, make, lambda m, lib: m(lib.randn(5)), f"got 1D {tail}")
    _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 2, 6)),
                r"input.size\(-1\) must be equal to input_size. Expected 4, got 6")
    _both_raise(ValueError, make, lambda m, lib: m(lib.randn(5, 2, 4, dtype=lib.float64)),
                r"RNN input dtype \(pytorchlite.float64\) does not match weight dtype \(pytorchlite.float32\)")
    _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(0, 2, 4)),
                "Expected sequence length to be larger than 0 in RNN")
    if kind == "LSTM":
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 2, 4), (lib.zeros(2, 3, 3), lib.zeros(2, 2, 3))),
                    r"Expected hidden\[0\] size \(2, 2, 3\), got \[2, 3, 3\]")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 2, 4), (lib.zeros(2, 2, 3), lib.zeros(1, 2, 3))),
                    r"Expected hidden\[1\] size \(2, 2, 3\), got \[1, 2, 3\]")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 2, 4), (lib.zeros(2, 3), lib.zeros(2, 2, 3))),
                    r"For batched 3-D input, hx and cx should also be 3-D but got \(2-D, 3-D\) tensors")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 4), (lib.zeros(2, 1, 3), lib.zeros(2, 3))),
                    r"For unbatched 2-D input, hx and cx should also be 2-D but got \(3-D, 2-D\) tensors")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 4), (lib.zeros(2, 4), lib.zeros(2, 3))),
                    r"Expected hidden\[0\] size \(2, 1, 3\), got \[2, 1, 4\]")
    else:
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 2, 4), lib.zeros(2, 3, 3)),
                    r"Expected hidden size \(2, 2, 3\), got \[2, 3, 3\]")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 2, 4), lib.zeros(2, 3)),
                    "For batched 3-D input, hx should also be 3-D but got 2-D tensor")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 4), lib.zeros(2, 1, 3)),
                    "For unbatched 2-D input, hx should also be 2-D but got 3-D tensor")
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(5, 4), lib.zeros(1, 3)),
                    r"Expected hidden size \(2, 1, 3\), got \[1, 1, 3\]")


@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
def test_cell_input_errors_match_torch(kind):
    make = lambda lib: getattr(lib, kind)(4, 3)  # noqa: E731
    lstm = kind == "LSTMCell"
    state = (lambda lib, *s: (lib.zeros(*s), lib.zeros(*s))) if lstm else (lambda lib, *s: lib.zeros(*s))
    _both_raise(ValueError, make, lambda m, lib: m(lib.randn(2, 4, 1)),
                f"{kind}: Expected input to be 1D or 2D, got 3D instead")
    hidden_word = r"hx\[0\]" if lstm else "hidden"
    _both_raise(ValueError, make, lambda m, lib: m(lib.randn(2, 4), state(lib, 2, 3, 1)),
                f"{kind}: Expected {hidden_word} to be 1D or 2D, got 3D instead")
    _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(2, 5)),
                "input has inconsistent input_size: got 5 expected 4")
    _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(2, 4), state(lib, 3, 3)),
                "Input batch size 2 doesn't match hidden0 batch size 3")
    _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(2, 4), state(lib, 2, 5)),
                "hidden0 has inconsistent hidden_size: got 5, expected 3")
    if lstm:
        _both_raise(RuntimeError, make, lambda m, lib: m(lib.randn(2, 4), (lib.zeros(2, 3), lib.zeros(2, 7))),
                    "hidden1 has inconsistent hidden_size: got 7, expected 3")
    # batched input with an unbatched state (torch fails somewhere inside; we say why)
    with pytest.raises(RuntimeError, match="both be batched"):
        make(nn)(P.randn(2, 4), state(P, 3))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_constructor_errors_match_torch(kind):
    cases = [
        (ValueError, {"dropout": 1.5}, r"dropout should be a number in range \[0, 1\]"),
        (ValueError, {"dropout": True}, r"dropout should be a number in range \[0, 1\]"),
        (TypeError, {"bias": 1}, "bias should be of type bool, got: int"),
        (TypeError, {"batch_first": None}, "batch_first should be of type bool, got: NoneType"),
        (ValueError, {"num_layers": 0}, "num_layers must be greater than zero"),
    ]
    for exc, kw, match in cases:
        _both_raise(exc, lambda lib: getattr(lib, kind)(4, 3, **kw), lambda m, lib: None, match)
    _both_raise(TypeError, lambda lib: getattr(lib, kind)(4.0, 3), lambda m, lib: None,
                "input_size should be of type int, got: float")
    _both_raise(ValueError, lambda lib: getattr(lib, kind)(0, 3), lambda m, lib: None,
                "input_size must be greater than zero")
    _both_raise(ValueError, lambda lib: getattr(lib, kind)(4, 0), lambda m, lib: None,
                "hidden_size must be greater than zero")
    if kind == "LSTM":
        _both_raise(ValueError, lambda lib: lib.LSTM(4, 3, proj_size=3), lambda m, lib: None,
                    "proj_size has to be smaller than hidden_size")
        _both_raise(ValueError, lambda lib: lib.LSTM(4, 3, proj_size=-1), lambda m, lib: None,
                    "proj_size should be a positive integer or zero")
    else:
        _both_raise(ValueError, lambda lib: getattr(lib, kind)(4, 3, proj_size=2), lambda m, lib: None,
                    "proj_size argument is only supported for LSTM, not RNN or GRU")
    if kind == "RNN":
        _both_raise(ValueError, lambda lib: lib.RNN(4, 3, nonlinearity="gelu"), lambda m, lib: None,
                    "Unknown nonlinearity 'gelu'. Select from 'tanh' or 'relu'.")
        # nonlinearity is RNN's 4th positional argument, as in torch
        assert nn.RNN(4, 3, 2, "relu").nonlinearity == "relu"


def test_docstring_examples():
    import doctest

    import pytorchlite.nn.rnn as mod
    result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0
