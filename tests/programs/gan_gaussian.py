"""A GAN that learns a 1-D Gaussian N(4, 1.25): generator and discriminator MLPs, BCE losses,
the non-saturating generator loss, separate Adam optimizers, detach() for the discriminator step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
REAL_MEAN, REAL_STD, BATCH, NOISE = 4.0, 1.25, 128, 4

G = nn.Sequential(nn.Linear(NOISE, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
D = nn.Sequential(nn.Linear(1, 32), nn.LeakyReLU(0.2), nn.Linear(32, 32), nn.LeakyReLU(0.2), nn.Linear(32, 1))
criterion = nn.BCEWithLogitsLoss()
opt_g = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
opt_d = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
ones, zeros = torch.ones(BATCH, 1), torch.zeros(BATCH, 1)

for it in range(1500):
    real = torch.randn(BATCH, 1) * REAL_STD + REAL_MEAN
    fake = G(torch.randn(BATCH, NOISE))
    opt_d.zero_grad()
    d_loss = criterion(D(real), ones) + criterion(D(fake.detach()), zeros)
    d_loss.backward()
    opt_d.step()
    opt_g.zero_grad()
    g_loss = criterion(D(fake), ones)
    g_loss.backward()
    opt_g.step()

with torch.no_grad():
    samples = G(torch.randn(4000, NOISE))
mean, std = samples.mean().item(), samples.std().item()
print(f"generated mean {mean:.3f} (target {REAL_MEAN}), std {std:.3f} (target {REAL_STD})")
assert abs(mean - REAL_MEAN) < 0.4 and abs(std - REAL_STD) < 0.5, (mean, std)
