"""Specs of the short-time Fourier transforms (stft, istft) and the LU ops (lu, lu_solve, lu_unpack,
linalg.lu_factor_ex).

The stft reference frames the padded signal, windows each frame and takes NumPy's FFT; the istft one
inverts each frame and overlap-adds by hand, dividing by the summed squared window. Complex signals are
built inside the op from two real inputs (a + 1j * b) and complex results come back as [real | imag]
on the last dim (as in specs/fft.py), so the suite's float gradcheck covers the complex paths; windows
are inputs too, so their gradient is checked. The LU reference is Doolittle with partial pivoting
(LAPACK getrf's pivot choices), written out.
"""
import warnings

import numpy as np

import workbench as wb
from workbench.testing.op_specs import Sample, arr, spec

_PAD = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}


def _torch():
    import torch

    return torch


def _flat(y, lib):
    return lib.cat([y.real, y.imag], -1) if y.is_complex() else y


def _np_flat(y):
    return np.concatenate([y.real, y.imag], -1) if np.iscomplexobj(y) else y


def _quiet(fn):
    # PyTorch and workbench warn alike for window=None, return_complex=False and torch.lu: not under test here
    def call(*a, **k):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return fn(*a, **k)

    return call


def _window(window, win_length, n_fft):
    w = np.ones(win_length) if window is None else window
    left = (n_fft - win_length) // 2
    return np.pad(w, (left, n_fft - win_length - left))


# --- stft ---------------------------------------------------------------------------------------------
def np_stft(x, window, n_fft, hop_length=None, win_length=None, center=True, pad_mode="reflect", normalized=False,
            onesided=None, return_complex=True, align_to_window=None):
    hop, win = hop_length or n_fft // 4, win_length or n_fft
    w = _window(window, win, n_fft)
    x2 = np.atleast_2d(x)
    if align_to_window:
        left = (n_fft - win) // 2
        x2 = np.pad(x2, ((0, 0), (left, n_fft - win - left)))
    if center:
        x2 = np.pad(x2, ((0, 0), (n_fft // 2, n_fft // 2)), mode=_PAD[pad_mode])
    n_frames = 1 + (x2.shape[-1] - n_fft) // hop
    frames = np.stack([x2[:, t * hop:t * hop + n_fft] * w for t in range(n_frames)], 1)  # (B, frames, n_fft)
    if onesided is None:
        onesided = not np.iscomplexobj(frames)
    norm = "ortho" if normalized else "backward"
    out = ((np.fft.rfft if onesided else np.fft.fft)(frames, axis=-1, norm=norm)).swapaxes(-1, -2)
    out = out[0] if x.ndim == 1 else out
    return out if return_complex else np.stack([out.real, out.imag], -1)


def _stft(lib, complex_input=False):
    def op(*a, **k):
        x, w = (a[0] + 1j * a[1], a[2]) if complex_input else a
        return _flat(lib().stft(x, window=w, **k), lib())

    return _quiet(op)


def _np_stft(complex_input=False):
    def ref(*a, **k):
        x, w = (a[0] + 1j * a[1], a[2]) if complex_input else a
        return _np_flat(np_stft(x, w, **k))

    return ref


X22, W8, W5 = arr(22), np.hanning(10)[1:-1], np.hanning(7)[1:-1]  # Hann windows without their zero ends
spec("stft", _stft(lambda: wb), _np_stft(),
     [Sample([X22, W8], {"n_fft": 8, "hop_length": 3, "return_complex": True}),
      Sample([arr(2, 22, seed=1), W8], {"n_fft": 8, "return_complex": True, "pad_mode": "constant",
                                         "normalized": True}),
      Sample([X22, W8], {"n_fft": 8, "hop_length": 3, "return_complex": True, "pad_mode": "replicate",
                         "onesided": False}),
      Sample([X22, W8], {"n_fft": 8, "hop_length": 4, "return_complex": True, "pad_mode": "circular"}),
      Sample([X22, W5], {"n_fft": 8, "hop_length": 3, "win_length": 5, "return_complex": True, "center": False}),
      Sample([X22, W5], {"n_fft": 8, "hop_length": 3, "win_length": 5, "return_complex": True, "center": False,
                         "align_to_window": True}),
      Sample([X22, W5], {"n_fft": 8, "hop_length": 2, "win_length": 5, "return_complex": False}),
      Sample([X22, None], {"n_fft": 6, "hop_length": 2, "return_complex": True})],
     torch_op=_stft(_torch))
spec("stft_complex_input", _stft(lambda: wb, True), _np_stft(True),
     [Sample([X22, arr(22, seed=2), W8], {"n_fft": 8, "hop_length": 3}),
      Sample([arr(2, 22, seed=3), arr(2, 22, seed=4), W5], {"n_fft": 8, "win_length": 5, "center": False,
                                                             "return_complex": True, "normalized": True})],
     torch_op=_stft(_torch, True))


# --- istft --------------------------------------------------------------------------------------------
def np_istft(spec_, window, n_fft, hop_length=None, win_length=None, center=True, normalized=False, onesided=None,
             length=None, return_complex=False):
    hop, win = hop_length or n_fft // 4, win_length or n_fft
    w = _window(window, win, n_fft)
    s = spec_ if spec_.ndim == 3 else spec_[None]
    if onesided is None:
        onesided = s.shape[-2] != n_fft
    norm = "ortho" if normalized else "backward"
    if return_complex:
        frames = np.fft.ifft(s, axis=-2, norm=norm)
    else:  # a full spectrum is taken as the Hermitian one its first half gives, as PyTorch does
        frames = np.fft.irfft(s[:, :n_fft // 2 + 1], n=n_fft, axis=-2, norm=norm)
    frames = frames * w[:, None]
    n_frames = s.shape[-1]
    total = n_fft + hop * (n_frames - 1)
    y = np.zeros((len(s), total), frames.dtype)
    env = np.zeros(total)
    for t in range(n_frames):
        y[:, t * hop:t * hop + n_fft] += frames[:, :, t]
        env[t * hop:t * hop + n_fft] += w * w
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    y = y[:, start:end] / env[start:end]
    if length is not None and y.shape[-1] < length:
        y = np.pad(y, ((0, 0), (0, length - y.shape[-1])))
    return y[0] if spec_.ndim == 2 else y


def _istft(lib):
    def op(a, b, w, **k):
        return _flat(lib().istft(a + 1j * b, window=w, **k), lib())

    return _quiet(op)


def _np_istft(a, b, w, **k):
    return _np_flat(np_istft(a + 1j * b, w, **k))


S5, S5i = arr(5, 7), arr(5, 7, seed=1)  # (n_fft // 2 + 1, frames) for n_fft 8
S8, S8i = arr(8, 7, seed=2), arr(8, 7, seed=3)
spec("istft", _istft(lambda: wb), _np_istft,
     [Sample([S5, S5i, W8], {"n_fft": 8, "hop_length": 2}),
      Sample([arr(2, 5, 7, seed=4), arr(2, 5, 7, seed=5), W8], {"n_fft": 8, "hop_length": 3, "normalized": True,
                                                               "length": 17}),
      Sample([S5, S5i, W8], {"n_fft": 8, "hop_length": 2, "center": False, "length": 24}),
      Sample([S5, S5i, W5], {"n_fft": 8, "hop_length": 1, "win_length": 5, "length": 8}),
      Sample([S8, S8i, W8], {"n_fft": 8, "hop_length": 2, "onesided": False}),
      Sample([S8, S8i, W8], {"n_fft": 8, "hop_length": 2, "return_complex": True}),
      Sample([S5, S5i, None], {"n_fft": 8, "hop_length": 4, "center": False})],
     torch_op=_istft(_torch))


# --- LU -----------------------------------------------------------------------------------------------
def np_getrf(a):
    """(packed L\\U, 1-based int32 pivots) of A = P L U by partial pivoting, LAPACK getrf's row choices."""
    if a.ndim > 2:
        outs = [np_getrf(m) for m in a]
        return tuple(np.stack(x) for x in zip(*outs))
    m, n = a.shape
    u = a.astype(np.float64).copy()
    piv = np.zeros(min(m, n), np.int32)
    for j in range(min(m, n)):
        p = j + int(np.argmax(np.abs(u[j:, j])))
        piv[j] = p + 1
        u[[j, p]] = u[[p, j]]
        if u[j, j] != 0:
            u[j + 1:, j] /= u[j, j]
        u[j + 1:, j + 1:] -= np.outer(u[j + 1:, j], u[j, j + 1:])
    return u.astype(a.dtype), piv


def np_info(lu):
    """LAPACK's info: the 1-based index of the first exactly-zero pivot of U, 0 if none."""
    zero = np.diagonal(lu, 0, -2, -1) == 0
    return np.where(zero.any(-1), zero.argmax(-1) + 1, 0).astype(np.int32)


def np_lu_unpack(lu, piv, unpack_data=True, unpack_pivots=True):
    m, n = lu.shape[-2:]
    k = min(m, n)
    low = np.tril(lu[..., :, :k], -1) + np.eye(m, k)
    up = np.triu(lu[..., :k, :])
    perm = np.broadcast_to(np.arange(m), piv.shape[:-1] + (m,)).copy()
    for idx in np.ndindex(piv.shape[:-1]):
        for j, p in enumerate(piv[idx] - 1):  # LAPACK's sequential row swaps
            perm[idx + (j,)], perm[idx + (p,)] = perm[idx + (p,)], perm[idx + (j,)]
    P = (perm[..., :, None] == np.arange(m)).swapaxes(-1, -2).astype(lu.dtype)  # A = P L U: P[perm[i], i] = 1
    empty = np.zeros((0,), lu.dtype)
    return (P if unpack_pivots else empty, low if unpack_data else empty, up if unpack_data else empty)


def well(n, seed=0, batch=()):
    """A well-conditioned n x n matrix: twice the identity plus small noise."""
    return np.eye(n) * 2 + arr(*batch, n, n, seed=seed, low=-0.4, high=0.4)


SINGULAR = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [1.0, 0.0, 1.0]])  # rank 2: U's last pivot is 0
ZERO = np.zeros((3, 3))
_SQUARE_ETC = [Sample([arr(3, 3, seed=4)]), Sample([arr(2, 3, 3, seed=5)]), Sample([arr(3, 5, seed=6)]),
               Sample([arr(5, 3, seed=7)])]
_LU_VALUES = "a singular matrix's LU factors are not differentiable"


def _lu(lib):
    return _quiet(lambda a, **k: tuple(lib().lu(a, **k)))


spec("lu", _lu(lambda: wb), lambda a, get_infos=False: np_getrf(a) + ((np_info(np_getrf(a)[0]),) if get_infos else ()),
     _SQUARE_ETC + [Sample([arr(2, 4, 4, seed=8)], {"get_infos": True}),
                    Sample([SINGULAR], {"get_infos": True}, values_only=_LU_VALUES),
                    Sample([ZERO], {"get_infos": True}, values_only=_LU_VALUES)],
     torch_op=_lu(_torch), output_index=0)
spec("linalg.lu_factor_ex", lambda a, **k: tuple(wb.linalg.lu_factor_ex(a, **k)),
     lambda a, **k: np_getrf(a) + (np_info(np_getrf(a)[0]),),
     _SQUARE_ETC + [Sample([well(3)], {"check_errors": True}), Sample([SINGULAR], values_only=_LU_VALUES),
                    Sample([np.stack([well(3), ZERO])], values_only=_LU_VALUES)],
     torch_op=lambda a, **k: tuple(_torch().linalg.lu_factor_ex(a, **k)), output_index=0)


def _unpack(lib):
    # (L, U, P): L first, so that the comparison with PyTorch backpropagates through a differentiable output
    def op(a, **k):
        P, L, U = lib().lu_unpack(*lib().linalg.lu_factor(a), **k)
        return L, U, P

    return op


spec("lu_unpack", _unpack(lambda: wb), lambda a, **k: (lambda P, L, U: (L, U, P))(*np_lu_unpack(*np_getrf(a), **k)),
     _SQUARE_ETC + [Sample([arr(3, 3, seed=9)], {"unpack_pivots": False}),
                    Sample([arr(2, 4, 3, seed=10)], {"unpack_data": False},
                           values_only="P alone: a permutation, piecewise constant in A")],
     torch_op=_unpack(_torch))


def _lu_solve(lib):
    return _quiet(lambda b, a: lib().lu_solve(b, *lib().linalg.lu_factor(a)))


def _np_lu_solve(b, a):
    return np.linalg.solve(np.broadcast_to(a, b.shape[:-2] + a.shape[-2:]), b)


spec("lu_solve", _lu_solve(lambda: wb), _np_lu_solve,
     [Sample([arr(3, 2), well(3, seed=1)]), Sample([arr(2, 3, 1), well(3, seed=2, batch=(2,))]),
      Sample([arr(2, 3, 2), well(3, seed=3)])],
     torch_op=_lu_solve(_torch))
