//! Evaluation of one `ck` op on concrete tensors: the reference semantics.
//!
//! Written for clarity, not speed: plain loops over multi-indices, f32
//! arithmetic, sums accumulated in f32 in the order stated on each kernel
//! (row-major over the summed indices). Every other backend is tested
//! against these definitions.
//!
//! Entry: `eval_op` (an op of a function) or `eval_kind` (kind, attributes,
//! operands, result type). Both first re-check the operand shapes against the
//! op table's type rule (`ckopt_ir::infer_type`) with the declared result
//! type, so the kernels below may index without bounds worries and a
//! malformed call is an error, never a panic.
//!
//! Semantics worth stating (docs/ir.md's op set, made exact):
//! - `relu(x) = x > 0 ? x : 0`; `relu_grad(x, dy) = x > 0 ? dy : 0`.
//! - `exp`, `tanh`, `erf` and `sigmoid` are `ckopt_ir::math`'s (the one
//!   definition every backend computes bit for bit; < 1 ulp for exp and erf,
//!   < 1.5 for tanh); `log` and `sqrt` are Rust's `f32::ln` (the C library's
//!   `logf`, which the cpu kernels call too) and the IEEE square root;
//!   `constant` is its `value` attribute's elements.
//! - `max(a, b)` and `reduce_max` use `f32::max` (a NaN operand is ignored);
//!   `reduce_max` over an empty set is `-inf`, `reduce_sum` is 0.
//! - `broadcast {dims}`: `y[j] = x[j[dims[0]], j[dims[1]], ...]`.
//! - `transpose {perm}`: result dim i is input dim perm[i] (numpy).
//! - `matmul`: `[..., M, K] x [..., K, N]`; `transpose_a` means the stored
//!   `a` is `[..., K, M]`, `transpose_b` that `b` is `[..., N, K]`.
//! - `conv2d(x: NCHW, w: FCHW)`: `y[n,f,i,j] = sum_{c,p,q} x[n,c,i*sh+p-ph,
//!   j*sw+q-pw] * w[f,c,p,q]` (zero outside x): cross-correlation, as PyTorch.
//! - `conv2d_grad_input(dy, w)` and `conv2d_grad_filter(x, dy)`: the exact
//!   adjoints of that sum; input rows/cols no window touches get 0.
//! - pools: windows `window` at `stride`, no padding. `max_pool2d_grad(x, dy)`
//!   routes each window's gradient to the FIRST maximal element of the window
//!   in row-major order; `avg_pool2d_grad(dy)` spreads `dy / (kh*kw)` over the
//!   window; overlapping windows accumulate.
//! - `dropout {rate, seed}` (optional rank-0 step key operand):
//!   `y[i] = keep(i) ? x[i] / (1 - rate) : 0` with
//!   `keep = dropout_keep_key(dropout_key(seed, step), i, rate)`, i the flat
//!   row-major index (`ckopt_ir::random`).
//!
//! Complexity: each kernel is O(elements of its iteration space).

use crate::random::{dropout_key, dropout_keep_key};
use crate::tensor::{Tensor, for_each_index, num_elements, round_to, shape_of, strides, wrap_to};
use ckopt_ir::math;
use ckopt_ir::ops::{ElemClass, attr_bool, conv_groups, conv_params, pool_params};
use ckopt_ir::{Attr, Attrs, DType, Diag, Func, Op, OpKind, TensorType, infer_type};

/// Evaluates `op` (an op of `func`) on `inputs` (one tensor per operand).
/// Errors (with the op's location) when `op` is `ck.return`, when the inputs
/// do not fit the op's type rule, or when the result is too large.
pub fn eval_op(op: &Op, func: &Func, inputs: &[&Tensor]) -> Result<Tensor, Diag> {
    let err = |m: String| Diag::error(op.loc.clone(), format!("'ck.{}' op {m}", op.kind.name()));
    let result = op.result.ok_or_else(|| err("defines no value and cannot be evaluated".into()))?;
    let ty = func.values.get(result.index()).map(|v| &v.ty).ok_or_else(|| err("result value is not in the function".into()))?;
    eval_kind(op.kind, &op.attrs, inputs, ty).map_err(|d| err(d.message))
}

/// Evaluates an op given by kind, attributes and result type. The result type
/// matters for the ops whose shape is not inferable (fill, broadcast,
/// reshape, slice, conv2d_grad_*, avg_pool2d_grad) and is checked for all.
/// Errors are unlocated diagnostics (`Diag::unlocated`): `eval_op` reports
/// their message at the op.
pub fn eval_kind(kind: OpKind, attrs: &Attrs, inputs: &[&Tensor], result: &TensorType) -> Result<Tensor, Diag> {
    use OpKind::*;
    // Re-check the type rule on the actual shapes: afterwards all indexing is in range.
    let in_types: Vec<TensorType> =
        inputs.iter().map(|t| TensorType::new(t.shape.iter().map(|&d| d as u64).collect::<Vec<_>>(), t.dtype)).collect();
    let refs: Vec<&TensorType> = in_types.iter().collect();
    if kind == Return {
        return Err(Diag::unlocated("cannot be evaluated (it returns values, it defines none)"));
    }
    infer_type(kind, attrs, &refs, Some(result))?;
    for t in inputs {
        t.check().map_err(|e| Diag::unlocated(format!("operand of shape {:?}: {e}", t.shape)))?;
    }
    let out_shape = shape_of(result)?;
    if kind.elem_class() == ElemClass::Mixed {
        return crate::mixed::eval_mixed(kind, attrs, inputs, result, out_shape);
    }
    // Integer and bool operands: the ops of the Numeric and Any classes.
    if !result.dtype.is_float() || inputs.first().is_some_and(|t| !t.dtype.is_float()) {
        return eval_int(kind, attrs, inputs, result, out_shape);
    }
    let out = eval_float(kind, attrs, inputs, &out_shape)?;
    Ok(round_result(out, result.dtype))
}

/// A float result in its element type: bf16/f16 results are rounded to it
/// (round to nearest even), f32 ones are as computed.
fn round_result(mut out: Tensor, dt: DType) -> Tensor {
    if dt != DType::F32 {
        out.data.iter_mut().for_each(|v| *v = round_to(dt, *v));
    }
    out.dtype = dt;
    out
}

/// The integer and bool cases: data movement (any element type), fill, and
/// neg/add/sub/mul/max on i64/i32 (two's-complement wrapping, as numpy and
/// PyTorch). The verifier rejected every other op on these types.
fn eval_int(kind: OpKind, attrs: &Attrs, inputs: &[&Tensor], result: &TensorType, out_shape: Vec<usize>) -> Result<Tensor, Diag> {
    use OpKind::*;
    let dt = result.dtype;
    let x = || inputs[0];
    let wrap = |v: i64| wrap_to(dt, v);
    let un = |f: &dyn Fn(i64) -> i64| Tensor { ints: x().ints.iter().map(|&v| wrap(f(v))).collect(), ..x().clone() };
    let bin = |f: &dyn Fn(i64, i64) -> i64| Tensor {
        ints: inputs[0].ints.iter().zip(&inputs[1].ints).map(|(&a, &b)| wrap(f(a, b))).collect(),
        ..x().clone()
    };
    Ok(match kind {
        Neg => un(&|v| v.wrapping_neg()),
        Add => bin(&|a, b| a.wrapping_add(b)),
        Sub => bin(&|a, b| a.wrapping_sub(b)),
        Mul => bin(&|a, b| a.wrapping_mul(b)),
        Max => bin(&|a, b| a.max(b)),
        Fill => Tensor::full_of(&out_shape, dt, f64::from(f32_attr(attrs, "value"))),
        Broadcast | Transpose | Reshape | Slice | Concat => move_data(kind, attrs, inputs, out_shape),
        _ => return Err(Diag::unlocated(format!("has no integer semantics for {}", dt.name()))),
    })
}

/// Data movement on any element type: each result element is one operand
/// element, picked by a flat index computed from the verified shapes.
fn move_data(kind: OpKind, attrs: &Attrs, inputs: &[&Tensor], out_shape: Vec<usize>) -> Tensor {
    let x = inputs[0];
    match kind {
        OpKind::Reshape => x.reshaped(out_shape),
        OpKind::Broadcast => {
            let src = broadcast_index(x, &ints(attrs, "dims"), &out_shape);
            x.take(out_shape, &src)
        }
        OpKind::Transpose => {
            let src = transpose_index(x, &ints(attrs, "perm"), &out_shape);
            x.take(out_shape, &src)
        }
        OpKind::Slice => {
            let src = slice_index(x, &ints(attrs, "offsets"), &out_shape);
            x.take(out_shape, &src)
        }
        _ => concat(inputs, int_attr(attrs, "dim") as usize, &out_shape),
    }
}

/// The f32 semantics of every float op (bf16/f16 compute in f32, then
/// `round_result` rounds).
fn eval_float(kind: OpKind, attrs: &Attrs, inputs: &[&Tensor], out_shape: &[usize]) -> Result<Tensor, Diag> {
    use OpKind::*;
    let out_shape = out_shape.to_vec();
    let x = || inputs[0];
    Ok(match kind {
        Neg => unary(x(), |v| -v),
        Exp => unary(x(), math::expf),
        Log => unary(x(), f32::ln),
        Tanh => unary(x(), math::tanhf),
        Sigmoid => unary(x(), math::sigmoidf),
        Relu => unary(x(), |v| if v > 0.0 { v } else { 0.0 }),
        Sqrt => unary(x(), f32::sqrt),
        Rsqrt => unary(x(), |v| 1.0 / v.sqrt()),
        Erf => unary(x(), math::erff),
        Add => binary(inputs, |a, b| a + b),
        Sub => binary(inputs, |a, b| a - b),
        Mul => binary(inputs, |a, b| a * b),
        Div => binary(inputs, |a, b| a / b),
        Max => binary(inputs, f32::max),
        ReluGrad => binary(inputs, |x, dy| if x > 0.0 { dy } else { 0.0 }),
        Scale => {
            let s = f32_attr(attrs, "value");
            unary(x(), |v| s * v)
        }
        Fill => Tensor::full(&out_shape, f32_attr(attrs, "value")),
        // infer_type checked that the element count matches the shape.
        Constant => Tensor::vector(attrs.get("value").and_then(Attr::as_dense).map(|(_, d)| d.to_vec()).unwrap_or_default())
            .reshaped(out_shape),
        Dropout => {
            let step = inputs.get(1).and_then(|t| t.data.first().copied());
            dropout(x(), f32_attr(attrs, "rate"), dropout_key(int_attr(attrs, "seed"), step))
        }
        Broadcast | Transpose | Reshape | Slice | Concat => move_data(kind, attrs, inputs, out_shape),
        // Sums start from -0.0, the exact additive identity (-0.0 + v == v bit for bit,
        // also for v = -0.0), so a reduction over no dims is exactly its input.
        ReduceSum => reduce(x(), &ints(attrs, "dims"), &out_shape, -0.0, |acc, v| acc + v),
        ReduceMax => reduce(x(), &ints(attrs, "dims"), &out_shape, f32::NEG_INFINITY, f32::max),
        Matmul => matmul(inputs[0], inputs[1], attr_bool(attrs, "transpose_a"), attr_bool(attrs, "transpose_b"), &out_shape),
        Conv2d | Conv2dGradInput | Conv2dGradFilter => {
            let (s, p) = conv_params(attrs)?;
            let g = ConvGeom::new(s, p, conv_groups(attrs)?);
            match kind {
                Conv2d => conv2d(inputs[0], inputs[1], g, &out_shape),
                Conv2dGradInput => conv2d_grad_input(inputs[0], inputs[1], g, &out_shape),
                _ => conv2d_grad_filter(inputs[0], inputs[1], g, &out_shape),
            }
        }
        MaxPool2d | AvgPool2d | MaxPool2dGrad | AvgPool2dGrad => {
            let (w, s) = pool_params(attrs)?;
            let g = PoolGeom { kh: w[0] as usize, kw: w[1] as usize, sh: s[0] as usize, sw: s[1] as usize };
            match kind {
                MaxPool2d => max_pool2d(x(), g, &out_shape),
                AvgPool2d => avg_pool2d(x(), g, &out_shape),
                MaxPool2dGrad => max_pool2d_grad(inputs[0], inputs[1], g),
                _ => avg_pool2d_grad(x(), g, &out_shape),
            }
        }
        Gather | GatherGrad | TakeAlong | TakeAlongGrad | Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select | Cast | Iota
        | CrossEntropy | CrossEntropyGrad => {
            return Err(Diag::unlocated(format!("'ck.{}' is evaluated by interp's mixed module", kind.name())));
        }
        Return => return Err(Diag::unlocated("cannot be evaluated")),
    })
}

// ---- attribute readers (presence and kind were checked by infer_type) ----

fn f32_attr(attrs: &Attrs, name: &str) -> f32 {
    attrs.get(name).and_then(Attr::as_f32).unwrap_or(0.0)
}
fn int_attr(attrs: &Attrs, name: &str) -> i64 {
    attrs.get(name).and_then(Attr::as_int).unwrap_or(0)
}
/// An int-array attribute as usizes (infer_type checked they are in range).
fn ints(attrs: &Attrs, name: &str) -> Vec<usize> {
    attrs.get(name).and_then(Attr::as_ints).map(|v| v.iter().map(|&i| i.max(0) as usize).collect()).unwrap_or_default()
}

// ---- elementwise ----

fn unary(x: &Tensor, f: impl Fn(f32) -> f32) -> Tensor {
    Tensor { data: x.data.iter().map(|&v| f(v)).collect(), ..x.clone() }
}

fn binary(inputs: &[&Tensor], f: impl Fn(f32, f32) -> f32) -> Tensor {
    let (a, b) = (inputs[0], inputs[1]);
    Tensor { data: a.data.iter().zip(&b.data).map(|(&x, &y)| f(x, y)).collect(), ..a.clone() }
}

fn dropout(x: &Tensor, rate: f32, key: u64) -> Tensor {
    let data = x
        .data
        .iter()
        .enumerate()
        .map(|(i, &v)| if dropout_keep_key(key, i as u64, rate) { v / (1.0 - rate) } else { 0.0 })
        .collect();
    Tensor { data, ..x.clone() }
}

// ---- data movement ----

/// `y[j] = x[j[dims[0]], j[dims[1]], ...]`: the source flat index of each result element.
fn broadcast_index(x: &Tensor, dims: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let xs = strides(&x.shape);
    let mut src = vec![0; num_elements(out_shape).unwrap_or(0)];
    for_each_index(out_shape, |flat, j| src[flat] = dims.iter().enumerate().map(|(i, &d)| j[d] * xs[i]).sum());
    src
}

/// Folds every input element into the result element obtained by dropping
/// the reduced dims from its index; input elements visited in row-major order.
fn reduce(x: &Tensor, dims: &[usize], out_shape: &[usize], init: f32, f: impl Fn(f32, f32) -> f32) -> Tensor {
    let mut y = Tensor::full(out_shape, init);
    let ys = strides(out_shape);
    let kept: Vec<usize> = (0..x.rank()).filter(|d| !dims.contains(d)).collect();
    for_each_index(&x.shape, |flat, i| {
        let dst: usize = kept.iter().enumerate().map(|(k, &d)| i[d] * ys[k]).sum();
        y.data[dst] = f(y.data[dst], x.data[flat]);
    });
    y
}

/// Result dim i is input dim perm[i]: `y[j] = x[k]` with `k[perm[i]] = j[i]`.
fn transpose_index(x: &Tensor, perm: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let xs = strides(&x.shape);
    let mut src = vec![0; num_elements(out_shape).unwrap_or(0)];
    for_each_index(out_shape, |flat, j| src[flat] = perm.iter().enumerate().map(|(i, &p)| j[i] * xs[p]).sum());
    src
}

/// `y[j] = x[j + offsets]`.
fn slice_index(x: &Tensor, offsets: &[usize], out_shape: &[usize]) -> Vec<usize> {
    let xs = strides(&x.shape);
    let mut src = vec![0; num_elements(out_shape).unwrap_or(0)];
    for_each_index(out_shape, |flat, j| src[flat] = j.iter().zip(offsets).zip(&xs).map(|((a, o), s)| (a + o) * s).sum());
    src
}

/// Operands placed one after another along `dim` (any element type: the
/// operands' storages are concatenated in result order).
fn concat(inputs: &[&Tensor], dim: usize, out_shape: &[usize]) -> Tensor {
    // Result element -> (operand, its flat index).
    let n = num_elements(out_shape).unwrap_or(0);
    let mut from = vec![(0usize, 0usize); n];
    let ys = strides(out_shape);
    let mut base = 0;
    for (k, t) in inputs.iter().enumerate() {
        for_each_index(&t.shape, |flat, i| {
            let dst: usize = i.iter().enumerate().map(|(d, &v)| (if d == dim { v + base } else { v }) * ys[d]).sum();
            from[dst] = (k, flat);
        });
        base += t.shape[dim];
    }
    let first = inputs[0];
    let data = if first.dtype.is_float() { from.iter().map(|&(k, i)| inputs[k].data[i]).collect() } else { Vec::new() };
    let ints = if first.dtype.is_float() { Vec::new() } else { from.iter().map(|&(k, i)| inputs[k].ints[i]).collect() };
    Tensor { shape: out_shape.to_vec(), dtype: first.dtype, data, ints }
}

// ---- matmul ----

/// Batched matmul; `y[b, i, j] = sum_k A[b, i, k] * B[b, k, j]` summed in
/// increasing k, where A/B read the stored operands through the flags.
fn matmul(a: &Tensor, b: &Tensor, ta: bool, tb: bool, out_shape: &[usize]) -> Tensor {
    let r = out_shape.len();
    let (m, n) = (out_shape[r - 2], out_shape[r - 1]);
    let k = if ta { a.shape[r - 2] } else { a.shape[r - 1] };
    let batch: usize = out_shape[..r - 2].iter().product();
    let mut y = Tensor::zeros(out_shape);
    for bt in 0..batch {
        let (ao, bo, yo) = (bt * m * k, bt * k * n, bt * m * n);
        for i in 0..m {
            for j in 0..n {
                let mut acc = 0.0f32;
                for kk in 0..k {
                    let av = a.data[ao + if ta { kk * m + i } else { i * k + kk }];
                    let bv = b.data[bo + if tb { j * k + kk } else { kk * n + j }];
                    acc += av * bv;
                }
                y.data[yo + i * n + j] = acc;
            }
        }
    }
    y
}

// ---- convolution ----

/// Stride, padding and groups of a convolution.
#[derive(Clone, Copy, Debug)]
struct ConvGeom {
    sh: usize,
    sw: usize,
    ph: usize,
    pw: usize,
    groups: usize,
}

impl ConvGeom {
    fn new(s: [u64; 2], p: [u64; 2], groups: u64) -> Self {
        ConvGeom { sh: s[0] as usize, sw: s[1] as usize, ph: p[0] as usize, pw: p[1] as usize, groups: groups as usize }
    }
    /// Input coordinate read by output position `o` at filter tap `k` along an
    /// axis of extent `size`, or `None` when it falls in the zero padding.
    fn input_pos(o: usize, k: usize, stride: usize, pad: usize, size: usize) -> Option<usize> {
        (o * stride + k).checked_sub(pad).filter(|&p| p < size)
    }
}

/// Calls `f(x_index, w_index, y_index)` (each `[_, _, _, _]`) for every term
/// of the conv sum that reads inside the input (`x` of shape `[N, C, H, W]`,
/// filter `[F, C/G, KH, KW]`, `y` of shape `[N, F, OH, OW]`), looping over
/// n, f, i, j, c, p, q in that order (padding taps skipped); filter `f` of
/// group `f / (F/G)` reads input channel `(f / (F/G))·(C/G) + c`.
fn for_each_conv_term(
    x_shape: &[usize],
    w_shape: &[usize],
    y_shape: &[usize],
    g: ConvGeom,
    mut f: impl FnMut([usize; 4], [usize; 4], [usize; 4]),
) {
    let (nn, cc, h, w) = (x_shape[0], x_shape[1], x_shape[2], x_shape[3]);
    let (ff, cg, kh, kw) = (w_shape[0], w_shape[1], w_shape[2], w_shape[3]);
    let (oh, ow) = (y_shape[2], y_shape[3]);
    // The verifier checked C = G·cg and G | F.
    let fg = ff / g.groups.max(1);
    debug_assert_eq!(cc, cg * g.groups);
    for n in 0..nn {
        for fi in 0..ff {
            let c0 = fi / fg.max(1) * cg;
            for i in 0..oh {
                for j in 0..ow {
                    for c in 0..cg {
                        for p in 0..kh {
                            let Some(ih) = ConvGeom::input_pos(i, p, g.sh, g.ph, h) else { continue };
                            for q in 0..kw {
                                let Some(iw) = ConvGeom::input_pos(j, q, g.sw, g.pw, w) else { continue };
                                f([n, c0 + c, ih, iw], [fi, c, p, q], [n, fi, i, j]);
                            }
                        }
                    }
                }
            }
        }
    }
}

fn flat4(shape: &[usize], i: [usize; 4]) -> usize {
    ((i[0] * shape[1] + i[1]) * shape[2] + i[2]) * shape[3] + i[3]
}

/// `y[n,f,i,j] = sum_{c,p,q} x[n,c,i*sh+p-ph, j*sw+q-pw] * w[f,c,p,q]`.
fn conv2d(x: &Tensor, w: &Tensor, g: ConvGeom, out_shape: &[usize]) -> Tensor {
    let mut y = Tensor::zeros(out_shape);
    for_each_conv_term(&x.shape, &w.shape, out_shape, g, |xi, wi, yi| {
        y.data[flat4(out_shape, yi)] += x.data[flat4(&x.shape, xi)] * w.data[flat4(&w.shape, wi)];
    });
    y
}

/// `dx[n,c,h,w] = sum over the conv terms reading x[n,c,h,w] of dy[n,f,i,j] * w[f,c,p,q]`.
fn conv2d_grad_input(dy: &Tensor, w: &Tensor, g: ConvGeom, dx_shape: &[usize]) -> Tensor {
    let mut dx = Tensor::zeros(dx_shape);
    for_each_conv_term(dx_shape, &w.shape, &dy.shape, g, |xi, wi, yi| {
        dx.data[flat4(dx_shape, xi)] += dy.data[flat4(&dy.shape, yi)] * w.data[flat4(&w.shape, wi)];
    });
    dx
}

/// `dw[f,c,p,q] = sum over the conv terms using w[f,c,p,q] of dy[n,f,i,j] * x[n,c,h,w]`.
fn conv2d_grad_filter(x: &Tensor, dy: &Tensor, g: ConvGeom, dw_shape: &[usize]) -> Tensor {
    let mut dw = Tensor::zeros(dw_shape);
    for_each_conv_term(&x.shape, dw_shape, &dy.shape, g, |xi, wi, yi| {
        dw.data[flat4(dw_shape, wi)] += dy.data[flat4(&dy.shape, yi)] * x.data[flat4(&x.shape, xi)];
    });
    dw
}

// ---- pooling ----

/// Window and stride of a pool (no padding).
#[derive(Clone, Copy, Debug)]
struct PoolGeom {
    kh: usize,
    kw: usize,
    sh: usize,
    sw: usize,
}

/// Calls `f(y_flat, x_flats_of_window)` for every output position of a pool
/// over `x_shape` (`[N, C, H, W]`) with output `y_shape`; the window's input
/// positions are listed in row-major order.
fn for_each_window(x_shape: &[usize], y_shape: &[usize], g: PoolGeom, mut f: impl FnMut(usize, &[usize])) {
    let mut window = Vec::with_capacity(g.kh * g.kw);
    for_each_index(y_shape, |yf, yi| {
        window.clear();
        for p in 0..g.kh {
            for q in 0..g.kw {
                window.push(flat4(x_shape, [yi[0], yi[1], yi[2] * g.sh + p, yi[3] * g.sw + q]));
            }
        }
        f(yf, &window);
    });
}

/// Index (into `window`) of the first maximal element in row-major order.
fn first_argmax(x: &Tensor, window: &[usize]) -> usize {
    let mut best = 0;
    for (k, &i) in window.iter().enumerate() {
        if x.data[i] > x.data[window[best]] {
            best = k;
        }
    }
    best
}

fn max_pool2d(x: &Tensor, g: PoolGeom, out_shape: &[usize]) -> Tensor {
    let mut y = Tensor::zeros(out_shape);
    for_each_window(&x.shape, out_shape, g, |yf, win| {
        y.data[yf] = x.data[win[first_argmax(x, win)]];
    });
    y
}

fn avg_pool2d(x: &Tensor, g: PoolGeom, out_shape: &[usize]) -> Tensor {
    let mut y = Tensor::zeros(out_shape);
    let count = (g.kh * g.kw) as f32;
    for_each_window(&x.shape, out_shape, g, |yf, win| {
        let sum: f32 = win.iter().map(|&i| x.data[i]).sum();
        y.data[yf] = sum / count;
    });
    y
}

/// Each window's `dy` goes to its first maximal input element; accumulates.
fn max_pool2d_grad(x: &Tensor, dy: &Tensor, g: PoolGeom) -> Tensor {
    let mut dx = Tensor::zeros(&x.shape);
    for_each_window(&x.shape, &dy.shape, g, |yf, win| {
        dx.data[win[first_argmax(x, win)]] += dy.data[yf];
    });
    dx
}

/// Each window's `dy / (kh*kw)` goes to every element of the window; accumulates.
fn avg_pool2d_grad(dy: &Tensor, g: PoolGeom, dx_shape: &[usize]) -> Tensor {
    let mut dx = Tensor::zeros(dx_shape);
    let count = (g.kh * g.kw) as f32;
    for_each_window(dx_shape, &dy.shape, g, |yf, win| {
        for &i in win {
            dx.data[i] += dy.data[yf] / count;
        }
    });
    dx
}
