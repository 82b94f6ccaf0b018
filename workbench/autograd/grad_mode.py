"""no_grad, enable_grad, set_grad_enabled, inference_mode: thread-local, context managers and decorators."""
import functools
import inspect
import threading


class _State(threading.local):
    enabled = True  # class attributes are each thread's starting values
    inference = False


STATE = _State()
# how many inference_mode blocks are open in any thread: while 0, ops skip the thread-local
# inference check entirely (one list read instead of a thread-local attribute lookup)
INFERENCE_ACTIVE = [0]
_COUNT_LOCK = threading.Lock()  # the counters are shared by all threads: += is not atomic
# how many backward passes are executing a node right now (any thread): ops run by backward formulas
# under the engine's no_grad are not tagged as places where the user's graph was cut
BACKWARD_ACTIVE = [0]


def count_backward(delta):
    """Add delta (+1 entering a backward step, -1 leaving it) to BACKWARD_ACTIVE, thread-safely."""
    with _COUNT_LOCK:
        BACKWARD_ACTIVE[0] += delta


def is_grad_enabled():
    """Whether ops record the tape in this thread.

    >>> import workbench as wb
    >>> with wb.no_grad(): wb.is_grad_enabled()
    False
    """
    return STATE.enabled


def is_inference_mode_enabled():
    """Whether this thread is inside ``inference_mode()``.

    >>> import workbench as wb
    >>> with wb.inference_mode(): wb.is_inference_mode_enabled()
    True
    """
    return STATE.inference


class _Mode:
    """Base of the grad-mode switches: a context manager that is also a decorator (of functions and
    generator functions, as in PyTorch)."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes")
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as e:
                        with self.clone():
                            response = gen.throw(e)
                    else:
                        try:
                            with self.clone():
                                response = gen.send(request)
                        except StopIteration as stop:
                            return stop.value

            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return type(self)()

    def __enter__(self):
        self._prev = (STATE.enabled, STATE.inference)
        self._apply()
        return self

    def __exit__(self, *exc):
        STATE.enabled, STATE.inference = self._prev
        return False


class no_grad(_Mode):
    """Disable recording: ops run as on plain arrays and results do not require grad.

    >>> import workbench as wb
    >>> x = wb.ones(2, requires_grad=True)
    >>> with wb.no_grad(): y = x * 2
    >>> y.requires_grad
    False
    """

    def _apply(self):
        STATE.enabled = False


class enable_grad(_Mode):
    """Re-enable recording inside a no_grad block.

    >>> import workbench as wb
    >>> with wb.no_grad():
    ...     with wb.enable_grad(): wb.is_grad_enabled()
    True
    """

    def _apply(self):
        STATE.enabled = True


class set_grad_enabled(_Mode):
    """Set recording on or off: at once when called, for a block as a context manager, or for a function
    as a decorator.

    >>> import workbench as wb
    >>> with wb.set_grad_enabled(False): wb.is_grad_enabled()
    False
    >>> wb.is_grad_enabled()
    True
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.mode = mode
        self._prev = (STATE.enabled, STATE.inference)
        STATE.enabled = mode  # PyTorch switches at construction, so a bare call works too

    def __enter__(self):  # _prev is the state before construction, which already switched
        STATE.enabled = self.mode
        return self

    def __call__(self, fn):
        STATE.enabled = self._prev[0]  # used as a decorator: undo the switch made by __init__
        return super().__call__(fn)

    def clone(self):
        return _SetGrad(self.mode)

    def _apply(self):
        STATE.enabled = self.mode


class _SetGrad(_Mode):
    # set_grad_enabled's per-call context inside a decorated function (does not switch on construction)
    def __init__(self, mode):
        self.mode = mode

    def _apply(self):
        STATE.enabled = self.mode


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside are inference tensors (they cannot join autograd later).

    >>> import workbench as wb
    >>> with wb.inference_mode(): y = wb.ones(2) * 2
    >>> y.is_inference(), y.requires_grad
    (True, False)
    """

    def __init__(self, mode=True):
        self.mode = mode

    def clone(self):
        return inference_mode(self.mode)

    def __enter__(self):
        super().__enter__()
        if self.mode:
            with _COUNT_LOCK:
                INFERENCE_ACTIVE[0] += 1
        return self

    def __exit__(self, *exc):
        if self.mode:
            with _COUNT_LOCK:
                INFERENCE_ACTIVE[0] -= 1
        return super().__exit__(*exc)

    def _apply(self):
        if self.mode:
            STATE.enabled = False
            STATE.inference = True
        else:
            STATE.inference = False
