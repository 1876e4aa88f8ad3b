"""Matrix multiplication throughput (GFLOP/s = 2 n^3 / time) against PyTorch and NumPy.

Square float32 products at n = 128, 512, 1024, 2048 (the goal: at least 0.9x torch's
throughput from 512 up), plus the cases the kernel treats specially: a transposed operand
(handed to OpenBLAS as Trans, no copy) and a batch of small products (OpenBLAS's
strided-batch call). All three frameworks get the same thread count (PTL_BENCH_THREADS,
default 2): pytorchlite.set_num_threads and torch.set_num_threads set theirs, and NumPy's
OpenBLAS reads OPENBLAS_NUM_THREADS when it loads.

    python benchmarks/bench_matmul.py
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import THREADS, Bench, autonumber, setup_threads  # noqa: E402

# before anything loads NumPy (and its own OpenBLAS)
os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))

SIZES = (128, 512, 1024, 2048)
PAUSE_S = 0.2   # longer than OpenBLAS's and libgomp's spin-wait before their threads sleep


def _gflops(bench, case, flops, fns, repeat=9):
    """One row in GFLOP/s (higher is better; the table's 'x torch' is then our time over
    torch's, as for every other unit). The frameworks take turns within each repeat and
    each keeps its best repeat: on a shared machine a slow repeat measures the neighbours,
    and taking turns spreads them evenly over the three. A pause before each turn lets the
    previous framework's thread pool (OpenBLAS, OpenMP) stop spinning, which would
    otherwise take the cores from the next one."""
    clock = time.perf_counter
    fns = list(fns)
    numbers, best = [], [None] * len(fns)
    for i, (name, fn) in enumerate(zip(bench.FRAMEWORKS, fns)):
        try:
            numbers.append(autonumber(fn, 0.05))
            fn()
        except Exception as e:  # one broken case must not hide the rest of the table
            bench.errors.append(f"{case} [{name}]: {type(e).__name__}: {e}")
            fns[i] = None
            numbers.append(0)
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            if fn is None:
                continue
            time.sleep(PAUSE_S)
            fn()
            t0 = clock()
            for _ in range(numbers[i]):
                fn()
            t = (clock() - t0) / numbers[i]
            best[i] = t if best[i] is None else min(best[i], t)
    bench.rows.append((case, "GFLOP/s", [None if s is None else flops / s / 1e9 for s in best]))


def _load():
    """The 1-minute load average, printed with the table: on a shared 2-core machine any
    load above ~0.5 means the figures measure the neighbours too."""
    try:
        with open("/proc/loadavg") as f:
            return f.read().split()[0]
    except OSError:
        return "?"


def main():
    load_before = _load()
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)
    bench = Bench("matmul float32 throughput (best of 9, frameworks taking turns)")

    for n in SIZES:
        an = rng.standard_normal((n, n), dtype=np.float32)
        bn = rng.standard_normal((n, n), dtype=np.float32)
        a, b = ptl.from_numpy(an), ptl.from_numpy(bn)
        ta, tb = (torch.from_numpy(an), torch.from_numpy(bn)) if torch else (None, None)
        _gflops(bench, f"a @ b, n={n}", 2.0 * n ** 3,
                (lambda: a @ b, (lambda: ta @ tb) if torch else None, lambda: an @ bn))

    n = 1024
    an = rng.standard_normal((n, n), dtype=np.float32)
    bn = rng.standard_normal((n, n), dtype=np.float32)
    a, bt = ptl.from_numpy(an), ptl.from_numpy(bn.T)          # bt: a transposed (column-major) view
    ta, tbt = (torch.from_numpy(an), torch.from_numpy(bn).t()) if torch else (None, None)
    _gflops(bench, f"a @ b.T, n={n}", 2.0 * n ** 3,
            (lambda: a @ bt, (lambda: ta @ tbt) if torch else None, lambda: an @ bn.T))
    out_p = ptl.empty(n, n)
    out_t = torch.empty(n, n) if torch else None
    out_n = np.empty((n, n), np.float32)
    bb = ptl.from_numpy(bn)
    tb = torch.from_numpy(bn) if torch else None
    _gflops(bench, f"mm(a, b, out=), n={n}", 2.0 * n ** 3,
            (lambda: ptl.mm(a, bb, out=out_p), (lambda: torch.mm(ta, tb, out=out_t)) if torch else None,
             lambda: np.matmul(an, bn, out=out_n)))

    batch, m = 256, 64
    xn = rng.standard_normal((batch, m, m), dtype=np.float32)
    yn = rng.standard_normal((batch, m, m), dtype=np.float32)
    x, y = ptl.from_numpy(xn), ptl.from_numpy(yn)
    tx, ty = (torch.from_numpy(xn), torch.from_numpy(yn)) if torch else (None, None)
    _gflops(bench, f"bmm {batch} x {m}^3", 2.0 * batch * m ** 3,
            (lambda: ptl.bmm(x, y), (lambda: torch.bmm(tx, ty)) if torch else None, lambda: np.matmul(xn, yn)))

    bench.print()
    print(f"load average: {load_before} before, {_load()} after")
    if torch:
        print("\nthroughput as a fraction of torch's (goal >= 0.90 from n = 512):")
        for case, _, (p, t, _n) in bench.rows:
            if p and t:
                print(f"  {case:24s} {p / t:.2f}")


if __name__ == "__main__":
    main()
