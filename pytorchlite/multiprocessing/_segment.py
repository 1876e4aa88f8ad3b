"""Shared-memory segments: memory-mapped files in /dev/shm (a RAM-backed tmpfs on Linux;
elsewhere the temp directory). Two users:

- shared storages (Tensor.share_memory_): an *unnamed* segment. Its file is unlinked the
  moment it is created, so nothing is ever left in /dev/shm, not even after a crash; the
  memory lives while some process holds the descriptor or the mapping. The descriptor is
  kept open because it is what travels to other processes (SCM_RIGHTS, see reductions.py).
- DataLoader batches (utils/data/_shm.py): a *named* segment that a worker fills and the
  main process opens by name, unlinking it at once.

A Segment is unmapped and its descriptor closed when the last reference to it goes.
"""

import ctypes
import errno
import itertools
import mmap
import os
import secrets
import tempfile

_counter = itertools.count()

# mmap(2) itself rather than Python's mmap module, which keeps a second descriptor open per
# mapping (a dup, for its resize()): with one per shared storage, descriptors run out twice
# as fast
_libc = ctypes.CDLL(None, use_errno=True)
_mmap = _libc.mmap
_mmap.restype = ctypes.c_void_p
_mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int64)
_munmap = _libc.munmap
_munmap.restype = ctypes.c_int
_munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
_MAP_FAILED = ctypes.c_void_p(-1).value


def shm_dir():
    d = "/dev/shm"
    if os.path.isdir(d) and os.access(d, os.W_OK):
        return d
    return tempfile.gettempdir()


def _reserve(fd, nbytes, path):
    """Size the file and reserve its pages now. A sparse tmpfs file that cannot be backed
    (a full /dev/shm, as in a default 64 MB container) would otherwise kill the process
    with SIGBUS on first write; reserving turns that into an exception here."""
    os.ftruncate(fd, nbytes)
    if nbytes and hasattr(os, "posix_fallocate"):
        try:
            os.posix_fallocate(fd, 0, nbytes)
        except OSError as e:
            # EOPNOTSUPP/EINVAL: a file system that cannot reserve; pages then come on demand
            if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                raise RuntimeError(f"unable to allocate {nbytes} bytes of shared memory in "
                                   f"{os.path.dirname(path)}: {e.strerror} (is it full or too small?)") from e


def create_file(path, nbytes):
    """A new file of `nbytes` at `path` (which must not exist), as an open descriptor."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        _reserve(fd, nbytes, path)
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    return fd


class Segment:
    """One mapping of a shared-memory file: `ptr` is its address, `key` identifies the file
    across processes (device, inode), `fd` is the open descriptor or None. NumPy can view it
    (`np.asarray(segment)`: uint8, keeping the segment alive)."""

    __slots__ = ("ptr", "nbytes", "fd", "key", "__weakref__")

    def __init__(self, fd, keep_fd):
        """Map all of the (non-empty) file open at `fd`; the segment owns `fd` from here on:
        it is closed now unless `keep_fd`, else when the segment goes."""
        self.ptr, self.fd = 0, None
        try:
            st = os.fstat(fd)
            if st.st_size <= 0:
                raise ValueError("a shared-memory segment cannot be empty")
            ptr = _mmap(None, st.st_size, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
            if ptr is None or ptr == _MAP_FAILED:
                err = ctypes.get_errno()
                raise OSError(err, f"mmap of {st.st_size} bytes of shared memory failed: {os.strerror(err)}")
        except BaseException:
            os.close(fd)
            raise
        self.ptr = ptr
        self.nbytes = st.st_size
        self.key = (st.st_dev, st.st_ino)
        if keep_fd:
            self.fd = fd
        else:
            os.close(fd)   # the mapping alone keeps the memory

    def __del__(self):
        ptr, fd = self.ptr, self.fd
        self.ptr, self.fd = 0, None
        if ptr:
            _munmap(ptr, self.nbytes)
        if fd is not None:
            os.close(fd)

    @property
    def __array_interface__(self):
        return {"shape": (self.nbytes,), "typestr": "|u1", "data": (self.ptr, False), "version": 3}

    def __repr__(self):
        return f"Segment(nbytes={self.nbytes}, fd={self.fd}, key={self.key})"


def new_unnamed(nbytes):
    """A fresh segment of `nbytes` with no name in the file system and its descriptor kept."""
    path = os.path.join(shm_dir(), f"ptl_mp_{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}")
    fd = create_file(path, nbytes)
    os.unlink(path)
    return Segment(fd, keep_fd=True)


def from_fd(fd):
    """The segment for a descriptor received from another process (kept open, so that the
    storage can be sent on again)."""
    return Segment(fd, keep_fd=True)


def create_named(path, nbytes):
    """A new segment left at `path` for another process to `open_named`."""
    return Segment(create_file(path, nbytes), keep_fd=False)


def open_named(path):
    """Map the segment another process created at `path`, and remove its name at once."""
    fd = os.open(path, os.O_RDWR)
    try:
        os.unlink(path)
    except BaseException:
        os.close(fd)
        raise
    return Segment(fd, keep_fd=False)
