"""A GRU encoder-decoder learns to reverse digit strings: the encoder's last hidden state starts the
decoder, which is fed its own previous prediction or, with teacher forcing, the true previous token.
Checked by greedy decoding of held-out strings (whole-string accuracy)."""
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

random.seed(0)
torch.manual_seed(0)
SOS, N_DIGITS, LENGTH, HIDDEN = 10, 10, 5, 96
VOCAB = N_DIGITS + 1


def batch(n):
    src = torch.randint(0, N_DIGITS, (n, LENGTH))
    return src, src.flip(1)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, HIDDEN, batch_first=True)

    def forward(self, src):
        _, hidden = self.rnn(self.embedding(src))
        return hidden


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(VOCAB, 32)
        self.rnn = nn.GRU(32, HIDDEN, batch_first=True)
        self.out = nn.Linear(HIDDEN, VOCAB)

    def forward(self, token, hidden):
        output, hidden = self.rnn(F.relu(self.embedding(token.unsqueeze(1))), hidden)
        return self.out(output.squeeze(1)), hidden


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder, self.decoder = Encoder(), Decoder()

    def forward(self, src, target=None, teacher_forcing_ratio=0.0):
        hidden = self.encoder(src)
        token = torch.full((src.size(0),), SOS, dtype=torch.long)
        logits = []
        for t in range(LENGTH):
            step_logits, hidden = self.decoder(token, hidden)
            logits.append(step_logits)
            teacher = target is not None and random.random() < teacher_forcing_ratio
            token = target[:, t] if teacher else step_logits.argmax(-1)
        return torch.stack(logits, dim=1)


model = Seq2Seq()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.995)
criterion = nn.CrossEntropyLoss()
for step in range(350):
    src, tgt = batch(64)
    logits = model(src, tgt, teacher_forcing_ratio=0.5)
    loss = criterion(logits.reshape(-1, VOCAB), tgt.reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()

model.eval()
with torch.no_grad():
    src, tgt = batch(500)
    pred = model(src).argmax(-1)
token_acc = (pred == tgt).float().mean().item()
string_acc = (pred == tgt).all(dim=1).float().mean().item()
print(f"seq2seq reversal: final loss {loss.item():.4f}, token accuracy {token_acc:.3f}, whole strings {string_acc:.3f}")
assert string_acc > 0.8, string_acc
