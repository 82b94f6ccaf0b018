"""workbench.profiler: PyTorch's profiler interface over workbench's ops, and the FLOPs of each op.

>>> import workbench as wb
>>> with wb.profiler.profile(record_shapes=True) as prof:
...     y = (wb.ones(4, 4, requires_grad=True) @ wb.ones(4, 4)).sum()
...     y.backward()
>>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=3))
---...Name...Self CPU %...# of Calls...Self CPU time total: ...
>>> {"mm", "sum", "autograd::engine::evaluate_function: MmBackward0"} <= {e.key for e in prof.key_averages()}
True
"""
from .profiler import (DeviceType, ProfilerAction, ProfilerActivity, kineto_available, profile, record_function, schedule,
                       supported_activities, tensorboard_trace_handler)

__all__ = ["profile", "schedule", "supported_activities", "tensorboard_trace_handler", "ProfilerAction",
           "ProfilerActivity", "kineto_available", "record_function", "DeviceType"]
