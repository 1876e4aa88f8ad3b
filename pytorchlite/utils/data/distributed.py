"""DistributedSampler: each rank of a process group visits its own slice of a dataset's
indices, in an order that changes every epoch (`set_epoch`) and is the same on every rank.

The shuffled order is PyTorch's, index for index: `torch.randperm(n)` from a CPU
Generator seeded with `seed + epoch`, which is a Fisher-Yates shuffle drawing 32-bit words
from MT19937 (each swap partner is `word % (n - i)`). pytorchlite's own generator is
Philox, so that stream is reproduced here with NumPy's legacy MT19937 (RandomState seeded
with the same 32-bit integer gives the same words) instead: a script moved from PyTorch
sees the same shards.
"""

import math

import numpy as np

import pytorchlite.distributed as dist
from pytorchlite.utils.data.sampler import Sampler

__all__ = ["DistributedSampler"]


def _torch_randperm(n, seed):
    """torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist() for
    n < 2**32 / 20 (where PyTorch uses 32-bit draws)."""
    if n >= (2 ** 32 - 1) // 20:
        raise ValueError(f"DistributedSampler: datasets of {n} samples are larger than PyTorch's 32-bit shuffle "
                         "handles; pytorchlite does not reproduce its 64-bit one")
    # MT19937 takes the seed's low 32 bits (PyTorch's mt19937(uint64 seed) does the same)
    words = np.random.RandomState(seed & 0xFFFFFFFF).randint(0, 2 ** 32, size=max(n - 1, 0), dtype=np.uint32)
    perm = list(range(n))
    for i, w in enumerate(words.tolist()):
        z = i + w % (n - i)
        perm[i], perm[z] = perm[z], perm[i]
    return perm


class DistributedSampler(Sampler):
    """Indices for one rank: the (shuffled) index list padded by repetition to a multiple
    of num_replicas (or cut, with drop_last), then every num_replicas-th from `rank`.

    >>> from pytorchlite.utils.data.distributed import DistributedSampler
    >>> s = DistributedSampler(range(10), num_replicas=3, rank=1, shuffle=False)
    >>> list(s), len(s)
    ([1, 4, 7, 0], 4)
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None:
            num_replicas = dist.get_world_size()
        if rank is None:
            rank = dist.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        indices = _torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Make the next iteration's order that of `epoch` (call it before each epoch, on
        every rank, or every epoch visits the same order)."""
        self.epoch = epoch
