//! The reference semantics of the mixed-type ops (`ElemClass::Mixed`):
//! indexing, comparisons, logic, select, cast, iota, cross_entropy.
//!
//! Exact definitions (docs/ir.md states them too):
//! - `gather {axis}(x, idx)`: `y[p, j, q] = x[p, idx[j], q]` with `p` the
//!   dims before `axis`, `j` a multi-index of `idx`, `q` the dims after.
//! - `gather_grad {axis}(idx, dy)`: `dx` = zeros (+0.0), then for every
//!   element of `dy` in row-major order `dx[p, idx[j], q] += dy[p, j, q]`;
//!   so each element of `dx` sums its contributions in increasing flat
//!   index `j` of `idx` (the fixed order every backend keeps).
//! - `take_along {axis}(x, idx)`: `y[i] = x[i with i[axis] = idx[i]]`;
//!   `take_along_grad` adds `dy[i]` at that place, `i` in row-major order.
//! - an index outside `[0, n)` (n the size of `axis`) is an error naming
//!   the index value, its position in `idx` and the bound.
//! - comparisons: f32 comparisons for float operands (any NaN: `ne` true,
//!   the others false), integer comparisons otherwise; results 0 or 1.
//! - `cast`: float -> integer truncates toward zero (NaN gives 0; values
//!   outside the range saturate, as Rust's `as`); -> `i1` is `x != 0`
//!   (NaN gives 1); integer -> integer wraps (two's complement); integer ->
//!   float goes through f32 (exact below 2^24), then rounds to nearest even
//!   for bf16/f16; float -> float rounds to nearest even.
//! - `iota {dim}`: `y[i] = i[dim]`.
//! - `cross_entropy {ignore_index}(logits [N, C], labels [N])`: for each
//!   row n with `labels[n] != ignore_index`: `m = max_c x[n, c]`
//!   (`f32::max` from -inf, c increasing), `s = sum_c exp(x[n, c] - m)`
//!   (from -0.0, c increasing), `l_n = (m + ln s) - x[n, labels[n]]`; the
//!   loss is `(sum_n l_n) / count` (sum from -0.0 over kept rows in
//!   increasing n, count = kept rows as f32); no kept row gives NaN (0/0,
//!   as PyTorch). A kept label outside `[0, C)` is an error.
//! - `cross_entropy_grad(logits, labels, dy)`: kept rows
//!   `dx[n, c] = (exp(x[n, c] - m) / s - [c == label]) * (dy / count)`,
//!   ignored rows 0.
//!
//! Complexity: O(elements of the result, or of dy for the gradients).

use crate::tensor::{Tensor, for_each_index, num_elements, round_to, strides, wrap_to};
use ckopt_ir::mixed::ignore_index;
use ckopt_ir::{Attr, Attrs, DType, Diag, OpKind, TensorType};

fn axis(attrs: &Attrs, name: &str) -> usize {
    attrs.get(name).and_then(Attr::as_int).unwrap_or(0).max(0) as usize
}

/// The index at flat position `j` of `idx`, checked against `[0, n)`.
fn index(idx: &Tensor, j: usize, n: usize) -> Result<usize, Diag> {
    let v = idx.ints[j];
    if v < 0 || v as u64 >= n as u64 {
        let mut pos = vec![0usize; idx.rank()];
        let st = strides(&idx.shape);
        for (d, s) in st.iter().enumerate() {
            pos[d] = (j / s) % idx.shape[d].max(1);
        }
        return Err(Diag::unlocated(format!(
            "index {v} at position {pos:?} of the index operand is out of range [0, {n})"
        )));
    }
    Ok(v as usize)
}

/// A tensor of `shape`/`dtype` whose element i is `src[i]` of `x` (any element type).
fn pick(x: &Tensor, shape: Vec<usize>, src: &[usize]) -> Tensor {
    x.take(shape, src)
}

/// Evaluates a mixed op; the type rule was checked by the caller.
pub fn eval_mixed(kind: OpKind, attrs: &Attrs, inputs: &[&Tensor], result: &TensorType, out: Vec<usize>) -> Result<Tensor, Diag> {
    use OpKind::*;
    let dt = result.dtype;
    Ok(match kind {
        Gather => {
            let (x, idx) = (inputs[0], inputs[1]);
            let a = axis(attrs, "axis");
            let (outer, n, inner) = split(&x.shape, a);
            let k = idx.ints.len();
            let mut src = Vec::with_capacity(outer * k * inner);
            for p in 0..outer {
                for j in 0..k {
                    let i = index(idx, j, n)?;
                    src.extend((0..inner).map(|q| (p * n + i) * inner + q));
                }
            }
            pick(x, out, &src)
        }
        GatherGrad => {
            let (idx, dy) = (inputs[0], inputs[1]);
            let a = axis(attrs, "axis");
            let (outer, n, inner) = split(&out, a);
            let k = idx.ints.len();
            let mut dx = vec![0.0f32; outer * n * inner];
            for p in 0..outer {
                for j in 0..k {
                    let i = index(idx, j, n)?;
                    for q in 0..inner {
                        dx[(p * n + i) * inner + q] += dy.data[(p * k + j) * inner + q];
                    }
                }
            }
            floats(out, dt, dx)
        }
        TakeAlong | TakeAlongGrad => {
            let (idx, other) = if kind == TakeAlong { (inputs[1], inputs[0]) } else { (inputs[0], inputs[1]) };
            let a = axis(attrs, "axis");
            let big: Vec<usize> = if kind == TakeAlong { other.shape.clone() } else { out.clone() };
            let bs = strides(&big);
            let n = big[a];
            let mut place = vec![0usize; idx.ints.len()];
            let mut err = None;
            for_each_index(&idx.shape, |j, i| {
                if err.is_some() {
                    return;
                }
                match index(idx, j, n) {
                    Ok(v) => place[j] = i.iter().enumerate().map(|(d, &c)| if d == a { v } else { c } * bs[d]).sum(),
                    Err(e) => err = Some(e),
                }
            });
            if let Some(e) = err {
                return Err(e);
            }
            if kind == TakeAlong {
                pick(other, out, &place)
            } else {
                let mut dx = vec![0.0f32; num_elements(&out).unwrap_or(0)];
                for (j, &p) in place.iter().enumerate() {
                    dx[p] += other.data[j];
                }
                floats(out, dt, dx)
            }
        }
        Eq | Ne | Lt | Le | Gt | Ge => {
            let (a, b) = (inputs[0], inputs[1]);
            let n = a.num_elements();
            let c: Vec<i64> = if a.dtype.is_float() {
                (0..n).map(|i| i64::from(compare(kind, a.data[i], b.data[i]))).collect()
            } else {
                (0..n).map(|i| i64::from(compare(kind, a.ints[i], b.ints[i]))).collect()
            };
            Tensor { shape: out, dtype: DType::I1, data: Vec::new(), ints: c }
        }
        And | Or | Not => {
            let a = inputs[0];
            let c: Vec<i64> = match kind {
                Not => a.ints.iter().map(|&v| 1 - v).collect(),
                And => a.ints.iter().zip(&inputs[1].ints).map(|(&x, &y)| x & y).collect(),
                _ => a.ints.iter().zip(&inputs[1].ints).map(|(&x, &y)| x | y).collect(),
            };
            Tensor { shape: out, dtype: DType::I1, data: Vec::new(), ints: c }
        }
        Select => {
            let (c, a, b) = (inputs[0], inputs[1], inputs[2]);
            let n = a.num_elements();
            if a.dtype.is_float() {
                let data = (0..n).map(|i| if c.ints[i] != 0 { a.data[i] } else { b.data[i] }).collect();
                Tensor { shape: out, dtype: a.dtype, data, ints: Vec::new() }
            } else {
                let ints = (0..n).map(|i| if c.ints[i] != 0 { a.ints[i] } else { b.ints[i] }).collect();
                Tensor { shape: out, dtype: a.dtype, data: Vec::new(), ints }
            }
        }
        Cast => cast(inputs[0], dt, out),
        Iota => {
            let d = axis(attrs, "dim");
            let mut v = vec![0i64; num_elements(&out).unwrap_or(0)];
            for_each_index(&out, |flat, i| v[flat] = i[d] as i64);
            if dt.is_float() {
                floats(out, dt, v.iter().map(|&i| i as f32).collect())
            } else {
                Tensor { shape: out, dtype: dt, data: Vec::new(), ints: v }
            }
        }
        CrossEntropy | CrossEntropyGrad => {
            let (x, labels) = (inputs[0], inputs[1]);
            let ign = ignore_index(attrs);
            let (rows, c) = (x.shape[0], x.shape[1]);
            let mut kept = Vec::with_capacity(rows);
            for n in 0..rows {
                let l = labels.ints[n];
                if l == ign {
                    continue;
                }
                if l < 0 || l as u64 >= c as u64 {
                    return Err(Diag::unlocated(format!(
                        "label {l} at position [{n}] is out of range [0, {c}) and is not the ignore_index {ign}"
                    )));
                }
                kept.push((n, l as usize));
            }
            let count = kept.len() as f32;
            let row = |n: usize| &x.data[n * c..(n + 1) * c];
            let stats = |r: &[f32]| {
                let m = r.iter().fold(f32::NEG_INFINITY, |a, &v| a.max(v));
                let s = r.iter().fold(-0.0f32, |a, &v| a + ckopt_ir::math::expf(v - m));
                (m, s)
            };
            if kind == CrossEntropy {
                let mut total = -0.0f32;
                for &(n, l) in &kept {
                    let r = row(n);
                    let (m, s) = stats(r);
                    total += (m + s.ln()) - r[l];
                }
                Tensor::scalar(total / count)
            } else {
                let g = inputs[2].data[0] / count;
                let mut dx = vec![0.0f32; rows * c];
                for &(n, l) in &kept {
                    let r = row(n);
                    let (m, s) = stats(r);
                    for (k, &v) in r.iter().enumerate() {
                        let p = ckopt_ir::math::expf(v - m) / s;
                        dx[n * c + k] = (p - if k == l { 1.0 } else { 0.0 }) * g;
                    }
                }
                floats(out, dt, dx)
            }
        }
        _ => return Err(Diag::unlocated(format!("'ck.{}' is not a mixed-type op", kind.name()))),
    })
}

/// `(product of dims before a, dim a, product of dims after a)`.
fn split(shape: &[usize], a: usize) -> (usize, usize, usize) {
    (shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product())
}

/// A float tensor of `dt` from f32 values (rounded to bf16/f16).
fn floats(shape: Vec<usize>, dt: DType, data: Vec<f32>) -> Tensor {
    let data = if dt == DType::F32 { data } else { data.into_iter().map(|v| round_to(dt, v)).collect() };
    Tensor { shape, dtype: dt, data, ints: Vec::new() }
}

/// A comparison on f32 (IEEE: a NaN is unordered) or on integers.
fn compare<T: PartialOrd>(kind: OpKind, a: T, b: T) -> bool {
    match kind {
        OpKind::Eq => a == b,
        OpKind::Ne => a != b,
        OpKind::Lt => a < b,
        OpKind::Le => a <= b,
        OpKind::Gt => a > b,
        _ => a >= b,
    }
}

/// `cast` to `dt` (see the module doc).
fn cast(x: &Tensor, dt: DType, out: Vec<usize>) -> Tensor {
    let n = x.num_elements();
    if dt.is_float() {
        let data = (0..n).map(|i| if x.dtype.is_float() { x.data[i] } else { x.ints[i] as f32 }).collect();
        return floats(out, dt, data);
    }
    let ints = (0..n)
        .map(|i| {
            if x.dtype.is_float() {
                let v = x.data[i];
                match dt {
                    DType::I1 => i64::from(v != 0.0),
                    DType::I32 => i64::from(v as i32),
                    _ => v as i64,
                }
            } else {
                wrap_to(dt, x.ints[i])
            }
        })
        .collect();
    Tensor { shape: out, dtype: dt, data: Vec::new(), ints }
}
