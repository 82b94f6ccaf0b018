"""workbench.signal.windows against torch.signal.windows: values (symmetric and periodic), dtypes, errors."""
import numpy as np
import pytest
import torch

import workbench as wb

CASES = [("bartlett", {}), ("blackman", {}), ("cosine", {}), ("exponential", {"tau": 2.0}), ("gaussian", {"std": 1.7}),
         ("general_cosine", {"a": [0.46, 0.23, 0.31]}), ("general_hamming", {"alpha": 0.6}), ("hamming", {}),
         ("hann", {}), ("kaiser", {"beta": 6.0}), ("nuttall", {})]


@pytest.mark.parametrize("name,kw", CASES, ids=[c[0] for c in CASES])
def test_windows_match_torch(name, kw):
    for M in (0, 1, 2, 5, 16):
        for sym in (True, False):
            a = getattr(wb.signal.windows, name)(M, sym=sym, dtype=wb.float64, **kw).numpy()
            b = getattr(torch.signal.windows, name)(M, sym=sym, dtype=torch.float64, **kw).numpy()
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12, err_msg=f"{name} M={M} sym={sym}")
    assert getattr(wb.signal.windows, name)(4, **kw).dtype is wb.float32


def test_errors_match_torch():
    W, TW = wb.signal.windows, torch.signal.windows
    for call in [lambda m: m.hann(3, dtype=(wb if m is W else torch).int64), lambda m: m.exponential(-2),
                 lambda m: m.exponential(5, center=1.0), lambda m: m.exponential(3, tau=0),
                 lambda m: m.kaiser(3, beta=-1), lambda m: m.gaussian(3, std=-1), lambda m: m.cosine(-1)]:
        with pytest.raises(ValueError) as want:
            call(TW)
        with pytest.raises(ValueError) as got:
            call(W)
        assert str(got.value).split(":")[0].replace("workbench", "torch") == str(want.value).split(":")[0]
    assert W.exponential(5, center=1.0, sym=False).shape == (5,)
