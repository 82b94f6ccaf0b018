"""workbench.viz is one stack: each module imports only the ones below it, and no import hides in a function."""
import ast
from pathlib import Path

import workbench.viz

VIZ = Path(workbench.viz.__file__).parent
# bottom first; modules on one line are peers and may not import each other
STACK = [["_assets", "recorder"], ["align"], ["summary", "classroom"], ["measures"], ["snapshot"], ["replay"],
         ["series"], ["stepper", "gradstats"],
         ["static_svg", "monitor_svg"], ["views"], ["widgets", "compare"], ["__init__"]]
LAZY_OK = {"IPython", "IPython.display", "matplotlib", "matplotlib.pyplot", "pandas"}  # optional dependencies


def _level(name):
    return next(i for i, row in enumerate(STACK) if name in row)


def _viz_imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                yield node.module.split(".")[0], node
            else:
                for a in node.names:
                    yield a.name, node


def test_every_viz_module_has_a_place_in_the_stack():
    assert sorted(p.stem for p in VIZ.glob("*.py")) == sorted(m for row in STACK for m in row)


def test_imports_point_down_the_stack():
    for path in VIZ.glob("*.py"):
        me = _level(path.stem)
        for dep, node in _viz_imports(ast.parse(path.read_text())):
            assert _level(dep) < me, f"{path.name}:{node.lineno} imports .{dep}, which is not below it"


def test_no_import_inside_a_function_but_optional_dependencies():
    for path in VIZ.glob("*.py"):
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.Import):
                    names = {a.name for a in node.names}
                elif isinstance(node, ast.ImportFrom):
                    names = {"." * node.level + (node.module or "")}
                else:
                    continue
                assert names <= LAZY_OK, f"{path.name}:{node.lineno} imports {names} inside {fn.name}()"


def test_the_statistics_collector_needs_no_widget():
    import workbench as wb
    from workbench.viz.gradstats import GradStats

    m = wb.nn.Linear(3, 1)
    seen = []
    stats = GradStats(m)
    stats.listeners.append(lambda event, *args: seen.append(event))
    m(wb.ones(2, 3)).sum().backward()
    stats.detach()
    assert stats.history["grad_norm/weight"].shape == (1,) and "rows" in seen
    assert not hasattr(stats, "send") and not hasattr(stats, "comm")
