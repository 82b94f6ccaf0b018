"""Knowledge distillation: a wide teacher MLP is trained on 150 labelled digits; a small student learns from
the teacher's temperature-softened outputs on 1,250 further digits that have no labels (KL divergence with
temperature T, scaled by T**2, plus cross-entropy on the labelled ones). The same student trained on the
labelled digits alone is the baseline. Checked by held-out accuracy: the distilled student beats the
baseline and nearly matches its teacher."""
import itertools

import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
digits = load_digits()
X = torch.tensor(digits.data, dtype=torch.float32) / 16.0
y = torch.tensor(digits.target)
perm = torch.randperm(len(y))
labelled, unlabelled, test = perm[:150], perm[150:1400], perm[1400:]


def mlp(hidden):
    return nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(0.2), nn.Linear(hidden, 10))


def accuracy(model):
    model.eval()
    with torch.no_grad():
        return (model(X[test]).argmax(1) == y[test]).float().mean().item()


def train_supervised(model, epochs):
    opt = torch.optim.Adam(model.parameters(), lr=3e-3, weight_decay=1e-4)
    loader = DataLoader(TensorDataset(X[labelled], y[labelled]), batch_size=32, shuffle=True)
    for _ in range(epochs):
        model.train()
        for xb, yb in loader:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            opt.step()
    return model


def distillation_loss(student_logits, teacher_logits, T):
    return F.kl_div(F.log_softmax(student_logits / T, dim=1), F.softmax(teacher_logits / T, dim=1),
                    reduction="batchmean") * T * T


teacher = train_supervised(mlp(256), epochs=40)
teacher.eval()
baseline = train_supervised(mlp(16), epochs=40)

student = mlp(16)
opt = torch.optim.Adam(student.parameters(), lr=3e-3)
kl_check = nn.KLDivLoss(reduction="batchmean", log_target=True)
unlabelled_loader = DataLoader(TensorDataset(X[unlabelled]), batch_size=64, shuffle=True)
labelled_batches = DataLoader(TensorDataset(X[labelled], y[labelled]), batch_size=32, shuffle=True)
T, alpha = 4.0, 0.7
for epoch in range(20):
    student.train()
    for (xu,), (xl, yl) in zip(unlabelled_loader, itertools.cycle(labelled_batches)):
        with torch.no_grad():
            soft_targets = teacher(xu)
        s = student(xu)
        loss = alpha * distillation_loss(s, soft_targets, T) + (1 - alpha) * F.cross_entropy(student(xl), yl)
        opt.zero_grad()
        loss.backward()
        opt.step()
same = kl_check(F.log_softmax(s / T, 1), F.log_softmax(soft_targets / T, 1)) * T * T
assert torch.allclose(same, distillation_loss(s, soft_targets, T), atol=1e-6)

acc_teacher, acc_baseline, acc_student = accuracy(teacher), accuracy(baseline), accuracy(student)
print(f"distillation: teacher {acc_teacher:.3f}, student alone {acc_baseline:.3f}, distilled student {acc_student:.3f}")
assert acc_student > acc_baseline + 0.015, (acc_student, acc_baseline)
assert acc_student > acc_teacher - 0.06, (acc_student, acc_teacher)
