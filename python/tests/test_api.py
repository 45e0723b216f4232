"""The package's surface: names, docstrings, stubs, reprs."""

import ast
import inspect
import pathlib

import ckopt
from ckopt import _ckopt

STUBS = pathlib.Path(ckopt.__file__).with_name("_ckopt.pyi")


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_")}


def test_all_is_the_native_modules_public_names():
    # UnsupportedError is the one pure-Python name (the frontends raise it).
    assert set(ckopt.__all__) == public(_ckopt) | {"__version__", "UnsupportedError"}
    assert issubclass(ckopt.UnsupportedError, ckopt.Error)
    assert ckopt.UnsupportedError("aten.cumsum.default", "m.py:3").op == "aten.cumsum.default"
    assert ckopt.__version__ == "0.1.0"
    assert (pathlib.Path(ckopt.__file__).parent / "py.typed").exists()


def test_every_public_name_has_a_docstring():
    missing = []
    for n in public(_ckopt):
        obj = getattr(_ckopt, n)
        if not (obj.__doc__ or "").strip():
            missing.append(n)
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            for m in public(obj):
                if not (getattr(obj, m).__doc__ or "").strip():
                    missing.append(f"{n}.{m}")
    assert not missing, missing


def test_stubs_match_the_module():
    tree = ast.parse(STUBS.read_text())
    top = {}
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            top[node.name] = node
    runtime = public(_ckopt)
    assert set(top) - {"Target", "ArrayLike", "Report", "Curve"} == runtime
    for name, node in top.items():
        if isinstance(node, ast.ClassDef) and not issubclass(getattr(_ckopt, name), BaseException):
            members = {b.name for b in node.body if isinstance(b, ast.FunctionDef) and not b.name.startswith("_")}
            assert members == public(getattr(_ckopt, name)), name


def test_reprs_say_what_an_object_is():
    m = ckopt.gen("mlp", depth=2, width=4, batch=2)
    assert repr(m) == "<ckopt.Module 1 function, 12 ops>"
    assert repr(m.optimize("autodiff")).startswith("<ckopt.Module 2 functions, ")
