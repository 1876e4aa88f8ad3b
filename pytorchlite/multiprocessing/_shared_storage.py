"""CPU storages in shared memory.

A shared storage is an ordinary Storage whose memory is borrowed from an unnamed Segment
(see _segment.py), so every op works on it unchanged. Moving a storage there happens in
place: the bytes are copied into a new segment and the Storage object takes that memory,
so every tensor and view over it keeps working (PyTorch's share_memory_ semantics).

Each process keeps one Storage per segment it knows (`_by_key`, weak): a storage that
comes back from another process, or arrives twice, is the same Storage object, so views
sent separately still alias each other in the receiver.
"""

import os
import threading
import weakref

from pytorchlite import _backends
from pytorchlite import _dtype as D
from pytorchlite._core import copy_into, make
from pytorchlite._device import CPU
from pytorchlite._storage import Storage
from pytorchlite.multiprocessing import _segment

_by_key = weakref.WeakValueDictionary()   # segment key (device, inode) -> Storage
# a Queue's feeder thread pickles (and so shares) while the main thread may share too
_lock = threading.Lock()


def _reinit_lock_after_fork():
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_lock_after_fork)


def share_(st):
    """Move CPU storage `st` into a new shared segment, in place; no-op if it is shared."""
    with _lock:
        if type(st._owner) is _segment.Segment:
            return st
        # mmap cannot map 0 bytes: an empty storage gets a one-byte segment
        seg = _segment.new_unnamed(max(st.nbytes, 1))
        new = Storage(seg.ptr, st.nbytes, CPU, owner=seg)
        if st.nbytes:
            copy_into(make(new, (st.nbytes,), (1,), 0, D.uint8), make(st, (st.nbytes,), (1,), 0, D.uint8))
        # `new` leaves holding the old memory, which it frees as it goes
        st._swap_memory(new)
        _by_key[seg.key] = st
        return st


def segment_of(st):
    """The shared segment behind `st`, moving the storage there first if needed."""
    share_(st)
    return st._owner


def lookup(key):
    """The live storage of this process over the segment `key`, or None."""
    return _by_key.get(key)


def from_fd(fd, nbytes, key):
    """The storage for a segment descriptor received from another process: the one this
    process already has for that segment (the descriptor is then closed), or a new mapping."""
    with _lock:
        st = _by_key.get(key)
        if st is not None:
            os.close(fd)
            return st
        seg = _segment.from_fd(fd)
        if seg.key != key:
            raise RuntimeError(f"received shared-memory descriptor for segment {seg.key}, expected {key}")
        st = Storage(seg.ptr, nbytes, CPU, owner=seg)
        _by_key[key] = st
        return st


class SharedMemoryProvider(_backends.SharedMemory):
    """Plugs these segments into CPU storages (Storage.share_memory_ / is_shared)."""

    def share(self, storage):
        share_(storage)

    def is_shared(self, storage):
        return type(storage._owner) is _segment.Segment


_backends.register_shared_memory(SharedMemoryProvider())
