"""Run under mpiexec by tests/test_distributed.py: every collective on every rank, checked
against NumPy. A failed check exits non-zero (mpiexec then fails the whole job)."""

import numpy as np

import pytorchlite as torch
import pytorchlite.distributed as dist

dist.init_process_group("mpi", init_method="env://")
r, n = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and dist.get_backend() == "mpi"


def eq(t, expected):
    np.testing.assert_array_equal(t.numpy(), np.asarray(expected, dtype=t.numpy().dtype), err_msg=f"rank {r}")


vals = [np.arange(6, dtype=np.float64).reshape(2, 3) * (k + 1) - k for k in range(n)]
for op, fn in [(dist.ReduceOp.SUM, np.sum), (dist.ReduceOp.PRODUCT, np.prod), (dist.ReduceOp.MIN, np.min),
               (dist.ReduceOp.MAX, np.max), (dist.ReduceOp.AVG, np.mean)]:
    for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
        if op is dist.ReduceOp.AVG and not dtype.is_floating_point:
            continue
        t = torch.tensor(vals[r], dtype=dtype)
        dist.all_reduce(t, op=op)
        eq(t, fn(np.stack(vals), axis=0).astype(t.numpy().dtype))

# bool: SUM and MAX are "any", PRODUCT and MIN are "all"
flags = [[k == 0, True, False] for k in range(n)]
for op, fn in [(dist.ReduceOp.SUM, np.any), (dist.ReduceOp.MAX, np.any), (dist.ReduceOp.MIN, np.all),
               (dist.ReduceOp.PRODUCT, np.all)]:
    t = torch.tensor(flags[r])
    dist.all_reduce(t, op=op)
    eq(t, fn(np.array(flags), axis=0))

# on the tensor's own memory: a view of a larger tensor is reduced in place, the rest untouched
base = torch.zeros(4, 5)
row = base[1]
ptr = row.data_ptr()
row.fill_(float(r + 1))
dist.all_reduce(row)
assert row.data_ptr() == ptr
eq(base[1], [n * (n + 1) / 2] * 5)
eq(base[0], [0] * 5)

# async: a Work handle
t = torch.full((1000,), float(r))
w = dist.all_reduce(t, async_op=True)
assert w.wait() is True and w.is_completed() and w.is_success()
eq(t, [sum(range(n))] * 1000)

# broadcast, including bfloat16 (moved as 16-bit words)
t = torch.full((3,), float(r), dtype=torch.bfloat16)
dist.broadcast(t, src=n - 1)
assert t.float().tolist() == [float(n - 1)] * 3

t = torch.tensor([r + 1.0, 2.0])
dist.reduce(t, dst=0, op=dist.ReduceOp.PRODUCT)
if r == 0:
    eq(t, [np.prod(np.arange(1, n + 1)), 2.0 ** n])

out = [torch.zeros(2, dtype=torch.int64) for _ in range(n)]
dist.all_gather(out, torch.tensor([r, 10 * r]))
for k in range(n):
    eq(out[k], [k, 10 * k])

o = torch.zeros(n, 2)
dist.all_gather_into_tensor(o, torch.tensor([r, r + 0.5]))
eq(o, [[k, k + 0.5] for k in range(n)])

inp = torch.arange(2.0 * n) * (r + 1)
o = torch.zeros(2)
dist.reduce_scatter_tensor(o, inp)
eq(o, (np.arange(2.0 * n) * sum(range(1, n + 1)))[2 * r:2 * r + 2])

gl = [torch.zeros(2) for _ in range(n)] if r == 0 else None
dist.gather(torch.tensor([r, -r], dtype=torch.float32), gl, dst=0)
if r == 0:
    for k in range(n):
        eq(gl[k], [k, -k])

t = torch.zeros(2)
dist.scatter(t, [torch.tensor([k, k + 0.25]) for k in range(n)] if r == 0 else None, src=0)
eq(t, [r, r + 0.25])

if r == 0:
    dist.send(torch.tensor([42.0, 43.0]), dst=1, tag=7)
elif r == 1:
    x = torch.zeros(2)
    assert dist.recv(x, tag=7) == 0
    eq(x, [42, 43])

# a subgroup of ranks 1..n-1: ranks are the group's, src is a global rank
g = dist.new_group(list(range(1, n)))
if r == 0:
    assert g is dist.GroupMember.NON_GROUP_MEMBER and dist.get_rank(g) == -1
    assert dist.all_reduce(torch.ones(1), group=g) is None
else:
    assert dist.get_rank(g) == r - 1 and dist.get_world_size(g) == n - 1
    t = torch.tensor([float(r)])
    dist.broadcast(t, src=n - 1, group=g)
    eq(t, [n - 1])
    t = torch.ones(1)
    dist.all_reduce(t, group=g)
    eq(t, [n - 1])

# errors PyTorch's MPI backend gives
for bad, kind, words in [(lambda: dist.all_reduce(torch.ones(3, 4).t()), RuntimeError, "has to be contiguous"),
                         (lambda: dist.all_reduce(torch.ones(2, dtype=torch.float16)), TypeError, "float16"),
                         (lambda: dist.all_reduce([1.0]), TypeError, "must be Tensor"),
                         (lambda: dist.all_reduce(torch.ones(2), op="sum"), TypeError, "ReduceOp"),
                         (lambda: dist.broadcast(torch.ones(2), src=n), ValueError, "not a rank"),
                         (lambda: dist.all_gather_into_tensor(torch.zeros(3), torch.zeros(2)), ValueError,
                          "world_size"),
                         (lambda: dist.init_process_group("mpi"), ValueError, "twice")]:
    try:
        bad()
    except kind as e:
        assert words in str(e), (words, str(e))
    else:
        raise AssertionError(f"no {kind.__name__} ({words})")

dist.barrier()
dist.destroy_process_group()
assert not dist.is_initialized()
print(f"rank {r} of {n}: collectives ok", flush=True)
