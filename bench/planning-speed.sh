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
#   with several, each case runs with each in turn, side by side.
#   env: CASES (default "mlp lstm")
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
for c in $cases; do
  # shellcheck disable=SC2046
  "${dirs[0]}/ckopt-gen" $(args "$c") > "$tmp/$c.ck"
  for d in "${dirs[@]}"; do
    /usr/bin/time -f "%e %U %S %M" -o "$tmp/time" "$d/ckopt-opt" --pass-pipeline="$pipe" --timing "$tmp/$c.ck" > "$tmp/out.ck" 2> "$tmp/timing"
    read -r wall user sys rss < "$tmp/time"
    passes=$(awk '/%\)/ && $NF != "Total" { printf "%s %s  ", $NF, $1 }' "$tmp/timing")
    printf '%-5s %-28s wall %6.2f s  cpu %6.2f s  (max RSS %d MiB)  %s\n' "$c" "$d" "$wall" "$(echo "$user + $sys" | bc)" $((rss / 1024)) "$passes"
  done
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
