"""NAdam: Adam with Nesterov momentum (and optional decoupled weight decay)."""
from .. import _backend
from ._functional import adam_moments_, addcdiv_, weight_decay_
from .flags import check_flags
from .optimizer import (Optimizer, _check_args, _params_with_grad, _real, _scalar_step, _scratch,
                        _zeros_like)


class NAdam(Optimizer):
    """NAdam (Dozat 2016) with PyTorch's momentum-decay schedule mu_t = beta1 * (1 - 0.5 * 0.96**(t * psi)).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w.item() < 1.0
    True
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, momentum_decay=4e-3,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False):
        _check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay, momentum_decay=momentum_decay)
        check_flags(differentiable=differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One NAdam update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        f32 = _backend.numpy.float32
        for group in self.param_groups:
            lr, eps, wd = float(group["lr"]), group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            psi, decoupled, maximize = group["momentum_decay"], group["decoupled_weight_decay"], group["maximize"]
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["mu_product"] = _scalar_step(1.0)
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                step_t = st["step"]._data
                step_t += 1
                step = float(step_t)
                bc2 = 1 - beta2 ** step
                g = weight_decay_(x, g, lr, wd, decoupled)
                mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * psi)))
                mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * psi)))
                mp = st["mu_product"]._data
                mp *= f32(mu)  # a float32 product, as PyTorch's 0-d state tensor
                mu_product = float(mp)
                m, v = _real(st["exp_avg"]._data), _real(st["exp_avg_sq"]._data)
                tmp, denom = _scratch(self, x)
                adam_moments_(xp, m, v, g, beta1, beta2, tmp)
                xp.divide(v, bc2, out=denom)
                xp.sqrt(denom, out=denom)
                denom += eps
                addcdiv_(xp, x, g, denom, -lr * (1.0 - mu) / (1.0 - mu_product), tmp)
                addcdiv_(xp, x, m, denom, (-lr * mu_next) / (1.0 - mu_product * mu_next), tmp)
                p._vbox[0] += 1
        return loss
