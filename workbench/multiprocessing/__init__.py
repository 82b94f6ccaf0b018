"""``workbench.multiprocessing``: the standard ``multiprocessing`` module, with tensors shared, not copied.

Everything the stdlib module offers is here (Process, Queue, Pool, Pipe, get_context,
set_start_method, ...). Importing it registers a reducer so that a tensor put on a queue, sent over a
pipe or passed to a spawned process travels as a handle to shared memory: the receiver sees the same
memory, and a big tensor costs a few hundred bytes on the pipe. See ``reductions`` for the mechanism.

>>> import workbench as wb
>>> import workbench.multiprocessing as mp
>>> q = mp.Queue()
>>> q.put(wb.ones(3)); q.get()
tensor([1., 1., 1.])
"""
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403 - the drop-in: Process, Queue, Pool, get_context, ...

from . import reductions
from .reductions import share_memory_  # noqa: F401
from .spawn import (ProcessContext, ProcessExitedException, ProcessRaisedException, spawn,  # noqa: F401
                    start_processes)

__all__ = list(_mp.__all__) + ["get_sharing_strategy", "set_sharing_strategy", "get_all_sharing_strategies",
                               "spawn", "start_processes", "ProcessContext", "ProcessRaisedException",
                               "ProcessExitedException"]

_STRATEGIES = {"file_descriptor"}


def get_all_sharing_strategies():
    """The sharing strategies this platform supports.  >>> wb.multiprocessing.get_all_sharing_strategies()  ->  {'file_descriptor'}"""
    return set(_STRATEGIES)


def get_sharing_strategy():
    """The strategy used to share CPU tensors: 'file_descriptor' (descriptors passed with SCM_RIGHTS).

    >>> import workbench.multiprocessing as mp
    >>> mp.get_sharing_strategy()
    'file_descriptor'
    """
    return "file_descriptor"


def set_sharing_strategy(new_strategy):
    """Choose the sharing strategy; workbench implements 'file_descriptor' (PyTorch's Linux default).

    >>> import workbench.multiprocessing as mp
    >>> mp.set_sharing_strategy("file_descriptor")
    """
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported: workbench shares tensors with "
                         f"{sorted(_STRATEGIES)} (anonymous shared memory passed by descriptor, which cannot leak "
                         "/dev/shm entries)")
