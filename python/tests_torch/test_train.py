"""ckopt.torch.compile against eager torch: loss and every gradient, on both
executors and under every remat mode; optimizers, schedulers, clipping and
state_dict unchanged; BatchNorm buffers; save_on_cpu."""

import copy

import pytest
import torch

import ckopt
import ckopt.torch as ct
from conftest import CNN, GPT, MLP, cnn_batch, gpt_batch, grads, mlp_batch, opts_for, rel, step

MODES = ["none", "sqrt", "greedy", "log", "optimal"]
EXECUTORS = ["aten", "ckopt"]


def eager_step(model, batch):
    return step(lambda: model(*batch), model)


MODELS = {"mlp": (MLP, mlp_batch), "cnn": (CNN, cnn_batch), "gpt": (GPT, gpt_batch)}


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(MODELS))
def test_loss_grads_buffers_match_eager(name, mode, executor):
    """MLP (MSE), CNN (BatchNorm, pooling, integer labels), GPT (embeddings,
    layer norm, causal attention, gelu, cross_entropy)."""
    make, batch_of = MODELS[name]
    torch.manual_seed(0)
    ref = make()
    model = copy.deepcopy(ref)
    batch = batch_of(2)
    cm = ct.compile(model, batch, mode=mode, executor=executor, **opts_for(mode, ref, batch))
    want_loss, want = eager_step(ref, batch)
    loss = cm(*batch)
    assert loss.grad_fn is not None
    loss.backward()
    assert rel(loss, want_loss) <= 1e-5
    got = grads(model)
    assert got.keys() == want.keys()
    for k in want:
        assert rel(got[k], want[k]) <= 1e-5, k
    # BatchNorm's running statistics are written back as eager does.
    for (k, a), (_, b) in zip(model.named_buffers(), ref.named_buffers()):
        assert torch.equal(a, b) if a.dtype == torch.int64 else rel(a, b) <= 1e-6, k


def test_plan_is_ckopts():
    # Batch 64: activations dominate the step's peak (at batch 16 the peak
    # is where every gradient is live and sqrt lowers only the temp peak).
    model = MLP(width=32, depth=8)
    batch = mlp_batch(0, n=64)
    none = ct.compile(copy.deepcopy(model), batch, mode="none")
    sq = ct.compile(model, batch, mode="sqrt")
    assert sq.plan == "autodiff{func=f rebroadcast=true},inplace,remat{mode=sqrt}"
    rep = sq.memory_report()
    assert rep["function"] == "f_grad" and rep["recomputed_ops"] > 0 and rep["arena_bytes"] is not None
    assert rep["peak_bytes"] < none.memory_report()["peak_bytes"]
    curve = sq.memory_curve()
    assert curve["function"] == "f_grad" and curve["points"]
    # The report is the CLI's: the same module through ckopt's passes.
    again = ckopt.parse(sq.ck_text).optimize(sq.plan + ",fuse,memplan").memory_report("f_grad")
    assert again == rep
    assert "f_grad" in sq.module.functions


@pytest.mark.parametrize("executor", EXECUTORS)
@pytest.mark.parametrize("name", list(MODELS))
def test_adamw_scheduler_clipping_match_eager(name, executor):
    make, batch_of = MODELS[name]
    torch.manual_seed(0)
    ref = make()
    model = copy.deepcopy(ref)
    cm = ct.compile(model, batch_of(0), mode="sqrt", executor=executor)
    opts = [torch.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1) for m in (ref, cm)]
    scheds = [torch.optim.lr_scheduler.StepLR(o, 2, 0.5) for o in opts]
    for step in range(5):
        batch = batch_of(10 + step)
        losses = []
        for m, o, s in zip((ref, cm), opts, scheds):
            o.zero_grad()
            loss = m(*batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            o.step()
            s.step()
            losses.append(loss.item())
        assert abs(losses[0] - losses[1]) <= 1e-5 * abs(losses[0])
    for (k, a), (_, b) in zip(model.state_dict().items(), ref.state_dict().items()):
        assert rel(a, b) <= 1e-5, k
    # state_dict is the model's: keys without a prefix, loadable into eager.
    assert list(cm.state_dict().keys()) == list(ref.state_dict().keys())
    fresh = make()
    fresh.load_state_dict(cm.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(fresh.parameters(), model.parameters()))


def test_save_on_cpu_composes():
    torch.manual_seed(0)
    ref = MLP()
    model = copy.deepcopy(ref)
    batch = mlp_batch(3)
    cm = ct.compile(model, batch, mode="sqrt")
    packed = []

    def pack(t):
        packed.append(t.shape)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        loss = cm(*batch)
    n_saved = len(packed)
    assert n_saved == cm._cap().split.n_kept + len(cm._cap().split.bwd_arg_idx)
    with torch.autograd.graph.save_on_cpu(pin_memory=False):
        loss = cm(*batch)
    loss.backward()
    _, want = eager_step(ref, batch)
    for k, g in grads(model).items():
        assert rel(g, want[k]) <= 1e-5


def test_eval_mode_captured_on_demand():
    torch.manual_seed(0)
    ref = CNN()
    model = copy.deepcopy(ref)
    batch = cnn_batch(5)
    cm = ct.compile(model, batch)
    cm(*batch).backward()
    ref(*batch).backward()
    cm.eval()
    ref.eval()
    assert not model.training
    with torch.no_grad():
        a, b = cm(*batch), ref(*batch)
    assert rel(a, b) <= 1e-5
    assert set(cm._caps) == {True, False}


def test_one_autograd_node_per_call():
    model = MLP()
    batch = mlp_batch(0)
    cm = ct.compile(model, batch)
    loss = cm(*batch)
    node = loss.grad_fn
    assert type(node).__name__ == "_StepBackward"
    # every parameter is reached through that one node
    nxt = [f for f, _ in node.next_functions if f is not None]
    assert len(nxt) == len(list(model.parameters()))


def _measured_peak(fn):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    evs = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"), key=lambda e: e.start_ns())
    cur = best = 0
    for e in evs:
        cur += e.nbytes()
        best = max(best, cur)
    return best


@pytest.mark.parametrize("mode", ["sqrt", "log"])
def test_measured_peak_is_at_most_the_plan(mode):
    # The aten executor frees what the plan frees: kept values die at their
    # last use in the backward (a step whose saved values all lived to the
    # end measured the plan + 5 activations under sqrt).
    torch.manual_seed(0)
    model = MLP(width=256, depth=12)
    g = torch.Generator().manual_seed(0)
    batch = (torch.randn(256, 8, generator=g), torch.randn(256, 4, generator=g))
    cm = ct.compile(model, batch, mode=mode)
    planned = cm.memory_report()["peak_bytes"]
    measured = _measured_peak(lambda: cm(*batch).backward())
    assert 0.8 * planned <= measured <= 1.05 * planned, (measured, planned)


def test_second_backward_is_an_error():
    model = MLP()
    batch = mlp_batch(0)
    cm = ct.compile(model, batch, mode="sqrt")
    loss = cm(*batch)
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="already used by a backward"):
        loss.backward()
