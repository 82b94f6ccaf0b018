"""The recorded fast path of the Tensor operators (``Function._saves``) gives what the op's own forward gives.

A primitive with a ``_ufunc`` may declare what its forward saves; a Tensor operator recording it on floating
operands of one dtype then runs the ufunc without the forward and builds the saved entries from the
declaration. These tests record every such op both ways (the operator, and ``cls.apply``, which runs forward)
and compare the result, what is saved (the same tensors, versions and outputs), what ``describe_saved``
reports, the gradients, and the errors of a second backward and of an in-place change.
"""
import operator

import numpy as np
import pytest

import workbench as wb
from workbench.autograd.function import Function, describe_saved
from workbench.autograd.graph import _Out


def _declaring(cls=Function):
    for sub in cls.__subclasses__():
        if sub.__dict__.get("_saves") is not None:
            yield sub
        yield from _declaring(sub)


DECLARING = sorted(set(_declaring()), key=lambda c: c.__name__)
BINARY = {"Add": operator.add, "Sub": operator.sub, "Mul": operator.mul}
UNARY = {c.__name__: getattr(wb.Tensor, c.op_name) for c in DECLARING if c.__name__ not in BINARY and c.__name__ != "Mm"}


def test_the_operators_declare_their_saves():
    names = {c.__name__ for c in DECLARING}
    assert set(BINARY) <= names and {"Exp", "Tanh", "Sin", "Log", "Sqrt", "Relu", "Mm"} <= names


def _leaf(shape, dtype, seed, rg=True, view=False):
    a = np.random.default_rng(seed).uniform(0.5, 1.5, (4,) + shape if view else shape).astype(dtype)
    t = wb.tensor(a, requires_grad=rg)
    return t[1] if view else t  # a view: its array has a base


def _entries(node):
    out = []
    for entry, box, version in node._saved or ():
        if entry is None:
            out.append(None)
        elif entry.__class__ is _Out:
            out.append(("out", entry.i, entry.requires_grad, box is not None, version))
        else:
            out.append((id(entry), version))
    return out


def _both(fn, cls, args):
    fast = fn(*args)
    slow = cls.apply(*args)
    assert fast.grad_fn is not None and type(fast.grad_fn) is type(slow.grad_fn)
    np.testing.assert_array_equal(fast.detach().numpy(), slow.detach().numpy())
    assert fast.dtype == slow.dtype and fast._data.__class__ is np.ndarray
    return fast, slow


def _facts(node):
    # describe_saved with its storage keys numbered in order of appearance (a key is an argument index, or an
    # object id that only tells one node's entries apart)
    keys = {}
    return [f[:5] + (keys.setdefault(f[5], len(keys)),) + f[6:] for f in describe_saved(node)]


def _check(fast, slow, args):
    assert _entries(fast.grad_fn) == _entries(slow.grad_fn)
    assert _facts(fast.grad_fn) == _facts(slow.grad_fn)
    leaves = [a for a in args if a.requires_grad]
    gf = wb.autograd.grad(fast.sum(), leaves, retain_graph=True)
    gs = wb.autograd.grad(slow.sum(), leaves, retain_graph=True)
    for a, b in zip(gf, gs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64"])
@pytest.mark.parametrize("shape", [(3, 2), ()], ids=["2d", "0d"])
@pytest.mark.parametrize("grads", ["both", "first", "second"])
def test_binary(name, dtype, shape, grads):
    cls = next(c for c in DECLARING if c.__name__ == name)
    a = _leaf(shape, dtype, 0, rg=grads != "second")
    b = _leaf(shape, dtype, 1, rg=grads != "first")
    fast, slow = _both(BINARY[name], cls, (a, b))
    _check(fast, slow, (a, b))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "complex64"])
@pytest.mark.parametrize("grads", ["both", "first", "second"])
def test_matrix_product(dtype, grads):
    # x @ w (the @ operator's own fast path, product_operator) against Mm.apply, which runs forward
    from workbench.ops.linalg_core import Mm
    a = _leaf((3, 2), dtype, 0, rg=grads != "second")
    b = _leaf((2, 4), dtype, 1, rg=grads != "first")
    fast, slow = _both(operator.matmul, Mm, (a, b))
    assert type(fast.grad_fn).__name__ == "MmBackward0"
    _check(fast, slow, (a, b))
    x = _leaf((3, 3), dtype, 2)
    fast, slow = _both(operator.matmul, Mm, (x, x))  # x @ x: both entries are x
    _check(fast, slow, (x,))


@pytest.mark.parametrize("name", sorted(BINARY))
def test_binary_one_tensor_twice_and_views(name):
    cls = next(c for c in DECLARING if c.__name__ == name)
    x = _leaf((3,), "float32", 0)
    fast, slow = _both(BINARY[name], cls, (x, x))  # x * x: both saved entries are x, one storage
    _check(fast, slow, (x,))
    base = wb.tensor(np.ones((4, 3), np.float32), requires_grad=True)
    v, w = base * 2, _leaf((3,), "float32", 1)
    fast, slow = _both(BINARY[name], cls, (v[1], w))  # a view's array has a base: a fact of its own
    _check(fast, slow, (w,))


@pytest.mark.parametrize("name", sorted(UNARY))
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("shape", [(3, 2), ()], ids=["2d", "0d"])
def test_unary(name, dtype, shape):
    cls = next(c for c in DECLARING if c.__name__ == name)
    x = _leaf(shape, dtype, 2)
    with np.errstate(all="ignore"):
        fast, slow = _both(UNARY[name], cls, (x,))
        _check(fast, slow, (x,))


def test_version_check_and_second_backward_name_the_op():
    x = _leaf((3,), "float32", 0)
    y = x.tanh()  # saves its output
    with wb.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="TanhBackward0.*is at version 1; expected version 0"):
        y.sum().backward()
    z = x * x
    z.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time.*MulBackward0.*freed by the "
                                           r"backward\(\) call at .*test_declared_saves.py:\d+ in test_version"):
        z.sum().backward()
