"""Ready-made parametrizations: weight_norm and spectral_norm (PyTorch's modern, parametrize-based API)."""
from ...autograd.grad_mode import no_grad
from ...random import randn
from .. import functional as F
from ..module import Module
from . import parametrize
from .weight_norm import norm_except_dim


class _WeightNorm(Module):
    def __init__(self, dim=0):
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, 2, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module, name="weight", dim=0):
    """``module.<name>`` = g * v / ||v||, stored as ``parametrizations.<name>.original0`` (g) and ``original1`` (v).

    >>> import workbench as wb
    >>> m = weight_norm(wb.nn.Linear(20, 40))
    >>> tuple(m.parametrizations.weight.original0.shape), tuple(m.parametrizations.weight.original1.shape)
    ((40, 1), (40, 20))
    """
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight, n_power_iterations=1, dim=0, eps=1e-12):
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, {ndim - 1}] but got "
                             f"{dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = weight_mat.shape
            self.register_buffer("_u", F.normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0,
                                                   eps=eps))
            self.register_buffer("_v", F.normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0,
                                                   eps=eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight):
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def _power_method(self, weight_mat, n_power_iterations):
        with no_grad():
            for _ in range(n_power_iterations):
                _set(self._u, F.normalize(weight_mat.matmul(self._v), dim=0, eps=self.eps))
                _set(self._v, F.normalize(weight_mat.conj().t().matmul(self._u), dim=0, eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = (u.conj() * weight_mat.matmul(v)).sum()
        return weight / sigma

    def right_inverse(self, value):
        return value


def _set(buf, value):
    with no_grad():
        buf.copy_(value)  # (a write workbench.compile records: a compiled model repeats the power iteration)


def spectral_norm(module, name="weight", n_power_iterations=1, eps=1e-12, dim=None):
    """``module.<name>`` divided by its spectral norm, estimated by power iteration in training mode.

    >>> import workbench as wb
    >>> m = spectral_norm(wb.nn.Linear(20, 40))
    >>> tuple(m.parametrizations.weight.original.shape)
    (40, 20)
    """
    weight = getattr(module, name, None)
    if weight is None:
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if type(module).__name__ in ("ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d") else 0
    parametrize.register_parametrization(module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module
