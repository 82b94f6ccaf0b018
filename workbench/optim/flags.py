"""PyTorch's optimizer option flags and what workbench does with each: the one table.

``FLAGS`` maps every boolean (or ``None``-defaulted speed) keyword of PyTorch's optimizers to how workbench
treats it: ``ACTED_ON`` (the update changes as PyTorch's does), ``NO_EFFECT`` (accepted and stored in
``param_groups``, so state dicts and code that reads them round-trip, but the update is the same either
way, and why that is right here) or ``REFUSED`` (a value raises, saying why). Which optimizer takes which
flag is its signature, PyTorch's; ``tests/optim/test_option_flags.py`` checks the signatures against this
table and PyTorch's, and that each flag does what the table says; docs/optim.md shows the table
(``workbench._option_flags.markdown``).

>>> FLAGS["foreach"][0], FLAGS["differentiable"][0]
('accepted, no effect', 'refused')
"""
from .._option_flags import ACTED_ON, NO_EFFECT, REFUSED

FLAGS = {
    "maximize": (ACTED_ON, "the gradient's sign is flipped before the update, so the step ascends"),
    "amsgrad": (ACTED_ON, "the running maximum of the second moment is kept and divides the step"),
    "nesterov": (ACTED_ON, "the update looks ahead along the momentum buffer"),
    "centered": (ACTED_ON, "the second moment is centred by the running mean of the gradient"),
    "decoupled_weight_decay": (ACTED_ON, "weight decay shrinks the parameter (AdamW-style) instead of adding to "
                                         "the gradient"),
    "foreach": (NO_EFFECT, "a speed choice in PyTorch (one multi-tensor kernel per group instead of a loop over the "
                           "parameters) with the same result; workbench's update is NumPy/CuPy array code either way "
                           "and already runs a group of same-dtype parameters as one flat buffer where it can"),
    "fused": (NO_EFFECT, "a speed choice in PyTorch (the whole update in one kernel), the same result up to rounding; "
                         "workbench has no fused optimizer kernels, so the array update runs. fused=True with "
                         "foreach=True raises RuntimeError, as in PyTorch"),
    "capturable": (NO_EFFECT, "in PyTorch it keeps the step count on the GPU so that a step can be captured in a CUDA "
                              "graph without a host sync; workbench keeps the count on the CPU and its steps read no "
                              "GPU value back, so there is no sync to avoid (PyTorch refuses it for CPU parameters at "
                              "step(); workbench runs the step)"),
    "differentiable": (REFUSED, "True raises RuntimeError at construction: the updates run in place on raw arrays "
                                "outside autograd, so no graph through step() could be built"),
}


def check_flags(differentiable=False, fused=None, foreach=None):
    """Refuse what ``FLAGS`` says is refused, and PyTorch's invalid combination fused + foreach.

    >>> check_flags(differentiable=False, fused=True)
    >>> check_flags(fused=True, foreach=True)
    Traceback (most recent call last):
    RuntimeError: `fused` and `foreach` cannot be `True` together.
    """
    if differentiable:
        raise RuntimeError("differentiable=True is not supported: workbench optimizers update parameters in place "
                           "outside autograd. Write the update in tensor ops if you need to differentiate through it.")
    if fused and foreach:
        raise RuntimeError("`fused` and `foreach` cannot be `True` together.")
