"""Codegen of the declarations beyond the schema: structured kernels (the C call checked
against its prototype), Tensor's Python operators (`operators:`) and the pointwise rules
(`check:`, `kernel_name:`, `dtype_errors:`, `out_dtype_error:`, `all_numbers:`)."""

import textwrap

import pytest

from codegen import structured
from codegen.gen import ROOT
from codegen.model import CodegenError, load_ops
from codegen.operators import resolve

CDEFS = """
/* a comment; int ptl_commented(int x); */
int ptl_rows(int dtype, intptr_t x, intptr_t y, int64_t outer, int64_t n,
             int64_t inner, int flag);
int ptl_desc(const ptl_tensor *in, ptl_tensor *out, double scale, int64_t *count);
void ptl_nothing(int x);
int ptl_mat(int dtype, intptr_t c, intptr_t a, int64_t m, int64_t rs, int64_t cs);
int ptl_batch(const ptl_tensor *ts, int flag, int32_t *info);
int ptl_piv(intptr_t a, int32_t *piv, int32_t *info);
"""


def _load(tmp_path, text):
    p = tmp_path / "ops.yaml"
    p.write_text(textwrap.dedent(text))
    return load_ops(str(p))


def _views(tmp_path, text):
    (tmp_path / "kernels").mkdir(exist_ok=True)
    (tmp_path / "kernels" / "cdefs.h").write_text(CDEFS)
    return structured.views(_load(tmp_path, text), str(tmp_path))


def _error(fn, *args):
    with pytest.raises(CodegenError) as e:
        fn(*args)
    return str(e.value)


# --- C prototypes ------------------------------------------------------------------------------

def test_prototypes_are_parsed_without_comments():
    protos = structured.parse_prototypes(CDEFS)
    assert sorted(protos) == ["ptl_batch", "ptl_desc", "ptl_mat", "ptl_nothing", "ptl_piv", "ptl_rows"]
    rows = protos["ptl_rows"]
    assert rows.ret == "int" and [p.name for p in rows.params] == ["dtype", "x", "y", "outer", "n", "inner", "flag"]
    kinds = [p.kind for p in protos["ptl_desc"].params]
    assert kinds == ["descriptor", "descriptor", "float", "pointer"]


def test_every_declared_call_matches_the_real_prototypes():
    """The structured entries of ops.yaml check out against kernels/cdefs.h."""
    ops = load_ops(f"{ROOT}/ops.yaml")
    views = structured.views(ops, ROOT)
    assert {v.name for v in views} >= {"_softmax", "_log_softmax"}


# --- structured calls ----------------------------------------------------------------------------

GOOD = """
    - func: rows(Tensor self, int dim) -> Tensor
      structured:
        meta: m.rows_meta
        precomputed: [outer, n, inner]
        cpu: ptl_rows(dtype=self.dtype, x=self, y=result, outer=outer, n=n, inner=inner, flag=dim)
"""


def test_a_good_call_binds_every_parameter(tmp_path):
    (v,) = _views(tmp_path, GOOD)
    assert v.entry == "rows__cpu" and v.function == "ptl_rows"
    assert v.inputs == [("self", True)]          # an intptr_t operand is read contiguous
    assert v.args[0] == "_i_self._dtype.code" and v.args[-1] == "int(dim)"


@pytest.mark.parametrize("call, message", [
    ("ptl_rowz(x=self)", "no C prototype 'ptl_rowz' in kernels/cdefs.h (did you mean 'ptl_rows'?)"),
    ("ptl_nothing(x=dim)", "ptl_nothing returns void, not an int status"),
    ("ptl_rows(dtype=self.dtype, x=self, y=result, outer=outer, n=n, inner=inner)",
     "parameter int flag is not bound"),
    ("ptl_rows(self.dtype, self, result, outer, n, inner, 0, dtype=1)", "bound twice"),
    ("ptl_rows(dtype=self.dtype, x=self, y=result, outer=outer, n=n, inner=inner, flag=0, extra=1)",
     "ptl_rows has no parameter 'extra'"),
    ("ptl_rows(dtype=self, x=self, y=result, outer=outer, n=n, inner=inner, flag=0)",
     "parameter 'int dtype' <- self: a tensor needs"),
    ("ptl_rows(dtype=self.dtype, x=dim, y=result, outer=outer, n=n, inner=inner, flag=0)",
     "the schema's int 'dim' does not fit intptr_t"),
    ("ptl_rows(dtype=self.dtype, x=self, y=result, outer=outre, n=n, inner=inner, flag=0)",
     "'outre' is not an argument, an output or a precomputed value"),
    ("ptl_rows(dtype=self.dtype, x=self, y=result, outer=outer, n=n, inner=inner, flag=1.5)",
     "the number 1.5 does not fit int"),
    ("self + 1", "expected a call of a C function"),
])
def test_call_errors_name_the_entry(tmp_path, call, message):
    text = GOOD.replace("ptl_rows(dtype=self.dtype, x=self, y=result, outer=outer, n=n, inner=inner, flag=dim)", call)
    msg = _error(_views, tmp_path, text)
    assert msg.startswith("ops.yaml:2: rows(Tensor self, int dim) -> Tensor: structured cpu: "), msg
    assert message in msg, msg


def test_contiguous_descriptors_and_pointers_are_read_contiguous(tmp_path):
    (v,) = _views(tmp_path, """
        - func: count(Tensor self, Tensor other, float scale) -> Tensor
          structured:
            meta: m.count_meta
            cpu: ptl_desc(contiguous(self), result, scale=scale, count=other)
    """)
    # contiguous(X) describes a contiguous operand; a typed pointer is always read contiguous
    assert v.inputs == [("self", True), ("other", True)]
    assert v.ndesc == 2 and v.args[:2] == ["_S.describe(_descs, 0, _i_self)",
                                           "_S.describe(_descs, 1, _o_result, _spec)"]
    (v,) = _views(tmp_path, """
        - func: count(Tensor self, Tensor other, float scale) -> Tensor
          structured:
            meta: m.count_meta
            cpu: ptl_desc(self, result, scale=scale, count=other)
    """)
    assert v.inputs == [("self", False), ("other", True)]     # a descriptor takes any strides


@pytest.mark.parametrize("call, message", [
    ("ptl_desc(contiguous(result), result, scale=1.0, count=null)", "contiguous() takes one tensor argument"),
    ("ptl_desc(contiguous(self, self), result, scale=1.0, count=null)", "contiguous() takes one tensor argument"),
    ("ptl_rows(dtype=self.dtype, x=contiguous(self), y=result, outer=1, n=1, inner=1, flag=0)",
     "contiguous() is for a ptl_tensor * parameter"),
])
def test_contiguous_errors(tmp_path, call, message):
    msg = _error(_views, tmp_path, f"""
        - func: count(Tensor self) -> Tensor
          structured:
            meta: m.count_meta
            cpu: {call}
    """)
    assert message in msg, msg


def test_a_precomputed_value_may_not_shadow_an_argument(tmp_path):
    text = GOOD.replace("precomputed: [outer, n, inner]", "precomputed: [outer, n, inner, dim]")
    assert "precomputed value 'dim' has the name of an argument, output or scratch tensor" in _error(_views, tmp_path, text)


def test_named_returns_are_return_types_only_where_declared(tmp_path):
    text = """
        - func: pair(Tensor self) -> (Tensor values, Tensor indices)
          structured:
            meta: m.pair_meta
            cpu: ptl_desc(self, values, scale=1.0, count=indices)
    """
    (v,) = _views(tmp_path, text)
    assert v.outputs == ["values", "indices"] and not v.named_returns     # a plain tuple, as aten's
    (tmp_path / "pytorchlite").mkdir()
    (tmp_path / "pytorchlite" / "return_types.py").write_text('pair = _structseq("pair", ("values", "indices"))\n')
    (v,) = _views(tmp_path, text)
    assert v.named_returns


def test_structured_block_errors(tmp_path):
    assert "needs 'meta: module.function'" in _error(_load, tmp_path, """
        - func: rows(Tensor self) -> Tensor
          structured: {cpu: "ptl_rows()"}
    """)
    assert "unknown key 'gpu'" in _error(_load, tmp_path, """
        - func: rows(Tensor self) -> Tensor
          structured: {meta: m.f, gpu: "ptl_rows()"}
    """)
    assert "give exactly one of" in _error(_load, tmp_path, """
        - func: rows(Tensor self) -> Tensor
          kernel: {cpu: a.b}
          structured: {meta: m.f, cpu: "ptl_rows()"}
    """)


def test_structured_entry_dispatches_to_the_generated_impl(tmp_path):
    (op,) = _load(tmp_path, GOOD)
    assert op.kind == "kernel" and op.kernels == (("cpu", "pytorchlite.generated.structured.rows__cpu"),)


# --- strided operands, descriptor lists, scratch, init, finish -----------------------------------

STRIDED = """
    - func: mat(Tensor self, Tensor other) -> Tensor
      structured:
        meta: m.mat_meta
        cpu: ptl_mat(dtype=self.dtype, c=result, a=self.data_ptr(), m=self.size(-2), rs=self.stride(0), cs=other.stride(1))
"""

BATCHED = """
    - func: fact(Tensor A, bool flag=False) -> (Tensor R, Tensor info)
      variants: function
      structured:
        meta: m.fact_meta
        precomputed: [eye]
        scratch: [work, pivots]
        init: {work: A, R: eye, info: 0}
        cpu: ptl_batch(ts=[R, A, work], flag=flag, info=info)
        finish: m2.fact_finish
"""


def test_strided_operands_are_read_in_place(tmp_path):
    (v,) = _views(tmp_path, STRIDED)
    assert v.inputs == [("self", False), ("other", False)]      # not made contiguous
    assert v.args[2] == "_i_self._storage.ptr + _i_self._offset * _i_self._dtype.itemsize"
    assert v.args[3:] == ["_i_self._shape[-2]", "_i_self._stride[0]", "_i_other._stride[1]"]
    # one output and nothing precomputed: the meta function may answer with a bare (shape, dtype)
    assert v.bare


def test_descriptor_lists_scratch_init_and_finish(tmp_path):
    (op,) = _load(tmp_path, BATCHED)
    st = op.structured
    assert (st.scratch, st.init, st.finish) == (("work", "pivots"), (("work", "A"), ("R", "eye"), ("info", "0")),
                                                "m2.fact_finish")
    (v,) = _views(tmp_path, BATCHED)
    assert v.ndesc == 3 and v.args[0] == "_descs"
    assert v.describe == ["_S.describe(_descs, 0, _o_R, _m.outputs[0])", "_S.describe(_descs, 1, _i_A)",
                          "_S.describe(_descs, 2, _s_work)"]
    # a tensor argument is copied in (None: nothing), a precomputed value may be a tensor or a number
    assert v.inits == ["if _i_A is not None: _S.copy_into(_s_work, _i_A)", "_S.init(_o_R, _v['eye'])",
                       "_S.fill(_o_info, 0)"]
    assert v.args[2] == "(_NULL if _o_info is None else _ffi.cast('int32_t *', " \
                        "_o_info._storage.ptr + _o_info._offset * _o_info._dtype.itemsize))"
    assert (v.finish_module, v.finish_function, v.scratch, v.bare) == ("m2", "fact_finish", ["work", "pivots"], False)


PIVOTS = """
    - func: lu(Tensor A) -> Tensor
      variants: function
      structured:
        meta: m.lu_meta
        scratch: [piv, info]
        init: {result: A}
        cpu: ptl_piv(a=result, piv=piv, info=info)
        finish: m.lu_finish
"""


def test_scratch_bound_to_typed_pointers_are_c_arrays(tmp_path):
    (v,) = _views(tmp_path, PIVOTS)
    assert v.carrays == {"piv": "int32_t[]", "info": "int32_t[]"} and v.args[1:] == ["_s_piv", "_s_info"]
    src = _render([v])
    compile(src, "structured.py", "exec")
    assert "_s_piv = _S.carray(\"int32_t[]\", _v['piv'])" in src
    msg = _error(_views, tmp_path, PIVOTS.replace("init: {result: A}", "init: {result: A, info: 0}"))
    assert "init: scratch 'info' is a C array (bound to a int32_t *): it starts zeroed" in msg, msg


def _render(views):
    from codegen.gen import _env
    for v in views:
        v.meta_alias, v.finish_alias = "_meta0", ("_meta1" if v.finish_module else None)
    return _env().get_template("structured.py.j2").render(header="test", views=views, meta_modules=[])


def test_a_launcher_gets_a_meta_and_the_scratch(tmp_path):
    launched = STRIDED + "        cuda: pytorchlite.cuda._kernels.mat\n"
    views = {v.device: v for v in _views(tmp_path, launched)}
    src = _render([views["cuda"]])
    compile(src, "structured.py", "exec")
    assert "_m = _S.Meta(_m)" in src          # a bare answer: the launcher takes a Meta
    views = {v.device: v for v in _views(tmp_path, BATCHED + "        cuda: pytorchlite.cuda._kernels.fact\n")}
    src = _render([views["cuda"]])
    compile(src, "structured.py", "exec")
    assert "work=_s_work, pivots=_s_pivots)" in src and "_meta1.fact_finish(" in src


def test_generated_impls_compile(tmp_path):
    src = _render(_views(tmp_path, STRIDED) + _views(tmp_path, BATCHED.replace("fact", "fac2")) +
                  _views(tmp_path, GOOD))
    compile(src, "structured.py", "exec")
    mat, fac2, rows = src.split("\ndef ")[1:]
    assert "if _m.__class__ is tuple:" in mat and "if _m.__class__ is tuple:" not in rows
    assert "_S.copy_into(_s_work, _i_A)" in fac2 and "return _meta1.fac2_finish(_m, _o_R, _o_info, _s_work, _s_pivots, )" in fac2


@pytest.mark.parametrize("call, message", [
    ("ptl_mat(dtype=self.dtype, c=result, a=self.data_ptr(), m=self.size(0), rs=self.data_ptr(), cs=1)",
     "data_ptr() takes no argument and needs an intptr_t parameter"),
    ("ptl_mat(dtype=self.dtype, c=result, a=self.data_ptr(1), m=1, rs=1, cs=1)", "data_ptr() takes no argument"),
    ("ptl_mat(dtype=self.dtype, c=result, a=self, m=self.size(n), rs=1, cs=1)", "size() takes one dimension, a number"),
    ("ptl_mat(dtype=self.dtype, c=result, a=self, m=1, rs=1, cs=1.5)", "the number 1.5 does not fit int64_t"),
    ("ptl_mat(dtype=self.dtype, c=result.stride(0), a=self, m=1, rs=1, cs=1)", "stride() needs an integer parameter"),
    ("ptl_mat(dtype=self.dtype, c=result, a=self, m=other2.size(0), rs=1, cs=1)",
     "size() needs a tensor argument or output"),
    ("ptl_mat(dtype=self.dtype, c=[result, self], a=self, m=1, rs=1, cs=1)",
     "a list of tensors needs a ptl_tensor * parameter"),
])
def test_strided_call_errors(tmp_path, call, message):
    text = STRIDED.replace(STRIDED.split("cpu: ")[1].strip(), call)
    msg = _error(_views, tmp_path, text)
    assert msg.startswith("ops.yaml:2: mat(Tensor self, Tensor other) -> Tensor: structured cpu: "), msg
    assert message in msg, msg


@pytest.mark.parametrize("change, message", [
    (("ts=[R, A, work]", "ts=[R, flag]"), "a list must name tensor arguments or outputs"),
    (("scratch: [work, pivots]", "scratch: [work, A]"), "scratch 'A' is already an argument"),
    (("init: {work: A, R: eye, info: 0}", "init: {work: A, Q: eye}"), "init: 'Q' is not an output or a scratch tensor"),
    (("init: {work: A, R: eye, info: 0}", "init: {work: B}"), "init: work <- B: not a tensor argument"),
    (("init: {work: A, R: eye, info: 0}", "init: [work]"), "'init' must map an output or scratch name"),
    (("scratch: [work, pivots]", "scratch: {work: 1}"), "'scratch' must list the names"),
    (("finish: m2.fact_finish", "finish: fact_finish"), "'finish' must name a 'module.function'"),
])
def test_scratch_init_finish_errors(tmp_path, change, message):
    msg = _error(_views, tmp_path, BATCHED.replace(*change))
    assert msg.startswith("ops.yaml:2: fact(Tensor A, bool flag=False) -> (Tensor R, Tensor info): "), msg
    assert message in msg, msg


def test_runtime_init_and_late_bound_impls():
    import pytorchlite as P
    from pytorchlite import _structured as S
    from pytorchlite.generated import structured as G
    t = P.empty(2, 3)
    S.init(t, P.tensor([1.0, 2.0, 3.0]))          # broadcast
    assert t.tolist() == [[1.0, 2.0, 3.0]] * 2
    S.init(t, 0)
    assert t.tolist() == [[0.0] * 3] * 2
    S.init(t, None)                                # nothing
    assert t.tolist() == [[0.0] * 3] * 2
    assert S.impls.mm__cpu is G.mm__cpu
    # column-major outputs: the transposed view of a contiguous buffer, as LAPACK writes them
    spec = ((2, 3, 4), P.float64, S.COLUMN_MAJOR)
    t = S.output(spec, t.device, None)
    assert t.shape == (2, 3, 4) and t.stride() == (12, 1, 3) and S.finish(t, spec) is t
    assert not S.fits(P.empty(2, 3, 4, dtype=P.float64), spec, t.device, None, ())
    m = S.meta_of((spec,), None, {"n": 3})
    assert (m.outputs, m.compute, m.inputs, m.values, m.n) == ((spec,), None, None, {"n": 3}, 3)


def test_a_fitting_out_is_written_by_the_kernel():
    """mm's impl takes out= when it fits (no copy) and allocates when it does not."""
    import pytorchlite as P
    from pytorchlite.generated import structured as G
    a, b = P.randn(3, 4), P.randn(4, 2)
    want = (a.numpy() @ b.numpy()).tolist()
    out = P.empty(3, 2)
    assert G.mm__cpu(a, b, _out=out) is out
    assert out.tolist() == P.mm(a, b).tolist() and P.allclose(out, P.tensor(want))
    for bad in (P.empty(2, 3), P.empty(3, 2, dtype=P.float64), P.empty(2, 3).t(), a[:, :2]):
        assert G.mm__cpu(a, b, _out=bad) is not bad
    x = P.randn(3, 3)
    assert G.addmm__cpu(x, x, P.eye(3), 1, 1, _out=x) is not x      # out may not alias what is read


# --- Python operators -------------------------------------------------------------------------

def test_operators_and_their_fast_paths(tmp_path):
    ops = _load(tmp_path, """
        - func: add(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
          pointwise: self + alpha * other
          operators: {__add__: self, __radd__: self, __iadd__: inplace}
        - func: div(Tensor self, Tensor other) -> Tensor
          composite: add(self, other)
          variants: function, method, inplace
          tensor_scalars: [self, other]
          operators: {__truediv__: {call: self, fast: add}, __rtruediv__: reflected}
    """)
    got = {p.dunder: (p.role, p.fast) for p, _ in resolve(ops)}
    assert got == {"__add__": ("self", "add"), "__radd__": ("self", None), "__iadd__": ("inplace", None),
                   "__truediv__": ("self", "add"), "__rtruediv__": ("reflected", None)}


@pytest.mark.parametrize("operators, message", [
    ("{__plus__: self}", "unknown Python operator '__plus__'"),
    ("{__add__: inplace}", "operator __add__ cannot have the role 'inplace'"),
    ("{__iadd__: self}", "operator __iadd__ cannot have the role 'self'"),
    ("{__neg__: reflected}", "operator __neg__ cannot have the role 'reflected'"),
    ("{__add__: {call: self, colour: red}}", "unknown setting 'colour'"),
    ("{__eq__: {call: self, others: Strings}}", "'others' must be one of"),
])
def test_operator_errors(tmp_path, operators, message):
    msg = _error(_load, tmp_path, f"""
        - func: add(Tensor self, Tensor other) -> Tensor
          pointwise: self + other
          operators: {operators}
    """)
    assert msg.startswith("ops.yaml:2: add(Tensor self, Tensor other) -> Tensor: ") and message in msg, msg


def test_operator_declared_twice_or_with_a_missing_form(tmp_path):
    ops = _load(tmp_path, """
        - func: add(Tensor self, Tensor other) -> Tensor
          pointwise: self + other
          operators: [__add__]
        - func: plus(Tensor self, Tensor other) -> Tensor
          pointwise: self + other
          operators: [__add__]
    """)
    assert "__add__ is already declared by 'add'" in _error(resolve, ops)
    ops = _load(tmp_path, """
        - func: add(Tensor self, Tensor other) -> Tensor
          pointwise: self + other
          tensor_scalars: [other]
          operators: {__radd__: reflected}
    """)
    assert "must list 'self' in tensor_scalars" in _error(resolve, ops)
    ops = _load(tmp_path, """
        - func: add(Tensor self, Tensor other) -> Tensor
          pointwise: self + other
          variants: function, method
          operators: {__iadd__: inplace}
    """)
    assert "'add' has no 'inplace' variant" in _error(resolve, ops)


# --- pointwise rules --------------------------------------------------------------------------

def test_pointwise_rules_are_read(tmp_path):
    (op,) = _load(tmp_path, """
        - func: neg(Tensor self) -> Tensor
          pointwise: -self
          check: some.module.check
          kernel_name: neg_kernel
          dtype_errors: {bool: "no bools"}
          out_dtype_error: "Found dtype {out} but expected {result}"
          all_numbers: true
    """)
    pw = op.pointwise
    assert (pw.check, pw.kernel_name, pw.dtype_errors, pw.all_numbers) == \
        ("some.module.check", "neg_kernel", (("bool", "no bools"),), True)
    (op,) = _load(tmp_path, """
        - func: neg(Tensor self) -> Tensor
          pointwise: -self
    """)
    assert op.pointwise.kernel_name == "neg_cpu" and op.pointwise.check == ""


@pytest.mark.parametrize("rule, message", [
    ("check: nodot", "'check' must name a 'module.function'"),
    ("dtype_errors: {boolean: x}", "'dtype_errors' must map a dtype name to a message"),
    ("out_dtype_error: 'wrong {dtype}'", "may use {op}, {out}, {result}, {out_c} and {result_c} only"),
    ("out_overlap: none", "'out_overlap' belongs to kernel and composite entries"),
    ("all_numbers: sometimes", "'all_numbers' must be true or false"),
])
def test_pointwise_rule_errors(tmp_path, rule, message):
    msg = _error(_load, tmp_path, f"""
        - func: neg(Tensor self) -> Tensor
          pointwise: -self
          {rule}
    """)
    assert message in msg, msg


def test_pointwise_rules_belong_to_pointwise_entries(tmp_path):
    msg = _error(_load, tmp_path, """
        - func: f(Tensor self) -> Tensor
          kernel: {cpu: a.b}
          kernel_name: f_cpu
    """)
    assert "'kernel_name' belongs to pointwise entries only" in msg


# --- out= and in-place rules of kernel and composite entries ----------------------------------

def test_out_rules_are_read(tmp_path):
    ops = _load(tmp_path, """
        - func: mm(Tensor self, Tensor mat2) -> Tensor
          variants: function, out
          kernel: {cpu: a.b}
          out_dtype_error: "Expected out tensor to have dtype {result_c}, but got {out_c} instead"
          out_overlap: none
        - func: addmm(Tensor self, Tensor mat1, Tensor mat2) -> Tensor
          variants: function, method, inplace, out
          composite: self + mat1.mm(mat2)
          out_overlap: {inplace: none}
        - func: gather(Tensor self, int dim, Tensor index) -> Tensor
          variants: function, out
          kernel: {cpu: a.b}
    """)
    mm, addmm, gather = ops
    assert mm.out_dtype_error.startswith("Expected out tensor") and mm.out_overlap == ("none", "none")
    assert addmm.out_overlap == ("partial", "none") and addmm.out_dtype_error == ""
    assert gather.out_overlap == ("partial", "partial")
    (cat,) = _load(tmp_path, """
        - func: cat(Tensor[] tensors, int dim=0) -> Tensor
          variants: function, out
          kernel: {cpu: a.b}
          out_cast_error: "TypeError: torch.cat(): input types can't be cast to the desired output type {out}"
    """)
    assert cat.out_cast_error.startswith("TypeError: torch.cat()")
    msg = _error(_load, tmp_path, """
        - func: cat(Tensor[] tensors, int dim=0) -> Tensor
          variants: function
          kernel: {cpu: a.b}
          out_cast_error: "TypeError: cast"
    """)
    assert "'out_cast_error' needs a kernel or composite entry with an 'out' variant" in msg


@pytest.mark.parametrize("rule, message", [
    ("out_overlap: sometimes", "'out_overlap' must be one of partial, any, none"),
    ("out_overlap: {out: any, self: none}", "'out_overlap' as a mapping takes the keys 'out' and 'inplace'"),
    ("out_overlap: {out: maybe}", "'out_overlap' values must be one of partial, any, none"),
    ("out_dtype_error: 'got {dtype}'", "may use {op}, {out}, {result}, {out_c} and {result_c} only"),
    ("out_cast_error: 'no type given'", "'out_cast_error' must be PyTorch's exception and message"),
    ("out_cast_error: 'TypeError: {dtype}'", "'out_cast_error' may use {op}, {out}, {result}"),
])
def test_out_rule_errors(tmp_path, rule, message):
    msg = _error(_load, tmp_path, f"""
        - func: f(Tensor self) -> Tensor
          variants: function, out
          kernel: {{cpu: a.b}}
          {rule}
    """)
    assert message in msg and "ops.yaml:2: f(Tensor self) -> Tensor" in msg, msg


def test_out_rules_need_the_forms_they_govern(tmp_path):
    msg = _error(_load, tmp_path, """
        - func: f(Tensor self) -> Tensor
          kernel: {cpu: a.b}
          out_dtype_error: "no"
    """)
    assert "'out_dtype_error' needs an 'out' variant" in msg
    msg = _error(_load, tmp_path, """
        - func: f(Tensor self) -> Tensor
          kernel: {cpu: a.b}
          out_overlap: any
    """)
    assert "'out_overlap' needs an 'out' or 'inplace' variant" in msg


def test_a_launcher_device_names_a_python_function(tmp_path):
    text = GOOD + "        cuda: pytorchlite.cuda._kernels.rows\n"
    views = {v.device: v for v in _views(tmp_path, text)}
    assert views["cuda"].launcher == "pytorchlite.cuda._kernels.rows"
    assert views["cuda"].inputs == [("self", True)] and views["cuda"].outputs == ["result"]
    (op,) = _load(tmp_path, text)
    assert dict(op.kernels)["cuda"] == "pytorchlite.generated.structured.rows__cuda"
    bad = GOOD + "        cuda: ptl_rows(x=self)\n"
    assert "must name the backend's launcher as 'module.function'" in _error(_load, tmp_path, bad)
