"""Parametrizations: ``module.<name>`` computed on access from learned ``original`` tensors.

As PyTorch's ``torch.nn.utils.parametrize``: registering one moves the tensor to
``module.parametrizations.<name>.original`` (``original0``, ``original1``... when the
parametrization's ``right_inverse`` returns several), swaps the module's class for a
``Parametrized<Class>`` subclass that holds a property for ``<name>``, and assigning to
``module.<name>`` goes through the ``right_inverse`` chain.
"""
import contextlib
import copy

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..modules.container import ModuleDict, ModuleList
from ..parameter import Parameter

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Compute each parametrized tensor once inside the block (e.g. a weight used at every RNN step).

    >>> import workbench as wb
    >>> with wb.nn.utils.parametrize.cached():
    ...     pass
    """
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _assign(t, value):
    t._data[...] = value._data if isinstance(value, Tensor) else value
    t._vbox[0] += 1


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, in order, with the ``original`` tensor(s) they act on.

    >>> import workbench as wb
    >>> class Double(wb.nn.Module):
    ...     def forward(self, x):
    ...         return 2 * x
    >>> m = wb.nn.utils.parametrize.register_parametrization(wb.nn.Linear(2, 2), "bias", Double())
    >>> type(m.parametrizations.bias).__name__
    'ParametrizationList'
    """

    def __init__(self, modules, original, unsafe=False):
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        new = original
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    new = module.right_inverse(new)
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if not unsafe and (tuple(new.shape) != tuple(original.shape) or new.dtype != original.dtype):
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change the dtype or shape.\n"
                                 f"original.dtype: {original.dtype}\nright_inverse(original).dtype: {new.dtype}\n"
                                 f"original.shape: {tuple(original.shape)}\n"
                                 f"right_inverse(original).shape: {tuple(new.shape)}\n")
            with no_grad():
                _assign(original, new)
            _register(self, "original", original)
        else:
            for i, t in enumerate(new):
                if not isinstance(t, Tensor):
                    raise ValueError(f"'right_inverse' must return a Tensor or a Sequence of tensors "
                                     f"(list, tuple...). Got element {i} of the sequence with type {type(t).__name__}.")
                keep = Parameter(t.detach().clone(), original.requires_grad) if isinstance(original, Parameter) \
                    else t.detach().clone()
                _register(self, f"original{i}", keep)
        if not unsafe:
            z = self()
            if not isinstance(z, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(z).__name__}.")
            if tuple(z.shape) != tuple(original.shape) or z.dtype != original.dtype:
                raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor "
                                 f"(got {z.dtype} {tuple(z.shape)}, expected {original.dtype} "
                                 f"{tuple(original.shape)}). Pass unsafe=True to allow it.")

    def right_inverse(self, value):
        """Store ``value`` by running it back through every parametrization's right_inverse."""
        with no_grad():
            for module in reversed(self):
                if hasattr(module, "right_inverse"):
                    value = module.right_inverse(value)
                elif not isinstance(value, Tensor) or len(self) > 1 or not self.is_tensor:
                    raise RuntimeError(f"parametrization {type(module).__name__} does not implement "
                                       "right_inverse.")
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError(f"`right_inverse` should return a tensor. Got {type(value).__name__}")
                _assign(self.original, value)
            else:
                if len(value) != self.ntensors:
                    raise ValueError(f"'right_inverse' must return a sequence of tensors of length {self.ntensors}. "
                                     f"Got a sequence of length {len(value)}")
                for i, t in enumerate(value):
                    _assign(getattr(self, f"original{i}"), t)

    def forward(self):
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in list(self)[1:]:
            x = module(x)
        return x


def _register(owner, name, t):
    if isinstance(t, Parameter):
        owner.register_parameter(name, t)
    else:
        owner.register_buffer(name, t)


def _inject_new_class(module):
    cls = module.__class__

    def default_deepcopy(self, memo):
        obj = memo.get(id(self))
        if obj is not None:
            return obj
        twin = self.__new__(self.__class__)
        memo[id(self)] = twin
        twin.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return twin

    param_cls = type(f"Parametrized{cls.__name__}", (cls,), {"__deepcopy__": default_deepcopy,
                                                             "__module__": cls.__module__})
    module.__class__ = param_cls


def _inject_property(module, tensor_name):
    def get_parametrized(self):
        plist = self.parametrizations[tensor_name]
        if _cache_enabled:
            key = (id(self), tensor_name)
            t = _cache.get(key)
            if t is None:
                t = _cache[key] = plist()
            return t
        return plist()

    def set_original(self, value):
        self.parametrizations[tensor_name].right_inverse(value)

    setattr(module.__class__, tensor_name, property(get_parametrized, set_original))


def is_parametrized(module, tensor_name=None):
    """Whether ``module`` (or its ``tensor_name``) has a parametrization.

    >>> import workbench as wb
    >>> is_parametrized(wb.nn.Linear(2, 2))
    False
    """
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module):
    """The module's class before any parametrization was registered.

    >>> import workbench as wb
    >>> type_before_parametrizations(wb.nn.Linear(2, 2)).__name__
    'Linear'
    """
    return module.__class__.__bases__[0] if is_parametrized(module) else type(module)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Make ``module.<tensor_name>`` be ``parametrization(original)``, ``original`` the learned tensor.

    >>> import workbench as wb
    >>> class Symmetric(wb.nn.Module):
    ...     def forward(self, X):
    ...         return X.triu() + X.triu(1).transpose(-1, -2)
    >>> m = register_parametrization(wb.nn.Linear(3, 3), "weight", Symmetric())
    >>> bool((m.weight == m.weight.T).all())
    True
    """
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            if not isinstance(x, Tensor):
                raise ValueError(f"A parametrization must return a tensor. Got {type(x).__name__}.")
            if x.dtype != y.dtype or tuple(x.shape) != tuple(y.shape):
                raise ValueError(f"Registering a parametrization may not change the shape or dtype of the tensor "
                                 f"(got {x.dtype} {tuple(x.shape)}, expected {y.dtype} {tuple(y.shape)}). Pass "
                                 "unsafe=True to allow it.")
        plist.append(parametrization)
        plist.unsafe |= unsafe
        return module
    if tensor_name not in module._parameters and tensor_name not in module._buffers:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    original = getattr(module, tensor_name)
    plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    delattr(module, tensor_name)
    if not is_parametrized(module):
        _inject_new_class(module)
        module.parametrizations = ModuleDict()
    _inject_property(module, tensor_name)
    module.parametrizations[tensor_name] = plist
    return module


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Drop the parametrizations of ``tensor_name``; it becomes a plain tensor again (its current value
    when ``leave_parametrized``, else the original).

    >>> import workbench as wb
    >>> m = wb.nn.utils.parametrizations.weight_norm(wb.nn.Linear(2, 2))
    >>> type(remove_parametrizations(m, "weight")).__name__
    'Linear'
    """
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with no_grad():
                t = getattr(module, tensor_name)
            if tuple(t.shape) == tuple(original.shape) and t.dtype == original.dtype:
                with no_grad():
                    _assign(original, t)
            else:
                original = Parameter(t.detach(), original.requires_grad) if isinstance(original, Parameter) \
                    else t.detach()
    else:
        if not leave_parametrized:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        with no_grad():
            t = getattr(module, tensor_name)
        original = Parameter(t.detach(), t.requires_grad) if any(
            isinstance(p, Parameter) for p in plist.parameters(recurse=False)) else t.detach()
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module
