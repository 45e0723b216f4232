//! Import-time evaluation of nodes whose inputs are all constants: the
//! shape subgraphs exporters emit (Shape -> Gather -> Unsqueeze -> Concat ->
//! Reshape, Cast, ConstantOfShape, Range, Equal/Where, ...) and constant
//! arithmetic. Semantics are ONNX's (numpy broadcasting, negative axes,
//! Slice clamping); integers compute in i64, floats in f32 (what ck would
//! compute at run time, so folding never changes a result's rounding).
//!
//! `foldable(op)` says which op types are evaluated here; `eval` returns
//! the outputs or a message. No folded tensor may exceed
//! `MAX_FOLD_ELEMENTS` (a constant that large is an error, not an
//! allocation sized by a number read from the file).

use crate::import::NodeAttrs;
use crate::tensor::{CData, CTensor, DataDir, TensorError, dtype, from_proto, numel};

/// Largest constant (elements) import-time folding produces.
pub const MAX_FOLD_ELEMENTS: u64 = 1 << 24;

/// Why a node could not be evaluated at import (the importer prefixes the node).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FoldError {
    #[error("axis {axis} is out of range for rank {rank}")]
    Axis { axis: i64, rank: usize },
    #[error("shapes {0:?} and {1:?} do not broadcast")]
    Broadcast(Vec<u64>, Vec<u64>),
    #[error("constant of shape {0:?} is too large to fold at import (limit {MAX_FOLD_ELEMENTS} elements)")]
    TooLarge(Vec<u64>),
    #[error("input {0} is missing")]
    MissingInput(usize),
    #[error("negative dimension {dim} in shape {shape:?}")]
    NegativeDim { dim: i64, shape: Vec<i64> },
    #[error("shape entry {entry} is 0 but the input has rank {rank}")]
    ZeroEntry { entry: usize, rank: usize },
    #[error("invalid reshape target {0:?}")]
    ReshapeTarget(Vec<i64>),
    #[error("cannot reshape {input:?} to {spec:?}")]
    Reshape { input: Vec<u64>, spec: Vec<i64> },
    #[error("cannot reshape {input:?} ({total} elements) to {spec:?}")]
    ReshapeCount { input: Vec<u64>, total: u64, spec: Vec<i64> },
    #[error("integer arithmetic on {0} and {1} fails (overflow or division by zero)")]
    IntArith(i64, i64),
    #[error("Cast to {0} is not supported")]
    Cast(String),
    #[error("Gather index {index} is out of range for a dimension of size {dim}")]
    GatherIndex { index: i64, dim: u64 },
    #[error("Concat inputs {0:?} and {1:?} differ outside axis {2}")]
    Concat(Vec<u64>, Vec<u64>, usize),
    #[error("Unsqueeze axes {0:?} repeat")]
    UnsqueezeRepeat(Vec<i64>),
    #[error("Squeeze axis {axis} has size {size}, not 1")]
    Squeeze { axis: usize, size: u64 },
    #[error("Flatten axis {axis} is out of range for rank {rank}")]
    Flatten { axis: i64, rank: i64 },
    #[error("Slice starts {0:?} and ends {1:?} differ in length")]
    SliceLengths(Vec<i64>, Vec<i64>),
    /// A node without an input or attribute it needs, or with a value no
    /// evaluation is defined for (`Slice step 0`, `Reshape needs a shape`).
    #[error("{0}")]
    Invalid(&'static str),
    #[error("internal: {0} is not foldable")]
    NotFoldable(String),
    #[error(transparent)]
    Tensor(#[from] TensorError),
}

const FOLDABLE: &[&str] = &[
    "Constant", "Identity", "Cast", "Shape", "Size", "Gather", "Unsqueeze", "Squeeze", "Concat", "Reshape", "Slice",
    "Add", "Sub", "Mul", "Div", "Neg", "Equal", "Where", "Range", "ConstantOfShape", "Expand", "Transpose", "Sqrt",
    "Relu", "Exp", "Flatten", "Mod", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "Not", "And", "Or", "Xor",
    "Trilu",
];

/// Whether `eval` evaluates this op type.
pub fn foldable(op: &str) -> bool {
    FOLDABLE.contains(&op)
}

/// Normalizes a possibly negative axis for `rank` (ONNX: `-rank <= a < rank`).
pub fn axis(a: i64, rank: usize) -> Result<usize, FoldError> {
    let r = rank as i64;
    if a < -r || a >= r {
        return Err(FoldError::Axis { axis: a, rank });
    }
    Ok(if a < 0 { (a + r) as usize } else { a as usize })
}

/// numpy broadcasting of two shapes.
pub fn broadcast_shapes(a: &[u64], b: &[u64]) -> Result<Vec<u64>, FoldError> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let da = if i + a.len() >= n { a[i + a.len() - n] } else { 1 };
        let db = if i + b.len() >= n { b[i + b.len() - n] } else { 1 };
        out[i] = match (da, db) {
            _ if da == db => da,
            (1, d) | (d, 1) => d,
            _ => return Err(FoldError::Broadcast(a.to_vec(), b.to_vec())),
        };
    }
    Ok(out)
}

fn strides(shape: &[u64]) -> Vec<u64> {
    let mut s = vec![1u64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// The flat index into `inp` (broadcast to `out`) of flat output index `flat`.
fn bindex(flat: u64, out: &[u64], inp: &[u64]) -> usize {
    let os = strides(out);
    let is = strides(inp);
    let off = out.len() - inp.len();
    let mut src = 0u64;
    for (k, (&st, &d)) in os.iter().zip(out).enumerate() {
        let i = (flat / st) % d.max(1);
        if k >= off && inp[k - off] != 1 {
            src += i * is[k - off];
        }
    }
    src as usize
}

fn check_size(shape: &[u64]) -> Result<u64, FoldError> {
    match numel(shape) {
        Some(n) if n <= MAX_FOLD_ELEMENTS => Ok(n),
        _ => Err(FoldError::TooLarge(shape.to_vec())),
    }
}

fn need<'c>(ins: &[Option<&'c CTensor>], i: usize) -> Result<&'c CTensor, FoldError> {
    ins.get(i).copied().flatten().ok_or(FoldError::MissingInput(i))
}

/// Non-negative dims from an i64 shape tensor.
fn dims_of(t: &CTensor) -> Result<Vec<u64>, FoldError> {
    t.as_i64().iter().map(|&d| u64::try_from(d).map_err(|_| FoldError::NegativeDim { dim: d, shape: t.as_i64() })).collect()
}

/// The gather of whole elements `idx` (flat indices into `t`) into `shape`.
fn pick(t: &CTensor, shape: Vec<u64>, idx: &[usize]) -> CTensor {
    match &t.data {
        CData::F32(v) => CTensor::f32(shape, idx.iter().map(|&i| v[i]).collect()),
        CData::I64(v) => CTensor::i64(shape, idx.iter().map(|&i| v[i]).collect()),
    }
}

/// The target shape of ONNX Reshape: `0` copies the input dim (unless
/// `allowzero`), one `-1` is inferred.
pub fn reshape_target(input: &[u64], spec: &[i64], allowzero: bool) -> Result<Vec<u64>, FoldError> {
    let total = numel(input).ok_or(FoldError::Invalid("input too large"))?;
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &d) in spec.iter().enumerate() {
        match d {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allowzero => out.push(*input.get(i).ok_or(FoldError::ZeroEntry { entry: i, rank: input.len() })?),
            d if d >= 0 => out.push(d as u64),
            _ => return Err(FoldError::ReshapeTarget(spec.to_vec())),
        }
    }
    let known = numel(&out).ok_or(FoldError::Invalid("reshape target too large"))?;
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(FoldError::Reshape { input: input.to_vec(), spec: spec.to_vec() });
        }
        out[i] = total / known;
    } else if known != total {
        return Err(FoldError::ReshapeCount { input: input.to_vec(), total, spec: spec.to_vec() });
    }
    Ok(out)
}

/// ONNX Slice on one axis: clamped start and end for `step` (non-zero).
pub fn slice_range(start: i64, end: i64, step: i64, dim: u64) -> (i64, i64) {
    let d = dim as i64;
    let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    let (s, e) = (norm(start), norm(end));
    if step > 0 { (s.clamp(0, d), e.clamp(0, d)) } else { (s.clamp(-1, d - 1), e.clamp(-1, d - 1)) }
}

/// The value of a `Constant` node.
pub fn constant_value(a: &NodeAttrs<'_>, dir: &DataDir<'_>) -> Result<CTensor, FoldError> {
    if let Some(t) = a.tensor("value") {
        return Ok(from_proto(t, dir, "the 'value' of this Constant")?);
    }
    if let Some(v) = a.get("value_float").and_then(|x| x.f) {
        return Ok(CTensor::f32(vec![], vec![v]));
    }
    if let Some(x) = a.get("value_floats") {
        return Ok(CTensor::f32(vec![x.floats.len() as u64], x.floats.clone()));
    }
    if let Some(v) = a.get("value_int").and_then(|x| x.i) {
        return Ok(CTensor::i64(vec![], vec![v]));
    }
    if let Some(x) = a.get("value_ints") {
        return Ok(CTensor::i64(vec![x.ints.len() as u64], x.ints.clone()));
    }
    Err(FoldError::Invalid(
        "Constant without a supported value (value, value_float(s), value_int(s); sparse and string values are not supported)",
    ))
}

/// Elementwise binary with broadcasting; ints and floats combine as floats.
fn binary(a: &CTensor, b: &CTensor, fi: impl Fn(i64, i64) -> Option<i64>, ff: impl Fn(f32, f32) -> f32) -> Result<CTensor, FoldError> {
    let shape = broadcast_shapes(&a.shape, &b.shape)?;
    let n = check_size(&shape)?;
    match (&a.data, &b.data) {
        (CData::I64(x), CData::I64(y)) => {
            let mut out = Vec::with_capacity(n as usize);
            for i in 0..n {
                let (p, q) = (x[bindex(i, &shape, &a.shape)], y[bindex(i, &shape, &b.shape)]);
                out.push(fi(p, q).ok_or(FoldError::IntArith(p, q))?);
            }
            Ok(CTensor::i64(shape, out))
        }
        _ => {
            let (x, y) = (a.as_f32(), b.as_f32());
            let out = (0..n).map(|i| ff(x[bindex(i, &shape, &a.shape)], y[bindex(i, &shape, &b.shape)])).collect();
            Ok(CTensor::f32(shape, out))
        }
    }
}

/// Axes from the `axes` input (newer opsets) or attribute (older).
fn axes_of(a: &NodeAttrs<'_>, ins: &[Option<&CTensor>], input: usize) -> Option<Vec<i64>> {
    ins.get(input).copied().flatten().map(CTensor::as_i64).or_else(|| a.ints("axes"))
}

/// Evaluates `op` on constant inputs.
pub fn eval(op: &str, a: &NodeAttrs<'_>, ins: &[Option<&CTensor>], _opset: i64, dir: &DataDir<'_>) -> Result<Vec<CTensor>, FoldError> {
    let x = || need(ins, 0);
    let one = |t: CTensor| Ok(vec![t]);
    match op {
        "Constant" => one(constant_value(a, dir)?),
        "Identity" => one(x()?.clone()),
        "Cast" => {
            let to = a.int("to", 0) as i32;
            let t = x()?;
            if dtype::is_float(to) {
                one(CTensor::f32(t.shape.clone(), t.as_f32()))
            } else if to == dtype::BOOL {
                one(CTensor::i64(t.shape.clone(), t.as_f32().iter().map(|&v| i64::from(v != 0.0)).collect()))
            } else if matches!(to, dtype::INT64 | dtype::INT32 | dtype::INT16 | dtype::INT8 | dtype::UINT8 | dtype::UINT16 | dtype::UINT32 | dtype::UINT64) {
                one(CTensor::i64(t.shape.clone(), t.as_i64()))
            } else {
                Err(FoldError::Cast(dtype::name(to).to_string()))
            }
        }
        "Shape" => one(shape_tensor(&x()?.shape, a)),
        "Size" => one(CTensor::i64(vec![], vec![numel(&x()?.shape).unwrap_or(0) as i64])),
        "Gather" => {
            let (d, idx) = (x()?, need(ins, 1)?);
            let ax = axis(a.int("axis", 0), d.shape.len())?;
            let dim = d.shape[ax];
            let mut out_shape = d.shape[..ax].to_vec();
            out_shape.extend(&idx.shape);
            out_shape.extend(&d.shape[ax + 1..]);
            check_size(&out_shape)?;
            let outer: u64 = d.shape[..ax].iter().product();
            let inner: u64 = d.shape[ax + 1..].iter().product();
            let mut flat = Vec::new();
            for o in 0..outer {
                for &i in &idx.as_i64() {
                    let i = if i < 0 { i + dim as i64 } else { i };
                    if i < 0 || i as u64 >= dim {
                        return Err(FoldError::GatherIndex { index: i, dim });
                    }
                    for k in 0..inner {
                        flat.push(((o * dim + i as u64) * inner + k) as usize);
                    }
                }
            }
            one(pick(d, out_shape, &flat))
        }
        "Unsqueeze" => {
            let t = x()?;
            let axes = axes_of(a, ins, 1).ok_or(FoldError::Invalid("Unsqueeze needs axes"))?;
            one(CTensor { shape: unsqueeze_shape(&t.shape, &axes)?, data: t.data.clone() })
        }
        "Squeeze" => {
            let t = x()?;
            one(CTensor { shape: squeeze_shape(&t.shape, axes_of(a, ins, 1).as_deref())?, data: t.data.clone() })
        }
        "Flatten" => {
            let t = x()?;
            one(CTensor { shape: flatten_shape(&t.shape, a.int("axis", 1))?, data: t.data.clone() })
        }
        "Concat" => {
            let parts: Vec<&CTensor> = ins.iter().flatten().copied().collect();
            let first = parts.first().ok_or(FoldError::Invalid("Concat without inputs"))?;
            let ax = axis(a.int("axis", 0), first.shape.len())?;
            let mut shape = first.shape.clone();
            shape[ax] = 0;
            for p in &parts {
                if p.shape.len() != first.shape.len() || (0..shape.len()).any(|i| i != ax && p.shape[i] != first.shape[i]) {
                    return Err(FoldError::Concat(first.shape.clone(), p.shape.clone(), ax));
                }
                shape[ax] += p.shape[ax];
            }
            check_size(&shape)?;
            let outer: u64 = shape[..ax].iter().product();
            let floats = parts.iter().any(|p| p.is_float());
            let (mut fo, mut io) = (Vec::new(), Vec::new());
            for o in 0..outer {
                for p in &parts {
                    let chunk = (p.shape[ax..].iter().product::<u64>()) as usize;
                    let s = o as usize * chunk;
                    if floats {
                        fo.extend_from_slice(&p.as_f32()[s..s + chunk]);
                    } else {
                        io.extend_from_slice(&p.as_i64()[s..s + chunk]);
                    }
                }
            }
            one(if floats { CTensor::f32(shape, fo) } else { CTensor::i64(shape, io) })
        }
        "Reshape" => {
            let t = x()?;
            let spec = match ins.get(1).copied().flatten() {
                Some(s) => s.as_i64(),
                None => a.ints("shape").ok_or(FoldError::Invalid("Reshape needs a shape"))?,
            };
            one(CTensor { shape: reshape_target(&t.shape, &spec, a.int("allowzero", 0) != 0)?, data: t.data.clone() })
        }
        "Slice" => {
            let t = x()?;
            let (starts, ends, axes, steps) = slice_args(a, ins)?;
            let r = t.shape.len();
            let mut sel: Vec<Vec<u64>> = t.shape.iter().map(|&d| (0..d).collect()).collect();
            for (k, &ax) in axes.iter().enumerate() {
                let ax = axis(ax, r)?;
                let step = steps.get(k).copied().unwrap_or(1);
                if step == 0 {
                    return Err(FoldError::Invalid("Slice step 0"));
                }
                let (s, e) = slice_range(starts[k], ends[k], step, t.shape[ax]);
                let mut v = Vec::new();
                let mut i = s;
                while (step > 0 && i < e) || (step < 0 && i > e) {
                    v.push(i as u64);
                    i += step;
                }
                sel[ax] = v;
            }
            let shape: Vec<u64> = sel.iter().map(|v| v.len() as u64).collect();
            let n = check_size(&shape)?;
            let st = strides(&t.shape);
            let os = strides(&shape);
            let idx: Vec<usize> = (0..n)
                .map(|f| (0..r).map(|k| sel[k][((f / os[k]) % shape[k]) as usize] * st[k]).sum::<u64>() as usize)
                .collect();
            one(pick(t, shape, &idx))
        }
        "Add" => one(binary(x()?, need(ins, 1)?, i64::checked_add, |p, q| p + q)?),
        "Sub" => one(binary(x()?, need(ins, 1)?, i64::checked_sub, |p, q| p - q)?),
        "Mul" => one(binary(x()?, need(ins, 1)?, i64::checked_mul, |p, q| p * q)?),
        "Div" => one(binary(x()?, need(ins, 1)?, i64::checked_div, |p, q| p / q)?),
        "Mod" => {
            // fmod=0: the sign follows the divisor (Python's %); fmod=1: C's fmod.
            let fmod = a.int("fmod", 0) != 0;
            let int_mod = move |p: i64, q: i64| -> Option<i64> {
                let r = p.checked_rem(q)?;
                Some(if !fmod && r != 0 && (r < 0) != (q < 0) { r + q } else { r })
            };
            let flt = move |p: f32, q: f32| {
                let r = p % q;
                if !fmod && r != 0.0 && (r < 0.0) != (q < 0.0) { r + q } else { r }
            };
            one(binary(x()?, need(ins, 1)?, int_mod, flt)?)
        }
        "Equal" => {
            let r = binary(x()?, need(ins, 1)?, |p, q| Some(i64::from(p == q)), |p, q| if p == q { 1.0 } else { 0.0 })?;
            one(CTensor::i64(r.shape.clone(), r.as_i64()))
        }
        "Less" | "LessOrEqual" | "Greater" | "GreaterOrEqual" | "And" | "Or" | "Xor" => {
            let cmp = |p: f64, q: f64| match op {
                "Less" => p < q,
                "LessOrEqual" => p <= q,
                "Greater" => p > q,
                "GreaterOrEqual" => p >= q,
                "And" => p != 0.0 && q != 0.0,
                "Or" => p != 0.0 || q != 0.0,
                _ => (p != 0.0) != (q != 0.0),
            };
            let fi = |p: i64, q: i64| {
                Some(i64::from(match op {
                    "Less" => p < q,
                    "LessOrEqual" => p <= q,
                    "Greater" => p > q,
                    "GreaterOrEqual" => p >= q,
                    _ => cmp(p as f64, q as f64),
                }))
            };
            let r = binary(x()?, need(ins, 1)?, fi, |p, q| if cmp(f64::from(p), f64::from(q)) { 1.0 } else { 0.0 })?;
            one(CTensor::i64(r.shape.clone(), r.as_i64()))
        }
        "Not" => {
            let t = x()?;
            one(CTensor::i64(t.shape.clone(), t.as_i64().iter().map(|&v| i64::from(v == 0)).collect()))
        }
        "Trilu" => {
            let t = x()?;
            let k = ins.get(1).copied().flatten().and_then(|c| c.as_i64().first().copied()).unwrap_or(0);
            let upper = a.int("upper", 1) != 0;
            let r = t.shape.len();
            if r < 2 {
                return Err(FoldError::Invalid("Trilu needs an input of rank >= 2"));
            }
            let (m, n) = (t.shape[r - 2] as i64, t.shape[r - 1] as i64);
            let keep = |i: usize| {
                let (row, col) = ((i as i64 / n) % m.max(1), i as i64 % n.max(1));
                if upper { col - row >= k } else { col - row <= k }
            };
            one(match &t.data {
                CData::F32(v) => CTensor::f32(t.shape.clone(), v.iter().enumerate().map(|(i, &x)| if keep(i) { x } else { 0.0 }).collect()),
                CData::I64(v) => CTensor::i64(t.shape.clone(), v.iter().enumerate().map(|(i, &x)| if keep(i) { x } else { 0 }).collect()),
            })
        }
        "Neg" => {
            let t = x()?;
            one(match &t.data {
                CData::F32(v) => CTensor::f32(t.shape.clone(), v.iter().map(|x| -x).collect()),
                CData::I64(v) => CTensor::i64(t.shape.clone(), v.iter().map(|x| x.wrapping_neg()).collect()),
            })
        }
        "Sqrt" | "Relu" | "Exp" => {
            let t = x()?;
            let f: fn(f32) -> f32 = match op {
                "Sqrt" => f32::sqrt,
                "Exp" => f32::exp,
                _ => |v| if v > 0.0 { v } else { 0.0 },
            };
            one(CTensor::f32(t.shape.clone(), t.as_f32().into_iter().map(f).collect()))
        }
        "Where" => {
            let (c, p, q) = (x()?, need(ins, 1)?, need(ins, 2)?);
            let s1 = broadcast_shapes(&c.shape, &p.shape)?;
            let shape = broadcast_shapes(&s1, &q.shape)?;
            let n = check_size(&shape)?;
            let cv = c.as_i64();
            let take = |i: u64| cv[bindex(i, &shape, &c.shape)] != 0;
            if p.is_float() || q.is_float() {
                let (pv, qv) = (p.as_f32(), q.as_f32());
                let out = (0..n).map(|i| if take(i) { pv[bindex(i, &shape, &p.shape)] } else { qv[bindex(i, &shape, &q.shape)] }).collect();
                one(CTensor::f32(shape, out))
            } else {
                let (pv, qv) = (p.as_i64(), q.as_i64());
                let out = (0..n).map(|i| if take(i) { pv[bindex(i, &shape, &p.shape)] } else { qv[bindex(i, &shape, &q.shape)] }).collect();
                one(CTensor::i64(shape, out))
            }
        }
        "Range" => {
            let (s, l, d) = (x()?, need(ins, 1)?, need(ins, 2)?);
            if s.is_float() || l.is_float() || d.is_float() {
                let (s, l, d) = (s.as_f32()[0], l.as_f32()[0], d.as_f32()[0]);
                let n = ((l - s) / d).ceil().max(0.0) as u64;
                check_size(&[n])?;
                one(CTensor::f32(vec![n], (0..n).map(|i| s + i as f32 * d).collect()))
            } else {
                let (s, l, d) = (s.as_i64()[0], l.as_i64()[0], d.as_i64()[0]);
                if d == 0 {
                    return Err(FoldError::Invalid("Range with delta 0"));
                }
                let n = ((l - s) as f64 / d as f64).ceil().max(0.0) as u64;
                check_size(&[n])?;
                one(CTensor::i64(vec![n], (0..n as i64).map(|i| s + i * d).collect()))
            }
        }
        "ConstantOfShape" => {
            let shape = dims_of(x()?)?;
            let n = check_size(&shape)? as usize;
            let v = match a.tensor("value") {
                Some(t) => from_proto(t, dir, "ConstantOfShape value")?,
                None => CTensor::f32(vec![1], vec![0.0]),
            };
            one(match &v.data {
                CData::F32(d) => CTensor::f32(shape, vec![d.first().copied().unwrap_or(0.0); n]),
                CData::I64(d) => CTensor::i64(shape, vec![d.first().copied().unwrap_or(0); n]),
            })
        }
        "Expand" => {
            let t = x()?;
            let shape = broadcast_shapes(&t.shape, &dims_of(need(ins, 1)?)?)?;
            let n = check_size(&shape)?;
            let idx: Vec<usize> = (0..n).map(|i| bindex(i, &shape, &t.shape)).collect();
            one(pick(t, shape, &idx))
        }
        "Transpose" => {
            let t = x()?;
            let r = t.shape.len();
            let perm: Vec<usize> = match a.ints("perm") {
                Some(p) => p.iter().map(|&v| axis(v, r)).collect::<Result<_, _>>()?,
                None => (0..r).rev().collect(),
            };
            let shape: Vec<u64> = perm.iter().map(|&p| t.shape[p]).collect();
            let n = check_size(&shape)?;
            let (st, os) = (strides(&t.shape), strides(&shape));
            let idx: Vec<usize> = (0..n).map(|f| (0..r).map(|k| ((f / os[k]) % shape[k]) * st[perm[k]]).sum::<u64>() as usize).collect();
            one(pick(t, shape, &idx))
        }
        _ => Err(FoldError::NotFoldable(op.to_string())),
    }
}

/// `Shape` (with opset-15 `start`/`end`) of a static shape.
pub fn shape_tensor(shape: &[u64], a: &NodeAttrs<'_>) -> CTensor {
    let r = shape.len() as i64;
    let clamp = |v: i64| if v < 0 { (v + r).clamp(0, r) } else { v.clamp(0, r) } as usize;
    let s = clamp(a.int("start", 0));
    let e = clamp(a.int("end", r));
    let dims: Vec<i64> = if s < e { shape[s..e].iter().map(|&d| d as i64).collect() } else { Vec::new() };
    CTensor::i64(vec![dims.len() as u64], dims)
}

pub fn unsqueeze_shape(shape: &[u64], axes: &[i64]) -> Result<Vec<u64>, FoldError> {
    let r = shape.len() + axes.len();
    let mut ax: Vec<usize> = axes.iter().map(|&a| axis(a, r)).collect::<Result<_, _>>()?;
    ax.sort_unstable();
    if ax.windows(2).any(|w| w[0] == w[1]) {
        return Err(FoldError::UnsqueezeRepeat(axes.to_vec()));
    }
    let mut out = Vec::with_capacity(r);
    let mut it = shape.iter();
    for i in 0..r {
        if ax.contains(&i) {
            out.push(1);
        } else {
            out.push(*it.next().ok_or(FoldError::Invalid("bad Unsqueeze axes"))?);
        }
    }
    Ok(out)
}

pub fn squeeze_shape(shape: &[u64], axes: Option<&[i64]>) -> Result<Vec<u64>, FoldError> {
    match axes {
        None => Ok(shape.iter().copied().filter(|&d| d != 1).collect()),
        Some(axes) => {
            let ax: Vec<usize> = axes.iter().map(|&a| axis(a, shape.len())).collect::<Result<_, _>>()?;
            for &a in &ax {
                if shape[a] != 1 {
                    return Err(FoldError::Squeeze { axis: a, size: shape[a] });
                }
            }
            Ok(shape.iter().enumerate().filter(|(i, _)| !ax.contains(i)).map(|(_, &d)| d).collect())
        }
    }
}

pub fn flatten_shape(shape: &[u64], ax: i64) -> Result<Vec<u64>, FoldError> {
    let r = shape.len() as i64;
    let a = if ax < 0 { ax + r } else { ax };
    if a < 0 || a > r {
        return Err(FoldError::Flatten { axis: ax, rank: r });
    }
    let a = a as usize;
    Ok(vec![shape[..a].iter().product(), shape[a..].iter().product()])
}

/// (starts, ends, axes, steps) of a Slice.
pub type SliceArgs = (Vec<i64>, Vec<i64>, Vec<i64>, Vec<i64>);

/// Slice's starts, ends, axes (default 0..n) and steps (default 1), from
/// inputs (opset >= 10) or attributes (older).
pub fn slice_args(a: &NodeAttrs<'_>, ins: &[Option<&CTensor>]) -> Result<SliceArgs, FoldError> {
    let (starts, ends, axes, steps) = if ins.len() > 1 {
        let g = |i: usize| ins.get(i).copied().flatten().map(CTensor::as_i64);
        (g(1).ok_or(FoldError::Invalid("Slice needs constant starts"))?, g(2).ok_or(FoldError::Invalid("Slice needs constant ends"))?, g(3), g(4))
    } else {
        let starts = a.ints("starts").ok_or(FoldError::Invalid("Slice needs starts"))?;
        (starts, a.ints("ends").ok_or(FoldError::Invalid("Slice needs ends"))?, a.ints("axes"), None)
    };
    if starts.len() != ends.len() {
        return Err(FoldError::SliceLengths(starts, ends));
    }
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(FoldError::Invalid("Slice axes/steps lengths differ from starts"));
    }
    Ok((starts, ends, axes, steps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_logic_and_trilu_fold_on_constants() {
        let node = crate::proto::NodeProto::default();
        let a = NodeAttrs(&node);
        let dir = DataDir(None);
        let ints = CTensor::i64(vec![3], vec![1, 5, 3]);
        let three = CTensor::i64(vec![], vec![3]);
        let ev = |op: &str, ins: &[&CTensor]| {
            let ins: Vec<Option<&CTensor>> = ins.iter().map(|&c| Some(c)).collect();
            eval(op, &a, &ins, 17, &dir).unwrap().remove(0).as_i64()
        };
        assert_eq!(ev("Less", &[&ints, &three]), [1, 0, 0]);
        assert_eq!(ev("LessOrEqual", &[&ints, &three]), [1, 0, 1]);
        assert_eq!(ev("Greater", &[&ints, &three]), [0, 1, 0]);
        assert_eq!(ev("GreaterOrEqual", &[&ints, &three]), [0, 1, 1]);
        let f = CTensor::f32(vec![2], vec![0.5, -1.0]);
        let z = CTensor::f32(vec![], vec![0.0]);
        assert_eq!(ev("Less", &[&f, &z]), [0, 1]);
        let (p, q) = (CTensor::i64(vec![4], vec![0, 0, 1, 1]), CTensor::i64(vec![4], vec![0, 1, 0, 1]));
        assert_eq!(ev("And", &[&p, &q]), [0, 0, 0, 1]);
        assert_eq!(ev("Or", &[&p, &q]), [0, 1, 1, 1]);
        assert_eq!(ev("Xor", &[&p, &q]), [0, 1, 1, 0]);
        assert_eq!(ev("Not", &[&p]), [1, 1, 0, 0]);
        // Trilu (upper by default) of a 2x3 of ones, k = 0 and k = 1; lower with k = -1.
        let ones = CTensor::f32(vec![2, 3], vec![1.0; 6]);
        let k1 = CTensor::i64(vec![], vec![1]);
        let tri = |node: &crate::proto::NodeProto, ins: &[&CTensor]| {
            let ins: Vec<Option<&CTensor>> = ins.iter().map(|&c| Some(c)).collect();
            eval("Trilu", &NodeAttrs(node), &ins, 17, &dir).unwrap().remove(0).as_f32()
        };
        assert_eq!(tri(&node, &[&ones]), [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]);
        assert_eq!(tri(&node, &[&ones, &k1]), [0.0, 1.0, 1.0, 0.0, 0.0, 1.0]);
        let mut lower = crate::proto::NodeProto::default();
        lower.attribute.push(crate::proto::AttributeProto { name: Some("upper".into()), i: Some(0), ..Default::default() });
        let km1 = CTensor::i64(vec![], vec![-1]);
        assert_eq!(tri(&lower, &[&ones, &km1]), [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn broadcasting_follows_numpy() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]), Ok(vec![2, 4, 3]));
        assert_eq!(broadcast_shapes(&[], &[5]), Ok(vec![5]));
        assert!(broadcast_shapes(&[2, 3], &[4]).is_err());
    }

    #[test]
    fn reshape_target_handles_zero_and_minus_one() {
        assert_eq!(reshape_target(&[2, 3, 4], &[0, -1], false), Ok(vec![2, 12]));
        assert_eq!(reshape_target(&[2, 3, 4], &[-1], false), Ok(vec![24]));
        assert!(reshape_target(&[2, 3, 4], &[5, -1], false).is_err());
        assert!(reshape_target(&[2, 3], &[-1, -1], false).is_err());
    }

    #[test]
    fn slice_ranges_clamp_like_onnx() {
        assert_eq!(slice_range(0, i64::MAX, 1, 5), (0, 5));
        assert_eq!(slice_range(-2, -1, 1, 5), (3, 4));
        assert_eq!(slice_range(-1, i64::MIN, -1, 5), (4, -1));
    }

    #[test]
    fn axes_reject_out_of_range() {
        assert_eq!(axis(-1, 3), Ok(2));
        assert!(axis(3, 3).is_err());
        assert!(axis(-4, 3).is_err());
    }
}
