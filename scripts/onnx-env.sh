#!/usr/bin/env bash
# The Python environment for ONNX fixtures, outside git:
#   ~/.cache/ckopt/onnx-venv (override with CKOPT_ONNX_VENV)
# with onnx and onnxruntime (node test cases: test/onnx/gen_node_fixtures.py);
# with --torch also PyTorch and onnxscript (its dynamo=True exporter needs it)
# (exported models: test/onnx/export_models.py;
# PyPI's torch pulls in the CUDA libraries, about 5 GB).
# The Rust tests do not need it: the fixtures are committed. Idempotent.
set -euo pipefail
VENV="${CKOPT_ONNX_VENV:-$HOME/.cache/ckopt/onnx-venv}"
export PATH="$HOME/.local/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
  python3 -m pip install -q --user uv 2>/dev/null || python3 -m pip install -q uv
fi
[ -x "$VENV/bin/python" ] || uv venv -q "$VENV" --python 3.11
VIRTUAL_ENV="$VENV" uv pip install -q "onnx==1.23.2" "onnxruntime==1.32.0" numpy
if [ "${1:-}" = "--torch" ]; then
  VIRTUAL_ENV="$VENV" uv pip install -q "torch==2.15.0" "onnxscript==0.7.2"
fi
echo "onnx-env: $VENV ($("$VENV/bin/python" -c 'import onnx, onnxruntime; print("onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)'))"
