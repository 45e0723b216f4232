#!/usr/bin/env python3
"""Writes a U-Net-like network as ck IR: a chain of `depth` layers
h[i+1] = tanh(h[i] W[i] (+ h[depth-i] for the second half)), so each output
of the first half is added into the mirror layer of the second half (long
skips, the graph the chain-of-stages view handles worst), then a
mean-squared loss. Used by bench/remat.sh --dag and docs/remat.md.

usage: bench/skipnet.py [--depth N] [--width W] [--batch B] > skipnet.ck
"""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--depth", type=int, default=16)
ap.add_argument("--width", type=int, default=256)
ap.add_argument("--batch", type=int, default=64)
a = ap.parse_args()
n, w, b = a.depth, a.width, a.batch
T = f"tensor<{b}x{w}xf32>"
W = f"tensor<{w}x{w}xf32>"
params = [f"%x: {T}", f"%t: {T}"] + [f"%w{i}: {W} {{ck.param}}" for i in range(n)]
out = ["module {", f"  func.func @skipnet({', '.join(params)}) -> tensor<f32> {{"]
h = ["%x"]
for i in range(n):
    out.append(f'    %m{i} = "ck.matmul"({h[i]}, %w{i}) : ({T}, {W}) -> {T}')
    z = f"%m{i}"
    j = n - i
    if i >= n // 2 and 0 < j < i:
        out.append(f'    %s{i} = "ck.add"(%m{i}, {h[j]}) : ({T}, {T}) -> {T}')
        z = f"%s{i}"
    out.append(f'    %h{i + 1} = "ck.tanh"({z}) : ({T}) -> {T}')
    h.append(f"%h{i + 1}")
out.append(f'    %d = "ck.sub"({h[n]}, %t) : ({T}, {T}) -> {T}')
out.append(f'    %q = "ck.mul"(%d, %d) : ({T}, {T}) -> {T}')
out.append(f'    %r = "ck.reduce_sum"(%q) {{dims = [0, 1]}} : ({T}) -> tensor<f32>')
out.append(f'    %l = "ck.scale"(%r) {{value = {1.0 / (b * w)!r} : f32}} : (tensor<f32>) -> tensor<f32>')
out.append('    "ck.return"(%l) : (tensor<f32>) -> ()')
out.append("  }")
out.append("}")
print("\n".join(out))
