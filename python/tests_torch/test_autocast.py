"""Mixed precision: bf16/f16 models (`model.to(torch.bfloat16)`) and
`torch.autocast` regions, inside the model's forward or around `cm(...)`,
against eager torch in the same precision, on both executors and under every
remat mode; the plan counts bf16 activations at 2 bytes.

Tolerance (docs/torch.md, "Mixed precision"). bf16 keeps 8 significant bits:
one rounding is a relative error up to 2^-9 (2e-3). ckopt and eager torch
compute the same math but round at different points: ckopt rounds each ck
op's bf16 result (a Linear's matmul, then its bias add; the five ops of an
erf gelu), torch's fused kernels round once (addmm, gelu, softmax). So each
side is a few roundings per layer from the exact value, compounded through
the layers and the backward's bf16 GEMMs, and the two differ by about the
sum of both errors. Measured (max over parameters, relative norm of the
difference): autocast 9e-3 (eager bf16 is itself 8e-3 to 1e-2 from f32);
a whole bf16 GPT 1.9e-2 (eager bf16 is 0.5-1.8e-2 from f32: its gradients
are bf16 tensors, summed in bf16); f16 3e-3. We accept 2e-2 under autocast
and for single table entries, 4e-2 for bf16 models and 1e-2 for f16 models,
and also check that ckopt is not further from the f32 result than 4x eager's
own low-precision error. Both executors compute the same plan; remat's
gradients are bit-identical to no remat's on each executor."""

import copy

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import ckopt
import ckopt.torch as ct
from conftest import GPT, MLP, gpt_batch, grads, mlp_batch, opts_for, rel, step
from test_table import CASES, Case

MODES = ["none", "sqrt", "greedy", "log", "optimal"]
EXECUTORS = ["aten", "ckopt"]
# Relative tolerances against eager torch in the same precision (see the
# module docstring): autocast (bf16 activations, f32 master weights and
# gradients) and single table entries in bf16; whole bf16 models (their
# gradients are bf16 tensors, summed in bf16); f16 models (3 more bits).
TOL = 2e-2
TOL_MODEL = {torch.bfloat16: 4e-2, torch.float16: 1e-2}


def low(batch, dtype):
    """A batch with its float tensors in `dtype` (token ids stay integers)."""
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in batch)


class SmoothMLP(MLP):
    """conftest's residual MLP with GELU for ReLU. ReLU's gradient jumps at
    0: a pre-activation within a rounding of 0 lands on either side under
    another rounding order and flips that unit's whole gradient, so a ReLU
    MLP's bf16 gradients differ from eager's by several percent (eager bf16
    is itself 1-12% from f32 on conftest's MLP). The ReLU MLP is checked
    exactly instead (test_autocast_relu_mlp_rounds_where_ck_rounds)."""

    def forward(self, x, t):
        h = F.gelu(self.inp(x))
        for b in self.blocks:
            h = h + F.gelu(b(h))
        return F.mse_loss(self.out(h), t)


MODELS = {
    "mlp": (lambda: SmoothMLP(width=32, depth=4), lambda s: mlp_batch(s, n=16)),
    "gpt": (lambda: GPT(vocab=32, d=32, heads=2, layers=2, seq=8), lambda s: gpt_batch(s, n=4)),
}


def assert_close(got, want, exact32=None, tol=TOL):
    """got vs eager in the same precision, within `tol`; with `exact32`
    (eager in f32): ckopt is not further from f32 than eager's own
    low-precision result is, within a factor."""
    loss, g = got
    wloss, wg = want
    assert rel(loss, wloss) <= tol, (float(loss), float(wloss))
    assert g.keys() == wg.keys()
    for k in wg:
        assert g[k].dtype == wg[k].dtype, (k, g[k].dtype, wg[k].dtype)
        assert rel(g[k], wg[k]) <= tol, (k, rel(g[k], wg[k]))
    if exact32 is not None:
        # eager bf16 is itself this far from f32: ckopt is not further from
        # f32 than a few times that
        _, g32 = exact32
        for k in wg:
            assert rel(g[k].float(), g32[k]) <= 4 * rel(wg[k].float(), g32[k]) + 1e-3, k


# --------------------------------------------------------------------------
# bf16 / f16 models


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
@pytest.mark.parametrize("name", list(MODELS))
def test_low_precision_model_trains(name, dtype, executor):
    make, batch_of = MODELS[name]
    torch.manual_seed(0)
    f32 = make()
    ref = copy.deepcopy(f32).to(dtype)
    model = copy.deepcopy(ref)
    batch = low(batch_of(1), dtype)
    cm = ct.compile(model, batch, mode="sqrt", executor=executor)
    text = cm.ck_text
    ck_dt = {torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
    assert f"x{ck_dt}> {{ck.param}}" in text and "xf32> {ck.param}" not in text
    want = step(lambda: ref(*batch), ref)
    got = step(lambda: cm(*batch), model)
    assert got[0].dtype == dtype
    for p in model.parameters():
        assert p.grad.dtype == dtype
    assert_close(got, want, step(lambda: f32(*batch_of(1)), f32), TOL_MODEL[dtype])
    # and it trains: SGD steps lower the loss as eager's do
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    first = None
    for i in range(8):
        opt.zero_grad()
        loss = cm(*low(batch_of(1), dtype))
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert cm(*low(batch_of(1), dtype)).item() < first


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("op", list(CASES), ids=str)
def test_table_entry_in_bf16(op, executor):
    """Every table entry with its operands in bf16 (the parameter, the float
    inputs and the projection buffer), against eager torch in bf16. The
    loss is a sum of +-terms (softmax rows sum to 1: it cancels), so its
    error is measured against the sum of the terms' sizes, as a sum's
    rounding error is bounded."""
    fn, x, inputs = CASES[op]
    n = fn(x, *inputs).numel()
    ref = Case(fn, x, n)
    scale = float((fn(x, *inputs).detach().reshape(-1).abs() * ref.proj.abs()).sum())
    ref = ref.to(torch.bfloat16)
    inputs = low(inputs, torch.bfloat16)
    model = copy.deepcopy(ref)
    cm = ct.compile(model, inputs, mode="none", executor=executor)
    assert "xbf16> {ck.param}" in cm.ck_text
    targets = {n.target for n in cm._cap().ep.graph.nodes if n.op == "call_function"}
    assert op in targets, f"the case does not produce {op}: {targets}"
    want = ref(*inputs)
    want.backward()
    got = cm(*inputs)
    got.backward()
    assert got.dtype == want.dtype and model.x.grad.dtype == torch.bfloat16
    got, want = float(got.detach()), float(want.detach())
    assert abs(got - want) <= TOL * scale, (got, want, scale)
    assert rel(model.x.grad, ref.x.grad) <= TOL


# --------------------------------------------------------------------------
# torch.autocast


class Autocast(nn.Module):
    """The user's model with an autocast region inside its forward."""

    def __init__(self, inner, dtype=torch.bfloat16):
        super().__init__()
        self.inner = inner
        self.dtype = dtype

    def forward(self, *args):
        with torch.autocast("cpu", dtype=self.dtype):
            return self.inner(*args)


def _autocast_step(model, batch, around):
    if around:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(*batch)
    else:
        loss = model(*batch)
    return loss


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(MODELS))
def test_autocast_matches_eager(name, mode, executor):
    """Autocast around cm(...) at call time: loss and gradients within TOL of
    eager under the same autocast; f32 master gradients; remat's gradients
    bit-identical to no remat's."""
    make, batch_of = MODELS[name]
    torch.manual_seed(0)
    ref = make()
    batch = batch_of(2)
    models = {m: copy.deepcopy(ref) for m in {"none", mode}}
    # compiled under the autocast it is called with: compile plans the
    # current mode (a budget taken from the bf16 curve fits no f32 plan)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cms = {m: ct.compile(mm, batch, mode=m, executor=executor, **opts_for(m, ref, batch))
               for m, mm in models.items()}
    want = step(lambda: _autocast_step(ref, batch, True), ref)
    f32 = step(lambda: ref(*batch), ref)
    got = {m: step(lambda: _autocast_step(cms[m], batch, True), models[m]) for m in cms}
    for m, g in got.items():
        assert all(p.grad.dtype == torch.float32 for p in models[m].parameters())
        assert_close(g, want, f32)
    assert set(cms[mode]._caps) == {(True, torch.bfloat16)}
    cap = cms[mode]._caps[(True, torch.bfloat16)]
    assert "xbf16>" in cap.text and '"ck.cast"' in cap.text
    # remat recomputes the same ops: bit-identical to no remat
    assert torch.equal(got[mode][0], got["none"][0])
    for k, v in got["none"][1].items():
        assert torch.equal(got[mode][1][k], v), k


def _relu_mlp_at_ck_rounding(m, x, t):
    """conftest's MLP under autocast as ckopt computes it, in eager torch: a
    Linear is a bf16 matmul rounded to bf16, then its bf16 bias added
    (torch's fused addmm rounds once, after the bias)."""
    bf = torch.bfloat16

    def lin(layer, h):
        return h.to(bf) @ layer.weight.to(bf).t() + layer.bias.to(bf)

    h = torch.relu(lin(m.inp, x))
    for b in m.blocks:
        h = h + torch.relu(lin(b, h))
    return F.mse_loss(lin(m.out, h).float(), t)


@pytest.mark.parametrize("executor", EXECUTORS)
def test_autocast_relu_mlp_rounds_where_ck_rounds(executor):
    """ReLU MLP under autocast (see SmoothMLP for why not against eager's
    fused kernels): equal to eager torch doing ckopt's bf16 ops."""
    torch.manual_seed(0)
    ref = MLP(width=32, depth=4)
    model = copy.deepcopy(ref)
    batch = mlp_batch(2, n=16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cm = ct.compile(model, batch, mode="sqrt", executor=executor)
        got = step(lambda: cm(*batch), model)
    want = step(lambda: _relu_mlp_at_ck_rounding(ref, *batch), ref)
    # aten: torch's own kernels, bit for bit; ckopt: its cpu kernels round
    # every bf16 value the same way and sum the f32 loss tail (mse, the
    # bias gradients) in another order: no bf16 rounding (2^-9) apart
    same = torch.equal if executor == "aten" else (lambda a, b: rel(a, b) <= 1e-5)
    assert same(got[0], want[0]), (got[0], want[0])
    for k, g in want[1].items():
        assert got[1][k].dtype == torch.float32
        assert same(got[1][k], g), (k, rel(got[1][k], g))


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("name", list(MODELS))
def test_autocast_inside_forward(name, executor):
    """An autocast region in the user's forward: captured by torch.export
    (its casts become ck.cast), whatever the call site's state."""
    make, batch_of = MODELS[name]
    torch.manual_seed(0)
    ref = Autocast(make())
    model = copy.deepcopy(ref)
    batch = batch_of(3)
    cm = ct.compile(model, batch, mode="sqrt", executor=executor)
    assert "xbf16>" in cm.ck_text and '"ck.cast"' in cm.ck_text
    want = step(lambda: ref(*batch), ref)
    got = step(lambda: cm(*batch), model)
    assert all(p.grad.dtype == torch.float32 for p in model.parameters())
    assert_close(got, want)
    # The same capture serves a call under an autocast that is already on.
    assert set(cm._caps) == {True}


def test_autocast_state_is_captured_per_call():
    """f32 without autocast, bf16 under it, each captured once on demand;
    the f32 plan stays f32 after an autocast call."""
    torch.manual_seed(0)
    ref = MLP()
    model = copy.deepcopy(ref)
    batch = mlp_batch(4)
    cm = ct.compile(model, batch)
    assert "bf16" not in cm.ck_text
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert "xbf16>" in cm.ck_text  # the autocast capture, made on demand
        loss16 = cm(*batch)
    loss16.backward()
    assert set(cm._caps) == {True, (True, torch.bfloat16)}
    g16 = grads(model)
    # the planned backward runs with autocast off: backward inside the
    # region is the same step
    model.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cm(*batch).backward()
    assert all(torch.equal(g, grads(model)[k]) for k, g in g16.items())
    model.zero_grad()
    loss32 = cm(*batch)
    loss32.backward()
    want32 = step(lambda: ref(*batch), ref)
    assert rel(loss32, want32[0]) <= 1e-5
    for k, g in grads(model).items():
        assert rel(g, want32[1][k]) <= 1e-5, k
    assert loss16.item() != loss32.item()  # the bf16 step computed in bf16
    with torch.autocast("cpu", dtype=torch.float16):
        cm(*batch).backward()
    assert (True, torch.float16) in cm._caps and "xf16>" in cm._caps[(True, torch.float16)].text
    # a CUDA autocast does not touch a CPU model
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=torch.cuda.is_available()):
        cm(*batch)
    assert len(cm._caps) == 3


PEAK_MODELS = {
    # activations dominate the step's peak (not the f32 gradients, the same
    # in both plans)
    "mlp": (lambda: MLP(width=64, depth=6), lambda: mlp_batch(0, n=1024)),
    "gpt": (lambda: GPT(vocab=64, d=32, heads=8, layers=2, seq=64), lambda: gpt_batch(0, n=8, seq=64, vocab=64)),
}


@pytest.mark.parametrize("mode", ["none", "sqrt", "greedy", "log"])
@pytest.mark.parametrize("name", list(PEAK_MODELS))
def test_autocast_plan_counts_bf16_at_two_bytes(name, mode):
    """The planned peak under autocast is below 0.6x the f32 plan's (about
    half: bf16 activations; the f32 gradients, the GPT's f32 residual stream
    and layer norms, as torch's autocast leaves them, stay 4 bytes).
    `optimal` plans to a byte budget, so its peak is the budget's, not half."""
    make, batch_of = PEAK_MODELS[name]
    torch.manual_seed(0)
    cm = ct.compile(make(), batch_of(), mode=mode)
    f32 = cm.memory_report()["peak_bytes"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        bf16 = cm.memory_report()["peak_bytes"]
    assert "xbf16>" in cm._caps[(True, torch.bfloat16)].text
    assert bf16 < 0.6 * f32, (bf16, f32, bf16 / f32)


@pytest.mark.parametrize("mode", ["sqrt", "log"])
def test_autocast_measured_peak_is_the_plan(mode):
    """The aten executor under autocast allocates what the bf16 plan counts
    (test_train's f32 check, in bf16)."""
    from test_train import _measured_peak

    torch.manual_seed(0)
    model = MLP(width=256, depth=12)
    g = torch.Generator().manual_seed(0)
    batch = (torch.randn(256, 8, generator=g), torch.randn(256, 4, generator=g))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cm = ct.compile(model, batch, mode=mode)
        planned = cm.memory_report()["peak_bytes"]

    def run():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = cm(*batch)
        loss.backward()

    measured = _measured_peak(run)
    assert 0.8 * planned <= measured <= 1.05 * planned, (measured, planned)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("around", [True, False], ids=["around", "inside"])
def test_cuda_autocast_matches_eager(around):
    """torch.autocast("cuda") on a CUDA model (the aten executor): CUDA's
    autocast lists (layer norm and softmax in f32) captured as they are."""
    torch.manual_seed(0)
    make, batch_of = MODELS["gpt"]
    inner = make().cuda()
    ref = inner if around else CudaAutocast(inner)
    model = copy.deepcopy(ref)
    batch = tuple(t.cuda() for t in batch_of(5))

    def call(m):
        if around:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                return m(*batch)
        return m(*batch)

    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=around):
        cm = ct.compile(model, batch, mode="sqrt")
    want = step(lambda: call(ref), ref)
    got = step(lambda: call(cm), model)
    assert all(p.grad.dtype == torch.float32 and p.grad.is_cuda for p in model.parameters())
    assert_close(got, want)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=around):
        assert "xbf16>" in cm.ck_text


class CudaAutocast(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *args):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return self.inner(*args)


# --------------------------------------------------------------------------
# dtypes ckopt does not compute in


class ToDouble(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return (x * self.w).double().sum().float()  # LINE-DOUBLE


class ToComplex(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4))

    def forward(self, x):
        return (x * self.w).to(torch.complex64).abs().sum()  # LINE-COMPLEX


class Double(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).sum()  # LINE-F64-MODEL


def _line(tag):
    with open(__file__) as f:
        src = f.read().splitlines()
    return next(i + 1 for i, s in enumerate(src) if s.endswith("# " + tag))


@pytest.mark.parametrize("model,args,tag,dtype", [
    (ToDouble, lambda: (torch.randn(3, 4),), "LINE-DOUBLE", "float64"),
    (ToComplex, lambda: (torch.randn(3, 4),), "LINE-COMPLEX", "complex64"),
    (lambda: Double().double(), lambda: (torch.randn(3, 4, dtype=torch.float64),), "LINE-F64-MODEL", "float64"),
], ids=["to-double", "to-complex", "double-model"])
def test_unsupported_dtype_names_op_and_line(model, args, tag, dtype):
    with pytest.raises(ckopt.UnsupportedError) as e:
        ct.compile(model(), args())
    assert e.value.op.startswith("aten.")
    assert e.value.source == f"{__file__}:{_line(tag)}"
    assert dtype in str(e.value) and "bfloat16" in str(e.value)
    assert e.value.op in str(e.value) and e.value.source in str(e.value)
