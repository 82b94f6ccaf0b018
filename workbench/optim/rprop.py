"""Rprop: per-element step sizes that grow while the gradient keeps its sign and shrink when it flips."""
from .. import _backend
from ..tensor import Tensor
from .flags import check_flags
from .optimizer import Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch, _zeros_like


class Rprop(Optimizer):
    """Resilient backpropagation: p -= sign(g) * step, step *= etaplus / etaminus on equal / opposite signs.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.Rprop([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.9
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *, capturable=False, foreach=None,
                 maximize=False, differentiable=False):
        _check_args(lr=lr, etas=etas)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Rprop update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            lo, hi = group["step_sizes"]
            maximize = group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["prev"] = _zeros_like(p)
                    xp = _backend.xp_of(x)
                    lr = float(group["lr"])
                    with _backend.on_device(p.device):
                        st["step_size"] = Tensor._make(xp.full_like(p._data, complex(lr, lr) if p.is_complex() else lr))
                xp = _backend.xp_of(x)
                st["step"]._data += 1
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                prev, step_size = _real(st["prev"]._data), _real(st["step_size"]._data)
                sign, t = _scratch(self, x)
                xp.multiply(g, prev, out=sign)
                xp.sign(sign, out=sign)
                flipped = sign < 0
                sign[sign > 0] = etaplus
                sign[flipped] = etaminus
                sign[sign == 0] = 1
                step_size *= sign
                xp.clip(step_size, lo, hi, out=step_size)
                t[...] = g
                t[flipped] = 0  # after a sign flip, skip this element's step and forget its gradient
                prev[...] = t
                xp.sign(t, out=t)
                t *= step_size
                x -= t
                p._vbox[0] += 1
        return loss
