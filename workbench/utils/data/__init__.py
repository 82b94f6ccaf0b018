"""``workbench.utils.data``: datasets, samplers, collation and the DataLoader, as ``torch.utils.data``.

>>> import workbench as wb
>>> from workbench.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(wb.arange(6.0).reshape(3, 2)), batch_size=2)
>>> [b[0].shape for b in loader]
[workbench.Size([2, 2]), workbench.Size([1, 2])]
"""
from ._worker import WorkerInfo, get_worker_info
from .collate import default_collate, default_convert
from .dataloader import DataLoader
from .dataset import (ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset,
                      random_split)
from .sampler import (BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler,
                      WeightedRandomSampler)

__all__ = ["BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
           "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
           "TensorDataset", "WeightedRandomSampler", "WorkerInfo", "default_collate", "default_convert",
           "get_worker_info", "random_split"]
