"""The "nccl" backend: collectives on CUDA tensors through NVIDIA's NCCL library, loaded
from the nvidia-nccl wheel (nvidia-nccl-cu12 / nvidia-nccl-cu13: `nvidia/nccl/lib/
libnccl.so.2`, or PTL_NCCL_LIBRARY) with cffi in ABI mode -- nothing is compiled, and
importing this module touches neither the library nor a GPU.

The ranks' communicator is created from a unique id that rank 0 draws and MPI broadcasts
(the ranks are started by mpiexec or pytorchlite.distributed.run, as for the mpi backend;
world size 1 needs no MPI). Each operation is enqueued on the current stream of the
tensor's device; its Work records an event after it and polls that event (with the
group's timeout: an operation that does not finish aborts the communicator with
ncclCommAbort and raises, as PyTorch's watchdog does).

NCCL runs one rank per GPU: on a one-GPU machine only world size 1 runs.
"""

import glob
import os
import sys

import pytorchlite
from pytorchlite.distributed._work import DistBackendError, Work

_CDEF = """
typedef struct { char internal[128]; } ncclUniqueId;
typedef struct ncclComm* ncclComm_t;
typedef int ncclResult_t;
typedef void* cudaStream_t;
ncclResult_t ncclGetVersion(int* version);
ncclResult_t ncclGetUniqueId(ncclUniqueId* uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm, void* config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError);
const char* ncclGetErrorString(ncclResult_t result);
ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count, int datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count, int datatype, int op, int root,
                        ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount, int datatype,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount, int datatype, int op,
                               ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void* sendbuff, size_t count, int datatype, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void* recvbuff, size_t count, int datatype, int peer, ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
"""

# ncclDataType_t and ncclRedOp_t (nccl.h)
_DTYPES = {"int8": 0, "uint8": 1, "bool": 1, "int32": 2, "int64": 4, "float16": 6, "float32": 7, "float64": 8,
           "bfloat16": 9}
_OPS = {"SUM": 0, "PRODUCT": 1, "MAX": 2, "MIN": 3, "AVG": 4}
_NCCL_IN_PROGRESS = 7

_lib = None


def _library_path():
    env = os.environ.get("PTL_NCCL_LIBRARY")
    if env:
        return env
    for entry in sys.path:
        hits = sorted(glob.glob(os.path.join(entry, "nvidia", "nccl", "lib", "libnccl.so*")))
        if hits:
            return hits[0]
    return "libnccl.so.2"


def _load():
    global _lib
    if _lib is None:
        import cffi
        ffi = cffi.FFI()
        ffi.cdef(_CDEF)
        path = _library_path()
        try:
            lib = ffi.dlopen(path)
        except OSError as e:
            raise RuntimeError(f"init_process_group(backend='nccl'): cannot load NCCL ({path}): {e}; install the "
                               "NVIDIA NCCL wheel (pip install nvidia-nccl-cu12 or nvidia-nccl-cu13) or set "
                               "PTL_NCCL_LIBRARY") from None
        _lib = (ffi, lib)
    return _lib


def available():
    """Whether NCCL can be loaded and CUDA is usable (loads the library, never a kernel)."""
    try:
        import pytorchlite.cuda
        if not pytorchlite.cuda.is_available():
            return False
        _load()
    except Exception:   # no cuda-python, no driver, no libnccl: all mean "not available"
        return False
    return True


def _check(res, what):
    if res != 0:
        ffi, lib = _load()
        msg = ffi.string(lib.ncclGetErrorString(res)).decode()
        raise DistBackendError(f"NCCL error in {what}: {msg} (ncclResult {res})")


class _EventRequest:
    """A request whose Test() is "the event recorded after the operation has fired"; it
    also surfaces the communicator's asynchronous errors."""

    def __init__(self, group, event):
        self._group, self._event = group, event

    def Test(self):
        if self._event.query():
            return True
        self._group._async_error()
        return False


class NCCLGroup:
    backend = "nccl"

    def __init__(self, comm, ranks, global_rank, timeout_s, device):
        self._comm = comm
        self._ranks = list(ranks)
        self._global_rank = global_rank
        self._timeout_s = timeout_s
        self._device = device
        self._rank = ranks.index(global_rank)
        self._broken = None

    def rank(self):
        return self._rank

    def size(self):
        return len(self._ranks)

    def _mark_broken(self, opname):
        self._broken = opname
        if self._comm is not None:
            ffi, lib = _load()
            lib.ncclCommAbort(self._comm)      # frees the kernels the ranks wait in
            self._comm = None

    def _async_error(self):
        ffi, lib = _load()
        err = ffi.new("ncclResult_t *")
        _check(lib.ncclCommGetAsyncError(self._comm, err), "ncclCommGetAsyncError")
        if err[0] not in (0, _NCCL_IN_PROGRESS):
            _check(err[0], "an asynchronous operation")

    def destroy(self):
        if self._comm is not None:
            ffi, lib = _load()
            lib.ncclCommDestroy(self._comm)
            self._comm = None

    # ---- plumbing ----------------------------------------------------------------------
    def _arg(self, t, opname, arg, op=None):
        if t.device.type != "cuda":
            raise RuntimeError(f"{opname}: the nccl backend takes CUDA tensors, got argument '{arg}' on {t.device} "
                               "(use backend='mpi' for CPU tensors)")
        if t.device.index != self._device:
            raise RuntimeError(f"{opname}: argument '{arg}' is on {t.device} but this rank's NCCL communicator is on "
                               f"cuda:{self._device}")
        if not t.is_contiguous():
            raise ValueError(f"{opname}: Tensors must be contiguous (argument '{arg}')")
        name = str(t.dtype).split(".")[-1]
        if name not in _DTYPES:
            raise TypeError(f"{opname}: the nccl backend does not support {t.dtype}")
        if op is not None and name == "bool" and op not in ("MIN", "MAX"):
            raise TypeError(f"{opname}: {op} on bool tensors is not supported by NCCL")
        return t.data_ptr(), t.numel(), _DTYPES[name]

    def _stream(self):
        import pytorchlite.cuda as cuda
        return cuda.current_stream(self._device)

    def _launch(self, opname, call, result=()):
        if self._broken is not None or self._comm is None:
            raise RuntimeError(f"[Rank {self._global_rank}] {opname}: the process group is broken (an earlier "
                               f"{self._broken} timed out) or destroyed")
        import pytorchlite.cuda as cuda
        stream = self._stream()
        _check(call(self._ffi_stream(stream)), opname)
        ev = cuda.Event()
        ev.record(stream)
        return Work(self, opname, [_EventRequest(self, ev)], None, (), list(result))

    def _ffi_stream(self, stream):
        ffi, _ = _load()
        return ffi.cast("cudaStream_t", int(stream.cuda_stream))

    def _op(self, op):
        if op not in _OPS:
            raise TypeError(f"ReduceOp.{op} is not supported by the nccl backend")
        return _OPS[op]

    # ---- operations ---------------------------------------------------------------------
    def allreduce(self, t, op):
        ffi, lib = _load()
        p, n, dt = self._arg(t, "all_reduce", "tensor", op)
        vp = ffi.cast("void *", p)
        return self._launch("all_reduce", lambda s: lib.ncclAllReduce(vp, vp, n, dt, self._op(op), self._comm, s),
                            [t])

    def broadcast(self, t, root):
        ffi, lib = _load()
        p, n, dt = self._arg(t, "broadcast", "tensor")
        vp = ffi.cast("void *", p)
        return self._launch("broadcast", lambda s: lib.ncclBroadcast(vp, vp, n, dt, root, self._comm, s), [t])

    def reduce(self, t, root, op):
        ffi, lib = _load()
        p, n, dt = self._arg(t, "reduce", "tensor", op)
        vp = ffi.cast("void *", p)
        return self._launch("reduce", lambda s: lib.ncclReduce(vp, vp, n, dt, self._op(op), root, self._comm, s),
                            [t])

    def allgather_into(self, out, inp, opname="all_gather_into_tensor"):
        ffi, lib = _load()
        po, _, dt = self._arg(out, opname, "output_tensor")
        pi, n, _ = self._arg(inp, opname, "input_tensor")
        return self._launch(opname, lambda s: lib.ncclAllGather(ffi.cast("void *", pi), ffi.cast("void *", po), n,
                                                                dt, self._comm, s), [out])

    def reduce_scatter(self, out, inp, op):
        ffi, lib = _load()
        po, n, dt = self._arg(out, "reduce_scatter_tensor", "output", op)
        pi, _, _ = self._arg(inp, "reduce_scatter_tensor", "input", op)
        return self._launch("reduce_scatter_tensor", lambda s: lib.ncclReduceScatter(
            ffi.cast("void *", pi), ffi.cast("void *", po), n, dt, self._op(op), self._comm, s), [out])

    def _grouped(self, opname, pairs):
        """Point-to-point sends/receives in one NCCL group (gather, scatter)."""
        _, lib = _load()

        def call(s):
            _check(lib.ncclGroupStart(), opname)
            for fn in pairs:
                _check(fn(s), opname)
            return lib.ncclGroupEnd()
        return self._launch(opname, call)

    def _rooted(self, opname, mine, flat, root, arg, gather):
        """gather (every rank sends `mine` to the root, which receives into the rows of
        `flat`) or scatter (the reverse), as one group of point-to-point calls."""
        ffi, lib = _load()
        pm, n, dt = self._arg(mine, opname, "tensor")
        here, there = (lib.ncclSend, lib.ncclRecv) if gather else (lib.ncclRecv, lib.ncclSend)
        calls = [lambda s: here(ffi.cast("void *", pm), n, dt, root, self._comm, s)]
        if flat is not None:
            pf, _, _ = self._arg(flat, opname, arg)
            size = mine.element_size() * n
            calls += [lambda s, r=r: there(ffi.cast("void *", pf + r * size), n, dt, r, self._comm, s)
                      for r in range(self.size())]
        w = self._grouped(opname, calls)
        w._keep = (flat, mine)
        return w

    def gather_into(self, flat, inp, root):
        return self._rooted("gather", inp, flat, root, "gather_list", True)

    def scatter_from(self, flat, out, root):
        w = self._rooted("scatter", out, flat, root, "scatter_list", False)
        w._result = [out]
        return w

    def send(self, t, dst, tag):
        ffi, lib = _load()
        p, n, dt = self._arg(t, "send", "tensor")
        return self._launch("send", lambda s: lib.ncclSend(ffi.cast("void *", p), n, dt, dst, self._comm, s))

    def recv(self, t, src, tag):
        if src is None:
            raise ValueError("recv(): the nccl backend needs src (NCCL has no receive from any rank)")
        ffi, lib = _load()
        p, n, dt = self._arg(t, "recv", "tensor")
        w = self._launch("recv", lambda s: lib.ncclRecv(ffi.cast("void *", p), n, dt, src, self._comm, s), [t])
        w._source = self._ranks[src]
        return w

    def barrier(self):
        # PyTorch's NCCL barrier: an all-reduce of one element, then the host waits for it
        one = pytorchlite.zeros(1, device=f"cuda:{self._device}")
        w = self.allreduce(one, "SUM")
        w._keep = (one,)
        return w

    def subgroup(self, ranks, timeout_s):
        ffi, lib = _load()
        new = ffi.new("ncclComm_t *")
        member = self._global_rank in ranks
        color = 0 if member else -1          # NCCL_SPLIT_NOCOLOR
        _check(lib.ncclCommSplit(self._comm, color, self._rank, new, ffi.NULL), "new_group (ncclCommSplit)")
        if not member:
            return None
        return NCCLGroup(new[0], ranks, self._global_rank, timeout_s, self._device)


def check_usable():
    """Raise a RuntimeError saying why the nccl backend cannot run here (before any rank
    touches MPI)."""
    import pytorchlite.cuda as cuda
    if not cuda.is_available():
        raise RuntimeError("init_process_group(backend='nccl'): CUDA is not available (the nccl backend runs on "
                           "CUDA tensors; use backend='mpi' for CPU tensors)")
    _load()


def init_world(rank, size, timeout_s, device_id=None):
    import pytorchlite.cuda as cuda
    check_usable()
    ffi, lib = _load()
    if device_id is not None:
        device = pytorchlite.device(device_id).index or 0
    else:
        local = int(os.environ.get("LOCAL_RANK", rank))
        device = local % cuda.device_count()
    cuda.set_device(device)
    uid = ffi.new("ncclUniqueId *")
    if rank == 0:
        _check(lib.ncclGetUniqueId(uid), "ncclGetUniqueId")
    if size > 1:
        from pytorchlite.distributed import _mpi
        if not _mpi.available():
            raise RuntimeError("init_process_group(backend='nccl'): world_size > 1 needs mpi4py to share NCCL's "
                               "unique id (pip install 'pytorchlite[distributed]')")
        raw = _mpi.mpi().COMM_WORLD.bcast(bytes(ffi.buffer(uid)) if rank == 0 else None, root=0)
        ffi.buffer(uid)[:] = raw
    comm = ffi.new("ncclComm_t *")
    _check(lib.ncclCommInitRank(comm, size, uid[0], rank), "ncclCommInitRank")
    return NCCLGroup(comm[0], list(range(size)), rank, timeout_s, device)
