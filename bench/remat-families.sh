#!/usr/bin/env bash
# Remat on real architectures from maintained packages, random weights, no
# downloads (issue 21): timm's resnet18 and mobilenetv3_small_050, and
# transformers' GPT-2 and BERT at 2 layers, width 64 (bench/remat_families.py
# says how each is built and exported). Builds the Python environment
# (CKOPT_FAMILIES_VENV, default target/families-venv: torch, timm,
# transformers, onnx, onnxscript; PyPI's torch pulls in the CUDA libraries),
# exports the four models to ONNX (target/families), imports each with
# ckopt-translate --from=onnx (--loss=mse for the image models,
# --loss=cross-entropy-index for the language models), and prints, per
# model, the temp peak and recompute of every remat mode (and budgets at
# 0.9/0.75/0.5 of no remat's peak, the exact planner remat{mode=optimal}
# among them) vs no remat, on @m_grad and on the fused step @m_step; then,
# for the image models, checks the cpu backend's logits against
# onnxruntime's (1e-4) and that 5 SGD steps on the cpu lower the loss
# (`remat_families.py check`; it fails the script otherwise).
# usage: bench/remat-families.sh [NAME...]   (CKOPT_BIN_DIR: the tools, default target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${CKOPT_BIN_DIR:-target/release}"
VENV="${CKOPT_FAMILIES_VENV:-target/families-venv}"
OUT="${RESULTS_DIR:-target/families}"
export PATH="$HOME/.local/bin:$PATH"
[ -x "$VENV/bin/python" ] || uv venv -q "$VENV" --python 3.11
VIRTUAL_ENV="$VENV" uv pip install -q "torch==2.15.*" timm transformers "onnx==1.23.2" "onnxscript==0.7.2" "onnxruntime==1.32.0" numpy
"$VENV/bin/python" bench/remat_families.py export "$OUT" "$@" 2>/dev/null
python3 bench/remat_families.py table "$OUT" "$BIN" "$@"
"$VENV/bin/python" bench/remat_families.py check "$OUT" "$BIN" "$@"
