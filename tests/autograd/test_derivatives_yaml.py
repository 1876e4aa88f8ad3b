"""derivatives.yaml checks at codegen time (errors name file:line and the entry), the
saved-variable inference, and what the generated nodes and bindings look like."""

import os
import textwrap

import pytest

import pytorchlite as P
from codegen.derivatives import load_derivative_entries
from codegen.gen import ROOT
from codegen.model import CodegenError, load_ops

OPS_YAML = textwrap.dedent("""\
    - func: mul(Tensor self, Tensor other) -> Tensor
      pointwise: self * other
    - func: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
      pointwise: self + alpha * other
    - func: sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
      kernel: {cpu: m.f}
    - func: twice(Tensor self) -> Tensor
      composite: self * 2
    - func: cat(Tensor[] tensors, int dim=0) -> Tensor
      variants: function
      kernel: {cpu: m.f}
    """)


def load(tmp_path, derivs):
    (tmp_path / "ops.yaml").write_text(OPS_YAML)
    (tmp_path / "derivatives.yaml").write_text(textwrap.dedent(derivs))
    ops = load_ops(str(tmp_path / "ops.yaml"))
    return load_derivative_entries(str(tmp_path / "derivatives.yaml"), ops)


@pytest.mark.parametrize("derivs, message", [
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad * othr
       other: grad * self
     """, "derivatives.yaml:2: mul(Tensor self, Tensor other) -> Tensor: formula for 'self': unknown name 'othr' "
          "(did you mean 'other'?)"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad * other
     """, "derivatives.yaml:1: mul(Tensor self, Tensor other) -> Tensor: Tensor argument 'other' has no formula "
          "(give one, or write 'other: non_differentiable')"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad * other
       other: grad * self
       othr: grad
     """, "derivatives.yaml:4: mul(Tensor self, Tensor other) -> Tensor: 'othr' is not an argument of mul "
          "(did you mean 'other'?)"),
    ("""\
     - name: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
       self: grad
       other: grad
       alpha: grad
     """, "derivatives.yaml:4: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor: 'alpha' is a Scalar, "
          "not a Tensor"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad *
       other: grad
     """, "derivatives.yaml:2: mul(Tensor self, Tensor other) -> Tensor: formula for 'self': does not parse"),
    ("""\
     - name: mul(Tensor self, Tensor b) -> Tensor
       self: grad
       b: grad
     """, "does not match the schema in ops.yaml (ops.yaml:1: mul(Tensor self, Tensor other) -> Tensor)"),
    ("""\
     - name: mull(Tensor self, Tensor other) -> Tensor
       self: grad
     """, "derivatives.yaml:1: mull(Tensor self, Tensor other) -> Tensor: no operator 'mull' in ops.yaml "
          "(did you mean 'mul'?)"),
    ("""\
     - name: twice(Tensor self) -> Tensor
       self: grad * 2
     """, "composite operators are differentiated through their parts"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad * other
       self: grad
     """, "derivatives.yaml:3: duplicate key 'self' (first at line 2)"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       node: times
       self: grad * other
       other: grad * self
     """, "derivatives.yaml:2: mul(Tensor self, Tensor other) -> Tensor: node must be a class name like "
          "'DivBackward0', got 'times'"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad * other
       other: grad * self
     - name: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
       node: MulBackward0
       self: grad
       other: grad
     """, "derivatives.yaml:4: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor: node name MulBackward0 "
          "is already used by the entry at line 1"),
    ("""\
     - name: mul(Tensor self, Tensor other) -> Tensor
       self: grad * other
       other: grad * self
       result: self_t * other + self * othr_t
     """, "derivatives.yaml:4: mul(Tensor self, Tensor other) -> Tensor: forward formula 'result': unknown name "
          "'othr_t' (did you mean 'other_t'?)"),
    ("""\
     - name: cat(Tensor[] tensors, int dim=0) -> Tensor
       tensors: grad.split(1, dim)
       result: auto_element_wise
     """, "derivatives.yaml:3: cat(Tensor[] tensors, int dim=0) -> Tensor: forward formula 'result': "
          "auto_element_wise cannot apply to a Tensor[] input"),
])
def test_errors_name_the_line(tmp_path, derivs, message):
    with pytest.raises(CodegenError) as e:
        load(tmp_path, derivs)
    assert message in str(e.value)


def test_saved_variable_inference(tmp_path):
    d = load(tmp_path, """\
        - name: mul(Tensor self, Tensor other) -> Tensor
          self: grad * other
          other: grad * self
        - name: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          self: grad
          other: grad * alpha
        - name: sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
          self: grad.expand(self.shape) if self.dim() > 0 else grad.reshape(self.size())
        - name: cat(Tensor[] tensors, int dim=0) -> Tensor
          tensors: grad.split_with_sizes([s[dim] for s in [t.shape for t in tensors]], dim)
        """)
    kinds = lambda name: {s.field: s.kind for s in d[name].saved.values()}   # noqa: E731
    assert kinds("mul") == {"s_self": "tensor", "s_other": "tensor"}
    assert kinds("add") == {"s_alpha": "value"}
    # metadata only: the tensor itself is not kept alive by the node
    assert kinds("sum") == {"s_self_shape": "meta", "s_self_dim": "meta"}
    assert kinds("cat") == {"s_tensors_shape": "meta_list", "s_dim": "value"}
    assert d["mul"].node_name == "MulBackward0"


def test_forward_formulas_become_jvp_functions(tmp_path):
    d = load(tmp_path, """\
        - name: mul(Tensor self, Tensor other) -> Tensor
          result: auto_element_wise
          self: grad * other
          other: grad * self
        - name: sum(Tensor self, int[1]? dim=None, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor
          result: auto_linear
          self: grad.expand(self.shape)
        - name: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          result: self_t + maybe_multiply(other_t, alpha)
          self: grad
          other: grad * alpha
        """)
    # element-wise: each backward formula with grad = the input's tangent, nothing saved
    assert "    grad = _tan[1]" in d["mul"].jvp_body
    assert "_acc = _fw.add(_acc, grad * self)" in "\n".join(d["mul"].jvp_body)
    assert d["sum"].jvp_body[-1] == "return _F.sum(input=self_t, dim=dim, keepdim=keepdim, dtype=dtype)"
    assert d["add"].jvp_body[-1] == "return self_t + _H.maybe_multiply(other_t, alpha)"
    # the forward formula reads the arguments directly: nothing extra is saved for backward
    assert {s.field for s in d["add"].saved.values()} == {"s_alpha"}


def test_generated_nodes_save_only_what_formulas_need():
    x = P.ones(3, requires_grad=True)
    s = x.sum()
    assert "_saved_self" not in type(s.grad_fn)._saved_names      # only the shape is kept
    assert "_saved_self_sym_sizes" in type(s.grad_fn)._saved_names
    assert s.grad_fn._saved_self_sym_sizes == (3,)
    y = x + P.ones(3)
    assert type(y.grad_fn)._saved_names == ("_saved_alpha",) and y.grad_fn._saved_alpha == 1
    z = x * P.ones(3)        # other needs no gradient: `self` is not saved for it
    assert z.grad_fn.s_self is None and z.grad_fn.s_other is not None


def test_bindings_keep_one_check_on_the_no_grad_path():
    import inspect
    from pytorchlite.generated import functions as F
    src = inspect.getsource(F.mul)
    # the one requires_grad test at the top level of the function body (nested ones run only on the grad path)
    checks = [ln.strip() for ln in src.splitlines() if ln.startswith("    if ") and "_requires_grad" in ln]
    assert len(checks) == 1 and checks[0].endswith("and _gm.grad:"), checks
    assert src.rstrip().endswith("return _pw_run(_d.OP_mul, (input, other,), (), out, False)")


def test_generated_files_are_current():
    from codegen.gen import render_all
    files = render_all(ROOT)
    for rel in ("generated/autograd_nodes.py", "generated/functions.py"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            assert f.read() == files[rel], f"{rel} is stale: run python -m codegen"
