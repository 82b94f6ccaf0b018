"""Classroom text: the local derivative each backward step applies, with the numbers substituted.

For ``mul`` the step that sends gradients to ``a`` and ``b`` reads::

    out = a * b
    d(out)/da = b   ->  dL/da = dL/dout * b = 2 * -3 = -6

Numbers appear where the tensors involved hold a single element; otherwise the rule is written with
names and shapes only. Only the saved tensors of the node and the step's gradients are read.
"""
import re

# op -> (forward formula, local derivative per input position, what the operands are called)
#   operands: "ab" = saved (a, b); "a" = saved input; "out" = saved output; "" = none needed
RULES = {
    "add": ("out = a + b", ["d(out)/da = 1", "d(out)/db = 1"], ""),
    "sub": ("out = a - b", ["d(out)/da = 1", "d(out)/db = -1"], ""),
    "mul": ("out = a * b", ["d(out)/da = b", "d(out)/db = a"], "ab"),
    "div": ("out = a / b", ["d(out)/da = 1 / b", "d(out)/db = -a / b**2"], "ab"),
    "pow": ("out = a ** p", ["d(out)/da = p * a**(p-1)", "d(out)/dp = out * log(a)"], ""),
    "neg": ("out = -a", ["d(out)/da = -1"], ""),
    "exp": ("out = exp(a)", ["d(out)/da = exp(a) = out"], "out"),
    "log": ("out = log(a)", ["d(out)/da = 1 / a"], "a"),
    "sqrt": ("out = sqrt(a)", ["d(out)/da = 1 / (2 * out)"], "out"),
    "tanh": ("out = tanh(a)", ["d(out)/da = 1 - out**2"], "out"),
    "sigmoid": ("out = sigmoid(a)", ["d(out)/da = out * (1 - out)"], "out"),
    "relu": ("out = relu(a) = max(a, 0)", ["d(out)/da = 1 where a > 0, else 0"], ""),
    "sin": ("out = sin(a)", ["d(out)/da = cos(a)"], "a"),
    "cos": ("out = cos(a)", ["d(out)/da = -sin(a)"], "a"),
    "abs": ("out = |a|", ["d(out)/da = sign(a)"], ""),
    "matmul": ("out = A @ B", ["dL/dA = dL/dout @ B^T", "dL/dB = A^T @ dL/dout"], ""),
    "mm": ("out = A @ B", ["dL/dA = dL/dout @ B^T", "dL/dB = A^T @ dL/dout"], ""),
    "addmm": ("out = bias + A @ B", ["dL/dbias = dL/dout summed over broadcast rows", "dL/dA = dL/dout @ B^T",
                                     "dL/dB = A^T @ dL/dout"], ""),
    "linear": ("out = x @ W^T + b", ["dL/dx = dL/dout @ W", "dL/dW = dL/dout^T @ x",
                                     "dL/db = dL/dout summed over the batch"], ""),
    "sum": ("out = sum(a)", ["d(out)/da = 1 for every element (dL/dout is broadcast back to a's shape)"], ""),
    "mean": ("out = mean(a) = sum(a) / n", ["d(out)/da = 1 / n for every element"], ""),
    "reshape": ("out = a viewed with another shape", ["dL/da = dL/dout reshaped back"], ""),
    "view": ("out = a viewed with another shape", ["dL/da = dL/dout reshaped back"], ""),
    "t": ("out = a^T", ["dL/da = (dL/dout)^T"], ""),
    "transpose": ("out = a with two dims swapped", ["dL/da = dL/dout with the dims swapped back"], ""),
    "expand": ("out = a broadcast to a bigger shape", ["dL/da = dL/dout summed over the broadcast dims"], ""),
    "softmax": ("out = exp(a) / sum(exp(a))", ["dL/da = out * (dL/dout - sum(dL/dout * out))"], ""),
    "log_softmax": ("out = a - log(sum(exp(a)))", ["dL/da = dL/dout - softmax(a) * sum(dL/dout)"], ""),
    "mse_loss": ("out = mean((a - b)**2)", ["d(out)/da = 2 (a - b) / n", "d(out)/db = -2 (a - b) / n"], ""),
    "cross_entropy": ("out = -mean(log softmax(a)[target])", ["d(out)/da = (softmax(a) - onehot(target)) / n"], ""),
}


def _num(x):
    if x is None:
        return None
    try:
        if x.numel() != 1:
            return None
        v = float(x.detach()._data.reshape(()).real)
    except Exception:  # ints, bools, freed storage: no number, the rule still stands
        return None
    return f"{v:.4g}"


def _saved(node):
    try:
        return node.saved_tensors if node._saved is not None else ()
    except RuntimeError:  # freed or modified in place: the rule is shown without numbers
        return ()


def derivation(node, grad_outputs, grad_inputs, labels, out_label="out"):
    """The classroom text for one backward step.

    ``labels`` names the node's tensor inputs in order (the snapshot's node names), ``out_label`` its
    output.

    >>> import workbench as wb
    >>> a = wb.tensor(2.0, requires_grad=True); b = wb.tensor(-3.0, requires_grad=True)
    >>> out = a * b
    >>> g = wb.tensor(1.0)
    >>> print(derivation(out.grad_fn, (g,), (g * b, g * a), ["a", "b"]))
    out = a * b
    dL/da = dL/dout * d(out)/da = dL/dout * b = 1 * -3 = -3
    dL/db = dL/dout * d(out)/db = dL/dout * a = 1 * 2 = 2
    """
    op = node._op or ""
    if op == "AccumulateGrad":
        g = _num(grad_outputs[0]) if grad_outputs else None
        return f"{labels[0] if labels else 'leaf'}.grad += dL/d{labels[0] if labels else 'leaf'}" + \
            (f" = {g}" if g is not None else "") + "   (a leaf sums every gradient that reaches it)"
    rule = RULES.get(op)
    g = _num(grad_outputs[0]) if grad_outputs else None
    if rule is None:
        lines = [f"{out_label} = {op}(" + ", ".join(labels) + ")",
                 f"{node.name()} sends dL/d(input) = vector-Jacobian product of {op} with dL/d{out_label}"]
        for k, gi in enumerate(grad_inputs):
            v = _num(gi)
            if v is not None and k < len(labels):
                lines.append(f"dL/d{labels[k]} = {v}")
        return "\n".join(lines)
    fwd, locals_, operands = rule
    names = {"a": labels[0] if labels else "a", "b": labels[1] if len(labels) > 1 else "b"}
    vals = {}
    saved = _saved(node) if operands else ()
    if operands == "ab":
        for k, key in enumerate("ab"):
            if k < len(saved):
                vals[key] = _num(saved[k])
    elif operands in ("a", "out") and saved:
        vals[operands] = _num(saved[0])
    lines = [_rename(fwd, names, out_label)]
    for k, gi in enumerate(grad_inputs):
        if gi is None or k >= len(locals_):
            continue
        local = locals_[k]
        who = labels[k] if k < len(labels) else f"input{k}"
        v = _num(gi)
        if local.startswith("d(out)/d"):
            rhs = local.split("=", 1)[1].strip().split(" = ")[-1]
            text = f"dL/d{who} = dL/d{out_label} * d({out_label})/d{who} = dL/d{out_label} * {_rename(rhs, names, out_label)}"
            sub = _substitute(rhs, vals)
            if g is not None and sub is not None and v is not None:
                text += f" = {g} * {sub} = {v}"
            elif v is not None:
                text += f" = {v}"
        else:
            text = _rename(local, names, out_label) + (f" = {v}" if v is not None else "")
        lines.append(text)
    return "\n".join(lines)


def _rename(text, names, out_label):
    def sub(m):
        w = m.group(0)
        if w == "out":
            return out_label
        return names.get(w, w)

    return re.sub(r"\b(a|b|out)\b", sub, text)


def _substitute(rhs, vals):
    # only the plain operand rules get numbers ("b", "a", "out", "1", "-1", "1 / b"...)
    if rhs in ("1", "-1"):
        return rhs
    if rhs in vals:
        return vals[rhs]
    if rhs == "1 / b" and vals.get("b") is not None:
        return f"(1 / {vals['b']})"
    if rhs == "1 / a" and vals.get("a") is not None:
        return f"(1 / {vals['a']})"
    if rhs == "1 - out**2" and vals.get("out") is not None:
        return f"(1 - {vals['out']}**2)"
    if rhs == "out * (1 - out)" and vals.get("out") is not None:
        return f"{vals['out']} * (1 - {vals['out']})"
    if rhs == "1 / (2 * out)" and vals.get("out") is not None:
        return f"1 / (2 * {vals['out']})"
    if rhs == "-a / b**2" and vals.get("a") is not None and vals.get("b") is not None:
        return f"(-{vals['a']} / {vals['b']}**2)"
    if rhs == "exp(a) = out" and vals.get("out") is not None:
        return vals["out"]
    return None
