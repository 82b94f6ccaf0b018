"""Padding modules (constant, zero, reflection, replication, circular) over nn.functional.pad."""
from .. import functional as F
from ..module import Module
from .utils import _ntuple


class _PadNd(Module):
    _n = 1
    _mode = "constant"

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = _ntuple(2 * self._n)(padding)
        self.value = value

    def forward(self, input):
        if self._mode == "constant":
            return F.pad(input, self.padding, "constant", self.value)
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self):
        if self._mode == "constant" and not isinstance(self, _ZeroPadNd):
            return f"padding={self.padding}, value={self.value}"
        return f"{self.padding}"


class _ZeroPadNd(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


def _make(name, n, mode, base, doc):
    if base is _PadNd and mode == "constant":
        def __init__(self, padding, value):
            _PadNd.__init__(self, padding, value)
    elif base is _ZeroPadNd:
        def __init__(self, padding):
            _ZeroPadNd.__init__(self, padding)
    else:
        def __init__(self, padding):
            _PadNd.__init__(self, padding)
    return type(name, (base,), {"_n": n, "_mode": mode, "__init__": __init__, "__doc__": doc,
                                "__module__": __name__})


ConstantPad1d = _make("ConstantPad1d", 1, "constant", _PadNd, "Pad the last dim with a value.  >>> wb.nn.ConstantPad1d(2, 3.5)  ->  ConstantPad1d(padding=(2, 2), value=3.5)")
ConstantPad2d = _make("ConstantPad2d", 2, "constant", _PadNd, "Pad the last 2 dims with a value.  >>> wb.nn.ConstantPad2d((1, 1, 2, 0), 3.5)  ->  ConstantPad2d(padding=(1, 1, 2, 0), value=3.5)")
ConstantPad3d = _make("ConstantPad3d", 3, "constant", _PadNd, "Pad the last 3 dims with a value.  >>> wb.nn.ConstantPad3d(1, 0.0)  ->  ConstantPad3d(padding=(1, 1, 1, 1, 1, 1), value=0.0)")
ZeroPad1d = _make("ZeroPad1d", 1, "constant", _ZeroPadNd, "Pad the last dim with zeros.  >>> wb.nn.ZeroPad1d(2)  ->  ZeroPad1d((2, 2))")
ZeroPad2d = _make("ZeroPad2d", 2, "constant", _ZeroPadNd, "Pad the last 2 dims with zeros.  >>> wb.nn.ZeroPad2d(1)  ->  ZeroPad2d((1, 1, 1, 1))")
ZeroPad3d = _make("ZeroPad3d", 3, "constant", _ZeroPadNd, "Pad the last 3 dims with zeros.  >>> wb.nn.ZeroPad3d(1)  ->  ZeroPad3d((1, 1, 1, 1, 1, 1))")
ReflectionPad1d = _make("ReflectionPad1d", 1, "reflect", _PadNd, "Reflect-pad the last dim.  >>> wb.nn.ReflectionPad1d(2)  ->  ReflectionPad1d((2, 2))")
ReflectionPad2d = _make("ReflectionPad2d", 2, "reflect", _PadNd, "Reflect-pad the last 2 dims.  >>> wb.nn.ReflectionPad2d(1)  ->  ReflectionPad2d((1, 1, 1, 1))")
ReflectionPad3d = _make("ReflectionPad3d", 3, "reflect", _PadNd, "Reflect-pad the last 3 dims.  >>> wb.nn.ReflectionPad3d(1)  ->  ReflectionPad3d((1, 1, 1, 1, 1, 1))")
ReplicationPad1d = _make("ReplicationPad1d", 1, "replicate", _PadNd, "Edge-pad the last dim.  >>> wb.nn.ReplicationPad1d(2)  ->  ReplicationPad1d((2, 2))")
ReplicationPad2d = _make("ReplicationPad2d", 2, "replicate", _PadNd, "Edge-pad the last 2 dims.  >>> wb.nn.ReplicationPad2d(1)  ->  ReplicationPad2d((1, 1, 1, 1))")
ReplicationPad3d = _make("ReplicationPad3d", 3, "replicate", _PadNd, "Edge-pad the last 3 dims.  >>> wb.nn.ReplicationPad3d(1)  ->  ReplicationPad3d((1, 1, 1, 1, 1, 1))")
CircularPad1d = _make("CircularPad1d", 1, "circular", _PadNd, "Wrap-pad the last dim.  >>> wb.nn.CircularPad1d(2)  ->  CircularPad1d((2, 2))")
CircularPad2d = _make("CircularPad2d", 2, "circular", _PadNd, "Wrap-pad the last 2 dims.  >>> wb.nn.CircularPad2d(1)  ->  CircularPad2d((1, 1, 1, 1))")
CircularPad3d = _make("CircularPad3d", 3, "circular", _PadNd, "Wrap-pad the last 3 dims.  >>> wb.nn.CircularPad3d(1)  ->  CircularPad3d((1, 1, 1, 1, 1, 1))")
