"""The per-rank entry point of pytorchlite.distributed.run: turns the MPI launcher's rank
variables into torchrun's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK)
and runs the script as __main__ in this process."""

import os
import runpy
import sys

# (rank, size, local rank, local size) as MPICH's hydra, Open MPI and Slurm name them
_LAUNCHERS = (("PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"),
              ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
               "OMPI_COMM_WORLD_LOCAL_SIZE"),
              ("SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE"))


def torchrun_env(environ):
    """The torchrun variables for this rank, from the MPI launcher's."""
    for rank, size, lrank, lsize in _LAUNCHERS:
        if rank in environ and size in environ:
            r, n = int(environ[rank]), int(environ[size])
            per_node = int(environ.get("PTL_NPROC_PER_NODE") or environ.get(lsize) or n)
            lr = int(environ[lrank]) if lrank in environ else r % per_node
            return {"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(lr),
                    "LOCAL_WORLD_SIZE": str(int(environ.get(lsize, per_node))), "GROUP_RANK": str(r // per_node),
                    "MASTER_ADDR": environ.get("MASTER_ADDR", "127.0.0.1"),
                    "MASTER_PORT": environ.get("MASTER_PORT", "29500")}
    raise RuntimeError("pytorchlite.distributed._rank_env: not started by an MPI launcher (no PMI_RANK, "
                       "OMPI_COMM_WORLD_RANK or SLURM_PROCID in the environment)")


def main(argv):
    os.environ.update(torchrun_env(os.environ))
    if argv and argv[0] == "--no-python":
        os.execvp(argv[1], argv[1:])
    if argv and argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(argv)
    sys.path.insert(0, os.path.dirname(os.path.abspath(argv[0])))
    runpy.run_path(argv[0], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
