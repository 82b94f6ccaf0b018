"""Datasets: map-style (``__getitem__`` + ``__len__``) and iterable, and ways to combine and split them."""
import bisect
import itertools
import math
import warnings

from ...random import default_generator, randperm
from ...tensor import Tensor


class Dataset:
    """A map-style dataset: subclass it and define ``__getitem__`` (and ``__len__`` for samplers).

    >>> from workbench.utils.data import Dataset
    >>> class Squares(Dataset):
    ...     def __len__(self): return 4
    ...     def __getitem__(self, i): return i * i
    >>> Squares()[3]
    9
    """

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset that is a stream: subclass it and define ``__iter__``.

    With ``num_workers > 0`` every worker iterates its own copy; split the work with
    ``get_worker_info()`` or each sample comes once per worker.

    >>> from workbench.utils.data import IterableDataset
    >>> class Count(IterableDataset):
    ...     def __iter__(self): return iter(range(3))
    >>> list(Count())
    [0, 1, 2]
    """

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Samples are the rows of the given tensors, indexed together along dim 0.

    >>> import workbench as wb
    >>> from workbench.utils.data import TensorDataset
    >>> ds = TensorDataset(wb.arange(3), wb.tensor([10, 20, 30]))
    >>> ds[1]
    (tensor(1), tensor(20))
    """

    def __init__(self, *tensors):
        if any(not isinstance(t, Tensor) for t in tensors):
            raise TypeError("TensorDataset expects Tensors, got " + ", ".join(type(t).__name__ for t in tensors))
        if tensors and any(t.ndim == 0 or t.size(0) != tensors[0].size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors: every tensor needs the same size in dim 0, got "
                                 + str([tuple(t.shape) for t in tensors]))
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].size(0) if self.tensors else 0


class StackDataset(Dataset):
    """Zips datasets of equal length: samples are tuples (positional) or dicts (keyword).

    >>> from workbench.utils.data import StackDataset
    >>> StackDataset(x=range(3), y="abc")[1]
    {'x': 1, 'y': 'b'}
    """

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like input/output,"
                             " but both types are given.")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        n = len(datasets[0])
        if any(len(d) != n for d in datasets):
            raise ValueError("Size mismatch between datasets: " + str([len(d) for d in datasets]))
        self._length = n
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __len__(self):
        return self._length


class ConcatDataset(Dataset):
    """Map-style datasets one after another.

    >>> from workbench.utils.data import ConcatDataset
    >>> ds = ConcatDataset([range(3), range(10, 12)])
    >>> len(ds), ds[3], ds[-1]
    (5, 10, 11)
    """

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset: use ChainDataset")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        i = bisect.bisect_right(self.cumulative_sizes, idx)
        if i == len(self.datasets):
            raise IndexError(f"index {idx} is out of range for a ConcatDataset of length {len(self)}")
        return self.datasets[i][idx - (self.cumulative_sizes[i - 1] if i else 0)]


class ChainDataset(IterableDataset):
    """Iterable datasets one after another (lazily).

    >>> from workbench.utils.data import ChainDataset
    >>> list(ChainDataset([range(2), range(5, 7)]))
    [0, 1, 5, 6]
    """

    def __init__(self, datasets):
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of ``dataset`` at ``indices``.

    >>> from workbench.utils.data import Subset
    >>> s = Subset("abcde", [4, 0])
    >>> len(s), s[0]
    (2, 'e')
    """

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices):
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def random_split(dataset, lengths, generator=None):
    """Split a dataset into non-overlapping random subsets of the given lengths (or fractions).

    Fractions are floored, and the remainder goes round-robin to the first subsets, as in PyTorch.

    >>> import workbench as wb
    >>> from workbench.utils.data import random_split
    >>> a, b = random_split(range(10), [0.7, 0.3], generator=wb.Generator().manual_seed(0))
    >>> len(a), len(b), sorted(list(a) + list(b)) == list(range(10))
    (7, 3, True)
    """
    n = len(dataset)
    lengths = list(lengths)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(int(math.floor(n * frac)))
        for i in range(n - sum(sizes)):
            sizes[i % len(sizes)] += 1
        for i, size in enumerate(sizes):
            if size == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an empty dataset.")
        lengths = sizes
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    perm = randperm(n, generator=generator if generator is not None else default_generator).tolist()
    out, start = [], 0
    for size in lengths:
        out.append(Subset(dataset, perm[start:start + size]))
        start += size
    return out
