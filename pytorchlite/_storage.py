"""Storage: one allocation that tensors view.

A CPU storage either owns memory from the C allocator (freed through it the moment the
last reference goes: CPython refcounting, no finaliser queue), or borrows memory that a
foreign owner keeps alive (a NumPy array, an imported DLPack tensor, shared memory).
"""

from pytorchlite import _backends
from pytorchlite._C import ffi as _ffi, lib
from pytorchlite._device import CPU


class Storage:
    __slots__ = ("ptr", "nbytes", "device", "_owner", "_free", "__weakref__")

    def __init__(self, ptr, nbytes, device=CPU, owner=None, free=None):
        self.ptr = ptr          # integer address
        self.nbytes = nbytes
        self.device = device
        self._owner = owner     # keeps borrowed memory alive; None when we own it
        self._free = free       # callable(ptr, nbytes) for owned memory

    @staticmethod
    def allocate(nbytes, device=CPU):
        if device.type != "cpu":
            return _backends.get(device.type).allocate(nbytes, device)
        # This runs once per op result, so it skips __init__ and the pointer casts: the
        # allocator hands back an integer address and takes one back (see runtime.c).
        try:
            p = _alloc_addr(nbytes)
        except OverflowError:   # beyond size_t: no shape to name here, so say the bytes
            p = 0
        if not p:
            raise out_of_memory(nbytes)
        s = _new(Storage)
        s.ptr = p
        s.nbytes = nbytes
        s.device = device
        s._owner = None
        s._free = _free_addr
        return s

    def __del__(self):
        free = self._free
        if free is not None:
            self._free = None
            free(self.ptr, self.nbytes)

    def size(self):
        return self.nbytes

    def is_shared(self):
        """Whether this storage is in shared memory, so other processes can map it (CUDA
        memory counts as shared, as in PyTorch)."""
        if self.device.type != "cpu":
            return True
        return _backends.shared_memory().is_shared(self)

    def share_memory_(self):
        """Move this storage to shared memory in place (a no-op when it is already there,
        or on CUDA); every tensor over it keeps working and sees the same bytes."""
        if self.device.type == "cpu":
            _backends.shared_memory().share(self)
        return self

    def _swap_memory(self, other):
        """Exchange the memory behind two storages: tensors over `self` see `other`'s block
        from now on, and `other` frees (or lets go of) the old one when it goes."""
        self.ptr, other.ptr = other.ptr, self.ptr
        self.nbytes, other.nbytes = other.nbytes, self.nbytes
        self._free, other._free = other._free, self._free
        self._owner, other._owner = other._owner, self._owner


def out_of_memory(nbytes):
    """PyTorch's CPU allocation failure (DefaultCPUAllocator), naming the bytes asked for."""
    if nbytes > (1 << 63) - 1:
        return RuntimeError(f"Storage size calculation overflowed: tried to allocate {nbytes} bytes")
    return RuntimeError(f"DefaultCPUAllocator: can't allocate memory: you tried to allocate {nbytes} bytes. "
                        "Error code 12 (Cannot allocate memory)")


_new = object.__new__
_alloc_addr = lib.ptl_alloc_addr
_free_addr = lib.ptl_free_addr
_NULL = _ffi.NULL
_void_p = _ffi.cast


def _free_cpu(ptr, nbytes, _lib=lib, _cast=_ffi.cast):
    """Free an address from the CPU allocator (for storages built by hand over ptl_alloc)."""
    _lib.ptl_free(_cast("void *", ptr), nbytes)
