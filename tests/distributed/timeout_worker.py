"""Run under mpiexec by tests/test_distributed.py: rank 1 skips a collective (or dies);
rank 0 must raise a RuntimeError naming the operation within the group's timeout."""

import datetime
import os
import sys
import time

import pytorchlite as torch
import pytorchlite.distributed as dist

dist.init_process_group("mpi", timeout=datetime.timedelta(seconds=1.5))
if dist.get_rank() == 1:
    if sys.argv[1] == "die":
        os._exit(3)
    time.sleep(2.5)
    sys.exit(0)
t0 = time.monotonic()
try:
    dist.all_reduce(torch.ones(4))
except RuntimeError as e:
    print(f"raised after {time.monotonic() - t0:.2f} s: {e}", flush=True)
    try:
        dist.broadcast(torch.ones(1), 0)
    except RuntimeError as e2:
        print(f"then: {e2}", flush=True)
    dist.destroy_process_group()
    sys.exit(5)
print("no error", flush=True)
