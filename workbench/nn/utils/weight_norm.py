"""weight_norm / remove_weight_norm: w = g * v / ||v|| (norms over every dim but ``dim``), recomputed
before each forward (PyTorch's hook-based API)."""
import warnings

from ..parameter import Parameter, is_lazy


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim except ``dim`` (all dims for dim=-1), shaped to broadcast.

    >>> import workbench as wb
    >>> norm_except_dim(wb.tensor([[3.0, 4.0], [6.0, 8.0]]), 2, 0).tolist()
    [[5.0], [10.0]]
    """
    if dim == -1:
        return (v.abs() ** pow).sum() ** (1.0 / pow)
    d = dim % v.dim()
    dims = tuple(i for i in range(v.dim()) if i != d)
    return (v.abs() ** pow).sum(dims, keepdim=True) ** (1.0 / pow)


class WeightNorm:
    """The forward pre-hook weight_norm registers: sets ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name, dim):
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module):
        """g * v / ||v||.  >>> WeightNorm("weight", 0).compute_weight(wb.nn.utils.weight_norm(wb.nn.Linear(2, 3))).shape  ->  workbench.Size([3, 2])"""
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / norm_except_dim(v, 2, self.dim))

    @staticmethod
    def apply(module, name, dim):
        """Split ``module.<name>`` into magnitude ``<name>_g`` and direction ``<name>_v`` parameters."""
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=3)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if is_lazy(weight):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to "
                             "run the dummy forward before applying weight normalization")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module):
        """Fold g and v back into one ``<name>`` parameter."""
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name="weight", dim=0):
    """Reparametrize ``module.<name>`` as g * v / ||v||, with g and v learned separately.

    >>> import workbench as wb
    >>> m = wb.nn.utils.weight_norm(wb.nn.Linear(20, 40), name="weight")
    >>> tuple(m.weight_g.shape), tuple(m.weight_v.shape)
    ((40, 1), (40, 20))
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module, name="weight"):
    """Undo weight_norm: ``module.<name>`` becomes an ordinary Parameter again.

    >>> import workbench as wb
    >>> m = wb.nn.utils.remove_weight_norm(wb.nn.utils.weight_norm(wb.nn.Linear(2, 2)))
    >>> sorted(n for n, _ in m.named_parameters())
    ['bias', 'weight']
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, WeightNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
