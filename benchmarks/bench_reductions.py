"""Reductions: bandwidth of sum over 2**24 float32 elements (one output: every thread
shares it), row sums (dim=1) and column sums (dim=0) of a 4096 x 4096 float32 matrix,
plus a few other reductions, against PyTorch and NumPy.

    python benchmarks/bench_reductions.py

Each framework reduces its own copy of the data, allocated by itself (NumPy's allocator
asks for transparent huge pages on big arrays, PyTorch's and pytorchlite's do not, which
helps streaming a little). The frameworks take turns within every repeat. The summary
gives throughput ratios pytorchlite / torch (> 1: pytorchlite faster).
"""

from __future__ import annotations

import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import THREADS, Bench, autonumber, setup_threads  # noqa: E402

BIG = 1 << 24
SIDE = 4096


def interleaved(bench, case, nbytes, fns, repeat=15):
    """Bench.bandwidth, but the frameworks take turns inside every repeat, so that load
    from other processes on a small machine falls on all of them alike (timing them one
    after the other lets a burst of background work decide the ratio)."""
    clock = time.perf_counter_ns
    numbers = []
    for fn in fns:
        if fn is not None:
            fn()
        numbers.append(autonumber(fn) if fn is not None else 0)
    samples = [[] for _ in fns]
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            if fn is None:
                continue
            t0 = clock()
            for _ in range(numbers[k]):
                fn()
            samples[k].append((clock() - t0) / numbers[k] * 1e-9)
    gbs = [nbytes / statistics.median(s) / 1e9 if s else None for s in samples]
    bench.rows.append((case, "GB/s", gbs))


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)
    an = rng.standard_normal(BIG).astype(np.float32)
    mn = an.reshape(SIDE, SIDE).copy()
    a, m = ptl.tensor(an), ptl.tensor(mn)
    ta = tm = None
    if torch:
        ta, tm = torch.tensor(an), torch.tensor(mn)    # torch's own memory, like ptl.tensor
    nbytes = BIG * 4          # the reads dominate: outputs are 1 or 4096 elements

    def t(fn):
        return fn if torch else None

    main_cases = [
        ("sum, 2**24 float32 (all dims)", lambda: a.sum(), t(lambda: ta.sum()), lambda: an.sum()),
        ("sum(dim=1), 4096x4096 float32 (rows)", lambda: m.sum(1), t(lambda: tm.sum(1)), lambda: mn.sum(1)),
        ("sum(dim=0), 4096x4096 float32 (columns)", lambda: m.sum(0), t(lambda: tm.sum(0)), lambda: mn.sum(0)),
    ]
    other_cases = [
        ("mean, 2**24 float32", lambda: a.mean(), t(lambda: ta.mean()), lambda: an.mean()),
        ("amax, 2**24 float32", lambda: a.amax(), t(lambda: ta.amax()), lambda: an.max()),
        ("argmax, 2**24 float32", lambda: a.argmax(), t(lambda: ta.argmax()), lambda: an.argmax()),
        ("var, 2**24 float32", lambda: a.var(), t(lambda: ta.var()), lambda: an.var(ddof=1)),
        ("max(dim=1), 4096x4096", lambda: m.max(1), t(lambda: tm.max(1)), None),
        ("amax(dim=0), 4096x4096", lambda: m.amax(0), t(lambda: tm.amax(0)), lambda: mn.max(0)),
        ("var(dim=0), 4096x4096", lambda: m.var(0), t(lambda: tm.var(0)), lambda: mn.var(0, ddof=1)),
        ("logsumexp(dim=1), 4096x4096", lambda: m.logsumexp(1), t(lambda: tm.logsumexp(1)), None),
    ]
    summary = []
    for title, cases in (("reductions, float32 (bytes read per second)", main_cases),
                         ("other reductions, float32", other_cases)):
        bench = Bench(title)
        for case, p_fn, t_fn, n_fn in cases:
            interleaved(bench, case, nbytes, (p_fn, t_fn, n_fn))
        bench.print()
        for case, _unit, (p, tt, _n) in bench.rows:
            if p and tt:
                summary.append((case, p / tt))
    if summary:
        print(f"\nthroughput pytorchlite / torch ({THREADS} threads, median of 15 interleaved repeats; "
              ">= 0.9 is the goal):")
        for case, r in summary:
            print(f"  {r:5.2f}x  {case}")


if __name__ == "__main__":
    main()
