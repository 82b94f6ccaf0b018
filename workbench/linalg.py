"""``workbench.linalg``: PyTorch's ``torch.linalg`` namespace (decompositions, solves, norms).

Gradients follow PyTorch's formulas (written in Tensor ops, so they differentiate again; ``eig``'s complex
path is tested to first order).

>>> import workbench as wb
>>> wb.linalg.norm(wb.tensor([3.0, 4.0]))
tensor(5.)
"""
from .ops.linalg import (LinAlgError, cholesky_ex, cond, det, eig, eigh, eigvals, eigvalsh, inv, inv_ex, lstsq,
                         matrix_exp, matrix_norm, matrix_power, matrix_rank, multi_dot, norm, pinv, slogdet, solve,
                         solve_ex, solve_triangular, svdvals, tensorinv, tensorsolve, vecdot, vector_norm)
from .ops.linalg import linalg_cholesky as cholesky
from .ops.linalg import linalg_cross as cross
from .ops.linalg import linalg_diagonal as diagonal
from .ops.linalg import linalg_qr as qr
from .ops.linalg import linalg_lu as lu
from .ops.linalg import linalg_svd as svd
from .ops.linalg import linalg_lu_solve as lu_solve
from .ops.linalg import lu_factor, lu_factor_ex
from .ops.linalg import linalg_vander as vander
from .ops.linalg_core import matmul

__all__ = ["LinAlgError", "cholesky", "cholesky_ex", "cond", "cross", "det", "diagonal", "eig", "eigh", "eigvals",
           "eigvalsh", "inv", "inv_ex", "lstsq", "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matmul", "matrix_exp", "matrix_norm", "matrix_power", "matrix_rank",
           "multi_dot", "norm", "pinv", "qr", "slogdet", "solve", "solve_ex", "solve_triangular", "svd", "svdvals",
           "tensorinv", "tensorsolve", "vander", "vecdot", "vector_norm"]

# NumPy's spellings (axis=, keepdims=), as PyTorch's argument parser takes them: see ops/_numpy_names.py
from .ops._numpy_names import numpy_names as _numpy_names  # noqa: E402

globals().update({_n: _numpy_names(globals()[_n]) for _n in __all__})
