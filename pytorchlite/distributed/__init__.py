"""pytorchlite.distributed: torch.distributed's process groups and collectives.

Backends: "mpi" for CPU tensors (mpi4py over the MPI the `distributed` extra installs:
`pip install -e ".[distributed]"`), "nccl" for CUDA tensors (the NVIDIA NCCL library).
Ranks are started by an MPI launcher, which is what connects them:

    python -m pytorchlite.distributed.run --nproc-per-node 2 train.py    # runs mpiexec
    mpiexec -n 2 python train.py                                         # the same

and the script calls `init_process_group("mpi")` (or with `init_method="env://"`, reading
RANK / WORLD_SIZE, which must then agree with MPI's). Every collective works on the
tensors' own memory; `async_op=True` returns a `Work` whose `wait()` raises a
RuntimeError naming the operation if the other ranks do not take part within the group's
`timeout`.

>>> import pytorchlite.distributed as dist
>>> dist.is_initialized()
False
"""

import datetime
import enum
import os

import pytorchlite
from pytorchlite.distributed._work import DistBackendError, DistTimeoutError, Work, _seconds
from pytorchlite.distributed import _mpi

__all__ = ["ReduceOp", "Work", "GroupMember", "DistBackendError", "DistTimeoutError", "is_available",
           "is_initialized", "is_mpi_available", "is_nccl_available", "init_process_group",
           "destroy_process_group", "get_rank", "get_world_size", "get_backend", "new_group", "all_reduce",
           "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter_tensor", "gather",
           "scatter", "send", "recv", "isend", "irecv", "barrier", "get_global_rank", "get_process_group_ranks"]

# torch's defaults: 30 minutes for CPU backends, 10 for NCCL
default_pg_timeout = datetime.timedelta(minutes=30)
default_pg_nccl_timeout = datetime.timedelta(minutes=10)


class ReduceOp(enum.Enum):
    """How a reduction combines the ranks' tensors (AVG: the SUM divided by the group size)."""
    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self):
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self):
        return f"RedOpType.{self.name}"


class GroupMember:
    """GroupMember.WORLD is the default group; NON_GROUP_MEMBER is what new_group returns
    on ranks outside the new group (collectives on it do nothing there)."""
    WORLD = None
    NON_GROUP_MEMBER = object()


_state = {"world": None}


def is_available():
    """True: the package is always importable (each backend says whether it can run)."""
    return True


def is_mpi_available():
    return _mpi.available()


def is_nccl_available():
    from pytorchlite.distributed import _nccl
    return _nccl.available()


def is_initialized():
    return _state["world"] is not None


def _world(who=None):
    w = _state["world"]
    if w is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return w


def _group(group):
    if group is None:
        return _world()
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if getattr(group, "_comm", 1) is None:
        raise ValueError("the process group was destroyed (destroy_process_group)")
    return group


def _env_int(name, who):
    v = os.environ.get(name)
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        raise ValueError(f"{who}: environment variable {name} must be an integer, got {v!r}") from None


def _launcher_rank_and_size():
    """The rank and size an MPI (or other) launcher put in the environment, if any."""
    for r, s in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                 ("PMIX_RANK", None), ("SLURM_PROCID", "SLURM_NTASKS")):
        if r in os.environ:
            return _env_int(r, "init_process_group"), (_env_int(s, "init_process_group") if s else None)
    return None, None


def init_process_group(backend=None, init_method=None, timeout=None, world_size=-1, rank=-1, store=None,
                       group_name="", pg_options=None, device_id=None):
    """Join the default process group.

    backend: "mpi" (CPU tensors; the default) or "nccl" (CUDA tensors). init_method: None or
    "env://" (read RANK and WORLD_SIZE when set), or "tcp://host:port" / "file://path"
    (accepted for compatibility: the MPI launcher has already connected the ranks). rank and
    world_size, when given, must agree with what the launcher started.

    >>> import pytorchlite.distributed as dist
    >>> dist.init_process_group("mpi")          # doctest: +SKIP
    """
    who = "init_process_group"
    if _state["world"] is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend is None:
        backend = "mpi"
    if not isinstance(backend, str):
        raise TypeError(f"{who}(): argument 'backend' must be str, not {type(backend).__name__}")
    backend = backend.lower()
    if backend not in ("mpi", "nccl"):
        raise ValueError(f"{who}(): unknown backend {backend!r}: pytorchlite.distributed has 'mpi' (CPU tensors) "
                         "and 'nccl' (CUDA tensors)")
    if store is not None:
        raise ValueError(f"{who}(): store= is not supported: ranks are connected by the MPI launcher")
    if init_method is not None:
        if not isinstance(init_method, str):
            raise TypeError(f"{who}(): argument 'init_method' must be str, not {type(init_method).__name__}")
        scheme = init_method.split("://", 1)[0] if "://" in init_method else None
        if scheme not in ("env", "tcp", "file"):
            raise RuntimeError(f"No rendezvous handler for {init_method if scheme is None else scheme + '://'} "
                               "(init_process_group takes init_method='env://', 'tcp://host:port' or 'file://path')")
    if not isinstance(rank, int) or not isinstance(world_size, int):
        raise TypeError(f"{who}(): rank and world_size must be int, got {type(rank).__name__} and "
                        f"{type(world_size).__name__}")
    if init_method == "env://" or init_method is None:
        env_rank, env_size = _env_int("RANK", who), _env_int("WORLD_SIZE", who)
        rank = env_rank if rank == -1 and env_rank is not None else rank
        world_size = env_size if world_size == -1 and env_size is not None else world_size
    timeout_s = _seconds(timeout, who) if timeout is not None else (
        default_pg_nccl_timeout if backend == "nccl" else default_pg_timeout).total_seconds()

    if backend == "nccl":
        from pytorchlite.distributed import _nccl
        _nccl.check_usable()
    if backend == "mpi" and not _mpi.available():
        raise RuntimeError(f"{who}(backend='mpi'): mpi4py is not installed: pip install 'pytorchlite[distributed]' "
                           "(mpi4py and the mpich wheel)")
    mpi_rank, mpi_size = _mpi.world_rank_and_size() if _mpi.available() else (None, None)
    if mpi_size is None:                       # nccl without MPI: the launcher's variables
        mpi_rank, mpi_size = _launcher_rank_and_size()
        if mpi_size is None:
            mpi_rank, mpi_size = (rank, world_size) if world_size > 0 else (0, 1)
    if world_size not in (-1, mpi_size):
        msg = (f"{who}(): world size mismatch: world_size={world_size} was requested but the launcher started "
               f"{mpi_size} process{'es' if mpi_size != 1 else ''}")
        if mpi_size == 1:
            msg += (" (this process was not started by an MPI launcher, so MPI sees only itself: start the ranks "
                    f"with `python -m pytorchlite.distributed.run --nproc-per-node {world_size} script.py` or "
                    f"`mpiexec -n {world_size} python script.py`)")
        raise ValueError(msg)
    if rank not in (-1, mpi_rank):
        raise ValueError(f"{who}(): rank mismatch: rank={rank} was requested but the MPI launcher made this "
                         f"process rank {mpi_rank} of {mpi_size}")
    if rank != -1 and not 0 <= rank < mpi_size:
        raise ValueError(f"{who}(): rank {rank} is out of range for world_size {mpi_size}")

    if backend == "mpi":
        world = _mpi.init_world(timeout_s)
    else:
        from pytorchlite.distributed import _nccl
        world = _nccl.init_world(mpi_rank, mpi_size, timeout_s, device_id)
    _state["world"] = world
    GroupMember.WORLD = world


def destroy_process_group(group=None):
    """Release a group's communicator (the default group and all others when group is None)."""
    if group is None or group is _state["world"]:
        w = _world()
        for g in list(_state.get("groups", [])):
            g.destroy()
        _state["groups"] = []
        w.destroy()
        _state["world"] = None
        GroupMember.WORLD = None
    elif group is not GroupMember.NON_GROUP_MEMBER:
        group.destroy()
        if group in _state.get("groups", []):
            _state["groups"].remove(group)


def get_rank(group=None):
    """This process's rank in `group` (-1 when it is not a member)."""
    g = _group(group)
    return -1 if g is None else g.rank()


def get_world_size(group=None):
    g = _group(group)
    return -1 if g is None else g.size()


def get_backend(group=None):
    g = _group(group)
    if g is None:
        raise ValueError("Invalid process group specified")
    return g.backend


def get_process_group_ranks(group):
    g = _group(group)
    return list(g._ranks)


def get_global_rank(group, group_rank):
    g = _group(group)
    if not 0 <= group_rank < g.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {g}")
    return g._ranks[group_rank]


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, use_local_synchronization=False,
              group_desc=None, device_id=None):
    """A group of some ranks (every rank of the default group must call it, with the same
    ranks); ranks outside it get GroupMember.NON_GROUP_MEMBER."""
    w = _world()
    size = w.size()
    ranks = list(range(size)) if ranks is None else sorted(int(r) for r in ranks)
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < size for r in ranks):
        raise ValueError(f"new_group(): ranks must be distinct ranks in [0, {size}), got {ranks}")
    if backend is not None and backend.lower() != w.backend:
        raise ValueError(f"new_group(): backend {backend!r} differs from the default group's {w.backend!r}")
    timeout_s = _seconds(timeout, "new_group") if timeout is not None else w._timeout_s
    g = w.subgroup(ranks, timeout_s)
    if g is None:
        return GroupMember.NON_GROUP_MEMBER
    _state.setdefault("groups", []).append(g)
    return g


# ---- collectives ---------------------------------------------------------------------------

def _check_tensor(t, opname, arg):
    if not isinstance(t, pytorchlite.Tensor):
        raise TypeError(f"{opname}(): argument '{arg}' must be Tensor, not {type(t).__name__}")


def _check_op(op, opname):
    if isinstance(op, ReduceOp):
        return op.name
    raise TypeError(f"{opname}(): argument 'op' must be a ReduceOp (ReduceOp.SUM, AVG, PRODUCT, MIN, MAX, BAND, "
                    f"BOR, BXOR), not {op!r}")


def _group_rank(g, global_rank, opname, arg):
    if isinstance(global_rank, bool) or not isinstance(global_rank, int):
        raise TypeError(f"{opname}(): argument '{arg}' must be int, not {type(global_rank).__name__}")
    try:
        return g._ranks.index(global_rank)
    except ValueError:
        raise ValueError(f"{opname}(): {arg}={global_rank} is not a rank of the group (its global ranks are "
                         f"{g._ranks})") from None


def _run(work, async_op):
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` over the group in place: every rank ends with the result.

    >>> dist.all_reduce(t, op=dist.ReduceOp.SUM)      # doctest: +SKIP
    """
    _check_tensor(tensor, "all_reduce", "tensor")
    op = _check_op(op, "all_reduce")
    g = _group(group)
    if g is None:
        return None
    return _run(g.allreduce(tensor, op), async_op)


def broadcast(tensor, src, group=None, async_op=False):
    """Copy rank `src`'s tensor into every rank's `tensor`."""
    _check_tensor(tensor, "broadcast", "tensor")
    g = _group(group)
    if g is None:
        return None
    return _run(g.broadcast(tensor, _group_rank(g, src, "broadcast", "src")), async_op)


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce into rank `dst`'s tensor (the other ranks' tensors are left unchanged)."""
    _check_tensor(tensor, "reduce", "tensor")
    op = _check_op(op, "reduce")
    g = _group(group)
    if g is None:
        return None
    return _run(g.reduce(tensor, _group_rank(g, dst, "reduce", "dst"), op), async_op)


def _same_layout(opname, ref, others, arg):
    for i, t in enumerate(others):
        _check_tensor(t, opname, f"{arg}[{i}]")
        if t.dtype != ref.dtype:
            raise TypeError(f"{opname}(): {arg}[{i}] has dtype {t.dtype} but the tensor has dtype {ref.dtype}")
        if t.numel() != ref.numel():
            raise ValueError(f"{opname}(): {arg}[{i}] has {t.numel()} elements (shape {list(t.shape)}) but the "
                             f"tensor has {ref.numel()} (shape {list(ref.shape)})")


def _list_of_size(lst, g, opname, arg):
    if not isinstance(lst, (list, tuple)):
        raise TypeError(f"{opname}(): argument '{arg}' must be a list of tensors, not {type(lst).__name__}")
    if len(lst) != g.size():
        raise ValueError(f"{opname}(): {arg} has {len(lst)} tensors but the group has {g.size()} ranks")


def _copy_out_finish(flat, outs):
    def finish():
        for i, o in enumerate(outs):
            o.detach().copy_(flat[i].view(o.shape))
    return finish


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's `tensor` into every rank's `tensor_list` (one tensor per rank). The
    list's tensors are separate allocations, so the gathered data passes through one
    buffer; all_gather_into_tensor gathers into the output's own memory."""
    _check_tensor(tensor, "all_gather", "tensor")
    g = _group(group)
    if g is None:
        return None
    _list_of_size(tensor_list, g, "all_gather", "tensor_list")
    _same_layout("all_gather", tensor, tensor_list, "tensor_list")
    flat = pytorchlite.empty((g.size(), tensor.numel()), dtype=tensor.dtype, device=tensor.device)
    w = g.allgather_into(flat, tensor, "all_gather")
    w._finish = _copy_out_finish(flat, tensor_list)
    w._result = list(tensor_list)
    return _run(w, async_op)


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Gather every rank's `input_tensor` into `output_tensor` (world_size times as many
    elements: concatenated along dim 0 or stacked), written by MPI in place."""
    _check_tensor(output_tensor, "all_gather_into_tensor", "output_tensor")
    _check_tensor(input_tensor, "all_gather_into_tensor", "input_tensor")
    g = _group(group)
    if g is None:
        return None
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError(f"all_gather_into_tensor(): output_tensor has dtype {output_tensor.dtype} but input_tensor "
                        f"has dtype {input_tensor.dtype}")
    if output_tensor.numel() != input_tensor.numel() * g.size():
        raise ValueError(f"all_gather_into_tensor(): output tensor size must be equal to world_size times input "
                         f"tensor size: output has {output_tensor.numel()} elements, input {input_tensor.numel()}, "
                         f"world_size {g.size()}")
    return _run(g.allgather_into(output_tensor, input_tensor), async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (world_size times output's elements) over the group and leave rank
    i with the i-th chunk of the result in `output`."""
    _check_tensor(output, "reduce_scatter_tensor", "output")
    _check_tensor(input, "reduce_scatter_tensor", "input")
    op = _check_op(op, "reduce_scatter_tensor")
    g = _group(group)
    if g is None:
        return None
    if output.dtype != input.dtype:
        raise TypeError(f"reduce_scatter_tensor(): output has dtype {output.dtype} but input has dtype {input.dtype}")
    if input.numel() != output.numel() * g.size():
        raise ValueError(f"reduce_scatter_tensor(): input tensor must be the same size as output size times world "
                         f"size: input has {input.numel()} elements, output {output.numel()}, world_size {g.size()}")
    return _run(g.reduce_scatter(output, input, op), async_op)


def _rooted_list(opname, tensor, lst, peer, arg, peer_arg, group):
    """The checks gather and scatter share: (group, root's group rank, whether this rank
    is the root); the list is required on the root and refused elsewhere."""
    _check_tensor(tensor, opname, "tensor")
    g = _group(group)
    if g is None:
        return None, None, False
    root = _group_rank(g, peer, opname, peer_arg)
    side = "destination" if opname == "gather" else "source"
    if g.rank() == root:
        if lst is None:
            raise ValueError(f"Argument ``{arg}`` must be specified on {side} rank.")
        _list_of_size(lst, g, opname, arg)
        _same_layout(opname, tensor, lst, arg)
        return g, root, True
    if lst:
        raise ValueError(f"Argument ``{arg}`` must NOT be specified on non-{side} ranks.")
    return g, root, False


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Every rank's `tensor` into rank `dst`'s `gather_list`."""
    g, root, is_root = _rooted_list("gather", tensor, gather_list, dst, "gather_list", "dst", group)
    if g is None:
        return None
    flat = pytorchlite.empty((g.size(), tensor.numel()), dtype=tensor.dtype, device=tensor.device) \
        if is_root else None
    w = g.gather_into(flat, tensor, root)
    if is_root:
        w._finish = _copy_out_finish(flat, gather_list)
        w._result = list(gather_list)
    return _run(w, async_op)


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank `src`'s `scatter_list[i]` into rank i's `tensor`."""
    g, root, is_root = _rooted_list("scatter", tensor, scatter_list, src, "scatter_list", "src", group)
    if g is None:
        return None
    # MPI sends one buffer: the list's separate tensors are packed into it
    flat = pytorchlite.stack([t.detach().reshape(-1) for t in scatter_list]) if is_root else None
    return _run(g.scatter_from(flat, tensor, root), async_op)


def _p2p_check(tensor, peer, opname, arg, g, allow_none=False):
    _check_tensor(tensor, opname, "tensor")
    if peer is None and allow_none:
        return None
    r = _group_rank(g, peer, opname, arg)
    if r == g.rank():
        raise ValueError(f"Invalid destination rank: {opname}() to or from the rank itself ({arg}={peer})")
    return r


def isend(tensor, dst, group=None, tag=0):
    """Start sending `tensor` to rank `dst`; returns a Work."""
    g = _group(group)
    if g is None:
        return None
    return g.send(tensor, _p2p_check(tensor, dst, "send", "dst", g), tag)


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into `tensor` from rank `src` (any rank when None); returns a Work."""
    g = _group(group)
    if g is None:
        return None
    return g.recv(tensor, _p2p_check(tensor, src, "recv", "src", g, allow_none=True), tag)


def send(tensor, dst, group=None, tag=0):
    w = isend(tensor, dst, group, tag)
    if w is not None:
        w.wait()


def recv(tensor, src=None, group=None, tag=0):
    """Receive into `tensor`; returns the sender's rank (-1 outside the group)."""
    w = irecv(tensor, src, group, tag)
    if w is None:
        return -1
    w.wait()
    g = _group(group)
    return g._ranks[w._status.Get_source()] if hasattr(w, "_status") else w._source


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group has reached the barrier."""
    g = _group(group)
    if g is None:
        return None
    return _run(g.barrier(), async_op)
