"""The device registry: what core code may know of a device type.

Core modules (storage, copies, factories, the pointwise runtime, the dispatch table,
interop) never import a backend package. A backend registers a `Backend` object here for
its device type, and core code asks `get(device_type)` for the hook it needs: allocation,
copies between devices, the runner of generated pointwise kernels, stream bookkeeping,
and the resolution of the kernel entries that ops.yaml names for that device. This is the
role of PyTorch's dispatch keys and of tinygrad's `Device[...]`.

The CPU backend is core and registered below. `pytorchlite.cuda` registers the CUDA
backend when it is imported (the package facade imports it), and
`pytorchlite.multiprocessing` plugs its shared-memory storage into the CPU backend the
same way (`register_shared_memory`).

    >>> from pytorchlite import _backends
    >>> _backends.get("cpu").type
    'cpu'
"""

import importlib

from pytorchlite._device import device as _device

_REGISTRY = {}


class Backend:
    """The hooks of one device type. A backend overrides what it provides; the defaults
    raise errors that name the device type and the missing capability."""

    type = None

    def lazy_init(self):
        """Make the device usable, or raise a RuntimeError that says why it is not."""

    def is_available(self):
        return True

    def current_device(self):
        """The device a bare device type means (`cuda` is the current CUDA device)."""
        return _device(self.type)

    def allocate(self, nbytes, device):
        """A Storage of `nbytes` on `device`."""
        raise self._missing("memory allocation")

    def copy(self, dst, src, non_blocking=False):
        """dst[...] = src (src broadcast to dst's shape, converted to dst's dtype) where
        dst or src lives on this device type; the other side may be on the CPU."""
        raise self._missing("copies")

    def pointwise(self, op, entry, operands, scalars, out, inplace, common, out_dt, device):
        """Run the generated pointwise kernel `entry` (ops.yaml's entry for this device)
        of `op` once dtypes are decided: the general path of pytorchlite/_pointwise.py."""
        raise self._missing("pointwise kernels")

    def reduce(self, code, op, x, dims, keepdim, out_dtype, arg=0.0, aux_dtype=None, aux_in=None):
        """Run the declared reduction `code` (generated/reductions.py) of `op` over `dims`
        of x, a tensor of this device type, once PyTorch's checks have passed: the result in
        `out_dtype` (keepdim or not), and the aux output of `aux_dtype` too when it is given
        (max/min's indices, var_mean's mean); `aux_in` is an aux input in the keepdim shape
        (logsumexp's shift). The device half of pytorchlite/_kernels/reduce.py's _launch."""
        raise self._missing("reductions")

    def convolution(self, which, geometry, a, b, bias, out):
        """One of the core convolution's products into `out` (a contiguous tensor of this
        device type), as kernels/nn.c's ptl_conv2d computes them for the CPU: `which` 0
        the convolution of a by weight b (+ bias), 1 its input gradient from (grad_y a,
        weight b), 2 its weight gradient from (x a, grad_y b), 3 the input gradient + bias
        (a transposed convolution); `geometry` is ptl_conv2d's int64 array."""
        raise self._missing("convolution")

    def record_stream(self, tensor, stream):
        raise RuntimeError(f"record_stream() is not supported for {self.type} tensors")

    def dlpack_sync(self, tensor, stream):
        """Order a DLPack consumer's `stream` after the work queued on `tensor`."""

    def dlpack_device_type(self):
        """This device type's DLPack code (kDLCPU = 1, kDLCUDA = 2, ...), None without DLPack."""
        return None

    def dlpack_consumer_stream(self, index):
        """The stream integer a DLPack producer should order its work before, when a tensor
        of this device type is imported (None: no ordering)."""
        return None

    def pinned_memory_available(self):
        return False

    def resolve(self, target):
        """The callable a dotted `module.function` entry of ops.yaml names."""
        module, _, attr = target.rpartition(".")
        return getattr(importlib.import_module(module), attr)

    def _missing(self, what):
        return NotImplementedError(f"the {self.type} backend does not provide {what}")


class SharedMemory:
    """What pytorchlite.multiprocessing provides to CPU storages: moving a storage to
    shared memory in place, and telling whether it is there."""

    def share(self, storage):
        raise NotImplementedError

    def is_shared(self, storage):
        return False


class _NoSharedMemory(SharedMemory):
    def share(self, storage):
        raise RuntimeError("share_memory_(): shared memory needs pytorchlite.multiprocessing, which is not loaded")


_shared_memory = _NoSharedMemory()


def register(backend):
    """Register `backend` for its device type (replacing an earlier registration, so a
    test can install a fake backend and restore the real one)."""
    if not isinstance(backend, Backend) or not isinstance(backend.type, str):
        raise TypeError(f"register(): expected a Backend with a device type, got {backend!r}")
    previous = _REGISTRY.get(backend.type)
    _REGISTRY[backend.type] = backend
    return previous


def unregister(device_type):
    return _REGISTRY.pop(device_type, None)


def get(device_type):
    """The backend of a device type; a device type nobody registered is an error that
    says so (PyTorch: "Could not run ... with arguments from the 'X' backend")."""
    b = _REGISTRY.get(device_type)
    if b is None:
        known = ", ".join(sorted(_REGISTRY)) or "none"
        raise RuntimeError(f"no backend is registered for device type '{device_type}' (registered: {known})")
    return b


def registered():
    return tuple(sorted(_REGISTRY))


def register_shared_memory(provider):
    global _shared_memory
    if not isinstance(provider, SharedMemory):
        raise TypeError(f"register_shared_memory(): expected a SharedMemory, got {provider!r}")
    _shared_memory = provider


def shared_memory():
    return _shared_memory
