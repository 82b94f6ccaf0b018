"""DQN on a home-made 4x4 grid world (start top-left, goal bottom-right, a pit on the way): an
epsilon-greedy behaviour policy with a decaying epsilon, a replay buffer (collections.deque + random.sample),
a target network synchronised with load_state_dict every few steps, the Huber loss and Adam. Checked by the
greedy policy's walk from the start (reaches the goal by a shortest path around the pit) and by the start
state's Q-value against the true discounted return."""
import random
from collections import deque, namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
np.random.seed(0)
torch.manual_seed(0)
SIZE, GOAL, PIT, GAMMA = 4, (3, 3), (1, 1), 0.9
MOVES = [(-1, 0), (1, 0), (0, -1), (0, 1)]          # up, down, left, right
Transition = namedtuple("Transition", "state action reward next_state done")


class GridWorld:
    def reset(self):
        self.pos, self.t = (0, 0), 0
        return self.observe()

    def observe(self):
        obs = np.zeros(SIZE * SIZE, dtype=np.float32)
        obs[self.pos[0] * SIZE + self.pos[1]] = 1.0
        return obs

    def step(self, action):
        dr, dc = MOVES[action]
        self.pos = (min(max(self.pos[0] + dr, 0), SIZE - 1), min(max(self.pos[1] + dc, 0), SIZE - 1))
        self.t += 1
        if self.pos == GOAL:
            return self.observe(), 1.0, True
        if self.pos == PIT:
            return self.observe(), -1.0, True
        return self.observe(), 0.0, self.t >= 30


class ReplayBuffer:
    def __init__(self, capacity):
        self.memory = deque(maxlen=capacity)

    def push(self, *args):
        self.memory.append(Transition(*args))

    def sample(self, batch_size):
        batch = Transition(*zip(*random.sample(self.memory, batch_size)))
        return (torch.tensor(np.array(batch.state)), torch.tensor(batch.action).unsqueeze(1),
                torch.tensor(batch.reward, dtype=torch.float32), torch.tensor(np.array(batch.next_state)),
                torch.tensor(batch.done, dtype=torch.float32))

    def __len__(self):
        return len(self.memory)


def q_network():
    return nn.Sequential(nn.Linear(SIZE * SIZE, 64), nn.ReLU(), nn.Linear(64, len(MOVES)))


policy_net, target_net = q_network(), q_network()
target_net.load_state_dict(policy_net.state_dict())
target_net.eval()
optimizer = torch.optim.Adam(policy_net.parameters(), lr=5e-3)
memory, env = ReplayBuffer(2000), GridWorld()


def select_action(state, epsilon):
    if random.random() < epsilon:
        return random.randrange(len(MOVES))
    with torch.no_grad():
        return policy_net(torch.from_numpy(state).unsqueeze(0)).argmax(dim=1).item()


def optimize(batch_size=64):
    states, actions, rewards, next_states, dones = memory.sample(batch_size)
    q = policy_net(states).gather(1, actions).squeeze(1)
    with torch.no_grad():
        target = rewards + GAMMA * target_net(next_states).max(1).values * (1 - dones)
    loss = F.smooth_l1_loss(q, target)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_value_(policy_net.parameters(), 10.0)
    optimizer.step()


state, steps_done = env.reset(), 0
for steps_done in range(1200):
    epsilon = min(1.0, max(0.05, 1.6 - steps_done / 500))     # explore fully for 300 steps, then decay
    action = select_action(state, epsilon)
    next_state, reward, done = env.step(action)
    memory.push(state, action, reward, next_state, float(done and env.pos in (GOAL, PIT)))
    state = env.reset() if done else next_state
    if len(memory) >= 64:
        optimize()
    if steps_done % 50 == 0:
        target_net.load_state_dict(policy_net.state_dict())

state, path, done = env.reset(), [env.pos], False
while not done:
    state, reward, done = env.step(select_action(state, epsilon=0.0))
    path.append(env.pos)
with torch.no_grad():
    q_start = policy_net(torch.from_numpy(env.reset()).unsqueeze(0)).max().item()
print(f"DQN: greedy path {path}, Q(start) {q_start:.3f} (true {GAMMA ** 5:.3f})")
assert path[-1] == GOAL and len(path) == 7 and PIT not in path, path
assert abs(q_start - GAMMA ** 5) < 0.1, q_start
