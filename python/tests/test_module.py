"""Modules: making them (parse, load, gen, import_onnx), printing, passes,
and the memory report and curve, checked against ckopt-opt's JSON."""

import pathlib
import re

import numpy as np
import pytest
from conftest import ROOT, cli_json, run_tool

import ckopt

PIPELINES = [
    "autodiff",
    "autodiff,inplace,remat{mode=sqrt},memplan",
    "autodiff,inplace,sgd{lr=0.1},fuse,remat{mode=greedy},memplan",
]


def test_gen_equals_ckopt_gen():
    out, _ = run_tool("ckopt-gen", "resmlp", "--depth", 3, "--width", 8, "--batch", 2)
    m = ckopt.gen("resmlp", depth=3, width=8, batch=2)
    assert m.text == out
    assert str(m) == m.text
    assert m.functions == ["resmlp"]
    assert re.fullmatch(r"<ckopt.Module 1 function, \d+ ops>", repr(m)), repr(m)
    assert ckopt.gen("mlp").text == run_tool("ckopt-gen", "mlp")[0], "defaults as ckopt-gen's"


def test_gen_errors():
    with pytest.raises(ckopt.GenError, match="unknown model 'nope'.*mlp, resmlp, lstm, resnet, transformer"):
        ckopt.gen("nope")
    with pytest.raises(ckopt.GenError, match="unknown size 'dpth'"):
        ckopt.gen("mlp", dpth=3)
    with pytest.raises(ckopt.GenError) as e:
        ckopt.gen("mlp", seq=3)
    assert e.value.diagnostics and isinstance(e.value, ckopt.DiagnosticError)
    with pytest.raises(ValueError, match="depth= must be a non-negative integer"):
        ckopt.gen("mlp", depth=-1)


def test_parse_load_save_round_trip(tmp_path, mlp):
    m = ckopt.parse(mlp.text, "m.ck")
    assert m.text == mlp.text
    p = tmp_path / "m.ck"
    m.save(p)
    assert p.read_text() == mlp.text
    assert ckopt.load(p).text == mlp.text
    assert ckopt.load(str(p)).functions == ["mlp"]


def test_load_missing_file_is_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        ckopt.load(tmp_path / "nope.ck")


def test_optimize_returns_a_new_module_equal_to_ckopt_opt(mlp_file):
    m = ckopt.load(mlp_file)
    for p in PIPELINES:
        g = m.optimize(p)
        out, _ = run_tool("ckopt-opt", mlp_file, f"--pass-pipeline={p}")
        assert g.text == out, p
    assert m.functions == ["mlp"], "the original is unchanged"
    assert m.optimize("").text == m.text
    assert m.optimize("autodiff").functions == ["mlp", "mlp_grad"]


@pytest.mark.parametrize("pipeline", PIPELINES)
def test_memory_report_equals_ckopt_opt(mlp_file, pipeline):
    want = cli_json("ckopt-opt", mlp_file, f"--pass-pipeline={pipeline}", "--memory-report=-", "-o", "/dev/null")
    g = ckopt.load(mlp_file).optimize(pipeline)
    assert g.memory_report() == want
    for r in want:
        assert g.memory_report(r["function"]) == r


def test_memory_report_of_the_repository_file_equals_ckopt_opt():
    # A file of the lit suite, one case (no --split-input-file): its first case.
    text = (ROOT / "test/passes/memory-report.ck").read_text().split("// -----")[0]
    m = ckopt.parse(text, "r.ck")
    assert m.memory_report()[0]["function"] == "mlp"
    assert m.memory_report()[0]["peak_bytes"] == 16384, "the number the lit test checks by hand"


def test_memory_curve_equals_ckopt_opt(tmp_path):
    f = tmp_path / "big.ck"
    ckopt.gen("mlp", depth=24, width=16, batch=8).save(f)
    want = cli_json("ckopt-opt", f, "--pass-pipeline=autodiff,inplace", "--memory-curve=-", "-o", "/dev/null")
    g = ckopt.load(f).optimize("autodiff,inplace")
    assert g.memory_curve() == want
    c = g.memory_curve("mlp_grad")
    assert c == want[0]
    assert set(c) == {"function", "min_feasible_bytes", "points"}
    pts = c["points"]
    assert [p["peak_bytes"] for p in pts] == sorted(p["peak_bytes"] for p in pts)
    assert set(pts[0]) == {"peak_bytes", "recompute_flops", "plan"}
    # Each point's plan reproduces it.
    p = pts[0]
    r = g.optimize(p["plan"]).memory_report("mlp_grad")
    assert (r["temp_peak_bytes"], r["recompute_flops"]) == (p["peak_bytes"], p["recompute_flops"])


def test_memory_curve_and_report_errors(mlp):
    with pytest.raises(ckopt.CompileError, match="@mlp has no memory curve"):
        mlp.memory_curve("mlp")
    with pytest.raises(ckopt.CompileError, match=r"no function @nope in the module \(functions: @mlp\)"):
        mlp.memory_report("nope")
    assert mlp.memory_curve() == [], "no gradient function, no curve"


def test_pass_errors(mlp):
    with pytest.raises(ckopt.PassError, match="unknown pass 'nope'") as e:
        mlp.optimize("nope")
    assert str(e.value).startswith("error: unknown pass 'nope'")
    with pytest.raises(ckopt.PassError, match="smallest feasible budget"):
        mlp.optimize("autodiff,remat{mode=greedy budget=1}")


def test_import_onnx_equals_ckopt_translate(tmp_path):
    model = ROOT / "test/onnx/models/mlp/model.onnx"
    out = tmp_path / "m.ck"
    weights = tmp_path / "m.safetensors"
    run_tool("ckopt-translate", "--from=onnx", model, "--loss=mse", "--batch=4", "-o", out, f"--params-out={weights}")
    m, params = ckopt.import_onnx(model, loss="mse", batch=4)
    assert m.text == out.read_text()
    m2, params2 = ckopt.import_onnx(model.read_bytes(), loss="mse", batch=4)
    assert m2.text == m.text and list(params2) == list(params)
    f = m.functions[0]
    c = m.compile(f, "interp")
    names = [a[0] for a in c.arguments]
    assert list(params) == [n for n in names if n in params], "parameters in argument order"
    for k, v in params.items():
        assert v.dtype == np.float32 and v.flags.c_contiguous
        shape = next(s for n, s, _ in c.arguments if n == k)
        assert list(v.shape) == list(shape)
    # The weights are the ones ckopt-translate wrote (safetensors: header, then raw f32 data).
    import json, struct

    raw = weights.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    for k, v in params.items():
        a, b = header[k]["data_offsets"]
        np.testing.assert_array_equal(np.frombuffer(raw[8 + n + a : 8 + n + b], dtype="<f4").reshape(v.shape), v)


def test_import_onnx_errors(tmp_path):
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not a model")
    with pytest.raises(ckopt.OnnxError, match="not a valid ONNX model"):
        ckopt.import_onnx(bad)
    with pytest.raises(ckopt.OnnxError):
        ckopt.import_onnx(b"\x08")
    with pytest.raises(FileNotFoundError):
        ckopt.import_onnx(tmp_path / "missing.onnx")
    with pytest.raises(ValueError, match="loss must be"):
        ckopt.import_onnx(bad, loss="l1")
    with pytest.raises(TypeError, match="takes a path"):
        ckopt.import_onnx(3)


OPS_TEXT = """module {
  func.func @f(%x: tensor<2x3xf32>, %w: tensor<3xf32> {ck.param}, %i: tensor<2xi64>) -> (tensor<f32>, tensor<2xf32>) {
    %b = "ck.broadcast"(%w) {dims = [1]} : (tensor<3xf32>) -> tensor<2x3xf32>
    %y = "ck.mul"(%x, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %s = "ck.scale"(%y) {value = 0.25 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<2x3xf32>) -> tensor<f32>
    %j = "ck.reshape"(%i) : (tensor<2xi64>) -> tensor<2x1xi64>
    %g = "ck.take_along"(%y, %j) {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x1xi64>) -> tensor<2x1xf32>
    %r = "ck.reshape"(%g) : (tensor<2x1xf32>) -> tensor<2xf32>
    "ck.return"(%l, %r) : (tensor<f32>, tensor<2xf32>) -> ()
  }
}
"""


def test_ops_is_the_function_structure():
    text = OPS_TEXT
    d = ckopt.parse(text).ops("f")
    assert [(a["name"], a["shape"], a["dtype"], a["attrs"]) for a in d["args"]] == [
        ("x", (2, 3), "f32", {}), ("w", (3,), "f32", {"ck.param": True}), ("i", (2,), "i64", {})]
    kinds = [o["kind"] for o in d["ops"]]
    assert kinds == ["broadcast", "mul", "scale", "reduce_sum", "reshape", "take_along", "reshape"]
    by = {o["result"]: o for o in d["ops"]}
    x, w, i = (a["value"] for a in d["args"])
    b, y, s, l, j, g, r = (o["result"] for o in d["ops"])
    assert len({x, w, i, b, y, s, l, j, g, r}) == 10, "value numbers are unique"
    assert by[y]["operands"] == [x, b] and by[g]["operands"] == [y, j]
    assert by[b]["attrs"] == {"dims": [1]} and by[s]["attrs"] == {"value": 0.25} and by[g]["attrs"] == {"axis": 1}
    assert (by[l]["shape"], by[l]["dtype"]) == ((), "f32") and by[j]["dtype"] == "i64"
    assert d["results"] == [l, r]
    with pytest.raises(ckopt.CompileError, match="no function @g"):
        ckopt.parse(text).ops("g")


def test_split_gradient_halves_run_to_the_gradient():
    m = ckopt.gen("mlp", depth=3, width=8, batch=2).optimize("autodiff,inplace,remat{mode=log}")
    s = m.split_gradient("mlp", "mlp_grad")
    whole = m.compile("mlp_grad", "interp")
    args = whole.random_inputs(1)
    want = whole.run(*args)
    halves = s["module"]
    assert halves.functions == [s["forward"], s["backward"]]
    fwd = halves.compile(s["forward"], "interp").run(*args)
    assert len(fwd) == 1 + s["n_aux"] + s["n_kept"]
    np.testing.assert_array_equal(fwd[0], want[0])
    bargs = [args[i] for i in s["backward_args"]] + list(fwd[1 + s["n_aux"]:]) + [np.float32(1.0)]
    grads = halves.compile(s["backward"], "interp").run(*bargs)
    assert len(grads) == len(s["wrt"]) == len(want) - 1
    for g, w in zip(grads, want[1:]):
        np.testing.assert_array_equal(g, w)
    with pytest.raises(ckopt.CompileError, match="no seed"):
        m.split_gradient("mlp", "mlp")
