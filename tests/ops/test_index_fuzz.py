"""Random indexing programs on workbench and on PyTorch: reads (``y[key]``) and stores (``y[key] = v``) on a
recorded tensor, with keys mixing ints, slices (steps, negative bounds), None, Ellipsis, boolean masks and
integer index tensors and lists. Values, both gradients (of the indexed tensor and of the stored value) and
errors (type and words) must agree. Seeded: a failing seed names its program."""
import numpy as np
import pytest

import workbench as wb

torch = pytest.importorskip("torch")

N_KEYS = 1200
SHAPE = (4, 3, 5)


def _component(rng, size):
    """One key component for a dim of ``size``: (description, builder of the component for a library)."""
    kind = rng.choice(["int", "slice", "slice", "none", "ellipsis", "list", "tensor", "bool"])
    if kind == "int":
        i = int(rng.integers(-size, size))
        return str(i), lambda lib, i=i: i, 1
    if kind == "slice":
        a = [None, int(rng.integers(-size, size))][int(rng.integers(0, 2))]
        b = [None, int(rng.integers(-size, size + 1))][int(rng.integers(0, 2))]
        step = [None, 1, 2, 3][int(rng.integers(0, 4))]
        return f"{a}:{b}:{step}", lambda lib, s=slice(a, b, step): s, 1
    if kind == "none":
        return "None", lambda lib: None, 0
    if kind == "ellipsis":
        return "...", lambda lib: Ellipsis, -1
    if kind == "list":
        idx = [int(v) for v in rng.integers(-size, size, int(rng.integers(1, 4)))]
        return str(idx), lambda lib, idx=idx: idx, 1
    if kind == "tensor":
        idx = rng.integers(-size, size, tuple(int(n) for n in rng.integers(1, 3, int(rng.integers(1, 3)))))
        return f"tensor({idx.tolist()})", lambda lib, idx=idx: lib.tensor(idx), 1
    mask = rng.random(size) < 0.5
    return f"mask({mask.astype(int).tolist()})", lambda lib, m=mask: lib.tensor(m), 1


def _key(seed):
    rng = np.random.default_rng(seed)
    parts, dim, ellipsis = [], 0, False
    for _ in range(int(rng.integers(1, 5))):
        size = SHAPE[dim] if dim < len(SHAPE) else 1
        desc, build, used = _component(rng, size)
        if used == -1:
            if ellipsis:
                continue
            ellipsis = True
            dim = len(SHAPE) - (len(parts) - dim)  # roughly: later components index trailing dims
        parts.append((desc, build))
        dim += max(used, 0)
    return parts


def _build(lib, parts):
    key = tuple(build(lib) for _, build in parts)
    return key[0] if len(key) == 1 else key


def _read(lib, parts, x0, w_seed):
    x = lib.tensor(x0, requires_grad=True)
    y = x * 1.5
    try:
        out = y[_build(lib, parts)]
    except (IndexError, RuntimeError, TypeError, ValueError) as e:
        return type(e).__name__, None, None
    w = np.random.default_rng(w_seed).standard_normal(tuple(out.shape))
    (out * lib.tensor(w)).sum().backward()
    return out.detach().numpy().copy(), x.grad.numpy().copy(), tuple(out.shape)


def _store(lib, parts, x0, v0):
    x = lib.tensor(x0, requires_grad=True)
    v = lib.tensor(v0, requires_grad=True)
    y = x * 1.5
    try:
        y[_build(lib, parts)] = v * 2
    except (IndexError, RuntimeError, TypeError, ValueError) as e:
        return type(e).__name__, None, None
    w = np.random.default_rng(7).standard_normal(SHAPE)
    (y * lib.tensor(w)).sum().backward()
    return y.detach().numpy().copy(), x.grad.numpy().copy(), v.grad.numpy().copy()


@pytest.mark.parametrize("chunk", range(6))
def test_random_index_reads_and_stores_match_pytorch(chunk):
    x0 = np.random.default_rng(1).standard_normal(SHAPE)
    for seed in range(chunk * N_KEYS // 6, (chunk + 1) * N_KEYS // 6):
        parts = _key(seed)
        desc = "[" + ", ".join(d for d, _ in parts) + "]"
        t = _read(torch, parts, x0, seed)
        w = _read(wb, parts, x0, seed)
        if isinstance(t[0], str):
            assert w[0] == t[0], f"seed {seed} y{desc}: workbench {w[0] if isinstance(w[0], str) else 'ran'}, PyTorch {t[0]}"
            continue
        assert not isinstance(w[0], str), f"seed {seed} y{desc}: workbench raised {w[0]}, PyTorch ran"
        assert w[2] == t[2], f"seed {seed} y{desc}: shape {w[2]} vs PyTorch's {t[2]}"
        np.testing.assert_array_equal(w[0], t[0], err_msg=f"seed {seed} y{desc}")
        np.testing.assert_allclose(w[1], t[1], rtol=1e-12, atol=1e-12, err_msg=f"seed {seed} y{desc}: x.grad")
        # a store of a value of the read's shape (broadcast from its last dims where that is all it has)
        v0 = np.random.default_rng(seed + 99).standard_normal(t[2])
        ts, ws = _store(torch, parts, x0, v0), _store(wb, parts, x0, v0)
        if isinstance(ts[0], str):
            assert ws[0] == ts[0], f"seed {seed} y{desc} = v: workbench {ws[0]!r}, PyTorch {ts[0]}"
            continue
        assert not isinstance(ws[0], str), f"seed {seed} y{desc} = v: workbench raised {ws[0]}"
        np.testing.assert_allclose(ws[0], ts[0], rtol=1e-12, err_msg=f"seed {seed} y{desc} = v: values")
        np.testing.assert_allclose(ws[1], ts[1], rtol=1e-12, atol=1e-12, err_msg=f"seed {seed} y{desc} = v: x.grad")
        np.testing.assert_allclose(ws[2], ts[2], rtol=1e-12, atol=1e-12, err_msg=f"seed {seed} y{desc} = v: v.grad")


@pytest.mark.parametrize("key", ["[0, :, [1, 2]]", "[:, 0, None, [1, 2]]", "[lib.tensor(0), :, [1, 2]]",
                                 "[:, [0], ..., lib.tensor([0])]", "[1, ..., [[0, 1], [2, 3]]]", "[0, :, [True, False, True, False, True]]"])
def test_integers_apply_first_as_in_pytorch(key):
    """PyTorch removes integer-indexed dims before it places the index arrays' dims (x[0, :, idx] is (3, 2));
    NumPy counts the integer as an index array (its (2, 3)). Reads, stores and both gradients follow PyTorch."""
    out = {}
    for lib in (torch, wb):
        x = lib.arange(60.0).reshape(4, 3, 5).requires_grad_()
        r = eval("(x * 1)" + key, {"lib": lib, "x": x})
        w = lib.tensor(np.arange(r.numel(), dtype=np.float64).reshape(tuple(r.shape)))
        (r * w).sum().backward()
        v = lib.tensor(np.arange(r.numel(), dtype=np.float64).reshape(tuple(r.shape)) + 100, requires_grad=True)
        y = lib.zeros(4, 3, 5, dtype=lib.float64)
        exec("y" + key + " = v * 2", {"lib": lib, "y": y, "v": v})
        (y * lib.tensor(np.arange(60.0).reshape(4, 3, 5))).sum().backward()
        out[lib.__name__] = (tuple(r.shape), r.detach().numpy().copy(), x.grad.numpy().copy(), y.detach().numpy().copy(),
                             v.grad.numpy().copy())
    t, w = out["torch"], out["workbench"]
    assert w[0] == t[0]
    for a, b in zip(w[1:5], t[1:5]):
        np.testing.assert_array_equal(a, b)
