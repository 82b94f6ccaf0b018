"""``workbench.library``: define your own operators, as ``torch.library`` does.

``custom_op`` turns a typed function into an operator (``mylib::swish``) with a kernel per device
(``register_kernel``), a backward (``register_autograd``), a shape-only function (``register_fake``), and a
checker (``opcheck``). ``Library``/``define``/``impl`` are the older form of the same registry. Every call of an
operator is one tape node named by you, so the viewer, the debugger and ``workbench.compile`` see it as an op.
See docs/extensions.md.

>>> import workbench as wb
>>> @wb.library.custom_op("demo::swish", mutates_args=())
... def swish(x: wb.Tensor) -> wb.Tensor:
...     return x * wb.sigmoid(x)
>>> swish(wb.zeros(1))
tensor([0.])
"""
from .custom_op import CustomOpDef, OpOverload, OpOverloadPacket, custom_op
from .opcheck import OpCheckError, opcheck
from .registration import (Library, define, impl, impl_abstract, register_autograd, register_fake,
                           register_kernel)
from .schema import infer_schema

__all__ = ["custom_op", "CustomOpDef", "OpOverload", "OpOverloadPacket", "register_kernel", "register_autograd",
           "register_fake", "impl_abstract", "opcheck", "OpCheckError", "Library", "define", "impl", "infer_schema"]
