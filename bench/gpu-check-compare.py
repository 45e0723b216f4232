"""Checker of bench/gpu-check-run.sh (copied as gpu-check/compare.py).

  compare.py outputs WANT.json GOT.json LABEL   tensor JSON of the interpreter vs the GPU
  compare.py losses WANT.json GOT.json LABEL    the "losses" of two --train reports
  compare.py timing DIR [TAG]                   the training reports DIR/MODEL-DEPTH-REMAT.json
                                                (with TAG: one line for that run only)

Tolerance: max |got - want| / max(1, |want|) <= 1e-3 (the GPU sums in other
orders than the interpreter; NaN must match NaN), 1e-2 for bf16 bundles (a
LABEL containing ".bf16"). Exit 1 on a mismatch.
"""
import glob
import json
import math
import os
import statistics
import sys

TOL = 1e-3


def tol(label):
    return 1e-2 if ".bf16" in label else TOL


def rel(a, b):
    worst = 0.0
    for u, v in zip(a, b):
        if u is None or v is None:
            if u is not v:
                return math.inf
            continue
        if math.isnan(u) or math.isnan(v):
            if not (math.isnan(u) and math.isnan(v)):
                return math.inf
            continue
        worst = max(worst, abs(u - v) / max(1.0, abs(u)))
    return worst


def outputs(want, got, label):
    a = json.load(open(want))["outputs"]
    b = json.load(open(got))["outputs"]
    worst = 0.0 if len(a) == len(b) else math.inf
    for x, y in zip(a, b):
        if x["shape"] != y["shape"]:
            worst = math.inf
            break
        worst = max(worst, rel(x["data"], y["data"]))
    ok = worst <= tol(label)
    print(f"  {label:<44} max rel diff {worst:.2e} {'OK' if ok else 'MISMATCH'}")
    return ok


def losses(want, got, label):
    a = json.load(open(want))["losses"]
    b = json.load(open(got))["losses"]
    worst = rel(a, b) if len(a) == len(b) else math.inf
    ok = worst <= tol(label)
    print(f"  {label:<44} losses {['%.6g' % x for x in b]} max rel diff {worst:.2e} {'OK' if ok else 'MISMATCH'}")
    return ok


def mib(x):
    return f"{x / 2**20:.1f}"


def timing(d, only=None):
    rows = {}
    for path in sorted(glob.glob(os.path.join(d, "*-*-*.json"))):
        if only and os.path.basename(path) != only + ".json":
            continue
        tag = os.path.basename(path)[:-5]
        m, depth, remat = tag.split("-")
        r = json.load(open(path))
        times = r.get("step_times_ms") or []
        timed = times[2:] if len(times) > 2 else times
        rows[(m, int(depth), remat)] = (statistics.median(timed) if timed else float("nan"), r)
    if not only:
        print(f"  {'model':<7} {'depth':>5} {'remat':<6} {'step ms':>9} {'device MiB':>11} {'arena MiB':>10} "
              f"{'args MiB':>9} {'dev/(arena+args)':>16} {'h2d B/step':>10} {'loss first->last':>22}")
    ok = True
    for (m, depth, remat), (ms, r) in sorted(rows.items(), key=lambda kv: (kv[0][0], kv[0][1], ["none", "sqrt", "greedy"].index(kv[0][2]))):
        dev = r.get("device_memory_bytes") or 0
        arena = r.get("arena_bytes") or 0
        args = r.get("input_bytes") or 0
        ratio = dev / max(1, arena + args)
        first, last = r.get("first_loss"), r.get("last_loss")
        show = lambda x: f"{x:.6g}" if isinstance(x, (int, float)) else str(x)
        print(f"  {m:<7} {depth:>5} {remat:<6} {ms:>9.2f} {mib(dev):>11} {mib(arena):>10} {mib(args):>9} "
              f"{ratio:>16.3f} {r.get('h2d_bytes_per_step')!s:>10} {show(first):>10} -> {show(last):<10}")
        if not (isinstance(last, float) and math.isfinite(last)):
            ok = False
    if only:
        return ok
    for m in sorted({k[0] for k in rows}):
        for depth in sorted({k[1] for k in rows if k[0] == m}):
            none = rows.get((m, depth, "none"))
            for other in ["sqrt", "greedy"]:
                o = rows.get((m, depth, other))
                if none and o:
                    print(f"  {m} depth {depth}: {other}/none step time {o[0] / none[0]:.3f}, "
                          f"arena {mib(o[1]['arena_bytes'])} / {mib(none[1]['arena_bytes'])} MiB")
    print(f"  gemm: {next(iter(rows.values()))[1].get('gemm') if rows else 'n/a'}")
    return ok and bool(rows)


def main():
    what = sys.argv[1]
    if what == "outputs":
        ok = outputs(*sys.argv[2:5])
    elif what == "losses":
        ok = losses(*sys.argv[2:5])
    elif what == "timing":
        ok = timing(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        raise SystemExit(f"unknown mode {what}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
