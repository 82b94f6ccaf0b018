"""``spawn``/``start_processes``: run ``fn(i, *args)`` in ``nprocs`` processes and report the first failure."""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import traceback


class ProcessException(Exception):
    """A spawned process failed; ``error_index`` and ``pid`` say which."""

    def __init__(self, msg, error_index, pid):
        super().__init__(msg)
        self.msg, self.error_index, self.pid = msg, error_index, pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A spawned process raised; the message holds its traceback.

    >>> import workbench.multiprocessing as mp
    >>> try:
    ...     mp.start_processes(divmod, args=(0,), nprocs=1, start_method="fork")  # divmod(0, 0)
    ... except mp.ProcessRaisedException as e:
    ...     print(e.error_index, "ZeroDivisionError" in e.msg)
    0 True
    """


class ProcessExitedException(ProcessException):
    """A spawned process exited with a non-zero code or was killed by a signal.

    >>> import sys, workbench.multiprocessing as mp
    >>> try:
    ...     mp.start_processes(sys.exit, nprocs=2, start_method="fork")  # sys.exit(1) in process 1
    ... except mp.ProcessExitedException as e:
    ...     print(e.error_index, e.exit_code)
    1 1
    """

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code, self.signal_name = exit_code, signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_queue):
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is being interrupted too
    except Exception:
        error_queue.put(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes started by :func:`start_processes`; ``join()`` waits and raises the first failure.

    >>> import workbench.multiprocessing as mp
    >>> ctx = mp.start_processes(abs, nprocs=2, join=False, start_method="fork")  # abs(0), abs(1)
    >>> while not ctx.join(): pass
    >>> [p.exitcode for p in ctx.processes]
    [0, 0]
    """

    def __init__(self, processes, error_queues):
        self.processes, self.error_queues = processes, error_queues
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [p.pid for p in self.processes]

    def join(self, timeout=None):
        """True when every process has exited cleanly; False on timeout; raises if one failed."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        failed = None
        for s in ready:
            i = self.sentinels.pop(s)
            p = self.processes[i]
            p.join()
            if p.exitcode != 0 and failed is None:
                failed = i
        if failed is None:
            return not self.sentinels
        for p in self.processes:  # one failed: stop the others
            if p.is_alive():
                p.terminate()
            p.join()
        p, q = self.processes[failed], self.error_queues[failed]
        if not q.empty():
            raise ProcessRaisedException(f"\n\n-- Process {failed} terminated with the following error:\n{q.get()}",
                                         failed, p.pid)
        if p.exitcode < 0:
            name = signal.Signals(-p.exitcode).name
            raise ProcessExitedException(f"process {failed} terminated with signal {name}", failed, p.pid,
                                         p.exitcode, name)
        raise ProcessExitedException(f"process {failed} terminated with exit code {p.exitcode}", failed, p.pid,
                                     p.exitcode)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start ``nprocs`` processes running ``fn(i, *args)``; join them (default) or return a ProcessContext.

    >>> import workbench.multiprocessing as mp
    >>> mp.start_processes(abs, nprocs=2, start_method="fork")  # runs abs(0) and abs(1)
    """
    ctx = multiprocessing.get_context(start_method)
    processes, queues = [], []
    for i in range(nprocs):
        q = ctx.SimpleQueue()
        p = ctx.Process(target=_wrap, args=(fn, i, args, q), daemon=daemon)
        p.start()
        processes.append(p)
        queues.append(q)
    context = ProcessContext(processes, queues)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """``start_processes`` with the 'spawn' start method, as ``torch.multiprocessing.spawn``.

    ``fn`` must be importable (defined at module level): each process imports it anew.

    >>> import workbench.multiprocessing as mp
    >>> mp.spawn(abs, nprocs=2)  # abs(0) and abs(1), each in a fresh interpreter
    """
    return start_processes(fn, args, nprocs, join, daemon, start_method)
