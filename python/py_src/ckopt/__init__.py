"""ckopt: training deep nets with sublinear memory cost, from Python.

ckopt compiles tensor programs written as ck IR (MLIR's generic syntax):
autodiff builds the gradient, in-place rewriting and recomputation (remat)
under a memory budget shrink the training step's memory, memplan places
every value in one arena, and the interpreter, the cpu backend (MLIR/LLVM
JIT) or cuda run it. This package is the embedding API (the Rust crate
``ckopt``) with numpy arrays in and out:

>>> import ckopt, numpy as np
>>> m = ckopt.gen("mlp", depth=4, width=64, batch=32)
>>> g = m.optimize("autodiff,inplace")
>>> [p["peak_bytes"] for p in g.memory_curve("mlp_grad")["points"]]  # doctest: +SKIP
>>> t = ckopt.Trainer(m, "mlp", target="cpu", lr=0.05)
>>> x = np.random.rand(32, 64).astype(np.float32)
>>> loss = t.step(x, x)

Errors are ``ckopt.Error``s; those with located diagnostics are
``ckopt.DiagnosticError``s whose ``str()`` is what ckopt's command-line
tools print. The reference is docs/python.md in the repository.
"""

from ckopt._ckopt import (
    ArgumentError,
    CompileError,
    Compiled,
    Diagnostic,
    DiagnosticError,
    Error,
    GenError,
    InternalError,
    Module,
    OnnxError,
    ParseError,
    PassError,
    RunError,
    Trainer,
    __version__,
    gen,
    import_onnx,
    load,
    parse,
)



class UnsupportedError(Error):
    """An op or construct a frontend cannot translate to ck (raised by
    ``ckopt.torch.compile`` before anything runs): ``.op`` names it (the ATen
    overload, e.g. ``"aten.cumsum.default"``), ``.source`` is the user's
    ``file:line`` where known (else ``None``)."""

    def __init__(self, op, source=None, reason=""):
        self.op = op
        self.source = source
        self.reason = reason
        where = f" at {source}" if source else ""
        why = f": {reason}" if reason else ""
        super().__init__(f"unsupported {op}{where}{why}")


__all__ = [
    "ArgumentError",
    "CompileError",
    "Compiled",
    "Diagnostic",
    "DiagnosticError",
    "Error",
    "GenError",
    "InternalError",
    "Module",
    "OnnxError",
    "ParseError",
    "PassError",
    "RunError",
    "Trainer",
    "UnsupportedError",
    "__version__",
    "gen",
    "import_onnx",
    "load",
    "parse",
]
