"""A character-level language model: nn.Embedding -> nn.GRU -> nn.Linear trained on a short text with
truncated backpropagation through time (hidden state carried and detached), gradient clipping,
then sampling with temperature."""
import math

import torch
import torch.nn as nn

torch.manual_seed(0)
text = ("the quick brown fox jumps over the lazy dog. " * 3 +
        "a stitch in time saves nine. a rolling stone gathers no moss. " * 3 +
        "all that glitters is not gold. the early bird catches the worm. " * 3)
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
itos = {i: c for c, i in stoi.items()}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
V, SEQ, BATCH = len(chars), 32, 8


class CharModel(nn.Module):
    def __init__(self, vocab, emb=24, hidden=96):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb)
        self.rnn = nn.GRU(emb, hidden, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, x, h=None):
        out, h = self.rnn(self.emb(x), h)
        return self.head(out), h


def batchify(data, bsz):
    n = data.size(0) // bsz
    return data[: n * bsz].view(bsz, n)


model = CharModel(V)
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
loss_fn = nn.CrossEntropyLoss()
streams = batchify(data, BATCH)
losses = []
for epoch in range(12):
    h = None
    for i in range(0, streams.size(1) - 1 - SEQ, SEQ):
        x, y = streams[:, i:i + SEQ], streams[:, i + 1:i + 1 + SEQ]
        if h is not None:
            h = h.detach()
        logits, h = model(x, h)
        loss = loss_fn(logits.reshape(-1, V), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())

model.eval()
with torch.no_grad():
    idx, h, out = torch.tensor([[stoi["t"]]]), None, "t"
    for _ in range(60):
        logits, h = model(idx, h)
        probs = torch.softmax(logits[:, -1] / 0.5, dim=-1)
        idx = torch.multinomial(probs, num_samples=1)
        out += itos[idx.item()]
print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f} (uniform {math.log(V):.3f}); sample: {out!r}")
assert losses[-1] < 0.6 * losses[0] and sum(losses[-5:]) / 5 < 1.9, losses[-5:]
