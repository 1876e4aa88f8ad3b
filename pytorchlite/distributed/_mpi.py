"""The "mpi" backend: collectives on CPU tensors through mpi4py.

Every operation is MPI's non-blocking form (Iallreduce, Ibcast, ...) on NumPy arrays that
are views of the tensors' own storage (`Tensor.numpy()` shares memory), so nothing is
copied where MPI's layout is the tensor's layout; a Work handle polls the request (see
_work.py). Ranks must be started by an MPI launcher (`mpiexec`, or
`python -m pytorchlite.distributed.run`, which runs mpiexec): MPI, not a TCP store,
connects them.
"""

import atexit
import sys

import pytorchlite
from pytorchlite.distributed._work import Work

_MPI = None
_broken_at_exit = []


def mpi():
    """mpi4py's MPI module, initialised on first use (thread level MULTIPLE)."""
    global _MPI
    if _MPI is None:
        import mpi4py
        if "mpi4py.MPI" not in sys.modules:
            # We initialise and finalise ourselves: a rank left with a timed-out collective
            # must not call MPI_Finalize at exit (it would wait for the operation forever).
            mpi4py.rc.initialize = False
            mpi4py.rc.finalize = False
            from mpi4py import MPI
            if not MPI.Is_initialized():
                MPI.Init_thread(MPI.THREAD_MULTIPLE)
            atexit.register(_finalize, MPI)
        else:
            from mpi4py import MPI
            if not MPI.Is_initialized():
                MPI.Init_thread(MPI.THREAD_MULTIPLE)
        _MPI = MPI
    return _MPI


def _finalize(MPI):
    if _broken_at_exit or MPI.Is_finalized():
        return
    MPI.Finalize()


def available():
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return False
    return True


def _mpi_op(op, t):
    """MPI's operation for ReduceOp `op` on t's dtype. MPI reduces booleans only with
    logical operations: SUM and MAX are OR, PRODUCT and MIN are AND (PyTorch's results)."""
    MPI = mpi()
    if t.dtype == pytorchlite.bool:
        return {"SUM": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR, "PRODUCT": MPI.LAND, "MIN": MPI.LAND,
                "BAND": MPI.LAND, "BXOR": MPI.LXOR}[op]
    return {"SUM": MPI.SUM, "AVG": MPI.SUM, "PRODUCT": MPI.PROD, "MIN": MPI.MIN, "MAX": MPI.MAX,
            "BAND": MPI.BAND, "BOR": MPI.BOR, "BXOR": MPI.BXOR}[op]


# MPI has no reduction over 16-bit floats or complex MIN/MAX; these move only as bytes
_NO_REDUCE = ("float16", "bfloat16")


class MPIGroup:
    """A process group over an MPI communicator (a duplicate of COMM_WORLD for the default
    group, a sub-communicator for new_group)."""

    backend = "mpi"

    def __init__(self, comm, ranks, global_rank, timeout_s):
        self._comm = comm
        self._ranks = list(ranks)            # global rank of each group rank
        self._global_rank = global_rank
        self._timeout_s = timeout_s
        self._broken = None

    def rank(self):
        return self._comm.Get_rank()

    def size(self):
        return self._comm.Get_size()

    def _mark_broken(self, opname):
        # MPI_Finalize (at exit) and freeing the communicator would wait for the operation
        # that timed out, forever: skip both in this process
        self._broken = opname
        _broken_at_exit.append(opname)

    def destroy(self):
        if self._broken is not None:
            self._comm = None
            return
        if self._comm is not None:
            self._comm.Free()
            self._comm = None

    # ---- buffers -------------------------------------------------------------------------
    def _buf(self, t, opname, arg, reduce_op=None):
        """A NumPy view of the tensor's memory for MPI (no copy)."""
        if t.device.type != "cpu":
            raise RuntimeError(f"{opname}: the mpi backend takes CPU tensors, got argument '{arg}' on {t.device} "
                               "(use backend='nccl' for CUDA tensors)")
        if not t.is_contiguous():
            raise RuntimeError(f"{opname}: input tensor has to be contiguous (argument '{arg}' has shape "
                               f"{list(t.shape)} and strides {list(t.stride())})")
        name = str(t.dtype).split(".")[-1]
        if reduce_op is not None:
            if name in _NO_REDUCE or (name == "bool" and reduce_op == "AVG"):
                raise TypeError(f"{opname}: the mpi backend cannot reduce {t.dtype} tensors with {reduce_op} "
                                "(MPI has no such reduction); convert to float32 first")
            if t.dtype.is_complex and reduce_op in ("MIN", "MAX"):
                raise TypeError(f"{opname}: {reduce_op} is not defined for complex tensors ({t.dtype})")
        d = t.detach()
        if name == "bfloat16":
            d = d.view(pytorchlite.int16)     # moved as 16-bit words: NumPy has no bfloat16
        return d.numpy().reshape(-1)

    def _start(self, opname, requests, finish=None, keep=(), result=None):
        if self._broken is not None:
            raise RuntimeError(f"[Rank {self._global_rank}] {opname}: the process group is broken (an earlier "
                               f"{self._broken} timed out); destroy it")
        return Work(self, opname, requests, finish, keep, result)

    def _avg(self, tensors, op):
        if op != "AVG":
            return None
        n = self.size()

        def finish():
            for t in tensors:
                d = t.detach()
                if d.dtype.is_floating_point or d.dtype.is_complex:
                    d.div_(n)
                else:
                    d.copy_(d.div(n, rounding_mode="trunc"))
        return finish

    # ---- collectives (every one returns a Work) --------------------------------------------
    def allreduce(self, t, op):
        b = self._buf(t, "all_reduce", "tensor", op)
        req = self._comm.Iallreduce(mpi().IN_PLACE, b, _mpi_op(op, t))
        return self._start("all_reduce", [req], self._avg([t], op), (b,), [t])

    def broadcast(self, t, root):
        b = self._buf(t, "broadcast", "tensor")
        return self._start("broadcast", [self._comm.Ibcast(b, root=root)], None, (b,), [t])

    def reduce(self, t, root, op):
        MPI = mpi()
        b = self._buf(t, "reduce", "tensor", op)
        if self.rank() == root:
            req = self._comm.Ireduce(MPI.IN_PLACE, b, _mpi_op(op, t), root=root)
            finish = self._avg([t], op)
        else:
            req = self._comm.Ireduce(b, None, _mpi_op(op, t), root=root)
            finish = None
        return self._start("reduce", [req], finish, (b,), [t])

    def allgather_into(self, out, inp, opname="all_gather_into_tensor"):
        bo, bi = self._buf(out, opname, "output_tensor"), self._buf(inp, opname, "input_tensor")
        return self._start(opname, [self._comm.Iallgather(bi, bo)], None, (bo, bi), [out])

    def reduce_scatter(self, out, inp, op):
        bo = self._buf(out, "reduce_scatter_tensor", "output", op)
        bi = self._buf(inp, "reduce_scatter_tensor", "input", op)
        req = self._comm.Ireduce_scatter_block(bi, bo, _mpi_op(op, out))
        return self._start("reduce_scatter_tensor", [req], self._avg([out], op), (bo, bi), [out])

    def gather_into(self, flat, inp, root):
        bi = self._buf(inp, "gather", "tensor")
        bo = self._buf(flat, "gather", "gather_list") if flat is not None else None
        return self._start("gather", [self._comm.Igather(bi, bo, root=root)], None, (bo, bi))

    def scatter_from(self, flat, out, root):
        bo = self._buf(out, "scatter", "tensor")
        bi = self._buf(flat, "scatter", "scatter_list") if flat is not None else None
        return self._start("scatter", [self._comm.Iscatter(bi, bo, root=root)], None, (bo, bi), [out])

    def send(self, t, dst, tag):
        b = self._buf(t, "send", "tensor")
        return self._start("send", [self._comm.Isend(b, dest=dst, tag=tag)], None, (b,))

    def recv(self, t, src, tag):
        MPI = mpi()
        b = self._buf(t, "recv", "tensor")
        status = MPI.Status()
        req = self._comm.Irecv(b, source=MPI.ANY_SOURCE if src is None else src, tag=tag)
        w = self._start("recv", [_StatusRequest(req, status)], None, (b,), [t])
        w._status = status
        return w

    def barrier(self):
        return self._start("barrier", [self._comm.Ibarrier()])

    def subgroup(self, ranks, timeout_s):
        """A communicator over `ranks` (global ranks, all ranks call this); None for ranks
        outside it."""
        world_group = self._comm.Get_group()
        # group ranks of the members in this communicator's numbering
        local = [self._ranks.index(r) for r in ranks]
        g = world_group.Incl(local)
        comm = self._comm.Create(g)
        g.Free()
        world_group.Free()
        if comm == mpi().COMM_NULL:
            return None
        return MPIGroup(comm, ranks, self._global_rank, timeout_s)


class _StatusRequest:
    """An Irecv request whose Test fills a Status (the sender's rank for recv(src=None))."""

    def __init__(self, req, status):
        self._req, self._status = req, status

    def Test(self):
        return self._req.Test(self._status)


def init_world(timeout_s):
    MPI = mpi()
    world = MPI.COMM_WORLD
    comm = world.Dup()
    return MPIGroup(comm, range(world.Get_size()), world.Get_rank(), timeout_s)


def world_rank_and_size():
    MPI = mpi()
    return MPI.COMM_WORLD.Get_rank(), MPI.COMM_WORLD.Get_size()
