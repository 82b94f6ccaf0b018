"""no_grad, enable_grad, set_grad_enabled, inference_mode: thread-local, context managers and decorators."""
import functools
import threading


class _State(threading.local):
    enabled = True  # class attributes are each thread's starting values
    inference = False


STATE = _State()


def is_grad_enabled():
    """Whether ops record the tape in this thread.

    >>> import workbench as wb
    >>> with wb.no_grad(): wb.is_grad_enabled()
    False
    """
    return STATE.enabled


def is_inference_mode_enabled():
    return STATE.inference


class _Mode:
    """Base of the grad-mode switches: a context manager that is also a decorator."""

    def __call__(self, fn):
        if isinstance(fn, type):
            raise TypeError(f"{type(self).__name__} decorates functions, not classes")

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
    """Set recording on or off; takes effect at once, and also works as a context manager.

    >>> import workbench as wb
    >>> with wb.set_grad_enabled(False): wb.is_grad_enabled()
    False
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled() expects a bool, got {type(mode).__name__}")
        self.mode = mode
        self._prev = (STATE.enabled, STATE.inference)
        STATE.enabled = mode

    def clone(self):
        return set_grad_enabled.__new__(set_grad_enabled)._init(self.mode)

    def _init(self, mode):
        self.mode = mode
        return self

    def __enter__(self):
        self._prev = getattr(self, "_prev", (STATE.enabled, STATE.inference))
        STATE.enabled = self.mode
        return self


class inference_mode(_Mode):
    """Like no_grad, and tensors made inside are marked as inference tensors.

    >>> import workbench as wb
    >>> with wb.inference_mode(): y = wb.ones(2)
    >>> y.is_inference()
    True
    """

    def __init__(self, mode=True):
        self.mode = mode

    def clone(self):
        return inference_mode(self.mode)

    def _apply(self):
        if self.mode:
            STATE.enabled = False
            STATE.inference = True
