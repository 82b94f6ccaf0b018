"""Device objects as in PyTorch: ``device("cpu")``, ``device("cuda")``, ``device("cuda", 1)``."""


class device:
    """Where a tensor's memory lives.

    >>> import workbench as wb
    >>> wb.device("cuda:1")
    device(type='cuda', index=1)
    >>> str(wb.device("cpu"))
    'cpu'
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index=None):
        if isinstance(type, device):
            type, index = type.type, type.index if index is None else index
        elif isinstance(type, int) and index is None:
            type, index = "cuda", type
        elif isinstance(type, str) and ":" in type:
            if index is not None:
                raise ValueError(f"type (string) must not include an index because index was passed explicitly: {type}")
            type, _, idx = type.partition(":")
            try:
                index = int(idx)
            except ValueError:
                raise RuntimeError(f"Invalid device string: '{type}:{idx}'") from None
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type} "
                "(workbench runs on 'cpu' with NumPy and on 'cuda' with CuPy)"
            )
        if index is not None and (not isinstance(index, int) or index < 0):
            raise RuntimeError(f"Device index must not be negative, got {index}")
        if type == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be 0 or None, got {index}")
        object.__setattr__(self, "type", type)
        object.__setattr__(self, "index", index)

    def __setattr__(self, k, v):
        raise AttributeError("device objects are immutable")

    def __repr__(self):
        return f"device(type='{self.type}')" if self.index is None else f"device(type='{self.type}', index={self.index})"

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        if isinstance(other, str):
            try:
                other = device(other)
            except (RuntimeError, ValueError):
                return False
        return isinstance(other, device) and self.type == other.type and self.index == other.index

    def __hash__(self):
        return hash((self.type, self.index))

    def __reduce__(self):
        return (device, (self.type, self.index))


CPU = device("cpu")
