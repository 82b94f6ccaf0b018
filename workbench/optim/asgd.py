"""ASGD: SGD with a decaying step and a running (Polyak) average of the iterates in state["ax"]."""
from .. import _backend
from .flags import check_flags
from .optimizer import Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch, _zeros_like


class ASGD(Optimizer):
    """Averaged SGD: eta_t = lr / (1 + lambd * lr * t) ** alpha; ax averages the iterates after step t0.

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.ASGD([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); round(w.item(), 4)
    0.8
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
                 maximize=False, differentiable=False, capturable=False):
        _check_args(lr=lr, weight_decay=weight_decay)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One ASGD update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        f32 = _backend.numpy.float32
        for group in self.param_groups:
            lr, lambd, alpha, t0 = float(group["lr"]), group["lambd"], group["alpha"], group["t0"]
            wd, maximize = group["weight_decay"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["eta"] = _scalar_step(lr)
                    st["mu"] = _scalar_step(1.0)
                    st["ax"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                step_t = st["step"]._data
                step_t += 1
                if wd != 0:
                    g = g + x * wd
                eta = float(st["eta"]._data)
                t, _ = _scratch(self, x)
                x *= 1 - lambd * eta
                xp.multiply(g, eta, out=t)
                x -= t
                ax = _real(st["ax"]._data)
                mu = st["mu"]._data
                if float(mu) != 1:
                    xp.subtract(x, ax, out=t)
                    t *= f32(mu) if x.dtype == f32 else float(mu)
                    ax += t
                else:
                    ax[...] = x
                step = float(step_t)
                st["eta"]._data[...] = lr / ((1 + lambd * lr * step) ** alpha)  # stored as float32, as PyTorch
                mu[...] = 1 / max(1, step - t0)
                p._vbox[0] += 1
        return loss
