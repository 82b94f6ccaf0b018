"""``torch._dynamo.eval_frame``: ``OptimizedModule`` (what ``compile`` returns for a module), for the
``isinstance`` checks PyTorch scripts make."""
from ..compiler import OptimizedModule  # noqa: F401

__all__ = ["OptimizedModule"]
