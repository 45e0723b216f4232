//! ONNX node -> ck ops, one arm per supported op type.
//!
//! Every conversion states its ONNX semantics in terms of existing ck ops;
//! the only ck ops added for ONNX are `erf` and `constant`. Attribute values
//! outside what is converted exactly (grouped or dilated convolutions,
//! ceil-mode pooling, Slice steps other than 1, Pow exponents other than
//! 1, 2 and 0.5, ...) are errors naming the attribute, never an
//! approximation. Static shapes are known for every value, so all shape
//! arithmetic happens here at import time.

use crate::fold::{self, axis, broadcast_shapes};
use crate::import::{Importer, NodeAttrs, Val};
use crate::tensor::{CTensor, DataDir, dtype};
use ckopt_ir::{Attr, Attrs, Diag, OpKind, TensorType, ValueId, attrs};

type R<T> = Result<T, Diag>;

fn ints(v: &[u64]) -> Attr {
    Attr::IntArray(v.iter().map(|&d| d as i64).collect())
}

/// Converts one node (at least one input is not a constant, or the op is
/// not foldable). Returns one `Val` per output it produces.
pub fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], n_out: usize) -> R<Vec<Val>> {
    let x = inp(imp, ins, 0);
    let one = |v: ValueId| Ok(vec![Val::Dyn(v)]);
    let unsupported_outputs = |imp: &Importer<'_>, max: usize| -> R<()> {
        // Extra outputs (Dropout's mask aside) are not produced.
        if n_out > max { Err(imp.err(format!("outputs beyond the first {max} are not supported"))) } else { Ok(()) }
    };
    match op {
        "Add" | "Sub" | "Mul" | "Div" => {
            let (p, q) = (x?, inp(imp, ins, 1)?);
            let out = broadcast_shapes(&imp.shape(&p), &imp.shape(&q)).map_err(|m| imp.err(m))?;
            // Multiplying by a constant that is one number everywhere is a scale.
            if op == "Mul" {
                for (c, other) in [(&q, &p), (&p, &q)] {
                    if let Val::Const(t) = c
                        && let Some(s) = t.splat()
                    {
                        let o = imp.dynv(other)?;
                        let o = imp.bcast(o, &out)?;
                        return one(imp.scale(o, s)?);
                    }
                }
            }
            let pa = imp.operand(&p, &out)?;
            let qa = imp.operand(&q, &out)?;
            let kind = match op {
                "Add" => OpKind::Add,
                "Sub" => OpKind::Sub,
                "Mul" => OpKind::Mul,
                _ => OpKind::Div,
            };
            one(imp.bin(kind, pa, qa)?)
        }
        "Pow" => {
            let base = x?;
            let e = inp(imp, ins, 1)?;
            let ev = imp.known(&e).and_then(|c| c.splat()).ok_or_else(|| imp.err("Pow needs a constant exponent (one number)"))?;
            let out = broadcast_shapes(&imp.shape(&base), &imp.shape(&e)).map_err(|m| imp.err(m))?;
            let b = imp.dynv(&base)?;
            let b = imp.bcast(b, &out)?;
            match ev {
                2.0 => one(imp.bin(OpKind::Mul, b, b)?),
                1.0 => one(b),
                0.5 => one(imp.un(OpKind::Sqrt, b)?),
                _ => Err(imp.err(format!("Pow with exponent {ev} is not supported (exponents 1, 2 and 0.5 are)"))),
            }
        }
        "Relu" | "Sigmoid" | "Tanh" | "Sqrt" | "Erf" | "Exp" | "Log" | "Neg" => {
            let v = imp.dynv(&x?)?;
            let kind = match op {
                "Relu" => OpKind::Relu,
                "Sigmoid" => OpKind::Sigmoid,
                "Tanh" => OpKind::Tanh,
                "Sqrt" => OpKind::Sqrt,
                "Erf" => OpKind::Erf,
                "Exp" => OpKind::Exp,
                "Log" => OpKind::Log,
                _ => OpKind::Neg,
            };
            one(imp.un(kind, v)?)
        }
        "Gelu" => {
            let v = imp.dynv(&x?)?;
            one(gelu(imp, v, a.string("approximate").as_deref().unwrap_or("none"))?)
        }
        "Identity" => Ok(vec![x?]),
        "Dropout" => {
            let xv = x?;
            // training_mode: input 2 (opset 12+); absent or false = inference = identity.
            let training = match ins.get(2).cloned().flatten() {
                None => false,
                Some(t) => imp.known(&t).and_then(|c| c.as_i64().first().copied()).ok_or_else(|| imp.err("Dropout's training_mode must be a constant"))? != 0,
            };
            let shape = imp.shape(&xv);
            let y = if training {
                let ratio = match ins.get(1).cloned().flatten() {
                    Some(r) => imp.known(&r).and_then(|c| c.scalar_f32()).ok_or_else(|| imp.err("Dropout's ratio must be a constant"))?,
                    None => a.float("ratio", 0.5),
                };
                if !(0.0..1.0).contains(&ratio) {
                    return Err(imp.err(format!("Dropout ratio {ratio} is not in [0, 1)")));
                }
                let v = imp.dynv(&xv)?;
                let seed = a.int("seed", 0);
                Val::Dyn(imp.push(OpKind::Dropout, &[v], attrs([("rate", Attr::F32(ratio)), ("seed", Attr::Int(seed))]), None)?)
            } else {
                xv
            };
            if n_out > 1 && training {
                return Err(imp.err("Dropout's mask output is not supported in training mode"));
            }
            let n = shape.iter().product::<u64>() as usize;
            Ok(vec![y, Val::Const(CTensor::i64(shape, vec![1; n]))])
        }
        "Softmax" | "LogSoftmax" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            let r = s.len();
            let dims: Vec<usize> = if imp.opset < 13 {
                // Older opsets: coerce to 2-D at `axis` (default 1), i.e. normalize over dims axis.. together.
                let ax = axis(a.int("axis", 1), r).map_err(|m| imp.err(m))?;
                (ax..r).collect()
            } else {
                vec![axis(a.int("axis", -1), r).map_err(|m| imp.err(m))?]
            };
            if op == "Softmax" { one(softmax(imp, v, &dims)?) } else { one(log_softmax(imp, v, &dims)?) }
        }
        "Flatten" => {
            let v = imp.dynv(&x?)?;
            let s = fold::flatten_shape(&imp.ty(v), a.int("axis", 1)).map_err(|m| imp.err(m))?;
            one(imp.reshape(v, &s)?)
        }
        "Reshape" => {
            let v = imp.dynv(&x?)?;
            let spec = match ins.get(1).cloned().flatten() {
                Some(s) => imp.known(&s).ok_or_else(|| imp.err("Reshape's shape must be known at import (a constant or a folded shape computation)"))?.as_i64(),
                None => a.ints("shape").ok_or_else(|| imp.err("Reshape needs a shape"))?,
            };
            let t = fold::reshape_target(&imp.ty(v), &spec, a.int("allowzero", 0) != 0).map_err(|m| imp.err(m))?;
            one(imp.reshape(v, &t)?)
        }
        "Squeeze" | "Unsqueeze" => {
            let v = imp.dynv(&x?)?;
            let axes = match ins.get(1).cloned().flatten() {
                Some(t) => Some(imp.known(&t).ok_or_else(|| imp.err(format!("{op}'s axes must be constant")))?.as_i64()),
                None => a.ints("axes"),
            };
            let s = imp.ty(v);
            let t = if op == "Squeeze" {
                fold::squeeze_shape(&s, axes.as_deref())
            } else {
                fold::unsqueeze_shape(&s, &axes.ok_or_else(|| imp.err("Unsqueeze needs axes"))?)
            }
            .map_err(|m| imp.err(m))?;
            one(imp.reshape(v, &t)?)
        }
        "Transpose" => {
            let v = imp.dynv(&x?)?;
            let r = imp.ty(v).len();
            let perm: Vec<i64> = match a.ints("perm") {
                Some(p) => p.iter().map(|&q| axis(q, r).map(|u| u as i64)).collect::<Result<_, _>>().map_err(|m| imp.err(m))?,
                None => (0..r as i64).rev().collect(),
            };
            if perm.iter().enumerate().all(|(i, &p)| p == i as i64) {
                return one(v);
            }
            one(imp.push(OpKind::Transpose, &[v], attrs([("perm", Attr::IntArray(perm))]), None)?)
        }
        "Shape" => Ok(vec![Val::Const(fold::shape_tensor(&imp.shape(&x?), a))]),
        "Size" => Ok(vec![Val::Const(CTensor::i64(vec![], vec![imp.shape(&x?).iter().product::<u64>() as i64]))]),
        "Cast" => {
            let to = a.int("to", 0) as i32;
            if !dtype::is_float(to) {
                return Err(imp.err(format!("Cast of a computed tensor to {} is not supported (ck computes in f32)", dtype::name(to))));
            }
            Ok(vec![x?])
        }
        "Expand" => {
            let v = imp.dynv(&x?)?;
            let spec = imp.known(&inp(imp, ins, 1)?).ok_or_else(|| imp.err("Expand's shape must be constant"))?;
            let dims: Vec<u64> = spec.as_i64().iter().map(|&d| d.max(0) as u64).collect();
            let out = broadcast_shapes(&imp.ty(v), &dims).map_err(|m| imp.err(m))?;
            one(imp.bcast(v, &out)?)
        }
        "Gemm" => {
            unsupported_outputs(imp, 1)?;
            let (av, bv) = (imp.dynv(&x?)?, imp.dynv(&inp(imp, ins, 1)?)?);
            let (ta, tb) = (a.int("transA", 0) != 0, a.int("transB", 0) != 0);
            let (alpha, beta) = (a.float("alpha", 1.0), a.float("beta", 1.0));
            if imp.ty(av).len() != 2 || imp.ty(bv).len() != 2 {
                return Err(imp.err("Gemm needs 2-D A and B"));
            }
            let mut at = Attrs::new();
            if ta {
                at.insert("transpose_a".into(), Attr::Bool(true));
            }
            if tb {
                at.insert("transpose_b".into(), Attr::Bool(true));
            }
            let mm = imp.push(OpKind::Matmul, &[av, bv], at, None)?;
            let y = imp.scale(mm, alpha)?;
            match ins.get(2).cloned().flatten() {
                Some(c) if beta != 0.0 => {
                    let out = imp.ty(y);
                    let cv = imp.operand(&c, &out)?;
                    let cv = imp.scale(cv, beta)?;
                    one(imp.bin(OpKind::Add, y, cv)?)
                }
                _ => one(y),
            }
        }
        "MatMul" => {
            let (p, q) = (imp.dynv(&x?)?, imp.dynv(&inp(imp, ins, 1)?)?);
            one(matmul(imp, p, q)?)
        }
        "Conv" => conv(imp, a, ins).map(|v| vec![Val::Dyn(v)]),
        "BatchNormalization" => {
            if a.int("training_mode", 0) != 0 {
                return Err(imp.err("BatchNormalization with training_mode=1 is not supported (ckopt imports inference semantics: the file's running statistics)"));
            }
            unsupported_outputs(imp, 1)?;
            let xv = imp.dynv(&x?)?;
            let s = imp.ty(xv);
            if s.len() < 2 {
                return Err(imp.err("BatchNormalization needs an input of rank >= 2"));
            }
            let c = s[1];
            let eps = a.float("epsilon", 1e-5);
            let mean = imp.known(&inp(imp, ins, 3)?).ok_or_else(|| imp.err("BatchNormalization's mean must be an initializer or constant"))?;
            let var = imp.known(&inp(imp, ins, 4)?).ok_or_else(|| imp.err("BatchNormalization's var must be an initializer or constant"))?;
            if mean.shape != [c] || var.shape != [c] || imp.shape(&inp(imp, ins, 1)?) != [c] || imp.shape(&inp(imp, ins, 2)?) != [c] {
                return Err(imp.err(format!("BatchNormalization's scale, bias, mean and var must have shape [{c}]")));
            }
            // y = (x - mean) * (scale * 1/sqrt(var + eps)) + bias, mean and var folded.
            let inv: Vec<f32> = var.as_f32().iter().map(|&v| 1.0 / (v + eps).sqrt()).collect();
            let mv = imp.materialize(&CTensor::f32(vec![c], mean.as_f32()))?;
            let iv = imp.materialize(&CTensor::f32(vec![c], inv))?;
            let sv = imp.dynv(&inp(imp, ins, 1)?)?;
            let bv = imp.dynv(&inp(imp, ins, 2)?)?;
            let k = imp.bin(OpKind::Mul, sv, iv)?;
            let chan = |imp: &mut Importer<'_>, v: ValueId| imp.push(OpKind::Broadcast, &[v], attrs([("dims", Attr::IntArray(vec![1]))]), Some(TensorType::f32(s.clone())));
            let mb = chan(imp, mv)?;
            let xc = imp.bin(OpKind::Sub, xv, mb)?;
            let kb = chan(imp, k)?;
            let y = imp.bin(OpKind::Mul, xc, kb)?;
            let bb = chan(imp, bv)?;
            one(imp.bin(OpKind::Add, y, bb)?)
        }
        "MaxPool" | "AveragePool" => {
            if n_out > 1 {
                return Err(imp.err("MaxPool's Indices output is not supported"));
            }
            pool(imp, op, a, x?).map(|v| vec![Val::Dyn(v)])
        }
        "GlobalAveragePool" | "GlobalMaxPool" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            if s.len() < 3 {
                return Err(imp.err(format!("{op} needs an input of rank >= 3, got {s:?}")));
            }
            let dims: Vec<usize> = (2..s.len()).collect();
            let n: u64 = s[2..].iter().product();
            let r = if op == "GlobalAveragePool" {
                let t = imp.reduce(OpKind::ReduceSum, v, &dims)?;
                imp.scale(t, 1.0 / n as f32)?
            } else {
                imp.reduce(OpKind::ReduceMax, v, &dims)?
            };
            let mut keep = s[..2].to_vec();
            keep.extend(vec![1; s.len() - 2]);
            one(imp.reshape(r, &keep)?)
        }
        "LayerNormalization" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            let ax = axis(a.int("axis", -1), s.len()).map_err(|m| imp.err(m))?;
            let dims: Vec<usize> = (ax..s.len()).collect();
            let n: u64 = s[ax..].iter().product();
            let eps = a.float("epsilon", 1e-5);
            let sum = imp.reduce(OpKind::ReduceSum, v, &dims)?;
            let mean = imp.scale(sum, 1.0 / n as f32)?;
            let mb = imp.unreduce(mean, &s, &dims)?;
            let xc = imp.bin(OpKind::Sub, v, mb)?;
            let sq = imp.bin(OpKind::Mul, xc, xc)?;
            let ss = imp.reduce(OpKind::ReduceSum, sq, &dims)?;
            let var = imp.scale(ss, 1.0 / n as f32)?;
            let vs = imp.ty(var);
            let e = imp.fill(&vs, eps)?;
            let ve = imp.bin(OpKind::Add, var, e)?;
            let inv = imp.un(OpKind::Rsqrt, ve)?;
            let ib = imp.unreduce(inv, &s, &dims)?;
            let y = imp.bin(OpKind::Mul, xc, ib)?;
            let scale = imp.operand(&inp(imp, ins, 1)?, &s)?;
            let y = imp.bin(OpKind::Mul, y, scale)?;
            let y = match ins.get(2).cloned().flatten() {
                Some(b) => {
                    let bv = imp.operand(&b, &s)?;
                    imp.bin(OpKind::Add, y, bv)?
                }
                None => y,
            };
            // Optional outputs Mean and InvStdDev, with the normalized dims kept as 1.
            let keep: Vec<u64> = s.iter().enumerate().map(|(i, &d)| if i >= ax { 1 } else { d }).collect();
            let mut out = vec![Val::Dyn(y)];
            if n_out > 1 {
                out.push(Val::Dyn(imp.reshape(mean, &keep)?));
            }
            if n_out > 2 {
                out.push(Val::Dyn(imp.reshape(inv, &keep)?));
            }
            Ok(out)
        }
        "ReduceMean" | "ReduceSum" | "ReduceMax" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            // Axes: an input from opset 13 (ReduceSum) or 18 (the others), else an attribute.
            let axes_input = ins.get(1).cloned().flatten();
            let axes = match axes_input {
                Some(t) => Some(imp.known(&t).ok_or_else(|| imp.err(format!("{op}'s axes must be constant")))?.as_i64()),
                None => a.ints("axes"),
            };
            let noop = a.int("noop_with_empty_axes", 0) != 0;
            let dims: Vec<usize> = match axes {
                Some(ax) if !ax.is_empty() => {
                    let mut d: Vec<usize> = ax.iter().map(|&q| axis(q, s.len())).collect::<Result<_, _>>().map_err(|m| imp.err(m))?;
                    d.sort_unstable();
                    d.dedup();
                    d
                }
                _ if noop => return one(v),
                _ => (0..s.len()).collect(),
            };
            let n: u64 = dims.iter().map(|&d| s[d]).product();
            let r = match op {
                "ReduceMax" => imp.reduce(OpKind::ReduceMax, v, &dims)?,
                "ReduceSum" => imp.reduce(OpKind::ReduceSum, v, &dims)?,
                _ => {
                    let t = imp.reduce(OpKind::ReduceSum, v, &dims)?;
                    imp.scale(t, 1.0 / n.max(1) as f32)?
                }
            };
            if a.int("keepdims", 1) != 0 {
                let keep: Vec<u64> = s.iter().enumerate().map(|(i, &d)| if dims.contains(&i) { 1 } else { d }).collect();
                one(imp.reshape(r, &keep)?)
            } else {
                one(r)
            }
        }
        "Slice" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            let known: Vec<Option<CTensor>> = ins.iter().map(|o| o.as_ref().and_then(|v| imp.known(v))).collect();
            for (i, o) in ins.iter().enumerate().skip(1) {
                if o.is_some() && known[i].is_none() {
                    return Err(imp.err("Slice's starts/ends/axes/steps must be constant"));
                }
            }
            let refs: Vec<Option<&CTensor>> = known.iter().map(Option::as_ref).collect();
            let (starts, ends, axes, steps) = fold::slice_args(a, &refs).map_err(|m| imp.err(m))?;
            let mut offs = vec![0u64; s.len()];
            let mut size = s.clone();
            for (k, &ax) in axes.iter().enumerate() {
                let ax = axis(ax, s.len()).map_err(|m| imp.err(m))?;
                if steps[k] != 1 {
                    return Err(imp.err(format!("Slice with step {} is not supported (step 1 is)", steps[k])));
                }
                let (b, e) = fold::slice_range(starts[k], ends[k], 1, s[ax]);
                offs[ax] = b as u64;
                size[ax] = (e - b).max(0) as u64;
            }
            one(slice(imp, v, &offs, &size)?)
        }
        "Split" => {
            let v = imp.dynv(&x?)?;
            let s = imp.ty(v);
            let ax = axis(a.int("axis", 0), s.len()).map_err(|m| imp.err(m))?;
            let sizes: Vec<u64> = match ins.get(1).cloned().flatten() {
                Some(t) => imp.known(&t).ok_or_else(|| imp.err("Split's sizes must be constant"))?.as_i64().iter().map(|&d| d.max(0) as u64).collect(),
                None => match a.ints("split") {
                    Some(sp) => sp.iter().map(|&d| d.max(0) as u64).collect(),
                    None => {
                        let k = a.int("num_outputs", n_out as i64).max(1) as u64;
                        let chunk = s[ax].div_ceil(k);
                        (0..k).map(|i| chunk.min(s[ax].saturating_sub(i * chunk))).collect()
                    }
                },
            };
            if sizes.iter().sum::<u64>() != s[ax] || sizes.len() != n_out {
                return Err(imp.err(format!("Split sizes {sizes:?} do not tile dimension {ax} of {s:?} into {n_out} outputs")));
            }
            let mut out = Vec::with_capacity(sizes.len());
            let mut at = 0;
            for &sz in &sizes {
                let mut offs = vec![0; s.len()];
                offs[ax] = at;
                let mut size = s.clone();
                size[ax] = sz;
                out.push(Val::Dyn(slice(imp, v, &offs, &size)?));
                at += sz;
            }
            Ok(out)
        }
        "Concat" => {
            let vals: Vec<Val> = ins.iter().flatten().cloned().collect();
            let first = vals.first().ok_or_else(|| imp.err("Concat without inputs"))?;
            let r = imp.shape(first).len();
            let ax = axis(a.int("axis", 0), r).map_err(|m| imp.err(m))?;
            let mut parts = Vec::new();
            for v in &vals {
                if imp.shape(v).get(ax) == Some(&0) {
                    continue;
                }
                parts.push(imp.dynv(v)?);
            }
            if parts.len() == 1 {
                return one(parts[0]);
            }
            one(imp.push(OpKind::Concat, &parts, attrs([("dim", Attr::Int(ax as i64))]), None)?)
        }
        "Gather" => {
            let data = x?;
            let idx = imp.known(&inp(imp, ins, 1)?).ok_or_else(|| imp.err("Gather with computed indices is not supported (the indices must be constant)"))?;
            let v = imp.dynv(&data)?;
            let s = imp.ty(v);
            let ax = axis(a.int("axis", 0), s.len()).map_err(|m| imp.err(m))?;
            let mut parts = Vec::new();
            for &i in &idx.as_i64() {
                let i = if i < 0 { i + s[ax] as i64 } else { i };
                if i < 0 || i as u64 >= s[ax] {
                    return Err(imp.err(format!("Gather index {i} is out of range for dimension {ax} of size {}", s[ax])));
                }
                let mut offs = vec![0; s.len()];
                offs[ax] = i as u64;
                let mut size = s.clone();
                size[ax] = 1;
                parts.push(slice(imp, v, &offs, &size)?);
            }
            if parts.is_empty() {
                return Err(imp.err("Gather with no indices is not supported"));
            }
            let cat = if parts.len() == 1 { parts[0] } else { imp.push(OpKind::Concat, &parts, attrs([("dim", Attr::Int(ax as i64))]), None)? };
            let mut shape = s[..ax].to_vec();
            shape.extend(&idx.shape);
            shape.extend(&s[ax + 1..]);
            one(imp.reshape(cat, &shape)?)
        }
        "Constant" => {
            let c = fold::constant_value(a, &DataDir(None)).map_err(|m| imp.err(m))?;
            Ok(vec![Val::Const(c)])
        }
        _ if fold::foldable(op) => Err(imp.err(format!("{op} on a computed (non-constant) tensor is not supported; ckopt only evaluates it on constants"))),
        _ => Err(imp.err(format!("unsupported ONNX op '{op}' (ckopt imports: {})", crate::SUPPORTED_OPS.join(", ")))),
    }
}

/// Input `i` of the node, which must be present.
fn inp(imp: &Importer<'_>, ins: &[Option<Val>], i: usize) -> R<Val> {
    ins.get(i).cloned().flatten().ok_or_else(|| imp.err(format!("input {i} is required")))
}

/// `ck.slice` (no-op when it is the whole tensor).
fn slice(imp: &mut Importer<'_>, v: ValueId, offs: &[u64], size: &[u64]) -> R<ValueId> {
    if size.contains(&0) {
        return Err(imp.err(format!("an empty slice (size {size:?}) is not supported")));
    }
    if imp.ty(v) == size {
        return Ok(v);
    }
    imp.push(OpKind::Slice, &[v], attrs([("offsets", ints(offs))]), Some(TensorType::f32(size.to_vec())))
}

/// softmax over `dims`: exp(x - max) / sum(exp(x - max)).
pub fn softmax(imp: &mut Importer<'_>, x: ValueId, dims: &[usize]) -> R<ValueId> {
    let s = imp.ty(x);
    let m = imp.reduce(OpKind::ReduceMax, x, dims)?;
    let mb = imp.unreduce(m, &s, dims)?;
    let z = imp.bin(OpKind::Sub, x, mb)?;
    let e = imp.un(OpKind::Exp, z)?;
    let sum = imp.reduce(OpKind::ReduceSum, e, dims)?;
    let sb = imp.unreduce(sum, &s, dims)?;
    imp.bin(OpKind::Div, e, sb)
}

/// log softmax over `dims`: (x - max) - log(sum(exp(x - max))).
pub fn log_softmax(imp: &mut Importer<'_>, x: ValueId, dims: &[usize]) -> R<ValueId> {
    let s = imp.ty(x);
    let m = imp.reduce(OpKind::ReduceMax, x, dims)?;
    let mb = imp.unreduce(m, &s, dims)?;
    let z = imp.bin(OpKind::Sub, x, mb)?;
    let e = imp.un(OpKind::Exp, z)?;
    let sum = imp.reduce(OpKind::ReduceSum, e, dims)?;
    let l = imp.un(OpKind::Log, sum)?;
    let lb = imp.unreduce(l, &s, dims)?;
    imp.bin(OpKind::Sub, z, lb)
}

/// Gelu: `0.5 x (1 + erf(x / sqrt 2))`, or with `approximate = "tanh"`
/// `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`.
fn gelu(imp: &mut Importer<'_>, x: ValueId, approximate: &str) -> R<ValueId> {
    let s = imp.ty(x);
    let inner = match approximate {
        "none" => {
            let t = imp.scale(x, std::f32::consts::FRAC_1_SQRT_2)?;
            imp.un(OpKind::Erf, t)?
        }
        "tanh" => {
            let x2 = imp.bin(OpKind::Mul, x, x)?;
            let x3 = imp.bin(OpKind::Mul, x2, x)?;
            let c = imp.scale(x3, 0.044715)?;
            let u = imp.bin(OpKind::Add, x, c)?;
            let k = (2.0f32 / std::f32::consts::PI).sqrt();
            let v = imp.scale(u, k)?;
            imp.un(OpKind::Tanh, v)?
        }
        other => return Err(imp.err(format!("Gelu approximate='{other}' is not supported (none, tanh)"))),
    };
    let one = imp.fill(&s, 1.0)?;
    let p = imp.bin(OpKind::Add, inner, one)?;
    let h = imp.scale(x, 0.5)?;
    imp.bin(OpKind::Mul, h, p)
}

/// ONNX MatMul (numpy matmul): 1-D operands are promoted and the added dim
/// removed; batch dims broadcast. A batched left operand times a 2-D right
/// operand is one 2-D matmul on the flattened rows.
fn matmul(imp: &mut Importer<'_>, a: ValueId, b: ValueId) -> R<ValueId> {
    let (sa, sb) = (imp.ty(a), imp.ty(b));
    if sa.is_empty() || sb.is_empty() {
        return Err(imp.err("MatMul of a scalar"));
    }
    let a2 = if sa.len() == 1 { imp.reshape(a, &[1, sa[0]])? } else { a };
    let b2 = if sb.len() == 1 { imp.reshape(b, &[sb[0], 1])? } else { b };
    let (sa2, sb2) = (imp.ty(a2), imp.ty(b2));
    let (ra, rb) = (sa2.len(), sb2.len());
    let (m, k, k2, n) = (sa2[ra - 2], sa2[ra - 1], sb2[rb - 2], sb2[rb - 1]);
    if k != k2 {
        return Err(imp.err(format!("MatMul contraction dims differ: {sa:?} x {sb:?}")));
    }
    let batch = broadcast_shapes(&sa2[..ra - 2], &sb2[..rb - 2]).map_err(|e| imp.err(e))?;
    let mut out = batch.clone();
    out.extend([m, n]);
    let y = if rb == 2 && ra > 2 {
        let rows: u64 = sa2[..ra - 1].iter().product();
        let flat = imp.reshape(a2, &[rows, k])?;
        let mm = imp.push(OpKind::Matmul, &[flat, b2], Attrs::new(), None)?;
        let mut s = sa2[..ra - 1].to_vec();
        s.push(n);
        imp.reshape(mm, &s)?
    } else {
        let mut ta = batch.clone();
        ta.extend([m, k]);
        let mut tb = batch.clone();
        tb.extend([k, n]);
        let ab = imp.bcast(a2, &ta)?;
        let bb = imp.bcast(b2, &tb)?;
        imp.push(OpKind::Matmul, &[ab, bb], Attrs::new(), None)?
    };
    let mut fin = batch;
    if sa.len() > 1 {
        fin.push(m);
    }
    if sb.len() > 1 {
        fin.push(n);
    }
    imp.reshape(y, &fin)
}

/// Explicit pads for a 2-D window op: `[top, left, bottom, right]` from
/// `pads` or `auto_pad`.
fn pads_2d(imp: &Importer<'_>, a: &NodeAttrs<'_>, hw: [u64; 2], k: [u64; 2], s: [u64; 2]) -> R<[u64; 4]> {
    let auto = a.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    match auto.as_str() {
        "NOTSET" => {
            let p = a.ints("pads").unwrap_or_else(|| vec![0; 4]);
            if p.len() != 4 || p.iter().any(|&v| v < 0) {
                return Err(imp.err(format!("pads {p:?} must be 4 non-negative numbers")));
            }
            Ok([p[0] as u64, p[1] as u64, p[2] as u64, p[3] as u64])
        }
        "VALID" => Ok([0; 4]),
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut out = [0u64; 4];
            for i in 0..2 {
                let o = hw[i].div_ceil(s[i]);
                let total = ((o - 1) * s[i] + k[i]).saturating_sub(hw[i]);
                let small = total / 2;
                let (b, e) = if auto == "SAME_UPPER" { (small, total - small) } else { (total - small, small) };
                out[i] = b;
                out[i + 2] = e;
            }
            Ok(out)
        }
        other => Err(imp.err(format!("auto_pad '{other}' is not supported"))),
    }
}

fn check_ones(imp: &Importer<'_>, a: &NodeAttrs<'_>, name: &str) -> R<()> {
    if let Some(d) = a.ints(name)
        && d.iter().any(|&v| v != 1)
    {
        return Err(imp.err(format!("{name} {d:?} are not supported (only 1)")));
    }
    Ok(())
}

fn conv(imp: &mut Importer<'_>, a: &NodeAttrs<'_>, ins: &[Option<Val>]) -> R<ValueId> {
    let xv = ins.first().cloned().flatten().ok_or_else(|| imp.err("Conv needs X"))?;
    let wv = ins.get(1).cloned().flatten().ok_or_else(|| imp.err("Conv needs W"))?;
    let x = imp.dynv(&xv)?;
    let w = imp.dynv(&wv)?;
    let (sx, sw) = (imp.ty(x), imp.ty(w));
    if sx.len() != 4 || sw.len() != 4 {
        return Err(imp.err(format!("only 2-D convolutions (NCHW input, 4-D filter) are supported, got {sx:?} and {sw:?}")));
    }
    if a.int("group", 1) != 1 {
        return Err(imp.err(format!("group {} is not supported (only 1)", a.int("group", 1))));
    }
    check_ones(imp, a, "dilations")?;
    if let Some(k) = a.ints("kernel_shape")
        && k != [sw[2] as i64, sw[3] as i64]
    {
        return Err(imp.err(format!("kernel_shape {k:?} does not match the filter {sw:?}")));
    }
    let st = a.ints("strides").unwrap_or_else(|| vec![1, 1]);
    if st.len() != 2 || st.iter().any(|&v| v < 1) {
        return Err(imp.err(format!("strides {st:?} must be two positive numbers")));
    }
    let s = [st[0] as u64, st[1] as u64];
    let p = pads_2d(imp, a, [sx[2], sx[3]], [sw[2], sw[3]], s)?;
    let mut x = x;
    let mut pad = [p[0], p[1]];
    if p[0] != p[2] || p[1] != p[3] {
        // Asymmetric: zero-pad explicitly, then convolve without padding.
        x = pad_hw(imp, x, p, 0.0)?;
        pad = [0, 0];
    }
    let at = attrs([("stride", ints(&s)), ("padding", ints(&pad))]);
    let y = imp.push(OpKind::Conv2d, &[x, w], at, None)?;
    match ins.get(2).cloned().flatten() {
        Some(b) => {
            let bv = imp.dynv(&b)?;
            if imp.ty(bv) != [sw[0]] {
                return Err(imp.err(format!("Conv bias must have shape [{}]", sw[0])));
            }
            let ys = imp.ty(y);
            let bb = imp.push(OpKind::Broadcast, &[bv], attrs([("dims", Attr::IntArray(vec![1]))]), Some(TensorType::f32(ys)))?;
            imp.bin(OpKind::Add, y, bb)
        }
        None => Ok(y),
    }
}

/// `x` (NCHW) padded with `value`: `[top, left, bottom, right]`, by concats with fills.
fn pad_hw(imp: &mut Importer<'_>, x: ValueId, p: [u64; 4], value: f32) -> R<ValueId> {
    let mut cur = x;
    for (dim, before, after) in [(2usize, p[0], p[2]), (3, p[1], p[3])] {
        if before == 0 && after == 0 {
            continue;
        }
        let s = imp.ty(cur);
        let mut parts = Vec::new();
        for (n, is_x) in [(before, false), (0, true), (after, false)] {
            if is_x {
                parts.push(cur);
            } else if n > 0 {
                let mut fs = s.clone();
                fs[dim] = n;
                parts.push(imp.fill(&fs, value)?);
            }
        }
        cur = imp.push(OpKind::Concat, &parts, attrs([("dim", Attr::Int(dim as i64))]), None)?;
    }
    Ok(cur)
}

fn pool(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, xv: Val) -> R<ValueId> {
    let x = imp.dynv(&xv)?;
    let sx = imp.ty(x);
    if sx.len() != 4 {
        return Err(imp.err(format!("only 2-D pooling (NCHW input) is supported, got {sx:?}")));
    }
    let k = a.ints("kernel_shape").ok_or_else(|| imp.err("pooling needs kernel_shape"))?;
    if k.len() != 2 || k.iter().any(|&v| v < 1) {
        return Err(imp.err(format!("kernel_shape {k:?} must be two positive numbers")));
    }
    let k = [k[0] as u64, k[1] as u64];
    let st = a.ints("strides").unwrap_or_else(|| vec![1, 1]);
    if st.len() != 2 || st.iter().any(|&v| v < 1) {
        return Err(imp.err(format!("strides {st:?} must be two positive numbers")));
    }
    let s = [st[0] as u64, st[1] as u64];
    check_ones(imp, a, "dilations")?;
    if a.int("ceil_mode", 0) != 0 {
        return Err(imp.err("ceil_mode=1 is not supported"));
    }
    if op == "MaxPool" && a.int("storage_order", 0) != 0 {
        return Err(imp.err("storage_order=1 is not supported"));
    }
    let p = pads_2d(imp, a, [sx[2], sx[3]], k, s)?;
    let padded = p.iter().any(|&v| v > 0);
    let pa = attrs([("window", ints(&k)), ("stride", ints(&s))]);
    if op == "MaxPool" {
        let xp = if padded { pad_hw(imp, x, p, f32::NEG_INFINITY)? } else { x };
        return imp.push(OpKind::MaxPool2d, &[xp], pa, None);
    }
    let xp = if padded { pad_hw(imp, x, p, 0.0)? } else { x };
    let y = imp.push(OpKind::AvgPool2d, &[xp], pa, None)?;
    if !padded || a.int("count_include_pad", 0) != 0 {
        return Ok(y);
    }
    // Exclude the padding from each window's count: y * (kh*kw / count), count folded.
    let ys = imp.ty(y);
    let (oh, ow) = (ys[2], ys[3]);
    let mut ratio = Vec::with_capacity((oh * ow) as usize);
    for i in 0..oh {
        for j in 0..ow {
            let rows = (0..k[0]).filter(|&r| (i * s[0] + r).checked_sub(p[0]).is_some_and(|h| h < sx[2])).count() as u64;
            let cols = (0..k[1]).filter(|&c| (j * s[1] + c).checked_sub(p[1]).is_some_and(|w| w < sx[3])).count() as u64;
            ratio.push((k[0] * k[1]) as f32 / (rows * cols).max(1) as f32);
        }
    }
    let r = imp.materialize(&CTensor::f32(vec![oh, ow], ratio))?;
    let rb = imp.push(OpKind::Broadcast, &[r], attrs([("dims", Attr::IntArray(vec![2, 3]))]), Some(TensorType::f32(ys)))?;
    imp.bin(OpKind::Mul, y, rb)
}
