"""``workbench.cuda.amp`` and ``workbench.cpu.amp``: PyTorch's older, device-specific spellings.

Both still work in PyTorch 2.x with a FutureWarning naming the ``torch.amp`` form; so do these.
"""
import functools
import types
import warnings

from . import autocast_mode as _am
from .grad_scaler import GradScaler as _GradScaler


def _module(device, default_dtype, qualname):
    mod = types.ModuleType(qualname, f"PyTorch's torch.{device}.amp: autocast and GradScaler for '{device}'.")

    class autocast(_am.autocast):  # noqa: N801 - PyTorch's name
        __doc__ = f"torch.{device}.amp.autocast(args...): autocast('{device}', args...) (deprecated in PyTorch)."

        def __init__(self, enabled=True, dtype=default_dtype, cache_enabled=True):
            warnings.warn(f"`torch.{device}.amp.autocast(args...)` is deprecated. Please use "
                          f"`torch.amp.autocast('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

        def __call__(self, func):
            @functools.wraps(func)
            def decorate(*args, **kwargs):
                with _am.autocast(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                    return func(*args, **kwargs)

            return decorate

    class GradScaler(_GradScaler):
        __doc__ = f"torch.{device}.amp.GradScaler(args...): amp.GradScaler('{device}', args...) (deprecated)."

        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            warnings.warn(f"`torch.{device}.amp.GradScaler(args...)` is deprecated. Please use "
                          f"`torch.amp.GradScaler('{device}', args...)` instead.", FutureWarning, stacklevel=2)
            super().__init__(device, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    autocast.__module__ = GradScaler.__module__ = qualname
    autocast.__qualname__, GradScaler.__qualname__ = "autocast", "GradScaler"
    mod.autocast, mod.GradScaler = autocast, GradScaler
    mod.custom_fwd = functools.partial(_am.custom_fwd, device_type=device)
    mod.custom_bwd = functools.partial(_am.custom_bwd, device_type=device)
    return mod
