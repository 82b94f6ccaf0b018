"""Module-level switches that check what is assigned to them, as PyTorch's ``torch.backends.*`` do."""
import contextlib
import sys
import types


def _bool(setter):
    def check(v):
        if not isinstance(v, bool):
            raise RuntimeError(f"{setter} expects a bool, but got {type(v).__name__}")
        return v

    return check


def install(module_name, flags):
    """Give module ``module_name`` the attributes in ``flags`` ({name: (default, check)}): reading one gives
    its value, assigning one runs ``check`` (which raises for a bad value, as PyTorch does) and stores it.
    Returns ``flags_ctx(**values)``: a context manager that sets several and restores them on exit."""
    values = {name: default for name, (default, _check) in flags.items()}

    def prop(name, check):
        def get(self):
            return values[name]

        def set_(self, v):
            values[name] = check(v)

        return property(get, set_)

    module = sys.modules[module_name]
    module.__class__ = type("FlagsModule", (types.ModuleType,),
                            {name: prop(name, check) for name, (_default, check) in flags.items()})

    @contextlib.contextmanager
    def flags_ctx(**new):
        old = dict(values)
        try:
            for k, v in new.items():
                setattr(module, k, v)
            yield
        finally:
            values.update(old)

    return flags_ctx


def boolean(default, setter):
    return default, _bool(setter)
