# Shared by bench/noopt.sh and bench/memplan.sh (sourced, not run): the
# binaries, a scratch folder, and the model sizes and activation units the
# memory tables use (mlp/resmlp 1 MiB, lstm 32 KiB, resnet 128 KiB).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bin=${CKOPT_BIN_DIR:-$root/target/release}
if [[ ! -x "$bin/ckopt-gen" || ! -x "$bin/ckopt-opt" ]]; then
  (cd "$root" && cargo build --release -p ckopt-tools >&2)
fi
models=${MODELS:-"mlp resmlp lstm resnet"}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ckopt-gen options of each benchmark model.
sizes() {
  case "$1" in
    mlp|resmlp) echo "--width 1024 --batch 256" ;;
    lstm) echo "--seq 8 --width 256 --batch 32" ;;
    resnet) echo "--channels 16 --image 32 --batch 8 --classes 10" ;;
    *) echo "unknown model $1" >&2; exit 1 ;;
  esac
}
# Bytes of one activation ("unit") of each model.
unit() {
  case "$1" in
    mlp|resmlp) echo $((256 * 1024 * 4)) ;;
    lstm) echo $((32 * 256 * 4)) ;;
    resnet) echo $((8 * 16 * 16 * 16 * 4)) ;;
  esac
}
