"""Every entry of the ATen -> ck table against eager torch: a tiny module
whose exported graph contains that op, its loss and gradient through
ckopt.torch.compile equal to eager's (both executors)."""

import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ckopt.torch as ct
from conftest import rel

aten = torch.ops.aten
g = torch.Generator().manual_seed(0)


def r(*shape, pos=False):
    t = torch.randn(*shape, generator=g)
    return t.abs() + 0.5 if pos else t


# op -> (function of (x, *inputs), x, inputs). x becomes a parameter.
CASES = {
    aten.relu.default: (torch.relu, r(3, 4), ()),
    aten.sigmoid.default: (torch.sigmoid, r(3, 4), ()),
    aten.tanh.default: (torch.tanh, r(3, 4), ()),
    aten.exp.default: (torch.exp, r(3, 4), ()),
    aten.log.default: (torch.log, r(3, 4, pos=True), ()),
    aten.sqrt.default: (torch.sqrt, r(3, 4, pos=True), ()),
    aten.rsqrt.default: (torch.rsqrt, r(3, 4, pos=True), ()),
    aten.neg.default: (torch.neg, r(3, 4), ()),
    aten.erf.default: (torch.erf, r(3, 4), ()),
    aten.add.Tensor: (lambda x, y: x + y + 1.5, r(3, 4), (r(4),)),
    aten.add.Scalar: (lambda x: torch.ops.aten.add.Scalar(x, 2.0), r(3, 4), ()),
    aten.sub.Tensor: (lambda x, y: torch.sub(x, y, alpha=2), r(3, 4), (r(3, 1),)),
    aten.sub.Scalar: (lambda x: torch.ops.aten.sub.Scalar(x, 2.0), r(3, 4), ()),
    aten.mul.Tensor: (lambda x, y: x * y, r(3, 4), (r(1, 4),)),
    aten.mul.Scalar: (lambda x: torch.ops.aten.mul.Scalar(x, 3.0), r(3, 4), ()),
    aten.div.Tensor: (lambda x, y: x / y, r(3, 4), (r(3, 4, pos=True),)),
    aten.div.Scalar: (lambda x: torch.ops.aten.div.Scalar(x, 3.0), r(3, 4), ()),
    aten.reciprocal.default: (torch.reciprocal, r(3, 4, pos=True), ()),
    aten.maximum.default: (torch.maximum, r(3, 4), (r(3, 4),)),
    aten.minimum.default: (torch.minimum, r(3, 4), (r(3, 4),)),
    aten.clamp.default: (lambda x: torch.clamp(x, -0.5, 0.7) + torch.clamp(x, min=0.0) + torch.clamp(x, max=0.2), r(3, 4), ()),
    aten.pow.Tensor_Scalar: (lambda x: x**2 + x**3 + x ** 0.5 + x ** -1 + x ** -0.5, r(3, 4, pos=True), ()),
    aten.sum.dim_IntList: (lambda x: x.sum(1, keepdim=True) * x, r(3, 4), ()),
    aten.mean.dim: (lambda x: x.mean(0) + x, r(3, 4), ()),
    aten.mean.default: (lambda x: x.mean() * x, r(3, 4), ()),
    aten.amax.default: (lambda x: torch.amax(x, 1, keepdim=True) + x, r(3, 4), ()),
    aten.var.correction: (lambda x: torch.var(x, 1, keepdim=True) * x, r(3, 4), ()),
    aten.permute.default: (lambda x: x.permute(2, 0, 1) * 2 + x.transpose(0, 2).permute(0, 2, 1), r(2, 3, 4), ()),
    aten.view.default: (lambda x: x.view(6, 2) * 2 + x.reshape(2, 6).flatten().view(6, 2), r(3, 4), ()),
    aten.unsqueeze.default: (lambda x: torch.ops.aten.unsqueeze.default(x, 1) * 2, r(3, 4), ()),
    aten.squeeze.dims: (lambda x: x.squeeze(1) * 2, r(3, 1, 4), ()),
    aten.expand.default: (lambda x: x.expand(2, 3, 4) * 2, r(3, 1), ()),
    aten.clone.default: (lambda x: x.clone() * 2, r(3, 4), ()),
    aten.alias.default: (lambda x: torch.ops.aten.alias.default(x) * 2, r(3, 4), ()),
    aten._to_copy.default: (lambda x: x.to(torch.float32, copy=True) * 2, r(3, 4), ()),
    aten.slice.Tensor: (lambda x: x[:, 1:3] * 2, r(3, 4), ()),
    aten.split_with_sizes.default: (lambda x: torch.cat(x.split([1, 3], 1)[::-1], 1) * 2 + torch.cat(x.split(2, 1), 1), r(3, 4), ()),
    aten.cat.default: (lambda x, y: torch.cat([x, y], 0), r(3, 4), (r(2, 4),)),
    aten.mm.default: (lambda x, y: x @ y, r(3, 4), (r(4, 5),)),
    aten.bmm.default: (lambda x, y: torch.bmm(x, y), r(2, 3, 4), (r(2, 4, 5),)),
    aten.addmm.default: (lambda x, w, b: F.linear(x, w, b), r(3, 4), (r(5, 4), r(5))),
    aten.convolution.default: (lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), r(2, 3, 7, 7), (r(4, 3, 3, 3), r(4))),
    aten.max_pool2d_with_indices.default: (lambda x: F.max_pool2d(x, 2), r(2, 3, 6, 6), ()),
    aten.avg_pool2d.default: (lambda x: F.avg_pool2d(x, 2, stride=1), r(2, 3, 6, 6), ()),
    aten._adaptive_avg_pool2d.default: (lambda x: F.adaptive_avg_pool2d(x, 2), r(2, 3, 6, 6), ()),
    aten.native_layer_norm.default: (lambda x, w, b: F.layer_norm(x, (4,), w, b), r(3, 4), (r(4), r(4))),
    aten._softmax.default: (lambda x: torch.softmax(x, -1), r(3, 4), ()),
    aten._log_softmax.default: (lambda x: torch.log_softmax(x, 0), r(3, 4), ()),
    aten.gelu.default: (lambda x: F.gelu(x) + F.gelu(x, approximate="tanh"), r(3, 4), ()),
    aten.embedding.default: (lambda w, i: F.embedding(i, w), r(10, 4), (torch.tensor([[1, 2, 9], [0, 2, 2]]),)),
    aten.gather.default: (lambda x, i: torch.gather(x, 1, i), r(3, 4), (torch.tensor([[1], [3], [0]]),)),
    # cross_entropy (aten executor: one ck.cross_entropy of the logits) and
    # nll_loss of other values (take_along of the labels), with an ignored label
    aten.nll_loss_forward.default: (
        lambda x, t: F.cross_entropy(x, t) + F.nll_loss(x * 0.5, t, reduction="sum"),
        r(5, 4), (torch.tensor([1, 0, 3, -100, 3]),)),
    # captured whole: causal, a boolean mask, a float mask, a given scale
    aten.scaled_dot_product_attention.default: (
        lambda x, m: F.scaled_dot_product_attention(x, x * 0.5, x + 1.0, is_causal=True)
        + F.scaled_dot_product_attention(x, x, x * 2.0, attn_mask=m, scale=0.3)
        + F.scaled_dot_product_attention(x, x, x, attn_mask=m.float() * 0.5),
        r(2, 2, 5, 4), (torch.tensor([[True, False, True, True, False]] * 4 + [[False, True, False, False, True]]),)),
    aten.where.self: (lambda x, i: torch.where(i > 1, x, 0.5), r(3, 4), (torch.tensor([0, 1, 2, 3]),)),
    aten.full_like.default: (lambda x: torch.full_like(x, 2.0) * x + torch.zeros_like(x) + torch.ones_like(x) * x, r(3, 4), ()),
}


class Case(nn.Module):
    def __init__(self, fn, x, n_out):
        super().__init__()
        self.fn = fn
        self.x = nn.Parameter(x.clone())
        self.register_buffer("proj", torch.randn(n_out, generator=torch.Generator().manual_seed(1)))

    def forward(self, *inputs):
        y = self.fn(self.x, *inputs)
        return (y.reshape(-1) * self.proj).sum()


def _case(op):
    fn, x, inputs = CASES[op]
    n = fn(x, *inputs).numel()
    return Case(fn, x, n), inputs


def test_every_entry_has_a_case():
    # Batch norm and dropout have model-level tests (test_train.py); the rest here.
    elsewhere = {
        aten._native_batch_norm_legit_functional.default,
        aten._native_batch_norm_legit_no_training.default,
        aten.native_dropout.default,
    }
    assert set(ct.TABLE) - elsewhere == set(CASES)


@pytest.mark.parametrize("executor", ["aten", "ckopt"])
@pytest.mark.parametrize("op", list(CASES), ids=str)
def test_entry_matches_eager(op, executor):
    model, inputs = _case(op)
    cm = ct.compile(model, inputs, mode="none", executor=executor)
    targets = {n.target for n in cm._cap().ep.graph.nodes if n.op == "call_function"}
    assert op in targets, f"the case does not produce {op}: {targets}"
    ref = Case(model.fn, model.x.detach(), model.proj.numel())
    want = ref(*inputs)
    want.backward()
    got = cm(*inputs)
    got.backward()
    assert rel(got, want) <= 1e-5
    assert rel(model.x.grad, ref.x.grad) <= 1e-5


class GroupedConvs(nn.Module):
    """Grouped aten.convolution: a depthwise conv (stride 2, padding 1, bias),
    a depthwise conv with channel multiplier 2, a groups-2 conv (bias)."""

    def __init__(self):
        super().__init__()
        self.dw = nn.Conv2d(4, 4, 3, stride=2, padding=1, groups=4)
        self.mult = nn.Conv2d(4, 8, 3, padding=1, groups=4, bias=False)
        self.g2 = nn.Conv2d(8, 6, 3, padding=1, groups=2)

    def forward(self, x):
        return (self.g2(torch.relu(self.mult(self.dw(x)))) ** 2).mean()


@pytest.mark.parametrize("executor", ["aten", "ckopt"])
def test_grouped_convolution_matches_eager(executor):
    torch.manual_seed(3)
    x = r(2, 4, 9, 9)
    model = GroupedConvs()
    ref = GroupedConvs()
    ref.load_state_dict(model.state_dict())
    cm = ct.compile(model, (x,), mode="none", executor=executor)
    assert "groups = 4 : i64" in cm.ck_text and "groups = 2 : i64" in cm.ck_text, cm.ck_text
    want = ref(x)
    want.backward()
    got = cm(x)
    got.backward()
    assert rel(got, want) <= 1e-5
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert p.grad is not None, name
        assert rel(p.grad, q.grad) <= 1e-5, name


class Indexed(nn.Module):
    """Integer token ids and labels: an embedding, a gather of two indices
    per row, cross_entropy."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.proj = nn.Linear(6, 5)

    def forward(self, ids, pick, labels):
        h = self.proj(self.emb(ids))  # [4, 5]
        return F.cross_entropy(h, labels) + torch.gather(h, 1, pick).sum() * 0.1


@pytest.mark.parametrize("executor", ["aten", "ckopt"])
def test_integer_indices_are_ck_integers(executor):
    args = (torch.tensor([1, 9, 0, 2]), torch.tensor([[0, 4], [1, 1], [3, 2], [4, 0]]), torch.tensor([4, 0, -100, 2]))
    model = Indexed()
    ref = Indexed()
    ref.load_state_dict(model.state_dict())
    cm = ct.compile(model, args, mode="none", executor=executor)
    text = cm.ck_text
    for op in ("ck.gather", "ck.take_along", "ck.cross_entropy"):
        assert op in text, op
    assert "log" not in text.replace("ck.cross_entropy", ""), text
    assert text.count("xi64>") >= 3
    want = ref(*args)
    want.backward()
    got = cm(*args)
    got.backward()
    assert rel(got, want) <= 1e-5
    for (n, p), q in zip(model.named_parameters(), ref.parameters()):
        assert rel(p.grad, q.grad) <= 1e-5, n
