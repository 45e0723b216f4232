"""Exports scikit-learn's digits (1,797 8x8 grayscale images, shipped inside
the scikit-learn package: no download) as two safetensors datasets for
`ckopt-run --train --data/--eval-data`:

  OUT/digits-train.safetensors   1,437 examples
  OUT/digits-test.safetensors      360 examples (a stratified split, seed 0)

Each holds `x` [N, 3, 8, 8] f32 (pixels / 16, the gray image in all three
channels of `ckopt-gen resnet`'s RGB input) and `target` [N, 10] f32
(one-hot), the argument names of `ckopt-gen resnet --image 8 --classes 10`.

Run: uv run --no-project --with scikit-learn --with safetensors python \
         scripts/digits_to_safetensors.py OUT
"""
import sys
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split


def main(out: Path) -> None:
    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None, :, :].repeat(3, axis=1)
    t = np.eye(10, dtype=np.float32)[d.target]
    xtr, xte, ttr, tte = train_test_split(x, t, test_size=360, random_state=0, stratify=d.target)
    out.mkdir(parents=True, exist_ok=True)
    for name, xs, ts in [("train", xtr, ttr), ("test", xte, tte)]:
        p = out / f"digits-{name}.safetensors"
        save_file({"x": np.ascontiguousarray(xs), "target": np.ascontiguousarray(ts)}, str(p))
        print(f"{p}: {len(xs)} examples, x {list(xs.shape)}, target {list(ts.shape)}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "target/demo"))
