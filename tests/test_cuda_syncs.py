"""No hidden device-to-host reads on the hot path: a whole training step on "cuda" (forward, loss,
zero_grad, backward, optimizer step, gradient clipping) makes none, counted by the fake cupy. On a real
GPU each would be a synchronisation; PyTorch's step makes none either. ``.item()``, printing and
``.numpy()`` are the explicit ones, and are counted too."""
import pytest

import workbench as wb
import workbench.nn as nn
import workbench.nn.functional as F
from workbench.testing import fake_cupy


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.c2 = nn.Conv2d(4, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c2(F.relu(self.bn(self.c1(x))))), 2)
        return self.fc(F.dropout(x.flatten(1), 0.1, self.training))


class GPT(nn.Module):
    def __init__(self, vocab=16, d=16, seq=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(seq, d)
        self.block = nn.TransformerEncoderLayer(d, 2, 32, dropout=0.1, batch_first=True, norm_first=True,
                                                activation="gelu")
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        h = self.tok(idx) + self.pos.weight[: idx.shape[1]]
        mask = nn.Transformer.generate_square_subsequent_mask(idx.shape[1], device=idx.device)
        return self.head(self.block(h, src_mask=mask, is_causal=True))


class LSTMTagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 8)
        self.rnn = nn.LSTM(8, 8, num_layers=2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(16, 16)

    def forward(self, idx):
        return self.out(self.rnn(self.emb(idx))[0])


def _mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 10))


CASES = {
    "mlp-adamw-ce": (_mlp, lambda: wb.randn(4, 8), lambda: wb.randint(0, 10, (4,)),
                     lambda p: wb.optim.AdamW(p, lr=1e-3), F.cross_entropy),
    "mlp-sgd-mse": (_mlp, lambda: wb.randn(4, 8), lambda: wb.randn(4, 10),
                    lambda p: wb.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True), F.mse_loss),
    "cnn-adam-ce": (CNN, lambda: wb.randn(4, 1, 8, 8), lambda: wb.randint(0, 10, (4,)),
                    lambda p: wb.optim.Adam(p, lr=1e-3), lambda o, y: F.cross_entropy(o, y, label_smoothing=0.1)),
    "gpt-adamw-ce": (GPT, lambda: wb.randint(0, 16, (2, 8)), lambda: wb.randint(0, 16, (2, 8)),
                     lambda p: wb.optim.AdamW(p, lr=1e-3),
                     lambda o, y: F.cross_entropy(o.reshape(-1, 16), y.reshape(-1))),
    "lstm-rmsprop-ce": (LSTMTagger, lambda: wb.randint(0, 16, (2, 5)), lambda: wb.randint(0, 16, (2, 5)),
                        lambda p: wb.optim.RMSprop(p, lr=1e-3),
                        lambda o, y: F.cross_entropy(o.reshape(-1, 16), y.reshape(-1))),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_training_step_on_cuda_reads_nothing_back(fake_cuda, case):
    make, x, y, opt, loss_fn = CASES[case]
    wb.manual_seed(0)
    model = make().to("cuda")
    optimizer = opt(model.parameters())
    x, y = x().to("cuda"), y().to("cuda")

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss

    step()  # the first step creates the optimizer state
    with fake_cupy.count_syncs() as syncs:
        loss = step()
        step()
    assert syncs == [], "device-to-host reads in a training step:\n" + "\n".join(f"{k} at {w}" for k, w in syncs)
    with fake_cupy.count_syncs() as syncs:
        loss.item()
    assert [k for k, _ in syncs] == ["item"]  # the explicit read is seen: the counter works
