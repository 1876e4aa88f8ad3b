"""Training loops against PyTorch: one epoch of the README's digits CNN (the model of
examples/train_digits.py, built the same way in both frameworks from identical weights
and batches), and a DataLoader pass with 0 and 2 worker processes over a dataset whose
items cost real work (the goal: 2 workers no slower than 0).

    python benchmarks/bench_training.py
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from common import Bench, setup_threads  # noqa: E402


def digits_data(np):
    from sklearn.datasets import load_digits
    data = load_digits()
    x = (data.images.reshape(-1, 1, 8, 8) / 16.0).astype(np.float32)
    return x, data.target.astype(np.int64)


def make_cnn(lib, np, seed=0):
    """examples/train_digits.py's CNN in `lib` (pytorchlite or torch), with weights drawn
    by NumPy so both frameworks start from the same point."""
    nn = lib.nn

    class LinearLayer(nn.Module):
        def __init__(self, w, b):
            super().__init__()
            self.w = nn.Parameter(lib.tensor(w))
            self.b = nn.Parameter(lib.tensor(b))

        def forward(self, a):
            return lib.mm(a, self.w) + self.b

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            rng = np.random.default_rng(seed)
            self.fc = LinearLayer((rng.standard_normal((128, 10)) / 128 ** 0.5).astype(np.float32),
                                  np.zeros(10, np.float32))
            with lib.no_grad():
                for p in (self.conv1.weight, self.conv1.bias, self.conv2.weight, self.conv2.bias):
                    p.copy_(lib.tensor((rng.standard_normal(tuple(p.shape)) * 0.2).astype(np.float32)))

        def forward(self, x):
            t = self.pool(nn.functional.relu(self.conv1(x)))
            t = self.pool(nn.functional.relu(self.conv2(t)))
            return nn.functional.log_softmax(self.fc(t.flatten(1)), dim=1)

    return CNN()


def digits_epoch(lib, np, x, y, batch=32):
    model = make_cnn(lib, np)
    opt = lib.optim.Adam(model.parameters(), lr=2e-3)
    order = np.random.default_rng(0).permutation(len(x))
    batches = [(lib.tensor(x[order[i:i + batch]]), lib.tensor(y[order[i:i + batch]]))
               for i in range(0, len(x), batch)]

    def epoch():
        for xb, yb in batches:
            loss = lib.nn.functional.nll_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return epoch


class Work:
    """A dataset whose items cost about a millisecond of NumPy work each (a sort of 20,000
    numbers), the kind of per-item decoding/augmentation that worker processes exist for."""

    def __init__(self, n, np):
        self.n, self.np = n, np

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        np = self.np
        v = np.sort(np.random.default_rng(i).standard_normal(20_000)).astype(np.float32)
        return v[::200].copy(), i % 10


def loader_pass(lib, np, workers):
    ds = Work(512, np)
    loader = lib.utils.data.DataLoader(ds, batch_size=16, num_workers=workers,
                                       persistent_workers=workers > 0)

    def run():
        for xb, yb in loader:
            pass
    return run


def main():
    ptl, torch, np = setup_threads()
    b = Bench("training: digits CNN epoch (45 Adam steps of batch 32), DataLoader workers")
    try:
        x, y = digits_data(np)
    except ImportError:
        print("scikit-learn is not installed: no digits epoch (pip install scikit-learn)")
    else:
        b.latency("digits CNN: one training epoch (1797 images)", digits_epoch(ptl, np, x, y),
                  digits_epoch(torch, np, x, y) if torch else None, None, number=1, repeat=5)
    # torch's DataLoader imports torch.utils.data lazily
    if torch is not None:
        import torch.utils.data  # noqa: F401
    import pytorchlite.utils.data  # noqa: F401
    for w in (0, 2):
        b.latency(f"DataLoader, {w} workers: 512 items of ~1 ms work, batch 16", loader_pass(ptl, np, w),
                  loader_pass(torch, np, w) if torch else None, None, number=1, repeat=5)
    b.print()
    rows = {case: vals[0] for case, _, vals in b.rows}
    zero = rows.get("DataLoader, 0 workers: 512 items of ~1 ms work, batch 16")
    two = rows.get("DataLoader, 2 workers: 512 items of ~1 ms work, batch 16")
    if zero and two:
        print(f"pytorchlite DataLoader: 2 workers take {two / zero:.2f}x the time of 0 workers "
              "(goal: at most 1.0x)")


if __name__ == "__main__":
    main()
