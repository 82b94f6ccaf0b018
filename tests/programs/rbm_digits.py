"""A restricted Boltzmann machine on binarised 8x8 digits, trained with persistent contrastive divergence
(PCD-1): Gibbs sampling with Tensor.bernoulli(), the parameters as plain tensors updated by hand from the
positive and negative phase statistics (no autograd), free energy through F.softplus. Then the hidden
units' probabilities serve as features for a logistic regression. Checked by the reconstruction error
falling, the free-energy gap between data and noise, and the features' held-out accuracy."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

torch.manual_seed(0)
digits = load_digits()
data = (torch.tensor(digits.data, dtype=torch.float32) > 7).float()   # binary pixels
labels = torch.tensor(digits.target)
perm = torch.randperm(len(data))
train, test = perm[:1400], perm[1400:]
N_VIS, N_HID, LR, BATCH = 64, 64, 0.1, 50


class RBM:
    def __init__(self):
        self.W = torch.randn(N_HID, N_VIS) * 0.01
        self.b = torch.zeros(N_VIS)              # visible bias
        self.c = torch.zeros(N_HID)              # hidden bias
        self.chain = torch.rand(BATCH, N_VIS).bernoulli()   # the persistent fantasy particles

    def p_h(self, v):
        return torch.sigmoid(F.linear(v, self.W, self.c))

    def p_v(self, h):
        return torch.sigmoid(F.linear(h, self.W.t(), self.b))

    def free_energy(self, v):
        return -(v @ self.b) - F.softplus(F.linear(v, self.W, self.c)).sum(dim=1)

    def update(self, v0):
        ph0 = self.p_h(v0)
        for _ in range(1):
            hk = self.p_h(self.chain).bernoulli()
            self.chain = self.p_v(hk).bernoulli()
        phk = self.p_h(self.chain)
        self.W += LR * (ph0.t() @ v0 - phk.t() @ self.chain) / len(v0)
        self.b += LR * (v0 - self.chain).mean(0)
        self.c += LR * (ph0 - phk).mean(0)

    def reconstruction_error(self, v):
        return F.binary_cross_entropy(self.p_v(self.p_h(v)), v).item()


rbm = RBM()
errors = [rbm.reconstruction_error(data[test])]
for epoch in range(25):
    for idx in train[torch.randperm(len(train))].split(BATCH):
        if len(idx) == BATCH:
            rbm.update(data[idx])
    errors.append(rbm.reconstruction_error(data[test]))

noise = torch.full((len(test), N_VIS), data.mean().item()).bernoulli()
gap = (rbm.free_energy(noise) - rbm.free_energy(data[test])).mean().item()

features = rbm.p_h(data)
clf = nn.Linear(N_HID, 10)
opt = torch.optim.LBFGS(clf.parameters(), lr=1, max_iter=100, line_search_fn="strong_wolfe")


def closure():
    opt.zero_grad()
    loss = F.cross_entropy(clf(features[train]), labels[train]) + 1e-3 * clf.weight.pow(2).sum()
    loss.backward()
    return loss


opt.step(closure)
accuracy = (clf(features[test]).argmax(1) == labels[test]).float().mean().item()
print(f"RBM: reconstruction BCE {errors[0]:.3f} -> {errors[-1]:.3f}, free-energy gap {gap:.1f}, "
      f"feature accuracy {accuracy:.3f}")
assert errors[-1] < 0.6 * errors[0], errors
assert gap > 5, gap
assert accuracy > 0.75, accuracy
