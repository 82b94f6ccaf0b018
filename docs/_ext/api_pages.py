"""Writes docs/api/: one page per public module, an entry for every public name, from its docstring.

A module's public names are its ``__all__`` (else its names without a leading underscore), less what it
merely imported from another package, plus what the PyTorch sweep finds there (names a module serves
lazily, ``workbench.save``). ``workbench.Tensor`` gets a page of its own, every method on it.
"""
import importlib
import inspect
from pathlib import Path

import public_names
import workbench

# the order of the reference; a module missing here is not in the API reference
MODULES = [
    "workbench", "workbench.nn", "workbench.nn.functional", "workbench.nn.init", "workbench.nn.utils",
    "workbench.nn.parallel", "workbench.optim", "workbench.optim.lr_scheduler", "workbench.utils.data",
    "workbench.autograd", "workbench.autograd.functional", "workbench.func", "workbench.linalg",
    "workbench.fft", "workbench.special", "workbench.signal.windows", "workbench.distributions",
    "workbench.distributed", "workbench.amp", "workbench.cuda", "workbench.compiler", "workbench.library",
    "workbench.viz", "workbench.multiprocessing", "workbench.serialization", "workbench.onnx",
    "workbench.jit", "workbench.utils.checkpoint", "workbench.utils.tensorboard",
    "workbench.utils.cpp_extension", "workbench.profiler",
]
OUT = Path(__file__).resolve().parents[1] / "api"


def _directive(obj):
    if inspect.isclass(obj):
        return "autoclass"
    if callable(obj):
        return "autofunction"
    return "autodata"


def module_page(modname, names, documented):
    """``documented``: ids of the classes an earlier page holds (autodoc registers a class under its
    defining module's name too, so a second full entry would be a duplicate); a later page lists it
    unindexed."""
    title = f"``{modname}``"
    lines = [title, "=" * len(title), "", f".. automodule:: {modname}", "   :no-members:", "",
             f".. currentmodule:: {modname}", "", ".. autosummary::", "   :nosignatures:", ""]
    lines += [f"   {n}" for n in names]
    lines.append("")
    mod = importlib.import_module(modname)
    for n in names:
        obj = getattr(mod, n)
        if modname == "workbench" and n == "Tensor":
            continue  # its own page, tensor.rst
        lines.append(f".. {_directive(obj)}:: {n}")
        if inspect.isclass(obj):
            if id(obj) in documented:
                lines.append("   :no-index:")
            else:
                lines.append("   :members:")
                documented.add(id(obj))
        lines.append("")
    return "\n".join(lines)


def tensor_page():
    return "\n".join(["``workbench.Tensor``", "=" * 20, "", ".. currentmodule:: workbench", "",
                      ".. autoclass:: Tensor", "   :members:", "   :undoc-members:", ""])


def index_page():
    lines = ["API reference", "=============", "",
             "Every public name of these modules, generated from its docstring. The "
             ":doc:`PyTorch compatibility page <../compatibility>` says which of PyTorch's names each has.", "",
             ".. toctree::", "   :maxdepth: 1", "", "   tensor"]
    lines += [f"   {m}" for m in MODULES]
    return "\n".join(lines) + "\n"


def _write(path, text):
    if not path.exists() or path.read_text() != text:  # unchanged pages keep their time: no rebuild
        path.write_text(text)


def generate(app):
    OUT.mkdir(exist_ok=True)
    written = {"index.rst", "tensor.rst"}
    _write(OUT / "index.rst", index_page())
    _write(OUT / "tensor.rst", tensor_page())
    documented = {id(workbench.Tensor)}
    for modname in MODULES:
        names = public_names.public_names(modname)
        _write(OUT / f"{modname}.rst", module_page(modname, names, documented))
        written.add(f"{modname}.rst")
    for stale in OUT.glob("*.rst"):
        if stale.name not in written:
            stale.unlink()


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True}
