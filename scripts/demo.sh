#!/usr/bin/env bash
# The main job: generate models, run the pipeline, print the memory table.
set -euo pipefail
BIN=target/release
echo "ckopt demo: sublinear-memory training steps (Chen et al., 2016), end to end"
echo
echo "== A model as ck IR: ckopt-gen mlp --depth 1 --width 4 --batch 2 =="
$BIN/ckopt-gen mlp --depth 1 --width 4 --batch 2

# Memory planning without recomputation (the paper's §3): no optimization,
# inplace, sharing, inplace+sharing for @MODEL_grad (bench/memplan.sh).
echo
echo "== Memory planning: inplace and sharing (depth 100 and 1000; bench/memplan.sh) =="
DEPTHS="100 1000" CKOPT_BIN_DIR="$BIN" bench/memplan.sh

# Rematerialization (the paper's §4): the 1000-layer MLP under every remat
# mode next to PyTorch's and JAX's numbers (bench/remat.sh; full sweep there).
echo
echo "== Rematerialization: 1000-layer MLP vs peers (bench/remat.sh --table-1000) =="
RESULTS_DIR=target/demo bench/remat.sh --table-1000

# The whole memory/recompute trade-off of the 1000-layer MLP before anything
# runs (ckopt-opt --memory-curve), and "does this step fit?": the training
# step with sqrt remat, planned, read off the memory report's device_bytes,
# and remat asked to fit a device budget (docs/remat.md).
echo
echo "== The memory/recompute curve of the 1000-layer MLP (ckopt-opt --memory-curve) =="
mkdir -p target/demo
$BIN/ckopt-gen mlp --depth 1000 --width 1024 --batch 256 -o target/demo/mlp1000.ck
$BIN/ckopt-opt target/demo/mlp1000.ck --pass-pipeline='autodiff,inplace' \
  --memory-curve=target/demo/mlp1000-curve.json --memory-report=target/demo/mlp1000-grad.json -o /dev/null
$BIN/ckopt-opt target/demo/mlp1000.ck --pass-pipeline='autodiff,inplace' \
  --memory-curve=target/demo/mlp1000-curve.svg -o /dev/null
python3 - target/demo/mlp1000-curve.json target/demo/mlp1000-grad.json <<'PY'
import json, sys
fwd = {r["function"]: r["forward_flops"] for r in json.load(open(sys.argv[2]))}
for c in json.load(open(sys.argv[1])):
    print(f"@{c['function']}: smallest feasible temp peak {c['min_feasible_bytes'] / 2**20:.1f} MiB")
    print(f"  {'temp peak (MiB)':>16} {'recompute (forward passes)':>27}  plan")
    for p in c["points"]:
        print(f"  {p['peak_bytes'] / 2**20:16.1f} {p['recompute_flops'] / fwd[c['function']]:27.2f}  {p['plan']}")
PY
echo "(picture: target/demo/mlp1000-curve.svg)"
echo
echo "== Does the training step fit? (sgd step, remat{mode=sqrt}, memplan: device_bytes) =="
$BIN/ckopt-opt target/demo/mlp1000.ck --pass-pipeline='autodiff,inplace,sgd{lr=0.01},remat{mode=sqrt},memplan' \
  --memory-report=target/demo/mlp1000-step.json -o /dev/null
python3 - target/demo/mlp1000-step.json <<'PY'
import json, sys
r = {x["function"]: x for x in json.load(open(sys.argv[1]))}["mlp_step"]
gib = r["device_bytes"] / 2**30
print(f"@mlp_step: arguments {r['argument_bytes'] / 2**30:.2f} GiB + arena {r['arena_bytes'] / 2**20:.1f} MiB"
      f" = device_bytes {gib:.2f} GiB: fits in 8 GiB: {'yes' if gib <= 8 else 'no'}; in 4 GiB: {'yes' if gib <= 4 else 'no'}")
PY
echo "remat{mode=optimal device_budget=4GiB func=mlp_step}: the least recompute that fits the step in 4 GiB:"
$BIN/ckopt-opt target/demo/mlp1000.ck --pass-pipeline='autodiff,inplace,sgd{lr=0.01},remat{mode=optimal device_budget=4GiB func=mlp_step},memplan' \
  --pass-statistics -o /dev/null 2>&1 | grep -E "@mlp_step (plan|device-bytes|recompute-flops|temp-peak-bytes-after) " | sed 's/^ */  /' || true

# Mixed precision: the same plan with the activations in bf16 (autocast:
# matmuls and the activations between them low, parameters f32 masters).
echo
echo "== Mixed precision: autocast{dtype=bf16} on the 1000-layer MLP (sqrt plan, temp peak) =="
for dt in f32 bf16; do
  pre=""; [ "$dt" = bf16 ] && pre="autocast{dtype=bf16},"
  $BIN/ckopt-opt target/demo/mlp1000.ck --pass-pipeline="${pre}autodiff,inplace,fuse,remat{mode=sqrt},memplan" \
    --memory-report - -o /dev/null | python3 -c "
import json, sys
r = {x['function']: x for x in json.load(sys.stdin)}['mlp_grad']
print(f\"  {sys.argv[1]:>5}: temp peak {r['temp_peak_bytes'] / 2**20:6.1f} MiB, recompute {r['recompute_flops'] / r['forward_flops']:.3f} forward passes\")
" "$dt"
done

# The paper's stacked-LSTM experiment: written layer by layer, every cut of
# the given order crosses a whole layer's hidden states; remat also plans the
# step in wavefront order (docs/remat.md), which sqrt and greedy pick.
echo
echo "== The paper's stacked LSTM: ckopt-gen lstm --depth 4 --seq 64 --width 64 --batch 16 =="
$BIN/ckopt-gen lstm --depth 4 --seq 64 --width 64 --batch 16 -o target/demo/lstm.ck
for m in none sqrt greedy log; do
  $BIN/ckopt-opt target/demo/lstm.ck --pass-pipeline="autodiff,inplace,remat{mode=$m}" \
    --memory-report=target/demo/lstm-$m.json -o /dev/null
done
python3 - target/demo/lstm-{none,sqrt,greedy,log}.json <<'PY'
import json, sys
rows = [{r["function"]: r for r in json.load(open(p))}["lstm_grad"] for p in sys.argv[1:]]
base = rows[0]["temp_peak_bytes"]
print(f"  {'remat':>7} {'temp peak':>10} {'vs none':>8} {'recompute (forward passes)':>27}")
for mode, r in zip(["none", "sqrt", "greedy", "log"], rows):
    print(f"  {mode:>7} {r['temp_peak_bytes'] / 1024:7.0f} KiB {r['temp_peak_bytes'] / base:7.2f}x"
          f" {r['recompute_flops'] / r['forward_flops']:27.2f}")
PY

# A GPT language model (issue 19): integer token ids and labels, causal masks
# from iota/ge/select, cross_entropy on the labels; at this size the
# activations (the [batch*heads, seq, seq] attention scores above all) dwarf
# the parameters. Its memory table and curve; it runs on the interpreter (the
# cpu and cuda backends do not lower integer values yet).
echo
echo "== A GPT language model: ckopt-gen gpt --depth 24 --seq 128 --width 64 --heads 4 --vocab 256 --batch 8 =="
$BIN/ckopt-gen gpt --depth 24 --seq 128 --width 64 --heads 4 --vocab 256 --batch 8 -o target/demo/gpt.ck
for m in none sqrt greedy log; do
  $BIN/ckopt-opt target/demo/gpt.ck --pass-pipeline="autodiff,inplace,remat{mode=$m}" \
    --memory-report=target/demo/gpt-$m.json -o /dev/null
done
python3 - target/demo/gpt-{none,sqrt,greedy,log}.json <<'PY'
import json, sys
rows = [{r["function"]: r for r in json.load(open(p))}["gpt_grad"] for p in sys.argv[1:]]
base = rows[0]["temp_peak_bytes"]
print(f"  parameters {rows[0]['argument_bytes'] / 2**20:.1f} MiB (with ids and labels); activations below")
print(f"  {'remat':>7} {'temp peak':>10} {'vs none':>8} {'recompute (forward passes)':>27}")
for mode, r in zip(["none", "sqrt", "greedy", "log"], rows):
    print(f"  {mode:>7} {r['temp_peak_bytes'] / 2**20:6.1f} MiB {r['temp_peak_bytes'] / base:7.2f}x"
          f" {r['recompute_flops'] / r['forward_flops']:27.2f}")
PY
$BIN/ckopt-opt target/demo/gpt.ck --pass-pipeline='autodiff,inplace' \
  --memory-curve=target/demo/gpt-curve.json --memory-report=target/demo/gpt-grad.json -o /dev/null
$BIN/ckopt-opt target/demo/gpt.ck --pass-pipeline='autodiff,inplace' \
  --memory-curve=target/demo/gpt-curve.svg -o /dev/null
python3 - target/demo/gpt-curve.json target/demo/gpt-grad.json <<'PY'
import json, sys
fwd = {r["function"]: r["forward_flops"] for r in json.load(open(sys.argv[2]))}
for c in json.load(open(sys.argv[1])):
    if c["function"] != "gpt_grad":
        continue
    print(f"  memory curve of @gpt_grad: smallest feasible temp peak {c['min_feasible_bytes'] / 2**20:.1f} MiB")
    print(f"  {'temp peak (MiB)':>16} {'recompute (forward passes)':>27}  plan")
    for p in c["points"]:
        print(f"  {p['peak_bytes'] / 2**20:16.1f} {p['recompute_flops'] / fwd[c['function']]:27.2f}  {p['plan']}")
PY
echo "(picture: target/demo/gpt-curve.svg)"

# Execution: the training step (@NAME_step, fused kernels JIT-compiled once,
# GEMMs on both cores, parameters resident) run on the cpu backend in one
# arena of ck.arena_bytes; remat{mode=sqrt} trains exactly like no remat,
# step for step, in a smaller arena (bench/train-cpu.sh).
echo
echo "== Training on the cpu backend: no remat vs remat{mode=sqrt} (bench/train-cpu.sh) =="
CKOPT_BIN_DIR="$BIN" bench/train-cpu.sh 16 32 256 5 0.01

# A real training job (issue 22, docs/training.md): scikit-learn's digits
# as safetensors datasets, a small CNN trained with AdamW, a warmup+cosine
# schedule and remat{mode=sqrt}, evaluated on held-out images; the losses
# equal the same job's without remat bit for bit; the loss plot.
echo
echo "== A training job on real data: digits, AdamW, remat{mode=sqrt} (scripts/digits-demo.sh) =="
scripts/digits-demo.sh "$BIN" target/demo

# Speed: the same SGD steps in JAX on XLA's CPU backend, side by side in one
# run (JAX installs into target/bench-venv on first use; bench/cpu-vs-jax.py,
# full table and targets in BENCHMARKS.md).
echo
echo "== Training steps: ckopt cpu vs JAX (XLA CPU), same models, one run (bench/cpu-vs-jax.py --quick) =="
CKOPT_BIN_DIR="$BIN" RESULTS_DIR=target/demo bench/cpu-vs-jax.py --quick

# ONNX import (issue 11): a PyTorch-exported CNN and transformer encoder as
# ck functions with their weights; the memory table of the training step and
# a few SGD steps on the cpu backend (bench/onnx.sh; docs/onnx.md).
echo
echo "== PyTorch models through ONNX: memory table and training (bench/onnx.sh) =="
CKOPT_BIN_DIR="$BIN" bench/onnx.sh 64 5

# Python (docs/python.md): the package built into target/demo-venv with uv
# (a release wheel: `uv pip install ./python`), then a model from Python,
# its memory curve's points, and a few training steps on new batches.
echo
echo "== From Python: import ckopt (python/; bench/python-demo.py) =="
PYV=target/demo-venv
[ -x "$PYV/bin/python" ] || uv venv -q --python python3 "$PYV"
VIRTUAL_ENV="$PWD/$PYV" uv pip install -q --reinstall-package ckopt ./python
"$PYV/bin/python" bench/python-demo.py

# PyTorch frontend (docs/torch.md): a small GPT trained through
# ckopt.torch.compile with AdamW (torch added to the demo venv), losses next
# to eager, and measured peaks next to eager and per-block checkpointing.
echo
echo "== A PyTorch model under ckopt's plan: ckopt.torch.compile (bench/torch-demo.py) =="
VIRTUAL_ENV="$PWD/$PYV" uv pip install -q "torch==2.15.*"
"$PYV/bin/python" bench/torch-demo.py 2>&1 | grep -v -e '^USDT' -e 'gpuGetDeviceCount'
