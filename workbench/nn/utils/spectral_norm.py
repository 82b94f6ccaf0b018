"""spectral_norm / remove_spectral_norm: w / sigma(w), sigma estimated by power iteration that advances
once per training forward (PyTorch's hook-based API; state: ``<name>_orig``, ``<name>_u``, ``<name>_v``)."""
from ... import _backend
from ...autograd.grad_mode import no_grad
from ...random import randn
from .. import functional as F
from ..parameter import Parameter, is_lazy


class SpectralNorm:
    """The forward pre-hook spectral_norm registers: sets ``module.<name>`` to ``<name>_orig / sigma``."""

    def __init__(self, name="weight", n_power_iterations=1, dim=0, eps=1e-12):
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim, self.n_power_iterations, self.eps = name, dim, n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        """``weight`` as (size along dim, everything else).  >>> SpectralNorm(dim=1).reshape_weight_to_matrix(wb.ones(2, 3, 4)).shape  ->  workbench.Size([3, 8])"""
        if self.dim != 0:
            weight = weight.permute(self.dim, *[d for d in range(weight.dim()) if d != self.dim])
        return weight.reshape(weight.size(0), -1)

    def compute_weight(self, module, do_power_iteration):
        """weight_orig / (u . W v), after ``n_power_iterations`` updates of u and v when training."""
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():
                for _ in range(self.n_power_iterations):
                    _assign(v, F.normalize(weight_mat.t().matmul(u), dim=0, eps=self.eps))
                    _assign(u, F.normalize(weight_mat.matmul(v), dim=0, eps=self.eps))
                u, v = u.clone(), v.clone()  # the graph keeps these values even if the buffers move on
        sigma = (u * weight_mat.matmul(v)).sum()
        return weight / sigma

    def remove(self, module):
        """Fold the normalised weight back into one ``<name>`` parameter."""
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module, name, n_power_iterations, dim, eps):
        """Replace ``module.<name>`` by ``<name>_orig`` and the power-iteration buffers."""
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        if is_lazy(weight):
            raise ValueError("The module passed to `SpectralNorm` can't have uninitialized parameters. Make sure "
                             "to run the dummy forward before applying spectral normalization")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=fn.eps)
            v = F.normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def _assign(buf, value):
    buf._data[...] = _backend.to_device(value._data, buf.device)
    buf._vbox[0] += 1


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """Divide ``module.<name>`` by its spectral norm, estimated by power iteration during training.

    >>> import workbench as wb
    >>> m = wb.nn.utils.spectral_norm(wb.nn.Linear(20, 40))
    >>> tuple(m.weight_u.shape), tuple(m.weight_v.shape)
    ((40,), (20,))
    """
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module, name="weight"):
    """Undo spectral_norm: ``module.<name>`` becomes an ordinary Parameter again.

    >>> import workbench as wb
    >>> m = wb.nn.utils.remove_spectral_norm(wb.nn.utils.spectral_norm(wb.nn.Linear(2, 2)))
    >>> sorted(n for n, _ in m.named_parameters())
    ['bias', 'weight']
    """
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")

