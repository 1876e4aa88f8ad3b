"""Work handles: what an `async_op=True` collective returns, and what every collective
waits on. MPI cannot cancel a collective, so waiting is a poll with a deadline: the
request is tested until it completes or the process group's timeout passes, and then the
caller gets a RuntimeError naming the operation instead of a hang."""

import datetime
import time

from pytorchlite.profiler import record_function

__all__ = ["Work", "DistTimeoutError", "DistBackendError"]

# wait(): how long it spins on MPI_Test, then the shortest and longest sleep between tests
_SPIN_S = 2e-3
_NAP_MIN_S = 2e-5
_NAP_MAX_S = 1e-3


class DistBackendError(RuntimeError):
    """A backend (MPI, NCCL) reported an error (torch.distributed.DistBackendError)."""


class DistTimeoutError(DistBackendError):
    """A collective did not complete within the process group's timeout."""


def _fmt(seconds):
    return str(datetime.timedelta(seconds=round(seconds, 3)))


class Work:
    """A running collective or point-to-point operation.

    `wait()` blocks until it is done (or raises after the group's timeout), then runs what
    the operation does after the transfer (dividing for AVG, copying out of a gather
    buffer); `is_completed()` checks without blocking.
    """

    def __init__(self, group, opname, requests, finish=None, keep=(), result=None):
        self._group = group
        self._opname = opname
        self._requests = list(requests)
        self._finish = finish
        self._keep = keep              # the buffers MPI reads and writes, alive until done
        self._result = result if result is not None else []
        self._done = False
        self._exception = None
        self._started = time.monotonic()
        # a range in the profiler's trace from start to completion (as PyTorch's
        # "gloo:all_reduce"), so communication overlapping backward shows; the end is when
        # completion is seen, i.e. at the poll that finds it
        self._range = record_function(f"{group.backend}:{opname}")
        self._range.__enter__()

    def _complete(self):
        self._done = True
        self._range.__exit__(None, None, None)
        self._requests = []
        self._keep = ()
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()

    def _test(self):
        """One progress step: True when every request has completed."""
        if self._done:
            return True
        reqs = self._requests
        while reqs and reqs[-1].Test():
            reqs.pop()
        if not reqs:
            self._complete()
            return True
        return False

    def is_completed(self):
        """True once the operation has finished (drives MPI's progress, never blocks)."""
        if self._exception is not None:
            return True
        return self._test()

    def is_success(self):
        return self.is_completed() and self._exception is None

    def exception(self):
        return self._exception

    def result(self):
        """The tensors the operation wrote (after wait())."""
        return self._result

    def wait(self, timeout=None):
        """Block until done. Raises a RuntimeError (DistTimeoutError) naming the operation
        when it has not finished within `timeout` (a timedelta; default: the process
        group's timeout, counted from when the operation started)."""
        if self._exception is not None:
            raise self._exception
        if self._test():
            return True
        limit = self._group._timeout_s if timeout is None else _seconds(timeout, "Work.wait")
        deadline = (self._started if timeout is None else time.monotonic()) + limit
        # Spin for up to 2 ms (each Test drives MPI's progress engine; small operations finish
        # here), then poll with growing sleeps: a rank that spins while it waits for a
        # slower one takes the core that one needs on a shared or oversubscribed machine
        # (MPI's own Wait spins). Large transfers lose little: with single-copy transfers
        # between processes one progress call moves a whole piece of the message.
        spin_until = time.monotonic() + _SPIN_S
        while time.monotonic() < spin_until:
            for _ in range(32):
                if self._test():
                    return True
        nap = _NAP_MIN_S
        while not self._test():
            if time.monotonic() > deadline:
                self._fail(limit)
            time.sleep(nap)
            nap = min(nap * 2, _NAP_MAX_S)
        return True

    def _fail(self, limit):
        self._group._mark_broken(self._opname)
        err = DistTimeoutError(
            f"[Rank {self._group._global_rank}] {self._opname} timed out after {_fmt(limit)} (the process group's "
            f"timeout) waiting for the other ranks of a group of {self._group.size()}: a rank died, or did not call "
            f"{self._opname} (ranks must call the same collectives in the same order). The process group cannot be "
            "used any more (MPI cannot cancel the operation); destroy it and exit.")
        self._exception = err
        raise err

    def get_future(self):
        raise RuntimeError(f"{type(self).__name__}.get_future() is not supported by the mpi backend: use wait()")

    def __repr__(self):
        state = "completed" if self._done else ("failed" if self._exception is not None else "pending")
        return f"<pytorchlite.distributed.Work {self._opname} {state}>"


def _seconds(timeout, who):
    if isinstance(timeout, datetime.timedelta):
        s = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        s = float(timeout)
    else:
        raise TypeError(f"{who}(): argument 'timeout' must be a datetime.timedelta, not {type(timeout).__name__}")
    if not s > 0:
        raise ValueError(f"{who}(): argument 'timeout' must be positive, got {timeout}")
    return s
