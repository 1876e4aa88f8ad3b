"""pytorchlite.distributed, DistributedDataParallel and DistributedSampler.

The collectives run in real multi-process jobs started with mpiexec (the workers in
tests/distributed/ check every rank's results against NumPy and exit non-zero on a
mismatch); the parts that need no other process run here. Skipped where mpi4py or mpiexec
is missing (pip install -e ".[distributed]")."""

import os
import subprocess
import sys
import time

import pytest

import pytorchlite as torch
import pytorchlite.distributed as dist
from pytorchlite.utils.data.distributed import DistributedSampler

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKERS = os.path.join(ROOT, "tests", "distributed")


def _mpiexec():
    pytest.importorskip("mpi4py")
    from pytorchlite.distributed.run import mpiexec_path
    try:
        return mpiexec_path()
    except RuntimeError as e:
        pytest.skip(str(e))


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    return env


def _run(cmd, timeout=90):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(), cwd=ROOT)


def _mpirun(n, script, *args, extra=()):
    return _run([_mpiexec(), *extra, "-n", str(n), sys.executable, os.path.join(WORKERS, script), *args])


def _ok(p):
    assert p.returncode == 0, f"rc={p.returncode}\nstdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    return p.stdout


# ---- in this process ------------------------------------------------------------------------

def test_import_safe_and_uninitialised():
    assert dist.is_available() and not dist.is_initialized()
    assert isinstance(dist.is_nccl_available(), bool)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.all_reduce(torch.ones(2))


@pytest.mark.parametrize("kw, kind, words", [
    ({"backend": "gloo"}, ValueError, "unknown backend 'gloo'"),
    ({"init_method": "bogus://x"}, RuntimeError, "No rendezvous handler for bogus://"),
    ({"init_method": 5}, TypeError, "init_method"),
    ({"timeout": -1}, ValueError, "timeout"),
])
def test_init_argument_errors(kw, kind, words):
    """Rejected before MPI is touched."""
    with pytest.raises(kind, match=words):
        dist.init_process_group(**kw)
    assert not dist.is_initialized()


def test_nccl_without_cuda_says_so():
    pytest.importorskip("cffi")
    import pytorchlite.cuda
    if pytorchlite.cuda.is_available():
        pytest.skip("CUDA is available here")
    with pytest.raises(RuntimeError, match="backend='nccl'.*CUDA is not available"):
        dist.init_process_group("nccl")
    assert not dist.is_nccl_available() and not dist.is_initialized()


def test_reduce_op_names():
    assert [o.name for o in dist.ReduceOp] == ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
    assert str(dist.ReduceOp.SUM) == "RedOpType.SUM"


@pytest.mark.parametrize("n, k, drop_last, seed", [(10, 3, False, 0), (10, 3, True, 5), (1000, 4, False, 2 ** 33 + 7),
                                                    (7, 4, False, -3), (2, 5, False, 1), (9, 3, True, 0)])
def test_distributed_sampler_matches_torch(n, k, drop_last, seed):
    torch_ds = pytest.importorskip("torch.utils.data.distributed")
    for rank in range(k):
        mine = DistributedSampler(range(n), num_replicas=k, rank=rank, seed=seed, drop_last=drop_last)
        theirs = torch_ds.DistributedSampler(range(n), num_replicas=k, rank=rank, seed=seed, drop_last=drop_last)
        for epoch in (0, 1, 7):
            mine.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(mine) == list(theirs) and len(mine) == len(theirs)


def test_distributed_sampler_without_torch():
    s = [DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False) for r in range(3)]
    assert [list(x) for x in s] == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    d = [list(DistributedSampler(range(10), num_replicas=3, rank=r, shuffle=False, drop_last=True)) for r in range(3)]
    assert d == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    a = DistributedSampler(range(50), num_replicas=2, rank=0, seed=3)
    b = DistributedSampler(range(50), num_replicas=2, rank=1, seed=3)
    e0 = list(a) + list(b)
    assert sorted(e0) == list(range(50))                       # the ranks' shards partition the data
    a.set_epoch(1)
    assert list(a) != e0[:25]                                  # a new order each epoch
    with pytest.raises(ValueError, match=r"Invalid rank 3, rank should be in the interval \[0, 2\]"):
        DistributedSampler(range(5), num_replicas=3, rank=3)


def test_rank_env_from_mpi_variables():
    from pytorchlite.distributed._rank_env import torchrun_env
    env = torchrun_env({"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "4",
                        "MASTER_ADDR": "node0", "MASTER_PORT": "1234"})
    assert env == {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "GROUP_RANK": "1",
                   "MASTER_ADDR": "node0", "MASTER_PORT": "1234"}
    with pytest.raises(RuntimeError, match="not started by an MPI launcher"):
        torchrun_env({})


def test_world_size_mismatch_outside_a_launcher():
    """A process not started by mpiexec is a world of one: asking for two says how to launch."""
    pytest.importorskip("mpi4py")
    code = ("import pytorchlite.distributed as d\n"
            "try:\n    d.init_process_group('mpi', init_method='env://', rank=0, world_size=2)\n"
            "except ValueError as e:\n    print('ValueError:', e)\n")
    env = {k: v for k, v in _env().items() if not k.startswith(("PMI_", "RANK", "WORLD_SIZE", "OMPI_"))}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
    out = _ok(p)
    assert "world size mismatch: world_size=2" in out and "pytorchlite.distributed.run --nproc-per-node 2" in out


# ---- multi-process jobs --------------------------------------------------------------------

def test_collectives():
    """3 ranks: a subgroup of 2 leaves one rank out."""
    out = _ok(_mpirun(3, "collectives_worker.py"))
    assert all(f"rank {r} of 3: collectives ok" in out for r in range(3))


def test_ddp_behaviour():
    out = _ok(_mpirun(2, "ddp_worker.py"))
    assert "rank 0: ddp ok" in out and "rank 1: ddp ok" in out


def test_rank_that_skips_a_collective_makes_the_other_raise():
    t0 = time.monotonic()
    p = _mpirun(2, "timeout_worker.py", "skip")
    assert p.returncode != 0 and time.monotonic() - t0 < 30
    assert "all_reduce timed out after 0:00:01.5" in p.stdout, p.stdout + p.stderr
    assert "then: [Rank 0] broadcast: the process group is broken" in p.stdout


def test_rank_that_dies_makes_the_other_raise():
    # hydra's default kills the others when one dies; without that cleanup they time out
    t0 = time.monotonic()
    p = _mpirun(2, "timeout_worker.py", "die", extra=("-disable-auto-cleanup",))
    assert p.returncode != 0 and time.monotonic() - t0 < 30
    assert "all_reduce timed out" in p.stdout, p.stdout + p.stderr


def test_launcher_sets_torchrun_variables_on_two_simulated_nodes(tmp_path):
    """--nnodes 2 with a hostfile naming this machine twice (as localhost and 127.0.0.1):
    four ranks, two per "node", each with torchrun's variables and the script's arguments."""
    _mpiexec()
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost\n127.0.0.1\n")
    script = tmp_path / "show.py"
    script.write_text("import os, sys\nimport pytorchlite as t, pytorchlite.distributed as d\n"
                      "d.init_process_group('mpi', init_method='env://')\n"
                      "x = t.ones(1); d.all_reduce(x)\n"
                      "e = os.environ\n"
                      "sys.stdout.write(f\"R {e['RANK']} {e['WORLD_SIZE']} {e['LOCAL_RANK']} {e['LOCAL_WORLD_SIZE']} "
                      "{e['GROUP_RANK']} {e['MASTER_ADDR']} {int(x.item())} {sys.argv[1:]}\\n\")\n")
    out = _ok(_run([sys.executable, "-m", "pytorchlite.distributed.run", "--nnodes", "2", "--nproc-per-node", "2",
                    "--hostfile", str(hosts), "--master-port", "0", str(script), "--flag", "v"]))
    for rank in range(4):
        assert f"R {rank} 4 {rank % 2} 2 {rank // 2} localhost 4 ['--flag', 'v']" in out, out


def test_launcher_port_in_use():
    _mpiexec()
    import socket
    s = socket.socket()
    s.bind(("", 0))
    s.listen(1)
    port = s.getsockname()[1]
    try:
        p = _run([sys.executable, "-m", "pytorchlite.distributed.run", "--nproc-per-node", "2", "--master-port",
                  str(port), "nothing.py"])
    finally:
        s.close()
    assert p.returncode != 0 and f"MASTER_PORT {port} is in use" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("n", [2, 4])
def test_ddp_digits_equals_one_process_on_the_whole_batch(n):
    """examples/train_digits_ddp.py: n ranks on their shards end with the parameters one
    process gets from SGD on the whole batches (rank 0 trains that process alongside)."""
    pytest.importorskip("sklearn")
    p = _run([_mpiexec(), "-n", str(n), sys.executable, os.path.join(ROOT, "examples", "train_digits_ddp.py"),
              "--check", "--epochs", "1", "--steps", "8"])
    out = _ok(p)
    assert f"{n} ranks, 8 steps" in out and "largest parameter difference" in out


@pytest.mark.parametrize("module", ["pytorchlite.distributed", "pytorchlite.utils.data.distributed",
                                    "pytorchlite.nn.parallel.distributed"])
def test_docstring_examples(module):
    import doctest
    import importlib
    mod = importlib.import_module(module)
    result = doctest.testmod(mod, extraglobs={"pytorchlite": torch, "dist": dist},
                             optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0


def test_world_size_mismatch_under_the_launcher():
    """WORLD_SIZE (env://) that disagrees with what mpiexec started: a clear error on every rank."""
    code = ("import sys\nimport pytorchlite.distributed as d\n"
            "try:\n    d.init_process_group('mpi', init_method='env://')\n"
            "except ValueError as e:\n    sys.stdout.write(f'ValueError: {e}\\n')\n")
    out = _ok(_run([_mpiexec(), "-genv", "WORLD_SIZE", "3", "-n", "2", sys.executable, "-c", code]))
    assert out.count("world size mismatch: world_size=3 was requested but the launcher started 2 processes") == 2
