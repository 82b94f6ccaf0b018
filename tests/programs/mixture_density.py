"""A mixture density network on the classic inverse problem: y -> x = y + 0.3 sin(2 pi y) + noise is
one-valued, but x -> y has up to three branches. The network outputs mixture logits, means and scales, and
the loss is the negative log-likelihood of a torch.distributions MixtureSameFamily(Categorical, Normal).
A single Normal (the same network with one component) is the baseline. Checked by held-out NLL and by
sampling: at an x with three branches the samples fall on all three."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributions import Categorical, MixtureSameFamily, Normal

torch.manual_seed(0)


def make_data(n):
    y = torch.rand(n, 1)
    x = y + 0.3 * torch.sin(2 * math.pi * y) + 0.05 * torch.randn(n, 1)
    return x, y


class MDN(nn.Module):
    def __init__(self, components, hidden=48):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(1, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.logits = nn.Linear(hidden, components)
        self.means = nn.Linear(hidden, components)
        self.log_scales = nn.Linear(hidden, components)

    def forward(self, x):
        h = self.body(x)
        scales = F.softplus(self.log_scales(h)) + 1e-3
        mixture = Categorical(logits=self.logits(h))
        return MixtureSameFamily(mixture, Normal(self.means(h), scales))


def fit(model, x, y, steps=2000):
    # lr 1e-2 for 600 steps collapsed the mixture onto one branch for 2 of 4 seeds, in PyTorch too
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for _ in range(steps):
        nll = -model(x).log_prob(y.squeeze(1)).mean()
        opt.zero_grad()
        nll.backward()
        opt.step()
    return model


x_train, y_train = make_data(1000)
x_test, y_test = make_data(500)
mdn, single = fit(MDN(5), x_train, y_train), fit(MDN(1), x_train, y_train)
with torch.no_grad():
    nll_mdn = -mdn(x_test).log_prob(y_test.squeeze(1)).mean().item()
    nll_single = -single(x_test).log_prob(y_test.squeeze(1)).mean().item()
    dist = mdn(torch.full((1, 1), 0.5))
    samples = dist.sample((2000,)).squeeze(1)
    assert samples.shape == (2000,) and dist.batch_shape == (1,) and dist.event_shape == ()
    # the three y with y + 0.3 sin(2 pi y) = 0.5
    branches = torch.tensor([0.1235, 0.5, 0.8765])
    nearest = (samples[:, None] - branches[None, :]).abs().argmin(1)
    share = torch.bincount(nearest, minlength=3).float() / len(samples)
print(f"MDN: held-out NLL {nll_mdn:.3f} (single Gaussian {nll_single:.3f}); samples at x=0.5 per branch {share.tolist()}")
# the mixture fits all three branches (about -1.1 to -1.3); one Gaussian per x cannot (-0.2 to -0.7 by seed)
assert nll_mdn < -0.85 and nll_mdn < nll_single - 0.25, (nll_mdn, nll_single)
assert (share > 0.1).all(), share
