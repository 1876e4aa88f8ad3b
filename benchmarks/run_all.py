"""Run every benchmarks/bench_*.py, one fresh process each (so one suite's allocator
cache, thread pools and imports do not colour the next), and print their tables.

    python benchmarks/run_all.py                 # all suites
    python benchmarks/run_all.py pointwise       # only suites whose name contains 'pointwise'

Exits non-zero when a suite fails, after running the others.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def suites(filters=()):
    found = sorted(glob.glob(os.path.join(HERE, "bench_*.py")))
    if filters:
        found = [p for p in found if any(f in os.path.basename(p) for f in filters)]
    return found


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    paths = suites(argv)
    if not paths:
        print(f"no benchmark matches {argv}", file=sys.stderr)
        return 2
    env = dict(os.environ)
    # the checkout's pytorchlite, whatever the current directory
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(HERE), env.get("PYTHONPATH")) if p)
    failed = []
    print(f"# pytorchlite benchmarks ({len(paths)} suites)", flush=True)
    for path in paths:
        name = os.path.basename(path)
        print(f"\n# {name}", flush=True)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, path], env=env)
        took = time.perf_counter() - t0
        if r.returncode != 0:
            failed.append(name)
            print(f"# {name} FAILED (exit {r.returncode}) after {took:.1f} s", flush=True)
        else:
            print(f"# {name} done in {took:.1f} s", flush=True)
    if failed:
        print(f"\n# failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
