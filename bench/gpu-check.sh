#!/usr/bin/env bash
# GPU check of the cuda backend (issue 6), one prepared script for a machine
# with an NVIDIA GPU and driver: (1) every ckopt-gen model at a small size,
# forward and gradient, on cuda against interp (|cuda - interp| <= 1e-3 *
# max(1, |interp|)); (2) the training step @MODEL_grad of mlp and resmlp at
# depth 100 and 1000 (width 1024, batch 256) with no remat and with
# remat{mode=sqrt}: step ms (CUDA events), measured device memory (driver
# free-memory drop) and ck.arena_bytes, one line each (paste into
# BENCHMARKS.md).
#
# Needs the tools built with the lower feature (make build, or carry
# target/release/ckopt-{gen,opt,run} built on x86-64 Debian 12) and
# libdevice: CKOPT_LIBDEVICE (default: the cache of scripts/setup.sh).
# Usage: [BACKEND=cpu] bench/gpu-check.sh [BIN_DIR] [--quick]   (--quick: part 1 only)
set -uo pipefail
BIN="${1:-target/release}"
QUICK="${2:-}"
BACKEND="${BACKEND:-cuda}"   # BACKEND=cpu runs the same check on the cpu backend
export CKOPT_LIBDEVICE="${CKOPT_LIBDEVICE:-$HOME/.cache/ckopt/cuda-nvcc/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail=0

compare() { # interp.json cuda.json label
  python3 - "$1" "$2" "$3" <<'PY'
import json, math, sys
a = json.load(open(sys.argv[1]))["outputs"]; b = json.load(open(sys.argv[2]))["outputs"]
worst = 0.0
for x, y in zip(a, b):
    assert x["shape"] == y["shape"], (x["shape"], y["shape"])
    for u, v in zip(x["data"], y["data"]):
        if u is None or v is None or (isinstance(u, float) and math.isnan(u)):
            continue
        worst = max(worst, abs(u - v) / max(1.0, abs(u)))
ok = len(a) == len(b) and worst <= 1e-3
print(f"  {sys.argv[3]:<28} max rel diff {worst:.2e} {'OK' if ok else 'MISMATCH'}")
sys.exit(0 if ok else 1)
PY
}

echo "== 1. every model (small) on $BACKEND vs interp"
for m in mlp resmlp lstm resnet transformer; do
  "$BIN/ckopt-gen" "$m" --depth 2 > "$TMP/$m.ck" || { fail=1; continue; }
  "$BIN/ckopt-opt" --pass-pipeline='autodiff,memplan' "$TMP/$m.ck" -o "$TMP/$m.p.ck" || { fail=1; continue; }
  for f in "$m" "${m}_grad"; do
    "$BIN/ckopt-run" "$TMP/$m.p.ck" --func "$f" --backend interp --outputs "$TMP/$f.i.json" >/dev/null || { fail=1; continue; }
    if "$BIN/ckopt-run" "$TMP/$m.p.ck" --func "$f" --backend "$BACKEND" --outputs "$TMP/$f.c.json" --report "$TMP/$f.r.json" >/dev/null; then
      compare "$TMP/$f.i.json" "$TMP/$f.c.json" "$f" || fail=1
    else
      echo "  $f: $BACKEND run failed"; fail=1
    fi
  done
done
[ "$QUICK" = "--quick" ] && exit $fail

echo "== 2. training step on $BACKEND (width 1024, batch 256)"
printf "  %-8s %6s %-5s %12s %18s %16s\n" model depth remat step_ms device_bytes arena_bytes
for m in mlp resmlp; do
  for d in 100 1000; do
    "$BIN/ckopt-gen" "$m" --depth "$d" --width 1024 --batch 256 > "$TMP/big.ck" || { fail=1; continue; }
    for r in none sqrt; do
      p='autodiff,memplan'; [ "$r" = sqrt ] && p='autodiff,remat{mode=sqrt},memplan'
      "$BIN/ckopt-opt" --pass-pipeline="$p" "$TMP/big.ck" -o "$TMP/big.p.ck" || { fail=1; continue; }
      if "$BIN/ckopt-run" "$TMP/big.p.ck" --func "${m}_grad" --backend "$BACKEND" --outputs "$TMP/o.json" --report "$TMP/r.json" >/dev/null; then
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  %-8s %6s %-5s %12.2f %18s %16s" % (sys.argv[2], sys.argv[3], sys.argv[4], r["step_ms"], r["device_memory_bytes"], r["arena_bytes"]))' "$TMP/r.json" "$m" "$d" "$r"
      else
        echo "  $m depth $d remat $r: $BACKEND run failed"; fail=1
      fi
    done
  done
done
exit $fail
