"""``DistributedSampler``: each rank reads its own share of a dataset, PyTorch's semantics exactly.

Indices (shuffled with ``seed + epoch`` when ``shuffle``) are padded by repeating the first ones until
they divide evenly by the number of replicas (or cut to a multiple if ``drop_last``), then rank r takes
every ``num_replicas``-th index starting at r.
"""
import math

from ... import distributed as dist
from ...random import Generator, randperm
from .sampler import Sampler


class DistributedSampler(Sampler):
    """Sample the part of ``dataset`` that belongs to ``rank`` of ``num_replicas`` (default: the process group's).

    Call ``set_epoch(epoch)`` at the start of each epoch so the shuffle differs between epochs.

    >>> from workbench.utils.data.distributed import DistributedSampler
    >>> list(DistributedSampler(range(5), num_replicas=2, rank=1, shuffle=False))
    [1, 3, 0]
    """

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0, drop_last=False):
        if num_replicas is None or rank is None:
            if not dist.is_available():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
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
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples

    def set_epoch(self, epoch):
        """Make the next ``__iter__`` shuffle with ``seed + epoch`` (every rank must pass the same epoch)."""
        self.epoch = epoch
