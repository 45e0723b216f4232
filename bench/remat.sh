#!/usr/bin/env bash
# Rematerialization benchmark: memory vs depth and recompute overhead of every
# remat mode on mlp, resmlp, lstm and resnet, through the real pipeline
# (autodiff, in-place marking, remat{mode}, memplan), plus the 1000-layer MLP
# table next to PyTorch and JAX numbers measured on an H200. Static analysis only (the
# numbers are docs/memory.md's: temp_peak_bytes, recompute_flops / forward_flops),
# so it needs no GPU. One run; prints Markdown tables and writes raw JSON
# lines to $RESULTS_DIR/remat-<date>.jsonl (default bench/results).
#
# Usage: bench/remat.sh [--quick | --table-1000]
#   --quick: depths 10 and 100 only; --table-1000: only the 1000-layer table
#   (REMAT_INPLACE=greedy makes that table use the linear in-place marking too).
# In-place marking: the egg `inplace` pass for the 1000-layer table; the
# linear scan with the same legality rule (inplace::mark_inplace_greedy,
# `--greedy-inplace`) for the depth sweep, which was recorded when the egg
# pass still took minutes at depth 10,000 (it takes about 1.2 s now).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p ckopt-bench
B=target/release/remat-bench
RESULTS_DIR="${RESULTS_DIR:-bench/results}"
mkdir -p "$RESULTS_DIR"
OUT="$RESULTS_DIR/remat-$(date -u +%Y%m%dT%H%M%SZ).jsonl"
DEPTHS=(10 100 1000 10000)
[[ "${1:-}" == "--quick" ]] && DEPTHS=(10 100)
T1000_EXTRA=()
T1000_INPLACE="egg in-place"
if [[ "${REMAT_INPLACE:-egg}" == greedy ]]; then T1000_EXTRA=(--greedy-inplace); T1000_INPLACE="linear in-place marking"; fi

echo "# remat benchmark ($(date -u +%Y-%m-%dT%H:%MZ))"
echo
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -sr)"
echo "command: bench/remat.sh $*   (raw: $OUT)"
echo

run() { # model depth width batch mode budget extra...
  local line
  if line=$("$B" "$@" 2>/dev/null); then echo "$line" | tee -a "$OUT"; else echo '{"error": true}'; fi
}

table_1000() {
  echo "## 1000-layer MLP (width 1024, batch 256: unit = 1 MiB), $T1000_INPLACE"
  echo
  echo "| plan | temp peak (units) | recompute / forward flops | remat planning (s) | peers (ANCHORS.md) |"
  echo "|---|---|---|---|---|"
  for spec in "none -|torch none 1006 u, JAX none 1291 u" "sqrt -|torch sqrt 76 u, JAX sqrt 436 u" "log -|" "greedy 72MiB|" "greedy -|" "optimal 48MiB|"; do
    local args=${spec%%|*} peers=${spec#*|}
    local j; j=$(run mlp 1000 1024 256 $args "${T1000_EXTRA[@]}")
    python3 -c '
import json,sys
d=json.loads(sys.argv[1]); a=sys.argv[2].split(); peers=sys.argv[3]
if d.get("error"): print("| %s | error | | | |" % " ".join(a)); sys.exit()
u=1<<20
name=a[0]+("" if a[1]=="-" else " budget="+a[1])
print("| %s | %.0f | %.2f | %.2f | %s |" % (name, d["temp_peak_bytes"]/u, d["recompute_flops"]/max(1,d["forward_flops"]), d["remat_seconds"], peers))
' "$j" "$args" "$peers"
  done
  echo
  echo "Targets (issue 5): sqrt <= 67 u with recompute <= 1 forward; log <= 30 u with recompute <= (log2 n + 1) forward;"
  echo "greedy budget=72MiB <= 72 u; optimal budget=48MiB <= 48 u with recompute <= 2 forward."
  echo
}

sweep() { # model width batch extra-args...
  local model=$1 width=$2 batch=$3; shift 3
  echo "## $model: temp peak (MiB) and recompute/forward vs depth"
  echo
  echo "| depth | none | sqrt | log | greedy | optimal (budget = 3/4 of sqrt) |"
  echo "|---|---|---|---|---|---|"
  for d in "${DEPTHS[@]}"; do
    local row="| $d "
    local sq=0
    for mode in none sqrt log greedy optimal; do
      local budget=- j
      if [[ $mode == optimal ]]; then budget=$(( sq * 3 / 4 )); [[ $budget -lt 1 ]] && budget=1; fi
      if [[ $model == lstm ]]; then j=$(run lstm 1 "$width" "$batch" "$mode" "$budget" --seq "$d" "$@"); else j=$(run "$model" "$d" "$width" "$batch" "$mode" "$budget" "$@"); fi
      local cell
      cell=$(python3 -c '
import json,sys
d=json.loads(sys.argv[1])
if d.get("error"): print("infeasible/error"); sys.exit()
print("%.2f (%.2f)" % (d["temp_peak_bytes"]/2**20, d["recompute_flops"]/max(1,d["forward_flops"])))' "$j")
      [[ $mode == sqrt ]] && sq=$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(d.get("temp_peak_bytes",0))' "$j")
      row+="| $cell "
    done
    echo "$row|"
  done
  echo
}

table_1000
[[ "${1:-}" == "--table-1000" ]] && exit 0
sweep mlp 1024 256 --greedy-inplace
sweep resmlp 1024 256 --greedy-inplace
echo "(lstm: one layer, depth = sequence length)"
echo
sweep lstm 256 64 --greedy-inplace
sweep resnet 0 8 --greedy-inplace
