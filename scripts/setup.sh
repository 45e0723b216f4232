#!/usr/bin/env bash
# Installs what ckopt needs on Debian 12 (bookworm) when it is missing:
# LLVM/MLIR 22 (docs/building.md), cmake (the highs crate builds the HiGHS
# MILP solver from source for remat{mode=optimal}) and uv (for lit). Idempotent.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS="llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libpolly-22-dev libzstd-dev zlib1g-dev cmake"
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing Debian packages:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
if ! command -v uv >/dev/null 2>&1; then
  echo "setup: installing uv"
  python3 -m pip install -q --user uv 2>/dev/null || python3 -m pip install -q uv
fi
# ptxas (to validate emitted PTX without a GPU) and libdevice (math on cuda)
# from the PyPI wheel nvidia-cuda-nvcc-cu12==12.9.86, into a cache outside git.
# Optional: without them the PTX-validation tests are skipped.
CUDA_TOOLS_DIR="${CUDA_TOOLS_DIR:-$HOME/.cache/ckopt/cuda-nvcc}"
if [ ! -x "$CUDA_TOOLS_DIR/nvidia/cuda_nvcc/bin/ptxas" ]; then
  echo "setup: fetching ptxas and libdevice (PyPI nvidia-cuda-nvcc-cu12==12.9.86)"
  tmp="$(mktemp -d)"
  if python3 -m pip download -q --no-deps nvidia-cuda-nvcc-cu12==12.9.86 -d "$tmp" 2>/dev/null; then
    python3 - "$tmp" "$CUDA_TOOLS_DIR" <<'PY'
import glob, os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
want = ("nvidia/cuda_nvcc/bin/ptxas", "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc")
with zipfile.ZipFile(glob.glob(os.path.join(src, "*.whl"))[0]) as z:
    for name in want:
        z.extract(name, dst)
os.chmod(os.path.join(dst, want[0]), 0o755)
PY
  else
    echo "setup: could not fetch the wheel; PTX validation tests will be skipped"
  fi
  rm -rf "$tmp"
fi
# Optional: the Python environment that regenerates the ONNX fixtures
# (make test does not need it; the fixtures are committed).
# CKOPT_ONNX_ENV=1 installs onnx + onnxruntime, CKOPT_ONNX_ENV=torch adds PyTorch.
case "${CKOPT_ONNX_ENV:-}" in
  1) "$(dirname "$0")/onnx-env.sh" ;;
  torch) "$(dirname "$0")/onnx-env.sh" --torch ;;
esac
