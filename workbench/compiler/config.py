"""``torch._dynamo.config`` (also ``workbench.compiler.config``): the settings PyTorch scripts set around
``torch.compile``.

``suppress_errors``: with True, ``compile(fullgraph=True)`` runs a call that cannot replay eagerly instead of
raising ``Unsupported`` (PyTorch's: fall back to eager instead of raising). ``recompile_limit`` (also under
its older name ``cache_size_limit``): traces kept per compiled callable before further signatures run
eagerly (8, as PyTorch's). Other names PyTorch has are accepted as plain settings and change nothing here.

>>> import workbench as torch
>>> torch._dynamo.config.cache_size_limit = 16
>>> torch._dynamo.config.recompile_limit
16
>>> torch._dynamo.config.recompile_limit = 8
"""
import contextlib
import sys
import types

suppress_errors = False
recompile_limit = 8
accumulated_recompile_limit = 256
verbose = False
capture_scalar_outputs = False
capture_dynamic_output_shape_ops = False
automatic_dynamic_shapes = True
assume_static_by_default = True
optimize_ddp = True
guard_nn_modules = True
inline_inbuilt_nn_modules = True


class _Config(types.ModuleType):
    @property
    def cache_size_limit(self):
        return self.recompile_limit

    @cache_size_limit.setter
    def cache_size_limit(self, value):
        self.recompile_limit = value

    def patch(self, arg=None, **changes):
        """Set some settings for a ``with`` block or a decorated function, then put them back."""
        if isinstance(arg, dict):
            changes = {**arg, **changes}
        elif arg is not None:
            raise TypeError("config.patch takes a dict or keyword arguments")
        for k in changes:
            if not hasattr(self, k):
                raise AttributeError(f"torch._dynamo.config has no setting {k!r}")
        mod = self

        class _Patch(contextlib.ContextDecorator):
            def __enter__(self):
                self.old = {k: getattr(mod, k) for k in changes}
                for k, v in changes.items():
                    setattr(mod, k, v)
                return self

            def __exit__(self, *exc):
                for k, v in self.old.items():
                    setattr(mod, k, v)
                return False

        return _Patch()


sys.modules[__name__].__class__ = _Config
