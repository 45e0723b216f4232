#!/usr/bin/env python3
"""Writes interp/tests/lowp/cases.json: the reference results of every float
ck op on bf16 and f16 operands, computed by an implementation independent of
ckopt (numpy in float32, then rounded to the low type by ml_dtypes' bfloat16
or numpy's float16 casts, which round to nearest even).

The rule being checked (docs/ir.md, element types): an op whose result is
bf16/f16 computes in f32 from its (exactly representable) operands and
rounds its result once; matmul, conv and reductions accumulate in f32.

Regenerate (needs numpy and ml_dtypes; the test does not):
    uv run --with numpy --with ml_dtypes python3 interp/tests/lowp/gen_lowp.py
"""
import json
import math
import os

import ml_dtypes
import numpy as np

rng = np.random.default_rng(20261202)
LOW = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}
cases = []


def low(a, dt):
    """`a` rounded to the low type, returned as float32 values."""
    return np.asarray(a, dtype=np.float32).astype(LOW[dt]).astype(np.float32)


def bits(a, dt):
    return [int(b) for b in np.asarray(a, dtype=np.float32).astype(LOW[dt]).view(np.uint16).ravel()]


def rand(shape, dt, lo=-2.0, hi=2.0):
    return low(rng.uniform(lo, hi, size=shape), dt)


NP = {"f32": np.float32, "i64": np.int64, "i32": np.int32, "i1": np.bool_}


def raw(a, dt):
    """The elements' bit patterns (floats) or values (integers, i1 as 0/1)."""
    if dt in LOW:
        return bits(a, dt)
    a = np.asarray(a, dtype=NP[dt])
    if dt == "f32":
        return [int(b) for b in a.view(np.uint32).ravel()]
    return [int(v) for v in a.astype(np.int64).ravel()]


def tensor(a, dt):
    return {"shape": list(np.shape(a)), "dtype": dt, "bits": raw(a, dt)}


def mixed(op, dt, inputs, result, attrs=None, ulps=0):
    """A case whose operands and result have their own element types:
    `inputs` and `result` are (array, dtype) pairs."""
    cases.append({
        "op": op,
        "dtype": dt,
        "attrs": attrs or {},
        "inputs": [tensor(a, d) for a, d in inputs],
        "result": tensor(*result),
        "ulps": ulps,
    })


def case(op, dt, inputs, result, attrs=None, ulps=0):
    """`ulps`: how many low-type ulps the result may differ by (0 for exact
    arithmetic; 1 where numpy's float32 math or summation order may differ
    from ckopt's by an f32 ulp before rounding)."""
    cases.append({
        "op": op,
        "dtype": dt,
        "attrs": attrs or {},
        "inputs": [{"shape": list(x.shape), "bits": bits(x, dt)} for x in inputs],
        "result": {"shape": list(np.shape(result)), "bits": bits(result, dt)},
        "ulps": ulps,
    })


M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    """SplitMix64's finalizer (the published constants)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def dropout(x, rate, seed):
    """ck.dropout without a step key, as docs/ir.md defines its mask:
    keep element i when mix64(key ^ i)'s top 24 bits / 2^24 >= rate,
    key = mix64(seed + GOLDEN)."""
    key = mix64((seed + GOLDEN) & M64)
    keep = np.array([((mix64(key ^ i) >> 40) / 16777216.0) >= rate for i in range(x.size)]).reshape(x.shape)
    return np.where(keep, x / f32(1 - np.float32(rate)), f32(0))


def f32(x):
    return np.asarray(x, dtype=np.float32)


def erf(x):
    return f32(np.vectorize(math.erf)(x.astype(np.float64)))


def conv2d(x, w, s, p):
    n, c, h, wd = x.shape
    f, _, kh, kw = w.shape
    xp = np.zeros((n, c, h + 2 * p[0], wd + 2 * p[1]), np.float32)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd] = x
    oh, ow = (h + 2 * p[0] - kh) // s[0] + 1, (wd + 2 * p[1] - kw) // s[1] + 1
    y = np.zeros((n, f, oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw]
            y[:, :, i, j] = np.einsum("nchw,fchw->nf", win, w)
    return y


def conv2d_grad_input(dy, w, xshape, s, p):
    n, c, h, wd = xshape
    f, _, kh, kw = w.shape
    dxp = np.zeros((n, c, h + 2 * p[0], wd + 2 * p[1]), np.float32)
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            dxp[:, :, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw] += np.einsum("nf,fchw->nchw", dy[:, :, i, j], w)
    return dxp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd]


def conv2d_grad_filter(x, dy, wshape, s, p):
    n, c, h, wd = x.shape
    f, _, kh, kw = wshape
    xp = np.zeros((n, c, h + 2 * p[0], wd + 2 * p[1]), np.float32)
    xp[:, :, p[0]:p[0] + h, p[1]:p[1] + wd] = x
    dw = np.zeros(wshape, np.float32)
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            win = xp[:, :, i * s[0]:i * s[0] + kh, j * s[1]:j * s[1] + kw]
            dw += np.einsum("nf,nchw->fchw", dy[:, :, i, j], win)
    return dw


def pool_windows(shape, k, s):
    oh, ow = (shape[2] - k[0]) // s[0] + 1, (shape[3] - k[1]) // s[1] + 1
    return oh, ow


def max_pool(x, k, s):
    oh, ow = pool_windows(x.shape, k, s)
    y = np.zeros(x.shape[:2] + (oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = x[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].max(axis=(2, 3))
    return y


def avg_pool(x, k, s):
    oh, ow = pool_windows(x.shape, k, s)
    y = np.zeros(x.shape[:2] + (oh, ow), np.float32)
    for i in range(oh):
        for j in range(ow):
            y[:, :, i, j] = x[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]].mean(axis=(2, 3))
    return y


def max_pool_grad(x, dy, k, s):
    dx = np.zeros_like(x)
    for n in range(x.shape[0]):
        for c in range(x.shape[1]):
            for i in range(dy.shape[2]):
                for j in range(dy.shape[3]):
                    win = x[n, c, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]]
                    a, b = np.unravel_index(np.argmax(win), win.shape)  # first maximum, row-major
                    dx[n, c, i * s[0] + a, j * s[1] + b] += dy[n, c, i, j]
    return dx


def avg_pool_grad(dy, xshape, k, s):
    dx = np.zeros(xshape, np.float32)
    for i in range(dy.shape[2]):
        for j in range(dy.shape[3]):
            dx[:, :, i * s[0]:i * s[0] + k[0], j * s[1]:j * s[1] + k[1]] += dy[:, :, i:i + 1, j:j + 1] / np.float32(k[0] * k[1])
    return dx


for dt in ("bf16", "f16"):
    x = rand((4, 6), dt)
    pos = rand((4, 6), dt, 0.05, 4.0)
    y = rand((4, 6), dt)
    case("neg", dt, [x], -x)
    case("relu", dt, [x], np.maximum(x, 0))
    case("exp", dt, [x], np.exp(x), ulps=1)
    case("log", dt, [pos], np.log(pos), ulps=1)
    case("tanh", dt, [x], np.tanh(x), ulps=1)
    case("sigmoid", dt, [x], f32(1) / (f32(1) + np.exp(-x)), ulps=1)
    case("sqrt", dt, [pos], np.sqrt(pos), ulps=1)
    case("rsqrt", dt, [pos], f32(1) / np.sqrt(pos), ulps=1)
    case("erf", dt, [x], erf(x), ulps=1)
    case("add", dt, [x, y], x + y)
    case("sub", dt, [x, y], x - y)
    case("mul", dt, [x, y], x * y)
    case("div", dt, [x, pos], x / pos)
    case("max", dt, [x, y], np.maximum(x, y))
    case("scale", dt, [x], f32(0.3) * x, attrs={"value": 0.3})
    case("relu_grad", dt, [x, y], np.where(x > 0, y, 0))
    case("reduce_sum", dt, [x], x.sum(axis=1), attrs={"dims": [1]}, ulps=1)
    case("reduce_sum", dt, [x], x.sum(axis=(0, 1)), attrs={"dims": [0, 1]}, ulps=1)
    case("reduce_max", dt, [x], x.max(axis=0), attrs={"dims": [0]})
    case("transpose", dt, [x], x.T, attrs={"perm": [1, 0]})
    case("broadcast", dt, [x[0]], np.broadcast_to(x[0], (3, 6)), attrs={"dims": [1]})
    case("concat", dt, [x, y], np.concatenate([x, y], axis=1), attrs={"dim": 1})
    case("slice", dt, [x], x[1:3, 2:5], attrs={"offsets": [1, 2]})
    case("reshape", dt, [x], x.reshape(3, 8))
    a, b = rand((2, 5, 16), dt), rand((2, 16, 3), dt)
    case("matmul", dt, [a, b], a @ b, ulps=1)
    bt = rand((2, 3, 16), dt)
    case("matmul", dt, [a, bt], a @ bt.transpose(0, 2, 1), attrs={"transpose_b": True}, ulps=1)
    at = rand((2, 16, 5), dt)
    case("matmul", dt, [at, b], at.transpose(0, 2, 1) @ b, attrs={"transpose_a": True}, ulps=1)
    img, w = rand((2, 3, 7, 7), dt), rand((4, 3, 3, 3), dt)
    s, p = (2, 2), (1, 1)
    yc = conv2d(img, w, s, p)
    case("conv2d", dt, [img, w], yc, attrs={"stride": list(s), "padding": list(p)}, ulps=1)
    dy = rand(yc.shape, dt)
    case("conv2d_grad_input", dt, [dy, w], conv2d_grad_input(dy, w, img.shape, s, p), attrs={"stride": list(s), "padding": list(p)}, ulps=1)
    case("conv2d_grad_filter", dt, [img, dy], conv2d_grad_filter(img, dy, w.shape, s, p), attrs={"stride": list(s), "padding": list(p)}, ulps=1)
    px = rand((2, 2, 6, 6), dt)
    k, st = (3, 3), (2, 2)
    ym = max_pool(px, k, st)
    case("max_pool2d", dt, [px], ym, attrs={"window": list(k), "stride": list(st)})
    case("avg_pool2d", dt, [px], avg_pool(px, k, st), attrs={"window": list(k), "stride": list(st)}, ulps=1)
    pdy = rand(ym.shape, dt)
    case("max_pool2d_grad", dt, [px, pdy], max_pool_grad(px, pdy, k, st), attrs={"window": list(k), "stride": list(st)}, ulps=1)
    case("avg_pool2d_grad", dt, [pdy], avg_pool_grad(pdy, px.shape, k, st), attrs={"window": list(k), "stride": list(st)}, ulps=1)
    case("fill", dt, [], np.full((2, 3), 0.1, np.float32), attrs={"value": 0.1})
    case("dropout", dt, [x], dropout(x, 0.25, 7), attrs={"rate": 0.25, "seed": 7})

# Ops whose operands and result differ in element type (issue 19's ops on
# low-precision data; ck.cast between every pair of float and integer types).
for dt in ("bf16", "f16"):
    other = "f16" if dt == "bf16" else "bf16"
    x, y = rand((4, 6), dt), rand((4, 6), dt)
    # f32 values: random ones, and exact ties between two low neighbours
    # (round to nearest even decides them).
    xf = rng.uniform(-3, 3, size=(64,)).astype(np.float32)
    lo_ = low(xf, dt)
    nxt = np.nextafter(lo_.astype(LOW[dt]), LOW[dt](np.inf)).astype(np.float32)
    ties = ((lo_.astype(np.float64) + nxt.astype(np.float64)) / 2).astype(np.float32)
    for src in (xf, ties):
        mixed("cast", dt, [(src, "f32")], (low(src, dt), dt))
    mixed("cast", dt, [(x, dt)], (x, "f32"))
    mixed("cast", dt, [(x, dt)], (low(x, other), other))
    ints = np.array([0, 1, -1, 255, 256, 257, 2049, -4097, 65519, 12345], np.int64)
    mixed("cast", dt, [(ints, "i64")], (low(ints.astype(np.float32), dt), dt))
    mixed("cast", dt, [(x * 3, dt)], (np.trunc(low(x * 3, dt)).astype(np.int64), "i64"))
    mixed("cast", dt, [(x * 3, dt)], (np.trunc(low(x * 3, dt)).astype(np.int32), "i32"))
    mixed("cast", dt, [(x, dt)], (x != 0, "i1"))
    c = rng.uniform(size=(4, 6)) < 0.5
    mixed("select", dt, [(c, "i1"), (x, dt), (y, dt)], (np.where(c, x, y), dt))
    for name, fn in (("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal), ("gt", np.greater), ("ge", np.greater_equal)):
        yy = np.where(rng.uniform(size=(4, 6)) < 0.3, x, y)
        mixed(name, dt, [(x, dt), (yy, dt)], (fn(x, yy), "i1"))
    table = rand((5, 3), dt)
    idx = np.array([[4, 0], [2, 2]], np.int64)
    mixed("gather", dt, [(table, dt), (idx, "i64")], (table[idx], dt), attrs={"axis": 0})
    along = np.array([[2, 0, 1], [0, 0, 2], [1, 2, 2], [0, 1, 0], [2, 2, 2]], np.int32)
    mixed("take_along", dt, [(table, dt), (along, "i32")], (np.take_along_axis(table, along, axis=1), dt), attrs={"axis": 1})

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.json")
with open(out, "w") as f:
    json.dump({"generator": "interp/tests/lowp/gen_lowp.py", "numpy": np.__version__, "ml_dtypes": ml_dtypes.__version__, "cases": cases}, f, separators=(",", ":"))
    f.write("\n")
print(f"wrote {len(cases)} cases to {out}")
