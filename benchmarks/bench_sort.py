"""Sorting, selection and scans: sort / argsort / topk of 1M float32 and of the rows of a
1000 x 1000 float32 matrix, sort of 1M int64, cumsum and unique, against PyTorch and NumPy.

    python benchmarks/bench_sort.py

The frameworks take turns within every repeat (Bench interleaves them). The summary
gives throughput ratios pytorchlite / torch (> 1: pytorchlite faster; the goal is >= 0.8).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import THREADS, Bench, setup_threads  # noqa: E402

N = 1 << 20
SIDE = 1000


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)
    vn = rng.standard_normal(N).astype(np.float32)
    mn = rng.standard_normal((SIDE, SIDE)).astype(np.float32)
    inn = rng.integers(0, N, N, dtype=np.int64)
    small = rng.integers(0, 1000, N, dtype=np.int64)
    v, m, iv, sv = ptl.tensor(vn), ptl.tensor(mn), ptl.tensor(inn), ptl.tensor(small)
    tv = tm = ti = ts = None
    if torch:
        tv, tm, ti, ts = torch.tensor(vn), torch.tensor(mn), torch.tensor(inn), torch.tensor(small)

    def t(fn):
        return fn if torch else None

    cases = [
        ("sort, 1M float32", lambda: v.sort(), t(lambda: tv.sort()), lambda: np.sort(vn, kind="stable")),
        ("sort(stable=True), 1M float32", lambda: v.sort(stable=True), t(lambda: tv.sort(stable=True)), None),
        ("sort rows, 1000x1000 float32", lambda: m.sort(-1), t(lambda: tm.sort(-1)), lambda: np.sort(mn, -1)),
        ("sort dim=0, 1000x1000 float32", lambda: m.sort(0), t(lambda: tm.sort(0)), lambda: np.sort(mn, 0)),
        ("sort, 1M int64", lambda: iv.sort(), t(lambda: ti.sort()), lambda: np.sort(inn, kind="stable")),
        ("argsort, 1M float32", lambda: v.argsort(), t(lambda: tv.argsort()), lambda: np.argsort(vn, kind="stable")),
        ("topk(10), 1M float32", lambda: v.topk(10), t(lambda: tv.topk(10)), None),
        ("topk(1000), 1M float32", lambda: v.topk(1000), t(lambda: tv.topk(1000)), None),
        ("topk(10) rows, 1000x1000 float32", lambda: m.topk(10), t(lambda: tm.topk(10)), None),
        ("topk(500) rows, 1000x1000 float32", lambda: m.topk(500), t(lambda: tm.topk(500)), None),
        ("kthvalue(500) rows, 1000x1000", lambda: m.kthvalue(500), t(lambda: tm.kthvalue(500)), None),
        ("cumsum, 1M float32", lambda: v.cumsum(0), t(lambda: tv.cumsum(0)), lambda: np.cumsum(vn)),
        ("cumsum rows, 1000x1000 float32", lambda: m.cumsum(1), t(lambda: tm.cumsum(1)), lambda: np.cumsum(mn, 1)),
        ("cumsum dim=0, 1000x1000 float32", lambda: m.cumsum(0), t(lambda: tm.cumsum(0)),
         lambda: np.cumsum(mn, 0)),
        ("unique, 1M int64 (1M range)", lambda: ptl.unique(iv), t(lambda: torch.unique(ti)), lambda: np.unique(inn)),
        ("unique+inverse+counts, 1M int64 (1000 values)",
         lambda: ptl.unique(sv, return_inverse=True, return_counts=True),
         t(lambda: torch.unique(ts, return_inverse=True, return_counts=True)),
         lambda: np.unique(small, return_inverse=True, return_counts=True)),
    ]
    bench = Bench("sorting, selection and scans (time per call)")
    for case, p_fn, t_fn, n_fn in cases:
        bench.latency(case, p_fn, t_fn, n_fn, repeat=7)
    bench.print()
    summary = [(case, tt / p) for case, _u, (p, tt, _n) in bench.rows if p and tt]
    if summary:
        print(f"\nthroughput pytorchlite / torch ({THREADS} threads, median of 7 interleaved repeats; "
              ">= 0.8 is the goal):")
        for case, r in summary:
            print(f"  {r:5.2f}x  {case}")


if __name__ == "__main__":
    main()
