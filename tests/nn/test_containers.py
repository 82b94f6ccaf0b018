"""Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""
from collections import OrderedDict

import pytest

import workbench as wb
from workbench import nn


def test_sequential_indexing_and_editing():
    a, b, c = nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sl = s[1:]
    assert isinstance(sl, nn.Sequential) and list(sl) == [b, c] and list(sl._modules) == ["1", "2"]
    s.append(nn.Tanh())
    assert len(s) == 4
    s.insert(1, nn.Sigmoid())
    assert isinstance(s[1], nn.Sigmoid) and list(s._modules) == ["0", "1", "2", "3", "4"]
    del s[1]
    assert s[1] is b and list(s._modules) == ["0", "1", "2", "3"]
    s.extend([nn.Identity()])
    assert isinstance(s[4], nn.Identity)
    s[4] = nn.ReLU6()
    assert isinstance(s[4], nn.ReLU6)
    with pytest.raises(IndexError):
        s[10]
    named = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert [k for k, _ in named.named_children()] == ["fc", "act"]
    assert named(wb.ones(1, 2)).shape == (1, 2)
    assert len(s + named) == len(s) + 2


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    assert len(ml) == 3 and len(list(ml.parameters())) == 6
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert isinstance(ml[0], nn.Tanh) and isinstance(ml[-1], nn.ReLU)
    assert len(ml[1:3]) == 2
    del ml[0]
    assert isinstance(ml[0], nn.Linear)
    with pytest.raises(TypeError, match="iterable"):
        ml.extend(nn.ReLU())
    md = nn.ModuleDict({"a": nn.Linear(1, 1)})
    md["b"] = nn.ReLU()
    md.update([("c", nn.Tanh())])
    assert list(md.keys()) == ["a", "b", "c"] and "b" in md and len(md) == 3
    assert md.pop("b") is not None and "b" not in md
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]


def test_parameter_list_and_dict():
    pl = nn.ParameterList([wb.ones(2), nn.Parameter(wb.zeros(3))])
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    pl.append(wb.ones(1))
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2"]
    pd = nn.ParameterDict({"w": wb.ones(2)})
    pd["b"] = wb.zeros(1)
    assert list(pd.keys()) == ["w", "b"] and isinstance(pd["b"], nn.Parameter)
    assert [n for n, _ in pd.named_parameters()] == ["w", "b"]
    del pd["w"]
    assert list(pd) == ["b"]


def test_flatten_unflatten_identity():
    x = wb.randn(2, 3, 4, 5)
    assert nn.Flatten()(x).shape == (2, 60)
    assert nn.Flatten(0, 2)(x).shape == (24, 5)
    assert nn.Unflatten(1, (3, 20))(nn.Flatten()(x)).shape == (2, 3, 20)
    assert nn.Identity(3, a=1)(x) is x


def test_replacing_a_child_parameter_or_buffer_keeps_its_place():
    # as in PyTorch: seq[1] = GELU() runs where the ReLU ran, state_dict keeps its key order
    s = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    s[1] = nn.GELU()
    assert list(s._modules) == ["0", "1", "2"] and isinstance(s[1], nn.GELU)
    x = wb.randn(4, 2)
    assert wb.equal(s(x), s[2](s[1](s[0](x))))
    lin = nn.Linear(2, 2)
    lin.weight = nn.Parameter(wb.ones(2, 2))
    assert list(lin.state_dict()) == ["weight", "bias"]
    bn = nn.BatchNorm1d(2)
    keys = list(bn.state_dict())
    bn.running_mean = nn.Buffer(wb.ones(2))
    assert list(bn.state_dict()) == keys
