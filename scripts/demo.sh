#!/usr/bin/env bash
# The main job: generate models, run the pipeline, print the memory table.
set -euo pipefail
BIN=target/release
echo "ckopt demo: (grows with the product)"
$BIN/ckopt-gen mlp --depth 4 --width 8 --batch 2 | head -5
