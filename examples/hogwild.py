"""Hogwild! training (Niu et al., 2011) with pytorchlite.multiprocessing, after PyTorch's
mnist_hogwild example: one model lives in shared memory (`model.share_memory()`), and N
processes each run SGD on their own shard of scikit-learn's handwritten digits, all
updating the same parameters in place, without locks. The parent process never trains:
it only evaluates the shared model before and after, so the accuracy it reports is the
work of the children.

    python examples/hogwild.py [--processes 2] [--epochs 8] [--start-method spawn]

Each child gets the model through the Process arguments: with 'spawn' the parameters are
pickled as references to their shared memory, with 'fork' the child inherits the mapping.
"""

import argparse
import os
import sys
import time

import numpy as np

import pytorchlite as torch
import pytorchlite.multiprocessing as mp
import pytorchlite.nn as nn
import pytorchlite.nn.functional as F
import pytorchlite.optim as optim


def load_digits_split(seed):
    """(x_train, y_train, x_test, y_test): 8x8 digit images flattened to 64 features in [0, 1]."""
    from sklearn.datasets import load_digits
    data = load_digits()
    x = (data.data / 16.0).astype(np.float32)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return (torch.from_numpy(x[train]), torch.from_numpy(y[train]),
            torch.from_numpy(x[test]), torch.from_numpy(y[test]))


def make_model(hidden):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))


def train(rank, model, x, y, args):
    """One Hogwild worker: plain SGD on every `processes`-th example, writing straight into
    the shared parameters. Its optimizer (momentum buffers) and gradients are its own."""
    torch.set_num_threads(1)          # N processes on N cores: no intra-op threads on top
    torch.manual_seed(args.seed + 1 + rank)
    xs, ys = x[rank::args.processes], y[rank::args.processes]
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    n = len(xs)
    for epoch in range(args.epochs):
        perm = torch.randperm(n)
        total = 0.0
        for i in range(0, n, args.batch_size):
            idx = perm[i:i + args.batch_size]
            opt.zero_grad()
            loss = F.cross_entropy(model(xs[idx]), ys[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        if args.verbose:
            print(f"[process {rank} pid {os.getpid()}] epoch {epoch + 1}/{args.epochs} loss {total / n:.4f}",
                  flush=True)


def accuracy(model, x, y):
    with torch.no_grad():
        return (model(x).argmax(1) == y).float().mean().item()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--processes", type=int, default=2)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--start-method", default="spawn", choices=mp.get_all_start_methods())
    p.add_argument("--quiet", dest="verbose", action="store_false")
    args = p.parse_args(argv)

    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits_split(args.seed)
    model = make_model(args.hidden)
    model.share_memory()      # parameters move to shared memory, in place
    before = accuracy(model, x_test, y_test)
    print(f"{args.processes} processes ({args.start_method}), {len(x_train)} training images, "
          f"{sum(t.numel() for t in model.parameters())} shared parameters; test accuracy before "
          f"training {before:.2%}", flush=True)

    start = time.perf_counter()
    # like mp.spawn, but with the chosen start method; raises here if a worker fails
    mp.start_processes(train, args=(model, x_train, y_train, args), nprocs=args.processes,
                       start_method=args.start_method)
    acc = accuracy(model, x_test, y_test)
    print(f"Hogwild training took {time.perf_counter() - start:.1f} s; the parent's view of the shared "
          f"model: test accuracy {acc:.2%}")
    return before, acc


if __name__ == "__main__":
    _, acc = main()
    sys.exit(0 if acc >= 0.9 else 1)
