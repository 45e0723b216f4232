#!/usr/bin/env python3
"""ckopt's cpu backend side by side with JAX (XLA's CPU backend), in one run.

Usage: bench/cpu-vs-jax.py [--quick] [--rounds N] [--only NAME,...]
  (NAME: mlp, resmlp, resnet, gpt, adamw, remat, compile, matmul)

Creates a virtual environment with JAX, optax and numpy (CKOPT_BENCH_VENV, default
target/bench-venv; pinned versions below) unless it exists, builds the
release tools if missing (CKOPT_BIN_DIR, default target/release), then for
each model runs ckopt (`ckopt-opt` pipeline, then `ckopt-run --backend cpu
--train`) and the same model in JAX (bench/peers/jax_step.py), interleaved,
`--rounds` times (default 2). A step time is the median over every timed
step of every round (ckopt: all steps but the first; JAX: all steps after
the compiling one). Prints a table with the ratio ckopt/JAX and writes the
raw results as JSON lines to RESULTS_DIR (default target/bench).

Rows (the issue's targets):
  mlp/resmlp/resnet training steps, ratio ckopt / JAX (target <= 1.25);
  gpt (`ckopt-gen gpt`: depth 4, width 128, heads 4, seq 64, vocab 256, batch 8)
  SGD step, ratio ckopt / JAX (issue 19's target <= 1.25);
  the same models' AdamW steps (ckopt's `adamw` pass against optax.adamw,
  same hyperparameters; issue 22's target <= 1.25), `--only adamw` for these alone;
  remat{mode=sqrt} vs no remat, mlp depth 100 width 256 batch 512 (target <= 1.35, smaller arena);
  compile time (ckopt-run's compile_ms) of mlp and resmlp, depth 1000, width 1024, batch 32 (target <= 3 s; not with --quick);
  one 256x1024x1024 matmul: ckopt's GEMM vs numpy's sgemm (target >= 60%).
"""
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BIN = os.environ.get("CKOPT_BIN_DIR", os.path.join(ROOT, "target", "release"))
VENV = os.environ.get("CKOPT_BENCH_VENV", os.path.join(ROOT, "target", "bench-venv"))
RESULTS = os.environ.get("RESULTS_DIR", os.path.join(ROOT, "target", "bench"))
PEER = os.path.join(ROOT, "bench", "peers", "jax_step.py")
PINS = ["jax==0.10.2", "jaxlib==0.10.2", "numpy==2.4.6", "optax==0.2.8"]
PIPELINE = "autodiff,inplace,{opt},fuse,{remat}memplan"
# The update rules: SGD, and AdamW with the adamw pass's defaults (jax_step.py uses the same).
OPT = {"sgd": "sgd{lr=0.01}", "adamw": "adamw{lr=0.001 beta1=0.9 beta2=0.999 eps=1e-8 weight_decay=0.01}"}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout


def ensure_venv():
    py = os.path.join(VENV, "bin", "python")
    if os.path.exists(py) and subprocess.run([py, "-c", "import jax, optax"], capture_output=True).returncode == 0:
        return py
    if os.path.exists(py):
        sh([py, "-m", "pip", "install", "-q"] + PINS)
        return py
    print(f"# creating {VENV} with {' '.join(PINS)}", file=sys.stderr)
    try:
        sh(["uv", "venv", "-q", VENV])
        sh(["uv", "pip", "install", "-q", "--python", py] + PINS)
    except (OSError, subprocess.CalledProcessError):
        sh([sys.executable, "-m", "venv", VENV])
        sh([py, "-m", "pip", "install", "-q"] + PINS)
    return py


def ensure_tools():
    need = ["ckopt-gen", "ckopt-opt", "ckopt-run"]
    if not all(os.path.exists(os.path.join(BIN, t)) for t in need):
        print("# building the release tools", file=sys.stderr)
        subprocess.run(["cargo", "build", "--release", "-p", "ckopt-tools", "--features", "lower"], cwd=ROOT, check=True)


def tool(name):
    return os.path.join(BIN, name)


# The gpt row's other sizes (ckopt-gen gpt's flags; jax_step.py's key=value arguments).
GPT = {"heads": 4, "seq": 64, "vocab": 256}


def ckopt_train(tmp, model, depth, width, batch, remat, steps, opt="sgd"):
    """ckopt-gen | ckopt-opt PIPELINE | ckopt-run --backend cpu --train: (report, step times)."""
    gen = ["--depth", str(depth)]
    if model == "gpt":
        gen += ["--width", str(width), "--batch", str(batch)] + [a for k, v in GPT.items() for a in (f"--{k}", str(v))]
    elif model == "resnet":
        gen += ["--channels", str(width), "--batch", str(batch)]
    else:
        gen += ["--width", str(width), "--batch", str(batch)]
    src = os.path.join(tmp, "m.ck")
    planned = os.path.join(tmp, "p.ck")
    with open(src, "w") as f:
        f.write(sh([tool("ckopt-gen"), model] + gen))
    pipeline = PIPELINE.format(opt=OPT[opt], remat="remat{mode=sqrt}," if remat == "sqrt" else "")
    t0 = time.perf_counter()
    sh([tool("ckopt-opt"), src, f"--pass-pipeline={pipeline}", "-o", planned])
    plan_ms = (time.perf_counter() - t0) * 1e3
    rep = os.path.join(tmp, "r.json")
    sh([tool("ckopt-run"), planned, "--func", model, "--backend", "cpu", "--train", "--steps", str(steps), "--report", rep])
    with open(rep) as f:
        r = json.load(f)
    r["plan_ms"] = plan_ms
    return r, r["step_times_ms"][1:]


def ckopt_compile(tmp, model, depth, width, batch):
    """Planning time (ckopt-opt, sqrt remat) and ckopt-run --compile-only's report (no inputs allocated)."""
    src = os.path.join(tmp, "c.ck")
    planned = os.path.join(tmp, "cp.ck")
    with open(src, "w") as f:
        f.write(sh([tool("ckopt-gen"), model, "--depth", str(depth), "--width", str(width), "--batch", str(batch)]))
    t0 = time.perf_counter()
    sh([tool("ckopt-opt"), src, "--pass-pipeline=" + PIPELINE.format(opt=OPT["sgd"], remat="remat{mode=sqrt},"), "-o", planned])
    plan_ms = (time.perf_counter() - t0) * 1e3
    r = json.loads(sh([tool("ckopt-run"), planned, "--func", model, "--backend", "cpu", "--train", "--compile-only", "--report", "-"]))
    r["plan_ms"] = plan_ms
    return r


def jax_train(py, model, depth, width, batch, remat, steps, opt="sgd"):
    args = [py, PEER, model, str(depth), str(width), str(batch), str(steps)] + (["sqrt"] if remat == "sqrt" else []) + ([opt] if opt != "sgd" else [])
    if model == "gpt":
        args += [f"{k}={v}" for k, v in GPT.items()]
    r = json.loads(sh(args).strip().splitlines()[-1])
    return r, r["step_times_ms"]


def matmul_rates(py, tmp, m, k, n, repeat):
    ck = os.path.join(tmp, "mm.ck")
    with open(ck, "w") as f:
        f.write(
            "module {\n"
            f"  func.func @mm(%a: tensor<{m}x{k}xf32>, %b: tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32> {{\n"
            f'    %c = "ck.matmul"(%a, %b) : (tensor<{m}x{k}xf32>, tensor<{k}x{n}xf32>) -> tensor<{m}x{n}xf32>\n'
            f'    "ck.return"(%c) : (tensor<{m}x{n}xf32>) -> ()\n'
            "  }\n}\n"
        )
    rep = os.path.join(tmp, "mm.json")
    sh([tool("ckopt-run"), ck, "--backend", "cpu", "--repeat", str(repeat), "--report", rep])
    with open(rep) as f:
        ts = json.load(f)["step_times_ms"][1:]
    flops = 2.0 * m * n * k
    ck_rate = flops / (statistics.median(ts) * 1e-3) / 1e9
    code = (
        "import numpy as np, time, statistics, json\n"
        f"a = np.random.rand({m}, {k}).astype(np.float32); b = np.random.rand({k}, {n}).astype(np.float32)\n"
        "a @ b\n"
        f"ts = []\nfor _ in range({repeat}):\n    t = time.perf_counter(); a @ b; ts.append(time.perf_counter() - t)\n"
        f"print(json.dumps({{'gflops': {flops} / statistics.median(ts) / 1e9, 'numpy': np.__version__}}))\n"
    )
    np_r = json.loads(sh([py, "-c", code]).strip())
    return ck_rate, np_r["gflops"], np_r["numpy"]


def wanted(only, opt, model):
    """Whether `--only` selects the training row of `model` with `opt`:
    SGD rows by model name, AdamW rows by `adamw` (and a model name, if any;
    gpt has an SGD row only)."""
    if model == "gpt" and opt == "adamw":
        return False
    if not only:
        return True
    models = [m for m in only if m in ("mlp", "resmlp", "resnet", "gpt")]
    if opt == "adamw":
        return "adamw" in only and (not models or model in models)
    return model in models


def main():
    argv = sys.argv[1:]
    quick = "--quick" in argv
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else (1 if quick else 2)
    only = argv[argv.index("--only") + 1].split(",") if "--only" in argv else None
    ensure_tools()
    py = ensure_venv()
    os.makedirs(RESULTS, exist_ok=True)
    raw = open(os.path.join(RESULTS, "cpu-vs-jax.jsonl"), "a")
    steps = 5 if quick else 8
    rows = [
        ("mlp", 100, 256, 64),
        ("resmlp", 16, 256, 64),
        ("mlp", 4, 1024, 256),
        ("resnet", 8, 8, 4),
        ("gpt", 4, 128, 8),
    ]
    cpu = sh(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"]).strip()
    print(f"# {cpu}, {os.cpu_count()} cores; {time.strftime('%Y-%m-%d %H:%M')}; rounds {rounds}; load {os.getloadavg()[0]:.1f}")
    print("| model | ckopt step | JAX step | ratio | ckopt compile | JAX compile | ckopt arena |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for opt in ["sgd", "adamw"]:
            for model, depth, width, batch in rows:
                name = f"{model} depth {depth} {'channels' if model == 'resnet' else 'width'} {width} batch {batch}" + (", AdamW" if opt == "adamw" else "")
                if model == "gpt":
                    name = f"gpt depth {depth} width {width} heads {GPT['heads']} seq {GPT['seq']} vocab {GPT['vocab']} batch {batch}"
                if not wanted(only, opt, model):
                    continue
                ck_t, jx_t, ck_r, jx_r, ratios = [], [], None, None, []
                for _ in range(rounds):
                    ck_r, ts = ckopt_train(tmp, model, depth, width, batch, "none", steps, opt)
                    ck_t += ts
                    jx_r, jts = jax_train(py, model, depth, width, batch, "none", steps - 1, opt)
                    jx_t += jts
                    ratios.append(statistics.median(ts) / statistics.median(jts))
                c, j = statistics.median(ck_t), statistics.median(jx_t)
                raw.write(json.dumps({"row": name, "optimizer": opt, "ckopt": ck_r, "jax": jx_r, "ckopt_ms": c, "jax_ms": j, "round_ratios": ratios}) + "\n")
                rr = ", ".join(f"{r:.2f}" for r in ratios)
                print(f"| {name} | {c:.2f} ms | {j:.2f} ms | {c / j:.2f}x (rounds: {rr}; median {statistics.median(ratios):.2f}) | {ck_r['compile_ms']:.0f} ms | {jx_r['compile_ms']:.0f} ms | {ck_r['arena_bytes'] / 2**20:.1f} MiB |")
                sys.stdout.flush()
        if not only or "remat" in only:
            d, w, b = 100, 256, 512
            res = {}
            for _ in range(rounds):
                for remat in ["none", "sqrt"]:
                    r, ts = ckopt_train(tmp, "mlp", d, w, b, remat, steps)
                    res.setdefault(remat, (r, []))[1].extend(ts)
                    jr, jts = jax_train(py, "mlp", d, w, b, remat, steps - 1)
                    res.setdefault("jax-" + remat, (jr, []))[1].extend(jts)
            med = {k: statistics.median(v[1]) for k, v in res.items()}
            raw.write(json.dumps({"row": "remat", "median_ms": med, "arena": {k: res[k][0].get("arena_bytes") for k in ["none", "sqrt"]}}) + "\n")
            print()
            print(f"remat, mlp depth {d} width {w} batch {b}: ckopt none {med['none']:.1f} ms (arena {res['none'][0]['arena_bytes'] / 2**20:.1f} MiB), "
                  f"sqrt {med['sqrt']:.1f} ms (arena {res['sqrt'][0]['arena_bytes'] / 2**20:.1f} MiB): sqrt/none {med['sqrt'] / med['none']:.2f}x; "
                  f"JAX none {med['jax-none']:.1f} ms, sqrt {med['jax-sqrt']:.1f} ms ({med['jax-sqrt'] / med['jax-none']:.2f}x)")
        if (not only and not quick) or (only and "compile" in only):
            print()
            for model in ["mlp", "resmlp"]:
                r = ckopt_compile(tmp, model, 1000, 1024, 32)
                raw.write(json.dumps({"row": f"compile {model} 1000", "ckopt": r}) + "\n")
                print(f"compile, {model} depth 1000 width 1024 batch 32 (autodiff,inplace,sgd,fuse,remat{{mode=sqrt}},memplan): "
                      f"planning {r['plan_ms'] / 1e3:.2f} s, ckopt-run compile_ms {r['compile_ms']:.0f} ms, {r['distinct_kernels']} distinct kernels for {r['kernels']} kernel calls")
        if not only or "matmul" in only:
            ck_rate, np_rate, npv = matmul_rates(py, tmp, 256, 1024, 1024, 20)
            raw.write(json.dumps({"row": "matmul 256x1024x1024", "ckopt_gflops": ck_rate, "numpy_gflops": np_rate}) + "\n")
            print()
            print(f"matmul 256x1024x1024: ckopt {ck_rate:.1f} GFLOP/s, numpy {npv} sgemm {np_rate:.1f} GFLOP/s: {ck_rate / np_rate:.0%}")


if __name__ == "__main__":
    main()
