"""DataLoader: batches from a dataset, in the main process or in worker processes.

With ``num_workers > 0`` each worker is a process (forked on Linux, like PyTorch; 'spawn' on request)
that fetches and collates whole batches. Workers collate straight into shared memory, and the result
queue carries only handles (see ``workbench.multiprocessing.reductions``), never pickled copies of the
data. The main process hands out indices ``prefetch_factor`` batches per worker ahead and yields
batches in sampler order (or as they come, with ``in_order=False``). Errors in a worker come back with
the worker's traceback; a worker that dies is noticed within a second and reported as RuntimeError.
"""
import collections.abc
import itertools
import multiprocessing
import os
import queue
import signal
import sys
import time
import warnings

from ... import cuda
# importing workbench.multiprocessing registers the shared-memory reducers batches come back through
from ...multiprocessing.reductions import release_fds
from ...random import randint
from ...tensor import Tensor
from . import _worker
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

_POLL_S = 0.2  # how often the main process checks on its workers while it waits for a batch
_JOIN_S = 5.0  # how long shutdown waits for a worker to exit before terminating it


class _InfiniteConstantSampler(Sampler):
    """The 'sampler' of an IterableDataset: None forever (the dataset decides what comes next)."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterate over a dataset in batches, optionally shuffled and loaded by worker processes.

    The signature, defaults and errors are PyTorch's.

    >>> import workbench as wb
    >>> from workbench.utils.data import DataLoader, TensorDataset
    >>> ds = TensorDataset(wb.arange(5.0), wb.arange(5))
    >>> [y.tolist() for x, y in DataLoader(ds, batch_size=2)]
    [[0, 1], [2, 3], [4]]
    >>> len(DataLoader(ds, batch_size=2, drop_last=True))
    2
    """

    _initialized = False

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.in_order = in_order

        if isinstance(dataset, IterableDataset):
            if shuffle not in (False, None):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, but got "
                                 f"shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, but got "
                                 f"sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, but "
                                 f"got batch_sampler={batch_sampler}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if isinstance(dataset, IterableDataset):
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else (
            default_collate if batch_sampler is not None else default_convert)
        self.persistent_workers = persistent_workers
        self._iterator = None
        self._initialized = True

    def __setattr__(self, attr, val):
        if self._initialized and attr in ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                                          "persistent_workers"):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")
        super().__setattr__(attr, val)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers == 0:
                raise ValueError(f"multiprocessing_context can only be used with multi-process loading "
                                 f"(num_workers > 0), but got num_workers={self.num_workers}")
            if isinstance(ctx, str):
                methods = multiprocessing.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(f"multiprocessing_context option should specify a valid start method in "
                                     f"{methods!r}, but got multiprocessing_context={ctx!r}")
                ctx = multiprocessing.get_context(ctx)
            elif not isinstance(ctx, multiprocessing.context.BaseContext):
                raise TypeError(f"multiprocessing_context option should be a valid context object or a string "
                                f"specifying the start method, but got multiprocessing_context={ctx}")
        self.__multiprocessing_context = ctx

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _context(self):
        if self.multiprocessing_context is not None:
            return self.multiprocessing_context
        return multiprocessing.get_context("fork" if sys.platform.startswith("linux") else None)

    def _check_worker_number(self):
        suggested = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        if suggested is None or self.num_workers > suggested:
            limit = (f"Our suggested max number of worker in current system is {suggested}"
                     f"{'' if hasattr(os, 'sched_getaffinity') else ' (`cpuset` is not taken into account)'}, "
                     "which is smaller than what this DataLoader is going to create.") if suggested else \
                "DataLoader is not able to compute a suggested max number of worker in current system."
            warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {limit} Please "
                          "be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                          "lower the worker number to avoid potential slowness/freeze if necessary.", UserWarning,
                          stacklevel=3)

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        self._check_worker_number()
        if not self.persistent_workers:
            return _MultiProcessIter(self)
        if self._iterator is None or self._iterator._shutdown:
            self._iterator = _MultiProcessIter(self)
        else:
            self._iterator._reset(self)
        return self._iterator

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # TypeError when the stream has no length, as in PyTorch
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


def _accelerator():
    return cuda.is_available()


def _pin(data):
    """The batch with its CPU tensors copied into page-locked memory (``Tensor.pin_memory``)."""
    if isinstance(data, Tensor):
        if data.device.type != "cpu":
            return data
        return data.pin_memory()
    if isinstance(data, str):
        return data
    if isinstance(data, collections.abc.Mapping):
        try:
            return type(data)({k: _pin(v) for k, v in data.items()})
        except TypeError:  # a mapping type that can't be built from a dict
            return {k: _pin(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(_pin(v) for v in data))
    if isinstance(data, tuple):
        return tuple(_pin(v) for v in data)
    if isinstance(data, list):
        return [_pin(v) for v in data]
    return data


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._iterable = isinstance(loader.dataset, IterableDataset)
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._sampler_iter = iter(self._index_sampler)
        self._base_seed = int(randint(0, 2 ** 63 - 1, (1,), generator=loader.generator).item())
        self._num_yielded = 0
        self._pin_memory = False
        if loader.pin_memory:
            if _accelerator():
                self._pin_memory = True
            else:
                warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned "
                              "memory won't be used.", UserWarning, stacklevel=3)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)

    def _next_index(self):
        return next(self._sampler_iter)

    def __next__(self):
        data = self._next_data()
        self._num_yielded += 1
        return _pin(data) if self._pin_memory else data

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(self._iterable, self._dataset, self._auto_collation, self._collate_fn,
                                             self._drop_last)

    def _next_data(self):
        return self._fetcher.fetch(self._next_index())


class _MultiProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._shutdown = True  # until the workers exist
        self._num_workers = loader.num_workers
        self._prefetch_factor = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        ctx = loader._context()
        self._data_queue = _worker.ResultQueue(ctx=ctx)
        self._done_event = ctx.Event()
        self._index_queues, self._workers = [], []
        self._shutdown = False
        try:
            for i in range(self._num_workers):
                iq = ctx.Queue()
                iq.cancel_join_thread()  # never block exit on indices nobody will read
                w = ctx.Process(target=_worker.worker_loop, daemon=True,
                                args=(self._iterable, self._dataset, iq, self._data_queue, self._done_event,
                                      self._auto_collation, self._collate_fn, self._drop_last, self._base_seed,
                                      loader.worker_init_fn, i, self._num_workers, os.getpid()))
                w.start()
                self._index_queues.append(iq)
                self._workers.append(w)
            self._reset(loader, first_iter=True)
        except BaseException:
            self._shutdown_workers()
            raise

    def _reset(self, loader, first_iter=False):
        super()._reset(loader)
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._tasks_outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._workers_num_tasks = [0] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        if not first_iter:
            for iq in self._index_queues:
                iq.put(_worker._ResumeIteration())
            pending = self._num_workers
            while pending:
                msg = self._get_data()
                if isinstance(msg[0], _worker._ResumeIteration):
                    pending -= 1
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        max_tasks = self._prefetch_factor * self._num_workers
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid] and (
                    self._in_order or self._workers_num_tasks[wid] < max_tasks // sum(self._workers_status)):
                break
        else:
            return
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._workers_num_tasks[wid] += 1
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _failed_workers(self):
        """RuntimeError describing the first worker that died, or None when all that should run do."""
        for wid, w in enumerate(self._workers):
            if self._workers_status[wid] and not w.is_alive():
                code = w.exitcode
                if code is not None and code < 0:
                    try:
                        name = signal.strsignal(-code) or signal.Signals(-code).name
                    except ValueError:
                        name = f"signal {-code}"
                    msg = f"DataLoader worker (pid {w.pid}) is killed by signal: {name}."
                    if -code == signal.SIGBUS:
                        msg += (" It is possible that dataloader's workers are out of shared memory. Please try to "
                                "raise your shared memory limit.")
                    return RuntimeError(msg)
                return RuntimeError(f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {code}. "
                                    "Rerunning with num_workers=0 may give a better error trace.")
        return None

    def _get_data(self):
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            try:
                return self._data_queue.get(timeout=wait)
            except queue.Empty:
                pass
            except (OSError, EOFError) as e:  # a handle from a worker that is gone (or going)
                err = self._failed_workers()
                deadline = time.monotonic() + _JOIN_S
                while err is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                    err = self._failed_workers()
                self._shutdown_workers()
                raise (err or RuntimeError(f"DataLoader lost the connection to a worker while receiving a batch "
                                           f"({type(e).__name__}: {e})")) from None
            err = self._failed_workers()
            if err is not None:
                self._shutdown_workers()
                raise err
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown_workers()
                raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")

    def _next_data(self):
        while True:
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info:
                    if len(info) == 2 or self._workers_status[info[0]]:
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                wid, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process(data, wid)
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if isinstance(data, _worker._IterableDatasetStopIteration):
                self._workers_status[data.worker_id] = False
                if not self._persistent:
                    self._index_queues[data.worker_id].put(None)
                self._try_put_index()
                continue
            if idx != self._rcvd_idx:
                if not self._in_order:
                    return self._process(data, self._task_info.pop(idx)[0])
                self._task_info[idx] += (data,)
            else:
                wid = self._task_info.pop(idx)[0]
                self._rcvd_idx += 1
                return self._process(data, wid)

    def _process(self, data, wid):
        self._workers_num_tasks[wid] -= 1
        self._try_put_index()
        if isinstance(data, _worker.ExceptionWrapper):
            data.reraise()
        release_fds(data)  # the batch's memory stays mapped; kept batches don't hold descriptors
        return data

    def _shutdown_workers(self):
        if self._shutdown:
            return
        self._shutdown = True
        try:
            self._done_event.set()
            for w, iq in zip(self._workers, self._index_queues):
                if w.is_alive():
                    iq.put(None)
            for w in self._workers:
                w.join(timeout=_JOIN_S)
                if w.is_alive():
                    w.terminate()
                    w.join(timeout=_JOIN_S)
        finally:
            for iq in self._index_queues:
                iq.close()
            self._data_queue.cancel_join_thread()
            self._data_queue.close()

    def __del__(self):
        if getattr(self, "_shutdown", True) is False:
            self._shutdown_workers()
