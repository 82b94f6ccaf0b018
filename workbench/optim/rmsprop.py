"""RMSprop (centered, momentum, weight decay, maximize)."""
from .. import _backend
from ._functional import addcdiv_, addcmul_, lerp_
from .flags import check_flags
from .optimizer import Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch, _zeros_like


class RMSprop(Optimizer):
    """RMSprop: v = alpha * v + (1 - alpha) * g**2;  p -= lr * g / (sqrt(v) + eps).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        _check_args(lr=lr, eps=eps, momentum=momentum, weight_decay=weight_decay, alpha=alpha)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "capturable": capturable, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One RMSprop update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, alpha, eps = float(group["lr"]), group["alpha"], group["eps"]
            wd, mom, centered, maximize = group["weight_decay"], group["momentum"], group["centered"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["square_avg"] = _zeros_like(p)
                    if mom > 0:
                        st["momentum_buffer"] = _zeros_like(p)
                    if centered:
                        st["grad_avg"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                st["step"]._data += 1
                if wd != 0:
                    g = g + x * wd
                sq = _real(st["square_avg"]._data)
                tmp, avg = _scratch(self, x)
                sq *= alpha
                addcmul_(xp, sq, g, g, 1 - alpha, tmp)
                if centered:
                    ga = _real(st["grad_avg"]._data)
                    lerp_(xp, ga, g, 1 - alpha, tmp)
                    xp.multiply(ga, -1, out=tmp)  # square_avg.addcmul(grad_avg, grad_avg, value=-1)
                    tmp *= ga
                    xp.add(sq, tmp, out=avg)
                    xp.sqrt(avg, out=avg)
                else:
                    xp.sqrt(sq, out=avg)
                avg += eps
                if mom > 0:
                    buf = _real(st["momentum_buffer"]._data)
                    buf *= mom
                    addcdiv_(xp, buf, g, avg, 1.0, tmp)
                    xp.multiply(buf, lr, out=tmp)
                    x -= tmp
                else:
                    addcdiv_(xp, x, g, avg, -lr, tmp)
                p._vbox[0] += 1
        return loss
