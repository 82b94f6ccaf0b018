"""Checkpoints: ``save``/``load`` as PyTorch has them, with a format of workbench's own by default.

``save`` writes the workbench format (docs/serialization-format.md): tensors, numbers, strings, dtypes,
devices and containers of them as a JSON tree over raw bytes, and any other object (a whole
``nn.Module``, an optimizer, a NumPy array, your own classes) as a pickle whose tensors and arrays point
at the raw bytes. ``save(..., _use_new_zipfile_serialization=True)`` writes PyTorch's zip format instead
and ``False`` its legacy format: files ``torch.load`` reads.

``load`` reads all of these, PyTorch's files (without PyTorch installed) and safetensors files. With
``weights_only=True`` (the default, as in PyTorch >= 2.6) no pickle can run code: only tensors, plain
containers, numbers, strings and the globals on the allowlist (:func:`add_safe_globals`) are built.
``weights_only=False`` unpickles anything, which can run arbitrary code: only for files you trust.
"""
import mmap as _mmap
import os
import pickle
import re
import warnings
import zipfile

from ..utils.serialization import config as _config
from . import _native, _torch_files
from ._common import CheckpointError, location_map, write_to
from ._safetensors import is_safetensors, load_file as _load_safetensors_file, load_safetensors, save_safetensors
from ._unpickler import (WeightsOnlyUnpickler, add_safe_globals, clear_safe_globals, full_unpickler,
                         get_safe_globals, safe_globals, unsafe_globals)

__all__ = ["save", "load", "CheckpointError", "add_safe_globals", "safe_globals", "get_safe_globals",
           "clear_safe_globals", "get_unsafe_globals_in_checkpoint", "save_safetensors", "load_safetensors"]

UNSAFE_MESSAGE = (
    "workbench.load defaults to weights_only=True, as torch.load does since PyTorch 2.6. Re-running "
    "`workbench.load` with `weights_only` set to `False` will likely succeed, but it can result in arbitrary code "
    "execution. Do it only if you got the file from a trusted source.")
_DOCS = ("\n\nCheck the docstring of workbench.load (and docs/serialization-format.md) to learn more about types "
         "accepted by default with weights_only.")


def save(obj, f, pickle_module=pickle, pickle_protocol=2, _use_new_zipfile_serialization=None,
         _disable_byteorder_record=False):
    """Save ``obj`` (tensors, state dicts, whole modules, optimizers, NumPy arrays, any picklable object) to ``f``.

    ``f`` is a path (written atomically: a temporary file in the same directory, fsync, rename; a failure,
    even halfway through the bytes, leaves any old file untouched) or a binary file object. Nothing is
    written before the object is fully pickled, so an unpicklable object leaves the old file as well.

    By default the file is in workbench's format: state dicts and containers of tensors, numbers and
    strings need no pickle at all, so loading them never runs code. ``_use_new_zipfile_serialization=True``
    writes PyTorch's zip format (what ``torch.save`` writes) and ``False`` PyTorch's legacy format, for
    ``torch.load`` to read; workbench objects other than tensors, Parameters, dtypes, devices and sizes
    are pickled under their workbench names there. ``pickle_module`` and ``pickle_protocol`` are used for
    what is pickled (the PyTorch formats take the standard pickle module only).

    >>> import io, workbench as wb
    >>> buf = io.BytesIO()
    >>> wb.save({"w": wb.ones(2), "step": 3}, buf); _ = buf.seek(0)
    >>> wb.load(buf)
    {'w': tensor([1., 1.]), 'step': 3}
    """
    if _use_new_zipfile_serialization is None:
        write = _native.writer(obj, pickle_module, pickle_protocol)
    else:
        if pickle_module is not pickle:
            raise ValueError("workbench.save writes PyTorch's formats with the standard pickle module only; pass "
                             "pickle_module=pickle, or leave _use_new_zipfile_serialization unset for workbench's "
                             "format, which takes any pickle module")
        if _use_new_zipfile_serialization:
            write = _torch_files.zip_writer(obj, pickle_protocol, not _disable_byteorder_record)
        else:
            write = _torch_files.legacy_writer(obj, pickle_protocol)
    write_to(f, write)


def _weights_only(weights_only, pickle_module):
    """PyTorch's rules: the argument, its default, and the two environment switches."""
    not_set = weights_only is None
    if not_set:
        weights_only = pickle_module is None
    true_values = ["1", "y", "yes", "true"]
    force = os.getenv("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    force_no = os.getenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0").lower() in true_values
    if force and force_no:
        raise RuntimeError("Only one of `TORCH_FORCE_WEIGHTS_ONLY_LOAD` or `TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD` should "
                           "be set, but both were set.")
    if force:
        return True
    if force_no and not_set:
        warnings.warn("Environment variable TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD detected, since the`weights_only` "
                      "argument was not explicitly passed to `workbench.load`, forcing weights_only=False.",
                      UserWarning, stacklevel=3)
        return False
    return bool(weights_only)


def _wo_message(message):
    """A weights-only refusal in PyTorch's words: what failed, and the two ways out."""
    if re.search(r"GLOBAL (\S+) was not an allowed global by default.", message):
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
                f"steps only if you trust the source of the checkpoint. \n\t(1) {UNSAFE_MESSAGE}\n\t(2) Alternatively, "
                "to load with `weights_only=True` please check the recommended steps in the following error "
                "message.\n\tWeightsUnpickler error: " + message + _DOCS)
    return f"Weights only load failed. {UNSAFE_MESSAGE}\n\n{message}{_DOCS}"


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None, **pickle_load_args):
    """Load what :func:`save` or ``torch.save`` wrote (zip or legacy format), or a safetensors file.

    ``weights_only`` (default True, as in PyTorch >= 2.6; ``TORCH_FORCE_WEIGHTS_ONLY_LOAD=1`` forces it,
    ``TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1`` turns the default off) builds only tensors, Parameters, plain
    containers, numbers, strings, dtypes, devices, sizes and the globals allowlisted with
    :func:`add_safe_globals`; anything else raises ``pickle.UnpicklingError`` naming the global and the
    ways out. ``weights_only=False`` unpickles anything, which can run arbitrary code.

    ``map_location`` moves tensors as in PyTorch: a device or string (everything there), a dict from saved
    location to target (``{"cuda:1": "cuda:0"}``), or ``fn(storage, location)`` returning a tensor on the
    target device (or None to keep the saved one). ``mmap=True`` maps a file copy-on-write instead of
    reading it. Tensors that shared memory when saved share it again (on the CPU). A foreign, truncated
    or corrupted file raises ``CheckpointError`` (a RuntimeError) saying which.

    >>> import io, workbench as wb
    >>> buf = io.BytesIO(); x = wb.arange(4.0)
    >>> wb.save([x, x[1:3]], buf); _ = buf.seek(0)
    >>> a, b = wb.load(buf, map_location="cpu")
    >>> b.fill_(7.0) is b, a.tolist()
    (True, [0.0, 7.0, 7.0, 3.0])
    """
    weights_only = _weights_only(weights_only, pickle_module)
    if weights_only:
        if pickle_module is not None:
            raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
        if pickle_load_args:
            warnings.warn("pickle_load_args only works if `weights_only=False`.", stacklevel=2)
        kwargs = {k: v for k, v in pickle_load_args.items() if k in ("encoding", "errors", "fix_imports")}
        kwargs.setdefault("encoding", "utf-8")

        def unpickle(file, persistent_load):
            return WeightsOnlyUnpickler(file, persistent_load, **kwargs).load()
    else:
        cls = full_unpickler(pickle_module or pickle)
        kwargs = {"encoding": "utf-8", **pickle_load_args}

        def unpickle(file, persistent_load):
            return cls(file, persistent_load, **kwargs).load()
    locate = location_map(map_location)
    if mmap is None:
        mmap = _config.load.mmap
    try:
        if isinstance(f, (str, bytes, os.PathLike)):
            path = os.fsdecode(os.fspath(f))
            shared = mmap and _config.load.mmap_flags == _mmap.MAP_SHARED  # a shared map writes to the file
            with open(path, "r+b" if shared else "rb") as fh:
                return _load_open(fh, path, locate, mmap, unpickle, kwargs)
        if not hasattr(f, "read"):
            raise TypeError(f"workbench.load expects a path or a binary file object, got {type(f).__name__}")
        name = getattr(f, "name", None)
        return _load_open(f, name if isinstance(name, str) else None, locate, mmap, unpickle, kwargs)
    except pickle.UnpicklingError as e:
        if weights_only:
            raise pickle.UnpicklingError(_wo_message(str(e))) from None
        raise


def _describe(where, head):
    """Why ``head`` (a file's first bytes) is not a checkpoint, for the error message."""
    if head.startswith(b"\x93NUMPY"):
        return f"{where}is a NumPy .npy file: read it with numpy.load and wrap it with workbench.from_numpy"
    if not head:
        return f"{where}is empty"
    if all(32 <= b < 127 or b in (9, 10, 13) for b in head[:64]):
        return f"{where}is a text file, not a checkpoint workbench or PyTorch wrote (it starts with {head[:24]!r})"
    return (f"{where}is not a checkpoint workbench or PyTorch wrote (its first bytes are {head[:8]!r}; a workbench "
            f"file starts with {_native.MAGIC!r}, a PyTorch file is a zip archive or a pickle)")


def _load_open(f, path, locate, use_mmap, unpickle, pickle_load_args):
    if use_mmap and not hasattr(f, "fileno"):
        raise ValueError("mmap=True needs a path or a real file, not an in-memory buffer")
    if not (hasattr(f, "seekable") and f.seekable()):
        raise ValueError("workbench.load needs a seekable file object (read the data into io.BytesIO first)")
    start = f.tell()
    size = f.seek(0, os.SEEK_END) - start
    f.seek(start)
    head = f.read(16)
    f.seek(start)
    if isinstance(head, str):
        raise TypeError("workbench.load needs a binary file object: open the file with mode 'rb'")
    where = f"{path!r} " if path else ""
    if head.startswith(_native.MAGIC):
        return _native.load(f, path, locate, use_mmap, unpickle)
    if 0 < len(head) < len(_native.MAGIC) and _native.MAGIC.startswith(head):
        raise CheckpointError(f"checkpoint is truncated: the file has {len(head)} bytes")
    if head.startswith(b"PK\x03\x04"):
        return _torch_files.load_zip(f, where, locate, use_mmap, unpickle)
    if head[:1] == b"\x80":
        if use_mmap:
            raise RuntimeError("mmap can only be used with files saved with "
                               f"`torch.save({path + ', ' if path else ''}_use_new_zipfile_serialization=True), "
                               "please torch.save your checkpoint with this option in order to use mmap.")
        try:
            return _torch_files.load_legacy(f, where, locate, unpickle, pickle_load_args)
        except EOFError:
            raise CheckpointError(f"checkpoint is truncated: {where}ends inside a pickle") from None
    if size > 262 and _torch_files.is_tar(f):
        raise CheckpointError(_torch_files.describe_tar(where))
    if is_safetensors(head, size):
        return _load_safetensors_file(f, size, path, locate)
    raise CheckpointError(_describe(where, head))


def get_unsafe_globals_in_checkpoint(f):
    """The globals (``"module.qualname"``) in a checkpoint's pickle that ``weights_only=True`` would refuse,
    found by reading the pickle, not running it. Allowlist them with :func:`add_safe_globals` if you trust them.

    >>> import io, workbench as wb
    >>> from fractions import Fraction
    >>> buf = io.BytesIO(); wb.save({"x": Fraction(1, 2)}, buf); _ = buf.seek(0)
    >>> wb.serialization.get_unsafe_globals_in_checkpoint(buf)
    ['fractions.Fraction']
    """
    if isinstance(f, (str, bytes, os.PathLike)):
        with open(os.fsdecode(os.fspath(f)), "rb") as fh:
            return get_unsafe_globals_in_checkpoint(fh)
    start = f.tell()
    head = f.read(16)
    f.seek(start)
    if head.startswith(_native.MAGIC):
        return unsafe_globals(_native.pickle_bytes(f))
    if head.startswith(b"PK\x03\x04"):
        with zipfile.ZipFile(f) as zf:
            pkl = sorted((n for n in zf.namelist() if n.endswith("data.pkl") and n.count("/") <= 1), key=len)
            if not pkl:
                raise ValueError("Expected input to be a checkpoint returned by torch.save")
            return unsafe_globals(zf.read(pkl[0]))
    raise ValueError("Expected input to be a checkpoint returned by torch.save or workbench.save (a zip or "
                     "workbench file; legacy-format files are not inspected)")


