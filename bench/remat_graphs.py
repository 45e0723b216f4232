#!/usr/bin/env python3
"""Writes the general-graph remat test families (issue 21) as ck IR.

usage: bench/remat_graphs.py KIND [--depth N] [--n N] [--branches B] [--end] [--mirror]
                              [--regions A-B,C-D] [--seed S] [--ops N] > graph.ck

KIND:
  logchain  x_{i+1} = log(x_i . w_i), depth layers of n x n tiles (n=512: 1 MiB);
            --mirror marks every op ck.mirror (one region, as torch.utils.checkpoint);
            --regions 0-1,3-4 marks the layers of each range (inclusive) instead
  wide      --branches B chains of --depth layers tanh(h . w) off one input, of
            widths n*(b+1)/B; branch losses summed as they go, or --end: at the end
  selfprod  s = x . x^T, o = tanh(s) . x with x = inp . w (self-attention's scores)
  random    --ops N random steps (seeded by --seed) over a pool of --rows x --n values:
            tanh(v . w), v + u, v * u, exp(v) of pool values picked at random
            (branches, skips, fan-out); the loss sums every value nothing reads
The same graphs as passes/src/remat/families.rs (the unit tests).
"""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("kind", choices=["logchain", "wide", "selfprod", "random"])
ap.add_argument("--depth", type=int, default=5)
ap.add_argument("--n", type=int, default=512)
ap.add_argument("--rows", type=int, default=512)
ap.add_argument("--branches", type=int, default=10)
ap.add_argument("--end", action="store_true")
ap.add_argument("--mirror", action="store_true")
ap.add_argument("--regions", default="")
ap.add_argument("--seed", type=int, default=0)
ap.add_argument("--ops", type=int, default=12)
a = ap.parse_args()


def ty(r, c):
    return f"tensor<{r}x{c}xf32>"


S = "tensor<f32>"
if a.kind == "logchain":
    t, n = ty(a.n, a.n), a.n
    marked = set(range(a.depth)) if a.mirror else set()
    for r in filter(None, a.regions.split(",")):
        lo, hi = (int(x) for x in r.split("-"))
        marked |= set(range(lo, hi + 1))
    args = [f"%x: {t}"] + [f"%w{i}: {t} {{ck.param}}" for i in range(a.depth)]
    body, cur = [], "%x"
    for i in range(a.depth):
        m = " {ck.mirror}" if i in marked else ""
        body.append(f'    %m{i} = "ck.matmul"({cur}, %w{i}){m} : ({t}, {t}) -> {t}')
        body.append(f'    %l{i} = "ck.log"(%m{i}){m} : ({t}) -> {t}')
        cur = f"%l{i}"
    body.append(f'    %loss = "ck.reduce_sum"({cur}) {{dims = [0, 1]}} : ({t}) -> {S}')
    ret, name = "%loss", "chain"
elif a.kind == "wide":
    rows, n, B = a.rows, a.n, a.branches
    args, body, losses, total = [f"%x: {ty(rows, n)}"], [], [], None
    for b in range(B):
        w = max(8, -(-(n * (b + 1) // B) // 8) * 8)
        cur, cw = "%x", n
        for i in range(a.depth):
            args.append(f"%w{b}_{i}: {ty(cw, w)} {{ck.param}}")
            body.append(f'    %p{b}_{i} = "ck.matmul"({cur}, %w{b}_{i}) : ({ty(rows, cw)}, {ty(cw, w)}) -> {ty(rows, w)}')
            body.append(f'    %h{b}_{i} = "ck.tanh"(%p{b}_{i}) : ({ty(rows, w)}) -> {ty(rows, w)}')
            cur, cw = f"%h{b}_{i}", w
        body.append(f'    %s{b} = "ck.reduce_sum"({cur}) {{dims = [0, 1]}} : ({ty(rows, cw)}) -> {S}')
        if a.end:
            losses.append(f"%s{b}")
        elif total is None:
            total = f"%s{b}"
        else:
            body.append(f'    %t{b} = "ck.add"({total}, %s{b}) : ({S}, {S}) -> {S}')
            total = f"%t{b}"
    if a.end:
        total = losses[0]
        for b, l in enumerate(losses[1:], 1):
            body.append(f'    %t{b} = "ck.add"({total}, {l}) : ({S}, {S}) -> {S}')
            total = f"%t{b}"
    ret, name = total, "wide"
elif a.kind == "random":
    import random
    rng = random.Random(a.seed)
    t, wt = ty(a.rows, a.n), ty(a.n, a.n)
    args, body, pool, reads = [f"%x: {t}"], [], ["%x"], {"%x": 0}
    for i in range(a.ops):
        k = rng.choice(["dense", "dense", "add", "mul", "exp"])
        v = rng.choice(pool)
        if k == "dense":
            args.append(f"%w{i}: {wt} {{ck.param}}")
            body.append(f'    %p{i} = "ck.matmul"({v}, %w{i}) : ({t}, {wt}) -> {t}')
            body.append(f'    %v{i} = "ck.tanh"(%p{i}) : ({t}) -> {t}')
            reads[v] += 1
        elif k == "exp":
            body.append(f'    %v{i} = "ck.exp"({v}) : ({t}) -> {t}')
            reads[v] += 1
        else:
            u = rng.choice(pool)
            op = "ck.add" if k == "add" else "ck.mul"
            body.append(f'    %v{i} = "{op}"({v}, {u}) : ({t}, {t}) -> {t}')
            reads[v] += 1
            reads[u] += 1
        pool.append(f"%v{i}")
        reads[f"%v{i}"] = 0
    sinks = [v for v in pool if reads[v] == 0 and v != "%x"]
    total = None
    for j, v in enumerate(sinks):
        body.append(f'    %s{j} = "ck.reduce_sum"({v}) {{dims = [0, 1]}} : ({t}) -> {S}')
        if total is None:
            total = f"%s{j}"
        else:
            body.append(f'    %t{j} = "ck.add"({total}, %s{j}) : ({S}, {S}) -> {S}')
            total = f"%t{j}"
    ret, name = total, "rand"
else:
    t = ty(a.n, a.n)
    args = [f"%inp: {t}", f"%w: {t} {{ck.param}}"]
    body = [
        f'    %x = "ck.matmul"(%inp, %w) : ({t}, {t}) -> {t}',
        f'    %s = "ck.matmul"(%x, %x) {{transpose_b = true}} : ({t}, {t}) -> {t}',
        f'    %a = "ck.tanh"(%s) : ({t}) -> {t}',
        f'    %o = "ck.matmul"(%a, %x) : ({t}, {t}) -> {t}',
        f'    %loss = "ck.reduce_sum"(%o) {{dims = [0, 1]}} : ({t}) -> {S}',
    ]
    ret, name = "%loss", "attn"
print("module {")
print(f"  func.func @{name}({', '.join(args)}) -> {S} {{")
print("\n".join(body))
print(f'    "ck.return"({ret}) : ({S}) -> ()')
print("  }")
print("}")
