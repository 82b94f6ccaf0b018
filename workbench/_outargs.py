"""PyTorch's ``out=`` arguments: writing a computed result into tensors the caller passed.

A tensor given as ``out=`` receives the result (resized when it is empty, as PyTorch does); a tuple
result goes into a tuple of tensors, every one checked before any is written, so a bad ``out=`` changes
nothing. Neither the result nor ``out`` may need autograd (PyTorch's rule).

out's dtype follows PyTorch's rule for the op, declared where the op hands its result over (``dtype=``):
"cast" (TensorIterator's, the default): the result's dtype must cast to out's (``workbench.can_cast``: no
float into an integer, no complex into a real, nothing but bool into bool); "same": out must have the
result's dtype (matmul's, where's, amax's kernels); "any": anything, cast (reductions like cumsum).

>>> import workbench as wb
>>> o = wb.empty(0)
>>> wb.arange(3, out=o) is o, o
(True, tensor([0., 1., 2.]))
"""
import functools
import inspect

from .autograd.grad_mode import STATE

# PyTorch's C++ names of the dtypes, as its "same dtype" errors print them
_C_NAMES = {"float32": "float", "float64": "double", "int64": "long int", "int32": "int", "int16": "short int",
            "int8": "signed char", "uint8": "unsigned char", "bool": "bool", "float16": "c10::Half",
            "bfloat16": "c10::BFloat16", "complex64": "c10::complex<float>", "complex128": "c10::complex<double>"}


def _check_dtype(r, out, rule):
    rd, od = r.dtype, out.dtype
    if rd is od or rule == "any":
        return
    if rule == "same":
        raise RuntimeError(f"Expected out tensor to have dtype {_C_NAMES.get(rd.name, rd.name)}, but got "
                           f"{_C_NAMES.get(od.name, od.name)} instead")
    if rd.category > od.category:
        raise RuntimeError(f"result type {rd._scalar_name} can't be cast to the desired output type {od._scalar_name}")


def _check_out(r, out, rule="cast"):
    if STATE.enabled and (out._rg or r._rg):
        raise RuntimeError("functions with out=... arguments don't support automatic differentiation, but one of "
                           "the arguments requires grad. Call it under workbench.no_grad() or drop out=.")
    if out._data.shape != r._data.shape and out._data.size:
        raise RuntimeError(f"out= has shape {list(out.shape)} but the result has shape {list(r.shape)}; "
                           "pass an empty tensor or one of the result's shape")
    _check_dtype(r, out, rule)


def _write_out(r, out):
    if out._data.shape != r._data.shape:
        out._data = r._data.astype(out._data.dtype, copy=True)
    else:
        out._data[...] = r._data
    out._vbox[0] += 1
    return out


def _out(r, out, dtype="cast"):
    """Write ``r`` into ``out=`` (PyTorch's out arguments), which must not need autograd; ``dtype``: the op's
    rule for out's dtype ("cast", "same" or "any", see the module docstring)."""
    if out is None:
        return r
    _check_out(r, out, dtype)
    return _write_out(r, out)


def _outs(results, out, dtype="cast"):
    """Write a tuple of results into ``out=(t1, t2, ...)``, every one checked before any is written; returns
    the same kind of tuple (a named one stays named) holding out's tensors."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"out= must be a tuple of {len(results)} tensors for this function, got "
                        f"{type(out).__name__}{'' if not isinstance(out, (tuple, list)) else f' of {len(out)}'}")
    for r, o in zip(results, out):
        _check_out(r, o, dtype)
    written = [_write_out(r, o) for r, o in zip(results, out)]
    return type(results)(*written) if hasattr(results, "_fields") else tuple(written)


def writes_out(fn=None, *, dtype="cast"):
    """Decorate a function that computes its result whole: its keyword-only ``out=`` (a tensor, or a tuple
    of tensors for a tuple result) receives the result, under the op's ``dtype`` rule for out (see the module
    docstring; ``@writes_out(dtype="same")``). The function itself never sees ``out``; a factory (one with a
    ``dtype`` argument) given no dtype computes in out's dtype, as PyTorch's do."""
    if fn is None:
        return functools.partial(writes_out, dtype=dtype)
    rule = dtype
    factory = "dtype" in inspect.signature(fn).parameters

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if factory and kwargs.get("dtype") is None and not isinstance(out, (tuple, list)):
            kwargs["dtype"] = out.dtype
        r = fn(*args, **kwargs)
        return _outs(r, out, rule) if isinstance(r, tuple) else _out(r, out, rule)

    return with_out
