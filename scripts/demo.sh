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

# Execution: the training step (@NAME_step, fused kernels JIT-compiled once,
# GEMMs on both cores, parameters resident) run on the cpu backend in one
# arena of ck.arena_bytes; remat{mode=sqrt} trains exactly like no remat,
# step for step, in a smaller arena (bench/train-cpu.sh).
echo
echo "== Training on the cpu backend: no remat vs remat{mode=sqrt} (bench/train-cpu.sh) =="
CKOPT_BIN_DIR="$BIN" bench/train-cpu.sh 16 32 256 5 0.01

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
