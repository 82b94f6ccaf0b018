"""A decoder-only Transformer language model (nn.TransformerEncoder with a causal mask, learned
positional embeddings, weight tying, AdamW with warmup via LambdaLR) on sequences that follow a rule:
each token is the previous one plus a per-sequence step, modulo the vocabulary."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
VOCAB, SEQ, BATCH = 16, 12, 32


def make_batch():
    start = torch.randint(0, VOCAB, (BATCH, 1))
    step = torch.randint(1, 4, (BATCH, 1))
    return (start + step * torch.arange(SEQ + 1)) % VOCAB


class TinyGPT(nn.Module):
    def __init__(self, d_model=48, nhead=4, layers=2):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, d_model)
        self.pos = nn.Parameter(torch.zeros(1, SEQ, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=96, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, VOCAB, bias=False)
        self.head.weight = self.tok.weight
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(SEQ))

    def forward(self, idx):
        x = self.tok(idx) + self.pos[:, : idx.size(1)]
        x = self.blocks(x, mask=self.mask, is_causal=True)
        return self.head(self.ln(x))


model = TinyGPT()
opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
warmup = 20
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup))
losses = []
for it in range(150):
    seq = make_batch()
    x, y = seq[:, :-1], seq[:, 1:]
    logits = model(x)
    loss = F.cross_entropy(logits.view(-1, VOCAB), y.reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    sched.step()
    losses.append(loss.item())

# after two tokens the rule is determined: later positions should be predicted almost perfectly
model.eval()
with torch.no_grad():
    seq = make_batch()
    pred = model(seq[:, :-1]).argmax(-1)
    acc = (pred[:, 2:] == seq[:, 3:]).float().mean().item()
print(f"loss {losses[0]:.3f} -> {sum(losses[-10:]) / 10:.3f} (uniform {math.log(VOCAB):.3f}), accuracy after 2 tokens {acc:.3f}")
assert acc > 0.9, acc
