"""The build (codegen/build.py): what an object's cache key covers, what an ops.yaml edit
recompiles, and the split of the pointwise entry points into extension shards."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from codegen import build, layout
from codegen.gen import generate
from codegen.model import load_ops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

NEW_OP = """

- func: cube_plus(Tensor self, *, Scalar shift=0) -> Tensor
  pointwise: self * self * self + shift
  dtypes: all
  doc: |
    self**3 + shift.
"""


def _sources(tmp_path):
    """A tree with the sources the build reads, generated but not compiled."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for name in ("ops.yaml", "derivatives.yaml"):
        shutil.copy(os.path.join(ROOT, name), tree / name)
    shutil.copytree(os.path.join(ROOT, "kernels"), tree / "kernels")
    generate(str(tree))
    return tree


def _keys(tree):
    """{module: {object stem: key}} of the tree's build plan."""
    tc = build._Toolchain.find()
    return {e.module: {o.stem: o.key for o in e.objects} for e in build._plan(str(tree), tc)}


def test_shards_are_stable_and_in_range():
    # crc32, not hash(): the same shard in every process, so dispatch.py and the build agree
    shards = {layout.pw_shard(n) for n in ("add", "mul", "exp", "where", "_clamp", "cube_plus")}
    assert all(len(s) == 2 and 0 <= int(s) < layout.PW_SHARDS for s in shards)
    r = subprocess.run([sys.executable, "-c", "from codegen.layout import pw_shard; print(pw_shard('add'))"],
                       cwd=ROOT, capture_output=True, text=True, env=dict(os.environ, PYTHONHASHSEED="123"))
    assert r.stdout.strip() == layout.pw_shard("add")


def test_object_keys_do_not_depend_on_where_the_tree_is(tmp_path):
    """Copies and worktrees share a cache: the same sources give the same keys."""
    tree = _sources(tmp_path)
    assert _keys(tree) == _keys(ROOT)


def test_a_new_pointwise_operator_changes_one_file_and_one_wrapper(tmp_path):
    """Declared before the first pointwise entry of ops.yaml: every entry below it moves
    down, and nothing of theirs may recompile for that."""
    tree = _sources(tmp_path)
    before = _keys(tree)
    first = next(op for op in load_ops(str(tree / "ops.yaml")) if op.kind == "pointwise")
    lines = (tree / "ops.yaml").read_text(encoding="utf-8").split("\n")
    lines[first.line - 1:first.line - 1] = NEW_OP.strip("\n").split("\n") + [""]
    (tree / "ops.yaml").write_text("\n".join(lines), encoding="utf-8")
    changed = generate(str(tree))
    shard = layout.pw_shard("cube_plus")
    # (the Python tables that list every pointwise operator, or every operator with its
    # ops.yaml line, change too: the JIT fuser's and the ONNX exporter's; no C source does)
    assert set(changed) == {"generated/dispatch.py", "generated/functions.py", "generated/pointwise.cu",
                            "generated/fuser_ops.py", "generated/onnx_table.py",
                            layout.pw_source("cube_plus"), layout.pw_header(shard)}
    after = _keys(tree)
    module = layout.pw_module(shard)
    assert after[build.MAIN_MODULE] == before[build.MAIN_MODULE]   # no hand-written kernel recompiles
    for m in after:
        if m != module:
            assert after[m] == before[m], m
    new = {stem for stem, key in after[module].items() if before[module].get(stem) != key}
    assert new == {"cube_plus", module.rsplit(".", 1)[1] + ".cffi"}


def test_keys_follow_the_headers_an_object_includes(tmp_path):
    tree = _sources(tmp_path)
    before = _keys(tree)[build.MAIN_MODULE]
    with open(tree / "kernels" / "ptl_blas.h", "a", encoding="utf-8") as f:
        f.write("\n/* a change */\n")
    after = _keys(tree)[build.MAIN_MODULE]
    changed = {stem for stem in after if after[stem] != before[stem]}
    users = {os.path.splitext(n)[0] for n in os.listdir(tree / "kernels")
             if n.endswith(".c") and '#include "ptl_blas.h"' in (tree / "kernels" / n).read_text()}
    assert users and changed == users


def test_generate_removes_what_it_no_longer_writes(tmp_path):
    tree = _sources(tmp_path)
    stale = tree / layout.PW_DIR / "gone.c"
    stale.write_text("/* an operator since removed */\n")
    r = subprocess.run([sys.executable, "-m", "codegen", "--root", str(tree), "--check"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode == 1 and "generated/pointwise/gone.c (no longer generated)" in r.stderr
    assert generate(str(tree)) == [layout.PW_DIR + "/gone.c"] and not stale.exists()


def test_pointwise_entry_points_come_from_their_shard():
    import importlib
    import pytorchlite
    from pytorchlite.generated import _C, dispatch
    assert pytorchlite.generated is importlib.import_module("pytorchlite.generated")
    ops = [op for op in dispatch.TABLE.values() if op.kind == "pointwise"]
    assert ops
    for op in ops:
        lib = importlib.import_module(layout.pw_module(layout.pw_shard(op.name))).lib
        assert op.cpu == (getattr(lib, "ptl_pw_" + op.name), getattr(lib, "ptl_pwc_" + op.name)), op.name
        assert not hasattr(_C.lib, "ptl_pw_" + op.name)   # `_C` holds the hand-written kernels only
    # the shards' ffi includes `_C`'s: a descriptor array made with pytorchlite._C.ffi is
    # the type every shard's entry point takes
    shard = importlib.import_module(layout.pw_module(layout.pw_shard(ops[0].name)))
    assert shard.ffi.typeof("ptl_tensor") is _C.ffi.typeof("ptl_tensor")


@pytest.mark.slow
def test_a_new_operator_on_a_copy_of_the_tree(tmp_path):
    """The whole loop on a fresh copy of the tree whose object cache is this checkout's
    (less what the new operator needs): build it, declare an operator, regenerate (only
    the operator's file and its shard's wrapper compile), call it."""
    tree = tmp_path / "tree"
    ignore = shutil.ignore_patterns("__pycache__", ".git", ".hypothesis", ".pytest_cache", "*.so", "*.stamp",
                                    "build", "*.egg-info", "tests", "benchmarks", "examples", ".venv*")
    shutil.copytree(ROOT, tree, ignore=ignore)
    module = layout.pw_module(layout.pw_shard("cube_plus"))
    cache = tmp_path / "cache"
    cache.mkdir()
    ours = build.cache_dir(ROOT)
    for name in os.listdir(ours) if os.path.isdir(ours) else ():
        if name.endswith(".o") and not name.startswith(("cube_plus-", module.rsplit(".", 1)[1] + ".cffi-")):
            try:
                os.link(os.path.join(ours, name), cache / name)
            except OSError:
                shutil.copy(os.path.join(ours, name), cache / name)
    env = dict(os.environ, PTL_BUILD_CACHE=str(cache))
    # links every extension; compiles only what the cache lacks (nothing, where this
    # checkout was built by the same toolchain)
    r = subprocess.run([sys.executable, "-m", "codegen"], cwd=tree, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    with open(tree / "ops.yaml", "a") as f:
        f.write(NEW_OP)
    r = subprocess.run([sys.executable, "-m", "codegen"], cwd=tree, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    compiled = sorted(line for line in r.stdout.splitlines() if line.startswith("codegen: compiled"))
    assert compiled == ["codegen: compiled generated/pointwise/cube_plus.c",
                        f"codegen: compiled the cffi wrapper of {module}"], r.stdout
    assert [line for line in r.stdout.splitlines() if line.startswith("codegen: linked")] == [
        f"codegen: linked {module}"], r.stdout
    code = textwrap.dedent("""
        import pytorchlite as P
        x = P.tensor([1., 2., 3.])
        print(P.cube_plus(x, shift=1).tolist(), x.cube_plus().tolist())
        y = P.tensor([2], dtype=P.int32); y.cube_plus_(); print(y.tolist(), y.dtype)
        print(P.cube_plus.__module__, P.__file__)
    """)
    env = dict(os.environ, PYTHONPATH=str(tree))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "[2.0, 9.0, 28.0] [1.0, 8.0, 27.0]"
    assert lines[1] == "[8] pytorchlite.int32"
    assert str(tree) in lines[2]


def test_the_sanitizer_build_has_its_own_flags_and_keys():
    """`python -m codegen --sanitize` (tools/sanitize.py) compiles with ASan and UBSan;
    its objects have other keys, so they never mix with the normal build's in a cache."""
    normal, san = build._Toolchain.find(), build._Toolchain.find(sanitize=True)
    assert "-O3" in normal.cflags and not any(f.startswith("-fsanitize") for f in normal.cflags + normal.ldflags)
    assert "-O1" in san.cflags and "-O3" not in san.cflags
    assert "-fsanitize=" + build.SANITIZE in san.cflags and "-fsanitize=" + build.SANITIZE in san.ldflags
    assert any(f.startswith("-fno-sanitize-recover=") for f in san.cflags)
    keys = {e.module: [o.key for o in e.objects] for e in build._plan(ROOT, normal)}
    san_keys = {e.module: [o.key for o in e.objects] for e in build._plan(ROOT, san)}
    assert keys.keys() == san_keys.keys()
    for m in keys:
        assert not set(keys[m]) & set(san_keys[m]), m
