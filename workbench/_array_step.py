"""One step of array work as a primitive with no gradient (``array_step``), so ``workbench.compile`` replays it.

Here, below both ``ops`` and ``random``, because both use it: an op's public function for the arrays that feed
the op (class targets, masks, nonzero), ``random`` for its draws.
"""
from .autograd.function import Function


class ArrayStep(Function):
    """fn(*arrays) as one primitive with no gradient: see ``array_step``."""

    _raw = True
    op_name = "array_step"

    @staticmethod
    def forward(ctx, fn, *arrays):
        return fn(*arrays)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * (1 + len(ctx.needs_input_grad))


def array_step(fn, *tensors):
    """``fn`` on the tensors' arrays, returning a tensor (or a tuple of them) that requires no grad.

    For the array work of an op's public function that feeds the op but needs no gradient (class
    targets, masks, dropout's random keep mask, constant matrices): as a primitive it is one step of
    the tape, and ``workbench.compile`` replays it (random draws included) instead of freezing its
    result. ``fn`` receives arrays and returns arrays.

    >>> import workbench as wb
    >>> from workbench._array_step import array_step
    >>> array_step(lambda a: a * 2, wb.ones(2))
    tensor([2., 2.])
    """
    return ArrayStep.apply(fn, *[t.detach() if t._rg else t for t in tensors])
