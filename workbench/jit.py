"""``workbench.jit``: PyTorch's TorchScript decorators and functions, running the code eagerly.

Workbench has no TorchScript compiler: ``script`` and ``trace`` return an object that runs the original
Python code, eagerly, with the same parameters (shared, not copied), so programs that script or trace a
model for speed run unchanged, at eager speed (``workbench.compile`` is the way to make them faster).
``ignore``, ``unused``, ``export``, ``Final``, ``annotate``, ``Attribute``, ``fork``/``wait`` and
``is_scripting`` behave as they do for code that is not compiled. What needs a real TorchScript
program raises an error that says what to do instead: ``save`` (and ``ScriptModule.save``) names
``workbench.save(model.state_dict(), f)``, and ``load`` can't read TorchScript archives.

>>> import workbench as wb
>>> net = wb.jit.script(wb.nn.Linear(2, 2))
>>> isinstance(net, wb.jit.ScriptModule), net(wb.ones(1, 2)).shape
(True, workbench.Size([1, 2]))
"""
import contextlib
import copy
import functools
import inspect
import typing

from .nn.module import Module

Final = typing.Final

_SAVE_ERROR = ("workbench runs scripted and traced code eagerly, so there is no TorchScript program to save. Save "
               "the weights with workbench.save(model.state_dict(), path) and rebuild the model in Python with "
               "model.load_state_dict(workbench.load(path)); or save the whole model with "
               "workbench.save(model, path) and load it with workbench.load(path, weights_only=False)")


class ScriptModule(Module):
    """What :func:`script` and :func:`trace` return for a module: the same module class, running eagerly.

    >>> import workbench as wb
    >>> wb.jit.script(wb.nn.ReLU()).code.splitlines()[0].strip()
    'def forward(self, input):'
    """

    @property
    def code(self):
        """The Python source of ``forward`` (TorchScript shows its compiled code here)."""
        return _source(type(self).forward)

    def save(self, f, **kwargs):
        """Raises: there is no TorchScript program to save (the message says what to use instead)."""
        raise RuntimeError(_SAVE_ERROR)

    def save_to_buffer(self, **kwargs):
        raise RuntimeError(_SAVE_ERROR)


class ScriptFunction:
    """What :func:`script` and :func:`trace` return for a function: a callable running it eagerly.

    >>> import workbench as wb
    >>> f = wb.jit.script(lambda x: x * 2)
    >>> f(wb.tensor([1.0])).tolist()
    [2.0]
    """

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self._fn = fn

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    @property
    def code(self):
        """The function's Python source (TorchScript shows its compiled code here)."""
        return _source(self._fn)

    def save(self, f, **kwargs):
        raise RuntimeError(_SAVE_ERROR)


def _source(fn):
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return f"# the source of {getattr(fn, '__qualname__', fn)} is not available\n"


_SCRIPTED = {}


def _scripted(obj):
    if isinstance(obj, (ScriptModule, ScriptFunction)):
        return obj
    if isinstance(obj, Module):
        cls = type(obj)
        if cls not in _SCRIPTED:
            _SCRIPTED[cls] = type(cls.__name__, (cls, ScriptModule), {"__qualname__": cls.__qualname__,
                                                                       "__module__": cls.__module__})
        new = copy.copy(obj)  # a new object whose parameters, buffers and submodules are the original's
        new.__class__ = _SCRIPTED[cls]
        return new
    if isinstance(obj, type):  # a class decorated with @torch.jit.script: TorchScript classes are plain classes
        return obj
    if callable(obj):
        return ScriptFunction(obj)
    raise RuntimeError(f"workbench.jit.script: expected a Module, a function or a class, got {type(obj).__name__}")


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Return ``obj`` ready to run eagerly: a module as a :class:`ScriptModule` sharing its parameters, a
    function as a :class:`ScriptFunction`, a class unchanged.

    >>> import workbench as wb
    >>> @wb.jit.script
    ... def double(x):
    ...     return x + x
    >>> double(wb.tensor([2.0])).tolist()
    [4.0]
    """
    return _scripted(obj)


def trace(func, example_inputs=None, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
          strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
          example_kwarg_inputs=None, _store_inputs=True):
    """Return ``func`` ready to run eagerly, as :func:`script` does (the example inputs are not needed to run it).

    Unlike a real trace, data-dependent control flow keeps working: the Python code runs on every call.

    >>> import workbench as wb
    >>> net = wb.jit.trace(wb.nn.Linear(3, 1), wb.randn(2, 3))
    >>> net(wb.randn(5, 3)).shape
    workbench.Size([5, 1])
    """
    return _scripted(func)


def trace_module(mod, inputs, optimize=None, check_trace=True, check_inputs=None, check_tolerance=1e-5,
                 strict=True, _force_outplace=False, _module_class=None, _compilation_unit=None,
                 example_inputs_is_kwarg=False, _store_inputs=True):
    """As :func:`trace` for a module and a dict of methods to trace: the module, running eagerly."""
    return _scripted(mod)


def script_if_tracing(fn):
    """Return ``fn``: under eager execution nothing is ever traced."""
    return fn


def ignore(drop=False, **kwargs):
    """Mark a function to be left to Python by the compiler: here everything is Python, so it is returned as is.

    Works bare (``@ignore``) and called (``@ignore(drop=True)``).

    >>> import workbench as wb
    >>> @wb.jit.ignore
    ... def helper(x):
    ...     return x
    >>> helper(3)
    3
    """
    if callable(drop):
        return drop
    return lambda fn: fn


def unused(fn):
    """Mark a method the compiler may skip: returned as is."""
    return fn


def export(fn):
    """Mark a method to compile besides ``forward``: returned as is."""
    return fn


def interface(obj):
    """Mark a class as a TorchScript interface: returned as is."""
    return obj


def annotate(the_type, the_value):
    """Give the compiler a type for ``the_value``: returns the value."""
    return the_value


def Attribute(value, type):  # noqa: N802 - PyTorch's name
    """Declare an attribute's type for the compiler: returns the value."""
    return value


def is_scripting():
    """False: code always runs eagerly in workbench."""
    return False


def is_tracing():
    """False: code always runs eagerly in workbench."""
    return False


class Future:
    """The result of :func:`fork`: already computed, since the function ran when forked."""

    def __init__(self, value):
        self._value = value

    def wait(self):
        return self._value

    def value(self):
        return self._value

    def done(self):
        return True


def fork(func, *args, **kwargs):
    """Run ``func(*args, **kwargs)`` (now, eagerly) and return a :class:`Future` holding its result.

    >>> import workbench as wb
    >>> wb.jit.wait(wb.jit.fork(max, 2, 5))
    5
    """
    return Future(func(*args, **kwargs))


def wait(future):
    """The value of a :func:`fork`'s future."""
    return future.wait()


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Return the scripted module (eager code has nothing to freeze); like PyTorch, it must be in eval mode."""
    if mod.training:
        raise RuntimeError("Freezing is currently only implemented for modules in eval mode. Please call .eval() "
                           "on your module before freezing.")
    return mod


def optimize_for_inference(mod, other_methods=None):
    """As :func:`freeze` (eager code has nothing to optimize here; ``workbench.compile`` speeds up models)."""
    return freeze(mod.eval() if mod.training else mod)


@contextlib.contextmanager
def optimized_execution(should_optimize):
    """A context manager for the profiling executor's optimizations: nothing to switch in eager code."""
    yield


def save(m, f, _extra_files=None):
    """Raises RuntimeError: there is no TorchScript program to save; the message names ``workbench.save``."""
    raise RuntimeError(_SAVE_ERROR)


def load(f, map_location=None, _extra_files=None, _restore_shapes=False):
    """Raises RuntimeError: workbench can't run TorchScript archives."""
    raise RuntimeError("workbench.jit.load: workbench can't run TorchScript archives. Load the model's weights "
                       "instead: save them in PyTorch with torch.save(model.state_dict(), path), build the model "
                       "in Python and call model.load_state_dict(workbench.load(path))")
