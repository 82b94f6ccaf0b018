"""REINFORCE with a baseline on a small corridor world: start in the middle, +1 at the right end,
-1 at the left end, a small cost per step. A batch of episodes per update, returns-to-go, entropy bonus."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim

torch.manual_seed(0)
rng = np.random.default_rng(0)
N_STATES, START, MAX_STEPS, GAMMA = 10, 3, 20, 0.97


def step(state, action):
    nxt = state + (1 if action == 1 else -1)
    if nxt == N_STATES - 1:
        return nxt, 1.0, True
    if nxt == 0:
        return nxt, -1.0, True
    return nxt, -0.01, False


def one_hot(s):
    x = np.zeros(N_STATES, dtype=np.float32)
    x[s] = 1.0
    return x


class Policy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(N_STATES, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


policy = Policy()
opt = optim.Adam(policy.parameters(), lr=0.02)
history = []
for update in range(40):
    log_probs, returns, entropies, totals = [], [], [], []
    for episode in range(16):
        s, done, rewards, t = START, False, [], 0
        while not done and t < MAX_STEPS:
            logits = policy(torch.from_numpy(one_hot(s)))
            probs = F.softmax(logits, dim=-1)
            a = torch.multinomial(probs, 1).item()
            log_probs.append(F.log_softmax(logits, dim=-1)[a])
            entropies.append(-(probs * probs.log()).sum())
            s, r, done = step(s, a)
            rewards.append(r)
            t += 1
        g, rtg = 0.0, []
        for r in reversed(rewards):
            g = r + GAMMA * g
            rtg.insert(0, g)
        returns.extend(rtg)
        totals.append(sum(rewards))
    returns = torch.tensor(returns)
    advantages = (returns - returns.mean()) / (returns.std() + 1e-8)
    loss = -(torch.stack(log_probs) * advantages).mean() - 0.01 * torch.stack(entropies).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    history.append(float(np.mean(totals)))

first, last = np.mean(history[:5]), np.mean(history[-5:])
print(f"mean return: first updates {first:.3f}, last updates {last:.3f}")
assert last > 0.8 and last > first + 0.3, (first, last)
