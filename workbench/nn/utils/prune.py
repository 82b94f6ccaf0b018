"""Pruning (PyTorch's torch.nn.utils.prune): zero out entries or whole channels of a parameter with a mask.

Pruning ``module.<name>`` moves the parameter to ``<name>_orig``, stores the mask as the buffer
``<name>_mask`` and makes ``module.<name>`` the plain tensor ``<name>_orig * <name>_mask``, recomputed by
a forward pre-hook (the pruning method itself) before every call, so gradients reach ``<name>_orig`` only
where the mask is 1. Pruning the same parameter again narrows the mask: the new method looks only at the
entries (unstructured) or channels (structured) still alive, and the methods collect in a
PruningContainer. ``remove`` makes the pruned tensor an ordinary Parameter again.

>>> import workbench as wb
>>> from workbench.nn.utils import prune
>>> lin = wb.nn.Linear(4, 2)
>>> _ = prune.l1_unstructured(lin, "weight", amount=0.5)
>>> int((lin.weight == 0).sum()), sorted(n for n, _ in lin.named_buffers())
(4, ['weight_mask'])
"""
import numbers
from abc import ABC, abstractmethod

from ...ops.join import cat
from ...ops.linalg import vector_norm
from ...random import rand
from ..parameter import Parameter


class BasePruningMethod(ABC):
    """A pruning technique: ``compute_mask`` says which entries survive; the object is also the forward
    pre-hook that re-applies the mask."""

    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The new mask for tensor ``t`` (same shape), starting from ``default_mask``."""

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` of ``module``: the pruned tensor."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {module} has to be pruned before its mask can be applied")
        return getattr(module, self._tensor_name + "_orig") * getattr(module, self._tensor_name + "_mask")

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune ``module.<name>`` with a new ``cls(*args, **kwargs)``; returns the (possibly combined) method.

        The module is changed only once the new mask has been computed: a bad amount or dim leaves it as it was.
        """
        old = None
        for key, hook in list(module._forward_pre_hooks.items()):
            if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
                old = key, hook
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old is not None:
            container = old[1] if isinstance(old[1], PruningContainer) else PruningContainer(old[1])
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name + "_orig") if old is not None else getattr(module, name)
        scores = orig if importance_scores is None else importance_scores
        if scores.shape != orig.shape:
            raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}: "
                             f"got {tuple(scores.shape)}, the parameter has {tuple(orig.shape)}")
        default_mask = getattr(module, name + "_mask").detach().clone() if old is not None else _ones_like(orig)
        mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        if old is None:
            del module._parameters[name]
            module.register_parameter(name + "_orig", orig)
        else:
            del module._forward_pre_hooks[old[0]]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` with this method's mask applied (the module-free form)."""
        scores = t if importance_scores is None else importance_scores
        mask = self.compute_mask(scores.detach(), default_mask=_ones_like(t) if default_mask is None else default_mask)
        return t * mask

    def remove(self, module):
        """Make ``module.<name>`` an ordinary Parameter holding the pruned values; drop ``_orig`` and ``_mask``."""
        if self._tensor_name is None:
            raise RuntimeError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters.pop(self._tensor_name + "_orig")
        orig.data = weight.data
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _ones_like(t):
    return t.detach().new_ones(t.shape)


class PruningContainer(BasePruningMethod):
    """The methods applied one after the other to one parameter; each new one sees only what survived."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod):  # an iterable of methods
            args = tuple(args[0])
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is None:
            return
        if self._tensor_name is not None and method._tensor_name != self._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer. Found '{method._tensor_name}'")
        self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask, computed on the part of ``t`` that ``default_mask`` keeps (the entries
        still alive, the channels still alive, or, for a global method such as a custom mask, all of t)."""
        method = self._pruning_methods[-1]
        kind = method.PRUNING_TYPE
        if kind == "global":  # a mask for the whole tensor
            return method.compute_mask(t, default_mask=default_mask)
        if kind == "unstructured":
            alive = default_mask == 1
            new = default_mask.clone()
            new[alive] = method.compute_mask(t[alive], default_mask=default_mask[alive])
            return new
        if kind != "structured":
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        dim = method.dim % t.dim()
        others = tuple(d for d in range(t.dim()) if d != dim)
        alive = (default_mask != 0).any(dim=others) if others else default_mask != 0
        index = alive.nonzero().flatten()
        sub = method.compute_mask(t.index_select(dim, index), default_mask=default_mask.index_select(dim, index))
        new = default_mask.clone()
        new.index_copy_(dim, index, sub * default_mask.index_select(dim, index))
        return new


class Identity(BasePruningMethod):
    """Prune nothing: the mask is all ones (handy to give a module the pruned layout)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _n_to_prune(amount, size):
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return amount
    return round(amount * size)


def _check_dim(t, dim):
    if dim >= t.dim() or dim < -t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {tuple(t.shape)}")


def _keep_channels(t, default_mask, dim, keep):
    """default_mask with every channel along ``dim`` outside ``keep`` (a bool per channel) zeroed."""
    shape = [1] * t.dim()
    shape[dim] = t.shape[dim]
    return default_mask * keep.reshape(shape).to(default_mask.dtype)


class RandomUnstructured(BasePruningMethod):
    """Prune ``amount`` (a fraction, or a count) of the entries, chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _n_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            idx = rand(t.numel(), device=t.device).topk(k).indices
            mask.view(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prune ``amount`` (a fraction, or a count) of the entries with the smallest absolute values."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _n_to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if k:
            idx = t.abs().reshape(-1).topk(k, largest=False).indices
            mask.view(-1)[idx] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prune ``amount`` of the channels along ``dim``, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _check_dim(t, self.dim)
        n = t.shape[self.dim]
        k = _n_to_prune(self.amount, n)
        if not k:
            return default_mask
        keep = rand(n, device=t.device).topk(n - k).indices
        alive = t.new_zeros(n).bool()
        alive[keep] = True
        return _keep_channels(t, default_mask, self.dim % t.dim(), alive)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prune ``amount`` of the channels along ``dim`` with the smallest L``n`` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _check_dim(t, self.dim)
        dim = self.dim % t.dim()
        channels = t.shape[dim]
        k = _n_to_prune(self.amount, channels)
        if not k:
            return default_mask
        others = tuple(d for d in range(t.dim()) if d != dim)
        norms = vector_norm(t, ord=self.n, dim=others) if others else t.abs()
        keep = norms.topk(channels - k).indices
        alive = norms.new_zeros(channels).bool()
        alive[keep] = True
        return _keep_channels(t, default_mask, dim, alive)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prune with a given mask (multiplied into any existing one)."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if default_mask.shape != self.mask.shape:
            raise ValueError(f"mask of shape {tuple(self.mask.shape)} does not fit the parameter's "
                             f"{tuple(default_mask.shape)}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Give ``module.<name>`` the pruned layout with an all-ones mask.  >>> wb.nn.utils.prune.identity(wb.nn.Linear(2, 2), "bias").bias_mask  ->  tensor([1., 1.])"""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prune ``amount`` of ``module.<name>``'s entries at random.  >>> wb.nn.utils.prune.random_unstructured(wb.nn.Linear(2, 5), "weight", 0.3).weight_mask.sum()  ->  tensor(7.)"""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prune the ``amount`` entries of ``module.<name>`` with the smallest |value| (or importance score).

    >>> import workbench as wb
    >>> from workbench.nn.utils import prune
    >>> lin = wb.nn.Linear(3, 1)
    >>> with wb.no_grad():
    ...     _ = lin.weight.copy_(wb.tensor([[0.1, -2.0, 0.5]]))
    >>> prune.l1_unstructured(lin, "weight", amount=2).weight
    tensor([[ 0., -2.,  0.]], grad_fn=<MulBackward0>)
    """
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prune ``amount`` of the channels along ``dim`` at random.  >>> wb.nn.utils.prune.random_structured(wb.nn.Conv2d(1, 4, 3), "weight", 0.5, 0).weight_mask.sum()  ->  tensor(18.)"""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prune the ``amount`` channels along ``dim`` with the smallest L``n`` norm.

    >>> import workbench as wb
    >>> from workbench.nn.utils import prune
    >>> conv = wb.nn.Conv2d(2, 4, 3)
    >>> kept = prune.ln_structured(conv, "weight", amount=0.5, n=2, dim=0).weight_mask.sum(dim=(1, 2, 3))
    >>> sorted(kept.tolist())
    [0.0, 0.0, 18.0, 18.0]
    """
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune across several parameters at once: one threshold over all their (alive) entries.

    ``parameters`` is an iterable of ``(module, name)``; ``pruning_method`` an unstructured method class
    such as ``L1Unstructured``; ``kwargs`` its arguments (``amount``).

    >>> import workbench as wb
    >>> from workbench.nn.utils import prune
    >>> net = wb.nn.Sequential(wb.nn.Linear(4, 4), wb.nn.Linear(4, 2))
    >>> prune.global_unstructured([(net[0], "weight"), (net[1], "weight")], prune.L1Unstructured, amount=12)
    >>> int((net[0].weight == 0).sum() + (net[1].weight == 0).sum())
    12
    """
    parameters = list(parameters)
    if not parameters:
        raise TypeError("global_unstructured: parameters must be a non-empty iterable of (module, name) tuples")
    importance_scores = importance_scores or {}
    scores, masks = [], []
    for module, name in parameters:
        current = getattr(module, name)
        scores.append(importance_scores.get((module, name), current).detach().reshape(-1))
        existing = getattr(module, name + "_mask", None)
        masks.append(existing.reshape(-1) if existing is not None else current.detach().new_ones(current.numel()))
    flat_scores, flat_mask = cat(scores), cat(masks)
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    final = PruningContainer(method).compute_mask(flat_scores, default_mask=flat_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        n = param.numel()
        custom_from_mask(module, name, final[start:start + n].reshape(param.shape))
        start += n


def custom_from_mask(module, name, mask):
    """Prune ``module.<name>`` with ``mask`` (ones keep, zeros prune).  >>> wb.nn.utils.prune.custom_from_mask(wb.nn.Linear(2, 2), "bias", wb.tensor([0., 1.])).bias_mask  ->  tensor([0., 1.])"""
    CustomFromMask.apply(module, name, mask=mask)
    return module


def remove(module, name):
    """Make the pruning of ``module.<name>`` permanent: an ordinary Parameter with the zeros in it.

    >>> import workbench as wb
    >>> from workbench.nn.utils import prune
    >>> lin = prune.remove(prune.l1_unstructured(wb.nn.Linear(2, 2), "weight", 0.5), "weight")
    >>> sorted(n for n, _ in lin.named_parameters()), list(lin.named_buffers())
    (['bias', 'weight'], [])
    """
    for key, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """Whether ``module`` or any submodule has a pruned parameter.  >>> wb.nn.utils.prune.is_pruned(wb.nn.Linear(2, 2))  ->  False"""
    return any(isinstance(hook, BasePruningMethod)
               for m in module.modules() for hook in m._forward_pre_hooks.values())
