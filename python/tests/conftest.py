"""Shared fixtures: the repository, ckopt's command-line tools (the
oracle for JSON and error text), and small models."""

import json
import os
import pathlib
import subprocess

import numpy as np
import pytest

import ckopt

ROOT = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("CKOPT_BIN", ROOT / "target" / "debug"))


def tool(name):
    path = BIN / name
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: build the tools first (make build-debug) or set CKOPT_BIN")
    return str(path)


def run_tool(name, *args, ok=True, cwd=None):
    """Runs a ckopt tool; returns (stdout, stderr). With ok, a failure fails the test."""
    p = subprocess.run([tool(name), *map(str, args)], capture_output=True, text=True, cwd=cwd)
    if ok and p.returncode != 0:
        raise AssertionError(f"{name} {' '.join(map(str, args))} failed ({p.returncode}):\n{p.stderr}")
    if not ok and p.returncode == 0:
        raise AssertionError(f"{name} {' '.join(map(str, args))} succeeded, expected a failure")
    return p.stdout, p.stderr


def cli_json(name, *args):
    out, _ = run_tool(name, *args)
    return json.loads(out)


def close(got, want, tol=1e-4):
    """|got - want| <= tol * max(1, |want|) per element (the repository's cpu-vs-interp rule)."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (got.shape, want.shape)
    bad = np.abs(got - want) > tol * np.maximum(1.0, np.abs(want))
    assert not bad.any(), f"{bad.sum()} elements differ; first at {np.argwhere(bad)[0]}: {got[bad][0]} vs {want[bad][0]}"


@pytest.fixture(scope="session")
def root():
    return ROOT


@pytest.fixture(scope="session")
def mlp():
    """A small mlp: @mlp(%x, %target, %w0, %b0, ...) -> loss."""
    return ckopt.gen("mlp", depth=3, width=8, batch=4)


@pytest.fixture(scope="session")
def mlp_file(tmp_path_factory, mlp):
    path = tmp_path_factory.mktemp("models") / "mlp.ck"
    mlp.save(path)
    return path
