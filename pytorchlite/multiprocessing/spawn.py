"""spawn(fn, args, nprocs): run fn(i, *args) in nprocs processes and wait for them, as
torch.multiprocessing.spawn does. When one fails, the others are terminated and the parent
raises: ProcessRaisedException with the child's traceback text when it raised,
ProcessExitedException when it died or exited non-zero on its own.

A child reports its traceback through a file (not a pipe: a long traceback would block a
child writing into a pipe that the parent only reads after the child has exited).
"""

import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import sys
import tempfile
import traceback


class ProcessException(Exception):
    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """A process failed because its function raised; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """A process died from a signal or exited with a non-zero code."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_file):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass   # the parent is shutting the group down
    except Exception:
        with open(error_file, "wb") as f:
            pickle.dump(traceback.format_exc(), f)
        sys.exit(1)


class ProcessContext:
    """The processes started by start_processes(..., join=False); join() them."""

    def __init__(self, processes, error_files):
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait until a process exits (or `timeout` seconds). Returns True once all have
        exited cleanly, False while some still run; raises if one failed, after stopping the
        rest (SIGTERM, then after `grace_period` seconds, or 30, SIGKILL)."""
        if not self.sentinels:
            return True
        failed = None
        for sentinel in multiprocessing.connection.wait(list(self.sentinels), timeout=timeout):
            i = self.sentinels.pop(sentinel)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0:
                failed = i
                break
        if failed is None:
            return not self.sentinels
        self._stop_all(grace_period)
        self._raise(failed)

    def _stop_all(self, grace_period):
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()
        self.sentinels.clear()

    def _join_all(self, timeout):
        import time
        end = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, end - time.monotonic()))

    def _raise(self, i):
        p = self.processes[i]
        try:
            with open(self.error_files[i], "rb") as f:
                trace = pickle.load(f)
        except (OSError, EOFError, pickle.UnpicklingError):
            trace = None
        finally:
            _remove(self.error_files)
        if trace is not None:
            raise ProcessRaisedException(f"\n\n-- Process {i} terminated with the following error:\n{trace}",
                                         i, p.pid)
        code = p.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            raise ProcessExitedException(f"process {i} terminated with signal {name}", i, p.pid, code, name)
        raise ProcessExitedException(f"process {i} terminated with exit code {code}", i, p.pid, code)

    def __del__(self):
        _remove(getattr(self, "error_files", ()))


def _remove(paths):
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes running fn(i, *args) with `start_method`; wait for them when
    `join`, else return their ProcessContext."""
    ctx = multiprocessing.get_context(start_method)
    processes, error_files = [], []
    try:
        for i in range(nprocs):
            fd, path = tempfile.mkstemp(prefix="ptl_spawn_err_")
            os.close(fd)
            os.unlink(path)   # a child creates it only when it has an error to report
            error_files.append(path)
            p = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
            p.start()
            processes.append(p)
    except BaseException:
        for p in processes:
            p.terminate()
            p.join()
        raise
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run fn(i, *args) for i in range(nprocs), each in a new process started with 'spawn'
    (use start_processes for another start method). With join=True, return once all have
    finished, or raise ProcessRaisedException (with the child's traceback) or
    ProcessExitedException if one fails; with join=False, return a ProcessContext.

    >>> import pytorchlite.multiprocessing as mp
    >>> mp.spawn(print, args=("hello",), nprocs=2)   # doctest: +SKIP
    0 hello
    1 hello
    """
    if start_method != "spawn":
        import warnings
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\n"
                      "To use a different start_method use:\n\t\t"
                      " pytorchlite.multiprocessing.start_processes(...)", FutureWarning, stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
