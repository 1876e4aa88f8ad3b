"""scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer and
TransformerEncoder against PyTorch from identical inputs and weights (torch's state_dict
loaded into ours by name): outputs, attention weights and the gradient of every input and
parameter, in float32 and float64, with every kind of mask, batch_first both ways,
unbatched input, and bad arguments."""

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
# torch's TransformerEncoder warns that its nested-tensor fast path is off for our configurations
pytestmark = pytest.mark.filterwarnings("ignore:enable_nested_tensor is True")

DTYPES = [(P.float32, torch.float32, 1e-5), (P.float64, torch.float64, 1e-10)]
F64 = (P.float64, torch.float64, 1e-10)
_rng = np.random.default_rng(0)


def _data(shape, scale=1.0):
    return _rng.standard_normal(shape) * scale


def _pair(a, dtype, tdtype, grad=True, transpose=False):
    """The same values as a pytorchlite and a torch tensor (leaves requiring grad for float
    data); with transpose, views whose last two dims are swapped in memory."""
    if transpose:
        base = np.ascontiguousarray(np.swapaxes(a, -1, -2))
        p = P.tensor(base, dtype=dtype).transpose(-1, -2)
        t = torch.tensor(base, dtype=tdtype).transpose(-1, -2)
        assert not p.is_contiguous() or min(a.shape[-2:]) <= 1
    else:
        p, t = P.tensor(a, dtype=dtype), torch.tensor(a, dtype=tdtype)
    if grad:
        p = p.detach().requires_grad_()
        t = t.detach().requires_grad_()
    return p, t


def _mask_pair(m, dtype=None, tdtype=None):
    """A bool mask (dtype None) or a float mask as a pytorchlite and a torch tensor."""
    if dtype is None:
        return P.tensor(m), torch.tensor(m)
    return P.tensor(m, dtype=dtype), torch.tensor(m, dtype=tdtype)


def _close(ours, theirs, tol, what=""):
    o = ours.detach().numpy() if isinstance(ours, P.Tensor) else np.asarray(ours)
    t = theirs.detach().numpy() if isinstance(theirs, torch.Tensor) else np.asarray(theirs)
    assert o.shape == t.shape, f"{what}: shape {o.shape} != {t.shape}"
    np.testing.assert_allclose(o, t, rtol=tol * 10, atol=tol * 10, err_msg=what)


def _backward(outs_p, outs_t, dtype, tdtype):
    """Backpropagate the same random upstream gradient through each pair of outputs."""
    loss_p, loss_t = 0, 0
    for o_p, o_t in zip(outs_p, outs_t):
        g = _data(tuple(o_t.shape))
        loss_p = loss_p + (o_p * P.tensor(g, dtype=dtype)).sum()
        loss_t = loss_t + (o_t * torch.tensor(g, dtype=tdtype)).sum()
    loss_p.backward()
    loss_t.backward()


def _twin(ours, theirs):
    """Load torch module `theirs`'s state_dict into `ours` by name (the key lists must agree)."""
    sd = theirs.state_dict()
    assert list(ours.state_dict()) == list(sd)
    ours.load_state_dict({k: P.tensor(v.detach().numpy()) for k, v in sd.items()})
    return ours, theirs


def _check_param_grads(ours, theirs, tol):
    named_t = dict(theirs.named_parameters())
    named_p = dict(ours.named_parameters())
    assert list(named_p) == list(named_t)
    for name, t in named_t.items():
        p = named_p[name]
        assert (p.grad is None) == (t.grad is None), f"gradient of {name}: {p.grad} vs {t.grad}"
        if t.grad is not None:
            _close(p.grad, t.grad, tol, f"gradient of parameter {name}")


# --- scaled_dot_product_attention -------------------------------------------------------------

SDPA_SHAPES = [  # query, key, value shapes
    ((3, 4), (5, 4), (5, 6)),                        # no batch dim
    ((2, 3, 4), (2, 5, 4), (2, 5, 4)),
    ((2, 3, 4, 8), (2, 3, 6, 8), (2, 3, 6, 5)),      # (N, heads, L, E), value dim differs
    ((2, 1, 2, 3, 4), (2, 1, 2, 5, 4), (2, 1, 2, 5, 4)),
    ((3, 1, 4, 4), (1, 2, 5, 4), (1, 2, 5, 3)),      # batch dims broadcast
    ((6, 4), (1, 6, 4), (1, 6, 4)),
]


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("shapes", SDPA_SHAPES)
@pytest.mark.parametrize("mask", ["none", "bool", "bool_full", "float", "causal"])
def test_sdpa_matches_torch(shapes, mask, dtype, tdtype, tol):
    qs, ks, vs = shapes
    L, S = qs[-2], ks[-2]
    (q, tq), (k, tk), (v, tv) = (_pair(_data(s), dtype, tdtype) for s in shapes)
    kwargs_p, kwargs_t = {}, {}
    if mask == "bool":
        m = _rng.random((L, S)) > 0.4
        m[:, 0] = True
        kwargs_p["attn_mask"], kwargs_t["attn_mask"] = _mask_pair(m)
    elif mask == "bool_full":
        # a mask with the broadcast batch shape, one query row of which masks every key out
        batch = np.broadcast_shapes(qs[:-2], ks[:-2])
        m = _rng.random(batch + (L, S)) > 0.3
        m[..., 0, :] = False
        m[..., 1, 1] = True
        kwargs_p["attn_mask"], kwargs_t["attn_mask"] = _mask_pair(m)
    elif mask == "float":
        m = _data((L, S))
        m[0, 1] = -np.inf
        kwargs_p["attn_mask"], kwargs_t["attn_mask"] = _mask_pair(m, dtype, tdtype)
    elif mask == "causal":
        kwargs_p["is_causal"] = kwargs_t["is_causal"] = True
    out_p = F.scaled_dot_product_attention(q, k, v, **kwargs_p)
    out_t = TF.scaled_dot_product_attention(tq, tk, tv, **kwargs_t)
    _close(out_p, out_t, tol, "output")
    assert out_p.dtype == dtype
    _backward([out_p], [out_t], dtype, tdtype)
    for name, p, t in (("query", q, tq), ("key", k, tk), ("value", v, tv)):
        _close(p.grad, t.grad, tol, f"gradient of {name}")


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
def test_sdpa_scale_noncontiguous_and_mask_gradient(dtype, tdtype, tol):
    shapes = [(2, 2, 5, 4), (2, 2, 7, 4), (2, 2, 7, 3)]
    pairs = [_pair(_data(s), dtype, tdtype, transpose=True) for s in shapes]
    m_p, m_t = _pair(_data((5, 7)), dtype, tdtype)
    for scale in (0.3, 2.0, None):
        out_p = F.scaled_dot_product_attention(*[p for p, _ in pairs], attn_mask=m_p, scale=scale)
        out_t = TF.scaled_dot_product_attention(*[t for _, t in pairs], attn_mask=m_t, scale=scale)
        _close(out_p, out_t, tol, f"output, scale={scale}")
    _backward([out_p], [out_t], dtype, tdtype)
    for i, (p, t) in enumerate(pairs):
        _close(p.grad, t.grad, tol, f"gradient of input {i}")
    _close(m_p.grad, m_t.grad, tol, "gradient of the float mask")


def test_sdpa_causal_rectangular_and_float32_mask_on_float64():
    for L, S in ((5, 3), (3, 5)):
        q, k, v = (_data((2, n, 4)) for n in (L, S, S))
        o = F.scaled_dot_product_attention(P.tensor(q), P.tensor(k), P.tensor(v), is_causal=True)
        t = TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True)
        _close(o, t, 1e-10, f"causal {L}x{S}")
    # a float32 mask is allowed with float64 inputs (the result stays float64)
    q = _data((2, 3, 4))
    m = _data((3, 3)).astype(np.float32)
    o = F.scaled_dot_product_attention(P.tensor(q), P.tensor(q), P.tensor(q), attn_mask=P.tensor(m))
    t = TF.scaled_dot_product_attention(torch.tensor(q), torch.tensor(q), torch.tensor(q), attn_mask=torch.tensor(m))
    assert o.dtype == P.float64
    _close(o, t, 1e-10, "float32 mask")


def test_sdpa_fully_masked_row_gives_zeros_and_zero_gradients():
    q, k, v = (_data((2, n, 4)) for n in (3, 5, 5))
    m = np.ones((3, 5), dtype=bool)
    m[1] = False
    pairs = [_pair(a, P.float64, torch.float64) for a in (q, k, v)]
    out_p = F.scaled_dot_product_attention(*[p for p, _ in pairs], attn_mask=P.tensor(m))
    out_t = TF.scaled_dot_product_attention(*[t for _, t in pairs], attn_mask=torch.tensor(m))
    assert np.all(out_p.detach().numpy()[:, 1] == 0)
    _close(out_p, out_t, 1e-10, "output")
    _backward([out_p], [out_t], P.float64, torch.float64)
    assert np.all(pairs[0][0].grad.numpy()[:, 1] == 0)
    for i, (p, t) in enumerate(pairs):
        assert np.isfinite(p.grad.numpy()).all()
        _close(p.grad, t.grad, 1e-10, f"gradient of input {i}")


def test_sdpa_empty_sizes():
    # no keys: zeros; empty embedding: every score 0, so each query averages the values
    for q, k, v in (((1, 2, 4), (1, 0, 4), (1, 0, 3)), ((2, 3, 0), (2, 3, 0), (2, 3, 4)), ((0, 2, 4), (0, 3, 4),
                                                                                          (0, 3, 4))):
        a, b, c = _data(q), _data(k), _data(v)
        o = F.scaled_dot_product_attention(P.tensor(a), P.tensor(b), P.tensor(c))
        t = TF.scaled_dot_product_attention(torch.tensor(a), torch.tensor(b), torch.tensor(c))
        _close(o, t, 1e-10, f"shapes {q} {k} {v}")


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
def test_sdpa_grouped_query_attention(dtype, tdtype, tol):
    pairs = [_pair(_data(s), dtype, tdtype) for s in ((2, 6, 3, 4), (2, 2, 5, 4), (2, 3, 5, 4))]
    out_p = F.scaled_dot_product_attention(*[p for p, _ in pairs], enable_gqa=True)
    out_t = TF.scaled_dot_product_attention(*[t for _, t in pairs], enable_gqa=True)
    _close(out_p, out_t, tol, "output")
    _backward([out_p], [out_t], dtype, tdtype)
    for i, (p, t) in enumerate(pairs):
        _close(p.grad, t.grad, tol, f"gradient of input {i}")
    with pytest.raises(RuntimeError, match="must divide the number of heads"):
        F.scaled_dot_product_attention(P.ones(1, 6, 3, 4), P.ones(1, 4, 3, 4), P.ones(1, 4, 3, 4), enable_gqa=True)
    with pytest.raises(RuntimeError, match="size"):  # without enable_gqa the head dims must broadcast
        F.scaled_dot_product_attention(P.ones(1, 6, 3, 4), P.ones(1, 2, 3, 4), P.ones(1, 2, 3, 4))


def test_sdpa_dropout():
    P.manual_seed(0)
    q = P.randn(4, 5, 8)
    v = P.ones(4, 5, 3)
    assert np.all(F.scaled_dot_product_attention(q, q, v, dropout_p=1.0).numpy() == 0)
    a = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
    b = F.scaled_dot_product_attention(q, q, v, dropout_p=0.5)
    assert not np.allclose(a.numpy(), b.numpy())
    # each row of weights sums to 1: with value all ones the output is the kept weight
    # mass / (1 - p), whose mean over many rows is 1
    q = P.randn(400, 50, 4)
    out = F.scaled_dot_product_attention(q, q, P.ones(400, 50, 1), dropout_p=0.3)
    assert abs(float(out.mean()) - 1.0) < 0.02
    # dropout on the weights: every output is a sum of weight/(1-p) over kept keys
    assert float(out.min()) >= 0.0
    # a given seed gives the same output
    P.manual_seed(3)
    c = F.scaled_dot_product_attention(q[:2], q[:2], q[:2], dropout_p=0.2)
    P.manual_seed(3)
    d = F.scaled_dot_product_attention(q[:2], q[:2], q[:2], dropout_p=0.2)
    assert np.array_equal(c.numpy(), d.numpy())


def test_sdpa_errors():
    q = P.ones(2, 3, 4)
    sdpa = F.scaled_dot_product_attention
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        sdpa(q, q, q, attn_mask=P.ones(3, 3, dtype=P.bool), is_causal=True)
    with pytest.raises(RuntimeError, match="at least 2 dimensional, but got query.dim: 1 key.dim: 3"):
        sdpa(P.ones(4), q, q)
    with pytest.raises(RuntimeError, match="same dtype, but got query.dtype: pytorchlite.float32 key.dtype: "
                                           "pytorchlite.float64"):
        sdpa(q, q.double(), q)
    with pytest.raises(RuntimeError, match="floating-point"):
        sdpa(P.ones(2, 3, dtype=P.int64), P.ones(2, 3, dtype=P.int64), P.ones(2, 3, dtype=P.int64))
    with pytest.raises(RuntimeError, match=r"same embedding size.*\[2, 3, 4\].*\[2, 3, 5\]"):
        sdpa(q, P.ones(2, 3, 5), q)
    with pytest.raises(RuntimeError, match=r"same sequence length.*\[2, 3, 4\].*\[2, 2, 4\]"):
        sdpa(q, q, P.ones(2, 2, 4))
    with pytest.raises(RuntimeError, match="attn_mask.dtype: pytorchlite.int64"):
        sdpa(q, q, q, attn_mask=P.ones(3, 3, dtype=P.int64))
    with pytest.raises(RuntimeError, match="attn_mask.dtype: pytorchlite.float64"):
        sdpa(q, q, q, attn_mask=P.ones(3, 3, dtype=P.float64))
    with pytest.raises(RuntimeError, match="size"):
        sdpa(q, q, q, attn_mask=P.ones(4, 3, dtype=P.bool))
    with pytest.raises(RuntimeError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        sdpa(q, q, q, dropout_p=1.5)
    with pytest.raises(TypeError, match=r"argument 'value' \(position 3\) must be Tensor, not list"):
        sdpa(q, q, [1.0])
    with pytest.raises(TypeError, match="argument 'attn_mask'"):
        sdpa(q, q, q, attn_mask=[[True]])


# --- MultiheadAttention ----------------------------------------------------------------------

def _mha_twins(dtype, tdtype, *args, **kwargs):
    return _twin(nn.MultiheadAttention(*args, **kwargs).to(dtype), torch.nn.MultiheadAttention(*args, **kwargs).to(
        tdtype))


def _seq(a, batch_first):
    """(L, N, E) data laid out as the module expects it."""
    return np.ascontiguousarray(np.swapaxes(a, 0, 1)) if batch_first else a


MHA_MASKS = ["none", "attn_bool", "attn_float3d", "kpm_bool", "kpm_float", "both_bool"]


def _mha_masks(kind, L, S, N, heads, dtype, tdtype):
    p, t = {}, {}
    if kind in ("attn_bool", "both_bool"):
        m = _rng.random((L, S)) > 0.6
        m[:, 0] = False
        p["attn_mask"], t["attn_mask"] = _mask_pair(m)
    if kind == "attn_float3d":
        m = _data((N * heads, L, S))
        m[:, :, -1] = -np.inf
        p["attn_mask"], t["attn_mask"] = _mask_pair(m, dtype, tdtype)
    if kind in ("kpm_bool", "both_bool"):
        m = np.zeros((N, S), dtype=bool)
        m[0, -2:] = True
        m[-1, 1] = True
        p["key_padding_mask"], t["key_padding_mask"] = _mask_pair(m)
    if kind == "kpm_float":
        m = _data((N, S))
        m[0, -1] = -np.inf
        p["key_padding_mask"], t["key_padding_mask"] = _mask_pair(m, dtype, tdtype)
    return p, t


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("attention", ["self", "cross", "cross_shared_kv"])
@pytest.mark.parametrize("mask", MHA_MASKS)
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha_matches_torch(batch_first, attention, mask, need_weights, average):
    dtype, tdtype, tol = F64
    E, heads, L, N = 8, 2, 4, 3
    S = L if attention == "self" else 6
    ours, theirs = _mha_twins(dtype, tdtype, E, heads, batch_first=batch_first)
    q_p, q_t = _pair(_seq(_data((L, N, E)), batch_first), dtype, tdtype)
    if attention == "self":
        k_p = v_p = q_p
        k_t = v_t = q_t
    else:
        k_p, k_t = _pair(_seq(_data((S, N, E)), batch_first), dtype, tdtype)
        if attention == "cross_shared_kv":
            v_p, v_t = k_p, k_t
        else:
            v_p, v_t = _pair(_seq(_data((S, N, E)), batch_first), dtype, tdtype)
    mp, mt = _mha_masks(mask, L, S, N, heads, dtype, tdtype)
    out_p, w_p = ours(q_p, k_p, v_p, need_weights=need_weights, average_attn_weights=average, **mp)
    out_t, w_t = theirs(q_t, k_t, v_t, need_weights=need_weights, average_attn_weights=average, **mt)
    _close(out_p, out_t, tol, "output")
    if need_weights:
        assert tuple(w_p.shape) == ((N, L, S) if average else (N, heads, L, S))
        _close(w_p, w_t, tol, "attention weights")
    else:
        assert w_p is None and w_t is None
    _backward([out_p] + ([w_p] if need_weights else []), [out_t] + ([w_t] if need_weights else []), dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    for name, p, t in (("query", q_p, q_t), ("key", k_p, k_t), ("value", v_p, v_t)):
        _close(p.grad, t.grad, tol, f"gradient of {name}")


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_unbatched_and_float32(dtype, tdtype, tol, need_weights):
    E, heads, L, S = 12, 3, 5, 7
    ours, theirs = _mha_twins(dtype, tdtype, E, heads, batch_first=True)
    (q_p, q_t), (k_p, k_t), (v_p, v_t) = (_pair(_data(s), dtype, tdtype) for s in ((L, E), (S, E), (S, E)))
    kpm = np.zeros(S, dtype=bool)
    kpm[2] = True
    am = _data((heads, L, S))
    kw_p = dict(key_padding_mask=P.tensor(kpm), attn_mask=P.tensor(am, dtype=dtype), need_weights=need_weights)
    kw_t = dict(key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am, dtype=tdtype),
                need_weights=need_weights)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mismatched mask types: a deprecation warning in both
        out_p, w_p = ours(q_p, k_p, v_p, **kw_p)
        out_t, w_t = theirs(q_t, k_t, v_t, **kw_t)
    _close(out_p, out_t, tol, "output")
    assert tuple(out_p.shape) == (L, E)
    outs_p, outs_t = [out_p], [out_t]
    if need_weights:
        assert tuple(w_p.shape) == (L, S)
        _close(w_p, w_t, tol, "weights")
        outs_p.append(w_p)
        outs_t.append(w_t)
    _backward(outs_p, outs_t, dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    for p, t in ((q_p, q_t), (k_p, k_t), (v_p, v_t)):
        _close(p.grad, t.grad, tol, "input gradient")


@pytest.mark.parametrize("kdim,vdim", [(5, 7), (5, None), (None, 3)])
@pytest.mark.parametrize("bias", [True, False])
def test_mha_kdim_vdim_and_bias(kdim, vdim, bias):
    dtype, tdtype, tol = F64
    E, heads, L, S, N = 6, 3, 4, 5, 2
    ours, theirs = _mha_twins(dtype, tdtype, E, heads, bias=bias, kdim=kdim, vdim=vdim)
    keys = list(ours.state_dict())
    assert keys[:3] == ["q_proj_weight", "k_proj_weight", "v_proj_weight"] and "in_proj_weight" not in keys
    assert ours.in_proj_weight is None and ours._qkv_same_embed_dim is False
    assert tuple(ours.k_proj_weight.shape) == (E, kdim or E)
    (q_p, q_t), (k_p, k_t), (v_p, v_t) = (_pair(_data(s), dtype, tdtype) for s in
                                          ((L, N, E), (S, N, kdim or E), (S, N, vdim or E)))
    for need_weights in (True, False):
        out_p, _ = ours(q_p, k_p, v_p, need_weights=need_weights)
        out_t, _ = theirs(q_t, k_t, v_t, need_weights=need_weights)
        _close(out_p, out_t, tol, f"output need_weights={need_weights}")
    _backward([out_p], [out_t], dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    for p, t in ((q_p, q_t), (k_p, k_t), (v_p, v_t)):
        _close(p.grad, t.grad, tol, "input gradient")


@pytest.mark.parametrize("add_bias_kv,add_zero_attn", [(True, False), (False, True), (True, True)])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_bias_kv_and_zero_attn(add_bias_kv, add_zero_attn, need_weights):
    dtype, tdtype, tol = F64
    E, heads, L, S, N = 8, 4, 3, 5, 2
    ours, theirs = _mha_twins(dtype, tdtype, E, heads, add_bias_kv=add_bias_kv, add_zero_attn=add_zero_attn)
    if add_bias_kv:
        assert list(ours.state_dict())[:4] == ["in_proj_weight", "in_proj_bias", "bias_k", "bias_v"]
    (q_p, q_t), (k_p, k_t) = (_pair(_data(s), dtype, tdtype) for s in ((L, N, E), (S, N, E)))
    kpm = np.zeros((N, S), dtype=bool)
    kpm[1, 0] = True
    am = _rng.random((L, S)) > 0.7
    out_p, w_p = ours(q_p, k_p, k_p, key_padding_mask=P.tensor(kpm), attn_mask=P.tensor(am),
                      need_weights=need_weights)
    out_t, w_t = theirs(q_t, k_t, k_t, key_padding_mask=torch.tensor(kpm), attn_mask=torch.tensor(am),
                        need_weights=need_weights)
    _close(out_p, out_t, tol, "output")
    if need_weights:
        assert tuple(w_p.shape) == (N, L, S + add_bias_kv + add_zero_attn)
        _close(w_p, w_t, tol, "weights")
    _backward([out_p], [out_t], dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    _close(q_p.grad, q_t.grad, tol, "query gradient")
    _close(k_p.grad, k_t.grad, tol, "key gradient")


def test_mha_is_causal_hint_and_fully_masked_rows():
    dtype, tdtype, tol = F64
    E, heads, L, N = 8, 2, 5, 3
    ours, theirs = _mha_twins(dtype, tdtype, E, heads, batch_first=True)
    x_p, x_t = _pair(_data((N, L, E)), dtype, tdtype)
    causal = np.triu(np.ones((L, L), dtype=bool), 1)
    for need_weights in (False, True):
        out_p, _ = ours(x_p, x_p, x_p, attn_mask=P.tensor(causal), is_causal=True, need_weights=need_weights)
        out_t, _ = theirs(x_t, x_t, x_t, attn_mask=torch.tensor(causal), is_causal=True, need_weights=need_weights)
        _close(out_p, out_t, tol, f"causal, need_weights={need_weights}")
    # the hint alone, with no mask, is an error
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        ours(x_p, x_p, x_p, is_causal=True)
    # every key padded for one batch element: NaN when the weights are computed (as torch),
    # zeros through scaled_dot_product_attention
    kpm = np.zeros((N, L), dtype=bool)
    kpm[0] = True
    for need_weights in (True, False):
        out_p, _ = ours(x_p, x_p, x_p, key_padding_mask=P.tensor(kpm), need_weights=need_weights)
        out_t, _ = theirs(x_t, x_t, x_t, key_padding_mask=torch.tensor(kpm), need_weights=need_weights)
        assert np.isnan(out_p.detach().numpy()[0]).all() == need_weights
        _close(out_p, out_t, tol, f"fully masked, need_weights={need_weights}")


def test_mha_functional_with_static_kv():
    dtype, tdtype, tol = F64
    E, heads, L, S, N = 6, 2, 3, 4, 2
    ours, theirs = _mha_twins(dtype, tdtype, E, heads)
    q = _data((L, N, E))
    sk, sv = _data((N * heads, S, E // heads)), _data((N * heads, S, E // heads))
    args_p = [P.tensor(q)] * 3 + [E, heads, ours.in_proj_weight, ours.in_proj_bias, None, None, False, 0.0,
                                  ours.out_proj.weight, ours.out_proj.bias]
    args_t = [torch.tensor(q)] * 3 + [E, heads, theirs.in_proj_weight, theirs.in_proj_bias, None, None, False, 0.0,
                                      theirs.out_proj.weight, theirs.out_proj.bias]
    for nw in (True, False):
        out_p, w_p = F.multi_head_attention_forward(*args_p, static_k=P.tensor(sk), static_v=P.tensor(sv),
                                                    need_weights=nw)
        out_t, w_t = TF.multi_head_attention_forward(*args_t, static_k=torch.tensor(sk), static_v=torch.tensor(sv),
                                                     need_weights=nw)
        _close(out_p, out_t, tol, "output")
        if nw:
            _close(w_p, w_t, tol, "weights")
    with pytest.raises(AssertionError, match="expecting static_k.size\\(0\\) of 4, but got 3"):
        F.multi_head_attention_forward(*args_p, static_k=P.ones(3, S, 3), static_v=P.tensor(sv))


def test_mha_dropout_in_training_only():
    E, heads = 8, 2
    mha = nn.MultiheadAttention(E, heads, dropout=1.0)
    with P.no_grad():
        mha.out_proj.bias.copy_(P.arange(E, dtype=P.float32))
    x = P.randn(4, 3, E)
    expected = np.broadcast_to(np.arange(E, dtype=np.float32), (4, 3, E))
    for need_weights in (True, False):
        out, w = mha(x, x, x, need_weights=need_weights)  # every weight dropped: only out_proj's bias is left
        np.testing.assert_allclose(out.detach().numpy(), expected)
        if need_weights:
            assert np.all(w.detach().numpy() == 0)
    mha.eval()
    ref = nn.MultiheadAttention(E, heads, dropout=0.0).eval()
    ref.load_state_dict(mha.state_dict())
    np.testing.assert_allclose(mha(x, x, x)[0].detach().numpy(), ref(x, x, x)[0].detach().numpy())


def test_mha_init_and_state_dict():
    P.manual_seed(0)
    E = 16
    ours, theirs = nn.MultiheadAttention(E, 4, add_bias_kv=True), torch.nn.MultiheadAttention(E, 4, add_bias_kv=True)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    assert repr(ours) == repr(theirs)
    assert np.all(ours.in_proj_bias.detach().numpy() == 0) and np.all(ours.out_proj.bias.detach().numpy() == 0)
    w = ours.in_proj_weight.detach().numpy()
    bound = math.sqrt(6.0 / (E + 3 * E))  # xavier_uniform_ on (3E, E)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.1 * bound
    out_bound = 1 / math.sqrt(E)  # out_proj keeps Linear's kaiming-uniform weight
    assert np.abs(ours.out_proj.weight.detach().numpy()).max() <= out_bound
    assert ours.bias_k.shape == (1, 1, E) and np.abs(ours.bias_k.detach().numpy()).max() > 0
    nb = nn.MultiheadAttention(E, 4, bias=False)
    assert nb.in_proj_bias is None and nb.out_proj.bias is None
    assert list(nb.state_dict()) == list(torch.nn.MultiheadAttention(E, 4, bias=False).state_dict())
    assert ours.head_dim == 4 and ours.batch_first is False and ours.dropout == 0.0


def test_mha_errors():
    mha = nn.MultiheadAttention(8, 2)
    x = P.ones(5, 2, 8)
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.MultiheadAttention(8, 3)
    with pytest.raises(ValueError, match="embed_dim and num_heads must be greater than 0, got embed_dim=0"):
        nn.MultiheadAttention(0, 2)
    with pytest.raises(RuntimeError, match=r"The shape of the 2D attn_mask is .*\[4, 5\].*, but should be \(5, 5\)"):
        mha(x, x, x, attn_mask=P.ones(4, 5))
    with pytest.raises(RuntimeError, match=r"The shape of the 3D attn_mask is .*, but should be \(4, 5, 5\)"):
        mha(x, x, x, attn_mask=P.ones(2, 5, 5))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[1\\] to be 5, but got 4"):
        mha(x, x, x, key_padding_mask=P.ones(2, 4, dtype=P.bool))
    with pytest.raises(AssertionError, match="Expected key_padded_mask.shape\\[0\\] to be 2, but got 3"):
        mha(x, x, x, key_padding_mask=P.ones(3, 5, dtype=P.bool))
    with pytest.raises(AssertionError, match="only bool and floating types of key_padding_mask are supported"):
        mha(x, x, x, key_padding_mask=P.ones(2, 5, dtype=P.int64))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask are supported"):
        mha(x, x, x, attn_mask=P.ones(5, 5, dtype=P.int32))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 6"):
        y = P.ones(5, 2, 6)
        mha(y, y, y)
    with pytest.raises(AssertionError, match="key shape .* does not match value shape"):
        mha(x, x, x[:4])
    with pytest.raises(AssertionError, match="query should be unbatched 2D or batched 3D tensor but received 4-D"):
        y = P.ones(1, 5, 2, 8)
        mha(y, y, y)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D but found 2-D"):
        mha(x, x[0], x[0])
    with pytest.raises(AssertionError, match="expected `key_padding_mask` to be `None` or 1-D"):
        mha(x[:, 0], x[:, 0], x[:, 0], key_padding_mask=P.ones(1, 5, dtype=P.bool))
    with pytest.raises(AssertionError, match=r"Expected `attn_mask` shape to be \(2, 5, 5\)"):
        mha(x[:, 0], x[:, 0], x[:, 0], attn_mask=P.ones(3, 5, 5))
    with pytest.raises(TypeError, match="argument 'key'"):
        mha(x, None, x)
    with pytest.raises(TypeError, match="attn_mask must be a Tensor or None, not list"):
        mha(x, x, x, attn_mask=[[0.0]])
    with pytest.warns(UserWarning, match="Support for mismatched key_padding_mask and attn_mask is deprecated"):
        mha(x, x, x, key_padding_mask=P.zeros(2, 5, dtype=P.bool), attn_mask=P.zeros(5, 5))


# --- TransformerEncoderLayer / TransformerEncoder ------------------------------------------------

def _layer_twins(dtype, tdtype, *args, **kwargs):
    ours = nn.TransformerEncoderLayer(*args, **kwargs).to(dtype).eval()
    if callable(kwargs.get("activation")):
        kwargs["activation"] = TF.silu  # the same function on the torch side
    theirs = torch.nn.TransformerEncoderLayer(*args, **kwargs).to(tdtype).eval()
    return _twin(ours, theirs)


def _layer_masks(kind, S, N, dtype, tdtype):
    p, t = {}, {}
    if kind in ("causal_bool", "both"):
        m = np.triu(np.ones((S, S), dtype=bool), 1)
        p["src_mask"], t["src_mask"] = _mask_pair(m)
    if kind == "float":
        m = _data((S, S))
        p["src_mask"], t["src_mask"] = _mask_pair(m, dtype, tdtype)
    if kind in ("kpm", "both"):
        m = np.zeros((N, S), dtype=bool)
        m[0, -2:] = True
        p["src_key_padding_mask"], t["src_key_padding_mask"] = _mask_pair(m)
    return p, t


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("mask", ["none", "causal_bool", "float", "kpm", "both"])
def test_encoder_layer_matches_torch(norm_first, activation, batch_first, mask):
    dtype, tdtype, tol = F64
    d, heads, ff, S, N = 8, 2, 16, 5, 3
    act = (lambda x: F.silu(x)) if activation == "callable" else activation
    ours, theirs = _layer_twins(dtype, tdtype, d, heads, ff, dropout=0.1, activation=act, batch_first=batch_first,
                                norm_first=norm_first)
    # perturb the LayerNorm affines so that their gradients are not trivially the same
    with torch.no_grad():
        for p in theirs.parameters():
            p.add_(torch.tensor(_data(tuple(p.shape), 0.1), dtype=tdtype))
    _twin(ours, theirs)
    x_p, x_t = _pair(_seq(_data((S, N, d)), batch_first), dtype, tdtype)
    mp, mt = _layer_masks(mask, S, N, dtype, tdtype)
    out_p = ours(x_p, **mp)
    out_t = theirs(x_t, **mt)
    _close(out_p, out_t, tol, "output")
    _backward([out_p], [out_t], dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    _close(x_p.grad, x_t.grad, tol, "gradient of src")


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
def test_encoder_layer_unbatched_causal_hint_bias_and_eps(dtype, tdtype, tol):
    d, heads, ff, S = 12, 4, 20, 6
    ours, theirs = _layer_twins(dtype, tdtype, d, heads, ff, activation="gelu", layer_norm_eps=1e-3, bias=False,
                                norm_first=True)
    assert ours.norm1.eps == 1e-3 and ours.linear1.bias is None and ours.norm1.bias is None
    x_p, x_t = _pair(_data((S, d)), dtype, tdtype)
    causal_p = nn.attention._generate_square_subsequent_mask(S, dtype=dtype)
    causal_t = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=tdtype)
    _close(causal_p, causal_t, 0, "causal mask")
    out_p = ours(x_p, src_mask=causal_p, is_causal=True)
    out_t = theirs(x_t, src_mask=causal_t, is_causal=True)
    assert tuple(out_p.shape) == (S, d)
    _close(out_p, out_t, tol, "output")
    _backward([out_p], [out_t], dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    _close(x_p.grad, x_t.grad, tol, "gradient of src")


def test_encoder_layer_train_mode_and_structure():
    d, heads, ff = 8, 2, 16
    # with dropout 0 training mode is deterministic and equals torch's
    ours, theirs = _layer_twins(P.float64, torch.float64, d, heads, ff, dropout=0.0)
    ours.train()
    theirs.train()
    x = _data((4, 2, d))
    _close(ours(P.tensor(x)), theirs(torch.tensor(x)), 1e-10, "train mode, dropout 0")
    # with dropout, training mode is random and eval mode is not
    layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.5)
    a, b = layer(P.tensor(x).float()), layer(P.tensor(x).float())
    assert not np.allclose(a.detach().numpy(), b.detach().numpy())
    layer.eval()
    a, b = layer(P.tensor(x).float()), layer(P.tensor(x).float())
    assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    t = torch.nn.TransformerEncoderLayer(d, heads, ff, dropout=0.5)
    assert [n for n, _ in layer.named_children()] == [n for n, _ in t.named_children()]
    assert list(layer.state_dict()) == list(t.state_dict())
    assert repr(layer) == repr(t)
    assert layer.self_attn.dropout == 0.5 and layer.dropout.p == 0.5
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        nn.TransformerEncoderLayer(d, heads, ff, activation="tanh")
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        nn.TransformerEncoderLayer(d, 3)
    with pytest.raises(AssertionError, match="only bool and floating types of src_key_padding_mask"):
        layer(P.ones(4, 2, d), src_key_padding_mask=P.zeros(2, 4, dtype=P.int64))
    with pytest.raises(AssertionError, match="was expecting embedding dimension of 8, but got 6"):
        layer(P.ones(4, 2, 6))


@pytest.mark.parametrize("dtype,tdtype,tol", DTYPES)
@pytest.mark.parametrize("with_norm", [False, True])
@pytest.mark.parametrize("mask", ["none", "causal_float", "kpm"])
def test_encoder_matches_torch(dtype, tdtype, tol, with_norm, mask):
    d, heads, ff, S, N, layers = 8, 2, 16, 5, 2, 3
    ours_layer = nn.TransformerEncoderLayer(d, heads, ff, batch_first=True)
    theirs_layer = torch.nn.TransformerEncoderLayer(d, heads, ff, batch_first=True)
    ours = nn.TransformerEncoder(ours_layer, layers, norm=nn.LayerNorm(d) if with_norm else None).to(dtype).eval()
    theirs = torch.nn.TransformerEncoder(theirs_layer, layers, norm=torch.nn.LayerNorm(d) if with_norm else None,
                                         enable_nested_tensor=False).to(tdtype).eval()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    # layers are independent copies: give each its own weights
    with torch.no_grad():
        for p in theirs.parameters():
            p.copy_(torch.tensor(_data(tuple(p.shape), 0.3), dtype=tdtype))
    _twin(ours, theirs)
    x_p, x_t = _pair(_data((N, S, d)), dtype, tdtype)
    kp, kt = {}, {}
    if mask == "causal_float":  # detected as causal (is_causal=None)
        kp["mask"] = nn.attention._generate_square_subsequent_mask(S, dtype=dtype)
        kt["mask"] = torch.nn.Transformer.generate_square_subsequent_mask(S, dtype=tdtype)
    elif mask == "kpm":
        m = np.zeros((N, S), dtype=bool)
        m[1, -3:] = True
        kp["src_key_padding_mask"], kt["src_key_padding_mask"] = _mask_pair(m)
    out_p, out_t = ours(x_p, **kp), theirs(x_t, **kt)
    _close(out_p, out_t, tol, "output")
    _backward([out_p], [out_t], dtype, tdtype)
    _check_param_grads(ours, theirs, tol)
    _close(x_p.grad, x_t.grad, tol, "gradient of src")


def test_encoder_deep_copies_and_causal_detection():
    layer = nn.TransformerEncoderLayer(8, 2, 16)
    enc = nn.TransformerEncoder(layer, 2)
    assert len(enc.layers) == 2 and enc.num_layers == 2 and enc.norm is None
    ids = {id(p) for p in layer.parameters()}
    p0, p1 = list(enc.layers[0].parameters()), list(enc.layers[1].parameters())
    assert not ids & {id(p) for p in p0 + p1} and not {id(p) for p in p0} & {id(p) for p in p1}
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in p0)
    for a, b in zip(p0, layer.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())
    with P.no_grad():
        p0[0].add_(1.0)
    assert not np.array_equal(p0[0].detach().numpy(), p1[0].detach().numpy())
    det = nn.attention._detect_is_causal_mask
    causal = nn.attention._generate_square_subsequent_mask(4)
    assert det(causal, None, 4) and not det(causal, None, 5) and not det(causal.abs(), None, 4)
    assert det(None, True) and not det(causal, False) and not det(None, None)
    # an empty stack is the identity (then the norm)
    x = P.randn(3, 2, 8)
    assert np.array_equal(nn.TransformerEncoder(layer, 0)(x).numpy(), x.numpy())
    with pytest.raises(ValueError, match="num_layers"):
        nn.TransformerEncoder(layer, -1)
    with pytest.raises(TypeError, match="encoder_layer must be a Module"):
        nn.TransformerEncoder("layer", 2)


def test_public_names_and_docstring_examples():
    import doctest

    from pytorchlite.nn import attention
    assert F.scaled_dot_product_attention is attention.scaled_dot_product_attention
    assert F.multi_head_attention_forward is attention.multi_head_attention_forward
    assert nn.MultiheadAttention is attention.MultiheadAttention
    assert nn.TransformerEncoderLayer is attention.TransformerEncoderLayer
    assert nn.TransformerEncoder is attention.TransformerEncoder
    result = doctest.testmod(attention, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 4 and result.failed == 0
