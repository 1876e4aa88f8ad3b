"""Autograd overhead: forward + backward of a chain of 100 small steps
(`x = x * 1.0001 + 0.0001` on 16 float32 elements, 200 recorded ops), against PyTorch.

On tensors this small the kernels cost nothing; what is measured is recording the graph
(one node per op, saved values, edges) and running it backward (dependency counting,
one formula per node, accumulation into .grad). The goal is at most 1.5x PyTorch's time.
Then the backward of matmul- and conv-sized work (goal: within 1.1x PyTorch's time).
Also reported: the same chain under no_grad (the forward alone, nothing recorded), and
the backward alone.

    python benchmarks/bench_autograd.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import CLOCK, Bench, setup_threads  # noqa: E402

STEPS = 100
N = 16


def chain(x):
    for _ in range(STEPS):
        x = x * 1.0001 + 0.0001
    return x


def main():
    ptl, torch, np = setup_threads()
    xn = np.linspace(0.5, 1.5, N).astype(np.float32)

    x = ptl.tensor(xn, requires_grad=True)
    tx = torch.tensor(xn, requires_grad=True) if torch else None

    def ptl_step():
        chain(x).sum().backward()

    def torch_step():
        chain(tx).sum().backward()

    def ptl_forward_no_grad():
        with ptl.no_grad():
            chain(x)

    def torch_forward_no_grad():
        with torch.no_grad():
            chain(tx)

    b = Bench(f"autograd: {STEPS} x (x * 1.0001 + 0.0001) on {N} float32")
    b.latency("forward + backward", ptl_step, torch_step if torch else None, None)
    b.latency("forward, no_grad", ptl_forward_no_grad, torch_forward_no_grad if torch else None, None)
    # the same chain with 16-element tensor operands instead of Python numbers: the
    # kernels take their fast path, so what remains is mostly the autograd machinery
    c, d = ptl.full((N,), 1.0001), ptl.full((N,), 0.0001)
    tc, td = (torch.full((N,), 1.0001), torch.full((N,), 0.0001)) if torch else (None, None)

    def chain_t(x, c, d):
        for _ in range(STEPS):
            x = x * c + d
        return x
    b.latency("tensor operands: forward + backward", lambda: chain_t(x, c, d).sum().backward(),
              (lambda: chain_t(tx, tc, td).sum().backward()) if torch else None, None)

    def no_grad_t(lib, x, c, d):
        with lib.no_grad():
            chain_t(x, c, d)
    b.latency("tensor operands: forward, no_grad", lambda: no_grad_t(ptl, x, c, d),
              (lambda: no_grad_t(torch, tx, tc, td)) if torch else None, None)
    b.print()

    # backward of matmul-sized work (the goal: within 1.1x PyTorch's time): the
    # graph is recorded once and kept (retain_graph), so only backward is timed
    big = Bench("autograd: backward of large work, float32 (graph recorded once, backward timed)")
    rng = np.random.default_rng(0)
    an, bn = rng.standard_normal((512, 512)).astype(np.float32), rng.standard_normal((512, 512)).astype(np.float32)
    wn, xn4 = rng.standard_normal((32, 16, 3, 3)).astype(np.float32), rng.standard_normal((32, 16, 28, 28)).astype(np.float32)

    def backward_of(lib, make_loss, leaves):
        loss = make_loss(lib, *[lib.tensor(v, requires_grad=True) for v in leaves])

        def run():
            loss.backward(retain_graph=True)
        return run
    mm_loss = (lambda lib, a, b: lib.relu(a @ b).sum())
    conv_loss = (lambda lib, x, w: lib.nn.functional.conv2d(x, w, padding=1).relu().sum())
    big.latency("relu(A @ B).sum() backward, 512x512", backward_of(ptl, mm_loss, (an, bn)),
                backward_of(torch, mm_loss, (an, bn)) if torch else None, None)
    big.latency("conv2d 32x16x28x28, 32 3x3 filters: backward", backward_of(ptl, conv_loss, (xn4, wn)),
                backward_of(torch, conv_loss, (xn4, wn)) if torch else None, None)
    big.print()

    # the backward alone: graphs built ahead, then timed backward per graph
    import statistics
    samples_ptl, samples_torch = [], []
    for _ in range(7):
        graphs = [chain(x).sum() for _ in range(20)]
        t0 = CLOCK()
        for g in graphs:
            g.backward()
        samples_ptl.append((CLOCK() - t0) * 1e-9 / len(graphs))
        if torch:
            graphs = [chain(tx).sum() for _ in range(20)]
            t0 = CLOCK()
            for g in graphs:
                g.backward()
            samples_torch.append((CLOCK() - t0) * 1e-9 / len(graphs))
    ours = statistics.median(samples_ptl) * 1e6
    line = f"backward alone: pytorchlite {ours:.0f} us"
    if torch:
        theirs = statistics.median(samples_torch) * 1e6
        line += f", torch {theirs:.0f} us, {ours / theirs:.2f}x torch"
    print(line)
    # correctness of what was timed
    x.grad = None
    chain(x).sum().backward()
    expected = 1.0001 ** STEPS
    assert np.allclose(x.grad.numpy(), expected, rtol=1e-4), x.grad


if __name__ == "__main__":
    main()
