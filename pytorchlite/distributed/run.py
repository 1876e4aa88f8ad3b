"""A torchrun-like launcher over MPI:

    python -m pytorchlite.distributed.run --nproc-per-node N script.py [args...]

MPI connects the ranks, so the launcher runs the MPI launcher (`mpiexec -n N`) on a small
per-rank entry point that sets what torchrun sets -- RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT -- from MPI's own rank variables
and then runs the script as `__main__`. A script therefore runs the same way under
`mpiexec -n N python script.py` (init_process_group reads MPI's ranks there).

Several machines: a hostfile (one host name per line, as mpiexec's `-f` takes) and
`--nnodes`; mpiexec starts `--nproc-per-node` ranks on each host over ssh:

    python -m pytorchlite.distributed.run --nnodes 2 --nproc-per-node 4 --hostfile hosts train.py

MASTER_PORT is held open by the launcher for the job's lifetime (as torchrun's store
does), so two jobs given the same port fail at once with a clear error.
"""

import argparse
import os
import shutil
import socket
import subprocess
import sys

__all__ = ["main", "mpiexec_path"]


def mpiexec_path():
    """The MPI launcher: the one installed next to this Python (the mpich wheel puts it
    there), else the first mpiexec on PATH."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.access(here, os.X_OK):
        return here
    found = shutil.which("mpiexec")
    if found is None:
        raise RuntimeError("pytorchlite.distributed.run: no `mpiexec` found: pip install 'pytorchlite[distributed]' "
                           "(the mpich wheel brings mpiexec)")
    return found


def _parser():
    p = argparse.ArgumentParser(prog="python -m pytorchlite.distributed.run",
                                description="Start a training script on several processes (over mpiexec).")
    p.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="processes per machine")
    p.add_argument("--nnodes", type=int, default=1, help="machines (listed in --hostfile)")
    p.add_argument("--hostfile", default=None, help="mpiexec host file (one host per line) for --nnodes > 1")
    p.add_argument("--master-addr", "--master_addr", default=None,
                   help="MASTER_ADDR (default: the first host of --hostfile, else 127.0.0.1)")
    p.add_argument("--master-port", "--master_port", type=int, default=29500,
                   help="MASTER_PORT (default 29500; 0 picks a free port)")
    p.add_argument("--mpiexec-arg", action="append", default=[],
                   help="an extra argument for mpiexec (repeatable), e.g. --mpiexec-arg=-disable-auto-cleanup")
    p.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    p.add_argument("--no-python", "--no_python", action="store_true",
                   help="run the script as an executable, not through Python")
    p.add_argument("script", help="the training script (or module with -m, executable with --no-python)")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p


def _first_host(path):
    with open(path) as f:
        for line in f:
            host = line.split("#", 1)[0].split(":", 1)[0].strip()
            if host:
                return host
    raise ValueError(f"pytorchlite.distributed.run: hostfile {path} lists no host")


def _reserve_port(addr, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.bind(("", port))
        s.listen(1)
    except OSError as e:
        s.close()
        raise RuntimeError(f"pytorchlite.distributed.run: MASTER_PORT {port} is in use ({e.strerror}): another job "
                           "holds it; pass --master-port with a free port (or 0 for any)") from None
    return s


def build_command(args, master_addr, master_port):
    n = args.nproc_per_node * args.nnodes
    cmd = [mpiexec_path(), "-n", str(n)]
    if args.nnodes > 1:
        cmd += ["-f", args.hostfile, "-ppn", str(args.nproc_per_node)]
    cmd += args.mpiexec_arg
    cmd += ["-genv", "MASTER_ADDR", master_addr, "-genv", "MASTER_PORT", str(master_port),
            "-genv", "PTL_NPROC_PER_NODE", str(args.nproc_per_node)]
    if args.no_python:
        cmd += [sys.executable, "-m", "pytorchlite.distributed._rank_env", "--no-python", args.script]
    else:
        cmd += [sys.executable, "-m", "pytorchlite.distributed._rank_env"] + (["-m"] if args.module else []) + \
            [args.script]
    return cmd + list(args.script_args)


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.nproc_per_node < 1 or args.nnodes < 1:
        raise SystemExit("pytorchlite.distributed.run: --nproc-per-node and --nnodes must be at least 1")
    if args.nnodes > 1 and args.hostfile is None:
        raise SystemExit("pytorchlite.distributed.run: --nnodes > 1 needs --hostfile (the machines to start on)")
    try:
        master_addr = args.master_addr or (_first_host(args.hostfile) if args.hostfile else "127.0.0.1")
        held = _reserve_port(master_addr, args.master_port)
    except (RuntimeError, ValueError, OSError) as e:
        raise SystemExit(str(e)) from None
    try:
        port = held.getsockname()[1]
        try:
            cmd = build_command(args, master_addr, port)
        except RuntimeError as e:
            raise SystemExit(str(e)) from None
        proc = subprocess.Popen(cmd)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            proc.terminate()
            return proc.wait()
    finally:
        held.close()


if __name__ == "__main__":
    sys.exit(main())
