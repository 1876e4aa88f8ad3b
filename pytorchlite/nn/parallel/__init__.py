"""pytorchlite.nn.parallel: data-parallel training over pytorchlite.distributed."""

from pytorchlite.nn.parallel.distributed import DistributedDataParallel  # noqa: F401

__all__ = ["DistributedDataParallel"]
