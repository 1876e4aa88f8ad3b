"""The digits CNN of examples/train_digits.py trained data-parallel on several processes
with DistributedDataParallel over MPI:

    python -m pytorchlite.distributed.run --nproc-per-node 2 examples/train_digits_ddp.py
    mpiexec -n 4 python examples/train_digits_ddp.py --epochs 5          # the same, by hand

Each rank reads its own shard of every batch (DistributedSampler: rank r gets every
world_size-th index of a shuffled order that all ranks share), backward averages the
gradients over the ranks, and every rank takes the same SGD step: the step one process
would take on the whole batch. `--check` proves it: rank 0 also trains a second copy of
the model alone, on the whole batches, and compares the parameters at the end.
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pytorchlite as torch                                        # noqa: E402
import pytorchlite.distributed as dist                             # noqa: E402
import pytorchlite.nn as nn                                        # noqa: E402
import pytorchlite.optim as optim                                  # noqa: E402
from pytorchlite.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from pytorchlite.utils.data.distributed import DistributedSampler  # noqa: E402
from train_digits import CNN, accuracy, load_digits_split           # noqa: E402


def shard_batches(n, world, rank, epoch, batch_per_rank, seed):
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=seed)
    sampler.set_epoch(epoch)
    idx = list(sampler)
    return [idx[i:i + batch_per_rank] for i in range(0, len(idx), batch_per_rank)]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch-size", type=int, default=32, help="the global batch (split over the ranks)")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, default=None, help="stop after this many steps (for tests)")
    p.add_argument("--check", action="store_true",
                   help="rank 0 also trains one process on the whole batches and compares the parameters")
    args = p.parse_args(argv)

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} must be a multiple of the world size {world}")
    b = args.batch_size // world
    torch.set_num_threads(1)
    torch.manual_seed(args.seed + rank)        # DDP makes the initial parameters rank 0's
    x_train, y_train, x_test, y_test = load_digits_split(args.seed)
    model = DDP(CNN())
    opt = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.NLLLoss()
    ref = ref_opt = None
    if args.check and rank == 0:
        ref = CNN()
        ref.load_state_dict(model.module.state_dict())
        ref_opt = optim.SGD(ref.parameters(), lr=args.lr, momentum=0.9)

    n, step, start = len(x_train), 0, time.perf_counter()
    for epoch in range(args.epochs):
        mine = shard_batches(n, world, rank, epoch, b, args.seed)
        every = [shard_batches(n, world, r, epoch, b, args.seed) for r in range(world)] if ref is not None else None
        total, done = 0.0, 0
        for i, idx in enumerate(mine):
            if args.steps is not None and step >= args.steps:
                break
            idx_t = torch.tensor(idx)
            loss = loss_fn(model(x_train[idx_t]), y_train[idx_t])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item()
            step += 1
            done += 1
            if ref is not None:
                whole = torch.tensor([j for r in range(world) for j in every[r][i]])
                ref_loss = loss_fn(ref(x_train[whole]), y_train[whole])
                ref_opt.zero_grad()
                ref_loss.backward()
                ref_opt.step()
        if rank == 0:
            print(f"epoch {epoch + 1}: mean shard loss {total / max(done, 1):.4f}, test accuracy "
                  f"{accuracy(model.module, x_test, y_test):.2%}", flush=True)
    if rank == 0:
        print(f"{world} ranks, {step} steps in {time.perf_counter() - start:.1f} s", flush=True)

    if ref is not None:
        worst = max((a - r).abs().max().item() for a, r in zip(model.module.parameters(), ref.parameters()))
        print(f"largest parameter difference from one process on the whole batches: {worst:.3g}", flush=True)
        if worst > 1e-6:
            raise SystemExit(f"DDP diverged from single-process training: {worst}")
    # every rank must hold the same parameters
    flat = torch.cat([q.detach().reshape(-1) for q in model.module.parameters()])
    hi, lo = flat.clone(), flat.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    if (hi - lo).abs().max().item() != 0:
        raise SystemExit(f"rank {rank}: the ranks' parameters differ")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
