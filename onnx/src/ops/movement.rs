//! Shapes and data movement: Flatten, Reshape, Squeeze/Unsqueeze,
//! Transpose, Shape, Size, Expand, Slice, Split, Concat, Gather,
//! GatherElements and Constant
//! (all shape arithmetic happens here at import time).

use super::*;

/// The op types converted here.
pub(super) const OPS: &[&str] = &["Flatten", "Reshape", "Squeeze", "Unsqueeze", "Transpose", "Shape", "Size", "Expand", "Slice", "Split", "Concat", "Gather", "GatherElements", "Constant"];

pub(super) fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], n_out: usize) -> R<Vec<Val>> {
    let x = inp(imp, ins, 0);
    let one = |v: ValueId| Ok(vec![Val::Dyn(v)]);
    match op {
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
        "Expand" => {
            let v = imp.dynv(&x?)?;
            let spec = imp.known(&inp(imp, ins, 1)?).ok_or_else(|| imp.err("Expand's shape must be constant"))?;
            let dims: Vec<u64> = spec.as_i64().iter().map(|&d| d.max(0) as u64).collect();
            let out = broadcast_shapes(&imp.ty(v), &dims).map_err(|m| imp.err(m))?;
            one(imp.bcast(v, &out)?)
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
        "Gather" | "GatherElements" => {
            let data = x?;
            let iv = inp(imp, ins, 1)?;
            let v = imp.dynv(&data)?;
            let s = imp.ty(v);
            let ax = axis(a.int("axis", 0), s.len()).map_err(|m| imp.err(m))?;
            let known = imp.known(&iv);
            let few = known.as_ref().is_some_and(|k| k.len() <= MAX_SLICED_INDICES);
            if op == "GatherElements" || !few {
                let idx = match known {
                    Some(k) => {
                        // Constant indices: checked and made non-negative here.
                        let mut norm = Vec::with_capacity(k.len());
                        for &i in &k.as_i64() {
                            let j = if i < 0 { i + s[ax] as i64 } else { i };
                            if j < 0 || j as u64 >= s[ax] {
                                return Err(imp.err(format!("{op} index {i} is out of range for dimension {ax} of size {}", s[ax])));
                            }
                            norm.push(j);
                        }
                        imp.materialize_as(&CTensor::i64(k.shape.clone(), norm), DType::I64)?
                    }
                    None => {
                        let i = imp.dynv(&iv)?;
                        wrap_negative(imp, i, s[ax])?
                    }
                };
                if !imp.dt(idx).is_integer() {
                    return Err(imp.err(format!("{op}'s indices must be int64 or int32, got {}", imp.f.ty(idx))));
                }
                let kind = if op == "Gather" { OpKind::Gather } else { OpKind::TakeAlong };
                return one(imp.push(kind, &[v, idx], attrs([("axis", Attr::Int(ax as i64))]), None)?);
            }
            let idx = known.ok_or_else(|| imp.err("internal: constant indices expected"))?;
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
        _ => Err(not_here(imp, op)),
    }
}

/// Constant Gather indices up to this many become one `slice` each (static
/// windows: fusable, no index tensor); more become one `gather`.
const MAX_SLICED_INDICES: usize = 16;

/// ONNX indices may be negative (counting from the end): `idx + n` where
/// `idx < 0`, as `select(idx < 0, idx + n, idx)`. Indices still outside
/// `[0, n)` are the gather's run-time error.
fn wrap_negative(imp: &mut Importer<'_>, idx: ValueId, n: u64) -> R<ValueId> {
    let ty = imp.f.ty(idx).clone();
    if !ty.dtype.is_integer() {
        return Ok(idx);
    }
    let zero = imp.fill_of(&ty.shape, 0.0, ty.dtype)?;
    let neg = imp.bin(OpKind::Lt, idx, zero)?;
    let nv = imp.fill_of(&ty.shape, n as f32, ty.dtype)?;
    let up = imp.bin(OpKind::Add, idx, nv)?;
    imp.push(OpKind::Select, &[neg, up, idx], Attrs::new(), None)
}
