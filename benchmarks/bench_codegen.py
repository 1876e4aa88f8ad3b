"""The add-an-operator loop: seconds from editing the YAML to importing the result, on a
built copy of the tree (issue 11: at most 10 s for a new pointwise operator with its
derivative, at most 3 s for a composite-only or derivative-only change, on 2 cores).

    python benchmarks/bench_codegen.py                 # this checkout
    python benchmarks/bench_codegen.py --tree DIR      # another checkout (e.g. an older commit)

The tree is copied to a temporary folder with what a built tree has (generated/ and the
object cache build/ptl-obj; without them the copy is built first, which takes minutes),
and `python -m codegen` runs there once so the copy starts up to date. Then, in order:

  (d) `python -m codegen` with nothing changed;
  (a) a new pointwise operator in ops.yaml, before the first pointwise entry (so every
      entry below moves down), and its derivative in derivatives.yaml likewise, then
      codegen, then a fresh `import pytorchlite` that calls it and its backward;
  (b) a new composite operator, then codegen and an import that calls it;
  (c) the derivative formula of (a)'s operator rewritten, then codegen and an import
      that runs its backward.

Each case is timed once with the wall clock (a repeat would find everything cached), and
with the CPU seconds of the processes it ran; on a loaded machine the wall clock includes
the wait for a core, the CPU seconds do not.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# Build outputs and caches that a copy leaves behind (generated/ and build/ptl-obj are
# what a built tree has, and are copied).
_IGNORE = shutil.ignore_patterns("__pycache__", ".git", ".hypothesis", ".pytest_cache", "*.egg-info", ".venv*",
                                 "tests", "benchmarks", "examples", "docs", "dist", "build")

NEW_POINTWISE = """

- func: bench_cube_plus(Tensor self, *, Scalar shift=0) -> Tensor
  pointwise: self * self * self + shift
  dtypes: all
  doc: |
    `self**3 + shift`: an operator added by benchmarks/bench_codegen.py.
"""
NEW_DERIVATIVE = """

- name: bench_cube_plus(Tensor self, *, Scalar shift=0) -> Tensor
  result: auto_element_wise
  self: grad * 3 * self * self
"""
NEW_COMPOSITE = """

- func: bench_twice(Tensor self) -> Tensor
  composite: self + self
"""
CHANGED_DERIVATIVE = ("  self: grad * 3 * self * self\n", "  self: 3 * self.square() * grad\n")

CALL_POINTWISE = """
import pytorchlite as P
x = P.tensor([1.0, 2.0], requires_grad=True)
y = P.bench_cube_plus(x, shift=1)
y.sum().backward()
assert y.tolist() == [2.0, 9.0] and x.grad.tolist() == [3.0, 12.0], (y, x.grad)
assert P.tensor([2], dtype=P.int32).bench_cube_plus().tolist() == [8]
"""
CALL_COMPOSITE = """
import pytorchlite as P
assert P.bench_twice(P.tensor([1.5])).tolist() == [3.0]
"""
CALL_DERIVATIVE = """
import pytorchlite as P
x = P.tensor([1.0, 2.0], requires_grad=True)
P.bench_cube_plus(x).sum().backward()
assert x.grad.tolist() == [3.0, 12.0], x.grad
"""

TARGETS = {"add": 10.0, "composite": 3.0, "derivative": 3.0, "noop": 3.0}


def copy_tree(src, dst):
    """The sources and a built tree's outputs, without history, tests or other caches."""
    shutil.copytree(src, dst, ignore=_IGNORE)
    objects = os.path.join(src, "build", "ptl-obj")
    if os.path.isdir(objects):
        shutil.copytree(objects, os.path.join(dst, "build", "ptl-obj"))


class Runner:
    def __init__(self, tree):
        self.tree = tree
        self.env = dict(os.environ, PYTHONPATH=tree)   # the copy's pytorchlite, not this checkout's

    def run(self, args, what):
        r = subprocess.run([sys.executable] + args, cwd=self.tree, env=self.env, capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"{what} failed (exit {r.returncode}):\n{r.stdout}{r.stderr}")
        return r.stdout

    def codegen(self):
        return self.run(["-m", "codegen"], "python -m codegen")

    def append(self, rel, text):
        with open(os.path.join(self.tree, rel), "a", encoding="utf-8") as f:
            f.write(text)

    def insert_before(self, rel, text, entry_start, marker):
        """Put an entry before the first entry of a YAML file that contains `marker`, where
        a new operator goes beside its kind: every entry below it moves down."""
        path = os.path.join(self.tree, rel)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        starts = [i for i, line in enumerate(lines) if line.startswith(entry_start)] + [len(lines)]
        at = next(a for a, b in zip(starts, starts[1:]) if any(marker in line for line in lines[a:b]))
        lines[at:at] = text.strip("\n").split("\n") + [""]
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))

    def replace(self, rel, old, new):
        path = os.path.join(self.tree, rel)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if text.count(old) != 1:
            raise RuntimeError(f"{rel}: expected one {old!r}")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new))

    def timed(self, edit, check, expect_written=None):
        """Seconds (wall, children's CPU, codegen's share of the wall) for edit ->
        `python -m codegen` -> a fresh import running `check`."""
        edit()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = self.codegen()
        t1 = time.perf_counter()
        if check:
            self.run(["-c", check], "importing the result")
        t2 = time.perf_counter()
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if expect_written and f"wrote {expect_written}" not in out:
            raise RuntimeError(f"codegen did not rewrite {expect_written}:\n{out}")
        cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
        return t2 - t0, cpu, t1 - t0


def measure(tree):
    r = Runner(tree)
    t0 = time.perf_counter()
    r.codegen()              # the copy starts up to date (builds it if it was not)
    prepared = time.perf_counter() - t0
    results = {}
    results["noop"] = r.timed(lambda: None, None)

    def add():
        r.insert_before("ops.yaml", NEW_POINTWISE, "- func:", "  pointwise:")
        r.insert_before("derivatives.yaml", NEW_DERIVATIVE, "- name:", "auto_element_wise")
    results["add"] = r.timed(add, CALL_POINTWISE)
    results["composite"] = r.timed(lambda: r.append("ops.yaml", NEW_COMPOSITE), CALL_COMPOSITE)
    results["derivative"] = r.timed(lambda: r.replace("derivatives.yaml", *CHANGED_DERIVATIVE), CALL_DERIVATIVE,
                                    expect_written="generated/autograd_nodes.py")
    return prepared, results


def report(results, prepared, label, file=None):
    file = file or sys.stdout
    rows = [("(a) add a pointwise op + derivative", "add"), ("(b) composite-only change", "composite"),
            ("(c) derivative-only change", "derivative"), ("(d) no-op python -m codegen", "noop")]
    head = ("case", "wall s", "cpu s", "codegen s", "target s", "ok")
    lines = []
    for title, key in rows:
        wall, cpu, gen = results[key]
        lines.append((title, f"{wall:.2f}", f"{cpu:.2f}", f"{gen:.2f}", f"{TARGETS[key]:.0f}",
                      "yes" if wall <= TARGETS[key] else "NO"))
    widths = [max(len(r[i]) for r in [head] + lines) for i in range(len(head))]
    print(f"\n## add-an-operator loop, {label}  (edit -> python -m codegen -> import; one run each, "
          f"{os.cpu_count()} cores)", file=file)
    sep = " | "
    print(sep.join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))), file=file)
    print("-+-".join("-" * w for w in widths), file=file)
    for row in lines:
        print(sep.join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))), file=file)
    print(f"  (copy made up to date in {prepared:.1f} s before timing; 'cpu s' = CPU time of the processes run)",
          file=file)
    file.flush()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tree", default=ROOT, help="the checkout to copy (default: this one)")
    p.add_argument("--keep", action="store_true", help="keep the temporary copy and print where it is")
    args = p.parse_args(argv)
    src = os.path.abspath(args.tree)
    tmp = tempfile.mkdtemp(prefix="ptl-bench-codegen-")
    tree = os.path.join(tmp, "tree")
    try:
        copy_tree(src, tree)
        prepared, results = measure(tree)
        report(results, prepared, src)
    finally:
        if args.keep:
            print(f"  copy kept at {tree}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
