"""Padding layers (zero, constant, reflection, replication) in one and two dims, each one
call of nn.functional.pad, with PyTorch's constructors and repr. `padding` is an int (the
same on every side) or a tuple (left, right[, top, bottom])."""

from pytorchlite.nn import functional as F
from pytorchlite.nn.module import Module


class _PadNd(Module):
    """Pads by `padding` (expanded to 2 * `_k` sizes) in mode `_mode`."""
    _k = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = F._ntuple(padding, 2 * self._k)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with `value`.

    >>> import pytorchlite
    >>> ConstantPad1d((1, 2), 3.5)(pytorchlite.ones(1, 2))
    tensor([[3.5000, 1.0000, 1.0000, 3.5000, 3.5000]])
    """
    _k = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last two dims with `value`."""
    _k = 2


class _ZeroPad:
    """A constant pad of zeros, printed as its padding alone (PyTorch's repr)."""

    def __init__(self, padding):
        super().__init__(padding, 0.0)

    extra_repr = _PadNd.extra_repr


class ZeroPad1d(_ZeroPad, ConstantPad1d):
    """Pads the last dim with zeros."""


class ZeroPad2d(_ZeroPad, ConstantPad2d):
    """Pads the last two dims with zeros."""


class ReflectionPad1d(_PadNd):
    """Pads the last dim of (N, C, W) or (C, W) input with its reflection (the edge not repeated).

    >>> import pytorchlite
    >>> ReflectionPad1d(2)(pytorchlite.tensor([[1., 2., 3.]]))
    tensor([[3., 2., 1., 2., 3., 2., 1.]])
    """
    _k, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last two dims of (N, C, H, W) or (C, H, W) input with their reflection."""
    _k, _mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim of (N, C, W) or (C, W) input by repeating its edge values.

    >>> import pytorchlite
    >>> ReplicationPad1d((2, 1))(pytorchlite.tensor([[1., 2., 3.]]))
    tensor([[1., 1., 1., 2., 3., 3.]])
    """
    _k, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last two dims of (N, C, H, W) or (C, H, W) input by repeating their edge values."""
    _k, _mode = 2, "replicate"
