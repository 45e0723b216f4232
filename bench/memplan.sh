#!/usr/bin/env bash
# The paper's memory-optimization table without recomputation (§3): for the
# gradient function @MODEL_grad of each model,
#   no optimization  = total_bytes after autodiff (every op-defined value its own buffer)
#   inplace          = total_bytes minus the bytes of in-place results after `inplace`
#                      (buffers that remain when in-place reuse is the only optimization;
#                      no sharing, so no peak involved)
#   sharing          = arena_bytes of `memplan` without `inplace`
#   inplace+sharing  = arena_bytes of `inplace,memplan` (best-fit, the plan)
# plus the first-fit baseline on the same buffers, the live peak after inplace
# (peak_bytes of docs/memory.md: no plan can go below it), and the two passes' times.
#
# usage: bench/memplan.sh [OUT.md]      (default: print the table on stdout)
#   env: CKOPT_BIN_DIR (default target/release; built with cargo if missing)
#        DEPTHS (default "100 1000"), MODELS (default "mlp resmlp lstm resnet")
# Sizes are those of bench/noopt.sh (units: mlp/resmlp 1 MiB, lstm 32 KiB, resnet 128 KiB).
set -euo pipefail
out=${1:-}
depths=${DEPTHS:-"100 1000"}
# shellcheck source=bench/common.sh
source "$(dirname "$0")/common.sh"
pass_time() { awk -v p="$2" '$NF == p && /%\)/ { print $1; exit }' "$1"; }

{
  echo "| model | depth | ops | no optimization | inplace | sharing | inplace+sharing | first-fit (inplace+sharing) | live peak after inplace | arena / peak | arena / total | inplace time | memplan time |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for m in $models; do
    for d in $depths; do
      s=$(sizes "$m")
      # shellcheck disable=SC2086
      "$bin/ckopt-gen" "$m" --depth "$d" $s > "$tmp/in.ck"
      "$bin/ckopt-opt" "$tmp/in.ck" --pass-pipeline=autodiff -o "$tmp/g.ck"
      "$bin/ckopt-opt" "$tmp/g.ck" --pass-pipeline=memplan --memory-report="$tmp/share.json" -o /dev/null
      "$bin/ckopt-opt" "$tmp/g.ck" --pass-pipeline=inplace --timing -o "$tmp/ip.ck" 2> "$tmp/t1.txt"
      "$bin/ckopt-opt" "$tmp/ip.ck" --pass-pipeline=memplan --memory-report="$tmp/both.json" \
        --pass-statistics --timing -o /dev/null > "$tmp/t2.txt" 2>&1
      python3 - "$tmp" "$m" "$d" "$(unit "$m")" "$(pass_time "$tmp/t1.txt" inplace)" "$(pass_time "$tmp/t2.txt" memplan)" <<'EOF'
import json, re, sys
tmp, model, depth, unit, t_ip, t_mp = sys.argv[1:]
unit = int(unit)
g = model + "_grad"
def row(path):
    rows = [r for r in json.load(open(path)) if r["function"] == g]
    if len(rows) != 1:
        sys.exit(f"no report for @{g} in {path}")
    return rows[0]
share, both = row(f"{tmp}/share.json"), row(f"{tmp}/both.json")
# Bytes of the in-place results of @MODEL_grad in the inplace output.
saved, fn = 0, None
for line in open(f"{tmp}/ip.ck"):
    mf = re.search(r"func\.func @([\w.$-]+)\(", line)
    if mf:
        fn = mf.group(1)
        continue
    if fn == g and "ck.inplace" in line:
        ty = re.search(r"-> tensor<([0-9x]*)f32>\s*$", line)
        if not ty:
            sys.exit("cannot read the result type of: " + line)
        n = 1
        for dim in filter(None, ty.group(1).split("x")):
            n *= int(dim)
        saved += 4 * n
ff = None
for line in open(f"{tmp}/t2.txt"):
    mm = re.search(r"\(S\) (\d+) @" + re.escape(g) + r" first-fit-arena-bytes\b", line)
    if mm:
        ff = int(mm.group(1))
if ff is None:
    sys.exit("no first-fit statistic")
total = share["total_bytes"]
inplace = both["total_bytes"] - saved
def u(b): return f"{b / 2**20:.1f} MiB ({b / unit:.0f} u)"
print(f"| {model} | {depth} | {share['ops']} | {u(total)} | {u(inplace)} | {u(share['arena_bytes'])} | "
      f"{u(both['arena_bytes'])} | {u(ff)} | {u(both['peak_bytes'])} | {both['arena_bytes'] / both['peak_bytes']:.3f} | "
      f"{both['arena_bytes'] / total:.3f} | {float(t_ip):.3f} s | {float(t_mp):.3f} s |")
EOF
    done
  done
} > "$tmp/table.md"

if [[ -n "$out" ]]; then cp "$tmp/table.md" "$out"; else cat "$tmp/table.md"; fi
