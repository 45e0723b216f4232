"""Dropout becomes ck.dropout: ckopt's mask (not torch's), a new step key per
training call, the same mask in the forward and in the backward (also when
remat recomputes it), equal on both executors; absent in eval mode."""

import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

import ckopt.torch as ct
from conftest import rel


class Drop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 64)
        self.fc2 = nn.Linear(64, 64)
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        h = self.drop(torch.relu(self.fc1(x)))
        h = self.drop(torch.relu(self.fc2(h)))
        return h.square().mean()


def test_dropout_masks_and_steps():
    torch.manual_seed(0)
    x = torch.randn(16, 8)
    a = Drop()
    b = copy.deepcopy(a)
    c = copy.deepcopy(a)
    ca = ct.compile(a, (x,), mode="none")
    cb = ct.compile(b, (x,), mode="sqrt", executor="ckopt")
    cc = ct.compile(c, (x,), mode="log")
    assert "ck.dropout" in ca.ck_text and "ck.step" in ca.ck_text
    losses = []
    for step in range(2):
        la, lb, lc = ca(x), cb(x), cc(x)
        for m in (la, lb, lc):
            m.backward()
        # aten (torch's ops on ckopt's mask formula) == ckopt's cpu backend, and
        # a recomputed mask is the forward's mask: same loss and gradients.
        assert rel(la, lb) <= 1e-5 and rel(la, lc) <= 1e-5
        for (n, p), q, r in zip(a.named_parameters(), b.parameters(), c.parameters()):
            assert rel(p.grad, q.grad) <= 1e-5, n
            assert rel(p.grad, r.grad) <= 1e-5, n
        losses.append(la.item())
        for m in (a, b, c):
            m.zero_grad()
    assert losses[0] != losses[1]  # a new key per step
    # about half the units are dropped, as rate=0.5 says
    h = torch.rand(64, 64) + 0.5
    y = ct._plan.dropout(h, 0.5, 0, torch.tensor(1.0))
    kept = (y != 0).float().mean().item()
    assert 0.4 < kept < 0.6
    assert torch.allclose(y[y != 0], (h * 2)[y != 0])
    # eval: no dropout, the eager result
    ca.eval()
    a.eval()
    with torch.no_grad():
        assert rel(ca(x), a(x)) <= 1e-6


def test_dropout_gradient_is_masked_like_the_forward():
    torch.manual_seed(0)
    x = torch.randn(16, 8)
    m = Drop()
    cm = ct.compile(m, (x,), mode="none")
    cm(x).backward()
    # the same step by hand with ckopt's masks (step key 1.0, seeds 0 and 1 in graph order)
    ref = copy.deepcopy(m)
    ref.zero_grad()
    step = torch.tensor(1.0)
    h = ct._plan.dropout(torch.relu(ref.fc1(x)), 0.5, 0, step)
    h = ct._plan.dropout(torch.relu(ref.fc2(h)), 0.5, 1, step)
    h.square().mean().backward()
    for (n, p), q in zip(m.named_parameters(), ref.parameters()):
        assert rel(p.grad, q.grad) <= 1e-5, n
