"""Training with nn modules and optimizers holds steady memory: 10,000 steps of a model
with a convolution, an LSTM, attention-free layers and Adam leave the allocator's count of
live bytes where it was after the warm-up, with the cyclic garbage collector switched off
(so nothing relies on it: each step's graph is freed by reference counting alone)."""

import gc
import weakref

import pytorchlite as P
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F
import pytorchlite.optim as optim
from pytorchlite import memory
from pytorchlite._kernels import pointwise as _pointwise


def _live_bytes():
    """Bytes of live tensors, less the 0-d operand tensors that pointwise ops keep for
    Python scalars (two caches of at most 256 entries each, see _kernels/pointwise.py):
    Adam's bias corrections are a new scalar every step, so those caches fill and clear
    in cycles, bounded, which is not what this test looks for."""
    _pointwise._SCALARS.clear()
    _pointwise._FAST_SCALARS.clear()
    return memory.memory_allocated()


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.norm = nn.BatchNorm2d(2)
        self.rnn = nn.LSTM(8, 4, batch_first=True)
        self.fc = nn.Linear(4, 3)

    def forward(self, x):                       # (N, 1, 4, 4)
        t = F.max_pool2d(F.relu(self.norm(self.conv(x))), 2)      # (N, 2, 2, 2)
        out, _ = self.rnn(t.reshape(x.shape[0], 1, 8))            # (N, 1, 4)
        return self.fc(F.dropout(out[:, -1], 0.1, self.training))


def test_ten_thousand_training_steps_hold_steady_memory():
    P.manual_seed(0)
    model = _Net()
    opt = optim.Adam(model.parameters(), lr=1e-2)
    x = P.randn(6, 1, 4, 4)
    y = P.tensor([0, 1, 2, 0, 1, 2])

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return weakref.ref(loss.grad_fn), loss.item()

    gc.collect()
    gc.disable()
    try:
        for _ in range(50):         # optimizer state and cached blocks come into being here
            step()
        start = _live_bytes()
        losses = []
        for i in range(10_000):
            ref, loss = step()
            assert ref() is None, "a step's graph outlived the step"
            if i % 500 == 0:
                losses.append(loss)
                now = _live_bytes()
                assert now == start, f"step {i}: {now - start} bytes more"
        assert _live_bytes() == start
        assert losses[-1] < losses[0]
    finally:
        gc.enable()
