"""Attention: scaled_dot_product_attention, MultiheadAttention and the Transformer encoder,
with PyTorch's semantics, parameter names (so state_dicts line up) and initialisation.
Built on the public pytorchlite operators (matmul, softmax, where, ...) as user code would be."""

import copy

import pytorchlite
from pytorchlite.nn import functional as F
from pytorchlite.nn.functional import (  # noqa: F401  (PyTorch's nn.modules.activation has them too)
    _canonical_mask, _check_tensor, _dtype_or_none, _NEG_INF, multi_head_attention_forward,
    scaled_dot_product_attention)
from pytorchlite.nn import init
from pytorchlite.nn.conv import LayerNorm
from pytorchlite.nn.layers import Dropout, Linear, ModuleList
from pytorchlite.nn.module import Module
from pytorchlite.nn.parameter import Parameter


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
