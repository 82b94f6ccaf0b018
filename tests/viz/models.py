"""A tiny module system for the viz tests (the contract nn.Module keeps: named_parameters,
named_modules, and the dotted module scope pushed on graph.SCOPE while a module runs), so these
tests depend only on the tape, not on workbench.nn."""
import workbench as wb
from workbench.autograd import graph


class Mod:
    def __init__(self):
        self._children = {}
        self._params = {}
        self.path = ""

    def add(self, name, child):
        self._children[name] = child
        return child

    def param(self, name, t):
        self._params[name] = t.requires_grad_()
        return t

    def named_modules(self, prefix=""):
        yield prefix, self
        for k, c in self._children.items():
            yield from c.named_modules(f"{prefix}.{k}" if prefix else k)

    def named_parameters(self):
        for path, m in self.named_modules():
            for k, p in m._params.items():
                yield (f"{path}.{k}" if path else k), p

    def parameters(self):
        return [p for _, p in self.named_parameters()]

    def __call__(self, *a):
        tok = graph.SCOPE.set(self.path)
        try:
            return self.forward(*a)
        finally:
            graph.SCOPE.reset(tok)

    def finish(self):
        for path, m in self.named_modules():
            m.path = path
        return self


class Linear(Mod):
    def __init__(self, i, o, seed=0):
        super().__init__()
        g = wb.Generator().manual_seed(seed) if hasattr(wb, "Generator") else None
        self.weight = self.param("weight", wb.randn(o, i, generator=g) * (1.0 / i ** 0.5))
        self.bias = self.param("bias", wb.zeros(o))

    def forward(self, x):
        return x @ self.weight.t() + self.bias


class ReLU(Mod):
    def forward(self, x):
        return wb.relu(x)


class Sequential(Mod):
    def __init__(self, *mods):
        super().__init__()
        for k, m in enumerate(mods):
            self.add(str(k), m)

    def forward(self, x):
        for m in self._children.values():
            x = m(x)
        return x


class MLP(Mod):
    """encoder = Sequential(Linear, ReLU), head = Linear."""

    def __init__(self, i=3, h=4, o=2, name="encoder"):
        super().__init__()
        self.encoder = self.add(name, Sequential(Linear(i, h, 1), ReLU()))
        self.head = self.add("head", Linear(h, o, 2))
        self.finish()

    def forward(self, x):
        return self.head(self.encoder(x))


def mse(a, b):
    return ((a - b) ** 2).mean()
