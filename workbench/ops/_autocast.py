"""Autocast's state and cast policies, consulted by the ops on PyTorch's autocast lists.

An op on a list starts with ``if AUTOCAST[0]: args = cast("<op>", *args)``: one list lookup when
autocast is off everywhere (the common case). ``cast`` looks the op up for the device type of its
tensors and applies PyTorch's policy (aten/src/ATen/autocast_mode.cpp, torch 2.13):

* ``lower``:   floating inputs (not float64) run in the autocast dtype (matmul, linear, conv...);
* ``fp32``:    floating inputs run in float32 (exp/log/pow/softmax/norms/losses on CUDA; losses, fft and
               linalg on the CPU);
* ``promote``: mixed floating inputs run in the widest of their dtypes (cat, stack...);
* ``banned``:  the op refuses to run under autocast (binary_cross_entropy on CUDA).

The state is thread-local, as PyTorch's is (its enabled flags, dtypes, cache switch, nesting depth and
cast cache are all ``thread_local`` in autocast_mode.cpp): autocast entered in one thread changes nothing
in another, and a new thread starts with autocast off. ``AUTOCAST[0]``, the one flag ops check, is
process-wide and says whether *some* thread has autocast on; ``cast`` then reads the calling thread's
state, so a thread without autocast pays one thread-local lookup only while another thread has it on.

Casts of leaf tensors that require grad (the parameters) to the autocast dtype are cached until the
outermost autocast region of the thread exits, as PyTorch does, so a weight used by several ops is cast
once. The public face (``autocast``, the get/set functions) is workbench/amp/autocast_mode.py.
"""
import threading

from .._backend import dtypes as _dt
from .._core import Tensor

AUTOCAST = [False]  # True while autocast is enabled for some device type in some thread
DEVICE_TYPES = ("cpu", "cuda")
_ACTIVE = [0]  # how many threads have autocast enabled for some device type
_LOCK = threading.RLock()  # an RLock: a dying thread's _Active.__del__ may run while its thread holds it


class _Active:
    """Counts its thread in _ACTIVE while autocast is on there; a thread that ends inside an enabled
    region drops its thread-local state, and with it this object, which takes the thread off the count."""

    __slots__ = ("on",)

    def __init__(self):
        self.on = False

    def set(self, on):
        if on != self.on:
            with _LOCK:
                self.on = on
                _ACTIVE[0] += 1 if on else -1
                AUTOCAST[0] = _ACTIVE[0] > 0

    def __del__(self):
        self.set(False)


class _State(threading.local):
    def __init__(self):  # runs once in every thread that touches the state
        self.enabled = {"cpu": False, "cuda": False}
        self.dtype = {"cpu": _dt.bfloat16, "cuda": _dt.float16}
        self.cache_enabled = True
        self.nesting = 0
        self.cache = {}  # id(leaf) -> (leaf, its version, the cast copy)
        self.active = _Active()


STATE = _State()


def state_key():
    """What the calling thread's autocast does, as a value to compare (``workbench.compile``'s guard): None while
    it is off."""
    if not AUTOCAST[0]:
        return None
    s = STATE
    if not any(s.enabled.values()):
        return None
    return tuple(s.enabled.items()), tuple(s.dtype.items()), s.cache_enabled


def set_enabled(device_type, enabled):
    """Turn autocast on or off for ``device_type`` in the calling thread."""
    s = STATE
    s.enabled[device_type] = enabled
    s.active.set(any(s.enabled.values()))


_CUDA_LOWER = ("matmul", "mm", "bmm", "mv", "einsum", "vecdot", "baddbmm", "addmm", "addbmm", "addmv", "addr", "chain_matmul",
               "multi_dot", "linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
               "conv_transpose3d", "prelu", "scaled_dot_product_attention")
_CUDA_FP32 = ("acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal", "rsqrt",
              "sinh", "tan", "pow", "softplus", "layer_norm", "group_norm", "norm", "vector_norm", "matrix_norm",
              "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss",
              "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss", "mse_loss", "margin_ranking_loss",
              "multilabel_margin_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
              "binary_cross_entropy_with_logits", "dist", "pdist", "cdist", "renorm", "logsumexp", "cross_entropy",
              "softmax", "log_softmax", "softmin", "sum", "prod", "cumsum", "cumprod", "normalize", "gaussian_nll_loss",
              "ctc_loss")
_CUDA_PROMOTE = ("addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "tensordot", "scatter_add", "index_put",
                 "cat", "stack", "index_copy")
# einsum, chain_matmul, multi_dot and tensordot are not on PyTorch's CPU list, but they run through bmm/mm,
# which are, so their results come out in the lower dtype too; mkldnn_rnn_layer is nn.LSTM's layer on the CPU
# (without proj_size): its input and states run in the lower dtype, so its outputs come out in it
_CPU_LOWER = ("conv1d", "conv2d", "conv3d", "bmm", "mm", "vecdot", "baddbmm", "addmm", "addbmm", "linear", "matmul",
              "mkldnn_rnn_layer",
              "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "prelu", "scaled_dot_product_attention",
              "einsum", "chain_matmul", "multi_dot", "tensordot")
_CPU_FP32 = ("binary_cross_entropy", "prod", "cdist", "trace", "cholesky", "inv", "solve", "mse_loss",
             "cosine_embedding_loss", "nll_loss", "hinge_embedding_loss", "poisson_nll_loss", "smooth_l1_loss",
             "cross_entropy", "l1_loss", "huber_loss", "margin_ranking_loss", "soft_margin_loss", "triplet_margin_loss",
             "multi_margin_loss", "ctc_loss", "kl_div", "multilabel_margin_loss", "binary_cross_entropy_with_logits",
             "fft", "linalg")
_CPU_PROMOTE = ("cat", "stack", "index_copy")

POLICY = {
    "cuda": {**{n: "lower" for n in _CUDA_LOWER}, **{n: "fp32" for n in _CUDA_FP32},
             **{n: "promote" for n in _CUDA_PROMOTE}, "binary_cross_entropy": "banned"},
    "cpu": {**{n: "lower" for n in _CPU_LOWER}, **{n: "fp32" for n in _CPU_FP32}, **{n: "promote" for n in _CPU_PROMOTE}},
}

_BANNED = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\n"
           "Many models use a sigmoid layer right before the binary cross entropy layer.\n"
           "In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\n"
           "or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\n"
           "safe to autocast.")


def _eligible(t, device_type):
    # PyTorch's is_eligible: a floating tensor on the autocast device that is not float64
    return (isinstance(t, Tensor) and t.device.type == device_type and t.dtype.is_floating_point
            and t.dtype is not _dt.float64)


def _to(t, dtype, s):
    if t.dtype is dtype:
        return t
    if s.cache_enabled and t.is_leaf and t.requires_grad and dtype is not _dt.float32:
        hit = s.cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._version:
            return hit[2]
        out = t.to(dtype)
        s.cache[id(t)] = (t, t._version, out)
        return out
    return t.to(dtype)


def _device_type(args):
    for a in args:
        if isinstance(a, Tensor):
            return a.device.type
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tensor):
                    return b.device.type
    return None


def cast(op, *args):
    """args with the tensors cast as autocast's policy for ``op`` says (a tuple, same length).

    A list or tuple argument (cat's tensors) is cast element by element and keeps its type.
    """
    dev = _device_type(args)
    s = STATE
    if dev is None or not s.enabled.get(dev):
        return args
    policy = POLICY[dev].get(op)
    if policy is None:
        return args
    if policy == "banned":
        raise RuntimeError(_BANNED)
    if policy == "promote":
        widest = None
        for t in _flat(args):
            if _eligible(t, dev) or isinstance(t, Tensor) and t.dtype is _dt.float64:
                widest = t.dtype if widest is None else _dt.promote_types(widest, t.dtype)
        if widest is None:
            return args
        target = widest
    else:
        target = s.dtype[dev] if policy == "lower" else _dt.float32
    return tuple(_cast_arg(a, dev, target, s) for a in args)


def _flat(args):
    for a in args:
        if isinstance(a, (list, tuple)):
            yield from a
        else:
            yield a


def _cast_arg(a, dev, target, s):
    if isinstance(a, (list, tuple)):
        return type(a)(_to(t, target, s) if _eligible(t, dev) else t for t in a)
    return _to(a, target, s) if _eligible(a, dev) else a


def clear_cache():
    """Drop the calling thread's cached casts (PyTorch does this when the outermost autocast region exits)."""
    STATE.cache.clear()
