"""`python -m pytorchlite.coverage`: the API coverage report against the installed torch,
its out-of-scope families, and the README's copy of its table."""

import os
import subprocess
import sys

import pytest

from pytorchlite import coverage

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("name, family", [
    ("_foo", "private"), ("quantize_per_tensor", "quantized"), ("q_scale", "quantized"),
    ("to_sparse_csr", "sparse"), ("sparse_coo_tensor", "sparse"), ("crow_indices", "sparse"),
    ("cudnn_convolution", "backend internals"), ("mkldnn_linear_backward_weights", "backend internals"),
    ("miopen_rnn", "backend internals"), ("fbgemm_linear_int8_weight", "backend internals"),
    ("sym_int", "symbolic shapes"), ("SymInt", "symbolic shapes"), ("parse_ir", "TorchScript internals"),
])
def test_out_of_scope_families(name, family):
    assert coverage.excluded_family(name) == family


@pytest.mark.parametrize("name", ["add", "special", "sparse_", "values_like", "erfcx", "softmax", "cond",
                                  "compile", "autocast", "set_float32_matmul_precision", "Symbol"])
def test_in_scope_names_are_not_excluded(name):
    assert coverage.excluded_family(name) is None


def test_replace_table_needs_the_markers():
    text = f"a\n{coverage.BEGIN}\nold\n{coverage.END}\nb\n"
    assert coverage.replace_table(text, "new") == f"a\n{coverage.BEGIN}\nnew\n{coverage.END}\nb\n"
    with pytest.raises(ValueError, match="markers are missing"):
        coverage.replace_table("no table here", "new")


def test_measure_counts_what_each_side_has():
    torch = pytest.importorskip("torch")
    rows = {r.label: r for r in coverage.measure()}
    assert [label for label, *_ in coverage.NAMESPACES] == list(rows)
    top = rows["torch.*"]
    assert "add" in top.have and "matmul" in top.have
    assert top.excluded.get("quantize_per_tensor") == "quantized"
    assert "quantize_per_tensor" not in top.have + top.lack
    # a name counts as had exactly when pytorchlite has it, and every name is torch's
    import pytorchlite
    for name in top.have:
        assert hasattr(pytorchlite, name) and callable(getattr(torch, name))
    for name in top.lack:
        assert not hasattr(pytorchlite, name)
    # typing names a module imports are not counted (torch.nn.functional imports Optional)
    assert "Optional" not in rows["nn.functional"].have + rows["nn.functional"].lack
    # nor classes re-exported from torch (lr_scheduler imports Tensor)
    assert "Tensor" not in rows["optim.lr_scheduler"].lack
    assert "Adam" in rows["torch.optim"].have and "Linear" in rows["torch.nn"].have
    assert rows["Tensor methods"].excluded.get("to_sparse") == "sparse"
    for r in rows.values():
        assert r.total == len(set(r.have) | set(r.lack)) and 0 <= r.percent <= 100


def test_readme_table_is_current():
    pytest.importorskip("torch")
    table = coverage.markdown_table(coverage.measure())
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    if table.splitlines()[0] not in readme:
        pytest.skip("the README's table was made with another torch version")
    assert coverage.replace_table(readme, table) == readme, \
        "README.md's coverage table is stale: run `python -m pytorchlite.coverage --write-readme README.md`"


def test_command_line():
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-m", "pytorchlite.coverage", "--missing", "--excluded"],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("| namespace (torch ")
    assert "| `torch.linalg` |" in out.stdout and "out of scope:" in out.stdout


def test_without_torch_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)   # import torch raises ImportError
    with pytest.raises(ImportError, match="install torch"):
        coverage.measure()
    assert coverage.main([]) == 2
