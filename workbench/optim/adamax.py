"""Adamax: Adam with the infinity norm."""
from .. import _backend
from ._functional import addcdiv_, lerp_
from .flags import check_flags
from .optimizer import (Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch,
                        _zeros_like)


class Adamax(Optimizer):
    """Adamax: u = max(beta2 * u, |g| + eps);  p -= lr / (1 - beta1**t) * m / u.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, *,
                 maximize=False, differentiable=False, capturable=False):
        _check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adamax update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, eps, wd, maximize = float(group["lr"]), group["eps"], group["weight_decay"], group["maximize"]
            beta1, beta2 = group["betas"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_inf"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                step_t = st["step"]._data
                step_t += 1
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                if wd != 0:
                    g = g + x * wd
                m, u = _real(st["exp_avg"]._data), _real(st["exp_inf"]._data)
                tmp, a = _scratch(self, x)
                lerp_(xp, m, g, 1 - beta1, tmp)
                u *= beta2
                xp.abs(g, out=a)
                a += eps
                xp.maximum(u, a, out=u)
                clr = lr / (1 - beta1 ** float(step_t))
                addcdiv_(xp, x, m, u, -clr, tmp)
                p._vbox[0] += 1
        return loss
