"""Classroom text: the chain rule each backward step applies, written out with the numbers substituted.

For ``o = tanh(n)`` the step that sends the gradient to ``n`` reads::

    o = tanh(n)
    dL/dn = dL/do · (1 − o²) = 0.5 · (1 − 0.7071²) = 0.25

Numbers appear where the tensors involved hold a single element; otherwise the rule is written with
names, and a gradient whose shape differs from the output's says why (broadcasting summed back, a
reduction spread back). Only the node's saved tensors and the step's gradients are read.
"""
import re

from ..autograd.function import _Out

# op -> (forward formula, the local derivative d(out)/d(input) per input position)
# in terms of a, b (the inputs) and out; None: the rule is a whole formula, not a factor
RULES = {
    "add": ("out = a + b", ["1", "1"]),
    "sub": ("out = a − b", ["1", "−1"]),
    "mul": ("out = a · b", ["b", "a"]),
    "div": ("out = a / b", ["1 / b", "−a / b²"]),
    "neg": ("out = −a", ["−1"]),
    "exp": ("out = exp(a)", ["out"]),
    "log": ("out = log(a)", ["1 / a"]),
    "sqrt": ("out = √a", ["1 / (2 · out)"]),
    "tanh": ("out = tanh(a)", ["1 − out²"]),
    "sigmoid": ("out = σ(a)", ["out · (1 − out)"]),
    "relu": ("out = max(a, 0)", ["[out > 0]"]),
    "sin": ("out = sin(a)", ["cos(a)"]),
    "cos": ("out = cos(a)", ["−sin(a)"]),
    "abs": ("out = |a|", ["sign(a)"]),
    "pow": ("out = a^p", [None]),
    "matmul": ("out = a @ b", [None, None]),
    "mm": ("out = a @ b", [None, None]),
    "addmm": ("out = bias + a @ b", [None, None, None]),
    "linear": ("out = x @ Wᵀ + bias", [None, None, None]),
    "sum": ("out = sum(a)", [None]),
    "mean": ("out = mean(a) = sum(a) / n", [None]),
    "reshape": ("out = a viewed with another shape", [None]),
    "view": ("out = a viewed with another shape", [None]),
    "t": ("out = aᵀ", [None]),
    "transpose": ("out = a with two dims swapped", [None]),
    "expand": ("out = a broadcast to a bigger shape", [None]),
    "softmax": ("out = exp(a) / sum(exp(a))", [None]),
    "log_softmax": ("out = a − log(sum(exp(a)))", [None]),
    "mse_loss": ("out = mean((a − b)²)", [None, None]),
    "cross_entropy": ("out = −mean(log softmax(a)[target])", [None]),
}

# the whole rule where the gradient is not "incoming times a local factor" elementwise
WHOLE = {
    "pow": ["dL/da = dL/dout · p · a^(p−1)"],
    "matmul": ["dL/da = dL/dout @ bᵀ", "dL/db = aᵀ @ dL/dout"],
    "mm": ["dL/da = dL/dout @ bᵀ", "dL/db = aᵀ @ dL/dout"],
    "addmm": ["dL/dbias = dL/dout summed over the rows", "dL/da = dL/dout @ bᵀ", "dL/db = aᵀ @ dL/dout"],
    "linear": ["dL/dx = dL/dout @ W", "dL/dW = dL/doutᵀ @ x", "dL/dbias = dL/dout summed over the batch"],
    "sum": ["dL/da = dL/dout, copied to every element of a"],
    "mean": ["dL/da = dL/dout / n, copied to every element of a"],
    "reshape": ["dL/da = dL/dout reshaped back"],
    "view": ["dL/da = dL/dout reshaped back"],
    "t": ["dL/da = (dL/dout)ᵀ"],
    "transpose": ["dL/da = dL/dout with the dims swapped back"],
    "expand": ["dL/da = dL/dout summed over the broadcast dims"],
    "softmax": ["dL/da = out · (dL/dout − sum(dL/dout · out))"],
    "log_softmax": ["dL/da = dL/dout − softmax(a) · sum(dL/dout)"],
    "mse_loss": ["dL/da = dL/dout · 2 (a − b) / n", "dL/db = −dL/dout · 2 (a − b) / n"],
    "cross_entropy": ["dL/da = dL/dout · (softmax(a) − onehot(target)) / n"],
}
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
# an operand's name, also right after "dL/d" and before "²" (one pass, so a name put in is not renamed again)
_TOKEN = re.compile(r"(?:(?<=dL/d)|(?<![A-Za-z_.]))(a|b|out|x|W|bias)(?![A-Za-z_])")


def subscript(node_id):
    """'n12' -> '₁₂': the node id as a subscript, to tell two inputs of the same name apart.

    >>> "mul" + subscript("n4")
    'mul₄'
    """
    return "".join(c for c in str(node_id) if c.isdigit()).translate(_SUB)


def _fmt(x):
    v = f"{x:.4g}"
    return v.replace("-", "−")


def _num(x):
    """The value of a one-element tensor or array as a float, else None."""
    if x is None:
        return None
    try:
        data = x.detach()._data if hasattr(x, "detach") else x
        if data.size != 1:
            return None
        return float(data.reshape(()).real)
    except Exception:  # ints, bools, freed storage: no number, the rule still stands
        return None


def _operands(node, arity):
    # ops save by position, None where a value is not needed: the inputs, then the output (marked
    # _Out, or a plain tensor on the scalar fast path)
    vals = {}
    for k, entry in enumerate(node._saved or ()):
        e = entry[0] if type(entry) is tuple else entry
        if e is None:
            continue
        if type(e) is _Out:
            if e.i == 0:
                vals["out"] = _num(e.data)
        elif k < arity:
            vals["ab"[k]] = _num(e)
        elif k == arity:
            vals["out"] = _num(e)
    return vals


def _shape(s):
    return "[" + ", ".join(str(int(d)) for d in s) + "]"


def _shape_note(who, in_shape, out_shape):
    """Why dL/d(input) has the input's shape when the output's differs (broadcast or reduction)."""
    if in_shape is None or out_shape is None or tuple(in_shape) == tuple(out_shape):
        return None
    i, o = tuple(in_shape), tuple(out_shape)
    if len(i) <= len(o):
        lead = len(o) - len(i)
        dims = list(range(lead)) + [lead + k for k, d in enumerate(i) if d == 1 and o[lead + k] != 1]
        if all(d == o[lead + k] for k, d in enumerate(i) if d != 1) and dims:
            which = "dim " + str(dims[0]) if len(dims) == 1 else "dims " + ", ".join(map(str, dims))
            return f"   summed over {which}: {who} was broadcast from {_shape(i)} to {_shape(o)}"
    return f"   spread back from {_shape(o)} to {who}'s shape {_shape(i)}: the forward reduced {who}"


def _paren(expr):
    # a name, a number or an already bracketed term stands alone; anything else gets parentheses
    if re.fullmatch(r"[\w.²ᵀ\[\]]+|−?[\d.]+|\([^()]*\)", expr):
        return expr
    return f"({expr})"


def _substitute(expr, vals, names):
    """``expr`` with each operand's number in place, or None when one of them is not a single number."""
    missing = []

    def sub(m):
        v = vals.get(m.group(0))
        if v is None:
            missing.append(m.group(0))
            return m.group(0)
        t = _fmt(v)
        return f"({t})" if t.startswith("−") else t

    if expr == "[out > 0]":  # an indicator: its value is the number
        out = vals.get("out")
        return None if out is None else ("1" if out > 0 else "0")
    text = _TOKEN.sub(sub, expr)
    return None if missing else text


def _rename(text, names):
    return _TOKEN.sub(lambda m: names.get(m.group(0), m.group(0)), text)


def derivation(node, grad_outputs, grad_inputs, labels, out_label="out", in_shapes=None):
    """The classroom text for one backward step.

    ``labels`` names the node's tensor inputs in order (unambiguous names), ``out_label`` its output,
    ``in_shapes`` the inputs' shapes (the engine sums a broadcast gradient down after the step).

    >>> import workbench as wb
    >>> n = wb.tensor(0.8814, requires_grad=True)
    >>> o = n.tanh()
    >>> print(derivation(o.grad_fn, (wb.tensor(0.5),), (wb.tensor(0.25),), ["n"], "o"))
    o = tanh(n)
    dL/dn = dL/do · (1 − o²) = 0.5 · (1 − 0.7071²) = 0.25
    """
    op = node._op or ""
    g = _num(grad_outputs[0]) if grad_outputs else None
    out_shape = tuple(grad_outputs[0].shape) if grad_outputs and grad_outputs[0] is not None else None
    if op == "AccumulateGrad":
        who = labels[0] if labels else "leaf"
        return f"{who}.grad += dL/d{who}" + (f" = {_fmt(g)}" if g is not None else "") + \
            "\n   a leaf sums every gradient that reaches it"
    keys = ["a", "b", "bias"] if op != "linear" else ["x", "W", "bias"]
    if op == "addmm":
        keys = ["bias", "a", "b"]
    names = {"out": out_label}
    for k, key in enumerate(keys):
        names[key] = labels[k] if k < len(labels) else key
    rule = RULES.get(op)
    p = getattr(node, "sb", None) if op == "pow" else None
    if isinstance(p, (int, float)) and not isinstance(p, bool):  # x ** 2: the exponent is a number
        pt = _fmt(p)
        rule = (f"out = a^{pt}", [f"{pt} · a" if p == 2 else f"{pt} · a^{_fmt(p - 1)}"])
    if rule is None:
        lines = [f"{out_label} = {op or node.name()}(" + ", ".join(labels) + ")",
                 f"dL/d(each input) = the vector-Jacobian product of {op or node.name()} with dL/d{out_label}"]
        for k, gi in enumerate(grad_inputs):
            v = _num(gi)
            if v is not None and k < len(labels):
                lines.append(f"dL/d{labels[k]} = {_fmt(v)}")
        return "\n".join(lines)
    fwd, locals_ = rule
    vals = _operands(node, len(locals_))
    lines = [_rename(fwd, names)]
    for k, gi in enumerate(grad_inputs):
        if gi is None or k >= len(locals_):
            continue
        who = labels[k] if k < len(labels) else f"input{k}"
        v = _num(gi)
        local = locals_[k]
        if local is None:
            whole = WHOLE[op]
            text = _rename(whole[k] if k < len(whole) else whole[-1], names)
            if v is not None:
                text += f" = {_fmt(v)}"
        else:
            text = f"dL/d{who} = dL/d{out_label} · {_paren(_rename(local, names))}"
            sub = _substitute(local, vals, names)
            if g is not None and sub is not None and v is not None:
                text += f" = {_fmt(g)} · {_paren(sub)} = {_fmt(v)}"
            elif v is not None:
                text += f" = {_fmt(v)}"
        lines.append(text)
        # elementwise ops broadcast, reductions spread back: either way dL/d(input) has the input's shape
        shape = in_shapes[k] if in_shapes and k < len(in_shapes) and in_shapes[k] is not None else gi.shape
        note = _shape_note(who, shape, out_shape) if local is not None or op in ("sum", "mean") else None
        if note:
            lines.append(note)
    return "\n".join(lines)
