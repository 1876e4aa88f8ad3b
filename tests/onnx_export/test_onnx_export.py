"""pytorchlite.onnx.export: models exported, checked by onnx and run in onnxruntime at batch
sizes 1 and 7 against pytorchlite (issue 13's targets)."""

import io
import os
import sys

import numpy as np
import pytest

import pytorchlite
from pytorchlite import nn

from onnx_util import export_and_compare, onnx, session  # noqa: E402  (skips without onnx/onnxruntime)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_jit_trace_exists():
    # the exporter is built on the JIT's tracer: without it, fail loudly rather than skip
    from pytorchlite import jit
    assert callable(jit.trace)


def test_mlp_names_initializers_dynamic_batch():
    pytorchlite.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3), nn.LogSoftmax(dim=1))
    proto = export_and_compare(m, lambda b: (pytorchlite.randn(b, 4),), ["x"], output_names=["logp"],
                               dynamic={"x": {0: "batch"}, "logp": {0: "batch"}})
    g = proto.graph
    assert [i.name for i in g.input] == ["x"]
    assert [o.name for o in g.output] == ["logp"]
    assert g.input[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    assert g.input[0].type.tensor_type.shape.dim[1].dim_value == 4
    assert g.output[0].type.tensor_type.shape.dim[0].dim_param == "batch"
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in g.initializer}
    assert set(inits) >= {"0.weight", "0.bias", "2.weight", "2.bias"}
    np.testing.assert_array_equal(inits["0.weight"], m[0].weight.detach().numpy())
    assert [n.op_type for n in g.node] == ["Transpose", "Gemm", "Tanh", "Transpose", "Gemm", "LogSoftmax"]


def test_digits_cnn():
    sys.path.insert(0, os.path.join(ROOT, "examples"))
    try:
        from train_digits import CNN
    finally:
        sys.path.pop(0)
    pytorchlite.manual_seed(1)
    m = CNN().eval()
    proto = export_and_compare(m, lambda b: (pytorchlite.randn(b, 1, 8, 8),), ["image"])
    ops = {n.op_type for n in proto.graph.node}
    assert {"Conv", "Relu", "MaxPool", "MatMul", "Add", "LogSoftmax"} <= ops


def test_batchnorm_exports_in_eval_mode():
    pytorchlite.manual_seed(2)
    m = nn.Sequential(nn.Conv2d(2, 3, 3), nn.BatchNorm2d(3), nn.ReLU())
    with pytorchlite.no_grad():
        m[1].running_mean.copy_(pytorchlite.randn(3))
        m[1].running_var.copy_(pytorchlite.rand(3) + 0.5)
        m[1].weight.copy_(pytorchlite.randn(3))
    m.train()
    x = pytorchlite.randn(2, 2, 5, 5)
    proto = pytorchlite.onnx.export(m, (x,), None, input_names=["x"])
    assert m.training            # exported in eval mode (as torch.onnx.export), the mode put back
    m.eval()
    got = session(proto).run(None, {"x": x.numpy()})[0]
    np.testing.assert_allclose(got, m(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    export_and_compare(m, lambda b: (pytorchlite.randn(b, 2, 5, 5),), ["x"])


@pytest.mark.parametrize("cell", ["GRU", "LSTM"])
def test_embedding_recurrent(cell):
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(12, 6)
            self.rnn = getattr(nn, cell)(6, 5, batch_first=True)
            self.out = nn.Linear(5, 3)

        def forward(self, tokens):
            h, _ = self.rnn(self.emb(tokens))
            return self.out(h)

    pytorchlite.manual_seed(3)
    m = Tagger().eval()
    proto = export_and_compare(m, lambda b: (pytorchlite.randint(0, 12, (b, 4)),), ["tokens"])
    assert "Gather" in {n.op_type for n in proto.graph.node}


def test_transformer_encoder_layer():
    pytorchlite.manual_seed(4)
    m = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.1, batch_first=True).eval()
    export_and_compare(m, lambda b: (pytorchlite.randn(b, 3, 8),), ["src"])


def test_two_inputs_two_outputs_and_file_targets(tmp_path):
    def f(x, y):
        s = x @ y.transpose(0, 1)
        return s.softmax(-1), s.amax(1)

    def make(b):
        return pytorchlite.randn(b, 4), pytorchlite.randn(5, 4)

    path = tmp_path / "two.onnx"
    proto = pytorchlite.onnx.export(f, make(2), str(path), input_names=["x", "y"], output_names=["p", "m"],
                                    dynamic_axes={"x": [0]})
    assert [o.name for o in proto.graph.output] == ["p", "m"]
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "x_dynamic_axes_1"
    buf = io.BytesIO()
    pytorchlite.onnx.export(f, make(2), buf, input_names=["x", "y"])
    assert onnx.load_from_string(buf.getvalue()).graph.node
    sess = session(onnx.load(str(path)))
    xs = make(7)
    got = sess.run(None, {"x": xs[0].numpy(), "y": xs[1].numpy()})
    for g, w in zip(got, f(*xs)):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-5, atol=1e-6)


def test_dynamic_sizes_in_views_and_factories():
    # a view whose size names the batch, and a tensor made with the batch size: both follow it
    def f(x):
        b = x.shape[0]
        h = x.view(b, 2, 3).permute(0, 2, 1).reshape(b * 3, 2)
        z = pytorchlite.zeros(b * 3, 2) + 1.5
        return (h + z)[1:, :1].flatten(), pytorchlite.cat([x, x], 1).unsqueeze(1)

    export_and_compare(f, lambda b: (pytorchlite.randn(b, 6),), ["x"])


def test_static_export_refuses_other_batch():
    m = nn.Linear(3, 2)
    proto = pytorchlite.onnx.export(m, (pytorchlite.randn(2, 3),), None)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 2
    with pytest.raises(Exception):
        session(proto).run(None, {proto.graph.input[0].name: np.ones((5, 3), np.float32)})


def test_mixed_dtypes_promote_like_pytorchlite():
    def f(i, x):
        return i + x, (i * 2).exp(), i > x, pytorchlite.where(i > 0, x, 0.5)

    export_and_compare(f, lambda b: (pytorchlite.randint(-3, 3, (b, 4)), pytorchlite.randn(b, 4)), ["i", "x"])


def test_unmapped_operator_names_operator_line_and_opset():
    def f(x):
        return pytorchlite.erfinv(x)

    with pytest.raises(pytorchlite.onnx.OnnxExportError) as e:
        pytorchlite.onnx.export(f, (pytorchlite.rand(3),), None)
    msg = str(e.value)
    assert "'erfinv'" in msg and "opset version 17" in msg
    with open(os.path.join(ROOT, "ops.yaml"), encoding="utf-8") as fh:
        line = next(i for i, t in enumerate(fh, 1) if t.startswith("- func: erfinv("))
    assert f"ops.yaml:{line}" in msg


def test_bad_arguments():
    m = nn.Linear(3, 2)
    x = (pytorchlite.randn(2, 3),)
    with pytest.raises(ValueError, match="opset_version 9"):
        pytorchlite.onnx.export(m, x, None, opset_version=9)
    with pytest.raises(ValueError, match="dynamic_axes names"):
        pytorchlite.onnx.export(m, x, None, dynamic_axes={"nope": [0]})
    with pytest.raises(ValueError, match="2 input_names"):
        pytorchlite.onnx.export(m, x, None, input_names=["a", "b"])
    with pytest.raises(TypeError, match="f must be"):
        pytorchlite.onnx.export(m, x, 3)


def test_opset_18():
    m = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4))

    def f(x):
        return m(x).mean(-1, keepdim=True)

    proto = export_and_compare(f, lambda b: (pytorchlite.randn(b, 4),), ["x"], opset_version=18)
    assert proto.opset_import[0].version == 18


def test_docstring_example():
    import doctest
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for t in doctest.DocTestFinder(recurse=False).find(pytorchlite.onnx.export, "export",
                                                       globs={"pytorchlite": pytorchlite}):
        runner.run(t)
    assert runner.summarize(verbose=False).attempted >= 3
    assert runner.summarize(verbose=False).failed == 0


def test_readme_example_runs(tmp_path, monkeypatch):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as fh:
        text = fh.read()
    section = text[text.index("## Exporting to ONNX"):]
    code = section[section.index("```python\n") + 10:section.index("\n```", section.index("```python"))]
    monkeypatch.chdir(tmp_path)
    scope = {}
    exec(compile(code, "README.md", "exec"), scope)
    assert scope["y"].shape == (7, 3)
    assert (tmp_path / "mlp.onnx").exists()


def test_inplace_operators_export_when_nothing_sees_the_write():
    m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(inplace=True), nn.Linear(4, 2))
    export_and_compare(m.eval(), lambda b: (pytorchlite.randn(b, 3),), ["x"])

    def copy_then_write(x):
        h = x * 2
        y = h + 0          # a copy: the write below does not reach it
        h.relu_()
        return y + h

    export_and_compare(copy_then_write, lambda b: (pytorchlite.randn(b, 3),), ["x"])

    def view_then_write(x):
        h = x * 2
        first = h[:, 0]    # a view: eager sees the write below through it
        h.relu_()
        return first + 1

    with pytest.raises(pytorchlite.onnx.OnnxExportError, match=r"relu_ cannot be exported: %\w+ shares its memory"):
        pytorchlite.onnx.export(view_then_write, (pytorchlite.randn(2, 3),), None)

    def into_view(x):
        h = x * 2
        h[:, 0].relu_()
        return h

    with pytest.raises(pytorchlite.onnx.OnnxExportError, match="shares its memory"):
        pytorchlite.onnx.export(into_view, (pytorchlite.randn(2, 3),), None)

    def into_view_of_a_temporary(x):
        h = (x * 2).t()    # the base (x * 2) is not read again: writing the view is invisible
        h.relu_()
        return h

    export_and_compare(into_view_of_a_temporary, lambda b: (pytorchlite.randn(b, 3),), ["x"])

    with pytest.raises(pytorchlite.onnx.OnnxExportError, match="writes the graph's input"):
        pytorchlite.onnx.export(lambda x: x.relu_(), (pytorchlite.randn(2, 3),), None)


def test_keep_initializers_as_inputs_and_verbose(capsys):
    m = nn.Linear(3, 2)
    proto = pytorchlite.onnx.export(m, (pytorchlite.randn(1, 3),), None, input_names=["x"],
                                    keep_initializers_as_inputs=True, verbose=True)
    assert [i.name for i in proto.graph.input] == ["x", "weight", "bias"]
    assert "Gemm" in capsys.readouterr().out


def test_names_given_never_collide_with_generated_ones():
    def f(x):
        return (x * 2).relu() + 1

    # "mul_1" and "relu_2" are what the exporter would call its own values
    export_and_compare(f, lambda b: (pytorchlite.randn(b, 3),), ["mul_1"], output_names=["relu_2"],
                       dynamic={"mul_1": {0: "b"}})


def test_verify_runs_onnxruntime_and_catches_a_mismatch(monkeypatch):
    m = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid())
    pytorchlite.onnx.export(m, (pytorchlite.randn(2, 3),), None, verify=True, dynamo=False)
    from pytorchlite.generated import onnx_table
    wrong = onnx_table.OPS["sigmoid"]._replace(fn=lambda g, self: g.op("Tanh", self))
    monkeypatch.setitem(onnx_table.OPS, "sigmoid", wrong)
    with pytest.raises(pytorchlite.onnx.OnnxExportError, match="output 'output' differs in onnxruntime"):
        pytorchlite.onnx.export(m, (pytorchlite.randn(2, 3),), None, verify=True)
