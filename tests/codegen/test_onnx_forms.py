"""ops.yaml's `onnx:` key: parsed strictly (errors name the entry), written to
generated/onnx_table.py, reported when missing; its ONNX operators exist at opset 17 and its
helpers are the exporter's."""

import inspect
import os
import subprocess
import sys
import textwrap

import pytest

from codegen import onnx as onnx_forms
from codegen.model import CodegenError, load_ops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load(tmp_path, text):
    p = tmp_path / "ops.yaml"
    p.write_text(textwrap.dedent(text))
    return load_ops(str(p))


def _error(tmp_path, form):
    with pytest.raises(CodegenError) as e:
        _load(tmp_path, f"""
            - func: foo(Tensor self) -> Tensor
              pointwise: self
            - func: bar(Tensor self, int dim0, int dim1) -> Tensor
              kernel: {{any: m.f}}
              onnx: {form}
        """)
    msg = str(e.value)
    assert msg.startswith("ops.yaml:4: bar(Tensor self, int dim0, int dim1) -> Tensor: "), msg
    return msg


def test_form_is_rewritten_for_the_table(tmp_path):
    ops = _load(tmp_path, """
        - func: bar(Tensor self, int dim0, int dim1) -> (Tensor, Tensor)
          kernel: {any: m.f}
          onnx: (Transpose(self, perm=swap(self, dim0, dim1)), None if opset < 18 else Neg(result[0]))
    """)
    form = ops[0].onnx
    assert form.ops == ("Neg", "Transpose")
    assert form.outputs == 2
    assert form.python == ("(g.op('Transpose', self, perm=g.swap(self, dim0, dim1)), "
                           "None if g.opset < 18 else g.op('Neg', g.results[0]))")


@pytest.mark.parametrize("form, message", [
    ("Transpose(self, perm=swp(self, dim0, dim1))", "unknown helper 'swp' (did you mean 'swap'?)"),
    ("Transpose(slef)", "'slef' is not an argument of the schema (did you mean 'self'?)"),
    ("Transpose(self", "onnx form does not parse"),
    ("Neg(self.data)", "reads only dtype and shape of a value, not '.data'"),
    ('"Neg(lambda x: x)"', "Lambda is not allowed"),
    ("Neg(**self)", "name each attribute"),
    ("[1, 2]", "must be an expression over ONNX operators"),
])
def test_bad_forms_name_the_entry(tmp_path, form, message):
    assert message in _error(tmp_path, form)


def test_several_results_need_a_tuple(tmp_path):
    with pytest.raises(CodegenError, match=r"ops.yaml:2: .*2 results, so the form is a tuple of 2"):
        _load(tmp_path, """
            - func: bar(Tensor self) -> (Tensor, Tensor)
              kernel: {any: m.f}
              onnx: Neg(self)
        """)


def test_alias_takes_its_targets_form(tmp_path):
    with pytest.raises(CodegenError, match="remove 'onnx'"):
        _load(tmp_path, """
            - func: foo(Tensor self) -> Tensor
              pointwise: self
              onnx: Identity(self)
            - func: bar(Tensor self) -> Tensor
              alias_of: foo
              onnx: Identity(self)
        """)


def test_report_lists_operators_without_a_form():
    out = subprocess.run([sys.executable, "-m", "codegen", "--onnx-report"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    head, *rest = out.splitlines()
    assert "operators have an ONNX form" in head
    assert any(line.strip().startswith("ops.yaml:") and ": erfinv (pointwise)" in line for line in rest)
    assert not any(": add (" in line for line in rest)


def test_table_has_every_operator_with_its_line():
    from pytorchlite.generated import onnx_table
    ops = load_ops(os.path.join(ROOT, "ops.yaml"))
    assert set(onnx_table.OPS) == {op.full_name for op in ops}
    for op in ops:
        e = onnx_table.OPS[op.full_name]
        assert e.where == f"ops.yaml:{op.line}"
        assert (e.fn is None) == (op.impl.onnx is None)
    # an alias exports as its target
    assert onnx_table.OPS["absolute"].fn is onnx_table.OPS["abs"].fn
    assert onnx_table.OPS["view"].view and not onnx_table.OPS["add"].view
    assert onnx_table.OPS["addcmul"].tensors == ("self", "tensor1", "tensor2")


def test_onnx_operator_names_exist_at_opset_17():
    onnx = pytest.importorskip("onnx")
    ops = load_ops(os.path.join(ROOT, "ops.yaml"))
    used = {name for op in ops if op.onnx for name in op.onnx.ops}
    unknown = sorted(n for n in used if not onnx.defs.has(n, 17, ""))
    assert not unknown, f"ONNX operators that opset 17 does not have: {unknown}"


def test_helpers_are_the_builders_methods():
    from pytorchlite.onnx._builder import Builder
    for name in onnx_forms.HELPERS:
        assert callable(getattr(Builder, name, None)), name
        assert not name.startswith("_")
    public = {n for n, v in inspect.getmembers(Builder, inspect.isfunction) if not n.startswith("_")}
    assert public - {"op", "fresh"} == set(onnx_forms.HELPERS)
