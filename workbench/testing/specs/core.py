"""Specs of the core ops that every other family builds on."""
import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec

spec("add", lambda a, b: a + b, np.add, [Sample([arr(3, 4), arr(3, 4, seed=1)]), Sample([arr(3, 4), arr(4, seed=2)]),
                                          Sample([arr(3, 4), 2.5])], torch_op=lambda a, b: a + b)
spec("mul", lambda a, b: a * b, np.multiply, [Sample([arr(2, 3), arr(2, 3, seed=1)]), Sample([arr(2, 1, 3), arr(4, 1)])],
     torch_op=lambda a, b: a * b)
spec("div", lambda a, b: a / b, np.divide, [Sample([arr(2, 3), arr(2, 3, seed=1, positive=True)])],
     torch_op=lambda a, b: a / b)
spec("exp", wb.exp, np.exp, [Sample([arr(3, 4)])], torch_op=lambda x: x.exp())
spec("matmul", wb.matmul, np.matmul, [Sample([arr(3, 4), arr(4, 2, seed=1)]), Sample([arr(2, 3, 4), arr(4, seed=1)]),
                                       Sample([arr(4), arr(5, 4, 2, seed=1)])], torch_op=lambda a, b: a @ b)
spec("sum", lambda x, **k: x.sum(**k), lambda x, **k: np.sum(x, axis=k.get("dim"), keepdims=k.get("keepdim", False)),
     [Sample([arr(3, 4)]), Sample([arr(3, 4, 5)], {"dim": (0, 2), "keepdim": True}), Sample([arr(3, 4)], {"dim": 1})],
     torch_op=lambda x, **k: x.sum(**k))
spec("getitem", lambda x: x[1:, [0, 2, 2]], lambda x: x[1:, [0, 2, 2]], [Sample([arr(3, 4)])],
     torch_op=lambda x: x[1:, [0, 2, 2]])
