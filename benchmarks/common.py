"""Shared timing helpers for the benchmarks: run the same case in pytorchlite, PyTorch
and NumPy, take the median of several repeats after a warm-up, print one table.

A case is a zero-argument callable per framework (None where a framework has no
equivalent). Each repeat times `number` calls in a row with time.perf_counter_ns and
reports the time of one call; the median over repeats is robust against the odd
scheduler hiccup that would skew a mean.

    >>> from benchmarks.common import Bench
    >>> b = Bench("demo")
    >>> b.latency("noop", lambda: None, None, None, number=10, repeat=3)   # doctest: +SKIP
    >>> b.print()                                                          # doctest: +SKIP
"""

from __future__ import annotations

import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:   # run as a script from anywhere: import the checkout's pytorchlite
    sys.path.insert(0, ROOT)

THREADS = int(os.environ.get("PTL_BENCH_THREADS", "2"))

# PTL_BENCH_CLOCK=cpu times with the calling thread's CPU time instead of the wall clock:
# on a shared, loaded machine the time spent waiting for a core then does not count. It
# misses work done by other threads (OpenMP), so use it for small single-threaded calls.
CLOCK_NAME = os.environ.get("PTL_BENCH_CLOCK", "wall")
if CLOCK_NAME not in ("wall", "cpu"):
    raise SystemExit(f"PTL_BENCH_CLOCK must be 'wall' or 'cpu', not {CLOCK_NAME!r}")
CLOCK = time.thread_time_ns if CLOCK_NAME == "cpu" else time.perf_counter_ns


def setup_threads(n=THREADS):
    """Give pytorchlite and torch the same intra-op thread count; returns (ptl, torch or None, np)."""
    import numpy as np
    import pytorchlite as ptl
    ptl.set_num_threads(n)
    try:
        import torch
    except ImportError:
        torch = None
    else:
        torch.set_num_threads(n)
    return ptl, torch, np


def time_call(fn, number=1, repeat=7, warmup=2):
    """Median seconds per call of fn() over `repeat` runs of `number` calls each."""
    for _ in range(warmup):
        for _ in range(number):
            fn()
    samples = []
    clock = CLOCK
    for _ in range(repeat):
        t0 = clock()
        for _ in range(number):
            fn()
        samples.append((clock() - t0) / number)
    return statistics.median(samples) * 1e-9


def autonumber(fn, target_s=0.02):
    """How many calls make one repeat last about target_s (so short ops are not timer noise).

    The first call is not timed: it pays for lazy imports, first-touch page faults and
    cold caches, and sizing the repeats by it would leave a framework whose first call is
    slow with one or two calls per repeat, each paying the cold-cache cost of the other
    frameworks' turn (gather(dim=1) read 0.7x instead of 1.4x of torch that way)."""
    fn()
    t0 = time.perf_counter()
    fn()
    once = max(time.perf_counter() - t0, 1e-7)
    return max(1, min(100_000, int(target_s / once)))


class Bench:
    """Collects rows for one table. `unit` is either 'us' (latency per call, lower is
    better) or 'GB/s' (bytes moved per second, higher is better)."""

    FRAMEWORKS = ("pytorchlite", "torch", "numpy")

    def __init__(self, title):
        self.title = title
        self.rows = []
        self.errors = []

    def _measure(self, case, fns, number, repeat):
        """Median seconds per call for each framework. The repeats are interleaved (one
        batch of each framework in turn), so a change in machine load hits all of them
        alike instead of skewing the ratio."""
        plan = []
        for name, fn in zip(self.FRAMEWORKS, fns):
            if fn is None:
                plan.append(None)
                continue
            try:
                n = number or autonumber(fn)
                for _ in range(2 * n if n > 1 else 2):      # warm-up (caches, allocator, lazy imports)
                    fn()
                plan.append((fn, n))
            except Exception as e:  # one broken case must not hide the rest of the table
                self.errors.append(f"{case} [{name}]: {type(e).__name__}: {e}")
                plan.append(None)
        samples = [[] for _ in plan]
        clock = CLOCK
        for _ in range(repeat):
            for k, item in enumerate(plan):
                if item is None:
                    continue
                fn, n = item
                t0 = clock()
                for _ in range(n):
                    fn()
                samples[k].append((clock() - t0) / n)
        return [statistics.median(s) * 1e-9 if s else None for s in samples]

    def latency(self, case, ptl_fn, torch_fn, np_fn, number=None, repeat=7):
        """Time per call in microseconds."""
        secs = self._measure(case, (ptl_fn, torch_fn, np_fn), number, repeat)
        self.rows.append((case, "us", [None if s is None else s * 1e6 for s in secs]))

    def bandwidth(self, case, nbytes, ptl_fn, torch_fn, np_fn, number=None, repeat=7):
        """Bytes read plus written per call, as GB/s (1e9 bytes per second)."""
        secs = self._measure(case, (ptl_fn, torch_fn, np_fn), number, repeat)
        self.rows.append((case, "GB/s", [None if s is None else nbytes / s / 1e9 for s in secs]))

    def throughput(self, case, unit, amount, ptl_fn, torch_fn, np_fn, number=None, repeat=7):
        """`amount` units of work per call (e.g. FLOPs with unit 'GFLOP/s' and amount in
        GFLOP), reported as amount per second (higher is better)."""
        secs = self._measure(case, (ptl_fn, torch_fn, np_fn), number, repeat)
        self.rows.append((case, unit, [None if s is None else amount / s for s in secs]))

    @staticmethod
    def ratio(unit, ours, theirs):
        """How many times slower pytorchlite is than the other (1.0 = equal, < 1 = faster)."""
        if ours is None or theirs is None or ours == 0 or theirs == 0:
            return None
        return ours / theirs if unit == "us" else theirs / ours

    def print(self, file=None):
        file = file or sys.stdout
        head = ("case", "unit", "pytorchlite", "torch", "numpy", "x torch", "x numpy")
        lines = []
        for case, unit, (p, t, n) in self.rows:
            rt, rn = self.ratio(unit, p, t), self.ratio(unit, p, n)
            lines.append((case, unit, _fmt(p), _fmt(t), _fmt(n), _fmt(rt, "x"), _fmt(rn, "x")))
        widths = [max(len(str(r[i])) for r in [head] + lines) for i in range(len(head))]
        clock = "" if CLOCK_NAME == "wall" else ", thread CPU time"
        print(f"\n## {self.title}  (median, {THREADS} threads{clock}; 'x torch' = pytorchlite time / torch time, "
              "lower is better)", file=file)
        sep = " | "
        print(sep.join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths))), file=file)
        print("-+-".join("-" * w for w in widths), file=file)
        for r in lines:
            print(sep.join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))), file=file)
        for e in self.errors:
            print(f"  failed: {e}", file=file)
        file.flush()


def _fmt(v, suffix=""):
    if v is None:
        return "-"
    if suffix:
        return f"{v:.2f}{suffix}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def print_table(title, head, lines, errors=(), file=None):
    """One markdown-ish table: a title line, the header, then rows of strings (the first
    column left-aligned, the others right-aligned), then any failures."""
    file = file or sys.stdout
    widths = [max(len(str(r[i])) for r in [head] + list(lines)) for i in range(len(head))]
    print(f"\n## {title}", file=file)
    for row in [head, None] + list(lines):
        if row is None:
            print("-+-".join("-" * w for w in widths), file=file)
            continue
        print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))),
              file=file)
    for e in errors:
        print(f"  failed: {e}", file=file)
    file.flush()
