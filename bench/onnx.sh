#!/usr/bin/env bash
# PyTorch-exported models through ckopt: import (ckopt-translate --from=onnx),
# the memory table of the training step (no remat / remat{mode=sqrt} / a byte
# budget), then a few SGD steps on the cpu backend from the model's own
# weights (ckopt-run --params ... --params-out).
# Usage: bench/onnx.sh [BATCH] [STEPS]   (CKOPT_BIN_DIR: the tools, default target/release;
#        RESULTS_DIR: where the .ck and .safetensors files go, default target/demo/onnx)
set -euo pipefail
BIN="${CKOPT_BIN_DIR:-target/release}"
OUT="${RESULTS_DIR:-target/demo/onnx}"
BATCH="${1:-64}"
STEPS="${2:-5}"
mkdir -p "$OUT"
field() { python3 -c "import json,sys; r=[x for x in json.load(open(sys.argv[1])) if x['function']==sys.argv[2]][0]; print(r[sys.argv[3]])" "$@"; }
for m in cnn transformer; do
  src="test/onnx/models/$m/model.onnx"
  "$BIN/ckopt-translate" --from=onnx "$src" --loss=mse --batch="$BATCH" --name="$m" \
      -o "$OUT/$m.ck" --params-out="$OUT/$m.safetensors"
  nparams=$(grep -o 'ck.param' "$OUT/$m.ck" | wc -l)
  echo "-- $m: $src at batch $BATCH -> @$m ($(grep -c '"ck\.' "$OUT/$m.ck") ops, $nparams parameters in $OUT/$m.safetensors)"
  printf '%-36s %14s %14s %12s\n' "plan of @${m}_grad" "temp peak (B)" "arena (B)" "recompute"
  none_peak=""
  for plan in none sqrt budget; do
    case $plan in
      none) remat="remat{mode=none}" ;;
      sqrt) remat="remat{mode=sqrt}" ;;
      budget) remat="remat{mode=greedy budget=$(( (none_peak + sqrt_peak) / 2 ))}" ;;
    esac
    "$BIN/ckopt-opt" "$OUT/$m.ck" --pass-pipeline="autodiff,$remat,memplan" \
        --memory-report="$OUT/$m.$plan.json" -o "$OUT/$m.$plan.ck"
    peak=$(field "$OUT/$m.$plan.json" "${m}_grad" temp_peak_bytes)
    arena=$(field "$OUT/$m.$plan.json" "${m}_grad" arena_bytes)
    rc=$(python3 -c "import json,sys; r=[x for x in json.load(open(sys.argv[1])) if x['function']==sys.argv[2]][0]; print('%.2f' % (r['recompute_flops']/(r['forward_flops']+r['backward_flops'])))" "$OUT/$m.$plan.json" "${m}_grad")
    printf '%-36s %14s %14s %12s\n' "$remat" "$peak" "$arena" "$rc"
    [ "$plan" = none ] && none_peak=$peak
    [ "$plan" = sqrt ] && sqrt_peak=$peak
  done
  echo "SGD on the cpu backend with remat{mode=sqrt}, from the exported weights:"
  "$BIN/ckopt-run" "$OUT/$m.sqrt.ck" --func "$m" --backend cpu --params "$OUT/$m.safetensors" \
      --train --steps "$STEPS" --lr 0.05 --params-out "$OUT/$m.trained.safetensors"
  echo
done
