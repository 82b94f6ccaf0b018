"""Every optimizer refuses an out-of-range constructor argument with PyTorch's ValueError, word for word."""
import inspect

import pytest
import torch

import workbench as wb

# (optimizer, argument, bad value): each argument that PyTorch range-checks, one bad value at a time.
BAD = [
    *[(name, "lr", -1) for name in ("SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad", "Adadelta",
                                    "RMSprop", "Rprop", "ASGD", "LBFGS", "Adafactor", "Muon")],
    ("SGD", "momentum", -0.5), ("SGD", "weight_decay", -1e-4),
    *[(name, arg, bad) for name in ("Adam", "AdamW", "Adamax", "NAdam", "RAdam")
      for arg, bad in (("eps", -1e-8), ("betas", (1.0, 0.999)), ("betas", (0.9, -0.1)), ("weight_decay", -0.1))],
    ("NAdam", "momentum_decay", -1.0),
    ("Adagrad", "lr_decay", -1.0), ("Adagrad", "weight_decay", -1.0), ("Adagrad", "eps", -1.0),
    ("Adagrad", "initial_accumulator_value", -1.0),
    ("Adadelta", "rho", 1.5), ("Adadelta", "rho", -0.1), ("Adadelta", "eps", -1.0), ("Adadelta", "weight_decay", -1.0),
    ("RMSprop", "eps", -1.0), ("RMSprop", "momentum", -1.0), ("RMSprop", "weight_decay", -1.0),
    ("RMSprop", "alpha", -1.0),
    ("Rprop", "etas", (1.2, 0.5)), ("Rprop", "etas", (0.0, 1.2)),
    ("ASGD", "weight_decay", -1.0),
    ("Adafactor", "beta2_decay", 0.5), ("Adafactor", "eps", (-1.0, 1e-3)), ("Adafactor", "eps", (None, -1.0)),
    ("Adafactor", "d", 0.5), ("Adafactor", "weight_decay", -1.0),
    ("Muon", "momentum", -1.0), ("Muon", "weight_decay", -1.0),
]


def _message(cls, param, arg, bad):
    with pytest.raises(ValueError) as info:
        cls([param], **{arg: bad})
    return str(info.value)


@pytest.mark.parametrize("name,arg,bad", BAD, ids=[f"{n}-{a}-{b}" for n, a, b in BAD])
def test_message_matches_torch(name, arg, bad):
    expected = _message(getattr(torch.optim, name), torch.nn.Parameter(torch.ones(2, 2)), arg, bad)
    assert _message(getattr(wb.optim, name), wb.nn.Parameter(wb.ones(2, 2)), arg, bad) == expected


def test_every_checked_argument_is_covered():
    """Every optimizer argument that torch refuses at some value is in BAD, so a new check cannot go untested:
    each numeric keyword of each torch optimizer is tried at -1 and any ValueError must be listed."""
    listed = {(n, a) for n, a, _ in BAD}
    for name in {n for n, _, _ in BAD}:
        for arg, p in inspect.signature(getattr(wb.optim, name)).parameters.items():
            if isinstance(p.default, (int, float)) and not isinstance(p.default, bool):
                try:
                    getattr(torch.optim, name)([torch.nn.Parameter(torch.ones(2, 2))], **{arg: -1.0})
                except ValueError:
                    assert (name, arg) in listed, f"torch.optim.{name} refuses {arg}=-1; add it to BAD"
                except (TypeError, RuntimeError):
                    pass
