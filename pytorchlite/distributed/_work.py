"""Work handles: what an `async_op=True` collective returns, and what every collective
waits on. MPI cannot cancel a collective, so waiting is a poll with a deadline: the
request is tested until it completes or the process group's timeout passes, and then the
caller gets a RuntimeError naming the operation instead of a hang."""

import datetime
import threading
import time

__all__ = ["Work", "DistTimeoutError", "DistBackendError"]

# how long wait() polls before handing the operation to a thread blocked in MPI_Wait (on a
# loaded machine a new thread may wait milliseconds for a core: most operations up to a
# few MiB finish within the spin)
_SPIN_S = 5e-3


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

    def _complete(self):
        self._done = True
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
        # Small operations finish within a short spin of Tests (each drives MPI's progress
        # engine). A longer one is handed to a thread blocked in the native Wait, which
        # moves data faster than a loop of Tests from Python (it releases the GIL), while
        # this thread waits for it with the deadline MPI's Wait does not have.
        spin_until = time.monotonic() + _SPIN_S
        while time.monotonic() < spin_until:
            for _ in range(32):
                if self._test():
                    return True
        done, failed = threading.Event(), []
        reqs = list(self._requests)

        def waiter():
            try:
                for r in reqs:
                    r.Wait()
            except BaseException as e:  # reported to the waiting thread below
                failed.append(e)
            done.set()
        threading.Thread(target=waiter, name=f"pytorchlite.distributed {self._opname}", daemon=True).start()
        if not done.wait(max(0.0, deadline - time.monotonic())):
            self._fail(limit)
        if failed:
            self._exception = DistBackendError(f"{self._opname} failed: {failed[0]}")
            raise self._exception
        self._requests = []
        self._complete()
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
