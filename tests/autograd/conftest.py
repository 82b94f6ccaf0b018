"""Every autograd test starts and ends with grad mode on, anomaly mode off and trace level 1."""
import pytest

from workbench.autograd import graph
from workbench.autograd.grad_mode import STATE


@pytest.fixture(autouse=True)
def _clean_autograd_state():
    yield
    STATE.enabled, STATE.inference = True, False
    graph.ANOMALY[:] = [False, True]
    graph.TRACE[0] = 1
