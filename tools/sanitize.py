"""Run tests against kernels built with AddressSanitizer and UndefinedBehaviorSanitizer.

    python tools/sanitize.py                       # build, then the default test files
    python tools/sanitize.py tests/test_sort.py    # build, then these files (or nodes)
    python tools/sanitize.py --fast                # the subset CI runs (a few minutes)
    python tools/sanitize.py --main-only ...       # instrument only _C (the hand-written
                                                   # kernels); reuse the pointwise modules
    python tools/sanitize.py --build-only          # build, run nothing
    python tools/sanitize.py --check-compiler      # exit 0 if the compiler has ASan + UBSan

The tree is copied (sources only) to build/sanitize/tree, generated there and compiled
with `python -m codegen --sanitize` (codegen/build.py's SANITIZE_CFLAGS: -O1 -g
-fsanitize=address,undefined,float-cast-overflow, every UB report aborts) into its own
object cache, build/sanitize/obj: the normal build, its extension modules and the shared
object cache ($PTL_BUILD_CACHE) are never touched. Each test file then runs in its own
pytest process (with a time limit) from the copy, with the sanitizer runtimes preloaded
(the Python interpreter is not instrumented) and leak detection off (CPython keeps
objects alive until exit by design). A finding aborts that process with the sanitizer's
report, which is printed; the exit status is 1 if any file failed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DEST = os.path.join(ROOT, "build", "sanitize")

# What the copy needs: the sources the build and the tests read. generated/ is made there.
COPY = ["pyproject.toml", "setup.py", "ops.yaml", "derivatives.yaml", "codegen", "kernels", "pytorchlite",
        "tests", "examples", "benchmarks", "docs", "README.md", "generated/README.md"]
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "*.so", "out")

# The files the tool runs by default: the kernels' topics.
DEFAULT_TESTS = ["tests/test_pointwise.py", "tests/test_reductions.py", "tests/test_movement.py",
                 "tests/test_indexing.py", "tests/test_sort.py", "tests/test_linalg.py", "tests/test_views.py",
                 "tests/test_sanitize_regressions.py", "tests/nn"]
# The subset CI runs: regressions of past findings and a cross-section of the kernels,
# about 2 CPU-minutes with the build of `_C` from a cold cache (README.md, "Sanitizers").
FAST_TESTS = ["tests/test_sanitize_regressions.py", "tests/test_sort.py", "tests/test_indexing.py",
              "tests/test_reduction_instances.py"]

ASAN_OPTIONS = ":".join([
    "detect_leaks=0",                # CPython never frees some objects: not our leaks
    "allocator_may_return_null=1",   # tests ask for huge tensors and expect MemoryError
    "abort_on_error=1",
    "detect_odr_violation=0",        # cffi modules define the same static type tables
    "handle_segv=1",
    "strict_string_checks=0",
])
UBSAN_OPTIONS = "print_stacktrace=1:halt_on_error=1:abort_on_error=1"


def _cc():
    """The compiler codegen's build uses ($CC, else Python's)."""
    return _codegen_build()._compiler()


def runtimes(cc=None):
    """The sanitizer runtimes to preload: [libasan, libubsan] of GCC's kind, or []."""
    cc = cc or _cc()
    out = []
    for lib in ("libasan.so", "libubsan.so"):
        try:
            path = subprocess.run(cc + ["-print-file-name=" + lib], capture_output=True, text=True).stdout.strip()
        except OSError:
            return []
        if not os.path.isabs(path) or not os.path.exists(path):
            return []
        out.append(os.path.realpath(path))
    return out


def compiler_supports_sanitizers(cc=None):
    """Whether the compiler builds and runs a shared object with the sanitizer flags."""
    cb = _codegen_build()
    cc = cc or _cc()
    libs = runtimes(cc)
    if not libs:
        return False
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "t.c")
        with open(src, "w") as f:
            f.write("int ptl_probe(int x) { return x + 1; }\n")
        so = os.path.join(d, "t.so")
        try:
            r = subprocess.run(cc + ["-shared", "-fPIC"] + cb.SANITIZE_CFLAGS + cb.SANITIZE_LDFLAGS + [src, "-o", so],
                               capture_output=True)
        except OSError:
            return False
        if r.returncode != 0:
            return False
        probe = f"import ctypes; print(ctypes.CDLL({so!r}).ptl_probe(41))"
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=sanitizer_env(libs))
        return r.returncode == 0 and r.stdout.strip() == "42"


def sanitizer_env(libs, base=None, tree=None):
    env = dict(base if base is not None else os.environ)
    if tree is not None:   # the copy's pytorchlite, never an installed one
        env["PYTHONPATH"] = os.pathsep.join([tree] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["LD_PRELOAD"] = ":".join(libs + [p for p in env.get("LD_PRELOAD", "").split(":") if p])
    env["ASAN_OPTIONS"] = ASAN_OPTIONS
    env["UBSAN_OPTIONS"] = UBSAN_OPTIONS
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    env.pop("PTL_BUILD_CACHE", None)   # the copy's build must not reach the shared cache
    return env


def copy_tree(dest_tree):
    """Replace the copy's sources with this checkout's, keeping its generated/ (its
    extension modules relink only if their objects changed)."""
    os.makedirs(dest_tree, exist_ok=True)
    for name in os.listdir(dest_tree):
        if name == "generated":
            continue
        path = os.path.join(dest_tree, name)
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    for rel in COPY:
        src, dst = os.path.join(ROOT, rel), os.path.join(dest_tree, rel)
        if os.path.isdir(src):
            shutil.copytree(src, dst, ignore=SKIP)
        elif os.path.exists(src):
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            shutil.copy2(src, dst)


def _codegen_build():
    sys.path.insert(0, ROOT)
    try:
        from codegen import build
    finally:
        sys.path.remove(ROOT)
    return build


def build(dest, jobs=None, main_only=False):
    """Copy, generate and compile; returns the copy and its instrumented modules. With
    `main_only`, only `_C` (the hand-written kernels and the reduction instances) is
    instrumented, and the pointwise shards are this checkout's own, built normally."""
    tree, cache = os.path.join(dest, "tree"), os.path.join(dest, "obj")
    cb = _codegen_build()
    if main_only:
        stale = [m for m in cb.stale(ROOT) if m != cb.MAIN_MODULE]
        if stale:
            raise SystemExit("sanitize: --main-only reuses this checkout's pointwise modules, which are stale: "
                             f"{', '.join(stale)}; run `python -m codegen` first")
    copy_tree(tree)
    cmd = [sys.executable, "-m", "codegen", "--sanitize", "--cache-dir", cache]
    if main_only:
        cmd.append("--main-only")
    if jobs:
        cmd += ["-j", str(jobs)]
    env = dict(os.environ)
    env.pop("PTL_BUILD_CACHE", None)
    r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.stderr.write(r.stdout + r.stderr)
        raise SystemExit("sanitize: the sanitizer build failed")
    gen = os.path.join(tree, "generated")
    main = os.path.basename(cb.extension_path(tree))
    if main_only:
        # the shards find `_C` beside them (rpath $ORIGIN): here, the instrumented one. Their
        # stamps go, so that a later full run does not take these for instrumented ones.
        for f in os.listdir(gen):
            if f.startswith("_pw_") and f.endswith(".stamp"):
                os.remove(os.path.join(gen, f))
        for f in os.listdir(os.path.join(ROOT, "generated")):
            if f.startswith("_pw_") and f.endswith(".so"):
                shutil.copy2(os.path.join(ROOT, "generated", f), os.path.join(gen, f))
    # every module must really be instrumented, or a clean run would prove nothing
    mods = [main] if main_only else sorted(f for f in os.listdir(gen) if f.endswith(".so"))
    for f in mods:
        with open(os.path.join(gen, f), "rb") as fh:
            data = fh.read()
        if b"__asan_init" not in data or b"__ubsan_handle_" not in data:
            raise SystemExit(f"sanitize: generated/{f} is not instrumented")
    return tree, mods


def run_tests(tree, targets, libs, timeout, pytest_args):
    env = sanitizer_env(libs, tree=tree)
    r = subprocess.run([sys.executable, "-c", "import pytorchlite.generated._C as c; print(c.__file__)"],
                       cwd=tree, env=env, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.realpath(r.stdout.strip()).startswith(os.path.realpath(tree) + os.sep):
        raise SystemExit(f"sanitize: the copy's kernels do not load under the sanitizers:\n{r.stdout}{r.stderr}")
    failed = []
    for target in targets:
        t0 = time.monotonic()
        # --capture=sys: the sanitizers write their reports to file descriptor 2, which
        # pytest's default capture would swallow with the process they abort
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--capture=sys", target] + pytest_args
        try:
            r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
            code, out = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as e:
            code = "timeout"
            out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        dt = time.monotonic() - t0
        last = [line for line in out.strip().splitlines() if line.strip()][-1:] or [""]
        print(f"sanitize: {target}: {'ok' if code == 0 else 'FAILED (' + str(code) + ')'} in {dt:.0f} s: {last[0]}",
              flush=True)
        reports = _reports(out)
        if code != 0 or reports:
            failed.append(target)
            print(reports or "\n".join(out.splitlines()[-60:]), flush=True)
    return failed


def _reports(out):
    """The sanitizer reports in a test run's output (each cut to 40 lines)."""
    lines = out.splitlines()
    found = []
    for i, line in enumerate(lines):
        if "ERROR: AddressSanitizer" in line or "runtime error:" in line:
            found.append("\n".join(lines[i:i + 40]))
    return "\n".join(found)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python tools/sanitize.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tests", nargs="*", help="test files, folders or node ids (relative to the tree); "
                                            "each runs in its own process")
    p.add_argument("--fast", action="store_true",
                   help="the subset CI runs: --main-only, then " + " ".join(FAST_TESTS))
    p.add_argument("--main-only", action="store_true",
                   help="instrument only _C (kernels/*.c and the reduction instances); the pointwise modules are "
                        "this checkout's (they must be up to date)")
    p.add_argument("--build-only", action="store_true")
    p.add_argument("--check-compiler", action="store_true",
                   help="exit 0 if the compiler builds and loads sanitized code, 1 otherwise")
    p.add_argument("--dest", default=DEFAULT_DEST, help="where the copy and its object cache go (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=1200, help="seconds per test file (default: %(default)s)")
    p.add_argument("-j", "--jobs", type=int, default=None, help="compilers at once (default: one per core)")
    p.add_argument("-k", dest="keyword", default=None, help="passed to pytest")
    args = p.parse_args(argv)

    if args.check_compiler:
        return 0 if compiler_supports_sanitizers() else 1
    libs = runtimes()
    if not libs:
        raise SystemExit("sanitize: the compiler has no libasan/libubsan (set CC to a GCC or Clang that does)")
    t0 = time.monotonic()
    tree, mods = build(os.path.abspath(args.dest), args.jobs, args.main_only or args.fast)
    print(f"sanitize: built {len(mods)} instrumented modules in {tree} in {time.monotonic() - t0:.0f} s", flush=True)
    if args.build_only:
        return 0
    targets = args.tests or (FAST_TESTS if args.fast else DEFAULT_TESTS)
    failed = run_tests(tree, targets, libs, args.timeout, ["-k", args.keyword] if args.keyword else [])
    print(f"sanitize: {len(targets) - len(failed)} of {len(targets)} passed in {time.monotonic() - t0:.0f} s"
          + (": failed " + " ".join(failed) if failed else ""), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
