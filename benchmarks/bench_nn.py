"""Neural-network kernels against PyTorch: conv2d forward + backward (batch 32, 1 -> 32
channels, 28x28, 3x3, padding 1; goal at most 1.3x PyTorch's time), an MLP training step
(784-256-10, batch 64, cross entropy, SGD; goal at most 1.2x), and softmax / max_pool2d
on their own.

    python benchmarks/bench_nn.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Bench, setup_threads  # noqa: E402


def main():
    ptl, torch, np = setup_threads()
    rng = np.random.default_rng(0)
    b = Bench("nn: convolution, pooling, softmax, an MLP step (float32)")

    # ---- conv2d forward + backward (input, weight and bias gradients) ----
    xn = rng.standard_normal((32, 1, 28, 28)).astype(np.float32)
    wn = (rng.standard_normal((32, 1, 3, 3)) / 3).astype(np.float32)
    bn = rng.standard_normal(32).astype(np.float32)

    def conv_case(lib):
        x = lib.tensor(xn, requires_grad=True)
        w = lib.tensor(wn, requires_grad=True)
        bias = lib.tensor(bn, requires_grad=True)

        def step():
            y = lib.nn.functional.conv2d(x, w, bias, padding=1)
            y.sum().backward()
            x.grad = w.grad = bias.grad = None
        return step

    def conv_fwd(lib):
        x, w, bias = lib.tensor(xn), lib.tensor(wn), lib.tensor(bn)
        return lambda: lib.nn.functional.conv2d(x, w, bias, padding=1)

    b.latency("conv2d 32x1x28x28, 32 3x3 filters: forward", conv_fwd(ptl), conv_fwd(torch) if torch else None, None)
    b.latency("conv2d 32x1x28x28, 32 3x3 filters: forward + backward", conv_case(ptl),
              conv_case(torch) if torch else None, None)

    # ---- a second layer's shape: 32 -> 64 channels on 14x14 ----
    x2n = rng.standard_normal((32, 32, 14, 14)).astype(np.float32)
    w2n = (rng.standard_normal((64, 32, 3, 3)) / 17).astype(np.float32)

    def conv2_case(lib):
        x = lib.tensor(x2n, requires_grad=True)
        w = lib.tensor(w2n, requires_grad=True)

        def step():
            lib.nn.functional.conv2d(x, w, padding=1).sum().backward()
            x.grad = w.grad = None
        return step
    b.latency("conv2d 32x32x14x14, 64 3x3 filters: forward + backward", conv2_case(ptl),
              conv2_case(torch) if torch else None, None)

    # ---- max_pool2d and softmax ----
    pn = rng.standard_normal((32, 32, 28, 28)).astype(np.float32)

    def pool_case(lib):
        x = lib.tensor(pn, requires_grad=True)

        def step():
            lib.nn.functional.max_pool2d(x, 2).sum().backward()
            x.grad = None
        return step
    b.latency("max_pool2d 32x32x28x28, 2x2: forward + backward", pool_case(ptl),
              pool_case(torch) if torch else None, None)

    sn = rng.standard_normal((256, 1000)).astype(np.float32)

    def softmax_case(lib):
        x = lib.tensor(sn)
        return lambda: lib.softmax(x, 1)
    b.latency("softmax 256x1000, dim=1", softmax_case(ptl), softmax_case(torch) if torch else None, None)

    # ---- an MLP training step: 784-256-10, batch 64 ----
    xin = rng.standard_normal((64, 784)).astype(np.float32)
    yin = rng.integers(0, 10, 64)

    def mlp_case(lib):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(784, 256), lib.nn.ReLU(), lib.nn.Linear(256, 10))
        opt = lib.optim.SGD(model.parameters(), lr=0.01)
        loss_fn = lib.nn.CrossEntropyLoss()
        x = lib.tensor(xin)
        y = lib.tensor(yin, dtype=lib.int64)

        def step():
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
        return step
    b.latency("MLP 784-256-10 batch 64: training step", mlp_case(ptl), mlp_case(torch) if torch else None, None)
    b.print()

    # the timed computation is right: same conv forward and gradients as torch
    if torch:
        x = ptl.tensor(xn, requires_grad=True)
        w = ptl.tensor(wn, requires_grad=True)
        y = ptl.nn.functional.conv2d(x, w, padding=1)
        (y * y).sum().backward()
        tx = torch.tensor(xn, requires_grad=True)
        tw = torch.tensor(wn, requires_grad=True)
        ty = torch.nn.functional.conv2d(tx, tw, padding=1)
        (ty * ty).sum().backward()
        assert np.allclose(y.detach().numpy(), ty.detach().numpy(), atol=1e-4)
        assert np.allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-3, atol=1e-2)
        assert np.allclose(x.grad.numpy(), tx.grad.numpy(), atol=1e-3)


if __name__ == "__main__":
    main()
