"""DataLoader: batches from a dataset, in the main process or in worker processes."""

import itertools
import multiprocessing
import os
import queue
import secrets
import time
import warnings
import weakref

import pytorchlite
from pytorchlite.profiler import _recorder
from pytorchlite.utils.data import _shm, _worker
from pytorchlite.utils.data._collate import default_collate, default_convert
from pytorchlite.utils.data.dataset import IterableDataset
from pytorchlite.utils.data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

# how often a waiting main process checks that its workers are alive (seconds)
_LIVENESS_INTERVAL = 0.5


class _InfiniteConstantSampler(Sampler):
    """The "sampler" of an IterableDataset: None forever (the dataset decides when to stop)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterates over a dataset in batches.

    Map-style datasets are visited in the sampler's order (sequential, or shuffled with
    shuffle=True), grouped by batch_size (or by a batch_sampler) and merged by collate_fn
    (default_collate). batch_size=None turns batching off (each sample goes through
    default_convert). IterableDatasets are read in their own order.

    With num_workers > 0 batches are produced by that many worker processes (the
    multiprocessing start method of `multiprocessing_context`, or the platform default);
    each gets prefetch_factor batches ahead, results come back in order, and tensors come
    back through shared memory rather than through a pipe. worker_init_fn(worker_id) runs
    first in each worker; get_worker_info() tells a worker who it is. A worker that raises
    re-raises in the main process with its traceback; a worker that dies raises a
    RuntimeError naming it. persistent_workers keeps the workers across epochs; timeout
    (seconds, 0 = none) bounds the wait for one batch. pin_memory is accepted but pins
    nothing (pytorchlite has no page-locked host memory); without an accelerator it warns,
    as PyTorch does.

    >>> import pytorchlite
    >>> from pytorchlite.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(pytorchlite.arange(5.), pytorchlite.arange(5))
    >>> [x.tolist() for x, y in DataLoader(ds, batch_size=2)]
    [[0.0, 1.0], [2.0, 3.0], [4.0]]
    """

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device=""):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = persistent_workers
        if isinstance(multiprocessing_context, str):
            multiprocessing_context = multiprocessing.get_context(multiprocessing_context)
        self.multiprocessing_context = multiprocessing_context
        if pin_memory and not pytorchlite.cuda.is_available():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                          "memory won't be used.", UserWarning, stacklevel=2)

        self._is_iterable = isinstance(dataset, IterableDataset)
        if self._is_iterable:
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")

        if sampler is None:
            if self._is_iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self._iterator = None

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if self.persistent_workers:
            if self._iterator is None or self._iterator._shutdown:   # none yet, or its workers failed
                self._iterator = _MultiProcessIter(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIter(self)

    def __len__(self):
        if self._is_iterable:
            length = len(self.dataset)
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else -(-length // self.batch_size)
            return length
        return len(self._index_sampler)


class _BaseIter:
    def __init__(self, loader):
        self._loader = loader
        self._dataset = loader.dataset
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._is_iterable = loader._is_iterable
        self._sampler_iter = iter(loader._index_sampler)
        self._base_seed = _draw_seed(loader.generator)
        self._num_yielded = 0

    def __iter__(self):
        return self

    def __next__(self):
        # a fetch shows in a profile under PyTorch's name for it
        if _recorder._active is None:
            return self._next_data()
        with _recorder.record_function(self._profile_name):
            return self._next_data()

    def _next_index(self):
        return next(self._sampler_iter)

    def __len__(self):
        return len(self._loader)


def _draw_seed(generator):
    return int(pytorchlite.empty((), dtype=pytorchlite.int64).random_(generator=generator).item())


class _SingleProcessIter(_BaseIter):
    _profile_name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"

    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(self._is_iterable, self._dataset, self._auto_collation,
                                             self._collate_fn, self._drop_last)

    def _next_data(self):
        index = self._next_index()
        data = self._fetcher.fetch(index)
        self._num_yielded += 1
        return data


class _MultiProcessIter(_BaseIter):
    """Hands index batches to the workers round-robin, at most prefetch_factor per worker
    in flight, and returns results in the order the indices were drawn."""

    _profile_name = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"

    def __init__(self, loader):
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        ctx = loader.multiprocessing_context or multiprocessing.get_context()
        self._shm_prefix = os.path.join(_shm.shm_dir(), f"ptl_dl_{os.getpid()}_{secrets.token_hex(4)}_")
        self._result_queue = ctx.Queue()
        self._done_event = ctx.Event()
        self._index_queues = []
        self._workers = []
        for i in range(self._num_workers):
            iq = ctx.Queue()
            iq.cancel_join_thread()   # an index queue never needs flushing at shutdown
            w = ctx.Process(target=_worker.worker_loop, name=f"DataLoader worker {i}",
                            args=(self._is_iterable, self._dataset, iq, self._result_queue, self._done_event,
                                  self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                                  loader.worker_init_fn, i, self._num_workers, self._shm_prefix, os.getpid()))
            w.daemon = True
            w.start()
            self._index_queues.append(iq)
            self._workers.append(w)
        self._shutdown = False
        self._finalizer = weakref.finalize(self, _shutdown_workers, os.getpid(), self._workers, self._index_queues,
                                           self._result_queue, self._done_event, self._shm_prefix)
        self._start_epoch(first=True)

    def _start_epoch(self, first):
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}            # idx -> (worker_id,) while pending, (worker_id, data) once here
        self._workers_active = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first:
            # tell the workers a new epoch begins, and drop whatever the last one left in flight
            for q in self._index_queues:
                q.put(_worker.ResumeIteration())
            pending = self._num_workers
            while pending:
                idx, data = self._get_data()
                if isinstance(idx, _worker.ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _reset(self, loader):
        self._sampler_iter = iter(loader._index_sampler)
        self._num_yielded = 0
        self._start_epoch(first=False)

    def _try_put_index(self):
        if not any(self._workers_active):
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_active[wid]:
                break
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._send_idx += 1

    def _get_data(self):
        """The next (idx, data) from any worker, decoded; raises if a worker died or the
        timeout passed."""
        start = time.monotonic()
        while True:
            wait = _LIVENESS_INTERVAL
            if self._timeout > 0:
                left = self._timeout - (time.monotonic() - start)
                if left <= 0:
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
                wait = min(wait, left)
            try:
                item = self._result_queue.get(timeout=wait)
            except queue.Empty:
                dead = [(i, w) for i, w in enumerate(self._workers) if not w.is_alive()]
                if dead:
                    self._shutdown_now()
                    pids = ", ".join(str(w.pid) for _, w in dead)
                    desc = "; ".join(f"worker {i} (pid {w.pid}) exited with code {w.exitcode}" for i, w in dead)
                    raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly: {desc}") from None
                continue
            idx, data = item[0], item[1]
            if len(item) > 2:           # a batch, with its worker's (id, pid, start, end) of the fetch
                rec = _recorder._active
                if rec is not None:
                    rec.worker_span(*item[2])
            if isinstance(data, tuple):
                data = _shm.decode(data)
            return idx, data

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._workers_active[info[0]]:
                    break
                # its worker's IterableDataset ended: this task will never be answered
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_now()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
                return self._process(info[1])
            if self._shutdown:
                raise StopIteration
            idx, data = self._get_data()
            if isinstance(idx, _worker.ResumeIteration):
                continue
            if isinstance(data, _worker.IterableEnd):
                self._workers_active[data.worker_id] = False
                self._try_put_index()   # noqa: the slot of the ended worker goes to another one
                continue
            if idx != self._rcvd_idx:
                self._task_info[idx] += (data,)
                continue
            del self._task_info[idx]
            self._rcvd_idx += 1
            return self._process(data)

    def _process(self, data):
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        self._num_yielded += 1
        return data

    def _shutdown_now(self):
        if not self._shutdown:
            self._shutdown = True
            self._finalizer()


def _shutdown_workers(owner_pid, workers, index_queues, result_queue, done_event, shm_prefix):
    if os.getpid() != owner_pid:
        return  # a forked child inherited this iterator: its workers are not the child's to stop
    done_event.set()
    for q in index_queues:
        try:
            q.put(None)
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + 5.0
    for w in workers:
        # keep draining: a worker blocked on a full result pipe could not otherwise exit
        while w.is_alive() and time.monotonic() < deadline:
            try:
                _, data = result_queue.get(timeout=0.05)
                if isinstance(data, tuple):
                    _shm.discard(data)
            except (queue.Empty, OSError, EOFError, ValueError):
                pass
        if w.is_alive():
            w.terminate()
            w.join(1.0)
    while True:
        try:
            _, data = result_queue.get_nowait()
            if isinstance(data, tuple):
                _shm.discard(data)
        except Exception:
            break
    for q in index_queues + [result_queue]:
        q.cancel_join_thread()
        q.close()
    _shm.remove_leftovers(shm_prefix)
