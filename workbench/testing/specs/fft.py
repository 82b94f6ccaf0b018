"""Specs of workbench.fft (ops/fft.py): NumPy's pocketfft is the reference, PyTorch the contract.

Complex signals are built inside the op from two real inputs (a + 1j * b) and complex results are
returned as [real | imag] concatenated on the last dim, so the generic suite's float gradcheck, its
NumPy reference and its PyTorch comparison cover the complex paths too.
"""
import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec

A = arr(4, 6)
B = arr(4, 6, seed=1)
A3 = arr(2, 3, 5, seed=2)
B3 = arr(2, 3, 5, seed=3)
_ONE_D = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
_REAL_IN = ("rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn")


def _flat(y, cat):
    return cat([y.real, y.imag]) if y.is_complex() else y


def _wb_flat(y):
    return _flat(y, lambda p: wb.cat(p, -1))


def _np_flat(y):
    return np.concatenate([y.real, y.imag], -1) if np.iscomplexobj(y) else y


def _torch_flat(y):
    import torch

    return _flat(y.resolve_conj(), lambda p: torch.cat(p, -1))


def _make(name, kw):
    real = name in _REAL_IN

    def op(a, b=None):
        return _wb_flat(getattr(wb.fft, name)(a if real else a + 1j * b, **kw))

    def ref(a, b=None):
        return _np_flat(getattr(np.fft, name)(a if real else a + 1j * b, **_np_kw(name, kw)))

    def torch_op(a, b=None):
        import torch

        return _torch_flat(getattr(torch.fft, name)(a if real else a + 1j * b, **kw))

    return op, ref, torch_op


def _np_kw(name, kw):
    # NumPy spells torch's (n/s, dim) as (n/s, axis/axes); it has no hfft2/hfftn: built from irfftn below
    out = dict(kw)
    if "dim" in out:
        out["axis" if name in _ONE_D else "axes"] = out.pop("dim")
    return out


def _np_hfftn(a, s=None, axes=None, norm=None):
    axes = tuple(range(-len(s), 0)) if axes is None and s is not None else axes
    swap = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.fft.irfftn(np.conj(a), s=s, axes=axes, norm=swap)


def _np_ihfftn(a, s=None, axes=None, norm=None):
    swap = {None: "forward", "backward": "forward", "forward": "backward", "ortho": "ortho"}[norm]
    return np.conj(np.fft.rfftn(a, s=s, axes=axes, norm=swap))


_CASES = [
    ("fft", {}), ("fft", {"n": 8, "norm": "ortho"}), ("fft", {"n": 4, "dim": 0, "norm": "forward"}),
    ("ifft", {}), ("ifft", {"n": 7, "norm": "ortho"}),
    ("fft2", {}), ("ifft2", {"s": (3, 8), "norm": "forward"}),
    ("fftn", {"dim": (-1, 0)}), ("ifftn", {"s": (5, 4), "dim": (1, 0), "norm": "ortho"}),
    ("rfft", {}), ("rfft", {"n": 9, "norm": "ortho"}), ("rfft", {"dim": 0, "norm": "forward"}),
    ("irfft", {}), ("irfft", {"n": 7}), ("irfft", {"n": 10, "dim": 0, "norm": "ortho"}),
    ("rfft2", {}), ("irfft2", {"s": (4, 9)}), ("rfftn", {"norm": "ortho"}), ("irfftn", {"dim": (0, 1), "norm": "forward"}),
    ("hfft", {}), ("hfft", {"n": 7, "norm": "ortho"}), ("ihfft", {}), ("ihfft", {"n": 5, "norm": "forward"}),
    ("hfft2", {}), ("ihfft2", {"norm": "ortho"}), ("hfftn", {"s": (4, 6)}), ("ihfftn", {}),
]
_seen = {}
for _name, _kw in _CASES:
    _op, _ref, _top = _make(_name, _kw)
    if _name in ("hfft2", "hfftn", "ihfft2", "ihfftn"):
        _nk = _np_kw(_name, _kw)
        if _name.endswith("2"):
            _nk.setdefault("axes", (-2, -1))
        _base = _np_hfftn if _name.startswith("h") else _np_ihfftn
        _real = _name in _REAL_IN
        _ref = (lambda base, nk, real: lambda a, b=None: _np_flat(base(a if real else a + 1j * b, **nk)))(
            _base, _nk, _real)
    _k = _seen[_name] = _seen.get(_name, -1) + 1
    _args = [A] if _name in _REAL_IN else [A, B]
    spec(f"fft.{_name}" + (f"_{_k}" if _k else ""), _op, _ref, [Sample(_args)], torch_op=_top, family="fft")

spec("fft.fftn_3d", lambda a, b: _wb_flat(wb.fft.fftn(a + 1j * b)), lambda a, b: _np_flat(np.fft.fftn(a + 1j * b)),
     [Sample([A3, B3])], torch_op=lambda a, b: _torch_flat(__import__("torch").fft.fftn(a + 1j * b)), family="fft")
spec("fft.fftshift", lambda a: wb.fft.fftshift(a), np.fft.fftshift, [Sample([A3])],
     torch_op=lambda a: __import__("torch").fft.fftshift(a), family="fft")
spec("fft.ifftshift", lambda a: wb.fft.ifftshift(a, dim=(0, -1)), lambda a: np.fft.ifftshift(a, axes=(0, -1)),
     [Sample([A3])], torch_op=lambda a: __import__("torch").fft.ifftshift(a, dim=(0, -1)), family="fft")
