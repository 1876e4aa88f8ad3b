"""Per-call overhead of small operations, against PyTorch: the figures that decide how fast
small-tensor code runs (the Python layer, dispatch and allocation, not the kernels).

One table: `a + b` on 16 and 2**20 float32 elements (the second is kernel-bound, for
scale), `a + 1.5` (a Python-number operand), `add(a, b, out=c)`, in-place `a.add_(b)`,
`relu`, a full `sum`, a 64x64 matmul, and forward + backward of the autograd chain of
bench_autograd.py (100 x `x * 1.0001 + 0.0001` on 16 elements, 200 recorded ops).
On a loaded machine run it with PTL_BENCH_CLOCK=cpu (see README.md); the last two rows
(multi-threaded) mean something only with the default wall clock.

    python benchmarks/bench_overhead.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Bench, setup_threads  # noqa: E402

STEPS = 100


def chain(x):
    for _ in range(STEPS):
        x = x * 1.0001 + 0.0001
    return x


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)

    def pair(*shape):
        arr = rng.standard_normal(shape).astype(np.float32)
        return ptl.tensor(arr), (torch.from_numpy(arr.copy()) if torch else None), arr

    a, ta, an = pair(16)
    b, tb, bn = pair(16)
    c, tc, cn = pair(16)
    A, tA, An = pair(1 << 20)
    B, tB, Bn = pair(1 << 20)
    M, tM, Mn = pair(64, 64)
    N, tN, Nn = pair(64, 64)
    xn = np.linspace(0.5, 1.5, 16).astype(np.float32)
    x = ptl.tensor(xn, requires_grad=True)
    tx = torch.tensor(xn, requires_grad=True) if torch else None

    def t(fn):
        return fn if torch else None

    bench = Bench("small-call overhead, float32")
    bench.latency("a + b, n=16", lambda: a + b, t(lambda: ta + tb), lambda: an + bn)
    bench.latency("a + 1.5, n=16", lambda: a + 1.5, t(lambda: ta + 1.5), lambda: an + 1.5)
    bench.latency("add(a, b, out=c), n=16", lambda: ptl.add(a, b, out=c), t(lambda: torch.add(ta, tb, out=tc)),
                  lambda: np.add(an, bn, out=cn))
    bench.latency("a.add_(b), n=16", lambda: a.add_(b), t(lambda: ta.add_(tb)), lambda: np.add(an, bn, out=an))
    bench.latency("relu(a), n=16", lambda: ptl.relu(a), t(lambda: torch.relu(ta)), lambda: np.maximum(an, 0))
    bench.latency("a.sum(), n=16", lambda: a.sum(), t(lambda: ta.sum()), lambda: an.sum())
    bench.latency(f"chain of {2 * STEPS} ops: forward + backward", lambda: chain(x).sum().backward(),
                  t(lambda: chain(tx).sum().backward()), None)
    # last: these use several threads, whose spinning afterwards would slow the cases above
    # (and with PTL_BENCH_CLOCK=cpu their figures leave out the other threads' work)
    bench.latency("matmul 64x64", lambda: M @ N, t(lambda: tM @ tN), lambda: Mn @ Nn)
    bench.latency("a + b, n=2**20", lambda: A + B, t(lambda: tA + tB), lambda: An + Bn)
    bench.print()


if __name__ == "__main__":
    main()
