"""Reading the functions of a printed ck module (the printer's fixed form:
one op per line, MLIR generic syntax) into plain Python records, and writing
records back as ck text. The frontend plans with ckopt's passes, then reads
the planned gradient function here to split it into the forward and the
backward that torch's autograd runs."""

from __future__ import annotations

import dataclasses
import re

_DTYPES = ("f32", "bf16", "f16", "i64", "i32", "i1")


@dataclasses.dataclass(frozen=True)
class Type:
    shape: tuple[int, ...]
    dtype: str

    def __str__(self) -> str:
        if not self.shape:
            return f"tensor<{self.dtype}>"
        return "tensor<" + "x".join(map(str, self.shape)) + "x" + self.dtype + ">"

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @staticmethod
    def parse(s: str) -> "Type":
        s = s.strip()
        if not (s.startswith("tensor<") and s.endswith(">")):
            raise ValueError(f"not a ck tensor type: {s!r}")
        parts = s[len("tensor<") : -1].split("x")
        dtype = parts[-1]
        if dtype not in _DTYPES:
            raise ValueError(f"unknown element type in {s!r}")
        return Type(tuple(int(p) for p in parts[:-1]), dtype)


@dataclasses.dataclass
class Op:
    result: str | None
    kind: str  # without the "ck." prefix
    operands: list[str]
    attrs: dict[str, object]  # parsed values; raw text kept in raw_attrs
    raw_attrs: str  # the text between the braces, "" when none
    operand_types: list[Type]
    result_type: Type | None

    def text(self, drop=("ck.offset", "ck.fusion")) -> str:
        attrs = self.raw_attrs
        if drop and attrs:
            kept = [a for a in _split_top(attrs) if a.split("=")[0].strip() not in drop]
            attrs = ", ".join(kept)
        head = f"%{self.result} = " if self.result is not None else ""
        ops = ", ".join("%" + o for o in self.operands)
        tys = ", ".join(map(str, self.operand_types))
        res = str(self.result_type) if self.result_type is not None else "()"
        a = f" {{{attrs}}}" if attrs else ""
        return f'{head}"ck.{self.kind}"({ops}){a} : ({tys}) -> {res}'


@dataclasses.dataclass
class Arg:
    name: str
    type: Type
    attrs: str  # raw text between braces, "" when none


@dataclasses.dataclass
class Func:
    name: str
    args: list[Arg]
    result_types: list[Type]
    attrs: str
    body: list[Op]  # without the return
    results: list[str]  # operands of ck.return


def _split_top(s: str) -> list[str]:
    """Splits at commas outside brackets, angle brackets and strings."""
    out, depth, cur, in_str, esc = [], 0, [], False, False
    for c in s:
        if in_str:
            cur.append(c)
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        elif c in "[<(":
            depth += 1
        elif c in "]>)":
            depth -= 1
        elif c == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(c)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _attr_value(v: str) -> object:
    v = v.strip()
    if v in ("true", "false"):
        return v == "true"
    if v.startswith("[") and v.endswith("]"):
        inner = v[1:-1].strip()
        return [int(x) for x in inner.split(",")] if inner else []
    m = re.fullmatch(r"(-?[0-9.eE+\-]+|nan|inf|-inf|0x[0-9A-Fa-f]+) : (f32|i64)", v)
    if m:
        num, ty = m.groups()
        if ty == "i64":
            return int(num)
        if num.startswith("0x"):
            import struct

            return struct.unpack("<f", int(num, 16).to_bytes(4, "little"))[0]
        return float(num)
    return v  # dense<...>, strings: kept as text


def _attrs(raw: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for a in _split_top(raw):
        if "=" in a and not a.startswith('"'):
            k, v = a.split("=", 1)
            out[k.strip()] = _attr_value(v)
        else:
            out[a.strip()] = True
    return out


_OP = re.compile(r'^(?:%(\S+) = )?"ck\.(\w+)"\((.*?)\)(?: \{(.*)\})? : \((.*)\) -> (.*)$')
def _header(line: str):
    """(name, args text, results text, attributes text) of a func.func line."""
    m = re.match(r'func\.func @("(?:[^"\\]|\\.)*"|[^(]+)\(', line)
    if not m or not line.endswith("{"):
        raise ValueError(f"unexpected function header: {line}")
    i, depth = m.end(), 1
    start = i
    while depth:
        c = line[i]
        depth += c == "("
        depth -= c == ")"
        i += 1
    args = line[start : i - 1]
    rest = line[i:-1].strip()
    fattrs = ""
    if " attributes {" in " " + rest:
        rest, fattrs = rest.split("attributes {", 1)
        fattrs = fattrs.rstrip().removesuffix("}")
        rest = rest.strip()
    res = rest.removeprefix("->").strip()
    return m.group(1), args, res, fattrs


def _types(s: str) -> list[Type]:
    s = s.strip()
    if not s or s == "()":
        return []
    if s.startswith("(") and s.endswith(")"):
        s = s[1:-1]
    return [Type.parse(t) for t in _split_top(s)]


def parse_module(text: str) -> dict[str, Func]:
    funcs: dict[str, Func] = {}
    cur: Func | None = None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("func.func"):
            name, args, res, fattrs = _header(line)
            alist = []
            for a in _split_top(args):
                am = re.fullmatch(r"%(\S+): (tensor<[^>]*>)(?: \{(.*)\})?", a)
                if not am:
                    raise ValueError(f"unexpected argument: {a}")
                alist.append(Arg(am.group(1), Type.parse(am.group(2)), am.group(3) or ""))
            cur = Func(name.strip('"'), alist, _types(res or ""), fattrs or "", [], [])
            funcs[cur.name] = cur
        elif line.startswith('"ck.return"') and cur is not None:
            m = _OP.match(line)
            assert m, line
            cur.results = [o.strip()[1:] for o in _split_top(m.group(3))]
        elif line.startswith("%") or line.startswith('"ck.'):
            m = _OP.match(line)
            if not m or cur is None:
                raise ValueError(f"unexpected op line: {line}")
            res, kind, ops, raw, otys, rty = m.groups()
            operands = [o.strip()[1:] for o in _split_top(ops)] if ops.strip() else []
            rt = _types(rty)
            cur.body.append(Op(res, kind, operands, _attrs(raw or ""), raw or "", _types(otys), rt[0] if rt else None))
        elif line == "}" or line.startswith("module") or not line:
            continue
        else:
            raise ValueError(f"unexpected line in a ck module: {line}")
    return funcs


def print_func(name: str, args: list[Arg], body: list[Op], results: list[str], types: dict[str, Type]) -> str:
    """ck text of one function (ck.offset/ck.fusion dropped: the function is planned anew)."""
    a = ", ".join(f"%{x.name}: {x.type}" + (f" {{{x.attrs}}}" if x.attrs else "") for x in args)
    rts = [str(types[r]) for r in results]
    rt = rts[0] if len(rts) == 1 else "(" + ", ".join(rts) + ")"
    lines = [f"  func.func @{name}({a}) -> {rt} {{"]
    for op in body:
        lines.append("    " + op.text())
    ret_tys = ", ".join(rts)
    lines.append(f'    "ck.return"({", ".join("%" + r for r in results)}) : ({ret_tys}) -> ()')
    lines.append("  }")
    return "\n".join(lines)
