#!/usr/bin/env bash
# The main job: generate models, run the pipeline, print the memory table.
set -euo pipefail
BIN=target/release
echo "ckopt demo: (grows with the product)"
$BIN/ckopt-gen mlp --depth 4 --width 8 --batch 2 | head -5

# Memory planning without recomputation (the paper's §3): no optimization,
# inplace, sharing, inplace+sharing for @MODEL_grad (bench/memplan.sh).
echo
echo "== Memory planning: inplace and sharing (depth 100; bench/memplan.sh) =="
DEPTHS=100 CKOPT_BIN_DIR="$BIN" bench/memplan.sh

# Rematerialization (the paper's §4): the 1000-layer MLP under every remat
# mode next to PyTorch's and JAX's numbers (bench/remat.sh; full sweep there).
echo
echo "== Rematerialization: 1000-layer MLP vs peers (bench/remat.sh --table-1000) =="
REMAT_INPLACE=greedy bench/remat.sh --table-1000
