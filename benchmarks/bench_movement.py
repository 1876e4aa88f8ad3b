"""Data movement: gather / scatter_add over ~1M float32 elements (along the rows and along
the columns), cat of 1000 small tensors (the per-call overhead: pytorchlite copies every
piece in one C call), cat of a few large tensors (bandwidth), flip, index_add and
index_put_ with accumulate (repeated positions), against
PyTorch (and NumPy where it has the same operation).

    python benchmarks/bench_movement.py

GB/s counts the bytes read plus written once (values, index and output). The frameworks
take turns within every repeat (Bench._measure). The summary gives throughput ratios
pytorchlite / torch (> 1: pytorchlite faster; the goal is >= 0.8).
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import THREADS, Bench, setup_threads  # noqa: E402

ROWS, COLS = 1024, 1024      # 2**20 elements


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)
    xn = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    in1 = rng.integers(0, COLS, (ROWS, COLS)).astype(np.int64)    # along dim 1
    in0 = rng.integers(0, ROWS, (ROWS, COLS)).astype(np.int64)    # along dim 0
    x, i1, i0 = ptl.tensor(xn), ptl.tensor(in1), ptl.tensor(in0)
    zeros = ptl.zeros(ROWS, COLS)
    have = torch is not None

    def t(fn):
        return fn if have else None

    if have:
        tx, ti1, ti0 = torch.tensor(xn), torch.tensor(in1), torch.tensor(in0)
        tzeros = torch.zeros(ROWS, COLS)
    n = ROWS * COLS
    gs_bytes = n * (4 + 8 + 4)          # values read, index read, output written

    small_n = [rng.standard_normal(16).astype(np.float32) for _ in range(1000)]
    small = [ptl.tensor(a) for a in small_n]
    small2 = [ptl.tensor(rng.standard_normal((4, 8)).astype(np.float32)) for _ in range(1000)]
    big_n = [rng.standard_normal((2048, 1024)).astype(np.float32) for _ in range(4)]
    big = [ptl.tensor(a) for a in big_n]
    if have:
        tsmall = [torch.tensor(a) for a in small_n]
        tsmall2 = [torch.tensor(s.numpy()) for s in small2]
        tbig = [torch.tensor(a) for a in big_n]
    big_bytes = 2 * sum(a.nbytes for a in big_n)
    idx = ptl.tensor(rng.integers(0, ROWS, 4096))
    src = ptl.tensor(rng.standard_normal((4096, COLS)).astype(np.float32))
    if have:
        tidx, tsrc = torch.tensor(idx.numpy()), torch.tensor(src.numpy())

    # index_put_ with accumulate: 2**20 values added at random positions (many repeats) of
    # a 65536-element vector, and 4096 rows added into a 1024x1024 matrix by row index
    acc_n, pos_n, val_n = 1 << 16, rng.integers(0, 1 << 16, n).astype(np.int64), xn.reshape(-1)
    acc1, pos, val = ptl.zeros(acc_n), ptl.tensor(pos_n), ptl.tensor(val_n)
    acc2 = ptl.zeros(ROWS, COLS)
    acc1_n = np.zeros(acc_n, np.float32)
    if have:
        tacc1, tpos, tval = torch.zeros(acc_n), torch.tensor(pos_n), torch.tensor(val_n)
        tacc2 = torch.zeros(ROWS, COLS)

    cases = [
        ("index_put_(accumulate) 2**20 into 65536 float32", "GB/s", n * (4 + 8 + 4),
         lambda: acc1.index_put_((pos,), val, accumulate=True),
         t(lambda: tacc1.index_put_((tpos,), tval, accumulate=True)), lambda: np.add.at(acc1_n, pos_n, val_n)),
        ("index_put_(accumulate) 4096 rows into 1024x1024", "GB/s", 3 * src.numel() * 4,
         lambda: acc2.index_put_((idx,), src, accumulate=True),
         t(lambda: tacc2.index_put_((tidx,), tsrc, accumulate=True)), None),
        ("gather(dim=1), 1024x1024 float32", "GB/s", gs_bytes,
         lambda: x.gather(1, i1), t(lambda: tx.gather(1, ti1)), lambda: np.take_along_axis(xn, in1, 1)),
        ("gather(dim=0), 1024x1024 float32", "GB/s", gs_bytes,
         lambda: x.gather(0, i0), t(lambda: tx.gather(0, ti0)), lambda: np.take_along_axis(xn, in0, 0)),
        ("scatter_add(dim=1), 1024x1024 float32", "GB/s", gs_bytes + n * 4,
         lambda: zeros.scatter_add(1, i1, x), t(lambda: tzeros.scatter_add(1, ti1, tx)), None),
        ("scatter_add(dim=0), 1024x1024 float32", "GB/s", gs_bytes + n * 4,
         lambda: zeros.scatter_add(0, i0, x), t(lambda: tzeros.scatter_add(0, ti0, tx)), None),
        ("index_add(dim=0), 4096 rows of 1024 into 1024", "GB/s", 2 * src.numel() * 4,
         lambda: zeros.index_add(0, idx, src), t(lambda: tzeros.index_add(0, tidx, tsrc)), None),
        ("cat of 1000 tensors of 16 float32", "us", None,
         lambda: ptl.cat(small), t(lambda: torch.cat(tsmall)), lambda: np.concatenate(small_n)),
        ("cat(dim=1) of 1000 tensors 4x8 float32", "us", None,
         lambda: ptl.cat(small2, 1), t(lambda: torch.cat(tsmall2, 1)), None),
        ("stack of 1000 tensors of 16 float32", "us", None,
         lambda: ptl.stack(small), t(lambda: torch.stack(tsmall)), lambda: np.stack(small_n)),
        ("cat of 4 tensors 2048x1024 float32 (dim=0)", "GB/s", big_bytes,
         lambda: ptl.cat(big), t(lambda: torch.cat(tbig)), lambda: np.concatenate(big_n)),
        ("cat of 4 tensors 2048x1024 float32 (dim=1)", "GB/s", big_bytes,
         lambda: ptl.cat(big, 1), t(lambda: torch.cat(tbig, 1)), lambda: np.concatenate(big_n, 1)),
        ("flip(dim=1), 1024x1024 float32", "GB/s", 2 * n * 4,
         lambda: x.flip(1), t(lambda: tx.flip(1)), lambda: np.ascontiguousarray(xn[:, ::-1])),
    ]
    bench = Bench("data movement, float32")
    for case, unit, nbytes, p_fn, t_fn, n_fn in cases:
        if unit == "us":
            bench.latency(case, p_fn, t_fn, n_fn, repeat=11)
        else:
            bench.bandwidth(case, nbytes, p_fn, t_fn, n_fn, repeat=11)
    bench.print()
    if have:
        print(f"\nthroughput pytorchlite / torch ({THREADS} threads, median of 11 interleaved repeats; "
              ">= 0.8 is the goal):")
        for case, unit, (p, tt, _n) in bench.rows:
            if p and tt:
                r = tt / p if unit == "us" else p / tt
                print(f"  {r:5.2f}x  {case}")


if __name__ == "__main__":
    main()
