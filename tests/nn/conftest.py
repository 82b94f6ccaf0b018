"""Fixtures of the nn tests."""
import pytest

from workbench._backend import fused


@pytest.fixture(params=[True, False], ids=["loops", "numpy"])
def loops(request):
    """Runs the test with ``_backend/fused.py``'s Numba loops on, then off (the path of an install without
    Numba); yields which."""
    if request.param and fused._numba() is None:
        pytest.skip("numba is not installed")
    was = fused.ENABLED[0]
    fused.ENABLED[0] = request.param
    yield request.param
    fused.ENABLED[0] = was
