"""Time-series prediction with LBFGS: an LSTMCell network reads noisy sine waves step by step and is
fit with torch.optim.LBFGS (closure re-evaluating the loss), then predicts the future by feeding its
own outputs back."""
import math

import numpy as np
import torch
import torch.nn as nn

torch.manual_seed(0)
np.random.seed(0)
T, N = 40, 12
phase = np.random.uniform(0, 2 * math.pi, (N, 1))
t = np.arange(T + 20)[None, :] * 0.3
waves = torch.from_numpy(np.sin(t + phase)).double()
train_input, train_target = waves[:8, :T - 1], waves[:8, 1:T]
test_input, test_future = waves[8:, :T], waves[8:, T:]


class Sequence(nn.Module):
    def __init__(self, hidden=24):
        super().__init__()
        self.hidden = hidden
        self.lstm = nn.LSTMCell(1, hidden)
        self.linear = nn.Linear(hidden, 1)

    def forward(self, x, future=0):
        outputs = []
        h = torch.zeros(x.size(0), self.hidden, dtype=torch.double)
        c = torch.zeros(x.size(0), self.hidden, dtype=torch.double)
        for step in x.split(1, dim=1):
            h, c = self.lstm(step, (h, c))
            out = self.linear(h)
            outputs.append(out)
        for _ in range(future):
            h, c = self.lstm(out, (h, c))
            out = self.linear(h)
            outputs.append(out)
        return torch.cat(outputs, dim=1)


model = Sequence().double()
criterion = nn.MSELoss()
optimizer = torch.optim.LBFGS(model.parameters(), lr=0.8, max_iter=12, history_size=10)
losses = []
for i in range(4):
    def closure():
        optimizer.zero_grad()
        loss = criterion(model(train_input), train_target)
        loss.backward()
        return loss
    losses.append(optimizer.step(closure).item())

with torch.no_grad():
    pred = model(test_input, future=20)
    future_mse = criterion(pred[:, T:], test_future).item()
print(f"train loss {losses[0]:.4f} -> {losses[-1]:.5f}; 20-step forecast MSE {future_mse:.4f}")
assert losses[-1] < 0.05 * losses[0] and future_mse < 0.1, (losses, future_mse)
