"""GradScaler: loss scaling for float16 training, PyTorch's state machine.

Per optimizer and iteration the stages are READY -> (unscale_) UNSCALED -> (step) STEPPED, and update()
starts the next iteration. unscale_ multiplies every gradient by 1/scale in place and records, per
device, whether any is inf or NaN; step skips optimizer.step() when one was; update multiplies the
scale by backoff_factor after a skipped step, and by growth_factor after growth_interval clean steps
in a row. The scale and the growth tracker are 0-d float32/int32 tensors on the gradients' device, so
scale() and unscale_() never read a value back to the host (step() reads the found-inf flag once, as
PyTorch does).
"""
import enum
import warnings
from collections import defaultdict

from .. import _backend, cuda
from .._backend import dtypes as _dt
from ..autograd.grad_mode import no_grad
from ..creation import full
from ..tensor import Tensor


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state():
    return {"stage": OptState.READY, "found_inf_per_device": {}}


class GradScaler:
    """Scale the loss so float16 gradients do not underflow; unscale before the step; skip steps with inf/NaN.

    >>> import workbench as wb
    >>> model = wb.nn.Linear(3, 1)
    >>> opt = wb.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = wb.amp.GradScaler("cpu")
    >>> loss = model(wb.ones(2, 3)).sum()
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
    >>> scaler.get_scale()
    65536.0
    """

    def __init__(self, device="cuda", init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                 growth_interval=2000, enabled=True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled:
            if not cuda.is_available():
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # made on the first scale(), on the outputs' device
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname):
        fix = "This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration."
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev):
        self._scale = full((), self._init_scale, dtype=_dt.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=_dt.int32, device=dev)

    def scale(self, outputs):
        """outputs (a tensor or nested iterables of them) times the scale factor (unchanged when disabled)."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            if self._scale is None:
                self._lazy_init_scale_growth_tracker(outputs.device)
            return outputs * self._scale.to(outputs.device, non_blocking=True)

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(val.device, non_blocking=True)
            if isinstance(val, (list, tuple)) or hasattr(val, "__iter__"):
                it = map(apply_scale, val)
                return type(val)(it) if isinstance(val, (list, tuple)) else it
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16):
        per_device = {}
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(f"expected param to be torch.Tensor, got {type(param).__name__}")
                    g = param.grad
                    if g is None:
                        continue
                    if not allow_fp16 and g.dtype is _dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    dev = g.device
                    if dev not in per_device:
                        per_device[dev] = (found_inf.to(dev, copy=True), inv_scale.to(dev))
                    flag, inv = per_device[dev]
                    _non_finite_check_and_unscale_(g, flag, inv)
        return {dev: flag for dev, (flag, _) in per_device.items()}

    def unscale_(self, optimizer):
        """Divide the optimizer's gradients by the scale, in place (before clipping them, say)."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        # the reciprocal in float64, as PyTorch (float32 division can be imprecise)
        inv_scale = self._scale.double().reciprocal().float()
        found_inf = full((), 0.0, dtype=_dt.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf, False)
        state["stage"] = OptState.UNSCALED

    def _maybe_opt_step(self, optimizer, state, *args, **kwargs):
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            return optimizer.step(*args, **kwargs)
        return None

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless unscale_ ran), then optimizer.step() unless a gradient was inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = self._maybe_opt_step(optimizer, state, *args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None):
        """Back off after a skipped step, grow after growth_interval clean ones (or set ``new_scale``)."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        if new_scale is not None:
            if isinstance(new_scale, float):
                self._scale.fill_(new_scale)
            else:
                reason = ("new_scale should be a float or a 1-element torch.cuda.FloatTensor or torch.FloatTensor "
                          "with requires_grad=False.")
                if not isinstance(new_scale, Tensor) or new_scale.device.type != self._device:
                    raise AssertionError(reason)
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                self._scale.copy_(new_scale)
        else:
            found_infs = [f.to(_scale.device, non_blocking=True) for s in self._per_optimizer_states.values()
                          for f in s["found_inf_per_device"].values()]
            if len(found_infs) == 0:
                raise AssertionError("No inf checks were recorded prior to update.")
            found = found_infs[0]
            for f in found_infs[1:]:
                found = found + f
            _update_scale_(_scale, _growth_tracker, found, self._growth_factor, self._backoff_factor,
                           self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self):
        """The current scale as a Python float (1.0 when disabled); reads it back from the device."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self):
        return self._growth_factor

    def set_growth_factor(self, new_factor):
        self._growth_factor = new_factor

    def get_backoff_factor(self):
        return self._backoff_factor

    def set_backoff_factor(self, new_factor):
        self._backoff_factor = new_factor

    def get_growth_interval(self):
        return self._growth_interval

    def set_growth_interval(self, new_interval):
        self._growth_interval = new_interval

    def _get_growth_tracker(self):
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None else int(self._growth_tracker.item())
        return 0

    def is_enabled(self):
        return self._enabled

    def state_dict(self):
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled)."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict):
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)


def _non_finite_check_and_unscale_(grad, found_inf, inv_scale):
    """grad *= inv_scale in place; found_inf becomes 1 if grad holds an inf or NaN (no host read)."""
    d = grad._data
    xp = _backend.xp_of(d)
    f = found_inf._data
    f[...] = xp.maximum(f, (~xp.isfinite(d).all()).astype(f.dtype))
    d *= inv_scale._data.astype(d.dtype)
    grad._bump("unscale_")


def _update_scale_(scale, growth_tracker, found_inf, growth_factor, backoff_factor, growth_interval):
    """PyTorch's _amp_update_scale_ on the device arrays: back off after an inf, grow (if the grown
    scale is finite) after growth_interval clean steps, else count the clean step."""
    s, t = scale._data, growth_tracker._data
    xp = _backend.xp_of(s)
    inf = found_inf._data > 0
    successful = t + 1
    grow = ~inf & (successful == growth_interval)
    grown = s * growth_factor
    s[...] = xp.where(inf, s * backoff_factor, xp.where(grow & xp.isfinite(grown), grown, s))
    t[...] = xp.where(inf | grow, 0, successful)
