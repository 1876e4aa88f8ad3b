"""Run under mpiexec by tests/test_distributed.py: DistributedDataParallel's behaviour
beyond plain training (which examples/train_digits_ddp.py --check covers)."""

import sys

import pytorchlite as torch
import pytorchlite.distributed as dist
import pytorchlite.nn as nn
from pytorchlite.nn.parallel import DistributedDataParallel as DDP
from pytorchlite.nn.parallel.distributed import _bucket_assignment

dist.init_process_group("mpi")
r, n = dist.get_rank(), dist.get_world_size()


class Two(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(3, 2)
        self.b = nn.Linear(3, 2)
        self.bn = nn.BatchNorm1d(2)

    def forward(self, x, use_b=True):
        return self.bn(self.a(x) + (self.b(x) if use_b else 0))


torch.manual_seed(r)                   # different on each rank until DDP broadcasts rank 0's
m = DDP(Two())
ref = [p.detach().clone() for p in m.parameters()]
for p, q in zip(m.parameters(), ref):
    hi = q.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    assert (hi == q).all().item(), "construction did not broadcast rank 0's parameters"

W = torch.arange(8.0).view(4, 2)


def batch(k):
    return torch.arange(12.0).view(4, 3).sin() * (k + 1)


x = batch(r)
(m(x) * W).sum().backward()
g_sync = [p.grad.clone() for p in m.parameters()]
for g in g_sync:                       # the average over the ranks: the same everywhere
    hi = g.clone()
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    assert (hi == g).all().item()

# the expected average, computed locally from every rank's input
local = []
for k in range(n):
    mod = Two()
    mod.load_state_dict(m.module.state_dict())
    (mod(batch(k)) * W).sum().backward()
    local.append([p.grad for p in mod.parameters()])
for i, g in enumerate(g_sync):
    avg = sum(loc[i] for loc in local) / n
    assert (g - avg).abs().max().item() < 1e-5, (i, g, avg)

# no_sync: local accumulation, averaged by the next synced backward
m.zero_grad()
with m.no_sync():
    (m(x) * W).sum().backward()
for p, lg in zip(m.parameters(), local[r]):       # this rank's own gradient, not averaged
    assert (p.grad - lg).abs().max().item() < 1e-5
(m(x) * W).sum().backward()                        # accumulates, then averages the sum
for i, p in enumerate(m.parameters()):
    avg = sum(loc[i] for loc in local) / n
    assert (p.grad - 2 * avg).abs().max().item() < 1e-5, (i, p.grad, avg)

# a parameter that gets no gradient, without find_unused_parameters: PyTorch's error next forward
m.zero_grad()
(m(x, use_b=False) * W).sum().backward()
try:
    m(x)
except RuntimeError as e:
    assert "Expected to have finished reduction in the prior iteration" in str(e) and "rank" in str(e), str(e)
    assert "2 3" in str(e), str(e)        # b.weight and b.bias are parameters 2 and 3
else:
    raise AssertionError("no error for unused parameters")

# with find_unused_parameters=True it works, and an unused parameter's grad stays None
torch.manual_seed(0)
m2 = DDP(Two(), find_unused_parameters=True)
for _ in range(2):
    m2.zero_grad()
    (m2(x, use_b=False) * W).sum().backward()
    assert m2.module.b.weight.grad is None and m2.module.a.weight.grad is not None

# buckets: reverse parameter order, a small first bucket
sizes = [torch.empty(k) for k in (10, 300_000, 300_000, 10)]     # 40 B, 1.2 MB, 1.2 MB, 40 B
assert _bucket_assignment(sizes, 25 * 2 ** 20, 2 ** 20) == [[3, 2], [1, 0]]
assert _bucket_assignment(sizes, 1, 1) == [[3], [2], [1], [0]]

# overlap: with one parameter per bucket, the last layers' all-reduces start while backward
# has not yet reached the first layer
events = []
seq = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 4), nn.Linear(4, 2))
m3 = DDP(seq, bucket_cap_mb=1e-6)
assert len(m3._buckets) == 6 and [b.params for b in m3._buckets] == [[5], [4], [3], [2], [1], [0]]
real_all_reduce = dist.all_reduce


def logged(t, *a, **k):
    events.append(("start", t.numel()))
    return real_all_reduce(t, *a, **k)


dist.all_reduce = logged
seq[0].weight.register_hook(lambda g: events.append(("first layer grad", g.numel())))
m3(x).sum().backward()
dist.all_reduce = real_all_reduce
first = events.index(("first layer grad", 12))
started = [e[1] for e in events[:first] if e[0] == "start"]
assert started == [2, 8, 4, 16, 4], events      # fc3.bias, fc3.weight, fc2.bias, fc2.weight, fc1.bias

# the same in the profiler's trace: the first "mpi:all_reduce" range starts before backward
# runs the first layer's node (it may already have ended there: the transfer overlapped)
from pytorchlite.profiler import profile  # noqa: E402

with profile() as prof:
    m3(x).sum().backward()
ev = prof.events()
comm = [e for e in ev if e.name == "mpi:all_reduce"]
nodes = [e for e in ev if e.name == "AddmmBackward0"]
assert len(comm) == 6 and len(nodes) == 3, [e.name for e in ev]
assert comm[0].time_range.start < nodes[-1].time_range.start, (comm[0], nodes[-1])

dist.destroy_process_group()
print(f"rank {r}: ddp ok", flush=True)
sys.exit(0)
