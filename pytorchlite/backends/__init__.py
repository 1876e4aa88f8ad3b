"""`pytorchlite.backends`: switches of the backends, spelled as PyTorch's
(`torch.backends.cuda.matmul.allow_tf32`).

    >>> import pytorchlite
    >>> pytorchlite.backends.cuda.matmul.allow_tf32
    False
"""

from pytorchlite.backends import cuda

__all__ = ["cuda"]
