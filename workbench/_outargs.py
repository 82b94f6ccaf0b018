"""PyTorch's ``out=`` arguments: writing a computed result into tensors the caller passed.

A tensor given as ``out=`` receives the result (resized when it is empty, as PyTorch does); a tuple
result goes into a tuple of tensors, every one checked before any is written, so a bad ``out=`` changes
nothing. Neither the result nor ``out`` may need autograd (PyTorch's rule).

>>> import workbench as wb
>>> o = wb.empty(0)
>>> wb.arange(3, out=o) is o, o
(True, tensor([0., 1., 2.]))
"""
import functools
import inspect

from .autograd.grad_mode import STATE


def _check_out(r, out):
    if STATE.enabled and (out._rg or r._rg):
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one of "
                           "the arguments requires grad. Call it under workbench.no_grad() or drop out=.")
    if out._data.shape != r._data.shape and out._data.size:
        raise RuntimeError(f"out= has shape {list(out.shape)} but the result has shape {list(r.shape)}; "
                           "pass an empty tensor or one of the result's shape")


def _write_out(r, out):
    if out._data.shape != r._data.shape:
        out._data = r._data.astype(out._data.dtype, copy=True)
    else:
        out._data[...] = r._data
    out._vbox[0] += 1
    return out


def _out(r, out):
    """Write ``r`` into ``out=`` (PyTorch's out arguments), which must not need autograd."""
    if out is None:
        return r
    _check_out(r, out)
    return _write_out(r, out)


def _outs(results, out):
    """Write a tuple of results into ``out=(t1, t2, ...)``, every one checked before any is written; returns
    the same kind of tuple (a named one stays named) holding out's tensors."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"out= must be a tuple of {len(results)} tensors for this function, got "
                        f"{type(out).__name__}{'' if not isinstance(out, (tuple, list)) else f' of {len(out)}'}")
    for r, o in zip(results, out):
        _check_out(r, o)
    written = [_write_out(r, o) for r, o in zip(results, out)]
    return type(results)(*written) if hasattr(results, "_fields") else tuple(written)


def writes_out(fn):
    """Decorate a function that computes its result whole: its keyword-only ``out=`` (a tensor, or a tuple
    of tensors for a tuple result) receives the result. The function itself never sees ``out``; a factory
    (one with a ``dtype`` argument) given no dtype computes in out's dtype, as PyTorch's do."""
    factory = "dtype" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if factory and kwargs.get("dtype") is None and not isinstance(out, (tuple, list)):
            kwargs["dtype"] = out.dtype
        r = fn(*args, **kwargs)
        return _outs(r, out) if isinstance(r, tuple) else _out(r, out)

    return with_out
