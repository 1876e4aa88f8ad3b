"""Linear algebra against PyTorch and NumPy: einsum of a batched contraction (attention
scores, 'bhqd,bhkd->bhqk', one bmm after a permute), a 3-operand einsum chain, and the
LAPACK factorizations on 256 x 256 float64 matrices (inv, solve, svd, eigh, cholesky, qr,
det) plus a batch of small inverses. All three use OpenBLAS/LAPACK underneath; what is
timed here is the work around it (copies into column-major buffers, workspace queries).

    python benchmarks/bench_linalg.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import THREADS, Bench, setup_threads  # noqa: E402

os.environ.setdefault("OPENBLAS_NUM_THREADS", str(THREADS))


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)
    bench = Bench("linear algebra")

    q = rng.standard_normal((8, 8, 128, 64), dtype=np.float32)
    k = rng.standard_normal((8, 8, 128, 64), dtype=np.float32)
    pq, pk = ptl.from_numpy(q), ptl.from_numpy(k)
    tq, tk = (torch.from_numpy(q), torch.from_numpy(k)) if torch else (None, None)
    eq = "bhqd,bhkd->bhqk"
    bench.latency(f"einsum {eq} 8x8x128x64 f32", lambda: ptl.einsum(eq, pq, pk),
                  (lambda: torch.einsum(eq, tq, tk)) if torch else None, lambda: np.einsum(eq, q, k, optimize=True))

    a3 = [rng.standard_normal(s) for s in ((64, 128), (128, 96), (96, 32))]
    p3 = [ptl.from_numpy(x) for x in a3]
    t3 = [torch.from_numpy(x) for x in a3] if torch else None
    bench.latency("einsum ab,bc,cd->ad f64", lambda: ptl.einsum("ab,bc,cd->ad", *p3),
                  (lambda: torch.einsum("ab,bc,cd->ad", *t3)) if torch else None,
                  lambda: np.einsum("ab,bc,cd->ad", *a3, optimize=True))

    n = 256
    an = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
    spd = an @ an.T + np.eye(n)
    bn = rng.standard_normal((n, 8))
    a, b, s = ptl.from_numpy(an), ptl.from_numpy(bn), ptl.from_numpy(spd)
    ta, tb, ts = (torch.from_numpy(an), torch.from_numpy(bn), torch.from_numpy(spd)) if torch else (None,) * 3
    T = torch.linalg if torch else None
    cases = [
        ("inv", lambda: ptl.linalg.inv(a), (lambda: T.inv(ta)), lambda: np.linalg.inv(an)),
        ("solve (8 rhs)", lambda: ptl.linalg.solve(a, b), (lambda: T.solve(ta, tb)), lambda: np.linalg.solve(an, bn)),
        ("det", lambda: ptl.linalg.det(a), (lambda: T.det(ta)), lambda: np.linalg.det(an)),
        ("cholesky", lambda: ptl.linalg.cholesky(s), (lambda: T.cholesky(ts)), lambda: np.linalg.cholesky(spd)),
        ("qr", lambda: ptl.linalg.qr(a), (lambda: T.qr(ta)), lambda: np.linalg.qr(an)),
        ("svd", lambda: ptl.linalg.svd(a), (lambda: T.svd(ta)), lambda: np.linalg.svd(an)),
        ("svdvals", lambda: ptl.linalg.svdvals(a), (lambda: T.svdvals(ta)), lambda: np.linalg.svd(an, compute_uv=False)),
        ("eigh", lambda: ptl.linalg.eigh(s), (lambda: T.eigh(ts)), lambda: np.linalg.eigh(spd)),
    ]
    for name, fp, ft, fn in cases:
        bench.latency(f"{name} {n}x{n} f64", fp, ft if torch else None, fn, repeat=5)

    sm = rng.standard_normal((1024, 4, 4)) + 4 * np.eye(4)
    ps, tsm = ptl.from_numpy(sm), (torch.from_numpy(sm) if torch else None)
    bench.latency("inv 1024 x 4x4 f64", lambda: ptl.linalg.inv(ps), (lambda: T.inv(tsm)) if torch else None,
                  lambda: np.linalg.inv(sm))
    bench.print()


if __name__ == "__main__":
    main()
