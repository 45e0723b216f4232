//! Reductions: ReduceMean, ReduceSum, ReduceMax (axes as attribute or
//! constant input, keepdims).

use super::*;

/// The op types converted here.
pub(super) const OPS: &[&str] = &["ReduceMean", "ReduceSum", "ReduceMax"];

pub(super) fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], _n_out: usize) -> R<Vec<Val>> {
    let x = inp(imp, ins, 0);
    let one = |v: ValueId| Ok(vec![Val::Dyn(v)]);
    match op {
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
        _ => Err(not_here(imp, op)),
    }
}
