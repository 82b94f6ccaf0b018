"""Gaussian-process regression written out by hand: an RBF kernel from torch.cdist, hyperparameters
(log length-scale, log signal and noise scales) learnt by maximising the marginal likelihood with Adam
(Cholesky factor, cholesky_solve, the log-determinant from the factor's diagonal), then the posterior
mean and variance on held-out points. The marginal likelihood is checked against
distributions.MultivariateNormal, the data's noise level is recovered, and the 90% predictive intervals
cover about 90% of held-out targets (torch.quantile of the standardised errors)."""
import math

import torch
from torch.distributions import MultivariateNormal

torch.manual_seed(0)
torch.set_default_dtype(torch.float64)
NOISE = 0.1


def f(x):
    return torch.sin(3 * x) + 0.5 * torch.cos(7 * x)


x_train = torch.rand(60, 1) * 4 - 2
y_train = f(x_train).squeeze(1) + NOISE * torch.randn(60)
x_test = torch.linspace(-1.9, 1.9, 200).unsqueeze(1)
y_test = f(x_test).squeeze(1) + NOISE * torch.randn(200)


class GP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.log_lengthscale = torch.nn.Parameter(torch.tensor(0.0))
        self.log_signal = torch.nn.Parameter(torch.tensor(0.0))
        self.log_noise = torch.nn.Parameter(torch.tensor(-1.0))

    def kernel(self, a, b):
        d2 = torch.cdist(a, b).pow(2)
        return self.log_signal.exp().pow(2) * torch.exp(-0.5 * d2 / self.log_lengthscale.exp().pow(2))

    def train_cov(self, x):
        return self.kernel(x, x) + (self.log_noise.exp().pow(2) + 1e-6) * torch.eye(len(x))

    def neg_log_marginal_likelihood(self, x, y):
        L = torch.linalg.cholesky(self.train_cov(x))
        alpha = torch.cholesky_solve(y.unsqueeze(1), L)
        return (0.5 * (y.unsqueeze(1) * alpha).sum() + torch.log(torch.diagonal(L)).sum()
                + 0.5 * len(x) * math.log(2 * math.pi))

    def predict(self, x, y, x_new):
        L = torch.linalg.cholesky(self.train_cov(x))
        K_s = self.kernel(x, x_new)
        mean = K_s.t() @ torch.cholesky_solve(y.unsqueeze(1), L)
        v = torch.linalg.solve_triangular(L, K_s, upper=False)
        var = self.log_signal.exp().pow(2) - v.pow(2).sum(0) + self.log_noise.exp().pow(2)
        return mean.squeeze(1), var


gp = GP()
optimizer = torch.optim.Adam(gp.parameters(), lr=0.05)
for step in range(150):
    optimizer.zero_grad()
    loss = gp.neg_log_marginal_likelihood(x_train, y_train)
    loss.backward()
    optimizer.step()

with torch.no_grad():
    mvn = MultivariateNormal(torch.zeros(len(x_train)), covariance_matrix=gp.train_cov(x_train))
    assert torch.allclose(-mvn.log_prob(y_train), gp.neg_log_marginal_likelihood(x_train, y_train))
    mean, var = gp.predict(x_train, y_train, x_test)
    z = (y_test - mean) / var.sqrt()
    inside = (z.abs() < 1.6449).double().mean().item()
    q05, q95 = torch.quantile(z, torch.tensor([0.05, 0.95])).tolist()
    rmse = (mean - f(x_test).squeeze(1)).pow(2).mean().sqrt().item()
    noise = gp.log_noise.exp().item()
print(f"GP: noise {noise:.3f} (true {NOISE}), length-scale {gp.log_lengthscale.exp().item():.3f}, RMSE to f {rmse:.3f}, "
      f"90% interval coverage {inside:.3f}, z quantiles {q05:.2f}/{q95:.2f}")
assert abs(noise - NOISE) < 0.04, noise
assert rmse < 0.08, rmse
assert 0.8 < inside < 0.97 and -2.2 < q05 < -1.1 and 1.1 < q95 < 2.2, (inside, q05, q95)
