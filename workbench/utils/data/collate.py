"""default_collate and default_convert: samples -> batches, NumPy -> tensors, through nested containers."""
import collections.abc
import copy
import re

from ... import _backend, ops
from ...autograd.grad_mode import STATE
from ...creation import as_tensor
from ...multiprocessing.reductions import _shared_tensor, shared_empty
from ...tensor import Tensor
from ._worker import get_worker_info

np = _backend.numpy
_STR_OBJ = re.compile(r"[SaUO]")
_ERR = "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"


def _stack(batch):
    """Stack equal-shaped tensors along a new dim 0; in a worker, straight into shared memory."""
    shape = batch[0].shape
    for i, t in enumerate(batch):
        if t.shape != shape:
            raise RuntimeError(f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                               f"{list(t.shape)} at entry {i}")
    if STATE.enabled and any(t.requires_grad for t in batch):
        return ops.stack(batch, 0)
    first = batch[0]._data
    xp = _backend.xp_of(first)
    if xp is np and get_worker_info() is not None:
        arr, seg = shared_empty((len(batch),) + tuple(shape), first.dtype)
        for i, t in enumerate(batch):
            arr[i] = t._data
        return _shared_tensor(arr, seg)
    with _backend.on_device(batch[0].device):
        return Tensor._make(xp.stack([t._data for t in batch]))


def _as_tensor(x):
    return as_tensor(x)


def default_collate(batch):
    """Turn a list of samples into a batch: tensors, NumPy arrays and numbers are stacked into tensors,
    dicts, (named)tuples and lists are collated field by field, strings are kept as lists.

    >>> import workbench as wb
    >>> from workbench.utils.data import default_collate
    >>> default_collate([{"x": wb.tensor([1.0]), "y": 0}, {"x": wb.tensor([2.0]), "y": 1}])
    {'x': tensor([[1.],
            [2.]]), 'y': tensor([0, 1])}
    """
    elem = batch[0]
    elem_type = type(elem)
    if isinstance(elem, Tensor):
        return _stack(batch)
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ in ("ndarray", "memmap"):
            if _STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_ERR.format(elem.dtype))
            return default_collate([_as_tensor(b) for b in batch])
        if elem.shape == ():  # a NumPy scalar
            return _as_tensor(np.asarray(batch))
    if isinstance(elem, bool):
        return _as_tensor(np.asarray(batch, dtype=np.bool_))
    if isinstance(elem, int):
        return _as_tensor(np.asarray(batch, dtype=np.int64))
    if isinstance(elem, float):
        return _as_tensor(np.asarray(batch, dtype=np.float64))
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: default_collate([d[key] for d in batch]) for key in elem})
                return clone
            return elem_type({key: default_collate([d[key] for d in batch]) for key in elem})
        except TypeError:
            return {key: default_collate([d[key] for d in batch]) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(default_collate(samples) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if not all(len(e) == size for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [default_collate(samples) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = default_collate(samples)
                return clone
            return elem_type([default_collate(samples) for samples in transposed])
        except TypeError:
            return [default_collate(samples) for samples in transposed]
    raise TypeError(_ERR.format(elem_type))


def default_convert(data):
    """Turn NumPy arrays (also inside dicts, tuples and lists) into tensors; leave everything else.

    What a DataLoader applies to each sample when automatic batching is off (``batch_size=None``).

    >>> import numpy as np
    >>> from workbench.utils.data import default_convert
    >>> default_convert([np.array([0, 1]), 3, "s"])
    [tensor([0, 1]), 3, 's']
    """
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if elem_type.__name__ == "ndarray" and _STR_OBJ.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data
