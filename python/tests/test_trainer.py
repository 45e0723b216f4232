"""Trainer: a new batch per step on cpu equals the interpreter and
ckopt-run --train; parameters by name; errors; Ctrl-C in a loop."""

import os
import re
import signal
import threading
import time

import numpy as np
import pytest
from conftest import close, run_tool

import ckopt


def batches(n, shape, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.uniform(-1, 1, shape).astype(np.float32), rng.uniform(-1, 1, shape).astype(np.float32)) for _ in range(n)]


@pytest.mark.parametrize("pipeline", ["", "autodiff,inplace,sgd{lr=0.1},fuse,remat{mode=sqrt},memplan"])
def test_cpu_trainer_equals_interp_on_new_batches(mlp, pipeline):
    m = mlp.optimize(pipeline)
    cpu = ckopt.Trainer(m, "mlp", target="cpu", lr=0.1)
    interp = ckopt.Trainer(m, "mlp", target="interp", lr=0.1)
    assert cpu.batch_arguments == ["x", "target"]
    losses = []
    for x, y in batches(6, (4, 8)):
        lc, li = cpu.step(x, y), interp.step(x, y)
        assert isinstance(lc, float)
        close(lc, li)
        losses.append(lc)
    assert len(set(losses)) == len(losses), "every step saw a new batch"
    pc, pi = cpu.params, interp.params
    assert list(pc) == ["w0", "b0", "w1", "b1", "w2", "b2"]
    for k in pc:
        close(pc[k], pi[k])
    assert cpu.steps == 6 and cpu.step_function == "mlp_step"


def test_trainer_equals_ckopt_run_train(tmp_path, mlp_file):
    """On one fixed batch (what ckopt-run --train does), from ckopt-run's
    --seed 0 arguments, the losses are ckopt-run's."""
    out, _ = run_tool("ckopt-run", mlp_file, "--func", "mlp", "--backend", "cpu", "--train", "--steps", 4, "--lr", 0.05, "--report", "-")
    import json

    want = json.loads(out[out.index("{") :])["losses"]
    m = ckopt.load(mlp_file)
    t = ckopt.Trainer(m, "mlp", target="cpu", lr=0.05)
    x, y = m.compile("mlp", "interp").random_inputs(0)[:2]
    got = [t.step(x, y) for _ in range(4)]
    assert got == pytest.approx(want, rel=1e-6)


def test_params_by_name_and_training_changes_them(mlp):
    p0 = {k: np.full_like(v, 0.1) for k, v in ckopt.Trainer(mlp, "mlp").params.items()}
    t = ckopt.Trainer(mlp, "mlp", params=p0, lr=0.5)
    got = t.params
    for k in p0:
        np.testing.assert_array_equal(got[k], p0[k])
        assert got[k].flags.owndata
    (x, y), = batches(1, (4, 8))
    t.step(x, y)
    after = t.params
    assert any(not np.array_equal(after[k], p0[k]) for k in p0)
    # the same start on the interpreter gives the same loss
    i = ckopt.Trainer(mlp, "mlp", target="interp", params=p0, lr=0.5)
    close(i.step(x, y), ckopt.Trainer(mlp, "mlp", params=p0, lr=0.5).step(x, y))


def test_trainer_errors(mlp):
    p = ckopt.Trainer(mlp, "mlp").params
    with pytest.raises(KeyError, match=r"params has no value for 'b2' of @mlp"):
        ckopt.Trainer(mlp, "mlp", params={k: v for k, v in p.items() if k != "b2"})
    with pytest.raises(KeyError, match=r"params has 'w9' that @mlp does not train"):
        ckopt.Trainer(mlp, "mlp", params={**p, "w9": p["w0"]})
    with pytest.raises(ValueError, match=re.escape("argument 2 (%w0) of @mlp must have shape (8, 8)")):
        ckopt.Trainer(mlp, "mlp", params={**p, "w0": p["b0"]})
    with pytest.raises(TypeError, match="params must be a dict"):
        ckopt.Trainer(mlp, "mlp", params=[1, 2])
    with pytest.raises(ValueError, match="optimizer must be 'sgd'"):
        ckopt.Trainer(mlp, "mlp", optimizer="lion")
    with pytest.raises(ValueError, match="lr must be a positive number"):
        ckopt.Trainer(mlp, "mlp", lr=-1.0)
    with pytest.raises(ckopt.CompileError, match="no function @nope to train"):
        ckopt.Trainer(mlp, "nope")
    t = ckopt.Trainer(mlp, "mlp")
    with pytest.raises(TypeError, match=r"Trainer.step takes 2 arrays \(%x: tensor<4x8xf32>, %target: tensor<4x8xf32>\), 1 given"):
        t.step(np.zeros((4, 8), np.float32))
    with pytest.raises(ValueError, match=re.escape("argument 1 (%target) of @mlp must have shape (4, 8)")):
        t.step(np.zeros((4, 8), np.float32), np.zeros((8,), np.float32))
    with pytest.raises(ckopt.RunError, match="the loss is NaN at step 1; try a smaller learning rate"):
        ckopt.Trainer(mlp, "mlp").step(np.zeros((4, 8), np.float32), np.full((4, 8), np.nan, np.float32))
    assert repr(t) == "<ckopt.Trainer @mlp on cpu: sgd lr=0.01, 6 parameters, batch (%x, %target), 0 steps>"
    r = t.memory_report()
    assert r["function"] == "mlp_step" and r["arena_bytes"] > 0
    assert t.report is None
    t.step(*batches(1, (4, 8))[0])
    assert t.report["steps"] == 1 and t.report["function"] == "mlp_step"


def test_ctrl_c_stops_a_training_loop():
    m = ckopt.gen("mlp", depth=8, width=64, batch=32)
    t = ckopt.Trainer(m, "mlp", target="cpu")
    (x, y), = batches(1, (32, 64))
    t.step(x, y)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        while time.perf_counter() - start < 30:
            t.step(x, y)
    assert time.perf_counter() - start < 5, "KeyboardInterrupt came promptly"
    assert t.steps > 1
