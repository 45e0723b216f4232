"""Shared models and helpers of the ckopt.torch tests (torch on the CPU)."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import ckopt.torch as ct

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


def step(fn, model):
    """One training step of `fn` (a loss of `model`): the loss and the
    parameters' gradients."""
    model.zero_grad(set_to_none=True)
    loss = fn()
    loss.backward()
    return loss.detach(), grads(model)


def opts_for(mode, model, batch):
    """optimal needs a byte budget: the middle of the model's memory curve
    (in the caller's autocast state)."""
    if mode != "optimal":
        return {}
    pts = ct.compile(copy.deepcopy(model), batch, mode="none").memory_curve()["points"]
    return {"budget": pts[len(pts) // 2]["peak_bytes"]}


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        # No qkv bias: its key part has an exactly zero gradient (softmax
        # ignores a per-row constant), which AdamW would turn from rounding
        # noise into lr-sized steps, different in every implementation.
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        h = self.heads
        q = q.view(b, t, h, d // h).transpose(1, 2)
        k = k.view(b, t, h, d // h).transpose(1, 2)
        v = v.view(b, t, h, d // h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (d // h) ** 0.5)
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """A small GPT (minGPT-style explicit causal attention), cross-entropy on
    integer next-token labels."""

    def __init__(self, vocab=32, d=16, heads=2, layers=2, seq=8):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(seq, d)
        self.blocks = nn.ModuleList(Block(d, heads, seq) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx, targets):
        b, t = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def gpt_batch(seed, n=2, seq=8, vocab=32):
    g = torch.Generator().manual_seed(seed)
    idx = torch.randint(0, vocab, (n, seq + 1), generator=g)
    return idx[:, :-1].contiguous(), idx[:, 1:].contiguous()
