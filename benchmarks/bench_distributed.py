"""All-reduce bandwidth and DDP step time on 2 ranks: pytorchlite.distributed (mpi
backend, MPICH) next to torch.distributed (gloo backend) in the same run.

    python benchmarks/bench_distributed.py [--max-mib 256] [--ranks 2]

Each framework runs as its own job of `--ranks` processes (pytorchlite under mpiexec,
torch started with RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT as torchrun would); rank 0
reports the median time per all-reduce of a float32 tensor of each size (1 KiB to
--max-mib MiB) and per DDP training step of the digits CNN (examples/train_digits.py's
model, batch 64 split over the ranks). Bandwidth is algorithm bandwidth: bytes / time.
The issue's goal: at least 0.8x gloo at 100 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def sizes(max_mib):
    out, b = [], 1024
    while b <= max_mib * 2 ** 20:
        out.append(b)
        b *= 4
    if 100 * 2 ** 20 <= max_mib * 2 ** 20:
        out.append(100 * 2 ** 20)
    return sorted(set(out))


def _time(fn, barrier, nbytes):
    reps = max(3, min(200, int(2e8 // max(nbytes, 1))))
    for _ in range(min(reps, 5)):
        fn()
    samples = []
    for _ in range(reps):
        barrier()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def _ddp_model(lib):
    nn = lib.nn

    class CNN(nn.Module):             # examples/train_digits.py's CNN, in either framework
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
            self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
            self.pool = nn.MaxPool2d(2)
            self.fc = nn.Linear(128, 10)

        def forward(self, x):
            t = self.pool(nn.functional.relu(self.conv1(x)))
            t = self.pool(nn.functional.relu(self.conv2(t)))
            return nn.functional.log_softmax(self.fc(t.flatten(1)), dim=1)
    return CNN()


def worker(kind, max_mib):
    if kind == "ptl":
        import pytorchlite as lib
        import pytorchlite.distributed as dist
        from pytorchlite.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("mpi")
    else:
        import torch as lib
        import torch.distributed as dist
        from torch.nn.parallel import DistributedDataParallel as DDP
        dist.init_process_group("gloo")
    lib.set_num_threads(1)
    rank, world = dist.get_rank(), dist.get_world_size()
    res = {"allreduce": {}}
    warm = lib.ones(256)
    _time(lambda: dist.all_reduce(warm), dist.barrier, 1024)   # both ranks up and connected
    for nbytes in sizes(max_mib):
        res["allreduce"][nbytes] = _time(lambda t=lib.ones(nbytes // 4): dist.all_reduce(t), dist.barrier, nbytes)
    lib.manual_seed(0)
    x, y = lib.randn(64 // world, 1, 8, 8), lib.randint(0, 10, (64 // world,))

    def stepper(model):
        opt = lib.optim.SGD(model.parameters(), lr=0.01)

        def step():
            loss = lib.nn.functional.nll_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
        return step
    # the same step without DDP (no communication): what the framework itself costs
    res["local_step"] = _time(stepper(_ddp_model(lib)), dist.barrier, 1e6)
    res["ddp_step"] = _time(stepper(DDP(_ddp_model(lib))), dist.barrier, 1e6)
    if rank == 0:
        sys.stdout.write("RESULT " + json.dumps(res) + "\n")
        sys.stdout.flush()
    dist.destroy_process_group()


def _free_port():
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _result(out, what):
    for line in out.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{what} produced no result:\n{out}")


def run_ptl(ranks, max_mib):
    from pytorchlite.distributed.run import mpiexec_path
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    p = subprocess.run([mpiexec_path(), "-n", str(ranks), sys.executable, __file__, "--worker", "ptl",
                        "--max-mib", str(max_mib)], capture_output=True, text=True, env=env)
    return _result(p.stdout + p.stderr, "pytorchlite")


def run_torch(ranks, max_mib):
    port = _free_port()
    procs = []
    for r in range(ranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   OMP_NUM_THREADS="1")
        procs.append(subprocess.Popen([sys.executable, __file__, "--worker", "torch", "--max-mib", str(max_mib)],
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env))
    outs = [p.communicate()[0] for p in procs]
    return _result(outs[0], "torch gloo")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--worker", choices=["ptl", "torch"])
    p.add_argument("--max-mib", type=int, default=256)
    p.add_argument("--ranks", type=int, default=2)
    args = p.parse_args()
    if args.worker:
        return worker(args.worker, args.max_mib)
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        print("bench_distributed: skipped (mpi4py is not installed: pip install -e '.[distributed]')")
        return
    ptl = run_ptl(args.ranks, args.max_mib)
    try:
        import torch  # noqa: F401
        ref = run_torch(args.ranks, args.max_mib)
    except ImportError:
        ref = None
    print(f"all_reduce (float32, SUM) on {args.ranks} ranks: pytorchlite mpi vs torch gloo, algorithm bandwidth")
    print("(ratio: pytorchlite's bandwidth over gloo's, higher is better; the goal is >= 0.8x at 100 MiB)")
    print(f"{'size':>10} {'ptl GB/s':>10} {'gloo GB/s':>10} {'ratio':>7}")
    for k, t in ptl["allreduce"].items():
        nbytes = int(k)
        size = f"{nbytes // 2 ** 20} MiB" if nbytes >= 2 ** 20 else f"{nbytes // 1024} KiB"
        bw = nbytes / t / 1e9
        if ref is not None:
            rbw = nbytes / ref["allreduce"][k] / 1e9
            print(f"{size:>10} {bw:10.3f} {rbw:10.3f} {bw / rbw:6.2f}x")
        else:
            print(f"{size:>10} {bw:10.3f} {'-':>10} {'-':>7}")
    print(f"training step of the digits CNN, batch 64 over {args.ranks} ranks (ms; in brackets: the same step "
          "without DDP, so the difference is DDP's cost)")
    for name, r in (("pytorchlite", ptl), ("torch gloo", ref)):
        if r is not None:
            print(f"{name:>12} {r['ddp_step'] * 1e3:8.2f} ({r['local_step'] * 1e3:.2f})")
    if ref is not None:
        print(f"DDP step: pytorchlite at {ref['ddp_step'] / ptl['ddp_step']:.2f}x torch's speed; DDP's own cost "
              f"{(ptl['ddp_step'] - ptl['local_step']) * 1e3:.2f} ms vs torch's "
              f"{(ref['ddp_step'] - ref['local_step']) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
