"""Codegen: strict parsing, errors that name the entry, deterministic output (the
edit-YAML / regenerate / import loop on a copy of the tree is in test_build.py)."""

import subprocess
import sys
import textwrap

import pytest

from codegen import cexpr
from codegen.gen import ROOT, render_all
from codegen.model import CodegenError, load_ops
from codegen.schema import SchemaError, parse_schema

# --- schema grammar ------------------------------------------------------------------------

PYTORCH_SCHEMAS = [
    "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)",
    "add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    "max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)",
    "sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
    "chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]".replace("(a -> *)", "(a)"),
    "conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=1, SymInt[2] padding=0) -> Tensor",
    "gelu(Tensor self, *, str approximate=\"none\") -> Tensor",
    "var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
    "split.Tensor(Tensor(a) self, SymInt split_size, int dim=0) -> Tensor(a)[]",
    "layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, float eps=1e-05) -> Tensor",
]


@pytest.mark.parametrize("text", PYTORCH_SCHEMAS)
def test_pytorch_schemas_round_trip(text):
    s = parse_schema(text)
    assert str(s) == text


def test_schema_parts():
    s = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)")
    assert s.name == "max" and s.overload == "dim"
    assert [a.name for a in s.positional] == ["self", "dim", "keepdim"]
    assert [r.name for r in s.returns] == ["values", "indices"]
    out = parse_schema("add.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)")
    assert [a.name for a in out.out_arguments] == ["out"]
    assert parse_schema("add_(Tensor(a!) self, Tensor other) -> Tensor(a!)").is_inplace


@pytest.mark.parametrize("text, message", [
    ("add(Tensr self) -> Tensor", "unknown type 'Tensr' (did you mean 'Tensor'?)"),
    ("add(Tensor self)->Tensor", "missing ' -> '"),
    ("add(Tensor self, Tensor self) -> Tensor", "duplicate argument name 'self'"),
    ("add(Tensor self, int x=None) -> Tensor", "default None for non-optional type"),
    ("add(Tensor  self) -> Tensor", "round-trip"),
    ("add(Tensor self, *, *, int x) -> Tensor", "'*' given twice"),
])
def test_schema_errors(text, message):
    with pytest.raises(SchemaError, match=None) as e:
        parse_schema(text)
    assert message in str(e.value)


# --- pointwise body language -------------------------------------------------------------

def test_body_parses_with_c_precedence():
    tree = cexpr.parse_body("self > 0 ? self : alpha * expm1(self)")
    assert tree[0] == "?:"
    code = cexpr.emit(tree, "float", "f32", lambda n: "v_" + n)
    assert "ptl_expm1_f32(v_self)" in code and "((float)0)" in code


@pytest.mark.parametrize("body, message", [
    ("self +", "unexpected end"),
    ("self + (other", "expected ')'"),
    ("self $ other", "cannot read"),
    ("self other", "unexpected 'other'"),
])
def test_body_syntax_errors(body, message):
    with pytest.raises(cexpr.BodyError) as e:
        cexpr.parse_body(body)
    assert message in str(e.value)


def test_body_validation():
    tree = cexpr.parse_body("ex(self) + beta")
    problems = cexpr.validate(tree, ["self"], {"f"})
    assert any("unknown name 'beta'" in p for p in problems)
    assert any("unknown function 'ex'" in p and "did you mean 'exp'" in p for p in problems)
    assert cexpr.validate(cexpr.parse_body("exp(self)"), ["self"], {"i"})[0].startswith(
        "function 'exp' has no integer version")


# --- ops.yaml validation -----------------------------------------------------------------

def _ops_error(tmp_path, text):
    p = tmp_path / "ops.yaml"
    p.write_text(textwrap.dedent(text))
    with pytest.raises(CodegenError) as e:
        load_ops(str(p))
    return str(e.value)


def test_unknown_key_names_entry_and_line(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          pointwise: self
        - func: bar(Tensor self) -> Tensor
          pointwise: self
          dtyeps: all
    """)
    assert msg.startswith("ops.yaml:4: bar(Tensor self) -> Tensor: unknown key 'dtyeps' (did you mean 'dtypes'?)")


def test_unknown_type(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensr self) -> Tensor
          pointwise: self
    """)
    assert msg.startswith("ops.yaml:2: foo(Tensr self) -> Tensor: unknown type 'Tensr'")


def test_duplicate_operator(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          pointwise: self
        - func: foo(Tensor self) -> Tensor
          pointwise: -self
    """)
    assert "ops.yaml:4:" in msg and "duplicate operator 'foo' (first at line 2)" in msg


def test_duplicate_key(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          pointwise: self
          pointwise: -self
    """)
    assert "ops.yaml:4: duplicate key 'pointwise'" in msg


def test_body_that_does_not_parse(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          pointwise: self * (2
    """)
    assert msg.startswith("ops.yaml:2: foo(Tensor self) -> Tensor: pointwise body does not parse")


def test_function_without_dtype_support(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          pointwise: exp(self)
          dtypes: all
    """)
    assert "function 'exp' has no bool/integer version" in msg


def test_two_kinds_rejected(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          pointwise: self
          composite: neg(self)
    """)
    assert "give exactly one of" in msg


def test_method_needs_self(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(int n) -> Tensor
          kernel: {cpu: a.b}
          variants: function, method
    """)
    assert "needs 'Tensor self'" in msg


def test_inplace_kernel_needs_a_kernel_with_an_inplace_variant(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          kernel: {cpu: a.b}
          variants: function, method
          inplace_kernel: true
    """)
    assert msg.startswith("ops.yaml:2: foo(Tensor self) -> Tensor: 'inplace_kernel' needs a kernel entry with an "
                          "'inplace' variant")
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          kernel: {cpu: a.b}
          variants: function, inplace
          inplace_kernel: yes please
    """)
    assert "'inplace_kernel' must be true or false" in msg


# --- determinism and freshness -------------------------------------------------------------

def test_codegen_is_deterministic():
    assert render_all(ROOT) == render_all(ROOT)


def test_generated_tree_is_up_to_date():
    """generated/ must be what the current YAML and templates produce."""
    r = subprocess.run([sys.executable, "-m", "codegen", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_generated_files_carry_header():
    for rel, content in render_all(ROOT).items():
        if rel.endswith((".py", ".c", ".h")):
            first = content.splitlines()[0]
            assert "generated by codegen from " in first and "; do not edit" in first, rel
