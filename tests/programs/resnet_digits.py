"""A small ResNet on the 8x8 digits: BasicBlocks with BatchNorm and a 1x1-conv shortcut when the shape
changes, kaiming init via model.apply, AdaptiveAvgPool2d, SGD with Nesterov momentum and parameter groups
(no weight decay on BatchNorm and biases), label smoothing, a linear warm-up chained to cosine annealing
(SequentialLR), random-shift augmentation in a Dataset subclass. Checked by held-out accuracy and the
schedule's learning rates."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, Dataset

torch.manual_seed(0)


class Digits(Dataset):
    def __init__(self, images, labels, augment):
        self.images, self.labels, self.augment = images, labels, augment

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        img = self.images[i]
        if self.augment:
            dy, dx = torch.randint(-1, 2, (2,)).tolist()
            img = torch.roll(img, shifts=(dy, dx), dims=(1, 2))
        return img, self.labels[i]


class BasicBlock(nn.Module):
    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(planes))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet(nn.Module):
    def __init__(self, widths=(8, 16), num_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]),
                                  nn.ReLU(inplace=True))
        self.layer1 = BasicBlock(widths[0], widths[0])
        self.layer2 = BasicBlock(widths[0], widths[1], stride=2)
        self.pool = nn.AdaptiveAvgPool2d((2, 2))
        self.fc = nn.Linear(widths[1] * 4, num_classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(self.pool(x), 1))


def init_weights(m):
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
    elif isinstance(m, nn.BatchNorm2d):
        nn.init.ones_(m.weight)
        nn.init.zeros_(m.bias)


digits = load_digits()
images = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
images = (images - images.mean()) / images.std()
labels = torch.tensor(digits.target)
perm = torch.randperm(len(labels))
train_loader = DataLoader(Digits(images[perm[:1400]], labels[perm[:1400]], augment=True), batch_size=64,
                          shuffle=True, drop_last=True)
test_loader = DataLoader(Digits(images[perm[1400:]], labels[perm[1400:]], augment=False), batch_size=200)

model = ResNet()
model.apply(init_weights)
decay = [p for n, p in model.named_parameters() if p.ndim > 1]
no_decay = [p for n, p in model.named_parameters() if p.ndim <= 1]
optimizer = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=0.1, momentum=0.9, nesterov=True)
EPOCHS, steps_per_epoch = 6, len(train_loader)
warmup = torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.1, total_iters=steps_per_epoch)
cosine = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=(EPOCHS - 1) * steps_per_epoch)
scheduler = torch.optim.lr_scheduler.SequentialLR(optimizer, [warmup, cosine], milestones=[steps_per_epoch])
criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
lrs = []
for epoch in range(EPOCHS):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad(set_to_none=True)
        loss = criterion(model(x), y)
        loss.backward()
        optimizer.step()
        scheduler.step()
        lrs.append(optimizer.param_groups[0]["lr"])

model.eval()
with torch.no_grad():
    correct = sum((model(x).argmax(1) == y).sum().item() for x, y in test_loader)
accuracy = correct / len(test_loader.dataset)
print(f"ResNet: held-out accuracy {accuracy:.3f}, peak lr {max(lrs):.3f}, final lr {lrs[-1]:.2e}")
assert accuracy > 0.94, accuracy
assert math.isclose(max(lrs), 0.1, rel_tol=1e-6) and lrs[-1] < 1e-3, (max(lrs), lrs[-1])
assert model.layer1.bn1.num_batches_tracked.item() == EPOCHS * steps_per_epoch
