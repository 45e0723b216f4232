#!/usr/bin/env bash
# The device half of bench/gpu-check.sh (copied there as gpu-check/run.sh):
# runs on the GPU machine with nothing but the prepared folder.
#     bash gpu-check/run.sh [--quick]    (from the repository root)
# --quick (for a rerun in what is left of the device time): no fallback-GEMM
# checks, no depth-1000 timings.
# 1. finds libcuda and libcublas (site-packages/nvidia/cublas/lib of the
#    image's Python, else the usual system folders) and says which it uses;
# 2. every model of check/ (forward and gradient at --seed 1, and 3 training
#    steps) against the interpreter's results with cuBLAS, and forward and
#    gradient of the fused bundles with the fallback GEMM kernel
#    (CKOPT_NO_CUBLAS=1): max |gpu - interp| / max(1, |interp|) <= 1e-3
#    (1e-2 for the bf16 bundles: cuBLAS's GemmEx rounds its bf16 results);
# 3. the training steps of time/: median step ms after 2 warm-ups (CUDA
#    events around each whole step), device memory measured by the driver,
#    ck.arena_bytes, argument bytes, host-to-device bytes per step, and per
#    model and depth the ratio sqrt/none.
# Prints a summary (also to $OUT/gpu-check-summary.txt when OUT is set);
# exit 1 when a check fails.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
quick=${1:-}
exe="$here/bin/ckopt-exec"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
summary="$tmp/summary.txt"
say() { echo "$*" | tee -a "$summary"; }
fail=0

say "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | sed 's/^/  /' | tee -a "$summary"

# libcuda: the loader's path, else the driver's usual folders.
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1'; then
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib /usr/lib/x86_64-linux-gnu /usr/lib64; do
    [[ -e $d/libcuda.so.1 ]] && export LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}" && break
  done
fi
# libcublas: the Python environment's nvidia packages first.
cublas=
for py in python3 /opt/torch/.venv/bin/python3; do
  command -v "$py" > /dev/null || continue
  for sp in $("$py" -c 'import site,sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))' 2>/dev/null); do
    [[ -d $sp/nvidia ]] || continue
    c=$(find "$sp/nvidia" -name 'libcublas.so*' ! -name '*Lt*' 2>/dev/null | sort -r | head -1)
    [[ -n $c ]] && cublas=$c && break 2
  done
done
if [[ -z $cublas ]]; then
  cublas=$(find /usr/local/cuda*/lib64 /usr/lib/x86_64-linux-gnu -name 'libcublas.so*' ! -name '*Lt*' 2>/dev/null | sort -r | head -1)
fi
if [[ -n $cublas ]]; then
  export CKOPT_CUBLAS="$cublas" LD_LIBRARY_PATH="$(dirname "$cublas"):${LD_LIBRARY_PATH:-}"
  say "  cuBLAS: $cublas"
else
  say "  cuBLAS: not found (the fallback GEMM kernel runs every GEMM)"
fi

say "== 1. every model against the interpreter (rel. tolerance 1e-3)"
for blas in cublas fallback; do
  [[ $blas = fallback && $quick = --quick ]] && continue
  nocublas=0
  [[ $blas = fallback ]] && nocublas=1
  for b in "$here"/check/*.ckb; do
    tag=$(basename "$b" .ckb)          # MODEL.P
    m=${tag%%.*}
    [[ $blas = fallback && $tag != *.fused && $tag != *.bf16 ]] && continue
    for f in "$m" "${m}_grad"; do
      want="$here/check/$tag.$f.json"
      if CKOPT_NO_CUBLAS=$nocublas timeout 120 "$exe" "$b" --func "$f" --seed 1 --outputs "$tmp/o.json" --report "$tmp/r.json" > /dev/null 2> "$tmp/err"; then
        python3 "$here/compare.py" outputs "$want" "$tmp/o.json" "$blas $tag @$f" | tee -a "$summary" || fail=1
      else
        say "  $blas $tag @$f: FAILED: $(head -c 600 "$tmp/err")"; fail=1
      fi
    done
    [[ $blas = fallback ]] && continue
    if timeout 120 "$exe" "$b" --func "$m" --train --steps 3 --seed 1 --report "$tmp/t.json" > /dev/null 2> "$tmp/err"; then
      python3 "$here/compare.py" losses "$here/check/$tag.train.json" "$tmp/t.json" "$blas $tag train" | tee -a "$summary" || fail=1
    else
      say "  $blas $tag train: FAILED: $(head -c 600 "$tmp/err")"; fail=1
    fi
  done
done
grep -q 'gemm' "$tmp/r.json" 2> /dev/null && say "  (last run's GEMMs: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["gemm"])' "$tmp/r.json"))"

say "== 2. training steps (width 1024, batch 256; 2 warm-up + 5 timed steps)"
[[ -f $here/time/greedy-budgets.txt ]] && sed 's/^/  greedy budget: /' "$here/time/greedy-budgets.txt" | tee -a "$summary"
for b in "$here"/time/*.ckb; do
  tag=$(basename "$b" .ckb)            # MODEL-DEPTH-REMAT
  m=${tag%%-*}
  m=${m%_bf16}                         # mlp_bf16: the bf16 (autocast) plan of @mlp_step
  [[ $quick = --quick && ( $tag = *-1000-* || $tag = *_bf16-*-greedy ) ]] && continue
  if timeout 240 "$exe" "$b" --func "$m" --train --steps 7 --seed 0 --report "$tmp/$tag.json" > /dev/null 2> "$tmp/err"; then
    :
    python3 "$here/compare.py" timing "$tmp" "$tag" | tee -a "$summary"
  else
    say "  $tag: FAILED: $(head -c 600 "$tmp/err")"; fail=1
  fi
done
python3 "$here/compare.py" timing "$tmp" | tee -a "$summary" || fail=1

[[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$summary" "$OUT/gpu-check-summary.txt"
say "== gpu-check: $([[ $fail = 0 ]] && echo PASSED || echo FAILED)"
exit $fail
