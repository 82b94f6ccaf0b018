"""Adadelta (weight decay, maximize)."""
from .. import _backend
from ._functional import addcmul_
from .flags import check_flags
from .optimizer import Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch, _zeros_like


class Adadelta(Optimizer):
    """Adadelta: step = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g, scaled by lr.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.Adadelta([w])
    >>> (w * w).sum().backward(); opt.step(); w.item() < 1.0
    True
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *, capturable=False,
                 maximize=False, differentiable=False):
        _check_args(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "maximize": maximize,
                    "capturable": capturable, "foreach": foreach, "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adadelta update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, rho, eps = float(group["lr"]), group["rho"], group["eps"]
            wd, maximize = group["weight_decay"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["square_avg"] = _zeros_like(p)
                    st["acc_delta"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                st["step"]._data += 1
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                if wd != 0:
                    g = g + x * wd
                sq, acc = _real(st["square_avg"]._data), _real(st["acc_delta"]._data)
                std, delta = _scratch(self, x)
                sq *= rho
                addcmul_(xp, sq, g, g, 1 - rho, std)
                xp.add(sq, eps, out=std)
                xp.sqrt(std, out=std)
                xp.add(acc, eps, out=delta)
                xp.sqrt(delta, out=delta)
                delta /= std
                delta *= g
                acc *= rho
                addcmul_(xp, acc, delta, delta, 1 - rho, std)
                delta *= lr
                x -= delta
                p._vbox[0] += 1
        return loss
