#!/usr/bin/env bash
# A real training job (docs/training.md): scikit-learn's digits (1,797 8x8
# images, shipped inside the scikit-learn package) exported to safetensors,
# a small CNN (ckopt-gen resnet) trained on the cpu backend with AdamW, a
# warmup + cosine schedule and remat{mode=sqrt}; the test accuracy, the loss
# sequence compared bit for bit with the same job without remat, the loss
# plot. Usage: scripts/digits-demo.sh [BIN_DIR] [OUT_DIR]
set -euo pipefail
BIN=${1:-target/release}
OUT=${2:-target/demo}
mkdir -p "$OUT"
export PATH="$HOME/.local/bin:$PATH"
uv run -q --no-project --with scikit-learn --with safetensors --with numpy \
  python scripts/digits_to_safetensors.py "$OUT"
"$BIN/ckopt-gen" resnet --depth 2 --channels 32 --image 8 --classes 10 --batch 40 -o "$OUT/digits.ck"
STEP="adamw{lr=0.005 weight_decay=0.01}"
for r in none sqrt; do
  "$BIN/ckopt-opt" "$OUT/digits.ck" --pass-pipeline="autodiff,inplace,$STEP,fuse,remat{mode=$r},memplan" \
    --memory-report="$OUT/digits-$r-memory.json" -o "$OUT/digits-$r.ck"
done
run() { # $1: remat mode, then extra flags
  local r=$1; shift
  "$BIN/ckopt-run" "$OUT/digits-$r.ck" --func resnet --backend cpu --train \
    --data "$OUT/digits-train.safetensors" --eval-data "$OUT/digits-test.safetensors" \
    --epochs 30 --eval-every 210 --schedule cosine --warmup 20 --shuffle-seed 0 \
    --log-every 210 --report "$OUT/digits-$r.json" "$@"
}
start=$(date +%s.%N)
run sqrt --plot "$OUT/digits-loss.svg"
end=$(date +%s.%N)
run none > /dev/null
python3 - "$OUT" "$start" "$end" <<'PY'
import json, sys
out, t0, t1 = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
sq, no = (json.load(open(f"{out}/digits-{r}.json")) for r in ("sqrt", "none"))
mem = {r: {x["function"]: x for x in json.load(open(f"{out}/digits-{r}-memory.json"))}["resnet_step"] for r in ("none", "sqrt")}
acc = sq["eval"][-1]["accuracy"]
same = sq["losses"] == no["losses"]
print(f"digits: {sq['steps']} AdamW steps ({sq['data']['batches_per_epoch']} batches x 30 epochs), "
      f"test accuracy {100 * acc:.1f}% on {sq['eval'][-1]['examples']} held-out images (target >= 97%): {'yes' if acc >= 0.97 else 'NO'}")
print(f"  wall time of the job {t1 - t0:.1f} s (target < 60 s), {sq['step_time_ms']:.2f} ms/step")
print(f"  loss sequence with remat{{mode=sqrt}} == without remat, bit for bit: {'yes' if same else 'NO'} ({len(sq['losses'])} losses)")
print(f"  step arena: {mem['none']['arena_bytes'] / 1024:.0f} KiB without remat, {mem['sqrt']['arena_bytes'] / 1024:.0f} KiB with sqrt; "
      f"device_bytes {mem['none']['device_bytes'] / 1024:.0f} / {mem['sqrt']['device_bytes'] / 1024:.0f} KiB (AdamW moments included)")
if acc < 0.97 or not same:
    sys.exit(1)
PY
echo "loss plot: $OUT/digits-loss.svg"
