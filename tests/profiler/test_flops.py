"""FLOPs per op family against hand counts, and against PyTorch's FlopCounterMode where it counts the op."""
import pytest

import workbench as wb
import workbench.nn.functional as F
from workbench.profiler.flops import node_flops

torch = pytest.importorskip("torch")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402


def _known(t):
    # what the snapshot knows of the inputs: the producers' output shapes
    n = t.grad_fn
    return n, [tuple(nx._out_meta[nr][0]) if nx is not None else None for nx, nr in n.next_functions]


def flops(t):
    return node_flops(*_known(t))


def torch_flops(fn):
    with FlopCounterMode(display=False) as m:
        fn()
    return m.get_total_flops()


def leaf(*shape):
    return wb.randn(*shape, requires_grad=True)


def test_matmul_family_is_2mkn_and_matches_pytorch():
    a, b = leaf(5, 3), leaf(3, 4)
    assert flops(a @ b) == 2 * 5 * 3 * 4
    a, b = leaf(2, 5, 3), leaf(2, 3, 4)
    assert flops(wb.bmm(a, b)) == 2 * 2 * 5 * 3 * 4
    v = leaf(3)
    assert flops(v @ b[0].detach().requires_grad_()) == 2 * 3 * 4
    x, w, bias = leaf(2, 5, 4), leaf(7, 4), leaf(7)
    assert flops(F.linear(x, w, bias)) == 2 * 10 * 4 * 7 == torch_flops(
        lambda: torch.nn.functional.linear(torch.randn(2, 5, 4), torch.randn(7, 4), torch.randn(7)))
    # data input that does not require grad: its shape comes from the saved tensor
    xd = wb.randn(6, 4)
    assert flops(F.linear(xd, w)) == 2 * 6 * 4 * 7


def test_conv_and_transposed_conv_match_pytorch():
    x, w = leaf(2, 3, 8, 8), leaf(6, 3, 3, 3)
    y = F.conv2d(x, w, stride=2, padding=1)
    assert flops(y) == 2 * y.numel() * 27 == torch_flops(
        lambda: torch.nn.functional.conv2d(torch.randn(2, 3, 8, 8), torch.randn(6, 3, 3, 3), stride=2, padding=1))
    wg = leaf(6, 1, 3, 3)
    yg = F.conv2d(x.repeat(1, 2, 1, 1), wg, groups=6)
    assert flops(yg) == 2 * yg.numel() * 9
    xt, wt = leaf(2, 6, 5, 5), leaf(6, 4, 3, 3)
    assert flops(F.conv_transpose2d(xt, wt, stride=2)) == 2 * 2 * 6 * 25 * 36 == torch_flops(
        lambda: torch.nn.functional.conv_transpose2d(torch.randn(2, 6, 5, 5), torch.randn(6, 4, 3, 3), stride=2))


def test_attention_counts_both_products():
    q, k, v = leaf(2, 3, 5, 4), leaf(2, 3, 6, 4), leaf(2, 3, 6, 7)
    hand = 2 * 2 * 3 * 5 * 6 * 4 + 2 * 2 * 3 * 5 * 6 * 7
    assert flops(F.scaled_dot_product_attention(q, k, v)) == hand == torch_flops(
        lambda: torch.nn.functional.scaled_dot_product_attention(
            torch.randn(2, 3, 5, 4), torch.randn(2, 3, 6, 4), torch.randn(2, 3, 6, 7)))


def test_einsum_contraction():
    a, b = leaf(3, 4), leaf(4, 5)
    assert flops(wb.einsum("ij,jk->ik", a, b)) == 2 * 3 * 4 * 5


def test_elementwise_reductions_norms_and_movement():
    x = leaf(4, 6)
    assert flops(x * x) == 24 and flops(x.exp()) == 24 and flops(x + 1.0) == 24
    assert flops(wb.addcmul(x, x, x)) == 3 * 24
    assert flops(x.sum()) == 24 and flops(x.mean(dim=1)) == 24 and flops(x.var(dim=0)) == 3 * 24
    assert flops(F.softmax(x, dim=1)) == 5 * 24
    w, b = leaf(6), leaf(6)
    assert flops(F.layer_norm(x, (6,), w, b)) == 7 * 24
    assert flops(F.layer_norm(x, (6,))) == 5 * 24
    assert flops(x.reshape(6, 4)) == 0 and flops(x.t()) == 0 and flops(wb.cat([x, x])) == 0
    assert flops(x[1:]) == 0


def test_unknown_is_none_not_zero():
    x = leaf(5)

    class Twice(wb.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    assert flops(Twice.apply(x)) is None
    assert flops(x.sort().values) is None


def test_counts_survive_backward_freeing():
    a, b = wb.randn(5, 3), leaf(3, 4)  # a is data: the edge knows nothing of it, its saved tensor does
    y = a @ b
    n, _ = _known(y)
    ins = [None, None]
    before = node_flops(n, ins)
    y.sum().backward()
    assert n._saved is None and node_flops(n, ins) == before == 2 * 5 * 3 * 4


def test_losses_norms_and_linear_algebra():
    x = leaf(8, 5)
    t = wb.randint(0, 5, (8,))
    assert flops(F.cross_entropy(x, t)) == 6 * 40
    assert flops(F.mse_loss(x, wb.randn(8, 5))) == 3 * 40
    xb, w, b = leaf(4, 3, 6), leaf(3), leaf(3)
    assert flops(F.batch_norm(xb, None, None, w, b, training=True)) == 7 * 72
    a = leaf(2, 4, 4)
    assert flops(wb.linalg.inv(a)) == 2 * 2 * 4 ** 3
    assert flops(wb.linalg.solve(a, leaf(2, 4, 3))) == int(2 * (2 * 4 ** 3 / 3 + 2 * 16 * 3))
    assert flops(wb.linalg.svd(a).S) is None
