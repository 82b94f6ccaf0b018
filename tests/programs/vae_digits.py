"""A variational autoencoder on scikit-learn's 8x8 digits: MLP encoder to a 2-D Gaussian latent,
the reparameterization trick, a Bernoulli decoder, and the ELBO (BCE + KL) as the loss."""
import torch
from sklearn.datasets import load_digits
from torch import nn, optim
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1)
images = torch.tensor(load_digits().data, dtype=torch.float32) / 16.0
loader = DataLoader(TensorDataset(images), batch_size=128, shuffle=True)


class VAE(nn.Module):
    def __init__(self, latent=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 64), nn.ReLU())
        self.mu = nn.Linear(64, latent)
        self.logvar = nn.Linear(64, latent)
        self.dec = nn.Sequential(nn.Linear(latent, 64), nn.ReLU(), nn.Linear(64, 64))

    def encode(self, x):
        h = self.enc(x)
        return self.mu(h), self.logvar(h)

    def reparameterize(self, mu, logvar):
        std = torch.exp(0.5 * logvar)
        eps = torch.randn_like(std)
        return mu + eps * std

    def forward(self, x):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar)
        return self.dec(z), mu, logvar


def loss_function(recon_logits, x, mu, logvar):
    bce = F.binary_cross_entropy_with_logits(recon_logits, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


model = VAE()
optimizer = optim.Adam(model.parameters(), lr=5e-3)
epoch_losses = []
for epoch in range(8):
    model.train()
    total = 0.0
    for (x,) in loader:
        optimizer.zero_grad()
        recon, mu, logvar = model(x)
        loss = loss_function(recon, x, mu, logvar)
        loss.backward()
        total += loss.item()
        optimizer.step()
    epoch_losses.append(total / len(loader.dataset))

model.eval()
with torch.no_grad():
    samples = torch.sigmoid(model.dec(torch.randn(16, 4)))
print(f"ELBO loss per image: epoch 1 {epoch_losses[0]:.2f}, epoch {len(epoch_losses)} {epoch_losses[-1]:.2f}")
assert samples.shape == (16, 64) and 0 <= samples.min() and samples.max() <= 1
assert epoch_losses[-1] < 0.8 * epoch_losses[0], epoch_losses
