"""Random number generators: `Generator`, the default generator, and the global seeding
functions (`manual_seed`, `seed`, `initial_seed`, `get_rng_state`, `set_rng_state`).

A Generator is a counter-based Philox4x32-10 stream (kernels/random.c): a 64-bit seed
(the Philox key) and a 64-bit offset (the next unused counter). Every request reserves
the counters it needs by advancing the offset, so consecutive calls draw fresh numbers,
a request's numbers depend only on (seed, offset, element index) and not on threads,
and the whole state is those two integers: `get_state()` is 16 bytes (seed then offset,
little-endian uint64), PyTorch's ByteTensor state convention with Philox contents.
"""

import os
import struct

from pytorchlite._device import device as _device
from pytorchlite._core import TensorBase as Tensor, empty as _empty

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state"]

_U64 = 1 << 64
# PyTorch's default CPU seed, so an unseeded program starts from a fixed, documented state
_DEFAULT_SEED = 67280421310721
_STATE_BYTES = 16


def _seed_value(seed, who="manual_seed"):
    """A seed as PyTorch's Generator.manual_seed takes it: an int in [-2^63, 2^64), stored
    modulo 2^64 (so -1 becomes 2^64 - 1)."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        if hasattr(seed, "__index__") and not isinstance(seed, bool):
            seed = seed.__index__()
        else:
            raise RuntimeError(f"{who} expected a long, but got {type(seed).__name__}")
    if not -(1 << 63) <= seed < _U64:
        raise ValueError("Overflow when unpacking long long")
    return seed % _U64


class Generator:
    """A random number generator: `Generator(device='cpu')`.

    Pass it as `generator=` to any random operator to draw from it instead of the default
    generator; it is independent of every other generator.

    >>> g = pytorchlite.Generator().manual_seed(0)
    >>> a = pytorchlite.rand(3, generator=g)
    >>> b = pytorchlite.rand(3, generator=g.manual_seed(0))
    >>> a.tolist() == b.tolist()
    True
    """

    __slots__ = ("_device", "_seed", "_offset", "__weakref__")

    def __init__(self, device="cpu"):
        dev = _device(device)
        if dev.type != "cpu":
            raise RuntimeError(f"Generator(): device '{dev}' is not supported: pytorchlite's random kernels run "
                               "on the CPU, so generators are CPU generators")
        self._device = dev
        self._seed = _DEFAULT_SEED
        self._offset = 0

    @property
    def device(self):
        """The device whose tensors this generator fills."""
        return self._device

    def manual_seed(self, seed):
        """Seed the generator (and restart its stream); returns the generator.

        >>> pytorchlite.Generator().manual_seed(42).initial_seed()
        42
        """
        self._seed = _seed_value(seed)
        self._offset = 0
        return self

    def seed(self):
        """Seed from the operating system's entropy; returns the new seed."""
        s = int.from_bytes(os.urandom(8), "little") & ((1 << 63) - 1)
        self._seed = s
        self._offset = 0
        return s

    def initial_seed(self):
        """The seed the generator was last seeded with."""
        return self._seed

    def get_offset(self):
        """The next unused Philox counter (how far the stream has advanced since seeding)."""
        return self._offset

    def set_offset(self, offset):
        """Move the stream to counter `offset` (with the same seed)."""
        if isinstance(offset, bool) or not isinstance(offset, int):
            raise TypeError(f"set_offset(): argument 'offset' must be int, not {type(offset).__name__}")
        if not 0 <= offset < _U64:
            raise ValueError("Overflow when unpacking long long")
        self._offset = offset
        return self

    def get_state(self):
        """The state as a uint8 tensor of 16 bytes: seed and offset, little-endian uint64."""
        from pytorchlite import _dtype as D
        t = _empty((_STATE_BYTES,), D.uint8, self._device)
        t._numpy_view()[:] = bytearray(struct.pack("<QQ", self._seed, self._offset))
        return t

    def set_state(self, new_state):
        """Restore a state returned by `get_state()`; returns the generator."""
        from pytorchlite import _dtype as D
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a torch.ByteTensor, but got {type(new_state).__name__}")
        if new_state._dtype is not D.uint8:
            raise TypeError("RNG state must be a torch.ByteTensor")
        if not new_state.is_contiguous():
            raise RuntimeError("RNG state must be contiguous")
        if new_state.numel() != _STATE_BYTES:
            raise RuntimeError(f"Expected a PhiloxGeneratorState of size {_STATE_BYTES} but found the input RNG "
                               f"state size to be {new_state.numel()}")
        raw = bytes(new_state.cpu()._numpy_view().reshape(-1))
        self._seed, self._offset = struct.unpack("<QQ", raw)
        return self

    def clone_state(self):
        """A new generator in the same state (the two then advance independently)."""
        g = Generator(self._device)
        g._seed, g._offset = self._seed, self._offset
        return g

    def _reserve(self, counters):
        """Reserve `counters` Philox counters for one request: returns (seed, first counter)
        and advances the stream past them."""
        start = self._offset
        self._offset = (start + counters) % _U64
        return self._seed, start

    def __reduce__(self):
        return (_rebuild_generator, (str(self._device), self._seed, self._offset))


def _rebuild_generator(device, seed, offset):
    g = Generator(device)
    g._seed, g._offset = seed, offset
    return g


default_generator = Generator()


def get_generator(generator):
    """The generator a random operator draws from: `generator`, or the default one."""
    if generator is None:
        return default_generator
    return generator


def manual_seed(seed):
    """Seed the default generator; returns it.

    >>> _ = pytorchlite.manual_seed(0)
    >>> a = pytorchlite.rand(2)
    >>> _ = pytorchlite.manual_seed(0)
    >>> pytorchlite.rand(2).tolist() == a.tolist()
    True
    """
    return default_generator.manual_seed(int(seed))


def seed():
    """Seed the default generator from the operating system's entropy; returns the seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator was last seeded with."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state, as a uint8 tensor (see `Generator.get_state`)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Restore the default generator's state from `get_rng_state()`."""
    default_generator.set_state(new_state)
