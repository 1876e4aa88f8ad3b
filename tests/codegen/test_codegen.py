"""Codegen: strict parsing, errors that name the entry, deterministic output (the
edit-YAML / regenerate / import loop on a copy of the tree is in test_build.py)."""

import os
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


# --- overloads, aliases and composites written as module functions ---------------------------

def _render(tree):
    """render_all on a small tree (ops.yaml, maybe derivatives.yaml; no C prototypes)."""
    (tree / "kernels").mkdir(exist_ok=True)
    (tree / "kernels" / "cdefs.h").touch()
    return render_all(str(tree))


def test_overloads_load_as_operators_of_their_own(tmp_path):
    p = tmp_path / "ops.yaml"
    p.write_text(textwrap.dedent("""
        - func: foo(Tensor self) -> Tensor
          composite: self.neg()
        - func: foo.dim(Tensor self, int dim) -> Tensor
          composite: self.sum(dim)
        - func: bar(Tensor self) -> Tensor
          composite: self.neg()
    """))
    ops = load_ops(str(p))
    assert [(op.full_name, op.ident, op.overloaded) for op in ops] == [
        ("foo", "foo", True), ("foo.dim", "foo_dim", True), ("bar", "bar", False)]
    assert [op.function_pyname for op in ops] == ["_o_foo", "_o_foo_dim", "bar"]
    assert [op.method_pyname for op in ops] == ["_om_foo", "_om_foo_dim", "_m_bar"]


@pytest.mark.parametrize("text, message", [
    ("""
        - func: foo.a(Tensor self) -> Tensor
          composite: self.neg()
        - func: foo.a(Tensor self, int dim) -> Tensor
          composite: self.sum(dim)
     """, "ops.yaml:4: foo.a(Tensor self, int dim) -> Tensor: duplicate operator 'foo.a' (first at line 2)"),
    ("""
        - func: foo(Tensor self) -> Tensor
          composite: self.neg()
        - func: foo(Tensor self, int dim) -> Tensor
          composite: self.sum(dim)
     """, "ops.yaml:4: foo(Tensor self, int dim) -> Tensor: duplicate operator 'foo' (first at line 2)"),
    ("""
        - func: foo_bar(Tensor self) -> Tensor
          composite: self.neg()
        - func: foo.bar(Tensor self, int dim) -> Tensor
          composite: self.sum(dim)
     """, "ops.yaml:4: foo.bar(Tensor self, int dim) -> Tensor: 'foo.bar' and 'foo_bar' both become the "
          "identifier 'foo_bar'"),
    ("""
        - func: foo(Tensor self) -> Tensor
          composite: self.neg()
        - func: foo.dim(Tensor self, int dim) -> Tensor
          python_module: linalg
          variants: function
          composite: self.sum(dim)
     """, "ops.yaml:4: foo.dim(Tensor self, int dim) -> Tensor: the overloads of 'foo' live in one namespace"),
    ("""
        - func: foo(Tensor self) -> Tensor
          pointwise: -self
        - func: foo.other(Tensor self, Tensor other) -> Tensor
          pointwise: self - other
     """, "ops.yaml:4: foo.other(Tensor self, Tensor other) -> Tensor: 'foo' has a pointwise overload already"),
])
def test_overload_errors(tmp_path, text, message):
    assert _ops_error(tmp_path, text).startswith(message)


def test_overloads_one_call_cannot_tell_apart_are_rejected(tmp_path):
    (tmp_path / "ops.yaml").write_text(textwrap.dedent("""
        - func: foo(Tensor self, int dim) -> Tensor
          composite: self.sum(dim)
        - func: foo.again(Tensor self, int dim) -> Tensor
          composite: self.sum(dim)
    """))
    with pytest.raises(CodegenError) as e:
        _render(tmp_path)
    assert str(e.value).startswith("ops.yaml:4: foo.again(Tensor self, int dim) -> Tensor: takes the same arguments "
                                   "as ops.yaml:2: foo(Tensor self, int dim) -> Tensor, so 'foo' could never call it")


def test_overloaded_name_gets_a_parser(tmp_path):
    (tmp_path / "ops.yaml").write_text(textwrap.dedent("""
        - func: foo(Tensor self) -> Tensor
          composite: self.neg()
        - func: foo.dim(Tensor self, int dim, bool keepdim=False) -> Tensor
          variants: function, method, out
          composite: self.sum(dim, keepdim)
        - func: bar(Tensor self) -> Tensor
          composite: self.neg()
    """))
    src = _render(tmp_path)["generated/functions.py"]
    assert "\ndef foo(*args, **kwargs):" in src and "\ndef _m_foo(self, *args, **kwargs):" in src
    assert "\ndef _o_foo_dim(input, dim, keepdim=False, *, out=None):" in src
    assert "\ndef _s_o_foo_dim(input, dim, keepdim=False, *, out=None):" in src
    assert ("_P_foo = _ov.Overloads('foo', (('(Tensor input)', " in src
            and "'(Tensor input, int dim, bool keepdim = False, *, Tensor out = None)'" in src)
    assert "\ndef bar(input):" in src and "_s_o_bar" not in src     # one overload: its plain binding
    assert '"foo": foo,' in src and '"bar": bar,' in src


@pytest.mark.parametrize("text, message", [
    ("""
        - func: absolute(Tensor self) -> Tensor
          alias_of: abz
        - func: abs(Tensor self) -> Tensor
          composite: self.abs()
     """, "ops.yaml:2: absolute(Tensor self) -> Tensor: alias_of names 'abz', which is not declared "
          "(did you mean 'abs'?)"),
    ("""
        - func: abs(Tensor self) -> Tensor
          composite: self.abs()
        - func: absolute(Tensor input) -> Tensor
          alias_of: abs
     """, "ops.yaml:4: absolute(Tensor input) -> Tensor: an alias takes exactly its target's arguments and returns: "
          "abs(Tensor self) -> Tensor (ops.yaml:2)"),
    ("""
        - func: abs(Tensor self) -> Tensor
          composite: self.abs()
        - func: absolute(Tensor self) -> Tensor
          alias_of: abs
          composite: self.abs()
     """, "ops.yaml:4: absolute(Tensor self) -> Tensor: an alias runs its target's implementation: remove "
          "'composite'"),
    ("""
        - func: abs(Tensor self) -> Tensor
          composite: self.abs()
        - func: absolute(Tensor self) -> Tensor
          alias_of: abs
        - func: absolutely(Tensor self) -> Tensor
          alias_of: absolute
     """, "ops.yaml:6: absolutely(Tensor self) -> Tensor: alias_of names 'absolute', itself an alias of 'abs'"),
])
def test_alias_errors(tmp_path, text, message):
    assert _ops_error(tmp_path, text).startswith(message)


def test_alias_takes_its_targets_implementation(tmp_path):
    p = tmp_path / "ops.yaml"
    p.write_text(textwrap.dedent("""
        - func: neg(Tensor self) -> Tensor
          pointwise: -self
        - func: negative(Tensor self) -> Tensor
          variants: function
          alias_of: neg
    """))
    neg, negative = load_ops(str(p))
    assert negative.kind == "alias" and negative.impl is not None and negative.impl.full_name == "neg"
    assert negative.variants == ("function",) and neg.variants == ("function", "method", "inplace", "out")
    (tmp_path / "derivatives.yaml").write_text(textwrap.dedent("""
        - name: neg(Tensor self) -> Tensor
          self: -grad
    """))
    files = _render(tmp_path)
    src = files["generated/functions.py"]
    body = src[src.index("\ndef negative("):src.index("\nEXPORTS")]
    # the target's C kernel, node and jvp; its own name in errors
    assert "_d.OP_neg," in body and "_N.NegBackward0()" in body and "'negative', 'input', 1, 'Tensor'" in body
    assert "OP_negative = OP_neg" in files["generated/dispatch.py"]      # the target's entry
    (tmp_path / "derivatives.yaml").write_text(textwrap.dedent("""
        - name: negative(Tensor self) -> Tensor
          self: -grad
    """))
    with pytest.raises(CodegenError) as e:
        _render(tmp_path)
    assert "an alias is differentiated as its target" in str(e.value)


def _composite_tree(tmp_path, schema, module_src, name="thing"):
    (tmp_path / "ops.yaml").write_text(f"- func: {schema}\n  composite: pytorchlite._composites.testing.{name}\n")
    pkg = tmp_path / "pytorchlite" / "_composites"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "testing.py").write_text(textwrap.dedent(module_src))
    return tmp_path / "ops.yaml"


def test_module_composite_is_checked_against_its_schema(tmp_path):
    p = _composite_tree(tmp_path, 'thing(Tensor self, int[] dims=[0,1], *, str mode="a", ScalarType? dtype=None) -> '
                                  'Tensor', """
        def thing(self, dims=(0, 1), *, mode="a", dtype=None):
            return self
    """)
    op, = load_ops(str(p))
    assert op.composite_fn == "pytorchlite._composites.testing.thing" and op.composite is None
    src = _render(tmp_path)["generated/functions.py"]
    assert "_result = _cm.testing.thing(self, dims, mode=mode, dtype=dtype)" in src


@pytest.mark.parametrize("schema, module_src, message", [
    ("thing(Tensor self) -> Tensor", "def thin(self):\n    return self\n",
     "composite pytorchlite._composites.testing.thing: pytorchlite._composites.testing has no function 'thing' "
     "(did you mean 'thin'?)"),
    ("thing(Tensor self, Tensor other) -> Tensor", "def thing(a, b):\n    return a\n",
     "def thing(a, b) (pytorchlite/_composites/testing.py:1) must take (self, other), the schema's arguments"),
    ("thing(Tensor self, int dim=0) -> Tensor", "def thing(self, dim=1):\n    return self\n",
     "argument 'dim' of def thing (pytorchlite/_composites/testing.py:1) must default to 0, as in the schema"),
    ("thing(Tensor self, *, int dim=0) -> Tensor", "def thing(self, dim=0):\n    return self\n",
     "argument 'dim' of def thing (pytorchlite/_composites/testing.py:1) must be keyword-only as in the schema"),
    ("thing(Tensor self, int dim) -> Tensor", "def thing(self, dim=0):\n    return self\n",
     "argument 'dim' of def thing (pytorchlite/_composites/testing.py:1) has a default; the schema gives none"),
    ("thing(Tensor self) -> Tensor", "def thing(self, *args):\n    return self\n",
     "must take the schema's arguments by name, without *args, **kwargs or /"),
])
def test_module_composite_errors(tmp_path, schema, module_src, message):
    p = _composite_tree(tmp_path, schema, module_src)
    with pytest.raises(CodegenError) as e:
        load_ops(str(p))
    assert str(e.value).startswith(f"ops.yaml:1: {schema}: ")
    assert message in str(e.value)


def test_composite_module_must_exist_and_yaml_bodies_are_one_expression(tmp_path):
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          composite: pytorchlite._composites.no_such_module.foo
    """)
    assert msg.startswith("ops.yaml:2: foo(Tensor self) -> Tensor: composite pytorchlite._composites.no_such_module."
                          "foo: no module pytorchlite._composites.no_such_module")
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          composite: |
            y = self.neg()
            return y
    """)
    assert "a composite written in YAML is one Python expression" in msg
    msg = _ops_error(tmp_path, """
        - func: foo(Tensor self) -> Tensor
          composite: pytorchlite.foo
    """)
    assert "name a function as pytorchlite._composites.<module>.<name>" in msg


def test_every_module_composite_of_the_tree_is_a_real_function():
    """The functions ops.yaml names exist, import, and have the signature codegen read."""
    import importlib
    import inspect
    for op in load_ops(os.path.join(ROOT, "ops.yaml")):
        if op.composite_fn:
            module, _, name = op.composite_fn.rpartition(".")
            fn = getattr(importlib.import_module(module), name)
            params = [p.name for p in inspect.signature(fn).parameters.values()]
            assert params == [a.name + ("_" if a.name in ("from", "in", "is", "lambda") else "")
                              for a in op.schema.arguments if a not in op.schema.out_arguments], op.where
