"""workbench/tensor.pyi matches Tensor at run time, and every method reaches Tensor through the registry."""
import ast
import inspect

import workbench as wb
from workbench._core import Tensor as CoreTensor
from workbench.tensor import REGISTRY, Tensor
from workbench.testing import tensor_stub


def test_stub_is_up_to_date():
    with open(tensor_stub.PATH) as f:
        text = f.read()
    assert text == tensor_stub.render(), "workbench/tensor.pyi is stale: run `make pyi` and commit it"


def test_stub_lists_every_public_method_and_parses():
    tree = ast.parse(tensor_stub.render())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Tensor")
    stubbed = {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    stubbed |= {n.target.id for n in cls.body if isinstance(n, ast.AnnAssign)}
    runtime = {n for n in dir(Tensor) if not n.startswith("_")}
    assert runtime <= stubbed
    assert {"exp", "add_", "view", "backward", "grad", "new_zeros", "normal_", "share_memory_", "T"} <= stubbed


def test_complete_on_import_and_one_class():
    assert Tensor is CoreTensor is wb.Tensor
    # every attribute outside the core's own class body came through the registry, which names its module
    assert REGISTRY["exp"] == "workbench.ops.elementwise" and REGISTRY["new_zeros"] == "workbench.creation"
    assert REGISTRY["normal_"] == "workbench.random" and REGISTRY["__reduce_ex__"] == "workbench.multiprocessing.reductions"
    assert REGISTRY["backward"] == "workbench.tensor" and REGISTRY["view"] == "workbench.ops.views"


def test_core_imports_only_the_backend():
    import workbench._core as core

    src = inspect.getsource(core)
    imports = [n for n in ast.walk(ast.parse(src)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    mods = {("." * n.level + (n.module or "")) if isinstance(n, ast.ImportFrom) else n.names[0].name for n in imports}
    assert mods <= {"warnings", ".", "._backend"}, mods
    assert all(a.name in ("_backend", "dtypes") for n in imports if isinstance(n, ast.ImportFrom) and n.level
               for a in n.names)


def test_subclasses_pickle_through_multiprocessing_without_importing_it_first():
    # the pickler registration is the registry's, made at import time, not a side effect of importing
    # workbench.multiprocessing; a subclass defined now is registered by the core's __init_subclass__
    from multiprocessing.reduction import ForkingPickler

    class Mine(wb.Tensor):
        pass

    assert Mine in ForkingPickler._extra_reducers and wb.nn.Parameter in ForkingPickler._extra_reducers
    assert vars(Tensor)["__init_subclass__"].__func__.__module__ == "workbench._core"
