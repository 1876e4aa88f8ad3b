"""Making views: new metadata over the same storage, sharing the base's version counter."""

from pytorchlite._core import make


def make_view(base, shape, stride, offset):
    v = make(base._storage, shape, stride, offset, base._dtype, base._vc)
    v._base = base if base._base is None else base._base
    return v
