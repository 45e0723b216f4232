#!/usr/bin/env python3
"""make demo's PyTorch section: a small GPT trained through
ckopt.torch.compile with AdamW for a few steps (losses next to eager's),
then the measured peak of one step next to eager and per-block
torch.utils.checkpoint (torch.profiler's memory events, as
bench/torch-vs-ckopt.py measures)."""

import copy
import importlib.util
import pathlib

import torch

import ckopt.torch as ct

spec = importlib.util.spec_from_file_location("tvc", pathlib.Path(__file__).with_name("torch-vs-ckopt.py"))
tvc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tvc)

MiB = 2**20
torch.manual_seed(0)
layers, d, heads, seq, vocab, batch = 4, 64, 4, 32, 128, 8
make = lambda ckpt=None: tvc.GPT(layers, d, heads, seq, vocab, ckpt)  # noqa: E731
eager = make()
g = torch.Generator().manual_seed(1)


def batch_of(step):
    idx = torch.randint(0, vocab, (batch, seq + 1), generator=torch.Generator().manual_seed(100 + step))
    return idx[:, :-1].contiguous(), idx[:, 1:].contiguous()


model = copy.deepcopy(eager)
cm = ct.compile(model, batch_of(0), mode="log")
print(f"GPT {layers} layers, d={d}, seq={seq}, batch={batch}: ckopt plan {cm.plan}")
rep = cm.memory_report()
print(f"ckopt's report of @f_grad: peak {rep['peak_bytes'] / MiB:.2f} MiB, recomputed ops {rep['recomputed_ops']}")
opts = [torch.optim.AdamW(m.parameters(), lr=3e-3) for m in (eager, cm)]
for step in range(5):
    b = batch_of(step)
    losses = []
    for m, o in zip((eager, cm), opts):
        o.zero_grad()
        loss = m(*b)
        loss.backward()
        o.step()
        losses.append(loss.item())
    print(f"step {step}: loss eager {losses[0]:.5f}  ckopt.torch {losses[1]:.5f}")
b = batch_of(9)
print("measured peak of one forward+backward (torch.profiler memory events):")
for name, m in (("eager", make()), ("checkpoint per block", make("block")), ("ckopt.torch mode=log", cm)):
    print(f"  {name:24} {tvc.measured_peak(m, b, torch.device('cpu')) / MiB:7.2f} MiB")
