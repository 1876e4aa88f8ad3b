"""`python -m codegen`: regenerate generated/ from the YAML and rebuild what changed.

    python -m codegen            generate and compile (only what changed)
    python -m codegen --check    fail if generated/ is not what the YAML and templates give
    python -m codegen --force    recompile even when nothing changed
    python -m codegen --onnx-report  list the operators without an `onnx:` form (ONNX export)
    python -m codegen --sanitize build with ASan + UBSan (for tools/sanitize.py, which
                                 does it in a copy of the tree)

Objects are cached in build/ptl-obj, or in $PTL_BUILD_CACHE / --cache-dir: several trees
(worktrees, copies) can share one cache, since an object's key does not depend on where
the tree is.
"""

import argparse
import os
import sys

from .gen import ROOT, generate, render_all, stale_outputs
from .model import CodegenError


def check(root):
    """The generated files that differ from what render_all gives, or should not be there."""
    files = render_all(root)
    out = []
    for rel, content in sorted(files.items()):
        try:
            with open(os.path.join(root, rel), encoding="utf-8") as f:
                same = f.read() == content
        except FileNotFoundError:
            same = False
        if not same:
            out.append(rel)
    return out + [rel + " (no longer generated)" for rel in stale_outputs(root, files)]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m codegen", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=ROOT, help="the source tree (default: this checkout)")
    p.add_argument("--check", action="store_true", help="only check that generated/ is up to date")
    p.add_argument("--force", action="store_true", help="recompile the kernels even if unchanged")
    p.add_argument("--no-build", action="store_true", help="generate only; do not compile")
    p.add_argument("-j", "--jobs", type=int, default=None, help="compilers run at once (default: one per core)")
    p.add_argument("--cache-dir", default=None,
                   help="the object cache (default: $PTL_BUILD_CACHE, else build/ptl-obj in the tree)")
    p.add_argument("--sanitize", action="store_true",
                   help="compile with AddressSanitizer and UndefinedBehaviorSanitizer (the modules then load only "
                        "with the sanitizer runtimes preloaded: use tools/sanitize.py)")
    p.add_argument("--main-only", action="store_true",
                   help="build only the hand-written kernels' module (_C), not the pointwise shards")
    p.add_argument("--onnx-report", action="store_true",
                   help="list the operators that have no `onnx:` form (the ONNX exporter cannot export them)")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    try:
        if args.onnx_report:
            from .model import load_ops
            from .onnx import report
            sys.stdout.write(report(load_ops(os.path.join(args.root, "ops.yaml"))))
            return 0
        if args.check:
            stale = check(args.root)
            if stale:
                print("out of date: " + ", ".join(stale), file=sys.stderr)
                return 1
            return 0
        for rel in generate(args.root):
            done = "wrote" if os.path.exists(os.path.join(args.root, rel)) else "removed"
            print(f"codegen: {done} {rel}")
        if not args.no_build:
            from .build import MAIN_MODULE, build
            build(args.root, force=args.force, verbose=args.verbose, jobs=args.jobs, cache=args.cache_dir,
                  sanitize=args.sanitize, modules=[MAIN_MODULE] if args.main_only else None,
                  log=lambda line: print("codegen: " + line, flush=True))
    except CodegenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
