"""pytorchlite.multiprocessing: the standard `multiprocessing` module, with tensors that
cross process boundaries by shared memory instead of by copy (torch.multiprocessing).

Everything `multiprocessing` exports is here (Process, Queue, Pipe, Pool, get_context,
set_start_method, ...). A CPU tensor sent through any of them (a Queue or Pipe message, a
Pool task, the arguments of a process started with 'spawn' or 'forkserver') has its storage
moved to shared memory in place, and the receiver gets a tensor over that same memory: a
write on either side is seen by the other. Views keep their sizes, strides and offset.
With 'fork', a Process's arguments are inherited rather than sent: only tensors already
shared (Tensor.share_memory_, Module.share_memory) are shared with the child.

    >>> import pytorchlite, pytorchlite.multiprocessing as mp
    >>> t = pytorchlite.zeros(3)
    >>> t.is_shared()
    False
    >>> t.share_memory_().is_shared()
    True

Shared memory is freed when the last tensor over it goes in every process; nothing is left
in /dev/shm, even by a process that crashes. Only the "file_descriptor" sharing strategy is
implemented: a process that sends a tensor must still be alive when the receiver takes it.
"""

import multiprocessing
from multiprocessing import *  # noqa: F401,F403  (the standard API, unchanged)

from pytorchlite.multiprocessing import _shared_storage  # noqa: F401  (registers shared-memory storage)
from pytorchlite.multiprocessing.reductions import init_reductions
from pytorchlite.multiprocessing.spawn import (  # noqa: F401
    ProcessContext, ProcessException, ProcessExitedException, ProcessRaisedException, spawn,
    start_processes,
)

__all__ = ["set_sharing_strategy", "get_sharing_strategy", "get_all_sharing_strategies", "spawn",
           "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException"] + multiprocessing.__all__

SpawnContext = ProcessContext   # PyTorch's older name

_sharing_strategy = "file_descriptor"
_all_sharing_strategies = {"file_descriptor"}


def set_sharing_strategy(new_strategy):
    """Choose how tensors are shared; "file_descriptor" (segments passed as descriptors)
    is the one strategy pytorchlite has."""
    if new_strategy not in _all_sharing_strategies:
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported; pytorchlite supports "
                         f"{sorted(_all_sharing_strategies)}")
    global _sharing_strategy
    _sharing_strategy = new_strategy


def get_sharing_strategy():
    """The current sharing strategy ("file_descriptor")."""
    return _sharing_strategy


def get_all_sharing_strategies():
    """The sharing strategies this platform supports."""
    return set(_all_sharing_strategies)


init_reductions()
