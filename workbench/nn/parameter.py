"""Parameter: a Tensor that a Module registers as learnable when assigned as an attribute."""
from ..tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad by default and is registered by ``Module.__setattr__``.

    It shares storage (and the version counter) with the tensor it wraps, as in PyTorch.

    >>> import workbench as wb
    >>> p = wb.nn.Parameter(wb.zeros(2))
    >>> p.requires_grad, p.is_leaf
    (True, True)
    """

    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            from ..creation import empty

            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter expects a Tensor as data, got {type(data).__name__}; "
                            "wrap it with workbench.tensor(...) first")
        self = object.__new__(cls)
        Tensor._init_from(self, data._data, False, None, 0, data._vbox, None)
        if requires_grad:
            self.requires_grad_(True)
        return self

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) in memo:
            return memo[id(self)]
        xp_copy = self.xp_copy()
        p = object.__new__(type(self))
        Tensor._init_from(p, xp_copy, self._rg)
        if self._grad is not None:
            p._grad = Tensor._make(self._grad.xp_copy())
        memo[id(self)] = p
        return p

    def __reduce_ex__(self, proto):
        return (Parameter, (self.detach(), self._rg))


class Buffer(Tensor):
    """Marks a tensor to be registered as a buffer on assignment (``persistent`` says whether it is saved).

    >>> import workbench as wb
    >>> m = wb.nn.Module(); m.running = wb.nn.Buffer(wb.zeros(2))
    >>> [n for n, _ in m.named_buffers()]
    ['running']
    """

    def __new__(cls, data=None, *, persistent=True):
        if data is None:
            from ..creation import empty

            data = empty(0)
        self = object.__new__(cls)
        Tensor._init_from(self, data._data, False, None, 0, data._vbox, None)
        self.persistent = persistent
        return self

    def __init__(self, data=None, *, persistent=True):
        pass


def is_lazy(param):
    """Always False: workbench has no lazy (uninitialised-shape) parameters.  >>> is_lazy(p)  ->  False"""
    return False
