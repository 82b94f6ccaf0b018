"""What runs inside a DataLoader worker process: seeding, fetching, collating, and reporting errors."""
import os
import queue
import random
import sys
import traceback
from multiprocessing import queues as _mp_queues

from ... import _backend
# the package import registers the shared-memory reducers the batches leave through
from ... import multiprocessing  # noqa: F401
from ... import random as wb_random

_POLL_S = 0.25  # how often an idle worker checks for shutdown and that the main process is still there
_worker_info = None


class WorkerInfo:
    """Who this DataLoader worker is: ``id``, ``num_workers``, ``seed`` and its copy of the ``dataset``.

    >>> from workbench.utils.data import WorkerInfo
    >>> WorkerInfo(id=0, num_workers=2, seed=7, dataset=None)
    WorkerInfo(id=0, num_workers=2, seed=7, dataset=None)
    """

    def __init__(self, **kwargs):
        self.__keys = tuple(kwargs)
        for k, v in kwargs.items():
            object.__setattr__(self, k, v)

    def __setattr__(self, key, val):
        if key != "_WorkerInfo__keys" and key in getattr(self, "_WorkerInfo__keys", ()):
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        object.__setattr__(self, key, val)

    def __repr__(self):
        return f"{self.__class__.__name__}(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__keys) + ")"


def get_worker_info():
    """In a DataLoader worker, its :class:`WorkerInfo`; in the main process, None.

    Use it in an IterableDataset's ``__iter__`` (or a ``worker_init_fn``) to give each worker its share.

    >>> from workbench.utils.data import get_worker_info
    >>> get_worker_info() is None
    True
    """
    return _worker_info


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text, re-raised in the main process.

    >>> try:
    ...     1 / 0
    ... except ZeroDivisionError:
    ...     w = ExceptionWrapper(where="in DataLoader worker process 0")
    >>> w.exc_type
    <class 'ZeroDivisionError'>
    """

    def __init__(self, exc_info=None, where="in background"):
        exc_info = exc_info or sys.exc_info()
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self):
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:
            msg = _KeyErrorMessage(msg)
        try:
            exc = self.exc_type(msg)
        except Exception:
            raise RuntimeError(msg) from None
        raise exc


class _KeyErrorMessage(str):
    # KeyError shows repr(arg); this keeps the traceback text readable
    def __repr__(self):
        return self


class _IterableDatasetStopIteration:
    def __init__(self, worker_id):
        self.worker_id = worker_id


class _ResumeIteration:
    """Sent to persistent workers at the start of each epoch: restart the dataset's iteration."""


def _seed_all(seed):
    random.seed(seed)
    wb_random.manual_seed(seed)
    _backend.numpy.random.seed([seed & 0xFFFF_FFFF, (seed >> 32) & 0xFFFF_FFFF])


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.ended = False

    def fetch(self, index):
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in index:
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


class ResultQueue(_mp_queues.Queue):
    """The workers' result queue: a batch that fails to pickle comes back as an error, not as silence."""

    def _on_queue_feeder_error(self, e, obj):
        # runs in the worker's feeder thread, after put() returned
        where = f"in DataLoader worker process {_worker_info.id if _worker_info else '?'} (sending the batch)"
        _mp_queues.Queue.put(self, (obj[0], ExceptionWrapper((type(e), e, e.__traceback__), where)))


def make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last):
    return (_IterFetcher if iterable else _MapFetcher)(dataset, auto_collation, collate_fn, drop_last)


def worker_loop(iterable, dataset, index_queue, data_queue, done_event, auto_collation, collate_fn, drop_last,
                base_seed, init_fn, worker_id, num_workers, parent_pid):
    """The body of worker ``worker_id``: take (idx, indices) tasks, put (idx, batch or error) results."""
    global _worker_info
    try:
        _seed_all(base_seed + worker_id)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=base_seed + worker_id, dataset=dataset)
        init_error = None
        try:
            if init_fn is not None:
                init_fn(worker_id)
            fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
        iteration_end = False
        while True:
            try:
                task = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if done_event.is_set() or os.getppid() != parent_pid:  # shut down, or the main process died
                    break
                continue
            if isinstance(task, _ResumeIteration):
                data_queue.put((task, None))
                iteration_end = False
                fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                continue
            if task is None or done_event.is_set():
                break
            if iteration_end:
                continue
            idx, index = task
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if not iterable:
                        raise
                    data, iteration_end = _IterableDatasetStopIteration(worker_id), True
                except Exception:
                    data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put((idx, data))
            del data, index, task
    except KeyboardInterrupt:
        pass  # Ctrl-C reaches the whole process group; the main process decides what happens
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
