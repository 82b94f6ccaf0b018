"""A word-level LSTM language model in the style of the classic PTB recipe, on sentences generated from a
small grammar: a vocabulary built from the text, batchify + BPTT windows, the hidden state carried across
windows and detached, input and output embeddings tied, dropout, gradient clipping, plain SGD with the
learning rate divided when validation perplexity stops improving. Checked by validation perplexity."""
import math
import random

import torch
import torch.nn as nn

random.seed(0)
torch.manual_seed(0)
SUBJECTS = ["the cat", "the dog", "a bird", "my friend", "the teacher", "a child"]
VERBS = ["sees", "chases", "likes", "finds", "draws"]
OBJECTS = ["the ball", "a tree", "the house", "a red kite", "the old boat"]
PLACES = ["", "in the park", "at home", "near the river"]


def sentence():
    words = [random.choice(SUBJECTS), random.choice(VERBS), random.choice(OBJECTS), random.choice(PLACES)]
    return " ".join(w for w in words if w).split() + ["<eos>"]


class Dictionary:
    def __init__(self):
        self.word2idx, self.idx2word = {}, []

    def add_word(self, word):
        if word not in self.word2idx:
            self.idx2word.append(word)
            self.word2idx[word] = len(self.idx2word) - 1
        return self.word2idx[word]

    def __len__(self):
        return len(self.idx2word)


vocab = Dictionary()


def tokenize(n_sentences):
    return torch.tensor([vocab.add_word(w) for _ in range(n_sentences) for w in sentence()], dtype=torch.long)


train_data, valid_data = tokenize(1500), tokenize(200)


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    return data.narrow(0, 0, nbatch * bsz).view(bsz, -1).t().contiguous()


def get_batch(source, i, bptt=20):
    seq_len = min(bptt, len(source) - 1 - i)
    return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].reshape(-1)


class RNNModel(nn.Module):
    def __init__(self, ntoken, nhid=64, nlayers=2, dropout=0.2):
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, nhid)
        self.rnn = nn.LSTM(nhid, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.decoder.weight = self.encoder.weight          # weight tying
        self.nlayers, self.nhid = nlayers, nhid
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)

    def forward(self, input, hidden):
        output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
        return self.decoder(self.drop(output)).view(-1, self.decoder.out_features), hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))


def repackage_hidden(h):
    return h.detach() if isinstance(h, torch.Tensor) else tuple(repackage_hidden(v) for v in h)


ntokens = len(vocab)
model = RNNModel(ntokens)
assert model.decoder.weight is model.encoder.weight
assert sum(p.numel() for p in model.parameters()) < sum(p.numel() for p in RNNModel(ntokens).state_dict().values())
criterion = nn.CrossEntropyLoss()
train_batches, valid_batches = batchify(train_data, 16), batchify(valid_data, 8)


def evaluate(source):
    model.eval()
    total, hidden = 0.0, model.init_hidden(source.size(1))
    with torch.no_grad():
        for i in range(0, source.size(0) - 1, 20):
            data, targets = get_batch(source, i)
            output, hidden = model(data, hidden)
            total += len(data) * criterion(output, targets).item()
    return math.exp(total / (len(source) - 1))


lr, best = 5.0, None
unigram = torch.bincount(train_data, minlength=ntokens).float() / len(train_data)
unigram_ppl = math.exp(-(unigram[valid_data] + 1e-12).log().mean().item())
for epoch in range(3):
    model.train()
    hidden = model.init_hidden(16)
    for i in range(0, train_batches.size(0) - 1, 20):
        data, targets = get_batch(train_batches, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)
    val_ppl = evaluate(valid_batches)
    if best is None or val_ppl < best:
        best = val_ppl
    else:
        lr /= 4.0
print(f"word LM (tied, {ntokens} words): validation perplexity {best:.2f}, unigram perplexity {unigram_ppl:.2f}")
assert best < unigram_ppl / 3, (best, unigram_ppl)
