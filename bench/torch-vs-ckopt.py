#!/usr/bin/env python3
"""PyTorch's memory-saving options vs ckopt.torch.compile, side by side in
one run on the same models (CPU; CUDA too when a device is present).

For each model and method: the median step time (forward + backward, grads
set to None before each step) and the measured peak of tensor allocations
during one step (CPU: torch.profiler's memory events, the running sum of
allocations minus frees from the step's start, plus, for executor="ckopt",
the arenas and workspaces its compiled halves hold outside torch's
allocator; CUDA: max_memory_allocated above what was allocated before the
step), and for ckopt its planned peak
(`peak_bytes` of ckopt's memory report: values live in the step, results,
i.e. the loss and the gradients, included) beside the measured one.

    target/py-venv/bin/python bench/torch-vs-ckopt.py [--steps 5] [--json out.json] [--svg out.svg]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

import ckopt.torch as ct

MiB = 1024 * 1024


# -- models -------------------------------------------------------------------
class ResBlock(nn.Module):
    def __init__(self, w):
        super().__init__()
        self.fc = nn.Linear(w, w)

    def forward(self, h):
        return h + torch.relu(self.fc(h))


class ResMLP(nn.Module):
    def __init__(self, depth, width, ckpt=None):
        super().__init__()
        self.blocks = nn.Sequential(*[ResBlock(width) for _ in range(depth)])
        self.ckpt = ckpt

    def body(self, x):
        if self.ckpt == "block":
            for b in self.blocks:
                x = checkpoint(b, x, use_reentrant=False)
            return x
        if self.ckpt == "sequential":
            return checkpoint_sequential(self.blocks, max(1, round(math.sqrt(len(self.blocks)))), x, use_reentrant=False)
        return self.blocks(x)

    def forward(self, x, t):
        return F.mse_loss(self.body(x), t)


class Block(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq)).view(1, 1, seq, seq))

    def forward(self, x):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // h))
        att = F.softmax(att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, d))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers, d, heads, seq, vocab, ckpt=None):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*[Block(d, heads, seq) for _ in range(layers)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
        self.ckpt = ckpt

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        if self.ckpt == "block":
            for b in self.blocks:
                x = checkpoint(b, x, use_reentrant=False)
        elif self.ckpt == "sequential":
            x = checkpoint_sequential(self.blocks, max(1, round(math.sqrt(len(self.blocks)))), x, use_reentrant=False)
        else:
            x = self.blocks(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def models(args):
    g = torch.Generator().manual_seed(0)
    out = {}
    if "resmlp" in args.models:
        b, w = args.batch, args.width
        out[f"resmlp depth={args.depth} width={w} batch={b}"] = (
            lambda ckpt=None: ResMLP(args.depth, w, ckpt),
            (torch.randn(b, w, generator=g), torch.randn(b, w, generator=g)),
        )
    if "gpt" in args.models:
        idx = torch.randint(0, args.vocab, (args.gpt_batch, args.seq + 1), generator=g)
        out[f"gpt layers={args.layers} d={args.d} seq={args.seq} batch={args.gpt_batch}"] = (
            lambda ckpt=None: GPT(args.layers, args.d, args.heads, args.seq, args.vocab, ckpt),
            (idx[:, :-1].contiguous(), idx[:, 1:].contiguous()),
        )
    return out


# -- measuring ------------------------------------------------------------------
def step(model, batch):
    for p in model.parameters():
        p.grad = None
    model(*batch).backward()


def measured_peak(model, batch, device):
    if device.type == "cuda":
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        step(model, batch)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - base
    for p in model.parameters():
        p.grad = None
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        model(*batch).backward()
    evs = sorted((e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"), key=lambda e: e.start_ns())
    cur = best = 0
    for e in evs:
        cur += e.nbytes()
        best = max(best, cur)
    return best


def ckopt_resident(model):
    """Bytes executor="ckopt" holds across steps, allocated once per compiled
    module and so outside the step's profiler window: the arena its two
    halves share (a torch tensor) and their workspaces (im2col columns,
    f32 copies of bf16 GEMM operands). Added to the measured peak."""
    runner = getattr(model._cap(), "runner", None) if isinstance(model, ct.CompiledModule) else None
    if runner is None or not hasattr(runner, "arena"):
        return 0
    return runner.arena.numel() + sum(int((c.report or {}).get("workspace_bytes", 0)) for c in (runner.cf, runner.cb))


def step_time(model, batch, steps, device):
    step(model, batch)  # warm-up (torch.compile compiles here)
    ts = []
    for _ in range(steps):
        if device.type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        step(model, batch)
        if device.type == "cuda":
            torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def methods(make, batch, args):
    """(name, module or an exception, planned peak or None)."""
    yield "eager", make(), None
    yield "checkpoint per block", make("block"), None
    yield "checkpoint_sequential sqrt(n)", make("sequential"), None
    if args.torch_compile:
        import torch._functorch.config as fc

        for budget in (None, 0.5, 0.1):
            name = "torch.compile" + ("" if budget is None else f" activation_memory_budget={budget}")
            try:
                torch._dynamo.reset()
                if budget is not None:
                    fc.activation_memory_budget = budget
                else:
                    fc.activation_memory_budget = 1.0
                yield name, torch.compile(make()), None
            except Exception as e:  # recorded in the table, not hidden
                yield name, e, None
        fc.activation_memory_budget = 1.0
    base = make()
    none = ct.compile(copy.deepcopy(base), batch, mode="none")
    curve = none.memory_curve()
    full = none.memory_report()["peak_bytes"]
    plans = [("none", {}), ("sqrt", {}), ("greedy", {}), ("log", {})]
    lo = curve["min_feasible_bytes"]
    for frac in args.budgets:
        b = int(lo + (full - lo) * frac)
        plans.append((f"optimal budget={b / MiB:.1f}MiB", {"budget": b, "_mode": "optimal"}))
    if args.ckopt_executor:
        plans += [(f"{n} executor=ckopt", dict(kw, _mode=kw.get("_mode", n), executor="ckopt")) for n, kw in plans[:2]]
    for name, kw in plans:
        mode = kw.pop("_mode", name)
        try:
            cm = ct.compile(copy.deepcopy(base), batch, mode=mode, **kw)
            yield f"ckopt {name}", cm, cm.memory_report()["peak_bytes"]
        except Exception as e:
            yield f"ckopt {name}", e, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="resmlp,gpt")
    ap.add_argument("--depth", type=int, default=24)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--d", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--gpt-batch", type=int, default=8)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--budgets", default="0.25,0.5", help="optimal plans at these fractions between ckopt's smallest feasible and its no-remat peak")
    ap.add_argument("--torch-compile", action=argparse.BooleanOptionalAction, default=True)
    ap.add_argument("--ckopt-executor", action=argparse.BooleanOptionalAction, default=False,
                    help="also time executor='ckopt' (meaningful with a release build of the package: pip install ./python)")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: torch's default)")
    ap.add_argument("--json")
    ap.add_argument("--svg")
    args = ap.parse_args(argv)
    args.models = args.models.split(",")
    args.budgets = [float(x) for x in args.budgets.split(",") if x]
    if args.threads:
        torch.set_num_threads(args.threads)
    devices = [torch.device("cpu")] + ([torch.device("cuda")] if torch.cuda.is_available() else [])
    rows = []
    for device in devices:
        for mname, (make, batch) in models(args).items():
            batch = tuple(b.to(device) for b in batch)
            mk = lambda ckpt=None, make=make: make(ckpt).to(device)  # noqa: E731
            for name, m, planned in methods(mk, batch, args):
                row = {"device": device.type, "model": mname, "method": name}
                if isinstance(m, Exception):
                    row["error"] = f"{type(m).__name__}: {str(m).splitlines()[0] if str(m) else ''}"[:200]
                else:
                    try:
                        row["step_ms"] = step_time(m, batch, args.steps, device) * 1e3
                        row["peak_bytes"] = measured_peak(m, batch, device) + ckopt_resident(m)
                    except Exception as e:
                        row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]
                    if planned is not None:
                        row["planned_peak_bytes"] = planned
                rows.append(row)
                print(_line(row), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"argv": sys.argv[1:], "torch": torch.__version__, "threads": torch.get_num_threads(), "rows": rows}, f, indent=1)
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(svg(rows))
    print()
    print(markdown(rows))


def _line(r):
    if "error" in r:
        return f"{r['device']:4} {r['model'][:28]:28} {r['method']:42} error: {r['error']}"
    pl = f"  planned {r['planned_peak_bytes'] / MiB:7.1f} MiB" if "planned_peak_bytes" in r else ""
    return f"{r['device']:4} {r['model'][:28]:28} {r['method']:42} {r['step_ms']:9.1f} ms  peak {r['peak_bytes'] / MiB:7.1f} MiB{pl}"


def markdown(rows):
    out = []
    for (dev, model) in dict.fromkeys((r["device"], r["model"]) for r in rows):
        rs = [r for r in rows if r["device"] == dev and r["model"] == model]
        eager = next((r for r in rs if r["method"] == "eager" and "step_ms" in r), None)
        out.append(f"**{model}** ({dev})\n")
        out.append("| method | step ms | x eager | measured peak MiB | ckopt planned peak MiB | measured / planned |")
        out.append("|---|---:|---:|---:|---:|---:|")
        for r in rs:
            if "error" in r:
                out.append(f"| {r['method']} | — | — | — | — | {r['error']} |")
                continue
            pl = r.get("planned_peak_bytes")
            out.append(
                f"| {r['method']} | {r['step_ms']:.1f} | {r['step_ms'] / eager['step_ms']:.2f} | {r['peak_bytes'] / MiB:.1f} | "
                + (f"{pl / MiB:.1f} | {r['peak_bytes'] / pl:.3f} |" if pl else "— | — |")
            )
        out.append("")
    return "\n".join(out)


def svg(rows):
    """Peak vs step time per method, one panel per (device, model)."""
    groups = list(dict.fromkeys((r["device"], r["model"]) for r in rows))
    W, H, pad = 520, 340, 60
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H * len(groups)}" font-family="sans-serif" font-size="10">']
    for gi, (dev, model) in enumerate(groups):
        rs = [r for r in rows if r["device"] == dev and r["model"] == model and "step_ms" in r]
        if not rs:
            continue
        y0 = gi * H
        xs = [r["step_ms"] for r in rs]
        ys = [r["peak_bytes"] / MiB for r in rs]
        xmax, ymax = max(xs) * 1.1, max(ys) * 1.1
        px = lambda x: pad + (W - 2 * pad) * x / xmax  # noqa: E731
        py = lambda y: y0 + H - pad + 20 - (H - 2 * pad) * y / ymax  # noqa: E731
        parts.append(f'<text x="{pad}" y="{y0 + 20}" font-size="12">{model} ({dev}): measured peak vs step time</text>')
        parts.append(f'<line x1="{pad}" y1="{py(0)}" x2="{W - pad}" y2="{py(0)}" stroke="black"/>')
        parts.append(f'<line x1="{pad}" y1="{py(0)}" x2="{pad}" y2="{py(ymax)}" stroke="black"/>')
        parts.append(f'<text x="{W / 2}" y="{py(0) + 30}">step time (ms), 0 to {xmax:.0f}</text>')
        parts.append(f'<text x="5" y="{py(ymax / 2)}">MiB (0 to {ymax:.0f})</text>')
        for r, x, y in zip(rs, xs, ys):
            color = "#c0392b" if r["method"].startswith("ckopt") else "#2c3e50"
            parts.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
            parts.append(f'<text x="{px(x) + 5:.1f}" y="{py(y) - 3:.1f}" fill="{color}">{r["method"]}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    main()
