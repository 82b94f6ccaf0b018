"""Shared fixtures: the backends every op test runs on, and the fake-cupy CUDA device."""
import os

import pytest

import workbench as wb
from workbench.testing import fake_cupy


def _real_gpu():
    if not os.environ.get("WORKBENCH_TEST_GPU"):
        return False
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


REAL_GPU = _real_gpu()


@pytest.fixture
def fake_cuda():
    """Route workbench's 'cuda' device to the NumPy-backed fake cupy for the test."""
    with fake_cupy.installed() as cp:
        yield cp


@pytest.fixture(params=["cpu", "fake_cuda"] + (["cuda"] if REAL_GPU else []))
def device(request):
    """Each test using it runs on numpy, on the fake cupy, and on real CuPy when a GPU is there."""
    if request.param == "fake_cuda":
        with fake_cupy.installed():
            yield "cuda"
    else:
        yield request.param


def pytest_collection_modifyitems(config, items):
    skip_gpu = pytest.mark.skip(reason="needs a CUDA GPU and WORKBENCH_TEST_GPU=1 (make test-gpu)")
    for item in items:
        # the real-CuPy instance of every device-parametrised test is a gpu test, so `-m gpu` runs them all
        if getattr(item, "callspec", None) is not None and item.callspec.params.get("device") == "cuda":
            item.add_marker(pytest.mark.gpu)
        if "gpu" in item.keywords and not REAL_GPU:
            item.add_marker(skip_gpu)


@pytest.fixture(autouse=True)
def _reset_state():
    yield
    wb.set_default_dtype(wb.float32)
    wb.autograd.graph.ANOMALY[0] = False
