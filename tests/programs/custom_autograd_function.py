"""Custom autograd Functions as users write them: a Swish activation with a learnable slope (forward and
backward by hand, ctx.save_for_backward, ctx.needs_input_grad), checked with gradcheck and gradgradcheck in
float64, and a sign() with a straight-through estimator (@once_differentiable) that trains a network with
binary weights on the 8x8 digits. Checked by held-out accuracy of the binarised network."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.autograd import Function, gradcheck, gradgradcheck
from torch.autograd.function import once_differentiable


class Swish(Function):
    @staticmethod
    def forward(ctx, x, beta):
        ctx.save_for_backward(x, beta)
        return x * torch.sigmoid(beta * x)

    @staticmethod
    def backward(ctx, grad_out):
        x, beta = ctx.saved_tensors
        # recomputed from the inputs (not saved from forward) so that this backward is itself differentiable
        s = torch.sigmoid(beta * x)
        ds = s * (1 - s)
        grad_x = grad_beta = None
        if ctx.needs_input_grad[0]:
            grad_x = grad_out * (s + x * beta * ds)
        if ctx.needs_input_grad[1]:
            grad_beta = (grad_out * x * x * ds).sum().reshape(beta.shape)
        return grad_x, grad_beta


class SignSTE(Function):
    """sign() going forward; the gradient passes straight through where |x| <= 1 going back."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return torch.where(x >= 0, torch.ones_like(x), -torch.ones_like(x))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1).to(grad_out.dtype)


x = torch.randn(6, 3, dtype=torch.double, requires_grad=True)
beta = torch.tensor([1.3], dtype=torch.double, requires_grad=True)
assert gradcheck(Swish.apply, (x, beta), eps=1e-6, atol=1e-4)
assert gradgradcheck(Swish.apply, (x, beta), eps=1e-6, atol=1e-4)
y = Swish.apply(x, beta.detach())
y.sum().backward()
assert beta.grad is None and x.grad is not None


class BinaryLinear(nn.Linear):
    def forward(self, input):
        scale = self.weight.abs().mean()
        return F.linear(input, SignSTE.apply(self.weight) * scale, self.bias)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = BinaryLinear(64, 128), BinaryLinear(128, 10)
        self.beta = nn.Parameter(torch.ones(1))

    def forward(self, x):
        return self.fc2(Swish.apply(self.fc1(x), self.beta))


torch.manual_seed(0)
digits = load_digits()
X = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(len(X))
train, test = perm[:1400], perm[1400:]
model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(30):
    for idx in train.split(100):
        loss = F.cross_entropy(model(X[idx]), y[idx])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        with torch.no_grad():
            for layer in (model.fc1, model.fc2):
                layer.weight.clamp_(-1, 1)
with torch.no_grad():
    accuracy = (model(X[test]).argmax(1) == y[test]).float().mean().item()
    distinct = {round(v, 6) for v in (SignSTE.apply(model.fc1.weight) * model.fc1.weight.abs().mean()).unique().tolist()}
print(f"binary-weight MLP with Swish(beta={model.beta.item():.2f}): held-out accuracy {accuracy:.3f}, weight levels {len(distinct)}")
assert accuracy > 0.9, accuracy
assert len(distinct) == 2
