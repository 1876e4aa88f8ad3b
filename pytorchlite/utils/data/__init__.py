"""pytorchlite.utils.data: datasets, samplers, collation and the DataLoader, in the shape of
torch.utils.data."""

from pytorchlite.utils.data.dataset import (  # noqa: F401
    ChainDataset, ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split)
from pytorchlite.utils.data.sampler import (  # noqa: F401
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler)
from pytorchlite.utils.data._collate import default_collate, default_convert  # noqa: F401
from pytorchlite.utils.data._worker import WorkerInfo, get_worker_info  # noqa: F401
from pytorchlite.utils.data.dataloader import DataLoader  # noqa: F401
from pytorchlite.utils.data.distributed import DistributedSampler  # noqa: F401
