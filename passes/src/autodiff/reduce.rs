//! Rules of the reductions: `reduce_sum` and `reduce_max` (the softmax and
//! norm building blocks). `dy` is the adjoint of the result `y`.

use super::Rule;
use super::emit::{Cx, ints, one};
use ckopt_ir::{Diag, OpKind::*};

type R = Result<(), Diag>;

/// The documented rules of this family (docs/autodiff.md's table is generated from them).
pub(super) const RULES: &[Rule] = &[
    Rule::new(ReduceSum, "`dx = broadcast(dy)` back to x's shape", "none"),
    Rule::new(
        ReduceMax,
        "`m = 1 - relu_grad(bcast(y)-x, 1)` (1 at maxima); `dx = m * bcast(dy / reduce_sum(m))`: ties share dy evenly (JAX's rule)",
        "input x, output y",
    ),
];

pub(super) fn reduce_sum(c: &mut Cx) -> R {
    let (dy, xt) = (c.dy, c.ty(c.x(0)));
    let dims = c.dims_attr("dims");
    if dims.is_empty() {
        c.dense(0, dy);
    } else {
        let keep: Vec<usize> = (0..xt.rank()).filter(|d| !dims.contains(d)).collect();
        let n = c.nm(0);
        let d = c.e.op(Broadcast, &[dy], one("dims", ints(keep)), Some(xt), &n)?;
        c.dense(0, d);
    }
    Ok(())
}

pub(super) fn reduce_max(c: &mut Cx) -> R {
    let (dy, x, y, xt) = (c.dy, c.x(0), c.y(), c.ty(c.x(0)));
    let dims = c.dims_attr("dims");
    if dims.is_empty() {
        c.dense(0, dy);
        return Ok(());
    }
    let keep: Vec<usize> = (0..xt.rank()).filter(|d| !dims.contains(d)).collect();
    let n = c.nm(0);
    let e = &mut *c.e;
    let by = e.op(Broadcast, &[y], one("dims", ints(keep.clone())), Some(xt.clone()), &n)?;
    let gap = e.bin(Sub, by, x, &n)?;
    let ones = e.fill(xt.clone(), 1.0, &n)?;
    let not_max = e.bin(ReluGrad, gap, ones, &n)?;
    let mask = e.bin(Sub, ones, not_max, &n)?;
    let cnt = e.op(ReduceSum, &[mask], one("dims", ints(dims)), None, &n)?;
    let share = e.bin(Div, dy, cnt, &n)?;
    let bs = e.op(Broadcast, &[share], one("dims", ints(keep)), Some(xt), &n)?;
    let d = e.bin(Mul, mask, bs, &n)?;
    c.dense(0, d);
    Ok(())
}
