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

def get_all_sharing_strategies():
    """The sharing strategies this platform supports.

    >>> import workbench.multiprocessing as mp
    >>> sorted(mp.get_all_sharing_strategies())
    ['file_descriptor', 'file_system']
    """
    return set(reductions.STRATEGIES)


def get_sharing_strategy():
    """The strategy this process shares new CPU storage with: 'file_descriptor' (the default; anonymous
    memory whose descriptor is passed with SCM_RIGHTS) or 'file_system' (a named file in /dev/shm whose
    name is passed). See ``workbench.multiprocessing.reductions``.

    >>> import workbench.multiprocessing as mp
    >>> mp.get_sharing_strategy()
    'file_descriptor'
    """
    return reductions._strategy[0]


def set_sharing_strategy(new_strategy):
    """Choose the sharing strategy for storage shared from now on in this process, as in PyTorch.

    'file_system' holds no descriptor per received tensor (for processes that keep many), but a process
    killed with SIGKILL leaves its /dev/shm/workbench_* files behind (PyTorch's torch_shm_manager daemon
    removes those; workbench has none).

    >>> import workbench.multiprocessing as mp
    >>> mp.set_sharing_strategy("file_system"); mp.get_sharing_strategy()
    'file_system'
    >>> mp.set_sharing_strategy("file_descriptor")
    """
    if new_strategy not in reductions.STRATEGIES:
        raise ValueError(f"sharing strategy {new_strategy!r} is not supported: choose one of "
                         f"{list(reductions.STRATEGIES)}")
    reductions._strategy[0] = new_strategy
