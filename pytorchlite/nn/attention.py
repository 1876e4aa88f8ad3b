"""Attention: scaled_dot_product_attention, MultiheadAttention and the Transformer encoder,
with PyTorch's semantics, parameter names (so state_dicts line up) and initialisation.
Built on the public pytorchlite operators (matmul, softmax, where, ...) as user code would be."""

import copy
import math
import warnings

import pytorchlite
from pytorchlite.nn import functional as F
from pytorchlite.nn import init
from pytorchlite.nn.conv import LayerNorm
from pytorchlite.nn.layers import Dropout, Linear, ModuleList
from pytorchlite.nn.module import Module
from pytorchlite.nn.parameter import Parameter

_NEG_INF = float("-inf")


# --- scaled dot-product attention ------------------------------------------------------------

def _check_tensor(fn, name, position, value, optional=False):
    if value is None and optional:
        return
    if not isinstance(value, pytorchlite.Tensor):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be Tensor, not {type(value).__name__}")


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """softmax(query @ key^T * scale + mask) @ value over the last two dims; the leading dims
    are batch dims and broadcast as in matmul. query is (..., L, E), key (..., S, E), value
    (..., S, Ev); the result is (..., L, Ev).

    A boolean attn_mask marks with True the positions that take part; a float mask is added
    to the scores. is_causal masks out keys after each query (top-left aligned). scale
    defaults to 1/sqrt(E). With enable_gqa, key and value may have fewer heads (dim -3) than
    query, a divisor of its head count. A query whose every key is masked out gives zeros
    (and a zero gradient), as PyTorch does.

    >>> import pytorchlite
    >>> q = pytorchlite.ones(2, 3, 4)
    >>> scaled_dot_product_attention(q, q, pytorchlite.ones(2, 3, 5)).shape
    pytorchlite.Size([2, 3, 5])
    """
    fn = "scaled_dot_product_attention"
    for i, (name, t) in enumerate((("query", query), ("key", key), ("value", value))):
        _check_tensor(fn, name, i + 1, t)
    _check_tensor(fn, "attn_mask", 4, attn_mask, optional=True)
    if min(query.dim(), key.dim(), value.dim()) < 2:
        raise RuntimeError(f"Expected query, key, and value to all be at least 2 dimensional, but got query.dim: "
                           f"{query.dim()} key.dim: {key.dim()} and value.dim: {value.dim()} instead.")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"Expected query, key, and value to have the same dtype, but got query.dtype: {query.dtype} "
                           f"key.dtype: {key.dtype} and value.dtype: {value.dtype} instead.")
    if not query.is_floating_point():
        raise RuntimeError(f"{fn}(): expected floating-point query, key and value, but got {query.dtype}")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"{fn}(): query and key must have the same embedding size (last dim), but got query of "
                           f"size {list(query.shape)} and key of size {list(key.shape)}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{fn}(): key and value must have the same sequence length (dim -2), but got key of "
                           f"size {list(key.shape)} and value of size {list(value.shape)}")
    if not 0.0 <= dropout_p <= 1.0:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when "
                               "is_causal=True")
        if attn_mask.dtype not in (pytorchlite.bool, pytorchlite.float32, query.dtype):
            raise RuntimeError(f"Expected attn_mask dtype to be bool or float or to match query dtype, but got "
                               f"attn_mask.dtype: {attn_mask.dtype} and query.dtype: {query.dtype} instead.")
    if enable_gqa:
        heads, kv_heads, v_heads = query.size(-3), key.size(-3), value.size(-3)
        if kv_heads == 0 or v_heads == 0 or heads % kv_heads or heads % v_heads:
            raise RuntimeError(f"Number of heads in key and value must divide the number of heads in query, but got "
                               f"{heads} query heads, {kv_heads} key heads and {v_heads} value heads")
        if kv_heads != heads:
            key = key.repeat_interleave(heads // kv_heads, -3)
        if v_heads != heads:
            value = value.repeat_interleave(heads // v_heads, -3)

    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    if scale is None:
        # with E == 0 every score is 0 whatever the scale
        scale = 1.0 / math.sqrt(E) if E else 1.0
    scores = pytorchlite.matmul(query * scale, key.transpose(-2, -1))
    if is_causal:
        keep = pytorchlite.ones(L, S, dtype=pytorchlite.bool, device=query.device).tril()
        scores = scores.masked_fill(keep.logical_not(), _NEG_INF)
    elif attn_mask is not None:
        if attn_mask.dtype == pytorchlite.bool:
            scores = pytorchlite.where(attn_mask, scores, _NEG_INF)
        else:
            scores = scores + attn_mask
    if attn_mask is None:
        weights = pytorchlite.softmax(scores, -1)
    else:
        # A row with no key left would be softmax(-inf, ..., -inf) = NaN, and its NaN would
        # also poison the backward of softmax; PyTorch gives such rows zeros. So the row is
        # made finite before softmax and zeroed after: both fills stop its gradient.
        dead = (scores == _NEG_INF).all(-1, keepdim=True)
        weights = pytorchlite.softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, training=True)
    return pytorchlite.matmul(weights, value)


# --- multi-head attention ----------------------------------------------------------------------

def _dtype_or_none(mask, name):
    if mask is None:
        return None
    if not isinstance(mask, pytorchlite.Tensor):
        raise TypeError(f"{name} must be a Tensor or None, not {type(mask).__name__}")
    return mask.dtype


def _canonical_mask(mask, mask_name, other_type, other_name, target_type, check_other=True):
    """A bool mask (True = masked out) as an additive float mask of `target_type`; a float
    mask unchanged."""
    if mask is None:
        return None
    if not isinstance(mask, pytorchlite.Tensor):
        raise TypeError(f"{mask_name} must be a Tensor or None, not {type(mask).__name__}")
    if mask.dtype != pytorchlite.bool and not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {mask_name} are supported")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use same type for both "
                      f"instead.", stacklevel=3)
    if not mask.is_floating_point():
        mask = pytorchlite.zeros_like(mask, dtype=target_type).masked_fill_(mask, _NEG_INF)
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads):
    """Whether the input is batched (3-D query) or not (2-D), with PyTorch's checks."""
    if query.dim() == 3:
        if key.dim() != 3 or value.dim() != 3:
            raise AssertionError(f"For batched (3-D) `query`, expected `key` and `value` to be 3-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 2:
            raise AssertionError(f"For batched (3-D) `query`, expected `key_padding_mask` to be `None` or 2-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None and attn_mask.dim() not in (2, 3):
            raise AssertionError(f"For batched (3-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D but "
                                 f"found {attn_mask.dim()}-D tensor instead")
        return True
    if query.dim() == 2:
        if key.dim() != 2 or value.dim() != 2:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found "
                                 f"{key.dim()}-D and {value.dim()}-D tensors respectively")
        if key_padding_mask is not None and key_padding_mask.dim() != 1:
            raise AssertionError(f"For unbatched (2-D) `query`, expected `key_padding_mask` to be `None` or 1-D but "
                                 f"found {key_padding_mask.dim()}-D tensor instead")
        if attn_mask is not None:
            if attn_mask.dim() not in (2, 3):
                raise AssertionError(f"For unbatched (2-D) `query`, expected `attn_mask` to be `None`, 2-D or 3-D "
                                     f"but found {attn_mask.dim()}-D tensor instead")
            expected = (num_heads, query.shape[0], key.shape[0])
            if attn_mask.dim() == 3 and tuple(attn_mask.shape) != expected:
                raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {attn_mask.shape}")
        return False
    raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query "
                         f"tensor")


def _pad_key_column(mask):
    """One more (zero: attend) column at the end of an additive mask, for an appended key."""
    if mask is None:
        return None
    return pytorchlite.cat([mask, mask.new_zeros(tuple(mask.shape[:-1]) + (1,))], -1)


def _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, q_w, k_w, v_w):
    b_q = b_k = b_v = None
    if in_proj_bias is not None:
        b_q, b_k, b_v = in_proj_bias.chunk(3)
    if q_w is not None:
        return F.linear(query, q_w, b_q), F.linear(key, k_w, b_k), F.linear(value, v_w, b_v)
    # self-attention projects once with the packed weight; cross-attention with a shared
    # key/value source projects that source once for both
    if query is key and key is value:
        return F.linear(query, in_proj_weight, in_proj_bias).chunk(3, -1)
    w_q, w_k, w_v = in_proj_weight.chunk(3)
    q = F.linear(query, w_q, b_q)
    if key is value:
        b_kv = None if in_proj_bias is None else in_proj_bias[embed_dim:]
        k, v = F.linear(key, in_proj_weight[embed_dim:], b_kv).chunk(2, -1)
        return q, k, v
    return q, F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """The computation of nn.MultiheadAttention on sequence-first (L, N, E) or unbatched
    (L, E) inputs; see that class. Returns (output, weights or None)."""
    fn = "multi_head_attention_forward"
    for i, (name, t) in enumerate((("query", query), ("key", key), ("value", value))):
        _check_tensor(fn, name, i + 1, t)
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    src_len = key.shape[0]

    key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                       _dtype_or_none(attn_mask, "attn_mask"), "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        # the hint says attn_mask is the causal mask: let attention build it
        attn_mask = None
    else:
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if key_padding_mask is not None:
            is_causal = False

    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key's sequence and batch dims {key.shape[:2]} do not match value's "
                                 f"{value.shape[:2]}")
        for name, w in (("q", q_proj_weight), ("k", k_proj_weight), ("v", v_proj_weight)):
            if w is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
        q, k, v = _in_projection(query, key, value, embed_dim, None, in_proj_bias, q_proj_weight, k_proj_weight,
                                 v_proj_weight)
    else:
        if tuple(key.shape) != tuple(value.shape):
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        q, k, v = _in_projection(query, key, value, embed_dim, in_proj_weight, in_proj_bias, None, None, None)

    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(tgt_len, src_len)}.")
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (bsz * num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                                   f"{(bsz * num_heads, tgt_len, src_len)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    if (bias_k is None) != (bias_v is None):
        raise AssertionError("bias_k is set but bias_v is None" if bias_v is None else
                             "bias_v is set but bias_k is None")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"bias cannot be added to static {'key' if static_k is not None else 'value'}.")
        k = pytorchlite.cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = pytorchlite.cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask = _pad_key_column(attn_mask)
        key_padding_mask = _pad_key_column(key_padding_mask)

    # heads: (L, N, E) -> (N * heads, L, head_dim)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads_or_static(k, static_k, "static_k", bsz * num_heads, head_dim)
    v = _heads_or_static(v, static_v, "static_v", bsz * num_heads, head_dim)
    if add_zero_attn:
        k = pytorchlite.cat([k, k.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        v = pytorchlite.cat([v, v.new_zeros((bsz * num_heads, 1, head_dim))], 1)
        attn_mask = _pad_key_column(attn_mask)
        key_padding_mask = _pad_key_column(key_padding_mask)
    src_len = k.shape[1]

    if key_padding_mask is not None:
        if key_padding_mask.shape[0] != bsz:
            raise AssertionError(f"Expected key_padded_mask.shape[0] to be {bsz}, but got {key_padding_mask.shape[0]}")
        if key_padding_mask.shape[1] != src_len:
            raise AssertionError(f"Expected key_padded_mask.shape[1] to be {src_len}, but got "
                                 f"{key_padding_mask.shape[1]}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(
            bsz * num_heads, 1, src_len)
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    if not training:
        dropout_p = 0.0

    if need_weights:
        # the weights are returned, so they are computed here (an all-masked row is NaN, as
        # in PyTorch's path)
        scores = pytorchlite.matmul(q * math.sqrt(1.0 / head_dim), k.transpose(-2, -1))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = pytorchlite.softmax(scores, -1)
        if dropout_p > 0.0:
            weights = F.dropout(weights, dropout_p)
        out = pytorchlite.matmul(weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        out = F.linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
        weights = weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
        if not is_batched:
            out, weights = out.squeeze(1), weights.squeeze(0)
        return out, weights

    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.view(bsz, num_heads, -1,
                                                                                           src_len)
    q = q.reshape(bsz, num_heads, tgt_len, head_dim)
    k = k.reshape(bsz, num_heads, src_len, head_dim)
    v = v.reshape(bsz, num_heads, src_len, head_dim)
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
    out = F.linear(out, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if not is_batched:
        out = out.squeeze(1)
    return out, None


def _heads_or_static(t, static, name, batch_heads, head_dim):
    if static is None:
        return t.reshape(t.shape[0], batch_heads, head_dim).transpose(0, 1)
    if static.size(0) != batch_heads:
        raise AssertionError(f"expecting {name}.size(0) of {batch_heads}, but got {static.size(0)}")
    if static.size(2) != head_dim:
        raise AssertionError(f"expecting {name}.size(2) of {head_dim}, but got {static.size(2)}")
    return static


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention.out_proj (seen in its repr)."""


class MultiheadAttention(Module):
    """Attention from `num_heads` heads of size embed_dim // num_heads, as in "Attention Is
    All You Need": out_proj(concat_h(attention(q W_q^h, k W_k^h, v W_v^h))).

    Parameters as PyTorch names them: in_proj_weight (3E, E) and in_proj_bias (3E), or, when
    kdim or vdim differ from embed_dim, q_proj_weight, k_proj_weight and v_proj_weight; out_proj
    (a Linear); bias_k and bias_v with add_bias_kv. Inputs are (L, N, E), (N, L, E) with
    batch_first, or unbatched (L, E). A boolean attn_mask or key_padding_mask marks with True
    the positions NOT to attend (the opposite of scaled_dot_product_attention); a float mask
    is added to the scores.

    >>> import pytorchlite
    >>> mha = MultiheadAttention(8, 2, batch_first=True)
    >>> x = pytorchlite.ones(3, 5, 8)
    >>> out, weights = mha(x, x, x)
    >>> out.shape, weights.shape
    (pytorchlite.Size([3, 5, 8]), pytorchlite.Size([3, 5, 5]))
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(pytorchlite.empty((3 * embed_dim, embed_dim), **factory))
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        else:
            self.q_proj_weight = Parameter(pytorchlite.empty((embed_dim, embed_dim), **factory))
            self.k_proj_weight = Parameter(pytorchlite.empty((embed_dim, self.kdim), **factory))
            self.v_proj_weight = Parameter(pytorchlite.empty((embed_dim, self.vdim), **factory))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(pytorchlite.empty(3 * embed_dim, **factory))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(pytorchlite.empty((1, 1, embed_dim), **factory))
            self.bias_v = Parameter(pytorchlite.empty((1, 1, embed_dim), **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self):
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            init.xavier_uniform_(self.q_proj_weight)
            init.xavier_uniform_(self.k_proj_weight)
            init.xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        for i, (name, t) in enumerate((("query", query), ("key", key), ("value", value))):
            _check_tensor("MultiheadAttention.forward", name, i + 1, t)
        is_batched = query.dim() == 3
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask",
                                           _dtype_or_none(attn_mask, "attn_mask"), "attn_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, check_other=False)
        if self.batch_first and is_batched:
            # keep the identities (query is key is value) that let the projection run once
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = query.transpose(1, 0), key.transpose(1, 0)
                    value = key
            else:
                query, key, value = query.transpose(1, 0), key.transpose(1, 0), value.transpose(1, 0)
        separate = not self._qkv_same_embed_dim
        out, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if self.batch_first and is_batched:
            out = out.transpose(1, 0)
        return out, weights


# --- Transformer encoder -------------------------------------------------------------------------

def _generate_square_subsequent_mask(sz, device=None, dtype=None):
    """The (sz, sz) causal float mask: -inf above the diagonal, 0 elsewhere."""
    return pytorchlite.full((sz, sz), _NEG_INF, dtype=dtype, device=device).triu(1)


def _detect_is_causal_mask(mask, is_causal=None, size=None):
    """is_causal if given; otherwise whether `mask` is exactly the causal mask of `size`."""
    if is_causal is not None or mask is None:
        return is_causal is True
    sz = size if size is not None else mask.size(-2)
    causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
    return tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (linear1, activation, linear2), each with
    dropout and a residual connection, and LayerNorm after each residual (or before each
    block with norm_first).

    >>> import pytorchlite
    >>> layer = TransformerEncoderLayer(d_model=8, nhead=2, dim_feedforward=16, batch_first=True)
    >>> layer(pytorchlite.ones(3, 5, 8)).shape
    pytorchlite.Size([3, 5, 8])
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        factory = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _get_activation_fn(activation)
        elif not callable(activation):
            raise RuntimeError(f"activation should be relu/gelu or a callable, not {activation!r}")
        self.activation = activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        _check_tensor("TransformerEncoderLayer.forward", "src", 1, src)
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _dtype_or_none(src_mask, "src_mask"), "src_mask", src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", None, "", src.dtype, check_other=False)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` applied in turn, then `norm` if given.
    With is_causal=None, a `mask` equal to the causal mask is detected and passed on as the
    is_causal hint (as PyTorch does).

    >>> import pytorchlite
    >>> enc = TransformerEncoder(TransformerEncoderLayer(8, 2, 16), num_layers=2)
    >>> [name for name, _ in enc.named_children()], len(enc.layers)
    (['layers'], 2)
    """

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        if not isinstance(encoder_layer, Module):
            raise TypeError(f"encoder_layer must be a Module, not {type(encoder_layer).__name__}")
        if not isinstance(num_layers, int) or isinstance(num_layers, bool) or num_layers < 0:
            raise ValueError(f"num_layers must be a non-negative int, got {num_layers!r}")
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        # pytorchlite has no nested tensors: these only record the arguments
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = False
        self.mask_check = mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        _check_tensor("TransformerEncoder.forward", "src", 1, src)
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               _dtype_or_none(mask, "mask"), "mask", src.dtype)
        mask = _canonical_mask(mask, "mask", None, "", src.dtype, check_other=False)
        batch_first = len(self.layers) > 0 and getattr(getattr(self.layers[0], "self_attn", None), "batch_first",
                                                       False)
        seq_len = src.shape[0] if src.dim() == 2 else src.shape[1 if batch_first else 0]
        is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)
        output = src
        for mod in self.layers:
            output = mod(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        if self.norm is not None:
            output = self.norm(output)
        return output
