"""The two executors of a planned gradient function's halves.

ckopt cuts the planned `@f_grad` at its seed into a forward and a backward
(`ckopt.Module.split_gradient`, docs/torch.md): the forward returns the loss,
the loss function's other results, then the values the plan keeps; the
backward takes the arguments it reads, the kept values and the loss's
gradient `dy`, and returns one gradient per differentiated argument. Here
each half is read through `Module.ops` (op kind, operands, result, type,
attributes) and run:

`executor="aten"` turns each half into Python source once (one torch call
per ck op, `del` where the value dies, ATen's in-place variant where
`inplace` marked the op and the buffer has no other live alias);
`executor="ckopt"` compiles each half with ckopt's cpu backend.
"""

from __future__ import annotations

import dataclasses
import struct
import threading

import torch

_INPLACE_FN = {  # ck op -> torch function taking out=
    "add": "torch.add", "sub": "torch.sub", "mul": "torch.mul", "div": "torch.div",
    "relu": "torch.relu_", "neg": "torch.neg", "exp": "torch.exp", "tanh": "torch.tanh",
    "sigmoid": "torch.sigmoid", "sqrt": "torch.sqrt", "rsqrt": "torch.rsqrt", "log": "torch.log",
    "erf": "torch.erf",
}
_VIEW_OPS = {"reshape", "transpose", "broadcast", "slice"}
_DT = {"f32": "torch.float32", "i64": "torch.int64", "i32": "torch.int32", "i1": "torch.bool",
       "bf16": "torch.bfloat16", "f16": "torch.float16"}

_GOLDEN = 0x9E3779B97F4A7C15
_M1, _M2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _s64(u: int) -> int:
    u &= (1 << 64) - 1
    return u - (1 << 64) if u >= 1 << 63 else u


def _mix64_py(z: int) -> int:
    m = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * _M1) & m
    z = ((z ^ (z >> 27)) * _M2) & m
    return z ^ (z >> 31)


def _srl(z: torch.Tensor, s: int) -> torch.Tensor:
    return (z >> s) & ((1 << (64 - s)) - 1)


def _mix64_t(z: torch.Tensor) -> torch.Tensor:
    z = (z ^ _srl(z, 30)) * _s64(_M1)
    z = (z ^ _srl(z, 27)) * _s64(_M2)
    return z ^ _srl(z, 31)


def dropout(x: torch.Tensor, rate: float, seed: int, step: torch.Tensor | None) -> torch.Tensor:
    """ck.dropout in torch: the mask of docs/ir.md (SplitMix64 of the seed, the
    step key's f32 bits and the flat index), so the aten executor, ckopt's
    backends and the interpreter drop the same elements."""
    m = (1 << 64) - 1
    key = _mix64_py((seed + _GOLDEN) & m)
    if step is not None:
        bits = struct.unpack("<I", struct.pack("<f", float(step)))[0]
        key = _mix64_py(key ^ ((bits * _GOLDEN) & m))
    idx = torch.arange(x.numel(), dtype=torch.int64, device=x.device)
    h = _mix64_t(idx ^ _s64(key))
    u = _srl(h, 40).to(torch.float32) * (1.0 / 16777216.0)
    keep = (u >= rate).reshape(x.shape)
    return torch.where(keep, x / (1.0 - rate), torch.zeros((), dtype=x.dtype, device=x.device))


@dataclasses.dataclass
class Split:
    """ckopt's split of the planned gradient (Module.split_gradient)."""

    module: object  # ckopt.Module with the two halves
    forward: str
    backward: str
    n_aux: int
    n_kept: int
    bwd_arg_idx: list[int]  # indices of the gradient's arguments the backward reads
    wrt: list[int]  # argument indices that get gradients, in the backward's result order


def split(planned, fname: str, gname: str) -> Split:
    d = planned.split_gradient(fname, gname)
    return Split(d["module"], d["forward"], d["backward"], d["n_aux"], d["n_kept"], list(d["backward_args"]), list(d["wrt"]))


@dataclasses.dataclass
class Fn:
    """One function's structure (Module.ops): values are numbers."""

    args: list[int]
    ops: list[dict]
    results: list[int]
    types: dict[int, tuple[tuple[int, ...], str]]  # value -> (shape, dtype)


def structure(module, name: str) -> Fn:
    d = module.ops(name)
    types = {a["value"]: (tuple(a["shape"]), a["dtype"]) for a in d["args"]}
    for op in d["ops"]:
        if op["result"] is not None:
            types[op["result"]] = (tuple(op["shape"]), op["dtype"])
    return Fn([a["value"] for a in d["args"]], d["ops"], list(d["results"]), types)


# ---------------------------------------------------------------------------
# aten executor: Python source per schedule


def _expr(op: dict, a: list[str], types: dict, out: str | None) -> str:
    k, at = op["kind"], op["attrs"]
    shape = tuple(op["shape"]) if op["result"] is not None else ()
    o = f", out={out}" if out else ""
    if k in ("neg", "exp", "log", "tanh", "sigmoid", "sqrt", "rsqrt", "erf"):
        return f"torch.{k}({a[0]}{o})"
    if k == "relu":
        return f"torch.relu_({out})" if out else f"torch.relu({a[0]})"
    if k in ("add", "sub", "mul", "div"):
        return f"torch.{k}({a[0]}, {a[1]}{o})"
    if k == "max":
        return f"torch.fmax({a[0]}, {a[1]}{o})"
    if k == "scale":
        return f"torch.mul({a[0]}, {float(at['value'])!r}{o})"
    if k == "fill":  # a scalar expanded (a view: no bytes); never written in place
        full = f"torch.full((), {float(at['value'])!r}, dtype={_DT[op['dtype']]}, device=_dev)"
        return full if not shape else f"{full}.expand({shape!r})"
    if k == "select":
        return f"torch.where({a[0]}, {a[1]}, {a[2]})"
    if k == "cast":  # float <-> float rounds to nearest even, as ck.cast
        return f"{a[0]}.to({_DT[op['dtype']]})"
    if k == "relu_grad":
        return f"torch.ops.aten.threshold_backward({a[1]}, {a[0]}, 0)"
    if k == "broadcast":
        dims = at["dims"]
        src = types[op["operands"][0]][0]
        mid = [1] * len(shape)
        for i, d in enumerate(dims):
            mid[d] = src[i]
        return f"{a[0]}.reshape({tuple(mid)!r}).expand({shape!r})"
    if k == "reduce_sum":
        if not at["dims"]:
            return a[0]
        return f"torch.sum({a[0]}, {list(at['dims'])!r})"
    if k == "reduce_max":
        if not at["dims"]:
            return a[0]
        return f"torch.amax({a[0]}, {list(at['dims'])!r})"
    if k == "transpose":
        return f"{a[0]}.permute({list(at['perm'])!r})"
    if k == "reshape":
        return f"{a[0]}.reshape({shape!r})"
    if k == "slice":
        idx = ", ".join(f"{off}:{off + s}" for off, s in zip(at["offsets"], shape))
        return f"{a[0]}[{idx}]"
    if k == "concat":
        return f"torch.cat([{', '.join(a)}], {int(at['dim'])})"
    if k == "matmul":
        x = f"{a[0]}.mT" if at.get("transpose_a") else a[0]
        y = f"{a[1]}.mT" if at.get("transpose_b") else a[1]
        return f"torch.matmul({x}, {y}{o})"
    if k in _WINDOW_OPS:
        w = list(at.get("window", []))
        st = list(at.get("stride", w or [1, 1]))
        p = list(at.get("padding", [0, 0]))
        return _WINDOW_OPS[k].format(*a, s=st, p=p, w=w, shape=shape, g=int(at.get("groups", 1)))
    if k == "gather":
        ax = int(at["axis"])
        return f"torch.index_select({a[0]}, {ax}, {a[1]}.reshape(-1)).reshape({shape!r})"
    if k == "gather_grad":
        ax = int(at["axis"])
        flat = shape[:ax] + (-1,) + shape[ax + 1 :]
        return f"torch.zeros({shape!r}, dtype={_DT[op['dtype']]}, device=_dev).index_add_({ax}, {a[0]}.reshape(-1), {a[1]}.reshape({flat!r}))"
    if k == "take_along":
        return f"torch.gather({a[0]}, {int(at['axis'])}, {a[1]})"
    if k == "take_along_grad":
        return f"torch.zeros({shape!r}, dtype={_DT[op['dtype']]}, device=_dev).scatter_add_({int(at['axis'])}, {a[0]}, {a[1]})"
    if k == "cross_entropy":  # f32 of any float logits (ck.cross_entropy's loss is f32)
        x = a[0] if types[op["operands"][0]][1] == "f32" else f"{a[0]}.float()"
        return f"torch.nn.functional.cross_entropy({x}, {a[1]}, ignore_index={int(at.get('ignore_index', -100))})"
    if k == "cross_entropy_grad":
        return f"_cross_entropy_grad({a[0]}, {a[1]}, {a[2]}, {int(at.get('ignore_index', -100))})"
    if k == "dropout":
        step = a[1] if len(a) > 1 else "None"
        return f"_dropout({a[0]}, {float(at['rate'])!r}, {int(at['seed'])}, {step})"
    # Anything else (e.g. a ck.constant from a user's own pipeline=) has no
    # torch call here: an error before anything runs, never a wrong result.
    from ckopt import UnsupportedError

    raise UnsupportedError(f"ck.{k}", None, "no torch call for this op in the aten executor (use executor='ckopt')")


# Convolution and pooling: torch calls with the op's stride/padding/window
# (and the convolutions' groups, dilation 1).
_WINDOW_OPS = {
    "conv2d": "torch.conv2d({0}, {1}, None, {s!r}, {p!r}, 1, {g})",
    "conv2d_grad_input": "torch.nn.grad.conv2d_input({shape!r}, {1}, {0}, {s!r}, {p!r}, 1, {g})",
    "conv2d_grad_filter": "torch.nn.grad.conv2d_weight({0}, {shape!r}, {1}, {s!r}, {p!r}, 1, {g})",
    "max_pool2d": "torch.max_pool2d({0}, {w!r}, {s!r})",
    "max_pool2d_grad": "_maxpool_grad({0}, {1}, {w!r}, {s!r})",
    "avg_pool2d": "torch.nn.functional.avg_pool2d({0}, {w!r}, {s!r})",
    "avg_pool2d_grad": "torch.ops.aten.avg_pool2d_backward({0}, _empty({shape!r}, {0}.dtype), {w!r}, {s!r}, [0, 0], False, True, None)",
}


def _cross_entropy_grad(x, labels, dy, ignore):
    """ck.cross_entropy_grad: (softmax - onehot) * dy / count on kept rows,
    0 on ignored ones, in one [N, C] buffer; computed in f32 and rounded
    once to the logits' type (bf16/f16)."""
    keep = labels != ignore
    g = torch.softmax(x, 1, dtype=torch.float32)
    rows = torch.arange(x.shape[0], device=x.device)
    g[rows, torch.where(keep, labels, 0)] -= 1.0
    g.mul_((keep.to(torch.float32) * (dy.to(torch.float32) / keep.sum())).unsqueeze(1))
    return g if x.dtype == torch.float32 else g.to(x.dtype)


def _maxpool_grad(x, dy, window, stride):
    _, idx = torch.ops.aten.max_pool2d_with_indices(x, window, stride)
    return torch.ops.aten.max_pool2d_with_indices_backward(dy, x, window, stride, [0, 0], [1, 1], False, idx)


def gen_schedule(name: str, fn: Fn, from_list: bool = False) -> str:
    """Python source of one function: `def name(args): ...; return (results)`.
    With from_list, the function takes one list of the arguments and empties
    it, so no caller's reference keeps a value alive past its last use."""
    args, body, results, types = fn.args, fn.ops, fn.results, fn.types
    py = lambda v: f"v{v}"  # noqa: E731
    last: dict[int, int] = {}
    for i, op in enumerate(body):
        for o in op["operands"]:
            last[o] = i
    keep = set(results) | set(args)
    # alias groups: views share their operand's storage
    group: dict[int, int] = {a: a for a in args}
    members: dict[int, list[int]] = {a: [a] for a in args}
    if from_list:
        lines = [f"def {name}(_args):", f"    ({''.join(py(a) + ', ' for a in args)}) = _args", "    _args.clear()"]
    else:
        lines = [f"def {name}({', '.join(py(a) for a in args)}):"]
    dead: set[int] = set()
    expanded: set[int] = set()  # fills: views of one scalar
    for i, op in enumerate(body):
        ops = op["operands"]
        a = [py(o) for o in ops]
        out = None
        r = op["result"]
        if "ck.inplace" in op["attrs"] and op["kind"] in _INPLACE_FN:
            src = ops[int(op["attrs"]["ck.inplace"])]
            g = group.get(src, src)
            live_alias = [m for m in members.get(g, [src]) if m != src and m not in dead and last.get(m, -1) > i]
            if (src == g and g not in args and src not in keep and last.get(src, -1) == i
                    and not live_alias and types[src] == types[r] and src not in expanded):
                out = py(src)
        lines.append(f"    {py(r)} = {_expr(op, a, types, out)}")
        if op["kind"] == "fill" and types[r][0]:
            expanded.add(r)
        if op["kind"] in _VIEW_OPS:
            g = group.get(ops[0], ops[0])
            group[r] = g
            members.setdefault(g, [g]).append(r)
        else:
            group[r] = r
            members[r] = [r]
        frees = [o for o in dict.fromkeys(ops) if last.get(o) == i and (o not in keep or (from_list and o in args and o not in results))]
        if r not in keep and r not in last:
            frees.append(r)
        for fv in frees:
            dead.add(fv)
        if frees:
            lines.append("    del " + ", ".join(py(x) for x in dict.fromkeys(frees)))
    ret = [py(r) + (".contiguous()" if r in expanded else "") for r in results]
    lines.append(f"    return ({', '.join(ret)},)")
    return "\n".join(lines)


def _namespace(device) -> dict:
    """The globals of generated schedules."""
    return {"torch": torch, "_dev": device, "_dropout": dropout, "_maxpool_grad": _maxpool_grad,
            "_cross_entropy_grad": _cross_entropy_grad,
            "_empty": lambda shape, dtype: torch.empty(shape, dtype=dtype, device=device)}


class AtenRunner:
    """Runs a split with torch's kernels through generated Python."""

    def __init__(self, s: Split, device):
        self.s = s
        fwd_src = gen_schedule("fwd", structure(s.module, s.forward))
        bwd_src = gen_schedule("bwd", structure(s.module, s.backward), from_list=True)
        self.source = fwd_src + "\n\n" + bwd_src + "\n"
        g = _namespace(device)
        exec(compile(self.source, "<ckopt.torch schedule>", "exec"), g)
        self.fwd, self.bwd_list = g["fwd"], g["bwd"]


def gen_forward(module, fname: str, device):
    src = gen_schedule("fwd", structure(module, fname))
    g = _namespace(device)
    exec(compile(src, "<ckopt.torch forward>", "exec"), g)
    return g["fwd"], src


# ---------------------------------------------------------------------------
# ckopt executor: the two halves on ckopt's cpu backend


_TORCH_DT = {k: getattr(torch, v.split(".")[1]) for k, v in _DT.items()}


def _view(t: torch.Tensor):
    """A numpy array sharing `t`'s memory (CPU, C-contiguous; bf16 as its
    16-bit words), for `Compiled.run_into`."""
    t = t.detach()
    if not t.is_contiguous():
        t = t.contiguous()
    if t.dtype == torch.bfloat16:
        t = t.view(torch.int16)
    return t.numpy()


class _OnMemory:
    """One compiled function run on torch tensors' own memory: the inputs
    are read in place by ckopt's executor, its values live in `arena` (a
    uint8 torch tensor, shared by functions that never run at once), and
    each result is written once into a new torch tensor
    (`Compiled.run_into`)."""

    def __init__(self, c, arena: torch.Tensor, lock):
        self.c = c
        self.arena = arena.numpy()
        self.lock = lock
        self.out = [(tuple(shape), _TORCH_DT[dt]) for shape, dt in c.results]

    def __call__(self, ts) -> tuple:
        ins = [_view(t) for t in ts]
        outs = tuple(torch.empty(shape, dtype=dt) for shape, dt in self.out)
        with self.lock:  # one call at a time in the shared arena
            self.c.run_into(ins, [_view(o) for o in outs], self.arena)
        return outs


def _arena(*compiled) -> torch.Tensor:
    """One buffer for the values of functions that never run at once: the
    largest of their arenas (torch's CPU allocator aligns to 64 bytes, as
    ckopt's kernels expect)."""
    a = torch.empty(max(c.arena_bytes for c in compiled), dtype=torch.uint8)
    if a.data_ptr() % 64:
        a = torch.empty(a.numel() + 64, dtype=torch.uint8)
        a = a[(-a.data_ptr()) % 64 :][: a.numel() - 64]
    return a


class CkoptRunner:
    def __init__(self, s: Split, target: str = "cpu"):
        self.s = s
        self.text = s.module.text
        self.cf = s.module.compile(s.forward, target)
        self.cb = s.module.compile(s.backward, target)
        # The forward's and the backward's values in one buffer, allocated
        # once per compiled module: the two halves never run at once.
        self.arena = _arena(self.cf, self.cb)
        lock = threading.Lock()
        self._f, self._b = _OnMemory(self.cf, self.arena, lock), _OnMemory(self.cb, self.arena, lock)

    def fwd(self, *ts):
        return self._f(ts)

    def bwd_list(self, ts):
        try:
            return self._b(ts)
        finally:
            ts.clear()


class CkoptForward:
    def __init__(self, module, fname: str, target="cpu"):
        self.module = module
        self.c = module.compile(fname, target)
        self.arena = _arena(self.c)
        self._f = _OnMemory(self.c, self.arena, threading.Lock())

    def __call__(self, *ts):
        return self._f(ts)
