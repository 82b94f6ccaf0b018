"""``DataParallel`` on one device: the module runs once on the whole batch, where its parameters are.

PyTorch's ``DataParallel`` splits a batch across the GPUs in ``device_ids``, replicates the module on
each and gathers the outputs on ``output_device``. Workbench runs it on one device (``device_ids[0]``,
``cuda:0`` when ``device_ids`` is not given, the CPU when CUDA is not available): the inputs move there, the module runs on the whole batch and
the output moves to ``output_device``. That is what PyTorch itself does with one GPU, so results,
``state_dict`` keys (``module.`` prefix) and checkpoints match. For several GPUs, use
``DistributedDataParallel`` with one process per GPU (PyTorch recommends it over DataParallel too).
"""
from ... import _backend, cuda
from ...tensor import Tensor
from ..module import Module


def _device_index(d):
    if isinstance(d, int):
        return d
    dev = d if isinstance(d, _backend.device) else _backend.device(d)
    if dev.type != "cuda":
        raise ValueError(f"DataParallel device_ids must be CUDA devices or indices, got {d!r}")
    return dev.index or 0


def _move(obj, device):
    """Tensors inside tuples, lists and dicts moved to ``device`` (PyTorch's scatter on one device)."""
    if isinstance(obj, Tensor):
        return obj.to(device)
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return type(obj)(*(_move(v, device) for v in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_move(v, device) for v in obj)
    if isinstance(obj, dict):
        return type(obj)((k, _move(v, device)) for k, v in obj.items())
    return obj


class DataParallel(Module):
    """Wraps ``module`` so that calling the wrapper runs it on ``device_ids[0]`` (see the module docstring).

    >>> import workbench as wb
    >>> net = wb.nn.DataParallel(wb.nn.Linear(3, 2))
    >>> net(wb.randn(4, 3)).shape, list(net.state_dict())
    (workbench.Size([4, 2]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids = []
            self.output_device = None
            self.dim = dim
            self.src_device_obj = None
            return
        if device_ids is None:  # PyTorch takes every GPU; one device here, so the first
            device_ids = [0]
        device_ids = [_device_index(d) for d in device_ids]
        if len(device_ids) > 1:
            raise ValueError(f"workbench's DataParallel runs on one device, but device_ids={device_ids}: pass one "
                             "device (device_ids=[0]), or use DistributedDataParallel with one process per GPU")
        if output_device is None:
            output_device = device_ids[0]
        self.module = module
        self.device_ids = device_ids
        self.output_device = _device_index(output_device)
        self.dim = dim
        self.src_device_obj = _backend.device("cuda", device_ids[0])
        for t in list(module.parameters()) + list(module.buffers()):
            if t.device != self.src_device_obj:
                raise RuntimeError("module must have its parameters and buffers on device "
                                   f"{self.src_device_obj} (device_ids[0]) but found one of them on device: "
                                   f"{t.device}")

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        out = self.module(*_move(inputs, self.src_device_obj), **_move(kwargs, self.src_device_obj))
        return _move(out, _backend.device("cuda", self.output_device))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0, module_kwargs=None):
    """Run ``module(*inputs)`` as :class:`DataParallel` would, without keeping a wrapper.

    >>> import workbench as wb
    >>> wb.nn.parallel.data_parallel(wb.nn.Linear(3, 2), wb.randn(4, 3)).shape
    workbench.Size([4, 2])
    """
    if not isinstance(inputs, tuple):
        inputs = (inputs,)
    return DataParallel(module, device_ids, output_device, dim)(*inputs, **(module_kwargs or {}))
