"""Stream capture and CUDA graphs for the fake cupy: ``Stream.begin_capture()`` / ``end_capture()`` -> ``Graph``.

Faithful to what CUDA does with work pushed into a capturing stream: it is recorded, not run. While a capture is
under way every fake kernel (a ufunc, an array function, a copy, an ``__setitem__``, a random draw, an emulated
RawModule or ElementwiseKernel launch) is appended to the capture: its result arrays are allocated, as the memory
pool does during a capture, but hold garbage (NaN, -1), and writes into existing arrays do not happen. Views,
which launch nothing, are made as usual. ``Graph.launch()`` then runs the recorded kernels in order, reading and
writing the very arrays they were captured with (a graph replays on fixed addresses). A random draw is replayed
with the numbers it drew at capture, as a captured cuRAND launch repeats its baked-in offsets.

It fails loudly where CUDA refuses, as CuPy reports it (a ``CUDARuntimeError``, a RuntimeError): a synchronous
device-to-host read (``.get()``, ``.item()``, ``float()``, ``bool()``..., a function whose answer is a host value) or
host-to-device copy, a stream or device synchronisation, or work on another stream, while capturing (the capture
is then invalidated: ``end_capture`` raises ``cudaErrorStreamCaptureInvalidated``); capturing on the null stream,
beginning a capture twice, ending one that was not begun, launching a graph into a capture.

Allocations during a capture are allowed, as CuPy's default relaxed capture mode allows them; ``Graph.allocs``
counts those made from the default memory pool rather than a private one (``cuda.using_allocator``), which a graph
user should avoid: the default pool hands such blocks out again while the graph still writes into them.
"""
import contextlib

import numpy

CAPTURING = [None]  # the capture under way, if any
PRIVATE_ALLOCATOR = [None]  # the allocator set by cuda.using_allocator, if any


class CUDARuntimeError(RuntimeError):
    """What CuPy raises for a failed CUDA runtime call (cupy_backends.cuda.api.runtime.CUDARuntimeError)."""


class _Capture:
    __slots__ = ("stream", "ops", "invalid", "default_pool_allocs", "keep")

    def __init__(self, stream):
        self.stream, self.ops, self.invalid, self.default_pool_allocs, self.keep = stream, [], None, 0, []


def begin(stream):
    if stream.ptr in (0, 1):
        raise RuntimeError("cannot capture on the default (legacy) stream")
    if CAPTURING[0] is not None:
        raise CUDARuntimeError("cudaErrorIllegalState: the stream is already capturing")
    CAPTURING[0] = _Capture(stream)


def end(stream):
    cap = CAPTURING[0]
    if cap is None or cap.stream is not stream:
        raise CUDARuntimeError("cudaErrorIllegalState: the stream is not capturing")
    CAPTURING[0] = None
    if cap.invalid is not None:
        raise CUDARuntimeError(f"cudaErrorStreamCaptureInvalidated: operation failed due to a previous error during "
                               f"capture ({cap.invalid})")
    return Graph(cap)


def is_capturing(stream):
    cap = CAPTURING[0]
    return cap is not None and cap.stream is stream


def refuse(what):
    """A synchronising call: an error while a capture is under way (which it invalidates)."""
    cap = CAPTURING[0]
    if cap is not None:
        cap.invalid = cap.invalid or what
        raise CUDARuntimeError(f"cudaErrorStreamCaptureUnsupported: operation not permitted when stream is capturing "
                               f"({what})")


def _check_stream(cap, current):
    # current: the stream the work goes to (None: the caller does not know it, as the kernel emulator)
    if current is not None and current is not cap.stream:
        cap.invalid = cap.invalid or "work on another stream"
        raise CUDARuntimeError("cudaErrorStreamCaptureImplicit: operation would make the legacy stream depend on a "
                               "capturing blocking stream (work was launched on a stream that is not capturing)")


def _arrays(res):
    if isinstance(res, numpy.ndarray):
        return [res]
    if isinstance(res, (tuple, list)):
        return [r for r in res if isinstance(r, numpy.ndarray)]
    return []


def _garbage(a):
    # what a kernel that has not run leaves in its output: uninitialised memory
    host = a.view(numpy.ndarray)
    kind = host.dtype.kind
    host[...] = numpy.nan if kind in "fc" else (True if kind == "b" else numpy.iinfo(host.dtype).max)


def kernel(compute, inputs, current_stream):
    """One kernel (or a few) making fresh arrays, run now when not capturing: ``compute()`` -> result. While
    capturing, the result is allocated with garbage and ``compute`` recorded to fill it at launch; a result that
    is a view of an input launches nothing."""
    cap = CAPTURING[0]
    if cap is None:
        return compute()
    _check_stream(cap, current_stream)
    CAPTURING[0] = None  # the kernel's own calls are not captured again
    try:
        res = compute()
    finally:
        CAPTURING[0] = cap
    srcs = [a.view(numpy.ndarray) for a in inputs if isinstance(a, numpy.ndarray)]
    fresh = [r for r in _arrays(res) if not any(numpy.may_share_memory(r.view(numpy.ndarray), s) for s in srcs)]
    if not fresh:
        return res
    for r in fresh:
        _garbage(r)
        if PRIVATE_ALLOCATOR[0] is None:
            cap.default_pool_allocs += 1
    cap.keep.extend(fresh)

    def run():
        for r, new in zip(_arrays(res), _arrays(compute())):
            if any(r is f for f in fresh):
                numpy.copyto(r.view(numpy.ndarray), new.view(numpy.ndarray))
    cap.ops.append(run)
    return res


def inplace(run, current_stream):
    """A kernel writing into existing arrays: run now, or, while capturing, recorded (and not run)."""
    cap = CAPTURING[0]
    if cap is None:
        return run()
    _check_stream(cap, current_stream)
    cap.ops.append(run)
    return None


def fixed(values, current_stream):
    """A random draw: while capturing, replayed at launch with the numbers drawn now."""
    cap = CAPTURING[0]
    if cap is None or not isinstance(values, numpy.ndarray):
        return values
    saved = numpy.array(values.view(numpy.ndarray), copy=True)
    return kernel(lambda: _like(values, saved), (), current_stream)


def _like(template, host):
    out = numpy.array(host, copy=True).view(type(template))
    out._dev = template._dev
    return out


class Graph:
    """A captured CUDA graph: ``launch(stream=None)`` runs its kernels; ``upload`` is accepted."""

    def __init__(self, cap):
        self._ops = cap.ops
        self._keep = cap.keep  # the arrays the kernels write: a graph replays on fixed addresses
        self.allocs = cap.default_pool_allocs
        self.launches = 0

    def launch(self, stream=None):
        if CAPTURING[0] is not None:
            raise CUDARuntimeError("cudaErrorStreamCaptureUnsupported: the fake cupy does not capture a graph "
                                   "launched into a capture")
        for op in self._ops:
            op()
        self.launches += 1

    def upload(self, stream=None):
        pass

    def __len__(self):
        return len(self._ops)


@contextlib.contextmanager
def using_allocator(allocator=None):
    """cupy.cuda.using_allocator: allocations inside come from ``allocator`` (here: counted as private)."""
    prev = PRIVATE_ALLOCATOR[0]
    PRIVATE_ALLOCATOR[0] = allocator
    try:
        yield
    finally:
        PRIVATE_ALLOCATOR[0] = prev
