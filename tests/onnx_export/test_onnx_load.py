"""pytorchlite.onnx.load: an exported model read back runs with pytorchlite operators and gives
the original model's outputs (the round trip of issue 13)."""

import os
import sys

import numpy as np
import pytest

import pytorchlite
from pytorchlite import nn

from onnx_util import onnx  # noqa: E402,F401  (skips without onnx/onnxruntime)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _round_trip(model, make, tmp_path, names):
    path = str(tmp_path / "m.onnx")
    pytorchlite.onnx.export(model, make(2), path, input_names=names, dynamic_axes={n: {0: "b"} for n in names})
    back = pytorchlite.onnx.load(path)
    assert isinstance(back, nn.Module)
    for b in (1, 7):
        xs = make(b)
        with pytorchlite.no_grad():
            want, got = model(*xs), back(*xs)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    return back


def test_cnn_round_trip(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        from train_digits import CNN
    finally:
        sys.path.pop(0)
    pytorchlite.manual_seed(0)
    _round_trip(CNN().eval(), lambda b: (pytorchlite.randn(b, 1, 8, 8),), tmp_path, ["x"])


def test_transformer_and_lstm_round_trip(tmp_path):
    pytorchlite.manual_seed(1)
    enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).eval()
    _round_trip(enc, lambda b: (pytorchlite.randn(b, 3, 8),), tmp_path, ["src"])

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.rnn = nn.Embedding(9, 4), nn.LSTM(4, 5, batch_first=True)

        def forward(self, x):
            return self.rnn(self.emb(x))[0].flip(1)

    _round_trip(Tagger().eval(), lambda b: (pytorchlite.randint(0, 9, (b, 4)),), tmp_path, ["tokens"])


def test_loaded_module_traces_to_a_pytorchlite_graph(tmp_path):
    m = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.GELU()).eval()
    back = _round_trip(m, lambda b: (pytorchlite.randn(b, 3),), tmp_path, ["x"])
    graph = pytorchlite.jit.trace(back, (pytorchlite.randn(2, 3),)).graph
    assert any(n.site.name in ("matmul", "addmm") for n in graph.nodes)


def test_unsupported_operator_is_named(tmp_path):
    node = onnx.helper.make_node("Det", ["x"], ["y"], name="det0")
    g = onnx.helper.make_graph([node], "g", [onnx.helper.make_tensor_value_info("x", 1, [2, 2])],
                               [onnx.helper.make_tensor_value_info("y", 1, [])])
    with pytest.raises(pytorchlite.onnx.OnnxImportError, match="ONNX operator Det .node 'det0'. is not supported"):
        pytorchlite.onnx.load(onnx.helper.make_model(g))


def test_wrong_number_of_inputs():
    m = pytorchlite.onnx.load(pytorchlite.onnx.export(nn.Linear(2, 2), (pytorchlite.ones(1, 2),), None))
    with pytest.raises(TypeError, match="takes 1 inputs"):
        m(pytorchlite.ones(1, 2), pytorchlite.ones(1, 2))


def test_load_docstring_example():
    import doctest
    runner = doctest.DocTestRunner()
    for t in doctest.DocTestFinder(recurse=False).find(pytorchlite.onnx.load, "load",
                                                       globs={"pytorchlite": pytorchlite}):
        runner.run(t)
    assert runner.summarize(verbose=False).attempted >= 3
    assert runner.summarize(verbose=False).failed == 0
