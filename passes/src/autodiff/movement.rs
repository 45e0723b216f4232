//! Rules of the data-movement ops: `broadcast`, `transpose`, `reshape`,
//! `slice`, `concat`. All linear; none reads a forward value.

use super::Rule;
use super::emit::{Cx, ints, one};
use ckopt_ir::{Attr, Attrs, Diag, OpKind::*};

type R = Result<(), Diag>;

/// The documented rules of this family (docs/autodiff.md's table is generated from them).
pub(super) const RULES: &[Rule] = &[
    Rule::new(Broadcast, "`dx = reduce_sum(dy)` over the new dims (alias if none)", "none"),
    Rule::new(Transpose, "`dx = transpose(dy, inverse perm)`", "none"),
    Rule::new(Reshape, "`dx = reshape(dy)`", "none"),
    Rule::new(Slice, "`dy` padded with zeros (concat of fills); slices tiling one dim are joined by one concat", "none"),
    Rule::new(Concat, "`d operand_i = slice(dy)` at its offset", "none"),
];

pub(super) fn broadcast(c: &mut Cx) -> R {
    let dy = c.dy;
    let dims = c.dims_attr("dims");
    let rank = c.f.ty(c.y()).rank();
    let new: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
    if new.is_empty() {
        c.dense(0, dy);
    } else {
        let n = c.nm(0);
        let d = c.e.op(ReduceSum, &[dy], one("dims", ints(new)), None, &n)?;
        c.dense(0, d);
    }
    Ok(())
}

pub(super) fn transpose(c: &mut Cx) -> R {
    let dy = c.dy;
    let op = c.op;
    let perm = op.attrs.get("perm").and_then(Attr::as_ints).unwrap_or(&[]);
    let mut inv = vec![0usize; perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        inv[p as usize] = i;
    }
    if inv.iter().enumerate().all(|(i, &p)| i == p) {
        c.dense(0, dy);
    } else {
        let n = c.nm(0);
        let d = c.e.op(Transpose, &[dy], one("perm", ints(inv)), None, &n)?;
        c.dense(0, d);
    }
    Ok(())
}

pub(super) fn reshape(c: &mut Cx) -> R {
    let (dy, xt) = (c.dy, c.ty(c.x(0)));
    if xt == *c.f.ty(c.y()) {
        c.dense(0, dy);
    } else {
        let n = c.nm(0);
        let d = c.e.op(Reshape, &[dy], Attrs::new(), Some(xt), &n)?;
        c.dense(0, d);
    }
    Ok(())
}

pub(super) fn slice(c: &mut Cx) -> R {
    let dy = c.dy;
    let offs: Vec<u64> = c.dims_attr("offsets").into_iter().map(|o| o as u64).collect();
    if c.f.ty(c.x(0)) == c.f.ty(c.y()) {
        c.dense(0, dy);
    } else {
        c.slice(0, dy, offs);
    }
    Ok(())
}

pub(super) fn concat(c: &mut Cx) -> R {
    let dy = c.dy;
    let dim = c.op.int_attr("dim").unwrap_or(0) as usize;
    let yt = c.ty(c.y());
    let mut at = 0u64;
    let op = c.op;
    for (i, &o) in op.operands.iter().enumerate() {
        let ot = c.f.ty(o).clone();
        let size = ot.shape[dim];
        if c.w(i) {
            if ot == yt {
                c.dense(i, dy);
            } else {
                let mut offs = vec![0i64; yt.rank()];
                offs[dim] = at as i64;
                let n = c.nm(i);
                let d = c.e.op(Slice, &[dy], one("offsets", Attr::IntArray(offs)), Some(ot), &n)?;
                c.dense(i, d);
            }
        }
        at += size;
    }
    Ok(())
}
