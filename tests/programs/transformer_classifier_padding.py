"""A Transformer encoder classifying variable-length token sequences with a padding mask: nn.TransformerEncoder
(batch_first, pre-norm, GELU) over embeddings plus a sinusoidal positional encoding kept in a buffer
(register_buffer, persistent=False), src_key_padding_mask from the lengths, AdamW with a warm-up LambdaLR,
gradient clipping. The task: does token 1 occur more often than token 2? The answer is read from a CLS
token's output, so it must gather the sequence through attention. Checked by held-out accuracy, and by
padding not changing a sequence's prediction (the same sequence alone and padded in a batch)."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence

torch.manual_seed(0)
PAD, VOCAB, D = 0, 6, 32
CLS = VOCAB


def make(n):
    """Sequences starting with CLS; the label says whether token 1 occurs more often than token 2."""
    seqs, labels = [], []
    while len(seqs) < n:
        body = torch.randint(1, VOCAB, (int(torch.randint(3, 12, ()).item()),))
        ones, twos = int((body == 1).sum()), int((body == 2).sum())
        if ones != twos:
            seqs.append(torch.cat([torch.tensor([CLS]), body]))
            labels.append(int(ones > twos))
    lengths = torch.tensor([len(s) for s in seqs])
    return pad_sequence(seqs, batch_first=True, padding_value=PAD), lengths, torch.tensor(labels)


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_len=64):
        super().__init__()
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        pe = torch.zeros(max_len, d_model)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        return x + self.pe[: x.size(1)]


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB + 1, D, padding_idx=PAD)
        self.pos = PositionalEncoding(D)
        layer = nn.TransformerEncoderLayer(D, nhead=4, dim_feedforward=64, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(D, 2)

    def forward(self, tokens, lengths):
        pad_mask = torch.arange(tokens.size(1))[None, :] >= lengths[:, None]       # True where padded
        h = self.encoder(self.pos(self.embed(tokens) * math.sqrt(D)), src_key_padding_mask=pad_mask)
        return self.head(h[:, 0])


tokens, lengths, labels = make(1600)
test_tokens, test_lengths, test_labels = make(400)
model = Classifier()
assert "pos.pe" not in model.state_dict() and any(n == "pos.pe" for n, _ in model.named_buffers())
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3, weight_decay=0.01)
warmup = 50
scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
for epoch in range(4):
    model.train()
    for idx in torch.randperm(len(labels)).split(64):
        loss = F.cross_entropy(model(tokens[idx], lengths[idx]), labels[idx])
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()

model.eval()
with torch.no_grad():
    logits = model(test_tokens, test_lengths)
    accuracy = (logits.argmax(1) == test_labels).float().mean().item()
    i = int(test_lengths.argmin())
    alone = model(test_tokens[i:i + 1, :test_lengths[i]], test_lengths[i:i + 1])
print(f"transformer with padding mask: held-out accuracy {accuracy:.3f}, padded vs alone "
      f"{(alone[0] - logits[i]).abs().max().item():.1e}")
assert accuracy > 0.85, accuracy
assert torch.allclose(alone[0], logits[i], atol=1e-5)
