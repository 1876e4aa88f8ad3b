"""Pointwise operators: per-call latency on small tensors (the Python overhead of a call,
on the fast path and on the general one: scalars, broadcasting, in-place, out=)
and bandwidth on 2**24 float32 elements (the kernels), against PyTorch and NumPy.

    python benchmarks/bench_pointwise.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Bench, setup_threads  # noqa: E402

BIG = 1 << 24


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)

    lat = Bench("pointwise latency: a + b, float32")
    for n in (1, 1000):
        an = rng.standard_normal(n).astype(np.float32)
        bn = rng.standard_normal(n).astype(np.float32)
        a, b = ptl.tensor(an), ptl.tensor(bn)
        ta, tb = (torch.from_numpy(an.copy()), torch.from_numpy(bn.copy())) if torch else (None, None)
        lat.latency(f"a + b, n={n}", lambda: a + b, (lambda: ta + tb) if torch else None, lambda: an + bn)
    # the general path (a Python scalar, broadcasting, in-place, out=): most real code
    n = 1000
    an = rng.standard_normal(n).astype(np.float32)
    rn = rng.standard_normal((1, n)).astype(np.float32)
    a, r, o = ptl.tensor(an), ptl.tensor(rn), ptl.empty(n)
    on = np.empty_like(an)
    ta, tr, to = (torch.from_numpy(an.copy()), torch.from_numpy(rn.copy()), torch.empty(n)) if torch else (None,) * 3
    lat.latency(f"a + 1.5, n={n}", lambda: a + 1.5, (lambda: ta + 1.5) if torch else None, lambda: an + 1.5)
    lat.latency(f"a * r, [{n}] x [1, {n}]", lambda: a * r, (lambda: ta * tr) if torch else None, lambda: an * rn)
    lat.latency(f"a.mul_(1.0), n={n}", lambda: a.mul_(1.0), (lambda: ta.mul_(1.0)) if torch else None,
                lambda: np.multiply(an, 1.0, out=an))
    lat.latency(f"add(a, a, out=o), n={n}", lambda: ptl.add(a, a, out=o),
                (lambda: torch.add(ta, ta, out=to)) if torch else None, lambda: np.add(an, an, out=on))
    lat.print()

    bw = Bench(f"pointwise bandwidth: 2**24 float32 ({BIG * 4 >> 20} MiB per operand)")
    an = rng.standard_normal(BIG).astype(np.float32)
    bn = rng.standard_normal(BIG).astype(np.float32)
    on = np.empty_like(an)
    a, b, o = ptl.tensor(an), ptl.tensor(bn), ptl.empty(BIG)
    if torch:
        ta, tb, to = torch.from_numpy(an.copy()), torch.from_numpy(bn.copy()), torch.empty(BIG)
    binary = BIG * 4 * 3     # two operands read, one written
    unary = BIG * 4 * 2
    cases = [
        ("add", binary, lambda: ptl.add(a, b), lambda: torch.add(ta, tb), lambda: np.add(an, bn),
         lambda: ptl.add(a, b, out=o), lambda: torch.add(ta, tb, out=to), lambda: np.add(an, bn, out=on)),
        ("mul", binary, lambda: ptl.mul(a, b), lambda: torch.mul(ta, tb), lambda: np.multiply(an, bn),
         lambda: ptl.mul(a, b, out=o), lambda: torch.mul(ta, tb, out=to), lambda: np.multiply(an, bn, out=on)),
        ("exp", unary, lambda: ptl.exp(a), lambda: torch.exp(ta), lambda: np.exp(an),
         lambda: ptl.exp(a, out=o), lambda: torch.exp(ta, out=to), lambda: np.exp(an, out=on)),
    ]
    for name, nbytes, p_new, t_new, n_new, p_out, t_out, n_out in cases:
        bw.bandwidth(f"{name}, new output", nbytes, p_new, t_new if torch else None, n_new)
        bw.bandwidth(f"{name}, out=", nbytes, p_out, t_out if torch else None, n_out)
    bw.print()


if __name__ == "__main__":
    main()
