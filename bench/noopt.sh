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
# and the row of @MODEL_grad (docs/memory.md: total_bytes = every op-defined value,
# peak_bytes = live peak with results, temp_peak_bytes = live peak without
# the returned loss and gradients). "unit" is one activation of the model
# (batch*width*4 bytes; resnet: batch*channels*(image/2)^2*4, one feature map
# after the stem; lstm: batch*width*4, one hidden state). The autodiff column
# is the pass's own wall time from --timing (release build).
set -euo pipefail
out=${1:-}
depths=${DEPTHS:-"10 100 1000"}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"

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
