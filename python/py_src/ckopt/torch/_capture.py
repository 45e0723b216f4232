"""Capture (torch.export + core-ATen decompositions) and translation to ck.

`TABLE` is the one table from core-ATen op to ck: one emitter per ATen
overload. An emitter receives the translation context, the FX node and its
arguments (ck values, host values, Python constants) and returns the node's
value (a tuple for multi-output ops).

Values that depend only on integer/bool inputs, buffers and constants (index
arithmetic, masks built with arange/full/comparisons, label bookkeeping of
cross_entropy) are *host values*: torch computes them at each call, before
the planned step runs, and an op that reads one receives it as an extra
argument of the ck function (indices and labels as i64 for ck.gather,
ck.take_along and ck.cross_entropy; an i1 tensor for a condition; an
additive 0/-inf mask for attention). Everything the gradient
flows through is ck.
"""

from __future__ import annotations

import dataclasses
import math
import operator
import os
import struct
from typing import Any, Callable

import torch

aten = torch.ops.aten


@dataclasses.dataclass(frozen=True)
class Type:
    """A ck tensor type of the function being built."""

    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        if not self.shape:
            return f"tensor<{self.dtype}>"
        return "tensor<" + "x".join(map(str, self.shape)) + "x" + self.dtype + ">"


class UnsupportedError(Exception):
    """Placeholder replaced by ckopt.UnsupportedError at import (see __init__)."""


def _unsupported(op: str, source: str | None, why: str):
    from ckopt import UnsupportedError as E

    return E(op, source, why)


def f32(v: float) -> str:
    """A float attribute value as ck prints it."""
    v = struct.unpack("<f", struct.pack("<f", float(v)))[0] if math.isfinite(v) else v
    if not math.isfinite(v):
        return "0x%08X : f32" % struct.unpack("<I", struct.pack("<f", v))[0]
    s = repr(v)
    if "e" in s and "." not in s.split("e")[0]:
        a, b = s.split("e")
        s = f"{a}.0e{b}"
    elif "." not in s and "e" not in s:
        s += ".0"
    return s + " : f32"


def ints(xs) -> str:
    return "[" + ", ".join(str(int(x)) for x in xs) + "]"


_TORCH_TO_CK = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16",
                torch.int64: "i64", torch.int32: "i32", torch.bool: "i1"}
CK_TO_TORCH = {v: k for k, v in _TORCH_TO_CK.items()}
# The float dtypes ckopt.torch computes in (ck's f32, bf16, f16).
FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
SUPPORTED = "float32, bfloat16 and float16 (with integer/bool indices and masks)"


def ck_dtype(dt: torch.dtype) -> str:
    """ck's element type of a float dtype ckopt.torch computes in."""
    return _TORCH_TO_CK[dt]


def promote(*dtypes: str) -> str:
    """The float type two ck float types compute in (torch's promotion:
    equal types stay, bf16 with f16 or anything with f32 is f32)."""
    ds = {d for d in dtypes if d is not None}
    if len(ds) == 1:
        return ds.pop()
    return "f32"


@dataclasses.dataclass(frozen=True)
class Val:
    """A ck value of the function being built."""

    name: str
    type: Type

    @property
    def shape(self) -> tuple[int, ...]:
        return self.type.shape


@dataclasses.dataclass(frozen=True)
class Host:
    """A value torch computes at each call (see the module docstring)."""

    node: Any  # torch.fx.Node
    shape: tuple[int, ...]
    dtype: torch.dtype


@dataclasses.dataclass
class HostArg:
    """An extra ck argument fed from a host value (`_host_feed` in
    __init__.py computes it at each call): `kind` is "float" (the value in
    the argument's float type: f32, bf16 or f16), "int" (as int64),
    "int_ignore:I"/"keep:I" (labels with ignore_index I replaced by 0 / the
    0-1 mask of the others), "bool" (a `where` condition as i1),
    "additive"/"causal:L:S" (attention masks, 0 where attended, -inf
    elsewhere, in the scores' type)."""

    name: str
    node: Any
    kind: str
    type: Type


def source_of(node) -> str | None:
    """The user's file:line of an FX node, from its stack trace: the last
    frame outside torch."""
    st = node.meta.get("stack_trace") if node is not None else None
    if not st:
        return None
    torch_dir = os.path.dirname(torch.__file__)
    best = None
    import re

    for m in re.finditer(r'File "([^"]+)", line (\d+)', st):
        f, line = m.group(1), m.group(2)
        if f.startswith(torch_dir) or "/torch/" in f and "site-packages" in f:
            continue
        best = f"{f}:{line}"
    return best


class Builder:
    """Emits the ops of one ck function."""

    def __init__(self):
        self.lines: list[str] = []
        self.types: dict[str, Type] = {}
        self.used: set[str] = set()
        self.hint = "v"
        self.count = 0

    def fresh(self, hint: str | None = None) -> str:
        base = "t_" + (hint or self.hint)
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base)
        name = base
        while name in self.used:
            self.count += 1
            name = f"{base}_{self.count}"
        self.used.add(name)
        return name

    def op(self, kind: str, operands: list[Val], rtype: Type, attrs: str = "") -> Val:
        name = self.fresh()
        ops = ", ".join("%" + o.name for o in operands)
        tys = ", ".join(str(o.type) for o in operands)
        a = f" {{{attrs}}}" if attrs else ""
        self.lines.append(f'%{name} = "ck.{kind}"({ops}){a} : ({tys}) -> {rtype}')
        v = Val(name, rtype)
        self.types[name] = rtype
        return v


class Cx:
    """Translation context: the builder plus helpers that emitters share."""

    def __init__(self, gm, example_device):
        self.b = Builder()
        self.gm = gm
        self.node = None
        self.host_args: list[HostArg] = []
        self._host_arg_of: dict[tuple, HostArg] = {}
        self.dropouts = 0
        self.device = example_device
        # transposes of the last two dims: result name -> operand (_matmul)
        self.swapped: dict[str, Val] = {}
        # the ck function's arguments (casts of them are ck.mirror)
        self.arg_names: set[str] = set()
        # convolutions in f32 (executor="ckopt": its cpu backend's conv2d is f32 only)
        self.f32_conv = False

    # -- errors
    def unsupported(self, why: str, op: str | None = None):
        n = self.node
        return _unsupported(op or (str(n.target) if n is not None else "?"), source_of(n), why)

    # -- values
    def t(self, shape, dtype="f32") -> Type:
        return Type(tuple(int(s) for s in shape), dtype)

    def fill(self, value: float, shape, dtype: str = "f32") -> Val:
        return self.b.op("fill", [], self.t(shape, dtype), f"value = {f32(value)}")

    def out_dtype(self, idx=None) -> str:
        """ck's element type of the current node's result (`idx`: of a
        multi-output node); f32 for what has no float tensor there."""
        val = self.node.meta.get("val")
        if idx is not None:
            val = val[idx]
        if isinstance(val, torch.Tensor) and val.dtype in FLOAT_DTYPES:
            return ck_dtype(val.dtype)
        return "f32"

    def cast(self, v: Val, dtype: str) -> Val:
        """v converted to `dtype` (a ck.cast, nothing when it has it). A cast
        of a function argument (autocast's bf16 copy of an f32 weight) is
        marked ck.mirror: remat recomputes it from the argument before each
        backward read instead of keeping the copy (docs/passes.md, autocast)."""
        if v.type.dtype == dtype:
            return v
        attrs = "ck.mirror" if v.name in self.arg_names else ""
        return self.b.op("cast", [v], self.t(v.shape, dtype), attrs)

    def host_arg(self, h: Host, kind: str, shape, dtype: str = "f32") -> Val:
        key = (h.node, kind, dtype)
        if key not in self._host_arg_of:
            name = self.b.fresh("host_" + h.node.name + ("" if kind == "float" else "_" + kind.split(":")[0]))
            dt = "i64" if kind.startswith("int") else "i1" if kind == "bool" else dtype
            ha = HostArg(name, h.node, kind, self.t(shape, dt))
            self.host_args.append(ha)
            self._host_arg_of[key] = ha
            self.b.types[name] = ha.type
        ha = self._host_arg_of[key]
        return Val(ha.name, ha.type)

    def val(self, x, shape=None, dtype: str | None = None) -> Val:
        """x as a ck value (of `shape` when x is a Python number); with
        `dtype`, a float value converted to it (host values are fed in it,
        numbers filled in it)."""
        if isinstance(x, Val):
            return self.cast(x, dtype) if dtype is not None and x.type.dtype in ("f32", "bf16", "f16") else x
        if isinstance(x, Host):
            if x.dtype is not None and (x.dtype.is_complex or x.dtype.is_floating_point and x.dtype not in FLOAT_DTYPES):
                raise self.unsupported(f"dtype {x.dtype} (ckopt.torch computes {SUPPORTED})")
            return self.host_arg(x, "float", x.shape, dtype or "f32")
        if isinstance(x, (int, float, bool)):
            return self.fill(float(x), shape if shape is not None else (), dtype or "f32")
        raise self.unsupported(f"operand {x!r} is not a tensor")

    def bcast(self, v: Val, shape) -> Val:
        shape = tuple(shape)
        if v.shape == shape:
            return v
        r, k = len(shape), len(v.shape)
        if k > r:
            raise self.unsupported(f"cannot broadcast {v.shape} to {shape}")
        keep_src, dims = [], []
        for i, s in enumerate(v.shape):
            j = r - k + i
            if s == shape[j]:
                keep_src.append(s)
                dims.append(j)
            elif s != 1:
                raise self.unsupported(f"cannot broadcast {v.shape} to {shape}")
        if tuple(keep_src) != v.shape:
            v = self.reshape(v, keep_src)
        return self.b.op("broadcast", [v], self.t(shape, v.type.dtype), f"dims = {ints(dims)}")

    def reshape(self, v: Val, shape) -> Val:
        shape = tuple(int(s) for s in shape)
        if v.shape == shape:
            return v
        return self.b.op("reshape", [v], self.t(shape, v.type.dtype))

    def unary(self, kind: str, x) -> Val:
        v = self.val(x)
        return self.b.op(kind, [v], v.type)

    def scale(self, v: Val, s: float) -> Val:
        if s == 1.0:
            return v
        return self.b.op("scale", [v], v.type, f"value = {f32(s)}")

    def binary(self, kind: str, a, b, shape=None, dtype: str | None = None) -> Val:
        """a `kind` b at `shape`, both converted to `dtype` (default: the
        promotion of the ck operands' types; numbers take it)."""
        if shape is None:
            shapes = [x.shape for x in (a, b) if isinstance(x, (Val, Host))]
            shape = torch.broadcast_shapes(*shapes) if shapes else ()
        shape = tuple(shape)
        if dtype is None:
            dtype = promote(*[x.type.dtype for x in (a, b) if isinstance(x, Val)]) if any(
                isinstance(x, Val) for x in (a, b)) else "f32"
        va = self.bcast(self.val(a, shape, dtype), shape)
        vb = self.bcast(self.val(b, shape, dtype), shape)
        return self.b.op(kind, [va, vb], self.t(shape, dtype))

    def reduce_sum(self, v: Val, dims, keepdim=False) -> Val:
        dims = sorted({d % len(v.shape) for d in dims}) if v.shape else []
        out = tuple(s for i, s in enumerate(v.shape) if i not in dims)
        r = self.b.op("reduce_sum", [v], self.t(out, v.type.dtype), f"dims = {ints(dims)}")
        if keepdim:
            r = self.reshape(r, [1 if i in dims else s for i, s in enumerate(v.shape)])
        return r

    def reduce_max(self, v: Val, dims, keepdim=False) -> Val:
        dims = sorted({d % len(v.shape) for d in dims})
        out = tuple(s for i, s in enumerate(v.shape) if i not in dims)
        r = self.b.op("reduce_max", [v], self.t(out, v.type.dtype), f"dims = {ints(dims)}")
        if keepdim:
            r = self.reshape(r, [1 if i in dims else s for i, s in enumerate(v.shape)])
        return r

    def out_shape(self, idx=None) -> tuple[int, ...]:
        val = self.node.meta.get("val")
        if idx is not None:
            val = val[idx]
        return tuple(int(s) for s in val.shape)


# ---------------------------------------------------------------------------
# The table. Each entry: ATen overload -> emitter(cx, args, kwargs).

TABLE: dict[Any, Callable] = {}


def entry(*targets):
    def reg(fn):
        for t in targets:
            TABLE[t] = fn
        return fn

    return reg


def _unary(kind):
    return lambda cx, a, k: cx.unary(kind, a[0])


for _name, _kind in [
    ("relu", "relu"),
    ("sigmoid", "sigmoid"),
    ("tanh", "tanh"),
    ("exp", "exp"),
    ("log", "log"),
    ("sqrt", "sqrt"),
    ("rsqrt", "rsqrt"),
    ("neg", "neg"),
    ("erf", "erf"),
]:
    TABLE[getattr(aten, _name).default] = _unary(_kind)


def _add_sub(kind):
    def emit(cx, a, k):
        x, y = a[0], a[1]
        alpha = k.get("alpha", a[2] if len(a) > 2 else 1)
        shape, dt = cx.out_shape(), cx.out_dtype()
        if alpha != 1:
            y = y * alpha if isinstance(y, (int, float)) else cx.scale(cx.bcast(cx.val(y, shape, dt), shape), alpha)
        return cx.binary(kind, x, y, shape, dt)

    return emit


TABLE[aten.add.Tensor] = TABLE[aten.add.Scalar] = _add_sub("add")
TABLE[aten.sub.Tensor] = TABLE[aten.sub.Scalar] = _add_sub("sub")


@entry(aten.mul.Tensor, aten.mul.Scalar)
def _mul(cx, a, k):
    x, y = a
    dt = cx.out_dtype()
    if isinstance(y, (int, float)) and isinstance(x, Val):
        return cx.scale(cx.bcast(cx.val(x, None, dt), cx.out_shape()), float(y))
    if isinstance(x, (int, float)) and isinstance(y, Val):
        return cx.scale(cx.bcast(cx.val(y, None, dt), cx.out_shape()), float(x))
    return cx.binary("mul", x, y, cx.out_shape(), dt)


@entry(aten.div.Tensor, aten.div.Scalar)
def _div(cx, a, k):
    x, y = a
    if k.get("rounding_mode") is not None:
        raise cx.unsupported("div with rounding_mode")
    dt = cx.out_dtype()
    if isinstance(y, (int, float)) and isinstance(x, Val):
        return cx.scale(cx.bcast(cx.val(x, None, dt), cx.out_shape()), 1.0 / float(y))
    return cx.binary("div", x, y, cx.out_shape(), dt)


@entry(aten.reciprocal.default)
def _recip(cx, a, k):
    return cx.binary("div", 1.0, a[0], cx.out_shape(), cx.out_dtype())


@entry(aten.maximum.default)
def _maximum(cx, a, k):
    return cx.binary("max", a[0], a[1], cx.out_shape(), cx.out_dtype())


@entry(aten.minimum.default)
def _minimum(cx, a, k):
    s, dt = cx.out_shape(), cx.out_dtype()
    na = cx.unary("neg", cx.bcast(cx.val(a[0], s, dt), s))
    nb = cx.unary("neg", cx.bcast(cx.val(a[1], s, dt), s))
    return cx.unary("neg", cx.binary("max", na, nb, s))


@entry(aten.clamp.default)
def _clamp(cx, a, k):
    s = cx.out_shape()
    lo = a[1] if len(a) > 1 else k.get("min")
    hi = a[2] if len(a) > 2 else k.get("max")
    y = cx.bcast(cx.val(a[0], None, cx.out_dtype()), s)
    if lo is not None:
        y = cx.unary("relu", y) if lo == 0 else cx.binary("max", y, float(lo), s)
    if hi is not None:
        ny = cx.binary("max", cx.unary("neg", y), -float(hi), s)
        y = cx.unary("neg", ny)
    return y


@entry(aten.pow.Tensor_Scalar)
def _pow(cx, a, k):
    x, e = cx.val(a[0]), a[1]
    if e == 1:
        return x
    if e == 2:
        return cx.b.op("mul", [x, x], x.type)
    if e == 3:
        sq = cx.b.op("mul", [x, x], x.type)
        return cx.b.op("mul", [sq, x], x.type)
    if e == 0.5:
        return cx.unary("sqrt", x)
    if e == -0.5:
        return cx.unary("rsqrt", x)
    if e == -1:
        return cx.binary("div", 1.0, x, x.shape)
    raise cx.unsupported(f"pow with exponent {e} (supported: -1, -0.5, 0.5, 1, 2, 3)")


@entry(aten.sum.dim_IntList)
def _sum(cx, a, k):
    x = cx.val(a[0])
    dims = a[1] if len(a) > 1 and a[1] is not None else k.get("dim")
    if not dims:
        dims = list(range(len(x.shape)))
    keep = a[2] if len(a) > 2 else k.get("keepdim", False)
    return cx.reduce_sum(_reduce_input(cx, x, k, "sum"), dims, keep)


def _reduce_input(cx, x, k, name):
    """x converted to a reduction's `dtype=` (torch converts the input
    first); a dtype ckopt does not compute in is an error naming it."""
    dt = k.get("dtype")
    if dt is None:
        return x
    if dt not in FLOAT_DTYPES:
        raise cx.unsupported(f"{name} to dtype {dt} (ckopt.torch computes {SUPPORTED})")
    return cx.cast(x, ck_dtype(dt))


@entry(aten.mean.dim, aten.mean.default)
def _mean(cx, a, k):
    x = cx.val(a[0])
    dims = a[1] if len(a) > 1 and a[1] is not None else k.get("dim")
    if not dims:
        dims = list(range(len(x.shape)))
    keep = a[2] if len(a) > 2 else k.get("keepdim", False)
    n = 1
    for d in {d % max(len(x.shape), 1) for d in dims}:
        n *= x.shape[d]
    return cx.scale(cx.reduce_sum(_reduce_input(cx, x, k, "mean"), dims, keep), 1.0 / n)


@entry(aten.amax.default)
def _amax(cx, a, k):
    x = cx.val(a[0])
    dims = a[1] if len(a) > 1 else k.get("dim", [])
    if not dims:
        dims = list(range(len(x.shape)))
    keep = a[2] if len(a) > 2 else k.get("keepdim", False)
    return cx.reduce_max(x, dims, keep)


@entry(aten.var.correction)
def _var(cx, a, k):
    x = cx.val(a[0])
    dims = a[1] if len(a) > 1 and a[1] is not None else list(range(len(x.shape)))
    corr = k.get("correction", 1)
    keep = k.get("keepdim", False)
    n = 1
    for d in {d % len(x.shape) for d in dims}:
        n *= x.shape[d]
    mean = cx.bcast(cx.scale(cx.reduce_sum(x, dims, True), 1.0 / n), x.shape)
    d = cx.b.op("sub", [x, mean], x.type)
    sq = cx.b.op("mul", [d, d], x.type)
    return cx.scale(cx.reduce_sum(sq, dims, keep), 1.0 / (n - corr))


@entry(aten.permute.default)
def _permute(cx, a, k):
    x = cx.val(a[0])
    r = len(x.shape)
    perm = [p % r for p in a[1]]
    if perm == list(range(r)):
        return x
    y = cx.b.op("transpose", [x], cx.t([x.shape[p] for p in perm], x.type.dtype), f"perm = {ints(perm)}")
    if r >= 2 and perm == list(range(r - 2)) + [r - 1, r - 2]:
        cx.swapped[y.name] = x
    return y


@entry(aten.view.default, aten.unsqueeze.default, aten.squeeze.dims)
def _reshape(cx, a, k):
    return cx.reshape(cx.val(a[0]), cx.out_shape())


@entry(aten.expand.default)
def _expand(cx, a, k):
    return cx.bcast(cx.val(a[0]), cx.out_shape())


@entry(aten.clone.default, aten.alias.default)
def _clone(cx, a, k):
    return cx.val(a[0])


@entry(aten._to_copy.default)
def _to_copy(cx, a, k):
    dt = k.get("dtype")
    x = cx.val(a[0])
    if dt is None or _TORCH_TO_CK.get(dt) == x.type.dtype:
        return x
    if dt not in FLOAT_DTYPES:
        what = "integer/bool values computed from float ones" if dt in _TORCH_TO_CK else f"dtype {dt}"
        raise cx.unsupported(f"conversion of a {CK_TO_TORCH[x.type.dtype]} value to {dt}: ckopt.torch computes {SUPPORTED}, not {what}")
    return cx.cast(x, ck_dtype(dt))


@entry(aten.slice.Tensor)
def _slice(cx, a, k):
    x = cx.val(a[0])
    dim = (a[1] if len(a) > 1 else 0) % len(x.shape)
    start = a[2] if len(a) > 2 and a[2] is not None else 0
    step = a[4] if len(a) > 4 else 1
    if step != 1:
        raise cx.unsupported("slice with a step other than 1")
    n = x.shape[dim]
    start = max(0, min(n, start + n if start < 0 else start))
    shape = cx.out_shape()
    if shape == x.shape:
        return x
    offs = [0] * len(x.shape)
    offs[dim] = start
    return cx.b.op("slice", [x], cx.t(shape, x.type.dtype), f"offsets = {ints(offs)}")


def _split_sizes(cx, x, sizes, dim):
    dim = dim % len(x.shape)
    out, off = [], 0
    for s in sizes:
        shape = list(x.shape)
        shape[dim] = s
        offs = [0] * len(x.shape)
        offs[dim] = off
        out.append(cx.b.op("slice", [x], cx.t(shape, x.type.dtype), f"offsets = {ints(offs)}") if tuple(shape) != x.shape else x)
        off += s
    return tuple(out)


@entry(aten.split_with_sizes.default)
def _split_with_sizes(cx, a, k):
    x = cx.val(a[0])
    return _split_sizes(cx, x, a[1], a[2] if len(a) > 2 else k.get("dim", 0))


@entry(aten.cat.default)
def _cat(cx, a, k):
    dt = cx.out_dtype()
    xs = [cx.val(x, None, dt) for x in a[0]]
    shape = cx.out_shape()
    dim = (a[1] if len(a) > 1 else k.get("dim", 0)) % len(shape)
    xs = [x for x in xs if x.shape[dim] != 0]
    return cx.b.op("concat", xs, cx.t(shape, dt), f"dim = {dim} : i64")


@entry(aten.mm.default, aten.bmm.default)
def _mm(cx, a, k):
    return _matmul(cx, cx.val(a[0]), cx.val(a[1]), cx.out_shape())


def _matmul(cx, x, w, shape) -> Val:
    """x @ w; an operand that is a transpose of the last two dims (a
    Linear's weight.t()) is read untransposed with matmul's transpose flag,
    so no transposed copy is made or kept for the backward."""
    flags = []
    if x.name in cx.swapped:
        x = cx.swapped[x.name]
        flags.append("transpose_a = true")
    if w.name in cx.swapped:
        w = cx.swapped[w.name]
        flags.append("transpose_b = true")
    dt = promote(x.type.dtype, w.type.dtype)
    return cx.b.op("matmul", [cx.cast(x, dt), cx.cast(w, dt)], cx.t(shape, dt), ", ".join(flags))


@entry(aten.addmm.default)
def _addmm(cx, a, k):
    bias, x, w = a[0], cx.val(a[1]), cx.val(a[2])
    beta, alpha = k.get("beta", 1), k.get("alpha", 1)
    shape = cx.out_shape()
    mm = cx.scale(_matmul(cx, x, w, shape), alpha)
    if beta == 0:
        return mm
    dt = cx.out_dtype()
    bv = cx.bcast(cx.val(bias, shape, dt), shape)
    return cx.b.op("add", [cx.cast(mm, dt), cx.scale(bv, beta)], cx.t(shape, dt))


@entry(aten.convolution.default)
def _conv(cx, a, k):
    x, w, b, stride, padding, dilation, transposed, out_pad, groups = a
    x, w = cx.val(x), cx.val(w)
    if len(x.shape) != 4:
        raise cx.unsupported(f"convolution of rank {len(x.shape)} (ckopt has conv2d, NCHW)")
    if transposed:
        raise cx.unsupported("transposed convolution")
    if any(d != 1 for d in dilation):
        raise cx.unsupported(f"dilated convolution (dilation={list(dilation)})")
    shape, dt = cx.out_shape(), cx.out_dtype()
    # groups > 1: grouped and depthwise convolutions (the filter is [F, C/groups, KH, KW]).
    grp = f"groups = {int(groups)} : i64, " if groups != 1 else ""
    # ckopt's cpu backend convolves f32 only: for executor="ckopt" a bf16/f16
    # convolution is an f32 one between casts (the same accumulation in f32,
    # its result rounded to the type)
    cdt = "f32" if cx.f32_conv else dt
    x, w = cx.cast(x, cdt), cx.cast(w, cdt)
    y = cx.cast(cx.b.op("conv2d", [x, w], cx.t(shape, cdt), f"{grp}padding = {ints(padding)}, stride = {ints(stride)}"), dt)
    if b is not None:
        y = cx.b.op("add", [y, cx.b.op("broadcast", [cx.val(b, None, dt)], y.type, "dims = [1]")], y.type)
    return y


def _pool_args(cx, a, k, name):
    x = cx.val(a[0])
    window = list(a[1])
    stride = list(a[2]) if len(a) > 2 and a[2] else window
    padding = list(a[3]) if len(a) > 3 else [0, 0]
    if len(window) == 1:
        window = window * 2
    if len(stride) == 1:
        stride = stride * 2
    if any(p != 0 for p in padding):
        raise cx.unsupported(f"{name} with padding {padding} (ckopt pools without padding)")
    return x, window, stride


@entry(aten.max_pool2d_with_indices.default)
def _max_pool(cx, a, k):
    x, window, stride = _pool_args(cx, a, k, "max_pool2d")
    dilation = a[4] if len(a) > 4 else [1, 1]
    ceil = a[5] if len(a) > 5 else False
    if any(d != 1 for d in dilation) or ceil:
        raise cx.unsupported("max_pool2d with dilation or ceil_mode")
    y = cx.b.op("max_pool2d", [x], cx.t(cx.out_shape(0), x.type.dtype), f"stride = {ints(stride)}, window = {ints(window)}")
    return (y, _NoValue("the indices of max_pool2d_with_indices"))


@entry(aten.avg_pool2d.default)
def _avg_pool(cx, a, k):
    x, window, stride = _pool_args(cx, a, k, "avg_pool2d")
    ceil = a[4] if len(a) > 4 else False
    if ceil or (len(a) > 6 and a[6] is not None):
        raise cx.unsupported("avg_pool2d with ceil_mode or divisor_override")
    return cx.b.op("avg_pool2d", [x], cx.t(cx.out_shape(), x.type.dtype), f"stride = {ints(stride)}, window = {ints(window)}")


@entry(aten._adaptive_avg_pool2d.default)
def _adaptive_avg(cx, a, k):
    x = cx.val(a[0])
    oh, ow = a[1]
    h, w = x.shape[2], x.shape[3]
    if oh == 1 and ow == 1:
        return cx.reshape(cx.scale(cx.reduce_sum(x, [2, 3]), 1.0 / (h * w)), cx.out_shape())
    if h % oh or w % ow:
        raise cx.unsupported(f"adaptive_avg_pool2d from {h}x{w} to {oh}x{ow} (sizes must divide)")
    win = [h // oh, w // ow]
    return cx.b.op("avg_pool2d", [x], cx.t(cx.out_shape(), x.type.dtype), f"stride = {ints(win)}, window = {ints(win)}")


def _norm_dtype(cx, *xs) -> str:
    """The type a normalization computes in: the promotion of its float
    operands (a bf16 input with f32 weights, as autocast leaves layer norm
    on the CPU, computes in f32 like torch's mixed-type kernel; an all-bf16
    one in bf16). Its results are converted to the node's types after."""
    return promote(*[x.type.dtype for x in xs if isinstance(x, Val)])


def _bn_apply(cx, x, mean, rstd, w, b):
    """(x - mean) * rstd * w + b, with per-channel mean/rstd/w/b (shape [C])."""
    c = x.shape[1]
    chan = lambda v: cx.b.op("broadcast", [v], x.type, "dims = [1]")  # noqa: E731
    y = cx.b.op("mul", [cx.b.op("sub", [x, chan(mean)], x.type), chan(rstd)], x.type)
    if w is not None:
        y = cx.b.op("mul", [y, chan(cx.val(w, (c,), x.type.dtype))], x.type)
    if b is not None:
        y = cx.b.op("add", [y, chan(cx.val(b, (c,), x.type.dtype))], x.type)
    return y


@entry(aten._native_batch_norm_legit_functional.default)
def _bn_train(cx, a, k):
    x, w, b, rm, rv, training, momentum, eps = a
    if not training:
        return _bn_eval(cx, [x, w, b, rm, rv, momentum, eps], k)
    dt = _norm_dtype(cx, x, w, b)
    x = cx.val(x, None, dt)
    dims = [0] + list(range(2, len(x.shape)))
    n = 1
    for d in dims:
        n *= x.shape[d]
    c = x.shape[1]
    mean = cx.scale(cx.reduce_sum(x, dims), 1.0 / n)
    d = cx.b.op("sub", [x, cx.b.op("broadcast", [mean], x.type, "dims = [1]")], x.type)
    var = cx.scale(cx.reduce_sum(cx.b.op("mul", [d, d], x.type), dims), 1.0 / n)
    rstd = cx.unary("rsqrt", cx.binary("add", var, float(eps), (c,)))
    y = cx.b.op("mul", [d, cx.b.op("broadcast", [rstd], x.type, "dims = [1]")], x.type)
    if w is not None:
        y = cx.b.op("mul", [y, cx.b.op("broadcast", [cx.val(w, (c,), dt)], x.type, "dims = [1]")], x.type)
    if b is not None:
        y = cx.b.op("add", [y, cx.b.op("broadcast", [cx.val(b, (c,), dt)], x.type, "dims = [1]")], x.type)
    m = float(momentum)
    new_rm = cx.b.op("add", [cx.scale(cx.val(rm, None, dt), 1 - m), cx.scale(mean, m)], mean.type)
    unbiased = cx.scale(var, m * n / max(n - 1, 1))
    new_rv = cx.b.op("add", [cx.scale(cx.val(rv, None, dt), 1 - m), unbiased], mean.type)
    return (y, mean, rstd, new_rm, new_rv)


@entry(aten._native_batch_norm_legit_no_training.default)
def _bn_eval(cx, a, k):
    x, w, b, rm, rv, momentum, eps = a
    dt = _norm_dtype(cx, x, w, b)
    x = cx.val(x, None, dt)
    c = x.shape[1]
    rstd = cx.unary("rsqrt", cx.binary("add", cx.val(rv, None, dt), float(eps), (c,)))
    y = _bn_apply(cx, x, cx.val(rm, None, dt), rstd, w, b)
    return (y, _NoValue("batch_norm's saved mean"), _NoValue("batch_norm's saved rstd"))


@entry(aten.native_layer_norm.default)
def _layer_norm(cx, a, k):
    x, nshape, w, b, eps = a
    dt = _norm_dtype(cx, x, w, b)
    x = cx.val(x, None, dt)
    r, kdims = len(x.shape), len(nshape)
    dims = list(range(r - kdims, r))
    n = 1
    for s in nshape:
        n *= s
    outer = x.shape[: r - kdims]
    to_x = lambda v: cx.b.op("broadcast", [v], x.type, f"dims = {ints(range(r - kdims))}")  # noqa: E731
    mean = cx.scale(cx.reduce_sum(x, dims), 1.0 / n)
    d = cx.b.op("sub", [x, to_x(mean)], x.type)
    var = cx.scale(cx.reduce_sum(cx.b.op("mul", [d, d], x.type), dims), 1.0 / n)
    rstd = cx.unary("rsqrt", cx.binary("add", var, float(eps), outer))
    y = cx.b.op("mul", [d, to_x(rstd)], x.type)
    inner = lambda v: cx.b.op("broadcast", [v], x.type, f"dims = {ints(dims)}")  # noqa: E731
    if w is not None:
        y = cx.b.op("mul", [y, inner(cx.val(w, None, dt))], x.type)
    if b is not None:
        y = cx.b.op("add", [y, inner(cx.val(b, None, dt))], x.type)
    keep = list(outer) + [1] * kdims
    return (y, cx.reshape(mean, keep), cx.reshape(rstd, keep))


def _log_softmax_of(cx, x, dim) -> Val:
    """x - max - log(sum(exp(x - max))) over `dim`. The max is marked
    `ck.stop_gradient`: the result does not depend on the shift, so nothing
    differentiates `reduce_max` (which would keep x for the backward)."""
    dim = dim % len(x.shape)
    out = tuple(s for i, s in enumerate(x.shape) if i != dim)
    mx = cx.b.op("reduce_max", [x], cx.t(out, x.type.dtype), f"dims = [{dim}], ck.stop_gradient")
    back = lambda v: cx.b.op("broadcast", [v], x.type, f"dims = {ints([i for i in range(len(x.shape)) if i != dim])}")  # noqa: E731
    z = cx.b.op("sub", [x, back(mx)], x.type)
    s = cx.reduce_sum(cx.unary("exp", z), [dim])
    return cx.b.op("sub", [z, back(cx.unary("log", s))], x.type)


def _softmax_of(cx, x, dim) -> Val:
    """exp(log_softmax(x)): the backward keeps exp(x - max) (for the sum's
    gradient), the row sums and the result, not a broadcast of the sums."""
    return cx.unary("exp", _log_softmax_of(cx, x, dim))


@entry(aten._softmax.default)
def _softmax(cx, a, k):
    # half_to_float: a bf16/f16 input with an f32 result computes in f32
    return _softmax_of(cx, cx.val(a[0], None, cx.out_dtype()), a[1])


@dataclasses.dataclass(frozen=True)
class LogProbs:
    """`_log_softmax(logits, 1)` read only by `nll_loss_forward` (what
    `cross_entropy` becomes): emitted as one `ck.cross_entropy` of the
    logits there, so no [N, C] log-probabilities are computed or kept."""

    logits: Val


def _fused_cross_entropy(cx, x, dim) -> bool:
    n = cx.node
    return (len(x.shape) == 2 and dim % 2 == 1 and bool(n.users)
            and all(u.target is aten.nll_loss_forward.default and u.args[0] is n and u.args[2] is None
                    and u.args[3] == 1 for u in n.users))


@entry(aten._log_softmax.default)
def _log_softmax(cx, a, k):
    x = cx.val(a[0], None, cx.out_dtype())
    if _fused_cross_entropy(cx, x, a[1]):
        return LogProbs(x)
    return _log_softmax_of(cx, x, a[1])


@entry(aten.scaled_dot_product_attention.default)
def _sdpa(cx, a, k):
    """softmax(q k^T * scale + mask) v, as torch's math path computes it;
    captured undecomposed (the decomposition tests float scores against
    -inf). The mask is a host value added to the scores: 0 where attended,
    -inf elsewhere (is_causal: above the diagonal)."""
    dt = cx.out_dtype()
    q, kk, v = (cx.val(x, None, dt) for x in a[:3])
    mask = a[3] if len(a) > 3 else k.get("attn_mask")
    p = a[4] if len(a) > 4 else k.get("dropout_p", 0.0)
    causal = a[5] if len(a) > 5 else k.get("is_causal", False)
    scale = k.get("scale", a[6] if len(a) > 6 else None)
    if k.get("enable_gqa", False):
        raise cx.unsupported("scaled_dot_product_attention with enable_gqa")
    if p:
        raise cx.unsupported("scaled_dot_product_attention with dropout_p > 0 (use nn.Dropout on the weights)")
    if len(q.shape) < 2 or q.shape[:-2] != kk.shape[:-2] or kk.shape[:-1] != v.shape[:-1]:
        raise cx.unsupported(f"scaled_dot_product_attention of shapes {q.shape}, {kk.shape}, {v.shape} (batch dims must agree)")
    e = q.shape[-1]
    lq, sk = q.shape[-2], kk.shape[-2]
    scale = 1.0 / math.sqrt(e) if scale is None else float(scale)
    st = cx.t(q.shape[:-1] + (sk,), dt)
    scores = cx.scale(cx.b.op("matmul", [q, kk], st, "transpose_b = true"), scale)
    add = None
    if causal:
        if mask is not None:
            raise cx.unsupported("scaled_dot_product_attention with both attn_mask and is_causal")
        add = cx.host_arg(Host(cx.node, (lq, sk), torch.float32), f"causal:{lq}:{sk}", (lq, sk), dt)
    elif isinstance(mask, Host):
        if mask.dtype == torch.bool:
            add = cx.host_arg(mask, "additive", mask.shape, dt)
        else:
            add = cx.host_arg(mask, "float", mask.shape, dt)
    elif isinstance(mask, Val):
        add = cx.cast(mask, dt)
    elif mask is not None:
        raise cx.unsupported(f"attn_mask {mask!r}")
    if add is not None:
        scores = cx.b.op("add", [scores, cx.bcast(add, st.shape)], st)
    w = _softmax_of(cx, scores, -1)
    return cx.b.op("matmul", [w, v], cx.t(cx.out_shape(), dt))


@entry(aten.gelu.default)
def _gelu(cx, a, k):
    x = cx.val(a[0])
    approx = k.get("approximate", a[1] if len(a) > 1 else "none")
    if approx == "tanh":
        x3 = cx.b.op("mul", [cx.b.op("mul", [x, x], x.type), x], x.type)
        inner = cx.scale(cx.b.op("add", [x, cx.scale(x3, 0.044715)], x.type), math.sqrt(2.0 / math.pi))
        t = cx.unary("tanh", inner)
        one = cx.binary("add", t, 1.0, x.shape)
        return cx.scale(cx.b.op("mul", [x, one], x.type), 0.5)
    # 0.5 x (1 + erf(x / sqrt 2)) = (s + s erf(s)) / sqrt 2 with s = x / sqrt 2:
    # the backward keeps s and erf(s), not x as well
    sx = cx.scale(x, 1.0 / math.sqrt(2.0))
    one = cx.binary("add", cx.unary("erf", sx), 1.0, x.shape)
    return cx.scale(cx.b.op("mul", [sx, one], x.type), 1.0 / math.sqrt(2.0))


@entry(aten.native_dropout.default)
def _dropout(cx, a, k):
    x = cx.val(a[0])
    p, train = float(a[1]), a[2]
    if not train or p == 0.0:
        return (x, _NoValue("dropout's mask"))
    seed = cx.dropouts
    cx.dropouts += 1
    step = cx.step_arg()
    # The step key is an integer-valued f32 that a 2-byte type would round:
    # a bf16/f16 value is dropped in f32 (exact both ways) and converted back.
    y = cx.b.op("dropout", [cx.cast(x, "f32"), step], cx.t(x.shape, "f32"), f"rate = {f32(p)}, seed = {seed} : i64")
    return (cx.cast(y, x.type.dtype), _NoValue("dropout's mask"))


@entry(aten.embedding.default)
def _embedding(cx, a, k):
    w, idx = cx.val(a[0]), a[1]
    if not isinstance(idx, Host):
        raise cx.unsupported("embedding indices computed from float values")
    ids = cx.host_arg(idx, "int", idx.shape)
    return cx.b.op("gather", [w, ids], cx.t(cx.out_shape(), w.type.dtype), "axis = 0 : i64")


@entry(aten.gather.default)
def _gather(cx, a, k):
    x, dim, idx = cx.val(a[0]), a[1], a[2]
    if not isinstance(idx, Host):
        raise cx.unsupported("gather with indices computed from float values")
    dim = dim % len(x.shape)
    ids = cx.host_arg(idx, "int", idx.shape)
    return cx.b.op("take_along", [x, ids], cx.t(cx.out_shape(), x.type.dtype), f"axis = {dim} : i64")


@entry(aten.nll_loss_forward.default)
def _nll_loss(cx, a, k):
    x, target, weight, reduction, ignore = a
    if weight is not None:
        raise cx.unsupported("nll_loss/cross_entropy with class weights")
    if reduction not in (1, 2):
        raise cx.unsupported("nll_loss/cross_entropy with reduction='none'")
    if not isinstance(target, Host):
        raise cx.unsupported("labels computed from float values")
    ignore = int(ignore)
    total = _NoValue("nll_loss's total_weight")
    if isinstance(x, LogProbs):
        labels = cx.host_arg(target, "int", target.shape)
        return (cx.b.op("cross_entropy", [x.logits, labels], cx.t(()), f"ignore_index = {ignore} : i64"), total)
    x = cx.val(x)
    if len(x.shape) != 2:
        raise cx.unsupported(f"nll_loss of rank {len(x.shape)} (ckopt.torch takes [N, C])")
    n = x.shape[0]
    # the log-probability of each kept row's label, summed (and averaged),
    # in f32 (a bf16 count of rows is exact only up to 256)
    safe = cx.host_arg(target, f"int_ignore:{ignore}", (n, 1))
    keep = cx.host_arg(target, f"keep:{ignore}", (n,))
    picked = cx.reshape(cx.b.op("take_along", [x, safe], cx.t((n, 1), x.type.dtype), "axis = 1 : i64"), (n,))
    picked = cx.cast(picked, "f32")
    s = cx.unary("neg", cx.reduce_sum(cx.b.op("mul", [picked, keep], keep.type), [0]))
    if reduction == 1:
        s = cx.b.op("div", [s, cx.reduce_sum(keep, [0])], s.type)
    return (s, total)


@entry(aten.where.self)
def _where(cx, a, k):
    c, x, y = a
    if not isinstance(c, Host):
        raise cx.unsupported("where with a condition computed from float values")
    shape, dt = cx.out_shape(), cx.out_dtype()
    # ck.select of the host condition (an i1 argument at its own shape,
    # broadcast in ck); host branches become float arguments, numbers fills.
    cond = cx.bcast(cx.host_arg(c, "bool", c.shape), shape)

    def branch(v):
        return cx.bcast(cx.val(v, (), dt), shape)

    return cx.b.op("select", [cond, branch(x), branch(y)], cx.t(shape, dt))


@entry(aten.full_like.default)
def _full_like(cx, a, k):
    if k.get("dtype") not in (None, *FLOAT_DTYPES):
        raise cx.unsupported(f"full_like of dtype {k.get('dtype')} (ckopt.torch computes {SUPPORTED})")
    return cx.fill(float(a[1]), cx.out_shape(), cx.out_dtype())


@dataclasses.dataclass(frozen=True)
class _NoValue:
    """An output ckopt does not compute (indices, masks); using it is an error."""

    what: str


# Host ops: evaluated by torch at each call when all their tensor inputs
# are host values (see the module docstring).
HOST_OK = {
    aten.ne.Scalar, aten.ne.Tensor, aten.eq.Scalar, aten.eq.Tensor, aten.lt.Scalar, aten.lt.Tensor,
    aten.le.Scalar, aten.le.Tensor, aten.gt.Scalar, aten.gt.Tensor, aten.ge.Scalar, aten.ge.Tensor,
    aten.logical_and.default, aten.logical_or.default, aten.logical_not.default, aten.where.self,
    aten.scalar_tensor.default, aten.full.default, aten.arange.start_step, aten.arange.default,
    aten.arange.start, aten.unsqueeze.default, aten.squeeze.dims, aten.squeeze.dim, aten.view.default,
    aten.expand.default, aten.sum.dim_IntList, aten.sum.default, aten._to_copy.default, aten.add.Tensor,
    aten.sub.Tensor, aten.mul.Tensor, aten.add.Scalar, aten.mul.Scalar, aten.div.Tensor, aten.clone.default,
    aten.permute.default, aten.slice.Tensor, aten.any.dim, aten.all.dim, aten.ones.default, aten.zeros.default,
    aten.full_like.default, aten.zeros_like.default, aten.ones_like.default, aten.bitwise_and.Tensor,
    aten.bitwise_or.Tensor, aten.bitwise_not.default, aten.reshape.default, aten._unsafe_view.default,
    aten.neg.default, aten.remainder.Scalar, aten.floor_divide.default, aten.index_select.default,
    aten.cat.default, aten.alias.default, aten.lift_fresh_copy.default, operator.getitem,
}


# Views evaluated on the host even when their input is a float buffer (a
# slice of a mask buffer); other float math on buffers stays in ck.
HOST_VIEW = {aten.alias.default, aten.slice.Tensor, aten.view.default, aten.unsqueeze.default,
             aten.expand.default, aten.permute.default, aten.squeeze.dims, aten.clone.default}

# Nodes without a value that torch.export leaves (checks of metadata it
# already guarantees for the static example shapes).
IGNORED = {aten._assert_tensor_metadata.default, aten._assert_scalar.default}
