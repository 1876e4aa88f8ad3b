"""The worker-process side of a multi-process DataLoader: fetch batches for the indices
the main process sends, and send them back through shared memory (see _shm.py)."""

import os
import queue
import random
import sys
import time
import traceback

import numpy as np

import pytorchlite
from pytorchlite.utils.data import _shm

__all__ = ["WorkerInfo", "get_worker_info"]

_worker_info = None


class WorkerInfo:
    """What `get_worker_info()` returns inside a worker: id, num_workers, seed, dataset
    (this worker's copy). Read-only."""

    __initialized = False

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={getattr(self, k)}' for k in self.__keys)})"


def get_worker_info():
    """In a DataLoader worker process: its WorkerInfo (id, num_workers, seed, dataset), for
    sharding an IterableDataset or seeding other libraries in worker_init_fn. In the main
    process: None.

    >>> from pytorchlite.utils.data import get_worker_info
    >>> get_worker_info() is None
    True
    """
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback."""

    def __init__(self, exc_info, where):
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:  # an exception type whose constructor takes other arguments
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    """KeyError quotes its message with repr; this keeps the traceback readable."""

    def __repr__(self):
        return self


class IterableEnd:
    """Sent by a worker whose IterableDataset iterator is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Sent to persistent workers at the start of a new epoch (and echoed back)."""


class MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if self.auto_collation:
            getitems = getattr(self.dataset, "__getitems__", None)
            data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        else:
            data = self.dataset[index]
        return self.collate_fn(data)


class IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.it = iter(dataset)
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if self.auto_collation:
            data = []
            for _ in index:
                try:
                    data.append(next(self.it))
                except StopIteration:
                    self.ended = True
                    break
            if not data or (self.drop_last and len(data) < len(index)):
                raise StopIteration
        else:
            data = next(self.it)
        return self.collate_fn(data)


def make_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last):
    cls = IterableFetcher if is_iterable else MapFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def seed_worker(seed):
    random.seed(seed)
    pytorchlite.manual_seed(seed)
    np.random.seed(seed % (2 ** 32))


def worker_loop(is_iterable, dataset, index_queue, result_queue, done_event, auto_collation, collate_fn,
                drop_last, base_seed, init_fn, worker_id, num_workers, shm_prefix, parent_pid):
    global _worker_info
    try:
        # libgomp's thread pool does not survive fork; a worker runs its kernels on one
        # thread (as PyTorch's workers do), and there are several workers anyway
        pytorchlite.set_num_threads(1)
        seed = base_seed + worker_id
        seed_worker(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
        where = f"in DataLoader worker process {worker_id}"
        init_error = None
        fetcher = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(sys.exc_info(), where)
        ended = False
        count = 0
        while True:
            try:
                r = index_queue.get(timeout=5.0)
            except queue.Empty:
                if os.getppid() != parent_pid:   # the main process is gone: do not linger
                    break
                continue
            if r is None:
                break
            if isinstance(r, ResumeIteration):
                ended = False
                try:
                    fetcher = make_fetcher(is_iterable, dataset, auto_collation, collate_fn, drop_last)
                except Exception:
                    init_error = ExceptionWrapper(sys.exc_info(), where)
                result_queue.put((r, None))
                continue
            if done_event.is_set() or ended:
                continue
            idx, index = r
            t0 = time.perf_counter_ns()    # the fetch's span goes back with the batch (for a profiler)
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not is_iterable:
                        data = ExceptionWrapper(sys.exc_info(), where)
                    else:
                        data = IterableEnd(worker_id)
                        ended = True
                except Exception:
                    data = ExceptionWrapper(sys.exc_info(), where)
            if isinstance(data, (ExceptionWrapper, IterableEnd)):
                result_queue.put((idx, data))
                continue
            count += 1
            try:
                payload = _shm.encode(data, f"{shm_prefix}{worker_id}_{count}")
            except Exception:
                result_queue.put((idx, ExceptionWrapper(sys.exc_info(), where + " (sending the batch)")))
                continue
            result_queue.put((idx, payload, (worker_id, os.getpid(), t0, time.perf_counter_ns())))
    except KeyboardInterrupt:
        pass  # the main process handles Ctrl-C and shuts the workers down
    if done_event.is_set():
        # do not block exit on results nobody will read (their files are removed by the main process)
        result_queue.cancel_join_thread()
        result_queue.close()
