"""An LSTM reads each 8x8 digit one row per time step (batch_first) and classifies it from the last
hidden state: nn.LSTM with two layers and dropout between them, Adam, gradient clipping, accuracy on a
held-out split."""
import torch
import torch.nn as nn
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(0)
digits = load_digits()
images = torch.from_numpy(digits.images).float() / 16.0          # (N, 8 rows, 8 columns)
labels = torch.from_numpy(digits.target).long()
train_set, test_set = random_split(TensorDataset(images, labels), [1500, len(labels) - 1500],
                                   generator=torch.Generator().manual_seed(1))
train_loader = DataLoader(train_set, batch_size=50, shuffle=True)
test_loader = DataLoader(test_set, batch_size=100)


class RowLSTM(nn.Module):
    def __init__(self, hidden=48):
        super().__init__()
        self.lstm = nn.LSTM(input_size=8, hidden_size=hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.head = nn.Linear(hidden, 10)

    def forward(self, x):
        out, (h_n, c_n) = self.lstm(x)
        assert out.shape[:2] == x.shape[:2] and h_n.shape == (2, x.size(0), self.lstm.hidden_size)
        return self.head(out[:, -1, :])


model = RowLSTM()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(8):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()

model.eval()
correct = total = 0
with torch.no_grad():
    for x, y in test_loader:
        correct += (model(x).argmax(1) == y).sum().item()
        total += y.numel()
accuracy = correct / total
print(f"row-by-row LSTM: held-out accuracy {accuracy:.3f} on {total} digits, last batch loss {loss.item():.3f}")
assert accuracy > 0.9, accuracy
