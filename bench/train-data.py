#!/usr/bin/env python3
"""Step time of `ckopt-run --train --data` (batches streamed from a
memory-mapped safetensors file, the next one read by the prefetch thread
while the step runs) against resident inputs (fixed `--seed` inputs), on the
cpu backend, in one run: the two alternate, `--reps` times each.

Usage: bench/train-data.py [--reps N] [--steps S] [DEPTH WIDTH BATCH EXAMPLES]
  (default: resmlp depth 16 width 512 batch 256, 4096 examples, 30 steps, 5 reps)

The step is `ckopt-gen resmlp` through `autodiff,inplace,sgd{lr=0.01},fuse,memplan`.
Per run the figure is the report's `wall_step_ms` (a whole step, including
waiting for its batch and copying it into the backend); the first step of a
run is included in both. Also per run: the time outside the step
(`wall_step_ms` minus the mean of `step_times_ms`: waiting for the batch,
copying it in, the loop), which shows what loading costs apart from the
machine's noise. Prints each pair, the median of the per-pair ratios
data/resident, the ratio of the medians, and the median time outside the step. Binaries: CKOPT_BIN_DIR
(default target/release).
"""
import json, os, statistics, struct, subprocess, sys, tempfile, time, random

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("CKOPT_BIN_DIR", os.path.join(ROOT, "target", "release"))


def sh(cmd):
    return subprocess.run(cmd, check=True, text=True, capture_output=True).stdout


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, shape, data in tensors:
        b = struct.pack(f"<{len(data)}f", *data)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def main():
    argv = sys.argv[1:]
    reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 5
    steps = int(argv[argv.index("--steps") + 1]) if "--steps" in argv else 30
    pos = [a for i, a in enumerate(argv) if not a.startswith("--") and (i == 0 or argv[i - 1] not in ("--reps", "--steps"))]
    depth, width, batch, examples = (int(x) for x in (pos + ["16", "512", "256", "4096"][len(pos):]))
    with tempfile.TemporaryDirectory() as tmp:
        src, step = os.path.join(tmp, "m.ck"), os.path.join(tmp, "s.ck")
        with open(src, "w") as f:
            f.write(sh([os.path.join(BIN, "ckopt-gen"), "resmlp", "--depth", str(depth), "--width", str(width), "--batch", str(batch)]))
        sh([os.path.join(BIN, "ckopt-opt"), src, "--pass-pipeline=autodiff,inplace,sgd{lr=0.01},fuse,memplan", "-o", step])
        rng = random.Random(1)
        x = [rng.uniform(-1, 1) for _ in range(examples * width)]
        data = os.path.join(tmp, "d.safetensors")
        write_safetensors(data, [("x", [examples, width], x), ("target", [examples, width], [0.5 * v for v in x])])
        base = [os.path.join(BIN, "ckopt-run"), step, "--func", "resmlp", "--backend", "cpu", "--train", "--steps", str(steps), "--log-every", str(steps)]
        rows = []
        print(f"# resmlp depth {depth} width {width} batch {batch}, {steps} SGD steps on cpu; --data: {examples} examples; "
              f"{time.strftime('%Y-%m-%d %H:%M')}; load {os.getloadavg()[0]:.1f}")
        print("| rep | resident wall ms/step | --data wall ms/step | ratio | resident step (median) | --data step (median) | outside the step: resident / --data |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for k in range(reps):
            got = {}
            for mode in (["resident", "data"] if k % 2 == 0 else ["data", "resident"]):
                rep = os.path.join(tmp, f"{mode}.json")
                extra = ["--data", data, "--shuffle-seed", "1"] if mode == "data" else ["--seed", "1"]
                sh(base + extra + ["--report", rep])
                with open(rep) as f:
                    r = json.load(f)
                got[mode] = (r["wall_step_ms"], statistics.median(r["step_times_ms"][1:]), r["wall_step_ms"] - statistics.mean(r["step_times_ms"]))
            ratio = got["data"][0] / got["resident"][0]
            rows.append((got["resident"], got["data"], ratio))
            print(f"| {k + 1} | {got['resident'][0]:.2f} | {got['data'][0]:.2f} | {ratio:.3f} | {got['resident'][1]:.2f} | {got['data'][1]:.2f} | {got['resident'][2]:.3f} / {got['data'][2]:.3f} ms |")
            sys.stdout.flush()
        med_r = statistics.median(r[0][0] for r in rows)
        med_d = statistics.median(r[1][0] for r in rows)
        print(f"median ratio data/resident {statistics.median(r[2] for r in rows):.3f}; ratio of medians {med_d / med_r:.3f} "
              f"({med_d:.2f} / {med_r:.2f} ms); outside the step (median): resident {statistics.median(r[0][2] for r in rows):.3f} ms, "
              f"--data {statistics.median(r[1][2] for r in rows):.3f} ms; load after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
