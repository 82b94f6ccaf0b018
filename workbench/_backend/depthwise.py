"""Depthwise 2-D convolution (groups == in_channels: MobileNet's 3x3 layers) on the CPU, as Numba loops.

Why: as im2col and per-group GEMMs, a depthwise layer is G matrix products of one row each, and the column
copies cost more than the products (32x32x16x16 3x3 forward 1.2 ms against PyTorch's 0.38; stride 2 4.9x).
A depthwise convolution is a stencil: each output plane is the sum of its channel's plane shifted by each
kernel tap, times that tap's weight.

Layout: one channel plane at a time, padded and split into stride x stride *phase planes* (rows a::sh and
columns b::sw of the padded plane), each flattened with rows ``wq`` wide, the output's row width plus the
taps' reach. Then every tap, at any stride or dilation, is one phase plane read at a constant shift, and a
tap's contribution to the whole output plane is one contiguous multiply-add over ``oh * wq`` entries (the
entries past the output's width are dropped at the end): loops LLVM vectorizes. The backward runs the same
walk: the input gradient adds each tap's ``w * g`` into zeroed phase planes at the shift (then reads them
back into the image), the weight gradient is each tap's dot product of ``g`` with the input's phase plane.

The inner loops index 1-D slices from zero: an index like ``i + shift`` makes Numba test for a negative
index and wrap it around, which keeps LLVM from vectorizing the loop (182 ns against 25 for 288 entries).
"""
import numpy

from . import fused


def usable(a, b, groups, cin):
    """Whether a 2-D convolution with operands a and b (NumPy float32/float64 of one dtype, 4-D) and this many
    groups is depthwise (one input channel per group) and the loops can run it."""
    return (groups == cin and groups > 1 and type(a) is numpy.ndarray and type(b) is numpy.ndarray
            and a.dtype == b.dtype and a.dtype.char in "fd" and a.ndim == 4 and b.ndim == 4
            and fused.ENABLED[0] and fused._numba() is not None)


_U = numpy.uint64  # loop indices: unsigned, so no wraparound test (see the module docstring)


@fused._helper
def _phases(xf, base, h, w, sh, sw, ph, pw, hq, wq, pf):
    """The phase planes of plane x[n, c] (at offset base of the flat image xf, h x w) into the flat pf (plane k
    at k * (hq + 1) * wq): pf[k][r*wq + q] = x[n, c, r*sh + a - ph, q*sw + b - pw] for k = a*sw + b. Only the
    entries inside x are written: the rest (the padding) are the same for every plane, zeroed once."""
    size = (hq + 1) * wq
    step = _U(sw)
    for a in range(sh):
        r0 = max(0, (ph - a + sh - 1) // sh)  # the rows r whose input row lies in [0, h)
        r1 = min(hq, max(r0, (h - 1 - a + ph) // sh + 1))
        for b in range(sw):
            q0 = min(wq, max(0, (pw - b + sw - 1) // sw))  # the columns q whose input column lies in [0, w)
            q1 = min(wq, max(q0, (w - 1 - b + pw) // sw + 1))
            for r in range(r0, r1):
                src = _U(base + (r * sh + a - ph) * w + q0 * sw + b - pw)
                dst = _U((a * sw + b) * size + r * wq + q0)
                for j in range(_U(0), _U(q1 - q0)):
                    pf[dst + j] = xf[src + j * step]


@fused._helper
def _unphase(pf, h, w, sh, sw, ph, pw, hq, wq, xf, base):
    """The inverse of ``_phases``: plane (n, c) of the flat image xf (at offset base) from the phase planes pf.
    Only the entries some phase plane holds are written: the others (rows and columns past every tap's reach)
    keep the zeros xf was made with."""
    size = (hq + 1) * wq
    step = _U(sw)
    for a in range(sh):
        r0 = max(0, (ph - a + sh - 1) // sh)
        r1 = min(hq, max(r0, (h - 1 - a + ph) // sh + 1))
        for b in range(sw):
            q0 = min(wq, max(0, (pw - b + sw - 1) // sw))
            q1 = min(wq, max(q0, (w - 1 - b + pw) // sw + 1))
            for r in range(r0, r1):
                dst = _U(base + (r * sh + a - ph) * w + q0 * sw + b - pw)
                src = _U((a * sw + b) * size + r * wq + q0)
                for j in range(_U(0), _U(q1 - q0)):
                    xf[dst + j * step] = pf[src + j]


@fused._loop
def _forward(xf, xshape, wf, kh_n, kw_n, sh, sw, ph, pw, dh, dw, yf, yshape):
    """y (N, O, OH, OW) = the depthwise convolution of x (N, C, H, W) with w (O, 1, KH, KW), O = C * m; all
    flat."""
    n_img, c_in, h, w = xshape
    o_out, oh_n, ow_n = yshape[1], yshape[2], yshape[3]
    m = o_out // c_in
    hq = oh_n + (kh_n - 1) * dh // sh
    wq = ow_n + (kw_n - 1) * dw // sw
    size = (hq + 1) * wq  # a row more: the last taps read past hq rows (into zeros)
    span = _U(oh_n * wq)
    pf = numpy.zeros(sh * sw * size, xf.dtype)
    acc = numpy.empty(oh_n * wq, xf.dtype)
    for n in range(n_img):
        for c in range(c_in):
            _phases(xf, (n * c_in + c) * h * w, h, w, sh, sw, ph, pw, hq, wq, pf)
            for o in range(c * m, c * m + m):
                acc[:] = 0
                for kh in range(kh_n):
                    a = kh * dh
                    for kw in range(kw_n):
                        b = kw * dw
                        src = _U(((a % sh) * sw + b % sw) * size + (a // sh) * wq + b // sw)
                        wv = wf[(o * kh_n + kh) * kw_n + kw]
                        for i in range(_U(0), span):
                            acc[i] += wv * pf[src + i]
                for oh in range(oh_n):
                    dst = _U(((n * o_out + o) * oh_n + oh) * ow_n)
                    src = _U(oh * wq)
                    for j in range(_U(0), _U(ow_n)):
                        yf[dst + j] = acc[src + j]


@fused._sums_loop
def _backward(xf, gf, gshape, wf, c_in, h, w, kh_n, kw_n, sh, sw, ph, pw, dh, dw, dxf, dwf):
    """The input gradient into dx (N, C, H, W) when dxf has entries, and the weight gradient into dw (O, 1, KH,
    KW) when dwf has entries (x is read only then), from the output gradient g (N, O, OH, OW); all flat."""
    need_dx, need_dw = dxf.size > 0, dwf.size > 0
    n_img, o_out, oh_n, ow_n = gshape
    m = o_out // c_in
    hq = oh_n + (kh_n - 1) * dh // sh
    wq = ow_n + (kw_n - 1) * dw // sw
    size = (hq + 1) * wq
    span = _U(oh_n * wq)
    pf = numpy.zeros(sh * sw * size, gf.dtype)
    dpf = numpy.zeros(sh * sw * size, gf.dtype)
    grow = numpy.zeros(oh_n * wq, gf.dtype)  # g[n, o] in rows wq wide, zeros past ow_n
    acc = numpy.zeros(o_out * kh_n * kw_n, numpy.float64)
    for n in range(n_img):
        for c in range(c_in):
            if need_dw:
                _phases(xf, (n * c_in + c) * h * w, h, w, sh, sw, ph, pw, hq, wq, pf)
            if need_dx:
                dpf[:] = 0
            for o in range(c * m, c * m + m):
                for oh in range(oh_n):
                    src = _U(((n * o_out + o) * oh_n + oh) * ow_n)
                    dst = _U(oh * wq)
                    for j in range(_U(0), _U(ow_n)):
                        grow[dst + j] = gf[src + j]
                for kh in range(kh_n):
                    a = kh * dh
                    for kw in range(kw_n):
                        b = kw * dw
                        at = _U(((a % sh) * sw + b % sw) * size + (a // sh) * wq + b // sw)
                        t = (o * kh_n + kh) * kw_n + kw
                        if need_dx:
                            wv = wf[t]
                            for i in range(_U(0), span):
                                dpf[at + i] += wv * grow[i]
                        if need_dw:
                            s = grow[0] * 0
                            for i in range(_U(0), span):
                                s += grow[i] * pf[at + i]
                            acc[t] += s
            if need_dx:
                _unphase(dpf, h, w, sh, sw, ph, pw, hq, wq, dxf, (n * c_in + c) * h * w)
    if need_dw:
        for t in range(o_out * kh_n * kw_n):
            dwf[t] = acc[t]


def _geom(geom):
    stride, lo, _hi, dil, _groups = geom
    return stride[0], stride[1], lo[0], lo[1], dil[0], dil[1]


def conv(x, w, b, geom, osize):
    """(N, O, *osize): the depthwise convolution of x (N, C, H, W) with w (O, 1, KH, KW), plus bias b or None.
    Padding after the input (``hi``) is implied by osize."""
    y = numpy.empty((x.shape[0], w.shape[0]) + tuple(osize), dtype=x.dtype)
    _forward(numpy.ascontiguousarray(x).reshape(-1), x.shape, numpy.ascontiguousarray(w).reshape(-1), w.shape[2],
             w.shape[3], *_geom(geom), y.reshape(-1), y.shape)
    if b is not None:
        y += b.reshape(-1, 1, 1)
    return y


def grads(g, geom, spatial, ksize, x=None, w=None):
    """(dx, dw) of the depthwise convolution (``geom``'s groups input channels) from its output gradient g
    (N, O, OH, OW): dx (N, C, *spatial) when the weight w is given, dw (O, 1, *ksize) when the input x is given,
    else None. One walk over g serves both."""
    g = numpy.ascontiguousarray(g)
    dt = g.dtype
    none = numpy.empty(0, dt)  # a gradient not asked for
    dx = numpy.zeros((g.shape[0], geom[4]) + tuple(spatial), dt) if w is not None else None
    dw = numpy.empty((g.shape[1], 1) + tuple(ksize), dt) if x is not None else None
    _backward(none if x is None else numpy.ascontiguousarray(x).reshape(-1), g.reshape(-1), g.shape,
              none if w is None else numpy.ascontiguousarray(w).reshape(-1), geom[4], spatial[0], spatial[1],
              ksize[0], ksize[1], *_geom(geom), none if dx is None else dx.reshape(-1),
              none if dw is None else dw.reshape(-1))
    return dx, dw
