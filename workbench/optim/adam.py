"""Adam and AdamW (amsgrad, maximize, L2 or decoupled weight decay)."""
from .. import _backend
from .._backend import fused as _fused
from ._functional import _loop_args, adam_direction_, adam_step_, weight_decay_
from .flags import check_flags
from .optimizer import (Optimizer, _check_args, _flat_group, _FlatPlan, _params_with_grad, _real, _scalar_step,
                         _scratch, _zeros_like)


def _advance(steps, params, lr, beta1, beta2, wd, decoupled):
    """One step of a flat group's shared count (``steps``: its parameters' step arrays, all equal) and
    AdamW's decoupled decay; returns the step size and sqrt of the second bias correction."""
    for s in steps:
        s += 1
    step = float(steps[0])
    if wd != 0 and decoupled:
        for p in params:
            p._data *= 1 - lr * wd
    return lr / (1 - beta1 ** step), (1 - beta2 ** step) ** 0.5


class Adam(Optimizer):
    """Adam: m, v running moments of g and g**2; p -= lr * m_hat / (sqrt(v_hat) + eps).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward(); opt.step(); w
    Parameter containing:
    tensor([0.9000], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        _check_args(lr=lr, eps=eps, betas=betas, weight_decay=weight_decay)
        check_flags(differentiable=differentiable, fused=fused, foreach=foreach)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable, "fused": fused, "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One Adam update of every parameter with a gradient; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr = float(group["lr"])
            beta1, beta2 = (float(b) for b in group["betas"])
            eps, wd, amsgrad = group["eps"], group["weight_decay"], group["amsgrad"]
            decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
            keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
            flat = _flat_group(self, group, keys)
            if flat is not None and self._flat_step(flat, lr, beta1, beta2, eps, wd, amsgrad, decoupled, maximize):
                continue
            for p, x, g in _params_with_grad(group):
                st = self.state[p]
                if not st:
                    st["step"] = _scalar_step()
                    st["exp_avg"] = _zeros_like(p)
                    st["exp_avg_sq"] = _zeros_like(p)
                    if amsgrad:
                        st["max_exp_avg_sq"] = _zeros_like(p)
                xp = _backend.xp_of(x)
                x, g = _real(x), _real(g)
                if maximize:
                    g = -g
                step_t = st["step"]._data
                step_t += 1
                g = weight_decay_(x, g, lr, wd, decoupled)
                m, v = _real(st["exp_avg"]._data), _real(st["exp_avg_sq"]._data)
                mx = _real(st["max_exp_avg_sq"]._data) if amsgrad else None
                tmp, scratch = _scratch(self, x)
                step = float(step_t)
                step_size = lr / (1 - beta1 ** step)
                bc2_sqrt = (1 - beta2 ** step) ** 0.5
                adam_step_(xp, x, g, m, v, mx, beta1, beta2, bc2_sqrt, eps, step_size, tmp, scratch,
                           loop=x.size >= _fused.MIN_SIZE)
                p._vbox[0] += 1
        return loss

    def _hyper(self, group):
        return (tuple(float(b) for b in group["betas"]), group["eps"], group["weight_decay"], group["amsgrad"],
                group["decoupled_weight_decay"], group["maximize"])

    def _plan(self):
        """``Optimizer._plan``: each group's ``_flat_step`` first branch (the compiled loop per parameter on its own
        gradient, ``_FlatPlan``) with its arguments resolved once; the step counts, bias corrections and
        decoupled decay as ``step()`` does them. None where a group takes another path (maximize, L2 weight
        decay, step counts that differ, the first step...)."""
        if self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks:
            return None
        groups = []
        for group in self.param_groups:
            hyper = self._hyper(group)
            (beta1, beta2), eps, wd, amsgrad, decoupled, maximize = hyper
            if maximize or (wd != 0 and not decoupled):
                return None
            keys = ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if amsgrad else ("exp_avg", "exp_avg_sq")
            fp = _FlatPlan.of(self, group, keys, also=("step",))
            if fp is None:
                return None
            steps = [e[3][0]._data for e in fp.entries]
            if any(s != steps[0] for s in steps[1:]):
                return None
            entries = []
            for p, x, ts, *_rest in fp.entries:
                m, v = ts[0]._data, ts[1]._data
                mx = ts[2]._data if amsgrad else None
                ok, fma = _loop_args(x, p._grad._data, m, v, *(() if mx is None else (mx,)))
                if not ok:
                    return None
                entries.append((p, x.reshape(-1), m.reshape(-1), v.reshape(-1), (v if mx is None else mx).reshape(-1),
                                fma))
            dt = fp.dtype.type
            weight = 1 - beta1
            hi = weight >= 0.5  # adam_step_'s scalars
            consts = (dt(1.0 - weight if hi else weight), hi, dt(beta2), dt(1 - beta2), dt(eps), amsgrad)
            groups.append((group, hyper, fp, steps, consts, entries))
        param_groups, n_groups = self.param_groups, len(self.param_groups)

        def plan():
            if not self._plan_holds(param_groups, n_groups):
                return False
            todo = []
            for group, hyper, fp, steps, consts, entries in groups:  # check everything before changing anything
                if self._hyper(group) != hyper:
                    return False
                gs = fp.grads()
                if gs is None:
                    return False
                todo.append((float(group["lr"]), hyper, fp, steps, consts, entries, gs))
            for lr, ((beta1, beta2), _eps, wd, _ams, decoupled, _mx), fp, steps, consts, entries, gs in todo:
                step_size, bc2_sqrt = _advance(steps, fp.params, lr, beta1, beta2, wd, decoupled)
                w, hi, b2, c2, deps, amsgrad = consts
                dt = fp.dtype.type
                bc2, alpha = dt(bc2_sqrt), dt(-step_size)
                for (p, x1, m1, v1, mx1, fma), g in zip(entries, gs):
                    _fused.adam_step(x1, g, m1, v1, mx1, w, hi, b2, c2, bc2, deps, amsgrad, alpha, fma)
                    p._vbox[0] += 1
            self._step_count += 1
            return True

        return plan

    def _flat_step(self, f, lr, beta1, beta2, eps, wd, amsgrad, decoupled, maximize):
        """The loop above over all of a group's parameters at once (``_Flat``), the same operations in
        the same order, so the results are the per-parameter loop's bit for bit. False (nothing done)
        when the parameters' step counts differ: their bias corrections do too."""
        states = [self.state[p] for p in f.params]
        if f.fresh:
            for st in states:
                st["step"] = _scalar_step()
        steps = [st["step"]._data for st in states]
        if any(s != steps[0] for s in steps[1:]):
            return False
        xp = _backend.xp_of(f.grad)
        step_size, bc2_sqrt = _advance(steps, f.params, lr, beta1, beta2, wd, decoupled)
        if _fused.usable(f.grad) and not maximize and (wd == 0 or decoupled):  # the loops serve the group
            # each parameter in one pass of the compiled loop on its own gradient (no gather, no write-back)
            mxs = f.views["max_exp_avg_sq"] if amsgrad else [None] * len(f.params)
            for p, m, v, mx, t in zip(f.params, f.views["exp_avg"], f.views["exp_avg_sq"], mxs, f.tmp_views):
                adam_step_(xp, p._data, p._grad._data, m, v, mx, beta1, beta2, bc2_sqrt, eps, step_size, t, t)
                p._vbox[0] += 1
            return True
        g = f.gather(xp)
        if maximize:
            xp.negative(g, out=g)
        if wd != 0 and not decoupled:  # g + x * wd, each product rounded before the sum as in weight_decay_
            for p, t, gv in zip(f.params, f.tmp_views, f.grad_views):
                xp.multiply(p._data, wd, out=t)
                gv += t
        adam_direction_(xp, f.bufs["exp_avg"], f.bufs["exp_avg_sq"], f.bufs.get("max_exp_avg_sq"), g, beta1, beta2,
                        bc2_sqrt, eps, f.tmp, f.tmp)
        f.scatter(f.tmp_views, -step_size)
        return True


class AdamW(Adam):
    """Adam with decoupled weight decay: p *= 1 - lr * weight_decay before the Adam step.

    >>> import workbench as wb
    >>> opt = wb.optim.AdamW([wb.nn.Parameter(wb.ones(2))], lr=1e-3)
    >>> opt.defaults["weight_decay"]
    0.01
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
