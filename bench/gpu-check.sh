#!/usr/bin/env bash
# GPU check of the cuda backend, in two halves.
#
# HERE (a machine with LLVM/MLIR 22 and the release tools):
#     bench/gpu-check.sh [--quick]
#   prepares ONE folder, gpu-check/ (git-ignored, under 64 MiB), holding:
#     bin/ckopt-exec            the LLVM-free runtime (release, no debug info)
#     check/MODEL.P.ckb         every ckopt-gen model at a small size (gpt too: integer
#                               ids and labels, i1 masks, gathers and their scatter-add
#                               gradients, cross_entropy), forward, gradient and step,
#                               P = plain (autodiff,sgd,memplan) or fused
#                               (autodiff,inplace,sgd,fuse,remat{mode=sqrt},memplan);
#                               and resmlp.bf16 (autocast{dtype=bf16} then fused: bf16
#                               activations, cublasGemmStridedBatchedEx on bf16)
#     check/MODEL.P.FUNC.json   the interpreter's results for --seed 1
#     check/MODEL.P.train.json  the interpreter's losses of 3 SGD steps
#     time/MODEL-DEPTH-REMAT.ckb  @MODEL_step of mlp and resmlp at depth 100 and
#                               1000, width 1024, batch 256, REMAT = none, sqrt,
#                               greedy (budget: 1.5x the sqrt plan's temp peak);
#                               mlp_bf16 and resmlp_bf16 (autocast{dtype=bf16}) at
#                               depth 100; gpt at depth 12 (width 512, 8 heads,
#                               seq 256, vocab 4096, batch 8)
#     run.sh, compare.py        the runner (bench/gpu-check-run.sh) and its checker
#   --quick: depth 100 only in time/.
#
# THERE (the device machine: no network, no LLVM; ckopt-exec and bundles only),
# from the repository root, with the device tool: one call whose timeout
# leaves room for a rerun within the 15 minutes of device time,
#     run  command="bash gpu-check/run.sh 2>&1 | tee $OUT/gpu-check.log"
#          carry=["gpu-check"]  timeout_s=330
#   and, if it must be repeated, "bash gpu-check/run.sh --quick ..." (no
#   fallback-GEMM checks, no depth-1000 timings). run.sh also writes its
#   summary to $OUT/gpu-check-summary.txt.
#   It finds libcublas itself (the image's Python environment ships it in
#   site-packages/nvidia/cublas/lib) and prints which one it uses, checks every
#   model (forward, gradient, 3 training steps) against the interpreter with
#   cuBLAS and with the fallback GEMM kernel, then times the training steps:
#   step ms (CUDA events, median of the steps after 2 warm-ups), device memory
#   measured by the driver, ck.arena_bytes, parameters, and per model and depth
#   the ratio sqrt/none. Only summaries are written (no tensors of the big runs).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
quick=${1:-}
out=gpu-check
bin=${CKOPT_BIN_DIR:-target/release}
export CKOPT_LIBDEVICE="${CKOPT_LIBDEVICE:-$HOME/.cache/ckopt/cuda-nvcc/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc}"
[[ -f "$CKOPT_LIBDEVICE" ]] || { echo "gpu-check: libdevice not found (scripts/setup.sh fetches it; or set CKOPT_LIBDEVICE)" >&2; exit 1; }
if [[ ! -x "$bin/ckopt-translate" ]]; then
  echo "gpu-check: building the release tools (make build) ..." >&2
  cargo build --release --workspace --exclude ckopt-python --features ckopt-tools/lower >&2
fi
# ckopt-exec alone: without the workspace's `lower` feature, so it links no LLVM.
cargo build --release -p ckopt-exec >&2
rm -rf "$out"
mkdir -p "$out/bin" "$out/check" "$out/time"
cp target/release/ckopt-exec "$out/bin/"
cp bench/gpu-check-run.sh "$out/run.sh"
cp bench/gpu-check-compare.py "$out/compare.py"
chmod +x "$out/run.sh" "$out/bin/ckopt-exec"
grep -qx '/gpu-check/' .gitignore 2>/dev/null || echo "warning: gpu-check/ is not in .gitignore" >&2

size() {
  case "$1" in
    mlp|resmlp) echo "--depth 2 --width 64 --batch 16" ;;
    lstm) echo "--depth 2 --width 32 --batch 8 --seq 4" ;;
    resnet) echo "--depth 2 --channels 8 --image 8 --batch 4 --classes 5" ;;
    transformer) echo "--depth 2 --width 32 --batch 4 --seq 8 --heads 2" ;;
    gpt) echo "--depth 2 --width 32 --heads 2 --seq 8 --vocab 16 --batch 4" ;;
  esac
}

echo "== check bundles and the interpreter's results" >&2
for m in mlp resmlp lstm resnet transformer gpt; do
  # shellcheck disable=SC2046
  "$bin/ckopt-gen" "$m" $(size "$m") > "$out/check/$m.ck"
  ps="plain fused"
  [[ $m = resmlp ]] && ps="plain fused bf16"
  for p in $ps; do
    pipe='autodiff,sgd{lr=0.01},memplan'
    [[ $p = fused ]] && pipe='autodiff,inplace,sgd{lr=0.01},fuse,remat{mode=sqrt},memplan'
    [[ $p = bf16 ]] && pipe='autocast{dtype=bf16},autodiff,inplace,sgd{lr=0.01},fuse,remat{mode=sqrt},memplan'
    "$bin/ckopt-opt" --pass-pipeline="$pipe" "$out/check/$m.ck" -o "$out/check/$m.$p.ck"
    "$bin/ckopt-translate" --to=cuda-bundle "$out/check/$m.$p.ck" -o "$out/check/$m.$p.ckb"
    for f in "$m" "${m}_grad"; do
      "$bin/ckopt-run" "$out/check/$m.$p.ck" --func "$f" --seed 1 --outputs "$out/check/$m.$p.$f.json" > /dev/null
    done
    "$bin/ckopt-run" "$out/check/$m.$p.ck" --func "$m" --train --steps 3 --seed 1 --report "$out/check/$m.$p.train.json" > /dev/null
    rm "$out/check/$m.$p.ck"
  done
  rm "$out/check/$m.ck"
done

echo "== timing bundles (width 1024, batch 256)" >&2
specs="mlp:100 mlp:1000 resmlp:100 resmlp:1000 mlp_bf16:100 resmlp_bf16:100 gpt:12"
[[ $quick = --quick ]] && specs="mlp:100 resmlp:100 mlp_bf16:100 gpt:12"
for spec in $specs; do
    m=${spec%%:*} d=${spec##*:}
    g=${m%_bf16}
    if [[ $g = gpt ]]; then
      "$bin/ckopt-gen" gpt --depth "$d" --width 512 --heads 8 --seq 256 --vocab 4096 --batch 8 > "$out/time/src.ck"
    else
      "$bin/ckopt-gen" "$g" --depth "$d" --width 1024 --batch 256 > "$out/time/src.ck"
    fi
    base='autodiff,inplace,sgd{lr=0.01},fuse'
    [[ $m = *_bf16 ]] && base="autocast{dtype=bf16},$base"
    "$bin/ckopt-opt" --pass-pipeline="$base,remat{mode=sqrt},memplan" "$out/time/src.ck" \
      --memory-report="$out/time/sqrt.json" -o "$out/time/p.ck"
    "$bin/ckopt-translate" --to=cuda-bundle --func "${g}_step" "$out/time/p.ck" -o "$out/time/$m-$d-sqrt.ckb"
    "$bin/ckopt-opt" --pass-pipeline="$base,memplan" "$out/time/src.ck" -o "$out/time/p.ck"
    "$bin/ckopt-translate" --to=cuda-bundle --func "${g}_step" "$out/time/p.ck" -o "$out/time/$m-$d-none.ckb"
    # greedy at a budget: 1.5x the sqrt plan's temp peak (of any function), more if that is infeasible.
    peak=$(python3 -c 'import json,sys; print(max(r["temp_peak_bytes"] for r in json.load(open(sys.argv[1]))))' "$out/time/sqrt.json")
    ok=
    for f in 15 20 30; do
      budget=$((peak * f / 10))
      if "$bin/ckopt-opt" --pass-pipeline="$base,remat{mode=greedy budget=$budget},memplan" "$out/time/src.ck" -o "$out/time/p.ck" 2> /dev/null; then
        ok=1; break
      fi
    done
    [[ -n $ok ]] || { echo "gpu-check: no feasible greedy budget for $m depth $d" >&2; exit 1; }
    "$bin/ckopt-translate" --to=cuda-bundle --func "${g}_step" "$out/time/p.ck" -o "$out/time/$m-$d-greedy.ckb"
    echo "$m $d $budget" >> "$out/time/greedy-budgets.txt"
    rm -f "$out/time/src.ck" "$out/time/p.ck" "$out/time/sqrt.json"
done

bytes=$(du -sb "$out" | cut -f1)
echo "gpu-check: prepared $out/ ($bytes bytes; ckopt-exec $(stat -c %s "$out/bin/ckopt-exec") bytes)" >&2
if (( bytes > 60 * 1024 * 1024 )); then
  echo "gpu-check: $out/ is over 60 MiB; the device machine takes at most 64 MiB with the working tree" >&2
  exit 1
fi
echo "next, with the device tool: run command=\"bash gpu-check/run.sh 2>&1 | tee \$OUT/gpu-check.log\" carry=[\"gpu-check\"] timeout_s=330" >&2
