"""ckopt.torch: train a PyTorch nn.Module under ckopt's memory plan.

>>> cm = ckopt.torch.compile(model, (x, y), mode="sqrt")      # doctest: +SKIP
>>> opt = torch.optim.AdamW(cm.parameters())                   # doctest: +SKIP
>>> loss = cm(x, y); loss.backward(); opt.step()               # doctest: +SKIP

The model is captured with ``torch.export`` (non-strict) and core-ATen
decompositions, translated op by op to ck IR (one table, ``TABLE`` in
``_capture.py``), and planned by ckopt's passes (autodiff, inplace, remat
with the given mode/budget, then fuse and memplan for the report). The
planned gradient function is split into a forward and a backward that run
inside ONE ``torch.autograd.Function`` per call, on torch's kernels
(``executor="aten"``) or ckopt's compiled cpu code (``executor="ckopt"``).
The reference is docs/torch.md in the repository.
"""

from __future__ import annotations

import contextlib
import itertools

import torch
import torch.utils._pytree as pytree

import ckopt
from ckopt import UnsupportedError

from . import _capture, _plan
from ._capture import TABLE, Cx, Host, Val, _NoValue, source_of

__all__ = ["compile", "CompiledModule", "UnsupportedError", "TABLE"]

_FUNC = "f"
_GRAD = "f_grad"


def _budget_text(b) -> str:
    if isinstance(b, bool):
        raise TypeError("budget must be a number of bytes or a string such as '48MiB'")
    if isinstance(b, (int, float)):
        if b < 0:
            raise ValueError(f"budget must not be negative, got {b}")
        return str(int(b))
    if isinstance(b, str):
        return b.replace(" ", "")
    raise TypeError(f"budget must be a number of bytes or a string such as '48MiB', got {type(b).__name__}")


def _model_device(model) -> torch.device:
    for p in itertools.chain(model.parameters(), model.buffers()):
        return p.device
    return torch.device("cpu")


def _autocast_state(device: torch.device):
    """torch.autocast's state for the model's device type now: None when it
    is off, else its dtype (torch.bfloat16 or torch.float16)."""
    dev = device.type
    if dev not in ("cpu", "cuda") or not torch.is_autocast_enabled(dev):
        return None
    return torch.get_autocast_dtype(dev)


def _autocast_as(device: torch.device, dtype):
    """Sets autocast for the model's device type to exactly `dtype` (None:
    off), without the weight cache: the capture runs under it, so the casts
    torch's autocast inserts are in the exported graph."""
    if device.type not in ("cpu", "cuda"):
        return contextlib.nullcontext()
    if dtype is None:
        return torch.autocast(device.type, enabled=False)
    return torch.autocast(device.type, dtype=dtype, enabled=True, cache_enabled=False)


class _Capture:
    """One mode's (train or eval, autocast off or its dtype) capture: the ck
    function, how to feed it, and the planned executors."""

    def __init__(self, model, example_args, opts, autocast=None):
        self.opts = opts
        self.training = model.training
        self.autocast = autocast
        with _autocast_as(_model_device(model), autocast):
            try:
                ep = torch.export.export(model, tuple(example_args), strict=False)
            except Exception as e:  # data-dependent control flow, unsupported Python, ...
                raise UnsupportedError("torch.export", None, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}") from e
            table = torch.export.default_decompositions()
            # cross_entropy stays log_softmax + nll_loss: one ck.cross_entropy
            table.pop(torch.ops.aten.nll_loss_forward.default, None)
            # captured whole (its decomposition tests float scores against -inf)
            table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
            ep = ep.run_decompositions(table)
        self.ep = ep
        self.example_shapes = [tuple(a.shape) if isinstance(a, torch.Tensor) else None for a in example_args]
        self.example_dtypes = [a.dtype if isinstance(a, torch.Tensor) else None for a in example_args]
        self._translate(model)
        self._plan()

    # -- translation ---------------------------------------------------------
    def _translate(self, model):
        ep = self.ep
        sig = ep.graph_signature
        self.device = _model_device(model)
        cx = Cx(ep.graph_module, self.device)
        cx.f32_conv = self.opts["executor"] == "ckopt"
        self.cx = cx
        step_holder: dict = {}

        def step_arg():
            if "v" not in step_holder:
                step_holder["v"] = Val("step", _capture.Type((), "f32"))
                cx.b.types["step"] = step_holder["v"].type
            return step_holder["v"]

        cx.step_arg = step_arg
        specs = {s.arg.name: s for s in sig.input_specs}
        env: dict = {}
        self.arg_feed: list[tuple[str, object]] = []  # per ck argument: (kind, key)
        ck_args: list[tuple[str, _capture.Type, str]] = []
        self.host_nodes = []
        self.placeholders = []
        buffer_vals = set()
        user_i = 0
        for n in ep.graph.nodes:
            if n.op == "placeholder":
                spec = specs[n.name]
                kind = spec.kind.name
                val = n.meta.get("val")
                if kind == "USER_INPUT":
                    feed = ("input", user_i)
                    user_i += 1
                elif kind == "PARAMETER":
                    feed = ("param", spec.target)
                elif kind == "BUFFER":
                    feed = ("buffer", spec.target)
                elif kind in ("CONSTANT_TENSOR", "CUSTOM_OBJ"):
                    feed = ("constant", spec.target)
                else:
                    raise UnsupportedError(f"input kind {kind}", None, "")
                self.placeholders.append((n, feed))
                if not isinstance(val, torch.Tensor):
                    env[n] = val  # a Python scalar input
                    continue
                if val.dtype in _capture.FLOAT_DTYPES:
                    name = "a_" + n.name
                    t = _capture.Type(tuple(int(s) for s in val.shape), _capture.ck_dtype(val.dtype))
                    trainable = kind == "PARAMETER" and _requires_grad(model, spec.target)
                    if kind == "USER_INPUT" and self.opts.get("input_grads", {}).get(feed[1]):
                        trainable = True
                    ck_args.append((name, t, "ck.param" if trainable else ""))
                    self.arg_feed.append(feed)
                    env[n] = Val(name, t)
                    if kind in ("BUFFER", "CONSTANT_TENSOR"):
                        buffer_vals.add(name)
                    cx.b.types[name] = t
                    cx.b.used.add(name)
                    cx.arg_names.add(name)
                elif val.dtype in (torch.int64, torch.int32, torch.bool, torch.uint8, torch.int16, torch.int8):
                    env[n] = Host(n, tuple(int(s) for s in val.shape), val.dtype)
                else:
                    # refused at its first use, which names the op and the user's line
                    what = {"PARAMETER": "parameter", "BUFFER": "buffer", "USER_INPUT": "input"}.get(kind, "constant")
                    env[n] = _BadDtype(f"{what} {spec.target if kind != 'USER_INPUT' else n.name!r} is {val.dtype}", val.dtype)
            elif n.op == "call_function" and n.target in _capture.IGNORED:
                env[n] = None  # metadata assertions torch.export leaves in the graph
            elif n.op == "call_function":
                cx.node = n
                cx.b.hint = n.name
                args = pytree.tree_map_only(torch.fx.Node, lambda x: env[x], n.args)
                kwargs = pytree.tree_map_only(torch.fx.Node, lambda x: env[x], n.kwargs)
                leaves = pytree.tree_leaves((args, kwargs))
                for x in leaves:
                    if isinstance(x, _NoValue) and n.target is not __import__("operator").getitem:
                        raise cx.unsupported(f"the graph uses {x.what}, which ckopt does not compute")
                    if isinstance(x, _BadDtype):
                        raise cx.unsupported(f"dtype {x.dtype}: the {x.what}; ckopt.torch computes {_capture.SUPPORTED}: "
                                             "convert the model and inputs (model.float(), model.to(torch.bfloat16))")
                tensors = [x for x in leaves if isinstance(x, (Val, Host))]
                if n.target is __import__("operator").getitem:
                    src = args[0]
                    env[n] = src if isinstance(src, Host) else src[args[1]]
                    if isinstance(src, Host):
                        v = n.meta.get("val")
                        env[n] = Host(n, tuple(v.shape), v.dtype)
                        self.host_nodes.append(n)
                    continue
                # Host when every tensor input is a host value or a buffer
                # (buffers are not differentiated: masks built from them,
                # such as a causal `tril` buffer compared with 0, are host).
                hostable = all(isinstance(x, Host) or (isinstance(x, Val) and x.name in buffer_vals) for x in tensors)
                if hostable and n.target in _capture.HOST_OK and (
                    any(isinstance(x, Host) for x in tensors) or not tensors or not _is_float(n)
                    or n.target in _capture.HOST_VIEW
                ):
                    v = n.meta.get("val")
                    if isinstance(v, torch.Tensor):
                        env[n] = Host(n, tuple(int(s) for s in v.shape), v.dtype)
                    else:
                        env[n] = Host(n, (), None)
                    self.host_nodes.append(n)
                    continue
                fn = TABLE.get(n.target)
                if fn is None:
                    raise UnsupportedError(str(n.target), source_of(n), "no translation to ck")
                v = n.meta.get("val")
                vals = v if isinstance(v, (tuple, list)) else [v]
                for t in vals:
                    if isinstance(t, torch.Tensor) and t.dtype not in _capture._TORCH_TO_CK:
                        raise UnsupportedError(str(n.target), source_of(n), f"dtype {t.dtype} (ckopt.torch computes {_capture.SUPPORTED})")
                try:
                    env[n] = _as_node_dtypes(cx, fn(cx, list(args), dict(kwargs)), v)
                except UnsupportedError:
                    raise
                except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
                    raise UnsupportedError(str(n.target), source_of(n), f"arguments ckopt does not handle ({e})") from e
            elif n.op == "output":
                outs = n.args[0]
            elif n.op == "get_attr":
                raise UnsupportedError("get_attr", source_of(n), f"module attribute {n.target!r}")
        # outputs
        self.user_outputs = []  # per user output: ("ck", index) | ("host", node) | ("const", v)
        self.buffer_writes = []  # (buffer target, "ck", index) | (target, "host", node)
        ck_results: list[Val] = []
        for spec, o in zip(sig.output_specs, outs):
            kind = spec.kind.name
            v = env[o] if isinstance(o, torch.fx.Node) else o
            if kind == "USER_INPUT_MUTATION":
                raise UnsupportedError("input mutation", None, f"the model writes into its input {spec.target!r} (copy it first)")
            if kind not in ("USER_OUTPUT", "BUFFER_MUTATION"):
                raise UnsupportedError(f"output kind {kind}", None, "")
            if isinstance(v, _NoValue):
                raise UnsupportedError("output", None, f"the model returns {v.what}")
            if isinstance(v, Val):
                ref = ("ck", len(ck_results))
                ck_results.append(v)
            elif isinstance(v, Host):
                ref = ("host", v.node)
            else:
                ref = ("const", v)
            if kind == "USER_OUTPUT":
                self.user_outputs.append(ref)
            else:
                self.buffer_writes.append((spec.target, ref))
        self.out_spec = ep.call_spec.out_spec
        # The loss first: the first user output when it is a rank-0 ck value.
        first = self.user_outputs[0] if self.user_outputs else None
        self.trainable = (
            first is not None and first[0] == "ck" and ck_results[first[1]].shape == () and any("ck.param" in a[2] for a in ck_args)
        )
        order = list(range(len(ck_results)))
        if self.trainable and first[1] != 0:
            order.remove(first[1])
            order.insert(0, first[1])
        self.result_pos = {old: new for new, old in enumerate(order)}
        results = [ck_results[i] for i in order]
        # ckopt plans an f32 loss: a bf16/f16 one (a bf16 model's) is
        # widened in ck (exact) and returned to the user in its dtype
        self.loss_dtype = torch.float32
        if self.trainable and results[0].type.dtype != "f32":
            self.loss_dtype = _capture.CK_TO_TORCH[results[0].type.dtype]
            results[0] = cx.b.op("cast", [results[0]], _capture.Type((), "f32"))
        # arguments: tensors, then host-fed ones, then the step key
        for ha in cx.host_args:
            ck_args.append((ha.name, ha.type, ""))
            self.arg_feed.append(("hostarg", ha))
        if "v" in step_holder:
            ck_args.append(("step", step_holder["v"].type, "ck.step"))
            self.arg_feed.append(("step", None))
        self.ck_args = ck_args
        if not results:
            raise UnsupportedError("output", None, "the model returns no float tensor")
        head = ", ".join(f"%{n}: {t}" + (f" {{{a}}}" if a else "") for n, t, a in ck_args)
        rts = [str(r.type) for r in results]
        rt = rts[0] if len(rts) == 1 else "(" + ", ".join(rts) + ")"
        body = "\n".join("    " + line for line in cx.b.lines)
        ret = f'    "ck.return"({", ".join("%" + r.name for r in results)}) : ({", ".join(rts)}) -> ()'
        self.text = f"module {{\n  func.func @{_FUNC}({head}) -> {rt} {{\n{body}\n{ret}\n  }}\n}}\n"

    # -- planning ------------------------------------------------------------
    def _plan(self):
        o = self.opts
        self.ck = ckopt.parse(self.text, "<ckopt.torch>")
        if not self.trainable:
            self.pipeline = o["pipeline"] or ""
            self.planned = self.ck.optimize(self.pipeline) if self.pipeline else self.ck
            self.report_module = self.planned.optimize("fuse,memplan")
            self.report_func = _FUNC
            if o["executor"] == "ckopt":
                self.run_forward = _plan.CkoptForward(self.planned, _FUNC)
                self.source = self.planned.text
            else:
                self.run_forward, self.source = _plan.gen_forward(self.planned, _FUNC, self.device)
            return
        if o["pipeline"] is not None:
            pipe = o["pipeline"]
        else:
            ropts = [f"mode={o['mode']}"]
            if o["budget"] is not None:
                ropts.append(f"budget={_budget_text(o['budget'])}")
            if o["device_budget"] is not None:
                ropts.append(f"device_budget={_budget_text(o['device_budget'])}")
            pipe = f"autodiff{{func={_FUNC} rebroadcast=true}},inplace,remat{{{' '.join(ropts)}}}"
        self.pipeline = pipe
        self.planned = self.ck.optimize(pipe)
        if _GRAD not in self.planned.functions:
            raise ValueError(f"the pipeline {pipe!r} made no @{_GRAD} (it must start with autodiff)")
        rep = self.planned.memory_report(_GRAD)
        self.report_module = self.planned if rep.get("arena_bytes") is not None else self.planned.optimize("fuse,memplan")
        self.report_func = _GRAD
        self.split = _plan.split(self.planned, _FUNC, _GRAD)
        if o["executor"] == "ckopt":
            self.runner = _plan.CkoptRunner(self.split)
            self.source = self.runner.text
        else:
            self.runner = _plan.AtenRunner(self.split, self.device)
            self.source = self.runner.source


class _BadDtype:
    """A graph input of a dtype ckopt does not compute in (float64,
    complex, ...): an error at the first op that reads it."""

    def __init__(self, what, dtype):
        self.what, self.dtype = what, dtype


def _as_node_dtypes(cx, out, meta):
    """The emitter's ck values converted to the element types torch's graph
    gives the node (an emitter computes a bf16 layer norm with f32 weights
    in f32, a cross_entropy of bf16 logits returns ck's f32 loss, ...), so
    every value has torch's dtype."""
    if isinstance(out, tuple):
        metas = meta if isinstance(meta, (tuple, list)) else [None] * len(out)
        return tuple(_as_node_dtypes(cx, o, m) for o, m in zip(out, metas))
    if isinstance(out, Val) and isinstance(meta, torch.Tensor) and meta.dtype in _capture.FLOAT_DTYPES:
        if out.type.dtype in ("f32", "bf16", "f16"):
            return cx.cast(out, _capture.ck_dtype(meta.dtype))
    return out


def _is_float(n) -> bool:
    v = n.meta.get("val")
    return isinstance(v, torch.Tensor) and v.is_floating_point()


def _requires_grad(model, target):
    try:
        return model.get_parameter(target).requires_grad
    except AttributeError:
        return True


class _Box:
    """What a saved tensor is packed into: the user's packed value (or the
    tensor), dropped when the backward unpacks it, so each kept value can
    be freed at its last use in the backward, as the plan frees it."""

    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def _chained_hooks():
    """Saved-tensor hooks that wrap whatever hooks are active (the user's
    `save_on_cpu`, ...) in a _Box."""
    top = torch._C._autograd._top_saved_tensors_default_hooks(False)
    upack, uunpack = top if top is not None else (None, None)

    def pack(t):
        return _Box(upack(t) if upack is not None else t)

    def unpack(box):
        v = box.v
        box.v = None
        if v is None:
            raise RuntimeError("ckopt.torch: the saved values of this step were already used by a backward "
                               "(call backward once per step, without retain_graph)")
        return uunpack(v) if uunpack is not None else v

    return pack, unpack


class _Step(torch.autograd.Function):
    """The planned training step as one autograd node: forward runs the
    planned forward and saves exactly the kept values; backward runs the
    planned backward (recomputing what the plan dropped)."""

    @staticmethod
    def forward(ctx, cap, *tensors):
        s = cap.split
        outs = cap.runner.fwd(*tensors)
        loss = outs[0]
        aux = outs[1 : 1 + s.n_aux]
        kept = outs[1 + s.n_aux :]
        del outs
        ctx.cap = cap
        ctx.n = len(tensors)
        # Packed after this returns, by the hooks around apply (_chained_hooks).
        ctx.save_for_backward(*[tensors[i] for i in s.bwd_arg_idx], *kept)
        del kept
        if aux:
            ctx.mark_non_differentiable(*aux)
        return (loss, *aux)

    @staticmethod
    def backward(ctx, dloss, *daux):
        cap = ctx.cap
        s = cap.split
        vals = list(ctx.saved_tensors)
        vals.append(dloss.reshape(()).to(torch.float32))
        with _autocast_as(cap.device, None):  # the plan's types are explicit
            grads = cap.runner.bwd_list(vals)  # takes the values out of the list
        out = [None] * ctx.n
        for i, g in zip(s.wrt, grads):
            out[i] = g
        return (None, *out)


class CompiledModule(torch.nn.Module):
    """What ``ckopt.torch.compile`` returns: holds the model as ``.model``
    (its parameters, buffers, state_dict, train/eval are the model's)."""

    def __init__(self, model, example_args, opts):
        super().__init__()
        self.model = model
        self._opts = opts
        self._example = tuple(example_args)
        # One capture per mode: the training flag, and torch.autocast's dtype
        # for the model's device when autocast is on (keys `True`/`False`
        # without autocast, `(training, dtype)` under it).
        self._caps: dict[object, _Capture] = {}
        self._steps = 0
        self._cap()  # the current mode now, so errors come before anything runs

    def _cap(self) -> _Capture:
        training = self.model.training
        ac = _autocast_state(_model_device(self.model))
        key = training if ac is None else (training, ac)
        if key not in self._caps:
            self._caps[key] = _Capture(self.model, self._example, self._opts, ac)
        return self._caps[key]

    # -- the model's state, unchanged
    def state_dict(self, *args, **kwargs):
        return self.model.state_dict(*args, **kwargs)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        return self.model.load_state_dict(state_dict, strict=strict, assign=assign)

    # -- ckopt's numbers for the current mode
    def memory_report(self):
        c = self._cap()
        return c.report_module.memory_report(c.report_func)

    def memory_curve(self):
        c = self._cap()
        if not c.trainable:
            raise ValueError("no memory curve: this mode has no training step (no scalar loss)")
        return c.ck.optimize(f"autodiff{{func={_FUNC} rebroadcast=true}},inplace").memory_curve(_GRAD)

    @property
    def plan(self) -> str:
        return self._cap().pipeline

    @property
    def module(self):
        return self._cap().planned

    @property
    def ck_text(self) -> str:
        return self._cap().text

    @property
    def source(self) -> str:
        return self._cap().source

    def forward(self, *args):
        cap = self._cap()
        if len(args) != len(cap.example_shapes):
            raise TypeError(f"the compiled model takes {len(cap.example_shapes)} arguments (as the example), {len(args)} given")
        for i, (a, shape, dt) in enumerate(zip(args, cap.example_shapes, cap.example_dtypes)):
            if shape is None:
                continue
            if not isinstance(a, torch.Tensor):
                raise TypeError(f"argument {i} must be a tensor like the example's, got {type(a).__name__}")
            if tuple(a.shape) != shape:
                raise ValueError(f"argument {i} has shape {tuple(a.shape)}, but the model was compiled for {shape} (the example's)")
            if a.dtype != dt:
                raise TypeError(f"argument {i} has dtype {a.dtype}, but the model was compiled for {dt} (the example's)")
        with _autocast_as(cap.device, None):  # the plan's types are explicit
            return self._run(cap, args)

    def _run(self, cap, args):
        model = self.model
        phs = {}
        for n, (kind, key) in cap.placeholders:
            if kind == "input":
                phs[n] = args[key]
            elif kind == "param":
                phs[n] = model.get_parameter(key)
            elif kind == "buffer":
                phs[n] = model.get_buffer(key)
            else:
                phs[n] = cap.ep.constants[key]
        # host values
        henv = dict(phs)
        for n in cap.host_nodes:
            a = pytree.tree_map_only(torch.fx.Node, lambda x: henv[x], n.args)
            k = pytree.tree_map_only(torch.fx.Node, lambda x: henv[x], n.kwargs)
            henv[n] = n.target(*a, **k)
        feeds = []
        train_step = cap.trainable and torch.is_grad_enabled()
        if cap.cx.dropouts and self.model.training:
            self._steps += 1
        for kind, key in cap.arg_feed:
            if kind == "input":
                feeds.append(args[key])
            elif kind == "param":
                feeds.append(model.get_parameter(key))
            elif kind == "buffer":
                feeds.append(model.get_buffer(key))
            elif kind == "constant":
                feeds.append(cap.ep.constants[key])
            elif kind == "step":
                feeds.append(torch.tensor(float(self._steps), dtype=torch.float32, device=cap.device))
            else:
                feeds.append(_host_feed(key, henv, cap))
        if cap.trainable:
            if train_step:
                pack, unpack = _chained_hooks()
                with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
                    outs = _Step.apply(cap, *feeds)
                del feeds
            else:
                with torch.no_grad():
                    o = cap.runner.fwd(*feeds)
                outs = o[: 1 + cap.split.n_aux]
        else:
            with torch.no_grad():
                outs = cap.run_forward(*[f.detach() for f in feeds])
        if cap.loss_dtype != torch.float32:
            outs = (outs[0].to(cap.loss_dtype), *outs[1:])
        ck_out = lambda i: outs[cap.result_pos[i]]  # noqa: E731
        with torch.no_grad():
            for target, (rk, rv) in cap.buffer_writes:
                buf = model.get_buffer(target)
                new = ck_out(rv) if rk == "ck" else henv[rv] if rk == "host" else rv
                buf.copy_(new)
        users = []
        for rk, rv in cap.user_outputs:
            users.append(ck_out(rv) if rk == "ck" else henv[rv] if rk == "host" else rv)
        return pytree.tree_unflatten(users, cap.out_spec)


def _host_feed(ha, henv, cap):
    kind = ha.kind
    dt = _capture.CK_TO_TORCH[ha.type.dtype]  # float kinds: f32, bf16 or f16
    if kind.startswith("causal:"):  # additive causal mask, from the shape alone
        lq, sk = (int(x) for x in kind.split(":")[1:])
        return torch.full((lq, sk), float("-inf"), dtype=dt, device=cap.device).triu(1)
    value = henv[ha.node]
    device = cap.device
    if kind == "int":
        return value.to(torch.int64).reshape(ha.type.shape)
    if kind.startswith("int_ignore:"):
        v = value.to(torch.int64)
        return torch.where(v == int(kind.split(":")[1]), 0, v).reshape(ha.type.shape)
    if kind.startswith("keep:"):
        return (value != int(kind.split(":")[1])).to(dt).reshape(ha.type.shape)
    if kind == "float":
        return value.to(dt).reshape(ha.type.shape)
    if kind == "additive":  # a boolean attention mask: 0 where attended, -inf elsewhere
        return torch.zeros(value.shape, dtype=dt, device=device).masked_fill(~value.bool(), float("-inf"))
    if kind == "bool":
        return value.to(torch.bool).reshape(ha.type.shape)
    raise AssertionError(kind)


def compile(model, example_args, *, mode="greedy", budget=None, device_budget=None, pipeline=None, executor="aten"):
    """Captures `model` at `example_args`' shapes, plans its training step with
    ckopt and returns a CompiledModule (see the module docstring)."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if executor not in ("aten", "ckopt"):
        raise ValueError(f"executor must be 'aten' or 'ckopt', got {executor!r}")
    if mode not in ("none", "sqrt", "greedy", "log", "optimal"):
        raise ValueError(f"mode must be one of none, sqrt, greedy, log, optimal; got {mode!r}")
    if not isinstance(example_args, (tuple, list)):
        example_args = (example_args,)
    if executor == "ckopt":
        for p in model.parameters():
            if p.device.type != "cpu":
                raise ValueError("executor='ckopt' runs ckopt's cpu backend: move the model to the CPU")
    input_grads = {i: a.requires_grad for i, a in enumerate(example_args) if isinstance(a, torch.Tensor) and a.is_floating_point()}
    opts = dict(mode=mode, budget=budget, device_budget=device_budget, pipeline=pipeline, executor=executor,
                input_grads=input_grads)
    return CompiledModule(model, example_args, opts)
