#!/usr/bin/env bash
# Remat: every mode's own plan vs the exact planner (issue 21), on small
# graph families: random DAGs (bench/remat_graphs.py random), wide branches
# (losses summed as they go / at the end), an attention-like self-product,
# and a log chain with two ck.mirror regions. For each graph and mode
# M in sqrt/greedy/log: M's own plan without a budget (peak P, recompute R)
# vs remat{mode=optimal budget=P} (every plan ckopt makes, the MILP's exact
# plan over keep sets included: R*); then the smallest feasible budget, log's
# peak vs the least peak over keep sets. Prints markdown tables
# (passes/examples/remat_gap.rs).
# usage: bench/remat-gap.sh
set -eu
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
g=bench/remat_graphs.py
for s in 1 2 3 4 5 6; do python3 $g random --seed $s --ops 10 --n 128 --rows 128 > $tmp/random-$s.ck; done
for s in 7 8 9; do python3 $g random --seed $s --ops 18 --n 128 --rows 128 > $tmp/random18-$s.ck; done
python3 $g wide --branches 4 --depth 3 --n 128 --rows 128 > $tmp/wide4x3.ck
python3 $g wide --branches 4 --depth 3 --n 128 --rows 128 --end > $tmp/wide4x3-end.ck
python3 $g selfprod --n 256 > $tmp/selfprod.ck
python3 $g logchain --depth 6 --n 128 --regions 0-1,3-4 > $tmp/mirror2.ck
cargo run -q -j1 -p ckopt-passes --example remat_gap -- $tmp/*.ck
rm -rf $tmp
