"""Reruns every point of a --memory-curve JSON through ckopt-opt and checks
that its plan text reproduces (temp_peak_bytes, recompute_flops) exactly.

usage: reproduce_curve.py CURVE.json MODEL.ck PREFIX_PIPELINE
Prints one line per point ("ok PLAN") and exits 1 on the first mismatch.
"""
import json, subprocess, sys

curve_path, model, prefix = sys.argv[1:4]
curves = json.load(open(curve_path))
for c in curves:
    for p in c["points"]:
        out = subprocess.run(
            ["ckopt-opt", model, "--pass-pipeline=" + prefix + "," + p["plan"], "--memory-report=-", "-o", "/dev/null"],
            capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit(f"{p['plan']}: ckopt-opt failed: {out.stderr}")
        rep = {r["function"]: r for r in json.loads(out.stdout)}[c["function"]]
        got = (rep["temp_peak_bytes"], rep["recompute_flops"])
        want = (p["peak_bytes"], p["recompute_flops"])
        if got != want:
            sys.exit(f"{p['plan']}: curve says {want}, the pipeline gives {got}")
        print("ok", p["plan"])
