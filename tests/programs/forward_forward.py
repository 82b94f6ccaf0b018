"""Hinton's forward-forward algorithm on the 8x8 digits: no backprop between layers. Each layer is trained
on its own to give high "goodness" (mean squared activation) to a digit shown with its true label and low
goodness to the digit shown with a wrong label; the input of each layer is detached and length-normalised.
A digit is classified by trying every label and keeping the one with the most total goodness."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits

torch.manual_seed(0)
digits = load_digits()
X = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(X.shape[0])
X_train, y_train, X_test, y_test = X[perm[:1400]], y[perm[:1400]], X[perm[1400:]], y[perm[1400:]]


def with_label(x, labels):
    return torch.cat([x, 3.0 * F.one_hot(labels, num_classes=10).float()], dim=1)


class FFLayer(nn.Linear):
    def __init__(self, in_features, out_features, threshold=0.5, lr=0.03):
        super().__init__(in_features, out_features)
        self.threshold = threshold
        self.opt = torch.optim.Adam(self.parameters(), lr=lr)

    def forward(self, x):
        x = x / (x.norm(p=2, dim=1, keepdim=True) + 1e-4)
        return F.relu(super().forward(x))

    def goodness(self, x):
        return self.forward(x).pow(2).mean(dim=1)

    def train_step(self, x_pos, x_neg):
        g_pos, g_neg = self.goodness(x_pos), self.goodness(x_neg)
        loss = F.softplus(torch.cat([self.threshold - g_pos, g_neg - self.threshold])).mean()
        self.opt.zero_grad()
        loss.backward()
        self.opt.step()
        with torch.no_grad():
            return self.forward(x_pos), self.forward(x_neg), loss.item()


class FFNet(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(FFLayer(a, b) for a, b in zip(sizes[:-1], sizes[1:]))

    def fit(self, x, labels, steps=200):
        for _ in range(steps):
            # fresh wrong labels every step; each layer learns from the previous one's detached output
            wrong = (labels + torch.randint(1, 10, labels.shape)) % 10
            h_pos, h_neg = with_label(x, labels), with_label(x, wrong)
            losses = []
            for layer in self.layers:
                h_pos, h_neg, loss = layer.train_step(h_pos, h_neg)
                losses.append(loss)
        return losses

    @torch.no_grad()
    def predict(self, x):
        scores = []
        for label in range(10):
            h = with_label(x, torch.full((x.shape[0],), label, dtype=torch.long))
            total = torch.zeros(x.shape[0])
            for layer in self.layers:
                h = layer(h)
                total += h.pow(2).mean(dim=1)
            scores.append(total)
        return torch.stack(scores, dim=1).argmax(dim=1)


net = FFNet([74, 200, 200])
losses = net.fit(X_train, y_train)
train_acc = (net.predict(X_train) == y_train).float().mean().item()
test_acc = (net.predict(X_test) == y_test).float().mean().item()
print(f"forward-forward: layer losses {[round(l, 3) for l in losses]}, train acc {train_acc:.3f}, test acc {test_acc:.3f}")
assert test_acc > 0.85, test_acc
