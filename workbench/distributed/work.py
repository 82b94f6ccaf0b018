"""``Work``: the handle an ``async_op=True`` collective returns, and the one wait loop every collective uses.

The loop polls MPI's requests instead of blocking in ``MPI_Wait`` so that it can stop: past the group's
timeout it raises an error naming the op; when a rank of the group has left the job it raises naming that
rank. Polling is what MPI's own blocking calls do inside (they spin); after the first burst this loop also
yields the CPU between polls, which matters when ranks share cores.
"""
import os
import time

from ..futures import Future
from . import mpi as _mpi
from . import watch as _watch

_LEFT_GRACE = 1.0  # seconds a rank may still be finishing an op after it announced its exit


def _stalled(pg, desc, now, start, deadline):
    if now > deadline:
        pg.broken = f"{desc} timed out"
        raise RuntimeError(
            f"workbench.distributed: {desc} on rank {pg.rank()} of group {pg.ranks} timed out after "
            f"{now - start:.1f} s (the group's timeout is {pg.timeout:g} s): some rank did not call it, or is "
            "stuck before it. If the work before it legitimately takes longer, pass a larger timeout= to "
            "init_process_group or new_group.")
    w = _watch._STATE["watcher"]
    if w is not None and w.left:
        gone = [r for r in pg.ranks if r in w.left and now - w.left[r] > _LEFT_GRACE]
        if gone:
            pg.broken = f"ranks {gone} left"
            raise RuntimeError(
                f"workbench.distributed: rank{'s' if len(gone) > 1 else ''} {gone} left the job (the script ended "
                f"or called exit) while rank {pg.rank()} waits for {'them' if len(gone) > 1 else 'it'} in {desc}; "
                "every rank must run the same collectives in the same order")


def wait_requests(pg, desc, reqs, start=None, timeout=None, statuses=None):
    """Complete MPI requests ``reqs`` of an op described by ``desc``, within the group's timeout."""
    MPI = _mpi.loaded()
    testall = MPI.Request.Testall
    if testall(reqs, statuses):
        return
    start = time.monotonic() if start is None else start
    deadline = start + (pg.timeout if timeout is None else timeout)
    spins = 0
    while not testall(reqs, statuses):
        spins += 1
        if spins > 256:
            os.sched_yield()
            if spins & 127 == 0:
                _stalled(pg, desc, time.monotonic(), start, deadline)


class Work:
    """A running collective or point-to-point op: ``wait()`` completes it, ``is_completed()`` asks.

    >>> import workbench as wb, workbench.distributed as dist  # doctest: +SKIP
    >>> work = dist.all_reduce(t, async_op=True); work.wait()  # doctest: +SKIP
    True
    """

    def __init__(self, pg, desc, reqs, finish=None, result=None, statuses=None):
        self.pg, self.desc, self.reqs, self.statuses = pg, desc, list(reqs), statuses
        self._finish, self._result = finish, result
        self._start = time.monotonic()
        self._done = False
        self._exception = None
        self._value = None

    def wait(self, timeout=None):
        """Block until the op completed (raising its error if it failed); returns True."""
        if self._done:
            if self._exception is not None:
                raise self._exception
            return True
        t = None if timeout is None else (timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout)
        try:
            wait_requests(self.pg, self.desc, self.reqs, self._start, t, self.statuses)
            self._complete()
        except Exception as e:
            self._done, self._exception = True, e
            raise
        return True

    def _complete(self):
        self._done = True
        if self._finish is not None:
            self._value = self._finish()

    def is_completed(self):
        """True once the op finished (polls MPI once; never blocks)."""
        if not self._done and _mpi.loaded().Request.Testall(self.reqs, self.statuses):
            self._complete()
        return self._done

    def is_success(self):
        return self._done and self._exception is None

    def exception(self):
        return self._exception

    def result(self):
        """The op's output tensors (after ``wait()``)."""
        return list(self._result or ())

    def get_future(self):
        """A ``workbench.futures.Future`` completed with ``result()`` (the op's tensors) when the op finishes.

        >>> fut = dist.all_reduce(t, async_op=True).get_future(); fut.wait()[0]  # the reduced t  # doctest: +SKIP
        """
        fut = Future()

        def waiter():
            try:
                self.wait()
            except Exception as e:  # noqa: BLE001 - the op's error is the future's
                fut.set_exception(e)
                return
            fut.set_result(self.result())

        return fut._bind(waiter, self.is_completed)

    def source_rank(self):
        """For a receive from any source: the rank it came from."""
        if self._value is None:
            raise RuntimeError("source_rank() is only available on a completed recv from any source")
        return self._value

    def __repr__(self):
        return f"<Work {self.desc}: {'done' if self._done else 'pending'}>"


class _Done(Work):
    """A Work that finished when it was made (size-1 groups, NCCL ops queued on the stream)."""

    def __init__(self, pg, desc, finish=None, result=None):
        super().__init__(pg, desc, (), finish, result)
        self._complete()
