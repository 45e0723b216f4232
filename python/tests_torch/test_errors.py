"""Errors come from compile, before anything runs, and name what is wrong."""

import pytest
import torch
import torch.nn as nn

import ckopt
import ckopt.torch as ct
from conftest import MLP, mlp_batch


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return torch.cumsum(x * self.w, 0).sum()  # LINE-CUMSUM


def _line(tag):
    with open(__file__) as f:
        src = f.read().splitlines()
    return next(i + 1 for i, s in enumerate(src) if s.endswith("# " + tag))


def test_unsupported_op_names_op_and_source():
    m = Cumsum()
    with pytest.raises(ckopt.UnsupportedError) as e:
        ct.compile(m, (torch.randn(3, 4),))
    assert e.value.op == "aten.cumsum.default"
    assert e.value.source == f"{__file__}:{_line('LINE-CUMSUM')}"
    assert isinstance(e.value, ckopt.Error)
    assert "aten.cumsum.default" in str(e.value) and e.value.source in str(e.value)
    assert m.w.grad is None


class Branch(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        if (x * self.w).sum() > 0:  # data-dependent control flow
            return (x * self.w).sum()
        return (x * 2 * self.w).sum()


def test_data_dependent_control_flow():
    with pytest.raises(ckopt.UnsupportedError) as e:
        ct.compile(Branch(), (torch.randn(3, 4),))
    assert e.value.op == "torch.export"
    assert "data" in str(e.value).lower() or "guard" in str(e.value).lower()


class Mutates(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        x.mul_(2)
        return (x * self.w).sum()


def test_input_mutation():
    with pytest.raises(ckopt.UnsupportedError, match="writes into its input"):
        ct.compile(Mutates(), (torch.randn(3, 4),))


def test_unsupported_dtype():
    m = MLP().double()
    x, t = mlp_batch(0)
    with pytest.raises(ckopt.UnsupportedError, match="float64"):
        ct.compile(m, (x.double(), t.double()))


def test_budget_below_smallest_feasible_names_bytes():
    m = MLP()
    with pytest.raises(ckopt.PassError, match=r"\d+ bytes|\d+ B\b|smallest feasible"):
        ct.compile(m, mlp_batch(0), mode="greedy", budget=16)


def test_shape_mismatch_names_argument_and_shapes():
    cm = ct.compile(MLP(), mlp_batch(0, n=6))
    x, t = mlp_batch(0, n=5)
    with pytest.raises(ValueError, match=r"argument 0 has shape \(5, 8\).*\(6, 8\)"):
        cm(x, t)


def test_bad_options():
    with pytest.raises(ValueError, match="executor"):
        ct.compile(MLP(), mlp_batch(0), executor="xla")
    with pytest.raises(ValueError, match="mode"):
        ct.compile(MLP(), mlp_batch(0), mode="fast")


class AttnDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        q = x * self.w
        return torch.nn.functional.scaled_dot_product_attention(q, q, q, dropout_p=0.1).sum()  # LINE-SDPA


def test_attention_dropout_is_refused_with_its_source():
    with pytest.raises(ckopt.UnsupportedError, match="dropout_p") as e:
        ct.compile(AttnDropout(), (torch.randn(2, 3, 4),))
    assert e.value.op == "aten.scaled_dot_product_attention.default"
    assert e.value.source == f"{__file__}:{_line('LINE-SDPA')}"
