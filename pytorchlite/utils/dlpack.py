"""pytorchlite.utils.dlpack: the legacy DLPack capsule interface of torch.utils.dlpack.

>>> import pytorchlite
>>> from pytorchlite.utils.dlpack import from_dlpack, to_dlpack
>>> from_dlpack(to_dlpack(pytorchlite.arange(3)))
tensor([0, 1, 2])
"""

from pytorchlite import from_dlpack  # noqa: F401


def to_dlpack(tensor):
    """A DLPack capsule sharing `tensor`'s memory; `from_dlpack` consumes it once (a
    second time is PyTorch's RuntimeError "from_dlpack received an invalid capsule")."""
    return tensor.__dlpack__()
