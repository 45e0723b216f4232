"""Errors: the exception classes, diagnostics, str(e) equal to the tools'
text, and every malformed input of the repository through parse,
optimize, compile and run raising only ckopt's errors (never a panic)."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest
from conftest import ROOT, run_tool, tool

import ckopt

BAD = 'module {\n  func.func @f(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>) -> tensor<2x4xf32> {\n    %y = "ck.matmul"(%x, %w) {transpose_a = true} : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>\n    "ck.return"(%y) : (tensor<2x4xf32>) -> ()\n  }\n}\n'


def test_hierarchy():
    for cls in [ckopt.ParseError, ckopt.PassError, ckopt.CompileError, ckopt.RunError, ckopt.ArgumentError, ckopt.OnnxError, ckopt.GenError]:
        assert issubclass(cls, ckopt.DiagnosticError) and issubclass(cls, ckopt.Error)
        assert cls.__module__ == "ckopt" and cls.__doc__
    assert issubclass(ckopt.InternalError, ckopt.Error) and not issubclass(ckopt.InternalError, ckopt.DiagnosticError)
    assert issubclass(ckopt.Error, Exception)


def test_diagnostics_and_text_equal_ckopt_opt(tmp_path):
    f = tmp_path / "bad.ck"
    f.write_text(BAD)
    _, err = run_tool("ckopt-opt", f, ok=False)
    with pytest.raises(ckopt.ParseError) as e:
        ckopt.load(f)
    assert str(e.value) + "\n" == err
    assert "^" in str(e.value) and "%y = \"ck.matmul\"" in str(e.value)
    (d,) = e.value.diagnostics
    assert (d.severity, d.file, d.line, d.column) == ("error", str(f), 3, 5)
    assert d.message.startswith("'ck.matmul' op matmul contraction dims differ")
    assert str(d) == err.splitlines()[0]
    assert repr(d).startswith("Diagnostic(severity='error', file=")
    with pytest.raises(ckopt.ParseError) as e2:
        ckopt.parse(BAD, str(f))
    assert e2.value.diagnostics == e.value.diagnostics


def test_pass_error_text_equals_ckopt_opt(tmp_path):
    f = tmp_path / "m.ck"
    ckopt.gen("mlp", depth=4, width=8, batch=2).save(f)
    p = "autodiff,remat{mode=greedy budget=1}"
    _, err = run_tool("ckopt-opt", f, f"--pass-pipeline={p}", ok=False)
    with pytest.raises(ckopt.PassError) as e:
        ckopt.load(f).optimize(p)
    assert str(e.value) + "\n" == err


def test_invalid_utf8_is_located(tmp_path):
    f = tmp_path / "u.ck"
    f.write_bytes(b"module {\n  \xff\n}\n")
    _, err = run_tool("ckopt-opt", f, ok=False)
    with pytest.raises(ckopt.ParseError) as e:
        ckopt.load(f)
    assert str(e.value) + "\n" == err
    assert e.value.diagnostics[0].line == 2


def test_fuzz_seeds_render_as_ckopt_opt_does():
    seeds = sorted((ROOT / "fuzz/seeds").glob("*.ck"))
    assert len(seeds) > 50
    compared = 0
    for s in seeds:
        try:
            ckopt.load(s)
        except ckopt.DiagnosticError as e:
            _, err = run_tool("ckopt-opt", s, ok=False)
            assert str(e) + "\n" == err, s
            compared += 1
    assert compared > 50


def chunks():
    """Every ck text the repository keeps: lit tests (cut at '// -----'),
    the IR tests' inputs, the fuzz seeds."""
    files = sorted((ROOT / "test").rglob("*.ck")) + sorted((ROOT / "fuzz/seeds").glob("*.ck"))
    for f in files:
        data = f.read_bytes()
        try:
            text = data.decode()
        except UnicodeDecodeError:
            yield f.name, data
            continue
        for i, c in enumerate(text.split("\n// -----\n")):
            yield f"{f.relative_to(ROOT)}#{i}", c.encode()


PIPELINES = ["autodiff", "autodiff,inplace,sgd{lr=0.1},fuse,remat{mode=sqrt},memplan", "cse,dce,canonicalize,memplan"]


def exercise(name, data, tmp_path, cpu_budget):
    """parse -> optimize -> compile -> run; returns the ckopt errors seen."""
    seen = []

    def attempt(f, *a):
        try:
            return f(*a)
        except ckopt.DiagnosticError as e:
            assert e.diagnostics and str(e), name
            seen.append(type(e).__name__)
            return None

    p = tmp_path / "in.ck"
    p.write_bytes(data)
    m = attempt(ckopt.load, p)
    if m is None:
        return seen
    for pipe in [""] + PIPELINES:
        g = attempt(m.optimize, pipe)
        if g is None:
            continue
        attempt(g.memory_report)
        for f in g.functions:
            targets = ["interp"] + (["cpu"] if cpu_budget[0] > 0 and pipe in ("", PIPELINES[1]) else [])
            for t in targets:
                if t == "cpu":
                    cpu_budget[0] -= 1
                c = attempt(g.compile, f, t)
                if c is None:
                    continue
                ins = attempt(c.random_inputs, 0)
                if ins is not None:
                    attempt(lambda: c.run(*ins))
    return seen


def test_every_malformed_input_raises_only_ckopt_errors(tmp_path):
    total, errors = 0, {}
    cpu_budget = [60]  # cpu compilations (JIT) to spend; the interpreter runs everything
    for name, data in chunks():
        total += 1
        for k in exercise(name, data, tmp_path, cpu_budget):
            errors[k] = errors.get(k, 0) + 1
    print(total, errors, cpu_budget)
    assert total > 250, total
    assert errors.get("ParseError", 0) > 150, errors
    assert cpu_budget[0] == 0, "the cpu backend saw its share"


def test_every_onnx_fixture_imports_or_raises_onnx_error():
    models = sorted((ROOT / "test/onnx").rglob("*.onnx"))
    assert len(models) > 100
    ok = failed = 0
    for f in models:
        for loss in ["none", "mse"]:
            try:
                m, params = ckopt.import_onnx(f, loss=loss, batch=2)
                ok += 1
            except ckopt.OnnxError as e:
                assert e.diagnostics
                failed += 1
    assert ok > 100
    # Truncated models are errors, not crashes.
    data = (ROOT / "test/onnx/models/cnn/model.onnx").read_bytes()
    for n in range(0, len(data), max(1, len(data) // 97)):
        try:
            ckopt.import_onnx(data[:n])
        except ckopt.OnnxError:
            pass


def test_a_rust_panic_becomes_internal_error_not_panic_exception():
    # The guard every call runs under, driven by a private hook that panics.
    from ckopt import _ckopt

    with pytest.raises(ckopt.InternalError, match="internal error in ckopt .*: the test hook panicked"):
        _ckopt._panic_for_tests()
