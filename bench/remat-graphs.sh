#!/usr/bin/env bash
# Remat on general graphs (issue 21), side by side: BEFORE and AFTER are two
# ckopt-opt binaries (default: target/debug/ckopt-opt for both). Prints one
# line per case: name, binary, temp peak bytes of @*_grad, recompute flops,
# plan (or the smallest feasible budget named when the budget is infeasible).
# usage: BEFORE=/path/ckopt-opt AFTER=target/debug/ckopt-opt bench/remat-graphs.sh
set -u
cd "$(dirname "$0")/.."
BEFORE=${BEFORE:-target/debug/ckopt-opt}
AFTER=${AFTER:-target/debug/ckopt-opt}
tmp=$(mktemp -d)
g=bench/remat_graphs.py
python3 $g logchain > $tmp/log5.ck
python3 $g logchain --mirror > $tmp/log5m.ck
python3 $g wide --branches 10 --depth 4 > $tmp/wide.ck
python3 $g wide --branches 10 --depth 4 --end > $tmp/wide_end.ck
python3 $g wide --branches 1 --depth 2 --n 64 --rows 64 > $tmp/tiny.ck
python3 $g selfprod > $tmp/attn.ck
python3 bench/skipnet.py --depth 32 --width 256 --batch 64 > $tmp/skip.ck
case_() { # name file remat-options
  for b in "$BEFORE" "$AFTER"; do
    out=$("$b" "$2" --pass-pipeline="autodiff,inplace,remat{$3}" -o /dev/null --pass-statistics 2>&1)
    peak=$(grep -oE '[0-9]+ @[a-z_]+_grad temp-peak-bytes-after' <<<"$out" | cut -d' ' -f1)
    rf=$(grep -oE '[0-9]+ @[a-z_]+_grad recompute-flops' <<<"$out" | cut -d' ' -f1)
    plan=$(grep -oE '\(S\) .* @[a-z_]+_grad plan - ' <<<"$out" | sed 's/^(S) //; s/ @.*//')
    err=$(grep -oE 'smallest feasible budget found is [^)]*\)' <<<"$out")
    echo "$1 | $3 | $b | peak=${peak:-} | recompute=${rf:-} | ${plan:-}${err}"
  done
}
case_ log5 "$tmp/log5.ck" "mode=optimal budget=6MiB"
case_ log5 "$tmp/log5.ck" "mode=greedy budget=6MiB"
case_ log5 "$tmp/log5.ck" "mode=sqrt budget=6MiB"
case_ log5-mirror "$tmp/log5m.ck" "mode=sqrt"
case_ wide-as-they-go "$tmp/wide.ck" "mode=optimal budget=1"
case_ wide-at-end "$tmp/wide_end.ck" "mode=optimal budget=1"
case_ wide-as-they-go "$tmp/wide.ck" "mode=greedy"
case_ wide-at-end "$tmp/wide_end.ck" "mode=greedy"
case_ tiny-branch "$tmp/tiny.ck" "mode=sqrt"
case_ skipnet-32 "$tmp/skip.ck" "mode=greedy"
for b in "$BEFORE" "$AFTER"; do
  for p in "autodiff" "autodiff,inplace"; do
    pk=$("$b" $tmp/attn.ck --pass-pipeline="$p" --memory-report=- -o /dev/null 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); fs=d['functions'] if isinstance(d,dict) else d; print([f['temp_peak_bytes'] for f in fs if f.get('function','').endswith('_grad')][0])")
    echo "self-product | $p | $b | temp_peak=$pk"
  done
done
rm -rf $tmp
