"""make demo's Python section: a model from Python, its memory curve,
and a few training steps on new batches (docs/python.md)."""

import numpy as np

import ckopt

m = ckopt.gen("mlp", depth=32, width=128, batch=64)
print(f"ckopt.gen('mlp', depth=32, width=128, batch=64) -> {m!r}")
g = m.optimize("autodiff,inplace")
fwd = g.memory_report("mlp_grad")["forward_flops"]
curve = g.memory_curve("mlp_grad")
print(f"g.memory_curve('mlp_grad'): {len(curve['points'])} points on the front, min feasible {curve['min_feasible_bytes'] / 2**20:.2f} MiB")
for p in curve["points"]:
    print(f"  peak {p['peak_bytes'] / 2**20:7.2f} MiB   recompute {p['recompute_flops'] / fwd:5.2f} forward passes   {p['plan']}")

plan = curve["points"][0]["plan"]
pipeline = f"autodiff,inplace,sgd{{lr=0.05}},fuse,{plan},memplan"
t = ckopt.Trainer(m.optimize(pipeline), "mlp", target="cpu", lr=0.05)
print(f"Trainer with the smallest plan ({pipeline}): {t!r}")
print(f"  step function arena {t.memory_report()['arena_bytes'] / 2**20:.2f} MiB")
rng = np.random.default_rng(0)
teacher = rng.standard_normal((128, 128)).astype(np.float32) / np.sqrt(128)
for step in range(1, 6):
    x = rng.uniform(-1, 1, (64, 128)).astype(np.float32)  # a new batch each step
    y = np.maximum(x @ teacher, 0)
    print(f"  step {step}: loss {t.step(x, y):.6f}")
