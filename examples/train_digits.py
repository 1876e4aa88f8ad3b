"""Train a small convolutional network on scikit-learn's handwritten digits (8x8 images,
shipped inside the package: no download) with pytorchlite, the way one would with PyTorch.

The model has the shape of Listing 1 of the PyTorch paper (Paszke et al., 2019): Conv2d
layers with relu, a hand-written `LinearLayer` module holding its own Parameters, and a
(log-)softmax output.

    python examples/train_digits.py [--epochs 30] [--seed 0] [--threads 1] [--out examples/out]
                                    [--export digits.onnx] [--device cuda]
    python examples/train_digits.py --profile [--profile-steps 6]

Prints a progress bar per epoch (loss, accuracy, samples/s), the held-out test accuracy,
saves a checkpoint (model and optimizer state, safetensors format) and reloads it into a
fresh model to check that it predicts the same, and writes a loss-curve PNG. With
`--export digits.onnx` it also writes the trained model as ONNX (a dynamic batch dimension)
and, when onnxruntime is installed, runs the test images through it and checks that it
predicts what pytorchlite does.

With --profile it instead runs a few training steps under pytorchlite.profiler (one
skipped, one of warm-up, the rest recorded), prints the operator table and writes the
trace (digits_trace.json, for Perfetto or chrome://tracing) and its two pictures:
digits_timeline.png (host and device lanes) and digits_timeline_memory.png (memory in use,
allocator calls marked).
"""

import argparse
import os
import sys
import time

import numpy as np

import pytorchlite as torch
import pytorchlite.nn as nn
import pytorchlite.optim as optim


def load_digits_split(seed):
    from sklearn.datasets import load_digits
    data = load_digits()
    x = (data.images.reshape(len(data.images), 1, 8, 8) / 16.0).astype(np.float32)   # (N, 1, 8, 8)
    y = data.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    n_test = len(x) // 5
    test, train = order[:n_test], order[n_test:]
    return (torch.from_numpy(x[train]), torch.from_numpy(y[train]),
            torch.from_numpy(x[test]), torch.from_numpy(y[test]))


class LinearLayer(nn.Module):
    """A fully connected layer written by hand, as in the paper's Listing 1 (the weight is
    scaled by 1/sqrt(in_sz) so that plain randn initialisation trains well)."""

    def __init__(self, in_sz, out_sz):
        super().__init__()
        t1 = torch.randn(in_sz, out_sz) / in_sz ** 0.5
        self.w = nn.Parameter(t1)
        t2 = torch.zeros(out_sz)
        self.b = nn.Parameter(t2)

    def forward(self, activations):
        t = torch.mm(activations, self.w)
        return t + self.b


class CNN(nn.Module):
    """conv 1->16 3x3, relu, maxpool 2, conv 16->32 3x3, relu, maxpool 2, flatten,
    LinearLayer(128, 10), log_softmax: (N, 1, 8, 8) -> (N, 10) log-probabilities."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = LinearLayer(32 * 2 * 2, 10)

    def forward(self, x):
        t = self.pool(nn.functional.relu(self.conv1(x)))      # (N, 16, 4, 4)
        t = self.pool(nn.functional.relu(self.conv2(t)))      # (N, 32, 2, 2)
        t = self.fc(t.flatten(1))
        return nn.functional.log_softmax(t, dim=1)


def train_step(model, opt, loss_fn, xb, yb):
    """One optimisation step on a batch: forward, loss, backward, Adam update. Returns the
    loss and the logits (benchmarks/bench_memory.py runs this step 10,000 times)."""
    logits = model(xb)
    loss = loss_fn(logits, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss, logits


def progress(epoch, epochs, done, total, loss, acc, rate, width=30):
    if not sys.stdout.isatty() and done < total:
        return  # piped to a file or CI log: one line per epoch, not one per batch
    filled = int(width * done / total)
    bar = "#" * filled + "-" * (width - filled)
    sys.stdout.write(f"\repoch {epoch:2d}/{epochs} [{bar}] {done:4d}/{total} "
                     f"loss {loss:.4f} acc {acc:6.2%} {rate:8.0f} samples/s")
    sys.stdout.flush()


def accuracy(model, x, y):
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(1)
    model.train()
    return (pred == y).float().mean().item()


def checkpoint_roundtrip(model, opt, x_test, y_test, path, device="cpu"):
    """Save model and optimizer state, load them into a fresh model and optimizer, and
    return the reloaded model's test accuracy (it must equal the trained model's)."""
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict()}, path)
    ckpt = torch.load(path)
    fresh = CNN().to(device)
    fresh.load_state_dict(ckpt["model"])
    optim.Adam(fresh.parameters()).load_state_dict(ckpt["optimizer"])
    acc = accuracy(fresh, x_test, y_test)
    print(f"checkpoint written to {path} ({os.path.getsize(path) / 1024:.0f} KiB); reloaded model's test "
          f"accuracy {acc:.2%}")
    return acc


def export_onnx(model, x_test, y_test, path):
    """Write `model` to `path` as ONNX (input "image" of shape (batch, 1, 8, 8), output
    "log_probs"); with onnxruntime installed, run the test set through it and check it
    against pytorchlite. Returns onnxruntime's test accuracy, or None without onnxruntime."""
    model.eval()
    torch.onnx.export(model, (x_test[:1],), path, input_names=["image"], output_names=["log_probs"],
                      dynamic_axes={"image": {0: "batch"}, "log_probs": {0: "batch"}})
    print(f"ONNX model written to {path} ({os.path.getsize(path) / 1024:.0f} KiB)")
    try:
        import onnxruntime
    except ImportError:
        print("onnxruntime is not installed: the ONNX model is not checked (pip install onnxruntime)")
        return None
    session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    got = session.run(None, {"image": x_test.numpy()})[0]
    with torch.no_grad():
        want = model(x_test).numpy()
    diff = float(np.abs(got - want).max())
    acc = float((got.argmax(1) == y_test.numpy()).mean())
    print(f"onnxruntime: test accuracy {acc:.2%}, largest difference from pytorchlite {diff:.1e}")
    if diff > 1e-4 or (got.argmax(1) != want.argmax(1)).any():
        raise RuntimeError(f"the ONNX model differs from pytorchlite's (largest difference {diff:.1e})")
    return acc


def profile_steps(model, opt, loss_fn, x_train, y_train, batch_size, steps, out):
    """Profile `steps` training steps (after one skipped and one warm-up step) and write the
    trace and its pictures into `out`. Returns the paths written."""
    from pytorchlite.profiler import ProfilerActivity, profile, schedule
    from pytorchlite.profiler import _plot
    os.makedirs(out, exist_ok=True)
    trace = os.path.join(out, "digits_trace.json")
    sched = schedule(wait=1, warmup=1, active=steps)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True, profile_memory=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(trace)) as prof:
        for step in range(steps + 2):
            i = step * batch_size
            train_step(model, opt, loss_fn, x_train[i:i + batch_size], y_train[i:i + batch_size])
            prof.step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15))
    print(f"trace of {steps} steps written to {trace}")
    written = [trace]
    try:
        for path in _plot.plot(trace, os.path.join(out, "digits_timeline.png")):
            print(f"picture written to {path}")
            written.append(path)
    except ImportError as e:
        print(e)
    return written


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--seed", type=int, default=0)
    # The model is tiny (a batch is 32 images of 8x8): each op has ~10^4 elements, too few to
    # pay for waking a thread team, and on a busy machine every parallel region waits for a
    # core. One thread is the fastest setting here; larger models want more.
    p.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    p.add_argument("--device", default="cpu", help="where the model trains (cpu, cuda); the data stays on "
                   "the CPU and each batch is copied")
    p.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out"))
    p.add_argument("--export", metavar="PATH", default=None,
                   help="also write the trained model as ONNX to PATH (checked in onnxruntime when installed)")
    p.add_argument("--profile", action="store_true",
                   help="profile a few training steps instead of training: write the trace and its pictures")
    p.add_argument("--profile-steps", type=int, default=4, help="steps recorded with --profile (default 4)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    x_train, y_train, x_test, y_test = load_digits_split(args.seed)
    model = CNN().to(args.device)
    x_test, y_test = x_test.to(args.device), y_test.to(args.device)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.NLLLoss()          # the model ends in log_softmax
    print(model)
    print(f"{len(x_train)} training / {len(x_test)} test images, {sum(p.numel() for p in model.parameters())} "
          "parameters")

    if args.profile:
        return profile_steps(model, opt, loss_fn, x_train.to(args.device), y_train.to(args.device), args.batch_size,
                             args.profile_steps, args.out)

    n = len(x_train)
    history = []
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        perm = torch.randperm(n)
        seen, correct, total_loss = 0, 0, 0.0
        t0 = time.perf_counter()
        for i in range(0, n, args.batch_size):
            idx = perm[i:i + args.batch_size]
            xb, yb = x_train[idx].to(args.device), y_train[idx].to(args.device)
            loss, logits = train_step(model, opt, loss_fn, xb, yb)
            b = len(yb)
            seen += b
            total_loss += loss.item() * b
            correct += (logits.argmax(1) == yb).sum().item()
            progress(epoch, args.epochs, seen, n, total_loss / seen, correct / seen,
                     seen / (time.perf_counter() - t0))
        history.append(total_loss / seen)
        print(f"  test acc {accuracy(model, x_test, y_test):6.2%}")

    test_acc = accuracy(model, x_test, y_test)
    print(f"trained {args.epochs} epochs in {time.perf_counter() - start:.1f} s; held-out test accuracy "
          f"{test_acc:.2%}")

    os.makedirs(args.out, exist_ok=True)
    reloaded_acc = checkpoint_roundtrip(model, opt, x_test, y_test, os.path.join(args.out, "digits_cnn.safetensors"),
                                        args.device)
    if reloaded_acc != test_acc:
        raise RuntimeError(f"the reloaded model scores {reloaded_acc:.4%}, the trained one {test_acc:.4%}")
    if args.export:
        export_onnx(model, x_test, y_test, args.export)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.plot(range(1, len(history) + 1), history, marker="o")
        ax.set_xlabel("epoch")
        ax.set_ylabel("training loss")
        ax.set_title(f"digits CNN (test accuracy {test_acc:.1%})")
        fig.tight_layout()
        path = os.path.join(args.out, "digits_loss.png")
        fig.savefig(path, dpi=100)
        print(f"loss curve written to {path}")
    except ImportError:
        print("matplotlib is not installed: no loss-curve PNG (pip install matplotlib)")
    return test_acc


if __name__ == "__main__":
    acc = main()
    sys.exit(0 if isinstance(acc, list) or acc >= 0.97 else 1)
