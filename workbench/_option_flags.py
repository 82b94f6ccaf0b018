"""The vocabulary and the rendering of workbench's option-flag tables: for each PyTorch keyword flag of a
family of functions (the optimizers: ``workbench/optim/flags.py``; gradcheck: ``workbench/autograd/_gradcheck.py``)
whether workbench acts on it, accepts it with no effect (and why that is right here), or refuses a value.

>>> table = {"maximize": (ACTED_ON, "the step ascends")}
>>> def step(params, *, maximize=False): ...
>>> flags_of(step, table)
['maximize']
"""
import inspect

ACTED_ON, NO_EFFECT, REFUSED = "acted on", "accepted, no effect", "refused"
_SHORT = {ACTED_ON: "acted on", NO_EFFECT: "no effect"}


def flags_of(fn, table):
    """The keys of ``table`` that ``fn`` (a function or class) takes, in its signature's order.

    >>> def f(x, *, fast_mode=False, eps=1e-6): ...
    >>> flags_of(f, {"fast_mode": (NO_EFFECT, "speed")})
    ['fast_mode']
    """
    return [n for n in inspect.signature(fn).parameters if n in table]


def markdown(fns, table):
    """A markdown table with one row per function or class and one column per flag of ``table``, then
    each flag's treatment and reason. A refused flag's cell names the refused value: the default's opposite.

    >>> def f(x, *, fast_mode=False): ...
    >>> print(markdown([f], {"fast_mode": (NO_EFFECT, "a speed choice")}))
    | | `fast_mode` |
    |---|---|
    | `f` | no effect |
    <BLANKLINE>
    | flag | workbench | why |
    |---|---|---|
    | `fast_mode` | accepted, no effect | a speed choice |
    <BLANKLINE>
    """
    out = ["| | " + " | ".join(f"`{f}`" for f in table) + " |", "|---|" + "---|" * len(table)]
    for fn in fns:
        params = inspect.signature(fn).parameters
        cells = [("·" if f not in params else f"refused ({not params[f].default})" if table[f][0] == REFUSED
                  else _SHORT[table[f][0]]) for f in table]
        out.append(f"| `{fn.__name__}` | " + " | ".join(cells) + " |")
    out += ["", "| flag | workbench | why |", "|---|---|---|"]
    out += [f"| `{f}` | {what} | {why} |" for f, (what, why) in table.items()]
    return "\n".join(out) + "\n"
