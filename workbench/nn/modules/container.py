"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
import operator
from collections import OrderedDict
from itertools import islice

from ...tensor import Tensor
from ..module import Module, _addindent, _changed, _tensor_typename
from ..parameter import Parameter


def _index(idx, n, what):
    idx = operator.index(idx)
    if not -n <= idx < n:
        raise IndexError(f"index {idx} is out of range for a {what} of length {n}")
    return idx % n


class Sequential(Module):
    """Modules applied one after another; indexable, sliceable, appendable.

    >>> import workbench as wb
    >>> net = wb.nn.Sequential(wb.nn.Linear(4, 8), wb.nn.ReLU(), wb.nn.Linear(8, 2))
    >>> net(wb.randn(3, 4)).shape, len(net), type(net[1]).__name__
    (workbench.Size([3, 2]), 3, 'ReLU')
    """

    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for key, module in args[0].items():
                self.add_module(key, module)
        else:
            for idx, module in enumerate(args):
                self.add_module(str(idx), module)

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(OrderedDict(list(self._modules.items())[idx]))
        i = _index(idx, len(self), "Sequential")
        return next(islice(iter(self._modules.values()), i, None))

    def __setitem__(self, idx, module):
        key = list(self._modules)[_index(idx, len(self), "Sequential")]
        setattr(self, key, module)

    def __delitem__(self, idx):
        keys = list(self._modules)
        if isinstance(idx, slice):
            for k in keys[idx]:
                delattr(self, k)
        else:
            delattr(self, keys[_index(idx, len(self), "Sequential")])
        # renumber, as PyTorch does, so indices stay contiguous
        items = list(self._modules.items())
        self._modules.clear()
        for i, (_, m) in enumerate(items):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __add__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        out = Sequential()
        for m in list(self) + list(other):
            out.append(m)
        return out

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        for m in list(other):
            self.append(m)
        return self

    def __mul__(self, other):
        if not isinstance(other, int) or other <= 0:
            raise ValueError(f"Non-positive multiplication factor {other} for {type(self)}")
        out = Sequential()
        for _ in range(other):
            for m in self:
                out.append(m)
        return out

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, module):
        """Add ``module`` at the end; returns self.  >>> wb.nn.Sequential().append(wb.nn.ReLU())  ->  Sequential( (0): ReLU() )"""
        self.add_module(str(len(self)), module)
        return self

    def insert(self, index, module):
        """Insert ``module`` before position ``index``.  >>> wb.nn.Sequential(wb.nn.ReLU()).insert(0, wb.nn.Tanh())  ->  Sequential( (0): Tanh() (1): ReLU() )"""
        if not isinstance(module, Module):
            raise AssertionError(f"module should be of type: {Module}")
        n = len(self._modules)
        if not -n <= index <= n:
            raise IndexError(f"Index out of range: {index}")
        if index < 0:
            index += n
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m
        _changed()
        return self

    def extend(self, sequential):
        """Append every module of an iterable.  >>> wb.nn.Sequential().extend([wb.nn.ReLU(), wb.nn.Tanh()])  ->  Sequential( (0): ReLU() (1): Tanh() )"""
        for m in sequential:
            self.append(m)
        return self

    def pop(self, key):
        """Remove and return the module at ``key``."""
        v = self[key]
        del self[key]
        return v

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input


class ModuleList(Module):
    """A list of modules, registered so their parameters are found.

    >>> import workbench as wb
    >>> layers = wb.nn.ModuleList([wb.nn.Linear(2, 2) for _ in range(3)])
    >>> len(list(layers.parameters()))
    6
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self += modules

    def _key(self, idx):
        return str(_index(idx, len(self), "ModuleList"))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return type(self)(list(self._modules.values())[idx])
        return self._modules[self._key(idx)]

    def __setitem__(self, idx, module):
        setattr(self, self._key(idx), module)

    def __delitem__(self, idx):
        if isinstance(idx, slice):
            for k in list(self._modules)[idx]:
                delattr(self, k)
        else:
            delattr(self, self._key(idx))
        mods = list(self._modules.values())
        self._modules.clear()
        for i, m in enumerate(mods):
            self._modules[str(i)] = m

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        out = ModuleList()
        for m in list(self) + list(other):
            out.append(m)
        return out

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def insert(self, index, module):
        """Insert ``module`` before ``index``.  >>> m = wb.nn.ModuleList([wb.nn.ReLU()]); m.insert(0, wb.nn.Tanh()); m  ->  ModuleList( (0): Tanh() (1): ReLU() )"""
        mods = list(self._modules.values())
        mods.insert(index, module)
        self._modules.clear()
        for i, m in enumerate(mods):
            self.add_module(str(i), m)

    def append(self, module):
        """Add ``module`` at the end; returns self.  >>> wb.nn.ModuleList().append(wb.nn.ReLU())  ->  ModuleList( (0): ReLU() )"""
        self.add_module(str(len(self)), module)
        return self

    def pop(self, key):
        """Remove and return the module at ``key``."""
        v = self[key]
        del self[key]
        return v

    def extend(self, modules):
        """Append every module of an iterable; returns self.  >>> wb.nn.ModuleList().extend([wb.nn.ReLU()])  ->  ModuleList( (0): ReLU() )"""
        if isinstance(modules, (Module, Tensor)) or not hasattr(modules, "__iter__"):
            raise TypeError("ModuleList.extend should be called with an iterable, but got " + type(modules).__name__)
        offset = len(self)
        for i, m in enumerate(modules):
            self.add_module(str(offset + i), m)
        return self

    def __repr__(self):
        # consecutive identical children are shown once, as "(0-2): 3 x Linear(...)", as PyTorch does
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        groups = []
        start = 0
        for i in range(1, len(reprs) + 1):
            if i == len(reprs) or reprs[i] != reprs[start]:
                groups.append((start, i - 1, reprs[start]))
                start = i
        lines = []
        for a, b, r in groups:
            if a == b:
                lines.append(f"({a}): " + _addindent(r, 2))
            else:
                lines.append(f"({a}-{b}): {b - a + 1} x " + _addindent(r, 2))
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class ModuleDict(Module):
    """A dict of modules, registered under their keys.

    >>> import workbench as wb
    >>> d = wb.nn.ModuleDict({"act": wb.nn.ReLU(), "fc": wb.nn.Linear(2, 2)})
    >>> list(d.keys())
    ['act', 'fc']
    """

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key):
        return self._modules[key]

    def __setitem__(self, key, module):
        self.add_module(key, module)

    def __delitem__(self, key):
        del self._modules[key]
        _changed()

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key):
        return key in self._modules

    def clear(self):
        """Remove every module."""
        self._modules.clear()
        _changed()

    def pop(self, key):
        """Remove and return the module under ``key``."""
        v = self[key]
        del self[key]
        return v

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules):
        """Add modules from a mapping or an iterable of (key, module) pairs."""
        if isinstance(modules, Module) or not hasattr(modules, "__iter__"):
            raise TypeError("ModuleDict.update should be called with an iterable of key/value pairs, but got "
                            + type(modules).__name__)
        items = modules.items() if hasattr(modules, "items") else modules
        for j, kv in enumerate(items):
            if not hasattr(kv, "__len__") or len(kv) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} should be an iterable of length 2")
            self[kv[0]] = kv[1]


class ParameterList(Module):
    """A list of Parameters (tensors are wrapped in Parameter on insertion).

    >>> import workbench as wb
    >>> ps = wb.nn.ParameterList([wb.nn.Parameter(wb.zeros(2)), wb.ones(3)])
    >>> [tuple(p.shape) for p in ps]
    [(2,), (3,)]
    """

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self += values

    def _key(self, idx):
        return str(_index(idx, self._size, "ParameterList"))

    def __getitem__(self, idx):
        if isinstance(idx, slice):
            return ParameterList([self[i] for i in range(self._size)[idx]])
        return getattr(self, self._key(idx))

    def __setitem__(self, idx, param):
        k = self._key(idx)
        if isinstance(param, Tensor) and not isinstance(param, Parameter):
            param = Parameter(param)
        setattr(self, k, param)

    def __len__(self):
        return self._size

    def __iter__(self):
        return (self[i] for i in range(self._size))

    def __iadd__(self, params):
        return self.extend(params)

    def append(self, value):
        """Add a parameter at the end; returns self."""
        k = str(self._size)
        self._size += 1
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, k, value)
        return self

    def extend(self, values):
        """Append every value of an iterable; returns self."""
        if isinstance(values, Tensor) or not hasattr(values, "__iter__"):
            raise TypeError("ParameterList.extend should be called with an iterable, but got " + type(values).__name__)
        for v in values:
            self.append(v)
        return self

    def extra_repr(self):
        lines = []
        for k, p in enumerate(self):
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                dev = "" if p.device.type == "cpu" else f" ({p.device})"
                lines.append(f"  ({k}): {kind} containing: [{p.dtype} of size {size}{dev}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)



class ParameterDict(Module):
    """A dict of Parameters (tensors are wrapped in Parameter on insertion).

    >>> import workbench as wb
    >>> pd = wb.nn.ParameterDict({"scale": wb.ones(1)})
    >>> [n for n, _ in pd.named_parameters()]
    ['scale']
    """

    def __init__(self, parameters=None):
        super().__init__()
        self._keys = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return getattr(self, key)

    def __setitem__(self, key, value):
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict keys must be strings, got {type(key).__name__}")
        self._keys[key] = None
        if isinstance(value, Tensor) and not isinstance(value, Parameter):
            value = Parameter(value)
        setattr(self, key, value)

    def __delitem__(self, key):
        del self._keys[key]
        delattr(self, key)

    def __len__(self):
        return len(self._keys)

    def __iter__(self):
        return iter(self._keys)

    def __contains__(self, key):
        return key in self._keys

    def keys(self):
        return self._keys.keys()

    def items(self):
        return ((k, self[k]) for k in self._keys)

    def values(self):
        return (self[k] for k in self._keys)

    def get(self, key, default=None):
        return self[key] if key in self else default

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def clear(self):
        for k in list(self._keys):
            del self[k]

    def update(self, parameters):
        """Add entries from a mapping or an iterable of (key, value) pairs."""
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for j, kv in enumerate(items):
            if not hasattr(kv, "__len__") or len(kv) != 2:
                raise ValueError(f"ParameterDict update sequence element #{j} should be an iterable of length 2")
            self[kv[0]] = kv[1]

    def extra_repr(self):
        lines = []
        for k, p in self.items():
            if isinstance(p, Tensor):
                size = "x".join(str(s) for s in p.size())
                kind = "Parameter" if isinstance(p, Parameter) else "Tensor"
                lines.append(f"  ({k}): {kind} containing: [{_tensor_typename(p)} of size {size}]")
            else:
                lines.append(f"  ({k}): Object of type: {type(p).__name__}")
        return "\n".join(lines)

