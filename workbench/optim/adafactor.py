"""Adafactor: Adam-like steps with the second moment of matrices factored into row and column means."""
from .. import _backend
from ..tensor import Tensor
from .optimizer import Optimizer, _check_args, _params_with_grad, _scalar_step, _zeros_like


# torch words its Adafactor checks "<words> should be >= 0 but is: <v>"
_SHOULD_BE = {"lr": "Learning rate", "eps": ("epsilon1", "epsilon2"), "d": "Clipping threshold d"}


class Adafactor(Optimizer):
    """Adafactor (Shazeer & Stern, 2018) as PyTorch implements it: relative step size, update clipping.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> opt = wb.optim.Adafactor([w], lr=0.01)
    >>> (w * w).sum().backward(); opt.step(); bool((w < wb.tensor([[1.0, 2.0], [3.0, 4.0]])).all())
    True
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0, weight_decay=0.0, *,
                 foreach=None, maximize=False):
        _check_args(_SHOULD_BE, lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay)
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adafactor update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        np = _backend.numpy
        for group in self.param_groups:
            lr, beta2_decay, (eps1, eps2) = float(group["lr"]), group["beta2_decay"], group["eps"]
            d, wd, maximize = group["d"], group["weight_decay"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                st = self.state[p]
                xp = _backend.xp_of(x)
                if not st:
                    st["step"] = _scalar_step()
                    if g.ndim > 1:
                        with _backend.on_device(p.device):
                            st["row_var"] = Tensor._make(xp.zeros(g.shape[:-1] + (1,), dtype=g.dtype))
                            st["col_var"] = Tensor._make(xp.zeros(g.shape[:-2] + (1,) + g.shape[-1:], dtype=g.dtype))
                    else:
                        st["variance"] = _zeros_like(p)
                if maximize:
                    g = -g
                e1 = float(np.finfo(x.dtype).eps) if eps1 is None else eps1
                step_t = st["step"]._data
                step_t += 1
                step = float(step_t)
                one_minus_beta2_t = step ** beta2_decay
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, float(xp.sqrt((x * x).sum())) / (x.size ** 0.5)) * rho_t
                if wd != 0:
                    x *= 1 - lr * wd
                if g.ndim > 1:
                    row_var, col_var = st["row_var"]._data, st["col_var"]._data
                    row_mean = xp.sqrt((g * g).sum(-1, keepdims=True)) ** 2 / g.shape[-1]
                    _lerp(row_var, row_mean, one_minus_beta2_t)
                    col_mean = xp.sqrt((g * g).sum(-2, keepdims=True)) ** 2 / g.shape[-2]
                    _lerp(col_var, col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate /= xp.maximum(row_var.mean(-2, keepdims=True), e1)
                else:
                    variance = st["variance"]._data
                    _lerp(variance, g * g, one_minus_beta2_t)
                    var_estimate = variance.copy()
                update = xp.maximum(var_estimate, e1 * e1, out=var_estimate)
                xp.sqrt(update, out=update)
                xp.divide(1, update, out=update)
                update *= g
                denom = max(1.0, float(xp.sqrt((update * update).sum())) / ((update.size ** 0.5) * d))
                update *= -alpha / denom
                x += update
                p._vbox[0] += 1
        return loss


def _lerp(a, b, w):
    tmp = b - a
    if w < 0.5:
        tmp *= w
        a += tmp
    else:
        tmp *= 1.0 - w
        a[...] = b - tmp
