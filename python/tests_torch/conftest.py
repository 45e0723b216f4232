"""Shared models and helpers of the ckopt.torch tests (torch on the CPU)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.set_num_threads(1)


class MLP(nn.Module):
    """A residual MLP with a mean-squared-error loss."""

    def __init__(self, width=16, depth=4):
        super().__init__()
        self.inp = nn.Linear(8, width)
        self.blocks = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.out = nn.Linear(width, 4)

    def forward(self, x, t):
        h = torch.relu(self.inp(x))
        for b in self.blocks:
            h = h + torch.relu(b(h))
        return F.mse_loss(self.out(h), t)


class CNN(nn.Module):
    """Convolutions with stride/padding, BatchNorm, pooling, integer labels."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x, labels):
        h = F.relu(self.bn1(self.c1(x)))
        h = F.max_pool2d(h, 2)
        h = F.relu(self.bn2(self.c2(h)))
        h = F.avg_pool2d(h, 2)
        h = F.adaptive_avg_pool2d(h, 1).flatten(1)
        return F.cross_entropy(self.fc(h), labels)


def mlp_batch(seed, n=6):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 8, generator=g), torch.randn(n, 4, generator=g)


def cnn_batch(seed, n=4):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 3, 8, 8, generator=g), torch.randint(0, 5, (n,), generator=g)


def rel(a, b):
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / max(float(b.norm()), 1e-30))


def grads(model):
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}
