#!/usr/bin/env bash
# Training on the cpu backend: SGD steps of a resmlp through its step
# function @resmlp_step (sgd pass: parameters updated in place, resident in
# the backend), fused, once without remat and once with remat{mode=sqrt},
# each in one arena of exactly ck.arena_bytes; prints the arena, the time
# per step and the losses side by side, and fails unless they are the same
# bits step for step (recomputation repeats the same kernels).
# Usage: [CKOPT_BIN_DIR=target/release] bench/train-cpu.sh [DEPTH] [WIDTH] [BATCH] [STEPS] [LR]
set -euo pipefail
BIN="${CKOPT_BIN_DIR:-target/release}"
DEPTH="${1:-16}"; WIDTH="${2:-32}"; BATCH="${3:-256}"; STEPS="${4:-5}"; LR="${5:-0.01}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
"$BIN/ckopt-gen" resmlp --depth "$DEPTH" --width "$WIDTH" --batch "$BATCH" > "$T/r.ck"
echo "resmlp depth $DEPTH width $WIDTH batch $BATCH: $STEPS SGD steps (lr $LR) on the cpu backend"
for r in none sqrt; do
  p="autodiff,inplace,sgd{lr=$LR},fuse,memplan"; [ "$r" = sqrt ] && p="autodiff,inplace,sgd{lr=$LR},fuse,remat{mode=sqrt},memplan"
  "$BIN/ckopt-opt" --pass-pipeline="$p" "$T/r.ck" -o "$T/r.$r.ck"
  "$BIN/ckopt-run" "$T/r.$r.ck" --func resmlp --backend cpu --train --steps "$STEPS" --lr "$LR" \
    --report "$T/$r.json" | grep '^step' | awk '{print $4}' > "$T/$r.losses"
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("  %-62s arena %10d B (allocated %d B)  %7.2f ms/step" % (sys.argv[2], r["arena_bytes"], r["arena_allocated_bytes"], r["step_time_ms"]))' "$T/$r.json" "$p"
done
echo "  step  loss (no remat)  loss (remat sqrt)"
paste "$T/none.losses" "$T/sqrt.losses" | awk '{printf "  %4d  %15s  %17s\n", NR, $1, $2}'
if cmp -s "$T/none.losses" "$T/sqrt.losses"; then
  echo "  losses match step for step"
else
  echo "  LOSSES DIFFER"; exit 1
fi
