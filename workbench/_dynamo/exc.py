"""``torch._dynamo.exc``: ``Unsupported`` is ``workbench.compiler.Unsupported`` (``compile(fullgraph=True)``
raises it for a call that cannot replay)."""
from ..compiler import Unsupported  # noqa: F401

__all__ = ["Unsupported"]
