#!/usr/bin/env bash
# Planning speed at scale (issue 21): the pipeline
#   autodiff,inplace,remat{mode=sqrt},memplan
# on the 10,000-layer MLP and on a 1,000,000-op gradient graph (lstm depth
# 2500, seq 8: @lstm_grad has about 1.0M ops), timed with /usr/bin/time
# (wall and CPU = user + sys; on a loaded machine CPU is the stable figure)
# and ckopt-opt --timing (wall time of each pass).
#
# usage: bench/planning-speed.sh [BIN_DIR...]
#   Each BIN_DIR holds ckopt-gen and ckopt-opt (default: target/release);
#   with several, each case runs with each in turn, side by side, and the
#   printed IR of each is compared (cmp) with the first BIN_DIR's.
#   env: CASES (default "mlp lstm"); CHECK=1: first compare the printed IR
#   and --memory-report JSON of every BIN_DIR with the first one's on
#   smaller models under several pipelines (exit 1 on a difference).
set -euo pipefail
dirs=("$@")
[ ${#dirs[@]} -eq 0 ] && dirs=(target/release)
cases=${CASES:-"mlp lstm"}
pipe='autodiff,inplace,remat{mode=sqrt},memplan'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args() {
  case $1 in
    mlp) echo "mlp --depth 10000 --width 64 --batch 8" ;;
    lstm) echo "lstm --depth 2500 --seq 8" ;;
  esac
}
status=0
if [ "${CHECK:-0}" = 1 ] && [ ${#dirs[@]} -gt 1 ]; then
  models=("mlp --depth 1000" "mlp --depth 10000" "lstm" "lstm --depth 100" "resnet" "resnet --depth 50"
    "transformer" "transformer --depth 8" "gpt" "gpt --depth 12" "resmlp --depth 100")
  pipes=("$pipe" 'autodiff,inplace,remat{mode=greedy},memplan' 'autodiff,inplace,remat{mode=log},memplan'
    'autodiff,inplace,sgd{lr=0.01},fuse,remat{mode=sqrt},memplan')
  n=0
  for m in "${models[@]}"; do
    # shellcheck disable=SC2086
    "${dirs[0]}/ckopt-gen" $m > "$tmp/m.ck"
    for p in "${pipes[@]}"; do
      for k in "${!dirs[@]}"; do
        "${dirs[$k]}/ckopt-opt" --pass-pipeline="$p" --memory-report="$tmp/r$k.json" "$tmp/m.ck" > "$tmp/o$k.ck" 2>&1 || true
        if [ "$k" -gt 0 ] && ! { cmp -s "$tmp/o0.ck" "$tmp/o$k.ck" && cmp -s "$tmp/r0.json" "$tmp/r$k.json"; }; then
          echo "DIFFERENT: ${dirs[$k]} vs ${dirs[0]} on '$m' with '$p'"
          status=1
        fi
      done
      n=$((n + 1))
    done
  done
  echo "check: $n model x pipeline cases compared"
fi
for c in $cases; do
  # shellcheck disable=SC2046
  "${dirs[0]}/ckopt-gen" $(args "$c") > "$tmp/$c.ck"
  for d in "${dirs[@]}"; do
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$d/ckopt-opt" --pass-pipeline="$pipe" --timing "$tmp/$c.ck" > "$tmp/out.ck" 2> "$tmp/timing"
    if [ "$d" = "${dirs[0]}" ]; then
      mv "$tmp/out.ck" "$tmp/first.ck"
    elif ! cmp -s "$tmp/first.ck" "$tmp/out.ck"; then
      echo "DIFFERENT: $d vs ${dirs[0]} on $c"
      status=1
    fi
    read -r wall user sys rss < "$tmp/time"
    passes=$(awk '/%\)/ && $NF != "Total" { printf "%s %s  ", $NF, $1 }' "$tmp/timing")
    printf '%-5s %-28s wall %6.2f s  cpu %6.2f s  (max RSS %d MiB)  %s\n' "$c" "$d" "$wall" "$(echo "$user + $sys" | bc)" $((rss / 1024)) "$passes"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
