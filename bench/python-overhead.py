#!/usr/bin/env python3
"""The Python package's overheads (BENCHMARKS.md, "Python package").

1. `Compiled.run` over the backend's own step time (`Compiled.report`'s
   `step_ms`, the wall time of the step program) on mlp depth 4 width 64
   batch 32, for @mlp (forward) and @mlp_grad: the median of
   (wall time of the Python call - step_ms) over many calls.
2. A Python `Trainer` loop (a new batch each step) against
   `ckopt-run --train` (one fixed batch, same model, same step function),
   on mlp depth 100 width 256 batch 64, on the cpu backend: mean step time
   of each, measured alternately in one run.

Run with the package built in release (`uv pip install ./python`) and
the release tools: `CKOPT_BIN_DIR=target/release python bench/python-overhead.py`.
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import ckopt

BIN = os.environ.get("CKOPT_BIN_DIR", "target/release")


def run_overhead(func, calls=3000):
    m = ckopt.gen("mlp", depth=4, width=64, batch=32).optimize("autodiff")
    c = m.compile(func, "cpu")
    ins = c.random_inputs(0)
    for _ in range(200):
        c.run(*ins)
    over, walls, steps = [], [], []
    for _ in range(calls):
        t = time.perf_counter()
        c.run(*ins)
        wall = (time.perf_counter() - t) * 1e6
        step = c.report["step_ms"] * 1e3
        walls.append(wall)
        steps.append(step)
        over.append(wall - step)
    return statistics.median(walls), statistics.median(steps), statistics.median(over)


def trainer_vs_cli(steps=20, rounds=7):
    m = ckopt.gen("mlp", depth=100, width=256, batch=64)
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "mlp.ck")
        m.save(f)
        t = ckopt.Trainer(m, "mlp", target="cpu", lr=0.01)
        rng = np.random.default_rng(0)
        batches = [(rng.uniform(-1, 1, (64, 256)).astype(np.float32), rng.uniform(-1, 1, (64, 256)).astype(np.float32)) for _ in range(4)]
        t.step(*batches[0])
        cli, py, binding = [], [], []
        for _ in range(rounds):
            out = subprocess.run(
                [f"{BIN}/ckopt-run", f, "--func", "mlp", "--backend", "cpu", "--train", "--steps", str(steps), "--lr", "0.01", "--report", "-"],
                check=True, capture_output=True, text=True,
            ).stdout
            rep = json.loads(out[out.index("{"):])
            cli.append(rep["step_time_ms"])
            times = []
            for k in range(steps):
                s = time.perf_counter()
                t.step(*batches[k % len(batches)])
                wall = (time.perf_counter() - s) * 1e3
                times.append(wall)
                binding.append(wall - t.report["step_ms"])
            py.append(sum(times) / len(times))
    return statistics.median(cli), statistics.median(py), cli, py, statistics.median(binding)


def main():
    print(f"python {sys.version.split()[0]}, numpy {np.__version__}, ckopt {ckopt.__version__}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    for func in ["mlp", "mlp_grad"]:
        wall, step, over = run_overhead(func)
        print(f"Compiled.run @{func} (mlp depth 4 width 64 batch 32, cpu): median call {wall:.1f} us, "
              f"backend step {step:.1f} us, overhead {over:.1f} us (target <= 50 us)")
    cli, py, clis, pys, binding = trainer_vs_cli()
    paired = statistics.median(p / c for p, c in zip(pys, clis))
    print(f"Trainer loop vs ckopt-run --train (mlp depth 100 width 256 batch 64, cpu, 20 steps x {len(clis)} rounds, alternating): "
          f"ckopt-run median {cli:.2f} ms/step {['%.1f' % x for x in clis]}, Trainer median {py:.2f} ms/step {['%.1f' % x for x in pys]}, "
          f"ratio of medians {py / cli:.3f}, median of paired ratios {paired:.3f}, ratio of the fastest rounds {min(pys) / min(clis):.3f} (target <= 1.05)")
    print(f"Trainer.step's own cost per step (wall time of the call - the step's time inside ckopt::Trainer): median {binding * 1e3:.0f} us "
          f"= {binding / py * 100:.2f}% of a step")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
