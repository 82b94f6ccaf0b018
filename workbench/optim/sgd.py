"""Stochastic gradient descent with momentum, dampening, Nesterov, weight decay and maximize."""
from .. import _backend
from .._backend import blas
from .._backend import fused as _fused
from ..tensor import Tensor
from .flags import check_flags
from ._functional import _loop_args, momentum_, sgd_step_, sgd_update_
from .optimizer import (Optimizer, _check_args, _flat_group, _FlatPlan, _params_with_grad, _real, _same,
                        _scratch)


class SGD(Optimizer):
    """SGD: v = momentum * v + (1 - dampening) * g;  p -= lr * (g + momentum * v if nesterov else v).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.tensor([1.0]))
    >>> opt = wb.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad(); (w * w).sum().backward(); opt.step()
    >>> w
    Parameter containing:
    tensor([0.4600], requires_grad=True)
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *, maximize=False,
                 foreach=None, differentiable=False, fused=None):
        _check_args(lr=lr, momentum=momentum, weight_decay=weight_decay)
        check_flags(differentiable=differentiable, fused=fused, foreach=foreach)
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "differentiable": differentiable,
                    "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, defaults)

    def step(self, closure=None):
        """One update of every parameter with a gradient; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, mom, damp = float(group["lr"]), group["momentum"], group["dampening"]
            wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
            flat = _flat_group(self, group, ("momentum_buffer",)) if mom != 0 else None
            if flat is not None:
                self._flat_step(flat, lr, mom, damp, wd, nesterov, maximize)
                continue
            for p, x, g in _params_with_grad(group):
                xp = _backend.xp_of(x)
                x, g = _real(x), _real(g)
                t1, _ = _scratch(self, x)
                if maximize:
                    g = -g
                if wd != 0:
                    g = g + x * wd
                if mom != 0:
                    st = self.state[p]
                    buf = st.get("momentum_buffer")
                    if buf is not None:
                        sgd_step_(xp, x, g, _real(buf._data), lr, mom, damp, nesterov, t1,
                                  loop=x.size >= _fused.MIN_SIZE)
                        p._vbox[0] += 1
                        continue
                    b = xp.array(g, copy=True)  # first step: the buffer is the gradient
                    st["momentum_buffer"] = Tensor._make(b.view(p._data.dtype) if p.is_complex() else b)
                    g = xp.add(xp.multiply(b, mom, out=t1), g, out=t1) if nesterov else b
                sgd_update_(xp, x, g, lr, t1)
                p._vbox[0] += 1
        return loss

    def _plan(self):
        """``Optimizer._plan``: each group's steady-state path with its per-parameter arguments resolved once.
        With momentum, ``_flat_step``'s first branch (the group in one call of the compiled loop, once the
        buffers exist, ``_FlatPlan``); without, ``step()``'s per-parameter ``sgd_update_``. None where a
        group takes another path (weight decay, maximize, a parameter without a gradient, complex ones...)."""
        if self._optimizer_step_pre_hooks or self._optimizer_step_post_hooks:
            return None
        groups = []
        for group in self.param_groups:
            mom, damp = group["momentum"], group["dampening"]
            hyper = (mom, damp, group["weight_decay"], group["nesterov"], group["maximize"])
            params = list(group["params"])
            if hyper[2] != 0 or hyper[4] or any(p._grad is None or p._data.dtype.kind != "f" for p in params):
                return None
            if mom == 0:
                groups.append((group, hyper, params, None,
                               [(p, p._data, _scratch(self, p._data)[0], _backend.xp_of(p._data)) for p in params]))
                continue
            fp = _FlatPlan.of(self, group, ("momentum_buffer",))
            if fp is None:
                return None
            # the group in one call (fused.sgd_steps), as _flat_step: its arrays flat and the loops serving them
            if fp.f.flats is None or not all(_loop_args(x, p._grad._data, bt._data)[0]
                                             for p, x, (bt,), *_rest in fp.entries):
                return None
            dt = fp.dtype.type
            groups.append((group, hyper, params, (fp, dt(mom), dt(1 - damp), damp != 0), None))
        param_groups, n_groups = self.param_groups, len(self.param_groups)

        def plan():
            if not self._plan_holds(param_groups, n_groups):
                return False
            todo = []
            for group, hyper, params, flat, entries in groups:  # check everything before changing anything
                if (group["momentum"], group["dampening"], group["weight_decay"], group["nesterov"],
                        group["maximize"]) != hyper:
                    return False
                if flat is None:
                    if not _same(group["params"], params):
                        return False
                    gs = []
                    for p, x, _t1, _xp in entries:
                        g = p._grad
                        if g is None or p._data is not x:
                            return False
                        gs.append(g._data)
                else:
                    gs = flat[0].grads()
                    if gs is None:
                        return False
                todo.append((float(group["lr"]), hyper[3], flat, entries, gs))
            for lr, nesterov, flat, entries, gs in todo:
                if flat is None:
                    for (p, x, t1, xp), g in zip(entries, gs):
                        sgd_update_(xp, x, g, lr, t1)
                        p._vbox[0] += 1
                    continue
                fp, dmom, dc, damped = flat
                f = fp.f
                _fused.sgd_steps(f.flats, tuple(gs), f.bufs["momentum_buffer"], dmom, dc, damped, nesterov,
                                 fp.dtype.type(-lr), _fuse_from(f))
                for p in f.params:
                    p._vbox[0] += 1
            self._step_count += 1
            return True

        return plan

    @staticmethod
    def _flat_step(f, lr, mom, damp, wd, nesterov, maximize):
        """The momentum loop above over all of a group's parameters at once (``_Flat``): the same
        operations in the same order, so the results are the per-parameter loop's bit for bit."""
        xp = _backend.xp_of(f.grad)
        if not f.fresh and _fused.usable(f.grad) and not maximize and wd == 0:  # the loops serve the group
            # each parameter in one pass of the compiled loop on its own gradient (no gather, no write-back),
            # all in one call where the arrays allow
            gs = f.flat_grads()
            if gs is not None:
                dt = f.grad.dtype.type
                _fused.sgd_steps(f.flats, gs, f.bufs["momentum_buffer"], dt(mom), dt(1 - damp), damp != 0, nesterov,
                                 dt(-lr), _fuse_from(f))
                for p in f.params:
                    p._vbox[0] += 1
                return
            for p, b, t in zip(f.params, f.views["momentum_buffer"], f.tmp_views):
                sgd_step_(xp, p._data, p._grad._data, b, lr, mom, damp, nesterov, t)
                p._vbox[0] += 1
            return
        g = f.gather(xp)
        if maximize:
            xp.negative(g, out=g)
        if wd != 0:  # g + x * wd, the product rounded before the sum
            for p, t, gv in zip(f.params, f.tmp_views, f.grad_views):
                xp.multiply(p._data, wd, out=t)
                gv += t
        b = f.bufs["momentum_buffer"]
        if f.fresh:  # first step: the buffer is the gradient
            xp.copyto(b, g)
            if nesterov:
                xp.add(xp.multiply(b, mom, out=f.tmp), g, out=f.tmp)
        else:
            momentum_(xp, b, g, mom, damp, nesterov, f.tmp)
        f.scatter(f.tmp_views if nesterov else f.views["momentum_buffer"], -lr)


def _fuse_from(f):
    """The size from which ``fused.sgd_steps`` fuses a parameter's multiply-add: where ``sgd_step_`` would take
    BLAS's axpy (none without one that fuses, ``blas.one_pass``), so the loop gives the NumPy form's bits."""
    return blas.MIN_SIZE if blas.one_pass() else f.grad.size + 1
