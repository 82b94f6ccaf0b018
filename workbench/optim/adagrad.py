"""Adagrad (lr decay, weight decay, initial accumulator, maximize)."""
from .. import _backend
from ..tensor import Tensor
from ._functional import addcdiv_, addcmul_
from .flags import check_flags
from .optimizer import Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch


class Adagrad(Optimizer):
    """Adagrad: s += g**2;  p -= lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.Adagrad([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0, eps=1e-10,
                 foreach=None, *, maximize=False, differentiable=False, fused=None):
        _check_args(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value, eps=eps)
        check_flags(differentiable=differentiable, fused=fused, foreach=foreach)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                st = self.state[p]
                st["step"] = _scalar_step()
                v = group["initial_accumulator_value"]
                xp = _backend.xp_of(p._data)
                with _backend.on_device(p.device):
                    fill = complex(v, v) if p.is_complex() else v
                    st["sum"] = Tensor._make(xp.full_like(p._data, fill))

    def step(self, closure=None):
        """One Adagrad update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, lr_decay, wd = float(group["lr"]), group["lr_decay"], group["weight_decay"]
            eps, maximize = group["eps"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                xp = _backend.xp_of(x)
                step_t = st["step"]._data
                step_t += 1
                step = float(step_t)
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                if wd != 0:
                    g = g + x * wd
                clr = lr / (1 + (step - 1) * lr_decay)
                s = _real(st["sum"]._data)
                tmp, std = _scratch(self, x)
                addcmul_(xp, s, g, g, 1, tmp)
                xp.sqrt(s, out=std)
                std += eps
                addcdiv_(xp, x, g, std, -clr, tmp)
                p._vbox[0] += 1
        return loss
