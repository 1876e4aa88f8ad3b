"""Codegen of reductions and scans: the `- reduction:` / `- scan:` language of ops.yaml is
parsed strictly (errors name the entry and line), the generated files agree with each
other and with ops.yaml, and are deterministic."""

import os
import re
import textwrap

import pytest

from codegen import reductions as R
from codegen.gen import ROOT, render_all
from codegen.model import CodegenError, load_ops


def _load(tmp_path, text):
    p = tmp_path / "ops.yaml"
    p.write_text(textwrap.dedent(text))
    return R.load_reductions(str(p))


def _error(tmp_path, text):
    with pytest.raises(CodegenError) as e:
        _load(tmp_path, text)
    return str(e.value)


SUM = """
- reduction: total
  acc: {floating: double, 'integral, bool': uint64}
  combine: a + b
  identity: 0
  out: {floating: input, 'integral, bool': int64}
"""


def test_a_declaration_and_what_it_gives(tmp_path):
    reds, scans = _load(tmp_path, SUM + """
- reduction: average
  accumulate: total
  dtypes: floating
  finish: a / n
- scan: running
  dtypes: int32
  acc: uint64
  combine: a + b
  identity: 0
""")
    assert [r.name for r in reds] == ["total", "average"] and [s.name for s in scans] == ["running"]
    total, average = reds
    assert total.dtypes == R.ALL_DTYPES and average.dtypes == ("float16", "bfloat16", "float32", "float64")
    view = R._View(reds, scans)
    by_key = {i.key: i for i in view.instances}
    assert by_key["total_i32"].acc.acc_c == "uint64_t" and by_key["total_i32"].out_dtype == "int64"
    assert by_key["total_f16"].acc.acc_c == "double" and by_key["total_f16"].out_dtype == "float16"
    # mean-like finishes compute in double and are stored through ptl_red_store_d
    assert by_key["average_f32"].rtype == "double" and by_key["average_f32"].store_cls == "d"
    assert by_key["total_i64"].store_cls == "i"
    # an accumulation is generated once, for the reduction that owns it
    assert {i.key for i in view.accumulations} == {f"total_{R.DTYPES[d][0]}" for d in R.ALL_DTYPES}


@pytest.mark.parametrize("text, message", [
    (SUM.replace("  identity: 0\n", ""), "reduction 'total': 'combine' needs an 'identity'"),
    (SUM.replace("combine: a + b", "combine: a + b\n  prefer: b > a"), "give exactly one of 'combine:'"),
    (SUM.replace("identity: 0", "identty: 0"), "unknown key 'identty' (did you mean 'identity'?)"),
    (SUM.replace("combine: a + b", "combine: a + c"), "combine: unknown name 'c' (known here: a, b)"),
    (SUM.replace("combine: a + b", "combine: mx(a, b)"), "unknown function 'mx'"),
    (SUM.replace("combine: a + b", "combine: (a + b"), "'combine' does not parse"),
    (SUM.replace("acc: {floating: double, 'integral, bool': uint64}", "acc: {floating: double}"),
     "'acc' has nothing for bool"),
    (SUM.replace("uint64}", "uint32}"), "acc: unknown type 'uint32'"),
    (SUM.replace("  out:", "  index: true\n  out:"), "'index: true' carries the position"),
    (SUM + "  special: {2: total}\n", "'special' needs an 'arg'"),
    (SUM + "  dtypes: [float8]\n", "unknown dtype 'float8'"),
    (SUM.replace("out: {floating: input, 'integral, bool': int64}", "out: {floating: input}"),
     "'out' has nothing for bool"),
    (SUM + "  fast: {row: {float32: sum_fast}}\n", "is not a C name starting 'ptl_red_fast_'"),
    (SUM + "  fast: {row: {float32: ptl_red_fast_total}, col: {float64: 3}}\n", "is not a C name"),
    (SUM + "  arg: x\n", "'arg' may not be 'x'"),
    (SUM + SUM, "reduction 'total': declared twice (first at line 2)"),
])
def test_errors_name_the_entry(tmp_path, text, message):
    msg = _error(tmp_path, text)
    assert msg.startswith("ops.yaml:") and message in msg, msg


def test_prefer_has_no_identity(tmp_path):
    msg = _error(tmp_path, """
- reduction: biggest
  acc: value
  prefer: b > a
  identity: 0
""")
    assert msg == ("ops.yaml:2: reduction 'biggest': 'prefer' reductions start from their first element: "
                   "no 'identity'")


def test_records(tmp_path):
    record = """
- reduction: sumcount
  dtypes: floating
  acc: {s: double, c: int64}
  map: {s: x, c: 1}
  identity: {s: 0, c: 0}
  combine: {s: a.s + b.s, c: a.c + b.c}
  finish: a.s / a.c
"""
    reds, _ = _load(tmp_path, record)
    inst = R._View(reds, []).instances[0]
    assert inst.acc.acc_c == "ptl_red_acc_sumcount" and inst.rtype == "double"
    assert "a.s + b.s" in inst.acc.combine_body()
    assert "missing c" in _error(tmp_path, record.replace("combine: {s: a.s + b.s, c: a.c + b.c}",
                                                          "combine: {s: a.s + b.s}"))
    assert "unknown name 'a.t'" in _error(tmp_path, record.replace("a.s / a.c", "a.t / a.c"))
    assert "field 'c' must be double or int64, got 'float'" in _error(tmp_path, record.replace("c: int64}", "c: float}"))
    assert "'prefer' selects one element" in _error(
        tmp_path, record.replace("combine: {s: a.s + b.s, c: a.c + b.c}", "prefer: b > a").replace(
            "  identity: {s: 0, c: 0}\n", ""))


def test_accumulate_refers_to_an_owner(tmp_path):
    assert "accumulate: no reduction 'totl' (did you mean 'total'?)" in _error(
        tmp_path, SUM + "- reduction: avg\n  accumulate: totl\n  dtypes: floating\n")
    assert "'map' belongs to the accumulation" in _error(
        tmp_path, SUM + "- reduction: avg\n  accumulate: total\n  map: x\n")
    assert "'total' has no instance for bool" in _error(
        tmp_path, SUM.replace("acc:", "dtypes: floating\n  acc:") + "- reduction: avg\n  accumulate: total\n")


def test_aux_in_and_out_exclude_each_other(tmp_path):
    msg = _error(tmp_path, """
- reduction: lse
  dtypes: floating
  acc: double
  aux_in: {shift: aux}
  map: exp(x - shift)
  combine: a + b
  identity: 0
  aux_out: a
""")
    assert "'aux_in' and 'aux_out' exclude each other" in msg


def test_expression_types(tmp_path):
    """Function suffixes follow the widest argument; comparisons are int; results store by
    their type."""
    reds, _ = _load(tmp_path, """
- reduction: r
  dtypes: float32, int16
  arg: p
  acc: {floating: double, integral: int64}
  map: {floating: 'pow(abs(x), p)', integral: abs(x)}
  combine: a + b
  identity: 0
  finish: {floating: 'n == 0 ? NAN : a', integral: a > 3}
""")
    i16, f32 = R._View(reds, []).instances          # in dtype order
    assert "ptl_pow_f64(ptl_abs_f64(x), parg)" in f32.acc.map_body()
    assert "ptl_abs_i64(x)" in i16.acc.map_body()
    assert f32.rtype == "double" and i16.rtype == "int"
    assert f32.finish_text == "((n == 0) ? PTL_NAN_D : a)"


def test_ops_yaml_declarations_and_operators_coexist():
    """load_ops skips the declarations; every reduction code the Python kernels use is
    declared, in the order of the generated enum and module."""
    path = os.path.join(ROOT, "ops.yaml")
    ops = load_ops(path)
    assert not any(op.name == "norm_two" for op in ops)
    reds, scans = R.load_reductions(path)
    files = render_all(ROOT)
    header, module = files["generated/reductions.h"], files["generated/reductions.py"]
    c_codes = dict((n, int(v)) for n, v in re.findall(r"^    (R_\w+) = (\d+),", header, re.M))
    py = {}
    exec(compile(module, "reductions.py", "exec"), py)
    assert c_codes == {f"R_{r.name.upper()}": i for i, r in enumerate(reds)}
    assert all(py[k] == v for k, v in c_codes.items()) and py["R_NUM_OPS"] == len(reds)
    assert [py[f"SCAN_{s.name.upper()}"] for s in scans] == list(range(len(scans)))
    assert [row[0] for row in py["REDUCTIONS"]] == [r.name for r in reds]
    from pytorchlite._kernels import reduce as K, sort as S
    for name in dir(K):
        if re.fullmatch(r"R_[A-Z_]+", name):
            assert getattr(K, name) == py[name]
    assert S.SCAN_CUMSUM == py["SCAN_CUMSUM"]


def test_fast_paths_are_declared_with_their_prototype():
    """The hand-written fast paths named in ops.yaml get prototypes in the generated header,
    so the C compiler checks the hand-written definitions against the declaration."""
    header = render_all(ROOT)["generated/reductions.h"]
    assert "int ptl_red_fast_sum_f32(const float *p, int64_t n, int64_t idx0, double *acc, int64_t *index);" in header
    assert "int ptl_red_fast_var_f64(const double *p, int64_t n, int64_t idx0, ptl_red_acc_var *acc, " \
           "int64_t *index);" in header
    assert "extern const ptl_red_colpath ptl_red_fast_var_col_bf16;" in header
    with open(os.path.join(ROOT, "kernels", "reduce.c"), encoding="utf-8") as f:
        engine = f.read()
    # the engine knows no reduction by name
    assert not re.search(r"\bR_(?!NUM_OPS)[A-Z]", engine)


def test_generated_reduction_files_are_deterministic_and_current():
    a, b = render_all(ROOT), render_all(ROOT)
    for name in ("reductions.h", "reductions.c", "reduce.cu", "reductions.py"):
        rel = "generated/" + name
        assert a[rel] == b[rel]
        assert a[rel].startswith(("/* generated by codegen", "# generated by codegen"))
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            assert f.read() == a[rel], "run `python -m codegen`"


def test_docs_examples_declare_valid_reductions(tmp_path):
    """The reduction snippets of docs/ops_yaml.md parse, alone and added to ops.yaml."""
    with open(os.path.join(ROOT, "docs", "ops_yaml.md"), encoding="utf-8") as f:
        snippets = [s for s in re.findall(r"```yaml\n(.*?)```", f.read(), re.S) if "reduction:" in s]
    assert len(snippets) >= 2
    with open(os.path.join(ROOT, "ops.yaml"), encoding="utf-8") as f:
        ops_yaml = f.read()
    for s in snippets:
        reds, _ = _load(tmp_path, s)
        R._View(reds, [])
        (tmp_path / "ops.yaml").write_text(ops_yaml + "\n" + s)
        R.load_reductions(str(tmp_path / "ops.yaml"))
