"""`python -m codegen`: regenerate generated/ from the YAML and rebuild what changed.

    python -m codegen            generate and compile (only what changed)
    python -m codegen --check    generate into a temporary folder and fail if generated/ differs
    python -m codegen --force    recompile even when nothing changed
"""

import argparse
import os
import sys
import tempfile

from .gen import ROOT, generate, render_all
from .model import CodegenError


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m codegen", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=ROOT, help="the source tree (default: this checkout)")
    p.add_argument("--check", action="store_true", help="only check that generated/ is up to date")
    p.add_argument("--force", action="store_true", help="recompile the kernels even if unchanged")
    p.add_argument("--no-build", action="store_true", help="generate only; do not compile")
    p.add_argument("-v", "--verbose", action="store_true")
    args = p.parse_args(argv)
    try:
        if args.check:
            stale = []
            for rel, content in sorted(render_all(args.root).items()):
                path = os.path.join(args.root, rel)
                try:
                    with open(path, encoding="utf-8") as f:
                        same = f.read() == content
                except FileNotFoundError:
                    same = False
                if not same:
                    stale.append(rel)
            if stale:
                print("out of date: " + ", ".join(stale), file=sys.stderr)
                return 1
            return 0
        changed = generate(args.root)
        for rel in changed:
            print(f"codegen: wrote {rel}")
        if not args.no_build:
            from .build import build
            if build(args.root, force=args.force, verbose=args.verbose):
                print("codegen: compiled pytorchlite.generated._C")
    except CodegenError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
