"""``workbench.futures``: ``Future``, the value of asynchronous work, as ``torch.futures``.

A future is completed by ``set_result``/``set_exception``, or is bound to running work (a collective's
``Work.get_future()``) that ``wait()`` completes and ``done()`` polls. ``then(callback)`` chains: the callback
runs with the finished future once it completes, and its return value completes the future ``then`` returned.
There is no background thread: callbacks run in the thread that completes the parent (by ``wait``, ``done``
or ``set_result``), which is where DDP's communication hooks need them.
"""


class Future:
    """A value that becomes available later.

    >>> import workbench as wb
    >>> fut = wb.futures.Future()
    >>> doubled = fut.then(lambda f: f.value() * 2)
    >>> fut.set_result(wb.tensor([1.0, 2.0]))
    >>> doubled.wait()
    tensor([2., 4.])
    """

    def __init__(self, *, devices=None):
        self._done = False
        self._value = None
        self._exception = None
        self._callbacks = []
        self._waiter = None  # blocks until the bound work finished, then completes this future
        self._poller = None  # True once the bound work finished (never blocks)

    def _bind(self, waiter, poller):
        self._waiter, self._poller = waiter, poller
        return self

    def done(self):
        """Whether the value (or an error) is there; polls bound work once, never blocks."""
        if not self._done and self._poller is not None and self._poller():
            self._waiter()
        return self._done

    def wait(self):
        """Block until complete and return the value (raising the error the work ended with)."""
        if not self._done:
            if self._waiter is None:
                raise RuntimeError("Future.wait(): this future is not bound to any work and its result was never "
                                   "set; call set_result() (or set_exception()) on it first")
            self._waiter()
        return self.value()

    def value(self):
        """The value of a completed future (its error raised instead, if it failed)."""
        if not self._done:
            raise RuntimeError("Future.value(): the future is not complete yet; call wait() first")
        if self._exception is not None:
            raise self._exception
        return self._value

    def set_result(self, result):
        """Complete the future with ``result`` and run its callbacks."""
        self._complete(result, None)

    def set_exception(self, result):
        """Complete the future with an error: ``wait()`` and ``value()`` raise it."""
        if not isinstance(result, BaseException):
            raise TypeError(f"Future.set_exception: expected an exception, got {type(result).__name__}")
        self._complete(None, result)

    def _complete(self, value, exception):
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._done, self._value, self._exception = True, value, exception
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def add_done_callback(self, callback):
        """Run ``callback(self)`` when the future completes (now, if it already has)."""
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def then(self, callback):
        """A new future completed with ``callback(self)`` once this one completes (or with its error)."""
        child = Future()

        def run(parent):
            try:
                child.set_result(callback(parent))
            except Exception as e:  # noqa: BLE001 - the callback's error belongs to the child future
                child.set_exception(e)

        child._bind(self.wait, self.done)
        self.add_done_callback(run)
        return child

    def __repr__(self):
        return f"<workbench.futures.Future {'done' if self._done else 'pending'}>"


def collect_all(futures):
    """A future completed with the list of ``futures`` once all of them are (``torch.futures.collect_all``).

    >>> import workbench as wb
    >>> a, b = wb.futures.Future(), wb.futures.Future()
    >>> both = wb.futures.collect_all([a, b]); a.set_result(1); b.set_result(2)
    >>> [f.value() for f in both.wait()]
    [1, 2]
    """
    futures = list(futures)
    out = Future()

    def wait_all_of_them():
        for f in futures:
            f.wait()
        if not out._done:
            out.set_result(futures)

    out._bind(wait_all_of_them, lambda: all(f.done() for f in futures))
    remaining = [len(futures)]

    def one_done(_):
        remaining[0] -= 1
        if remaining[0] == 0 and not out._done:
            out.set_result(futures)

    for f in futures:
        f.add_done_callback(one_done)
    if not futures:
        out.set_result([])
    return out


def wait_all(futures):
    """Wait for every future and return their values (the first error raised).

    >>> import workbench as wb
    >>> f = wb.futures.Future(); f.set_result(3)
    >>> wb.futures.wait_all([f])
    [3]
    """
    return [f.wait() for f in futures]
