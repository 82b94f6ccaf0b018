"""autocast state is thread-local, as PyTorch's: a region entered in one thread leaves the ops of another
thread alone, a new thread starts with autocast off (even when started inside a region), the dtype,
cache switch, nesting and cast cache are per thread, and a thread that ends inside an enabled region does
not leave the process-wide fast flag on. Each behaviour is checked against PyTorch doing the same."""
import gc
import threading

import numpy as np
import pytest
import torch

import workbench as wb
from workbench.ops import _autocast

A = np.random.default_rng(0).standard_normal((4, 4)).astype(np.float32)


def _in_thread(fn):
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # re-raised in the test's thread
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if "error" in out:
        raise out["error"]
    return out["value"]


@pytest.mark.parametrize("m", [wb, torch], ids=["workbench", "torch"])
def test_two_threads_one_in_autocast(m):
    """Thread 1 holds an autocast region open while thread 2 runs a matmul: thread 2 stays float32."""
    entered, done = threading.Event(), threading.Event()
    seen = {}

    def inside():
        with m.autocast("cpu"):
            entered.set()
            done.wait(10)
            seen["inside"] = (m.tensor(A) @ m.tensor(A)).dtype

    t = threading.Thread(target=inside)
    t.start()
    assert entered.wait(10)
    seen["other"] = (m.tensor(A) @ m.tensor(A)).dtype
    seen["other_enabled"] = m.is_autocast_enabled("cpu")
    done.set()
    t.join()
    assert seen == {"inside": m.bfloat16, "other": m.float32, "other_enabled": False}


@pytest.mark.parametrize("m", [wb, torch], ids=["workbench", "torch"])
def test_new_thread_starts_with_autocast_off_and_default_dtype(m):
    with m.autocast("cpu", dtype=m.float16):
        inner = _in_thread(lambda: ((m.tensor(A) @ m.tensor(A)).dtype, m.is_autocast_enabled("cpu"),
                                    m.get_autocast_dtype("cpu")))
        assert (m.tensor(A) @ m.tensor(A)).dtype is m.float16
    assert inner == (m.float32, False, m.bfloat16)


@pytest.mark.parametrize("m", [wb, torch], ids=["workbench", "torch"])
def test_dtype_and_cache_switch_set_in_a_thread_stay_there(m):
    def set_them():
        m.set_autocast_dtype("cpu", m.float16)
        m.set_autocast_cache_enabled(False)
        return m.get_autocast_dtype("cpu"), m.is_autocast_cache_enabled()

    assert _in_thread(set_them) == (m.float16, False)
    assert m.get_autocast_dtype("cpu") is m.bfloat16 and m.is_autocast_cache_enabled()


def test_nesting_and_cache_are_per_thread():
    lin = wb.nn.Linear(4, 4)
    x = wb.tensor(A)
    with wb.autocast("cpu"):
        lin(x)
        assert len(_autocast.STATE.cache) == 2

        def other():
            with wb.autocast("cpu"):
                lin(x)
                cached = len(_autocast.STATE.cache)
            return cached, len(_autocast.STATE.cache), _autocast.STATE.nesting

        # the other thread casts into its own cache and clears it on leaving its own outermost region
        assert _in_thread(other) == (2, 0, 0)
        assert len(_autocast.STATE.cache) == 2 and _autocast.STATE.nesting == 1
    assert not _autocast.STATE.cache


def test_fast_flag_follows_the_threads():
    assert _autocast.AUTOCAST[0] is False
    with wb.autocast("cpu"):
        assert _autocast.AUTOCAST[0] is True
        _in_thread(lambda: wb.set_autocast_enabled("cpu", False))  # another thread turning its own off
        assert _autocast.AUTOCAST[0] is True and wb.is_autocast_enabled("cpu")
    assert _autocast.AUTOCAST[0] is False

    _in_thread(lambda: wb.set_autocast_enabled("cpu", True))  # a thread ending with autocast on
    gc.collect()
    assert _autocast.AUTOCAST[0] is False and not wb.is_autocast_enabled("cpu")
