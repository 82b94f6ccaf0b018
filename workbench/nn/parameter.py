"""Parameter: a Tensor that a Module registers as learnable when assigned as an attribute."""
from ..creation import empty
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
            data = empty(0)
        self = object.__new__(cls)
        Tensor._init_from(self, data._data, False, None, 0, data._vbox, None)
        self.persistent = persistent
        return self

    def __init__(self, data=None, *, persistent=True):
        pass


class _Uninitialized:
    """A parameter or buffer whose shape is not known yet; ``materialize`` gives it one (lazy modules)."""

    cls_to_become = None

    def materialize(self, shape, device=None, dtype=None):
        """Allocate the tensor with ``shape`` and turn this object into a plain Parameter/Tensor in place."""
        t = empty(tuple(shape), device=device or self.device, dtype=dtype or self.dtype)
        self._data = t._data
        self._vbox[0] += 1
        self.__class__ = self.cls_to_become

    def __repr__(self):
        return f"<{type(self).__name__}>"

    def __deepcopy__(self, memo):
        twin = type(self)(requires_grad=self._rg, device=self.device, dtype=self.dtype) \
            if isinstance(self, Parameter) else type(self)(device=self.device, dtype=self.dtype)
        memo[id(self)] = twin
        return twin


class UninitializedParameter(_Uninitialized, Parameter):
    """A Parameter of unknown shape, filled in by a lazy module's first forward.

    >>> import workbench as wb
    >>> p = wb.nn.UninitializedParameter()
    >>> p.materialize((2, 3)); type(p).__name__, tuple(p.shape)
    ('Parameter', (2, 3))
    """

    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        return Parameter.__new__(cls, empty(0, device=device, dtype=dtype), requires_grad)

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(_Uninitialized, Tensor):
    """A buffer of unknown shape, filled in by a lazy module's first forward.

    >>> import workbench as wb
    >>> b = wb.nn.UninitializedBuffer()
    >>> b.materialize((4,)); type(b).__name__
    'Tensor'
    """

    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        self = object.__new__(cls)
        Tensor._init_from(self, empty(0, device=device, dtype=dtype)._data, False)
        return self

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass


def is_lazy(param):
    """Whether ``param`` is an uninitialised (lazy) parameter or buffer.

    >>> import workbench as wb
    >>> is_lazy(wb.nn.UninitializedParameter()), is_lazy(wb.nn.Parameter(wb.ones(1)))
    (True, False)
    """
    return isinstance(param, _Uninitialized)
