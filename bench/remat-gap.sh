#!/usr/bin/env bash
# Remat: every mode's own plan vs the exact planner (issue 21). For each
# small graph and mode M in sqrt/greedy/log, runs remat{mode=M} without a
# budget (the mode's own plan: peak P, recompute R), then
# remat{mode=optimal budget=P} (every plan ckopt can make, the MILP's exact
# plan over keep sets included: recompute R*) and prints
#   graph | mode | peak | R | R* | gap = R/R* - 1 | milp-status
# and the smallest feasible budget: log's peak vs optimal's (the error of
# budget=1 names it). usage: [OPT=target/debug/ckopt-opt] bench/remat-gap.sh
set -u
cd "$(dirname "$0")/.."
OPT=${OPT:-target/debug/ckopt-opt}
tmp=$(mktemp -d)
g=bench/remat_graphs.py
for s in 1 2 3 4 5 6; do python3 $g random --seed $s --ops 10 --n 128 --rows 128 > $tmp/random-$s.ck; done
python3 $g wide --branches 4 --depth 3 --n 128 --rows 128 > $tmp/wide4x3.ck
python3 $g wide --branches 4 --depth 3 --n 128 --rows 128 --end > $tmp/wide4x3-end.ck
python3 $g selfprod --n 256 > $tmp/selfprod.ck
python3 $g logchain --depth 6 --n 128 --regions 0-1,3-4 > $tmp/mirror2.ck
stat_() { grep -oE "[0-9.a-z-]+ @[a-z_]+_grad $1 " <<<"$2" | head -1 | cut -d' ' -f1; }
for f in $tmp/*.ck; do
  name=$(basename $f .ck)
  for m in sqrt greedy log; do
    out=$("$OPT" $f --pass-pipeline="autodiff,inplace,remat{mode=$m}" -o /dev/null --pass-statistics 2>&1)
    p=$(stat_ temp-peak-bytes-after "$out"); r=$(stat_ recompute-flops "$out")
    if [ -z "$p" ]; then echo "$name | $m | (no plan: $(head -c 200 <<<"$out"))"; continue; fi
    out=$("$OPT" $f --pass-pipeline="autodiff,inplace,remat{mode=optimal budget=$p}" -o /dev/null --pass-statistics 2>&1)
    rs=$(stat_ recompute-flops "$out"); st=$(stat_ milp-status "$out")
    gap=$(python3 -c "r,s=$r,$rs; print('0' if r==s else ('inf' if s==0 else f'{r/s-1:.3f}'))")
    echo "$name | $m | peak=$p | R=$r | R*=$rs | gap=$gap | milp=${st:--}"
  done
  lo=$("$OPT" $f --pass-pipeline="autodiff,inplace,remat{mode=log}" -o /dev/null --pass-statistics 2>&1)
  err=$("$OPT" $f --pass-pipeline="autodiff,inplace,remat{mode=optimal budget=1}" -o /dev/null 2>&1 | grep -oE 'smallest feasible budget found is [^)]*\)?' | grep -oE '[0-9]+( B| bytes)' | head -1)
  echo "$name | smallest | log peak=$(stat_ temp-peak-bytes-after "$lo") | optimal smallest=${err}"
done
rm -rf $tmp
