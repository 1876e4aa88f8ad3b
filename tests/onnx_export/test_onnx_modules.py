"""More modules and functions through export and onnxruntime at batch sizes 1 and 7: layers,
activations, attention, recurrent stacks, reductions, sorting, padding, indexing."""

import numpy as np
import pytest

import pytorchlite as t
from pytorchlite import nn

from onnx_util import export_and_compare  # noqa: E402  (skips without onnx/onnxruntime)

F = nn.functional

CASES = {
 "conv1d": (nn.Conv1d(2, 3, 3, stride=2, padding=1), lambda b: (t.randn(b, 2, 9),)),
    "convT": (nn.ConvTranspose2d(2, 3, 3, stride=2, padding=1, output_padding=1), lambda b: (t.randn(b, 2, 4, 4),)),
    "avgpool": (nn.AvgPool2d(2), lambda b: (t.randn(b, 2, 4, 4),)),
    "adaptive": (nn.AdaptiveAvgPool2d(1), lambda b: (t.randn(b, 2, 4, 4),)),
    "adaptive2": (nn.AdaptiveAvgPool2d((2, 2)), lambda b: (t.randn(b, 2, 4, 4),)),
    "acts": (nn.Sequential(nn.GELU(), nn.SiLU(), nn.Softplus(), nn.LeakyReLU(), nn.ELU(), nn.Hardtanh(), nn.Mish(), nn.Hardswish(), nn.Hardsigmoid(), nn.ReLU6(), nn.Sigmoid(), nn.Tanh(), nn.Softmax(-1)), lambda b: (t.randn(b, 6),)),
    "gelu_tanh": (nn.GELU("tanh"), lambda b: (t.randn(b, 6),)),
    "dropout_ln": (nn.Sequential(nn.Dropout(0.3), nn.LayerNorm(6)), lambda b: (t.randn(b, 6),)),
    "groupnorm": (nn.GroupNorm(2, 4), lambda b: (t.randn(b, 4, 3),)),
    "mha": (nn.MultiheadAttention(8, 2, batch_first=True), lambda b: (t.randn(b, 3, 8), t.randn(b, 3, 8), t.randn(b, 3, 8))),
    "flatten": (nn.Sequential(nn.Flatten(), nn.Unflatten(1, (3, 4))), lambda b: (t.randn(b, 2, 6),)),
    "rnn_tanh": (nn.RNN(3, 4, nonlinearity="relu"), lambda b: (t.randn(5, b, 3),)),
    "bigru": (nn.GRU(3, 4, num_layers=2, bidirectional=True, batch_first=True), lambda b: (t.randn(b, 5, 3),)),
    "enc_normfirst": (nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, 16, norm_first=True, activation="gelu", batch_first=True), 2), lambda b: (t.randn(b, 4, 8),)),
    "pad": (lambda x: F.pad(x, (1, 2)), lambda b: (t.randn(b, 3),)),
    "topk": (lambda x: x.topk(2, -1)[0], lambda b: (t.randn(b, 5),)),
    "maxdim": (lambda x: x.max(1), lambda b: (t.randn(b, 5),)),
    "cumsum_sort": (lambda x: x.cumsum(1) + x.sort(1)[0], lambda b: (t.randn(b, 5),)),
    "sdpa_causal": (lambda q: F.scaled_dot_product_attention(q, q, q, is_causal=True), lambda b: (t.randn(b, 2, 4, 8),)),
    "index": (lambda x: x[:, 1:3] * x[:, -1:] + x[..., None][:, 0], lambda b: (t.randn(b, 5),)),
    "mean_var": (lambda x: x.mean(0) + x.var(1, keepdim=True).sum() + x.std(), lambda b: (t.randn(b, 5),)),
    "chunk": (lambda x: x.chunk(2, 1)[1] * x.split([2, 3], 1)[0][:, :1], lambda b: (t.randn(b, 5),)),
    "normalize": (lambda x: F.normalize(x, dim=1), lambda b: (t.randn(b, 5),)),
    "ce_softmax": (lambda x: F.softmax(x, 1).log() - F.log_softmax(x, 1), lambda b: (t.randn(b, 5),)),
    "bmm_baddbmm": (lambda x: t.bmm(x, x.transpose(1, 2)), lambda b: (t.randn(b, 3, 4),)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_module(name):
    model, make = CASES[name]
    t.manual_seed(0)
    if isinstance(model, nn.Module):
        model.eval()
    n = len(make(1))
    # a recurrent net over dim 0 (time first) has batch on dim 1
    dynamic = {f"x{i}": {1: "batch"} for i in range(n)} if name == "rnn_tanh" else None
    export_and_compare(model, make, [f"x{i}" for i in range(n)], dynamic=dynamic)


def test_unrolled_time_axis_cannot_be_dynamic():
    m = nn.GRU(3, 4).eval()
    with pytest.raises(t.onnx.OnnxExportError, match="change with the size of the dynamic axis .time."):
        t.onnx.export(m, (t.randn(5, 2, 3),), None, input_names=["x"], dynamic_axes={"x": {0: "time"}})


def test_batch_and_sequence_both_dynamic():
    # sizes that are products of two symbols (batch * heads, seq * batch) follow both
    t.manual_seed(5)
    enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=False).eval()
    proto = t.onnx.export(enc, (t.randn(3, 2, 8),), None, input_names=["src"], output_names=["out"],
                          dynamic_axes={"src": {0: "seq", 1: "batch"}, "out": {0: "seq", 1: "batch"}})
    dims = [d.dim_param for d in proto.graph.input[0].type.tensor_type.shape.dim[:2]]
    assert dims == ["seq", "batch"]
    from onnx_util import session
    sess = session(proto)
    for seq, batch in ((1, 1), (5, 7), (4, 3)):
        x = t.randn(seq, batch, 8)
        got = sess.run(None, {"src": x.numpy()})[0]
        with t.no_grad():
            want = enc(x).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

    def flat(x):            # (B, T, E) -> (B * T, E) -> (B, T * E): a product, then a product again
        b, s, e = x.shape
        return (x.reshape(b * s, e) * 2).reshape(b, s * e) + t.zeros(b, s * e)

    proto = t.onnx.export(flat, (t.randn(2, 3, 4),), None, input_names=["x"],
                          dynamic_axes={"x": {0: "b", 1: "s"}})
    x = t.randn(5, 6, 4)
    np.testing.assert_allclose(session(proto).run(None, {"x": x.numpy()})[0], flat(x).numpy(), rtol=1e-6)


def test_inplace_operators_of_their_own_and_einsum():
    def f(x):
        scores = t.einsum("bij,bkj->bik", x, x)
        mask = scores > 0.5
        scores.masked_fill_(mask, -1.0)
        buf = t.empty(x.shape[0], 2)
        buf.zero_()
        acc = t.zeros(x.shape[0], 3, 3)
        acc.copy_(scores)
        return acc.round(decimals=2).ravel(), buf.fill_(0.5), x.float_power(2)

    export_and_compare(f, lambda b: (t.rand(b, 3, 4),), ["x"])
