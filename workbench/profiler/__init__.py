"""workbench.profiler: op-level timing with PyTorch's interface, and the cost of each op (FLOPs)."""
