#!/usr/bin/env python3
"""Exports real architectures from maintained packages, with random weights
(no downloads), to ONNX for bench/remat-families.sh:

  resnet18              timm `resnet18`, 10 classes, input [8, 3, 64, 64]
  mobilenetv3_small_050 timm `mobilenetv3_small_050`, 10 classes, input [8, 3, 64, 64]
  gpt2                  transformers GPT2LMHeadModel, 2 layers, width 64, 2 heads,
                        vocab 128, 16 positions; input ids int64 [4, 16] -> logits
  bert                  transformers BertForMaskedLM, 2 layers, hidden 64, 2 heads,
                        intermediate 128, vocab 128; input ids int64 [4, 16] -> logits

Each is `torch.onnx.export(..., dynamo=False, opset_version=17)` of the model
in eval mode (so dropout is off and BatchNorm uses its running statistics:
the import folds them into constants), seeded with torch.manual_seed(0).

Usage: python bench/remat_families.py export OUTDIR [NAME...]   (default: all four;
       needs torch, timm, transformers, onnx)
       python bench/remat_families.py check OUTDIR BIN [NAME...]   (the image models:
       needs numpy, onnxruntime): imports OUTDIR/NAME.onnx without a loss
       (--params-out), runs it on a seeded input [8, 3, 64, 64] on BIN/ckopt-run's
       cpu backend and on onnxruntime, and fails unless every logit is within
       1e-4 |want| + 1e-5; then imports it with --loss=mse and trains 5 SGD steps
       (lr 0.05, seeded input and target) from its weights on the cpu backend,
       failing unless the loss falls
       python3 bench/remat_families.py table OUTDIR BIN [NAME...]  (stdlib only:
       imports each OUTDIR/NAME.onnx with BIN/ckopt-translate, runs every remat
       mode on @NAME_grad (`autodiff,inplace,remat{...},memplan`) and on
       @NAME_step (`autodiff,inplace,sgd{lr=0.01},fuse,remat{...},memplan`),
       and prints a markdown table per model: temp peak and recompute of each
       plan vs no remat's; CKOPT_TRANSLATE: the importer, default BIN/ckopt-translate)
"""
import json
import os
import subprocess
import sys
import tempfile
import time


def timm_model(name):
    import timm
    import torch

    return timm.create_model(name, pretrained=False, num_classes=10), (torch.randn(8, 3, 64, 64),), ["x"]


def hf_model(kind):
    import torch
    import transformers

    common = dict(vocab_size=128, num_hidden_layers=2, hidden_size=64, num_attention_heads=2, attn_implementation="eager")
    if kind == "gpt2":
        cfg = transformers.GPT2Config(vocab_size=128, n_positions=16, n_embd=64, n_layer=2, n_head=2, use_cache=False)
        cfg._attn_implementation = "eager"
        model = transformers.GPT2LMHeadModel(cfg)
    else:
        del common["attn_implementation"]
        cfg = transformers.BertConfig(intermediate_size=128, max_position_embeddings=16, **common)
        cfg._attn_implementation = "eager"
        model = transformers.BertForMaskedLM(cfg)

    class Logits(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, ids):
            # an explicit all-ones mask: without one, transformers traces its
            # packed-sequence check (aten::diff, which ONNX cannot express)
            return self.m(input_ids=ids, attention_mask=torch.ones_like(ids), return_dict=False)[0]

    return Logits(model), (torch.randint(0, 128, (4, 16)),), ["ids"]


MODELS = {
    "resnet18": lambda: timm_model("resnet18"),
    "mobilenetv3_small_050": lambda: timm_model("mobilenetv3_small_050"),
    "gpt2": lambda: hf_model("gpt2"),
    "bert": lambda: hf_model("bert"),
}


# How each model is imported: the loss on its output.
LOSS = {"resnet18": "mse", "mobilenetv3_small_050": "mse", "gpt2": "cross-entropy-index", "bert": "cross-entropy-index"}


def export(out, names):
    import torch

    os.makedirs(out, exist_ok=True)
    for name in names:
        torch.manual_seed(0)
        model, args, inputs = MODELS[name]()
        model.eval()
        path = os.path.join(out, f"{name}.onnx")
        with torch.no_grad():
            torch.onnx.export(model, args, path, input_names=inputs, output_names=["y"], opset_version=17, dynamo=False)
        print(f"{name}: {path} ({os.path.getsize(path)} bytes)")


def report(path, func):
    return [r for r in json.load(open(path)) if r["function"] == func][0]


def run_plan(bin_dir, ck, pipeline, func, tmp):
    """(report row, None) or (None, the error's last line)."""
    rep = os.path.join(tmp, "r.json")
    t = time.process_time()
    p = subprocess.run([f"{bin_dir}/ckopt-opt", ck, f"--pass-pipeline={pipeline}", f"--memory-report={rep}", "-o", os.path.join(tmp, "o.ck")],
                       capture_output=True, text=True)
    cpu = time.process_time() - t
    if p.returncode != 0:
        errs = [l for l in p.stderr.splitlines() if "error:" in l] or ["failed"]
        return None, errs[0].split("error: ", 1)[-1]
    r = report(rep, func)
    r["cpu_s"] = cpu
    return r, None


def mb(b):
    return f"{b / 1e6:.1f} MB"


def table(out, bin_dir, names):
    tmp = tempfile.mkdtemp()
    for name in names:
        src = os.path.join(out, f"{name}.onnx")
        ck = os.path.join(tmp, f"{name}.ck")
        translate = os.environ.get("CKOPT_TRANSLATE", f"{bin_dir}/ckopt-translate")
        p = subprocess.run([translate, "--from=onnx", src, f"--loss={LOSS[name]}", "--name=m", "-o", ck],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print(f"### {name}: import refused\n\n    {(p.stderr.strip().splitlines() or ['?'])[-1]}\n")
            continue
        ops = sum(1 for line in open(ck) if '"ck.' in line)
        print(f"### {name} (`--loss={LOSS[name]}`, {ops} ops)\n")
        print("| function | plan | temp peak | vs none | recompute (forward passes) |")
        print("|---|---|---|---|---|")
        for func, pre in [("m_grad", "autodiff,inplace"), ("m_step", "autodiff,inplace,sgd{lr=0.01},fuse")]:
            none, err = run_plan(bin_dir, ck, f"{pre},remat{{mode=none}},memplan", func, tmp)
            if none is None:
                print(f"| @{func} | none | {err} | | |")
                continue
            peak0 = none["temp_peak_bytes"]
            fwd = max(1, none["forward_flops"])
            plans = ["mode=none", "mode=sqrt", "mode=greedy", "mode=log", "mode=log k=2"]
            for frac in (0.9, 0.75, 0.5):
                b = int(peak0 * frac)
                plans += [f"mode=sqrt budget={b}", f"mode=greedy budget={b}", f"mode=optimal budget={b}"]
            for plan in plans:
                r, err = (none, None) if plan == "mode=none" else run_plan(bin_dir, ck, f"{pre},remat{{{plan}}},memplan", func, tmp)
                if r is None:
                    print(f"| @{func} | `{plan}` | {err} | | |")
                    continue
                peak = r["temp_peak_bytes"]
                print(f"| @{func} | `{plan}` | {mb(peak)} | {peak / peak0:.2f}x | {r['recompute_flops'] / fwd:.2f} |")
        print()


def check(out, bin_dir, names):
    """Logits of the cpu backend against onnxruntime's, then SGD on the cpu."""
    import numpy as np
    import onnxruntime as ort

    tmp = tempfile.mkdtemp()
    translate = os.environ.get("CKOPT_TRANSLATE", f"{bin_dir}/ckopt-translate")
    failed = []
    for name in names:
        if LOSS[name] != "mse":
            print(f"{name}: skipped (check covers the image models)")
            continue
        src = os.path.join(out, f"{name}.onnx")
        ck, params = os.path.join(tmp, f"{name}.ck"), os.path.join(tmp, f"{name}.safetensors")
        subprocess.run([translate, "--from=onnx", src, "--name=m", "-o", ck, f"--params-out={params}"], check=True)
        x = np.random.default_rng(0).standard_normal((8, 3, 64, 64)).astype(np.float32)
        want = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        inp, outp = os.path.join(tmp, "x.json"), os.path.join(tmp, "y.json")
        json.dump({"inputs": [{"shape": list(x.shape), "data": x.ravel().tolist()}]}, open(inp, "w"))
        subprocess.run([f"{bin_dir}/ckopt-run", ck, "--func", "m", "--backend", "cpu", "--params", params, "--inputs", inp,
                        "--outputs", outp], check=True, capture_output=True)
        y = json.load(open(outp))["outputs"][0]
        got = np.array(y["data"], dtype=np.float32).reshape(y["shape"])
        err = np.abs(got - want)
        excess = float(np.max(err - (1e-4 * np.abs(want) + 1e-5)))
        rel = float(np.max(err / np.maximum(np.abs(want), 1e-6)))
        ok = got.shape == want.shape and excess <= 0
        print(f"{name}: logits {list(got.shape)} on cpu vs onnxruntime {ort.__version__}: max |diff| {float(err.max()):.3e}, "
              f"max relative {rel:.3e}, |logit| up to {float(np.abs(want).max()):.3f}: {'ok' if ok else 'FAILED'} (1e-4 |want| + 1e-5)")
        mse = os.path.join(tmp, f"{name}.mse.ck")
        subprocess.run([translate, "--from=onnx", src, "--loss=mse", "--name=m", "-o", mse], check=True)
        p = subprocess.run([f"{bin_dir}/ckopt-run", mse, "--func", "m", "--backend", "cpu", "--params", params, "--train",
                            "--steps", "5", "--lr", "0.05", "--seed", "1", "--log-every", "1"], capture_output=True, text=True, check=True)
        losses = [float(line.split("loss ")[1]) for line in p.stdout.splitlines() + p.stderr.splitlines() if line.startswith("step ")]
        falls = len(losses) == 5 and losses[-1] < losses[0]
        print(f"{name}: SGD on cpu (lr 0.05, 5 steps), losses {' '.join(f'{v:.6f}' for v in losses)}: {'falls' if falls else 'FAILED'}")
        if not ok or not falls:
            failed.append(name)
    if failed:
        sys.exit(f"check failed: {', '.join(failed)}")


def main():
    if len(sys.argv) < 3 or sys.argv[1] not in ("export", "table", "check"):
        sys.exit(__doc__)
    if sys.argv[1] == "export":
        export(sys.argv[2], sys.argv[3:] or list(MODELS))
    elif sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3], sys.argv[4:] or list(MODELS))
    else:
        table(sys.argv[2], sys.argv[3], sys.argv[4:] or list(MODELS))


if __name__ == "__main__":
    main()
