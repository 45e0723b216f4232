#!/usr/bin/env bash
# The paper's "no optimization" figures: the memory report of @MODEL_grad
# right after autodiff (no in-place, no sharing, no recomputation).
#
# usage: bench/noopt.sh [OUT.md]        (default: print the table on stdout)
#   env: CKOPT_BIN_DIR (default target/release; built with cargo if missing)
#        DEPTHS (default "10 100 1000"), MODELS (default "mlp resmlp lstm resnet")
#
# For each model and depth: `ckopt-gen MODEL --depth D SIZES |
#   ckopt-opt --pass-pipeline=autodiff --memory-report=FILE --timing -o /dev/null`
# and the row of @MODEL_grad (SPEC §4: total_bytes = every op-defined value,
# peak_bytes = live peak with results, temp_peak_bytes = live peak without
# the returned loss and gradients). "unit" is one activation of the model
# (batch*width*4 bytes; resnet: batch*channels*(image/2)^2*4, one feature map
# after the stem; lstm: batch*width*4, one hidden state). The autodiff column
# is the pass's own wall time from --timing (release build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${CKOPT_BIN_DIR:-$root/target/release}
if [[ ! -x "$bin/ckopt-gen" || ! -x "$bin/ckopt-opt" ]]; then
  (cd "$root" && cargo build --release -p ckopt-tools >&2)
fi
out=${1:-}
depths=${DEPTHS:-"10 100 1000"}
models=${MODELS:-"mlp resmlp lstm resnet"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

sizes() {
  case "$1" in
    mlp|resmlp) echo "--width 1024 --batch 256" ;;
    lstm) echo "--seq 8 --width 256 --batch 32" ;;
    resnet) echo "--channels 16 --image 32 --batch 8 --classes 10" ;;
    *) echo "unknown model $1" >&2; exit 1 ;;
  esac
}
unit() {
  case "$1" in
    mlp|resmlp) echo $((256 * 1024 * 4)) ;;
    lstm) echo $((32 * 256 * 4)) ;;
    resnet) echo $((8 * 16 * 16 * 16 * 4)) ;;
  esac
}

{
  echo "| model | depth | sizes | ops | total_bytes | peak_bytes | temp_peak_bytes | temp_peak (units) | autodiff time |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for m in $models; do
    for d in $depths; do
      s=$(sizes "$m")
      # shellcheck disable=SC2086
      "$bin/ckopt-gen" "$m" --depth "$d" $s > "$tmp/in.ck"
      "$bin/ckopt-opt" "$tmp/in.ck" --pass-pipeline=autodiff --memory-report="$tmp/r.json" --timing -o /dev/null 2> "$tmp/timing.txt"
      t=$(awk '$NF == "autodiff" { print $1; exit }' "$tmp/timing.txt")
      python3 - "$tmp/r.json" "$m" "$d" "$s" "$(unit "$m")" "$t" <<'EOF'
import json, sys
path, model, depth, sizes, unit, t = sys.argv[1:]
rows = [r for r in json.load(open(path)) if r["function"] == model + "_grad"]
if len(rows) != 1:
    sys.exit(f"no report for @{model}_grad")
r = rows[0]
def mib(b): return f"{b} ({b / 2**20:.1f} MiB)"
print(f"| {model} | {depth} | `{sizes}` | {r['ops']} | {mib(r['total_bytes'])} | {mib(r['peak_bytes'])} | "
      f"{mib(r['temp_peak_bytes'])} | {r['temp_peak_bytes'] / int(unit):.1f} | {float(t) * 1e3:.1f} ms |")
EOF
    done
  done
} > "$tmp/table.md"

if [[ -n "$out" ]]; then cp "$tmp/table.md" "$out"; else cat "$tmp/table.md"; fi
