#!/usr/bin/env bash
# Installs what ckopt needs on Debian 12 (bookworm) when it is missing:
# LLVM/MLIR 22 (../shared/TOOLCHAIN.md) and uv (for lit). Idempotent.
set -euo pipefail
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
PKGS="llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools clang-22 libpolly-22-dev libzstd-dev zlib1g-dev"
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
