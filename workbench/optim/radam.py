"""RAdam: Adam with the variance rectification term (and optional decoupled weight decay)."""
from .. import _backend
from ._functional import adam_moments_, weight_decay_
from .flags import check_flags
from .optimizer import (Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch,
                        _zeros_like)


class RAdam(Optimizer):
    """RAdam (Liu et al. 2019): plain momentum SGD until the variance estimate is tractable (rho_t > 5).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.8
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False,
                 *, foreach=None, maximize=False, capturable=False, differentiable=False):
        _check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable, "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One RAdam update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, eps, wd = float(group["lr"]), group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                step_t = st["step"]._data
                step_t += 1
                step = float(step_t)
                g = weight_decay_(x, g, lr, wd, decoupled)
                m, v = _real(st["exp_avg"]._data), _real(st["exp_avg_sq"]._data)
                upd, s = _scratch(self, x)
                adam_moments_(xp, m, v, g, beta1, beta2, upd)
                bc1 = 1 - beta1 ** step
                bc2 = 1 - beta2 ** step
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bc2
                xp.divide(m, bc1, out=upd)  # bias-corrected exp_avg
                upd *= lr
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    xp.sqrt(v, out=s)
                    s += eps
                    xp.divide(bc2 ** 0.5, s, out=s)  # the adaptive lr
                    upd *= s
                    upd *= rect
                x -= upd
                p._vbox[0] += 1
        return loss
