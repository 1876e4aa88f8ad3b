"""DistributedDataParallel: every rank runs the whole model on its shard of the batch;
backward averages the gradients over the ranks, so each rank's optimizer step is the one
a single process would take on the whole batch.

The reducer follows PyTorch's: parameters are grouped into buckets in reverse order
(gradients of the last layers are ready first), a small first bucket (1 MiB) so the
first all-reduce starts early, then `bucket_cap_mb` (25 MiB) buckets. A post-accumulate
grad hook on each parameter copies its gradient into its bucket's flat buffer; when a
bucket's last gradient arrives its all-reduce starts asynchronously (buckets start in
order, so every rank issues the same collectives in the same order), and the hooks that
follow drive MPI's progress while backward continues. When the last bucket has started,
the reducer waits for all of them and copies the averaged gradients back into `.grad`.
"""

import contextlib

import pytorchlite
import pytorchlite.distributed as dist
from pytorchlite.nn.module import Module

__all__ = ["DistributedDataParallel"]

_DEFAULT_FIRST_BUCKET_BYTES = 1024 * 1024
_MiB = 1024 * 1024


def _bucket_assignment(params, cap_bytes, first_cap_bytes):
    """Indices of params per bucket: reverse parameter order, one dtype and device per
    bucket, a bucket closed once it holds at least its cap (the first one's is smaller)."""
    buckets, open_ = [], {}
    for i in reversed(range(len(params))):
        p = params[i]
        key = (p.dtype, str(p.device))
        idx, size = open_.get(key, ([], 0))
        idx.append(i)
        size += p.numel() * p.element_size()
        limit = first_cap_bytes if not buckets else cap_bytes
        if size >= limit:
            buckets.append(idx)
            open_.pop(key, None)
        else:
            open_[key] = (idx, size)
    buckets.extend(idx for idx, _ in open_.values())
    return buckets


class _Bucket:
    __slots__ = ("params", "offsets", "buffer", "pending", "work")

    def __init__(self, index_list, params):
        self.params = index_list
        self.offsets, n = [], 0
        for i in index_list:
            self.offsets.append(n)
            n += params[i].numel()
        p0 = params[index_list[0]]
        self.buffer = pytorchlite.zeros(n, dtype=p0.dtype, device=p0.device)
        self.pending = 0
        self.work = None


def _tensors_in(obj, out):
    if isinstance(obj, pytorchlite.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            _tensors_in(o, out)
    elif isinstance(obj, dict):
        for o in obj.values():
            _tensors_in(o, out)
    return out


class DistributedDataParallel(Module):
    """Wrap `module` for data-parallel training over the default (or given) process group.

    `gradient_as_bucket_view` and `static_graph` are accepted for compatibility and change
    nothing (gradients are copied into the buckets and back; buckets are never rebuilt from
    the observed order, as PyTorch does after the first iteration).

    >>> model = DistributedDataParallel(Net())          # doctest: +SKIP
    >>> loss_fn(model(x_shard), y_shard).backward()     # doctest: +SKIP
    >>> opt.step()                                      # doctest: +SKIP
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0, broadcast_buffers=True,
                 init_sync=True, process_group=None, bucket_cap_mb=None, find_unused_parameters=False,
                 check_reduction=False, gradient_as_bucket_view=False, static_graph=False):
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel(): argument 'module' must be a Module, not "
                            f"{type(module).__name__}")
        self.module = module
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise RuntimeError("DistributedDataParallel is not needed when a module doesn't have any parameter that "
                               "requires a gradient.")
        pg = process_group if process_group is not None else dist.GroupMember.WORLD
        if pg is None:
            raise ValueError("Default process group has not been initialized, please make sure to call "
                             "init_process_group.")
        object.__setattr__(self, "process_group", pg)
        object.__setattr__(self, "_params", params)
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.require_backward_grad_sync = True
        self.dim = dim
        cap = 25 if bucket_cap_mb is None else bucket_cap_mb
        self.bucket_bytes_cap = int(cap * _MiB)
        self._world = dist.get_world_size(pg)
        self._rank = dist.get_rank(pg)

        self._verify_same_model()
        if init_sync:
            for t in list(module.parameters()) + list(module.buffers()):
                with pytorchlite.no_grad():
                    dist.broadcast(t.detach(), src=dist.get_global_rank(pg, 0), group=pg)

        assignment = _bucket_assignment(params, self.bucket_bytes_cap,
                                        min(_DEFAULT_FIRST_BUCKET_BYTES, self.bucket_bytes_cap))
        object.__setattr__(self, "_buckets", [_Bucket(idx, params) for idx in assignment])
        where = {}
        for b, bucket in enumerate(self._buckets):
            for slot, i in enumerate(bucket.params):
                where[i] = (b, slot)
        object.__setattr__(self, "_where", where)
        self._expect = False          # a synced forward ran: backward must reduce
        self._fired = 0               # gradient hooks seen since that forward
        self._next_bucket = 0
        self._ready = [False] * len(params)
        self._locally_used = None
        object.__setattr__(self, "_hook_handles",
                           [p.register_post_accumulate_grad_hook(self._make_hook(i)) for i, p in enumerate(params)])

    # ---- construction ------------------------------------------------------------------
    def _verify_same_model(self):
        mine = pytorchlite.tensor([len(self._params), sum(p.numel() for p in self._params)], dtype=pytorchlite.int64)
        every = pytorchlite.zeros(self._world * 2, dtype=pytorchlite.int64)
        dist.all_gather_into_tensor(every, mine, group=self.process_group)
        for r, (n, numel) in enumerate(every.view(self._world, 2).tolist()):
            if (n, numel) != tuple(mine.tolist()):
                raise RuntimeError(f"DDP expects same model across all ranks, but Rank {self._rank} has "
                                   f"{len(self._params)} params ({int(mine[1])} elements), while rank {r} has "
                                   f"inconsistent {n} params ({numel} elements).")

    # ---- forward -----------------------------------------------------------------------
    def forward(self, *inputs, **kwargs):
        if self._expect and self._fired and pytorchlite.is_grad_enabled():
            # backward ran but some parameter's gradient never came: its bucket never started
            self._raise_unfinished([i for i, r in enumerate(self._ready) if not r])
        sync = pytorchlite.is_grad_enabled() and self.require_backward_grad_sync and self.training
        if self.broadcast_buffers and self._world > 1:
            bufs = list(self.module.buffers())
            if bufs:
                with pytorchlite.no_grad():
                    for b in bufs:
                        dist.broadcast(b.detach(), src=dist.get_global_rank(self.process_group, 0),
                                       group=self.process_group)
        out = self.module(*inputs, **kwargs)
        self._prepare(sync, out)
        return out

    def _raise_unfinished(self, missing):
        self._expect = False
        raise RuntimeError(
            "Expected to have finished reduction in the prior iteration before starting a new one. This error "
            "indicates that your module has parameters that were not used in producing loss. You can enable unused "
            "parameter detection by passing the keyword argument `find_unused_parameters=True` to "
            "`torch.nn.parallel.DistributedDataParallel`, and by \nmaking sure all `forward` function outputs "
            "participate in calculating loss. \nIf you already have done the above, then the distributed data "
            "parallel module wasn't able to locate the output tensors in the return value of your module's "
            "`forward` function. Please include the loss function and the structure of the return value of "
            "`forward` of your module when reporting this issue (e.g. list, dict, iterable).\n"
            f"Parameter indices which did not receive grad for rank {self._rank}: {' '.join(map(str, missing))}")

    def _prepare(self, sync, out):
        self._expect = sync
        self._fired = 0
        self._next_bucket = 0
        self._ready = [False] * len(self._params)
        for bucket in self._buckets:
            bucket.pending = len(bucket.params)
            bucket.work = None
        if not sync:
            return
        if self.find_unused_parameters:
            self._locally_used = [False] * len(self._params)
            reached = self._reached_params(out)
            unused = [i for i, p in enumerate(self._params) if id(p) not in reached]
            for i in unused:
                self._mark_ready(i, None)

    def _reached_params(self, out):
        """The parameters the autograd graph of `out` leads to (find_unused_parameters)."""
        seen, reached = set(), set()
        stack = [t.grad_fn for t in _tensors_in(out, []) if t.grad_fn is not None]
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            var = getattr(node, "variable", None)
            if var is not None:
                reached.add(id(var))
            stack.extend(n for n, _ in node.next_functions if n is not None)
        return reached

    # ---- backward ----------------------------------------------------------------------
    def _make_hook(self, i):
        def hook(param):
            if self._expect:
                self._fired += 1
                if self._locally_used is not None:
                    self._locally_used[i] = True
                self._mark_ready(i, param.grad)
        return hook

    def _mark_ready(self, i, grad):
        if self._ready[i]:
            raise RuntimeError(f"Expected to mark a variable ready only once. Parameter index {i} was marked twice "
                               "in one iteration (a second backward through the same forward?); DDP reduces once "
                               "per forward")
        self._ready[i] = True
        b, slot = self._where[i]
        bucket = self._buckets[b]
        n = self._params[i].numel()
        piece = bucket.buffer[bucket.offsets[slot]:bucket.offsets[slot] + n]
        with pytorchlite.no_grad():
            if grad is None:
                piece.zero_()
            else:
                piece.copy_(grad.detach().reshape(-1))
        bucket.pending -= 1
        # launch, in bucket order, every bucket that is complete
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            nb = self._buckets[self._next_bucket]
            with pytorchlite.no_grad():
                nb.buffer.div_(self._world)
            nb.work = dist.all_reduce(nb.buffer, group=self.process_group, async_op=True)
            self._next_bucket += 1
        for bk in self._buckets[:self._next_bucket]:
            if bk.work is not None:
                bk.work.is_completed()      # MPI moves data only inside its calls
        if self._next_bucket == len(self._buckets):
            self._finalize()

    def _finalize(self):
        for bucket in self._buckets:
            bucket.work.wait()
        used = None
        if self._locally_used is not None:
            used = pytorchlite.tensor(self._locally_used, dtype=pytorchlite.int32)
            dist.all_reduce(used, group=self.process_group)
            used = used.tolist()
        with pytorchlite.no_grad():
            for bucket in self._buckets:
                for slot, i in enumerate(bucket.params):
                    p = self._params[i]
                    if used is not None and not used[i]:
                        continue             # no rank used it: its grad stays as it was
                    avg = bucket.buffer[bucket.offsets[slot]:bucket.offsets[slot] + p.numel()].view(p.shape)
                    if p.grad is None:
                        p.grad = avg.clone()
                    else:
                        p.grad.copy_(avg)
        self._expect = False
        self._locally_used = None

    @contextlib.contextmanager
    def no_sync(self):
        """Skip the gradient all-reduce for backward passes of forwards run inside: the
        gradients accumulate locally and are averaged by the first synced backward."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def extra_repr(self):
        return f"world_size={self._world}, buckets={len(self._buckets)}"
