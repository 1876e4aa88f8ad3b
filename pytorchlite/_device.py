"""`pytorchlite.device`: a device type plus an optional index, as in PyTorch."""

__all__ = ["device"]


class device:
    """A device: `device('cpu')`, `device('cuda', 0)`, `device('cuda:1')`."""

    __slots__ = ("type", "index", "_key")
    _KNOWN = ("cpu", "cuda")

    def __new__(cls, type, index=None):
        if isinstance(type, device):
            if index is not None:
                raise ValueError("device(): index given twice")
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            raise TypeError(f"device(): argument 'type' must be str, not {type.__class__.__name__}")
        name = type
        if ":" in type:
            if index is not None:
                raise RuntimeError(f"type (string) must not include an index because index was passed explicitly: {type}")
            name, _, idx = type.partition(":")
            if not idx.isdigit():
                raise RuntimeError(f"Invalid device string: '{type}'")
            index = int(idx)
        if name not in cls._KNOWN:
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device string: {type}")
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        cached = _CACHE.get((name, index))
        if cached is not None:
            return cached
        self = object.__new__(cls)
        object.__setattr__(self, "type", name)
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "_key", (name, index))
        _CACHE[(name, index)] = self
        return self

    def __setattr__(self, k, v):
        raise AttributeError("device is immutable")

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and self._key == other._key

    def __hash__(self):
        return hash(self._key)

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return (device, (self.type, self.index))


_CACHE = {}
CPU = device("cpu")
