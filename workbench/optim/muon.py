"""Muon: momentum SGD whose 2-D updates are orthogonalised by a bfloat16 Newton-Schulz iteration."""
import math

from .. import _backend
from .._backend import dtypes as _dt
from .optimizer import Optimizer, _check_args, _params_with_grad, _zeros_like

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _bf16(xp, a):
    """Round float32 values to bfloat16 precision (and keep computing in float32), as a bf16 kernel's output."""
    return a.astype(_dt.bfloat16.np).astype(xp.float32)


def _zeropower_via_newtonschulz(xp, grad, ns_coefficients, ns_steps, eps):
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    x = _bf16(xp, grad.astype(xp.float32))
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    norm = float(_bf16(xp, xp.sqrt((x * x).sum(dtype=xp.float32))))
    x = _bf16(xp, x / _bf16(xp, xp.asarray(max(norm, eps), dtype=xp.float32)))
    for _ in range(ns_steps):
        gram = _bf16(xp, x @ x.T)
        gram_update = _bf16(xp, b * gram + c * (gram @ gram))
        x = _bf16(xp, a * x + gram_update @ x)
    return x.T if tall else x


def _adjust_lr(lr, adjust_lr_fn, shape):
    A, B = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, A / B))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(A, B))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """MomentUm Orthogonalized by Newton-schulz, for 2-D weight matrices (pair it with AdamW for the rest).

    >>> import workbench as wb
    >>> w = wb.nn.Parameter(wb.randn(4, 3))
    >>> opt = wb.optim.Muon([w], lr=0.02)
    >>> (w * w).sum().backward(); opt.step(); list(opt.state[w])
    ['momentum_buffer']
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS, ns_steps=DEFAULT_NS_STEPS,
                 adjust_lr_fn=None):
        _check_args({"lr": "Learning rate", "weight_decay": "weight decay"}, lr=lr, momentum=momentum,
                    weight_decay=weight_decay)
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": ns_coefficients, "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def step(self, closure=None):
        """One Muon update; returns closure()'s loss when given."""
        loss = self._closure(closure)
        for group in self.param_groups:
            lr, wd, mom = float(group["lr"]), group["weight_decay"], group["momentum"]
            for p, x, g in _params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                xp = _backend.xp_of(x)
                st = self.state[p]
                if "momentum_buffer" not in st:
                    st["momentum_buffer"] = _zeros_like(p)
                buf = st["momentum_buffer"]._data
                w = 1 - mom
                tmp = g - buf  # buf.lerp_(grad, 1 - momentum)
                if w < 0.5:
                    buf += tmp * w
                else:
                    buf[...] = g - tmp * (1 - w)
                if group["nesterov"]:  # grad.lerp(buf, momentum)
                    diff = buf - g
                    update = g + diff * mom if mom < 0.5 else buf - diff * (1 - mom)
                else:
                    update = buf
                update = _zeropower_via_newtonschulz(xp, update, group["ns_coefficients"], group["ns_steps"],
                                                     group["eps"])
                adjusted = _adjust_lr(lr, group["adjust_lr_fn"], x.shape)
                x *= 1 - lr * wd
                x += (update * -adjusted).astype(x.dtype, copy=False)
                p._vbox[0] += 1
        return loss
