"""The forward/backward split of a planned gradient function, and the two
executors that run it.

`@f_grad` after ckopt's passes is one schedule: the forward ops, the seed
`fill 1.0` of the backward, then the backward with the recompute clones
(`ck.recompute`) that remat inserted. The split cuts it at the seed:

* forward = the ops the loss depends on (none of them is a recompute clone),
  then the ops of `@f` that compute its other results (the model's other
  outputs, BatchNorm's new running statistics), renamed `aux_*`;
* kept = the forward values that the backward reads: exactly what the plan
  keeps across the boundary (remat dropped the rest, and recomputes it);
* backward = every other op, in schedule order, with the seed replaced by
  the incoming gradient `dy` of the loss (the backward is linear in it).

`executor="aten"` turns each schedule into Python source once (one torch
call per ck op, `del` where the value dies, ATen's in-place variant where
`inplace` marked the op and the buffer has no other live alias);
`executor="ckopt"` prints each as a ck function and compiles it with
ckopt's cpu backend.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np
import torch

from ._ir import Arg, Func, Op, Type, parse_module, print_func

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
    fwd_args: list[Arg]
    fwd_body: list[Op]
    fwd_results: list[str]  # loss, aux..., kept...
    n_aux: int
    kept: list[str]
    bwd_arg_idx: list[int]  # indices into fwd_args that the backward reads
    bwd_body: list[Op]
    bwd_results: list[str]  # one gradient per wrt argument
    seed: str
    types: dict[str, Type]
    wrt: list[int]  # fwd argument indices that get gradients, in order


def split(module_text: str, fname: str, gname: str) -> Split:
    funcs = parse_module(module_text)
    f, g = funcs[fname], funcs[gname]
    types: dict[str, Type] = {a.name: a.type for a in g.args}
    for op in g.body:
        if op.result is not None:
            types[op.result] = op.result_type
    loss = g.results[0]
    need, fwd_ix = {loss}, set()
    for i in range(len(g.body) - 1, -1, -1):
        op = g.body[i]
        if op.result in need and "ck.recompute" not in op.attrs:
            fwd_ix.add(i)
            need.update(op.operands)
    seed_ix = None
    for i, op in enumerate(g.body):
        if i in fwd_ix:
            continue
        if op.kind == "fill" and op.result_type == Type((), "f32") and op.attrs.get("value") == 1.0:
            seed_ix = i
            break
    if seed_ix is None:
        raise RuntimeError(f"@{gname} has no seed `fill 1.0` (was it built by autodiff?)")
    seed = g.body[seed_ix].result
    fwd = [g.body[i] for i in sorted(fwd_ix)]
    fwd_defs = {op.result: op.result_type for op in fwd}
    argnames = {a.name for a in g.args}

    # Aux results of @f (other outputs, buffer updates), computed after the
    # forward from what it already has.
    fdefs = {op.result: op for op in f.body}
    fargs = {a.name for a in f.args}
    aux_ops: list[Op] = []
    aux_name: dict[str, str] = {}

    def aux(v: str) -> str:
        if v in fargs or (v in fwd_defs and fwd_defs[v] == fdefs[v].result_type):
            return v
        if v in aux_name:
            return aux_name[v]
        op = fdefs[v]
        ops = [aux(o) for o in op.operands]
        name = "aux_" + v
        aux_ops.append(dataclasses.replace(op, result=name, operands=ops, attrs=dict(op.attrs)))
        types[name] = op.result_type
        aux_name[v] = name
        return name

    aux_results = [aux(r) for r in f.results[1:]]
    bwd = [op for i, op in enumerate(g.body) if i not in fwd_ix and i != seed_ix]
    bwd_uses: list[str] = []
    seen = set()
    for op in bwd:
        for o in op.operands:
            if o not in seen:
                seen.add(o)
                bwd_uses.append(o)
    for r in g.results[1:]:
        if r not in seen:
            seen.add(r)
            bwd_uses.append(r)
    kept = [v for v in bwd_uses if v in fwd_defs]
    bwd_arg_idx = [i for i, a in enumerate(g.args) if a.name in seen]
    # wrt: the gradient function's results after the loss follow the
    # {ck.param} arguments in order.
    params = [i for i, a in enumerate(g.args) if "ck.param" in a.attrs]
    if not params:
        params = [i for i, a in enumerate(g.args) if a.type.dtype == "f32"]
    return Split(
        fwd_args=g.args,
        fwd_body=fwd + aux_ops,
        fwd_results=[loss] + aux_results + kept,
        n_aux=len(aux_results),
        kept=kept,
        bwd_arg_idx=bwd_arg_idx,
        bwd_body=bwd,
        bwd_results=g.results[1:],
        seed=seed,
        types=types,
        wrt=params,
    )


def forward_only(module_text: str, fname: str):
    """A function without a gradient (eval mode, non-scalar outputs): its ops
    as one forward schedule."""
    f = parse_module(module_text)[fname]
    types = {a.name: a.type for a in f.args}
    for op in f.body:
        if op.result is not None:
            types[op.result] = op.result_type
    return f, types


# ---------------------------------------------------------------------------
# aten executor: Python source per schedule


def _py_names(names):
    return {n: f"v{i}" for i, n in enumerate(names)}


def _expr(op: Op, a: list[str], types: dict[str, Type], out: str | None) -> str:
    k, at = op.kind, op.attrs
    rt = op.result_type
    shape = tuple(rt.shape) if rt is not None else ()
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
    if k == "fill":
        return f"torch.full({shape!r}, {float(at['value'])!r}, dtype={_DT[rt.dtype]}, device=_dev)"
    if k == "relu_grad":
        return f"torch.ops.aten.threshold_backward({a[1]}, {a[0]}, 0)"
    if k == "broadcast":
        dims = at["dims"]
        src = types[op.operands[0]].shape
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
        return _WINDOW_OPS[k].format(*a, s=st, p=p, w=w, shape=shape)
    if k == "dropout":
        step = a[1] if len(a) > 1 else "None"
        return f"_dropout({a[0]}, {float(at['rate'])!r}, {int(at['seed'])}, {step})"
    # Anything else (e.g. a ck.constant from a user's own pipeline=) has no
    # torch call here: an error before anything runs, never a wrong result.
    from ckopt import UnsupportedError

    raise UnsupportedError(f"ck.{k}", None, "no torch call for this op in the aten executor (use executor='ckopt')")


# Convolution and pooling: torch calls with the op's stride/padding/window.
_WINDOW_OPS = {
    "conv2d": "torch.conv2d({0}, {1}, None, {s!r}, {p!r})",
    "conv2d_grad_input": "torch.nn.grad.conv2d_input({shape!r}, {1}, {0}, {s!r}, {p!r})",
    "conv2d_grad_filter": "torch.nn.grad.conv2d_weight({0}, {shape!r}, {1}, {s!r}, {p!r})",
    "max_pool2d": "torch.max_pool2d({0}, {w!r}, {s!r})",
    "max_pool2d_grad": "_maxpool_grad({0}, {1}, {w!r}, {s!r})",
    "avg_pool2d": "torch.nn.functional.avg_pool2d({0}, {w!r}, {s!r})",
    "avg_pool2d_grad": "torch.ops.aten.avg_pool2d_backward({0}, _empty({shape!r}), {w!r}, {s!r}, [0, 0], False, True, None)",
}


def _maxpool_grad(x, dy, window, stride):
    _, idx = torch.ops.aten.max_pool2d_with_indices(x, window, stride)
    return torch.ops.aten.max_pool2d_with_indices_backward(dy, x, window, stride, [0, 0], [1, 1], False, idx)


def gen_schedule(name: str, args: list[str], body: list[Op], results: list[str], types: dict[str, Type],
                 rename: dict[str, str] | None = None, from_list: bool = False) -> str:
    """Python source of one schedule: `def name(args): ...; return (results)`.
    With from_list, the function takes one list of the arguments and empties
    it, so no caller's reference keeps a value alive past its last use."""
    rename = dict(rename or {})
    py = _py_names(list(args) + [op.result for op in body if op.result is not None])
    for k, v in rename.items():
        py[k] = py[v]
    last: dict[str, int] = {}
    for i, op in enumerate(body):
        for o in op.operands:
            last[rename.get(o, o)] = i
    keep = set(rename.get(r, r) for r in results) | set(args)
    # alias groups: views share their operand's storage
    group: dict[str, str] = {a: a for a in args}
    members: dict[str, list[str]] = {a: [a] for a in args}
    if from_list:
        lines = [f"def {name}(_args):", f"    ({''.join(py[a] + ', ' for a in args)}) = _args", "    _args.clear()"]
    else:
        lines = [f"def {name}({', '.join(py[a] for a in args)}):"]
    dead: set[str] = set()
    for i, op in enumerate(body):
        ops = [rename.get(o, o) for o in op.operands]
        a = [py[o] for o in ops]
        out = None
        if "ck.inplace" in op.attrs and op.kind in _INPLACE_FN:
            n = int(op.attrs["ck.inplace"])
            src = ops[n]
            g = group.get(src, src)
            live_alias = [m for m in members.get(g, [src]) if m != src and m not in dead and last.get(m, -1) > i]
            if (src == g and g not in args and src not in keep and last.get(src, -1) == i
                    and not live_alias and types[src] == op.result_type):
                out = py[src]
        r = op.result
        lines.append(f"    {py[r]} = {_expr(op, a, types, out)}")
        if op.kind in _VIEW_OPS:
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
            lines.append("    del " + ", ".join(py[x] for x in dict.fromkeys(frees)))
    lines.append(f"    return ({', '.join(py[rename.get(r, r)] for r in results)},)")
    return "\n".join(lines)


def _namespace(device) -> dict:
    """The globals of generated schedules."""
    return {"torch": torch, "_dev": device, "_dropout": dropout, "_maxpool_grad": _maxpool_grad,
            "_empty": lambda shape: torch.empty(shape, device=device)}


class AtenRunner:
    """Runs a split with torch's kernels through generated Python."""

    def __init__(self, s: Split, device):
        self.s = s
        names = [a.name for a in s.fwd_args]
        fwd_src = gen_schedule("fwd", names, s.fwd_body, s.fwd_results, s.types)
        bwd_args = [names[i] for i in s.bwd_arg_idx] + s.kept + [s.seed]
        bwd_src = gen_schedule("bwd", bwd_args, s.bwd_body, s.bwd_results, s.types, from_list=True)
        self.source = fwd_src + "\n\n" + bwd_src + "\n"
        g = _namespace(device)
        exec(compile(self.source, "<ckopt.torch schedule>", "exec"), g)
        self.fwd, self.bwd_list = g["fwd"], g["bwd"]


def gen_forward(f: Func, types, device):
    names = [a.name for a in f.args]
    src = gen_schedule("fwd", names, f.body, f.results, types)
    g = _namespace(device)
    exec(compile(src, "<ckopt.torch forward>", "exec"), g)
    return g["fwd"], src


# ---------------------------------------------------------------------------
# ckopt executor: the two schedules as ck functions on ckopt's cpu backend


def _np(t: torch.Tensor):
    t = t.detach()
    if t.dtype == torch.bool:
        return t.numpy()
    return t.contiguous()


class CkoptRunner:
    def __init__(self, s: Split, target: str = "cpu"):
        import ckopt

        self.s = s
        fargs = s.fwd_args
        bargs = [fargs[i] for i in s.bwd_arg_idx] + [Arg(k, s.types[k], "") for k in s.kept] + [
            Arg("dy", Type((), "f32"), "")]
        body = [dataclasses.replace(op, operands=["dy" if o == s.seed else o for o in op.operands]) for op in s.bwd_body]
        results = ["dy" if r == s.seed else r for r in s.bwd_results]
        types = dict(s.types)
        types["dy"] = Type((), "f32")
        clean = lambda a: Arg(a.name, a.type, "")  # noqa: E731
        text = "module {\n" + print_func("fwd", [clean(a) for a in fargs], s.fwd_body, s.fwd_results, types) + "\n"
        text += print_func("bwd", [clean(a) for a in bargs], body, results, types) + "\n}\n"
        self.text = text
        self.module = ckopt.parse(text, "<ckopt.torch split>")
        self.cf = self.module.compile("fwd", target)
        self.cb = self.module.compile("bwd", target)

    def fwd(self, *ts):
        return tuple(torch.from_numpy(np.asarray(o)) for o in self.cf.run(*[_np(t) for t in ts]))

    def bwd_list(self, ts):
        arrays = [_np(t) for t in ts]
        ts.clear()
        return tuple(torch.from_numpy(np.asarray(o)) for o in self.cb.run(*arrays))


class CkoptForward:
    def __init__(self, f: Func, types, target="cpu"):
        import ckopt

        clean = [Arg(a.name, a.type, "") for a in f.args]
        text = "module {\n" + print_func("fwd", clean, f.body, f.results, types) + "\n}\n"
        self.module = ckopt.parse(text, "<ckopt.torch forward>")
        self.c = self.module.compile("fwd", target)

    def __call__(self, *ts):
        return tuple(torch.from_numpy(np.asarray(o)) for o in self.c.run(*[_np(t) for t in ts]))
