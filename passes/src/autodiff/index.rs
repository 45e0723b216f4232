//! Rules of the mixed-type ops: `gather`, `take_along` and their gradients
//! (deterministic scatter-adds and gathers of each other), `select`,
//! `cast`, `cross_entropy` and its gradient. Comparisons, logic and `iota`
//! have integer or bool results, which are never active: their rules are
//! never called (documented as constants).

use super::Rule;
use super::emit::{Cx, own_attrs};
use ckopt_ir::{Diag, OpKind::*};

type R = Result<(), Diag>;

/// The documented rules of this family (docs/autodiff.md's table is generated from them).
pub(super) const RULES: &[Rule] = &[
    Rule::new(Gather, "`dx = gather_grad(idx, dy)` (deterministic scatter-add); idx: integer, a constant", "idx"),
    Rule::new(GatherGrad, "`gather_grad(idx, g)`: `dg = gather(dz, idx)`", "idx"),
    Rule::new(TakeAlong, "`dx = take_along_grad(idx, dy)`; idx: integer, a constant", "idx"),
    Rule::new(TakeAlongGrad, "`take_along_grad(idx, g)`: `dg = take_along(dz, idx)`", "idx"),
    Rule::new(Eq, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Ne, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Lt, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Le, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Gt, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Ge, "i1 result: a constant (no gradient)", "—"),
    Rule::new(And, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Or, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Not, "i1 result: a constant (no gradient)", "—"),
    Rule::new(Select, "`da = select(c, dy, 0), db = select(c, 0, dy)`; c: i1, a constant", "c"),
    Rule::new(Cast, "float to float: `dx = cast(dy)` to x's type (alias if equal); to or from an integer type: none (a constant)", "none"),
    Rule::new(Iota, "no operands (integer or float indices: a constant)", "—"),
    Rule::new(CrossEntropy, "`dlogits = cross_entropy_grad(logits, labels, dy)` (same ignore_index); labels: a constant", "logits, labels"),
    Rule::new(
        CrossEntropyGrad,
        "`cross_entropy_grad(l, y, g)`: `dg = reduce_sum(dz * cross_entropy_grad(l, y, 1.0))`; w.r.t. the logits: no rule (a located error)",
        "logits, labels",
    ),
];

/// Gather: the adjoint is the scatter-add `gather_grad` into x's type.
pub(super) fn gather(c: &mut Cx) -> R {
    if !c.w(0) {
        return Ok(());
    }
    let (dy, idx, xt, n) = (c.dy, c.x(1), c.ty(c.x(0)), c.nm(0));
    let d = c.e.op(GatherGrad, &[idx, dy], own_attrs(c.op), Some(xt), &n)?;
    c.dense(0, d);
    Ok(())
}

/// gather_grad is linear in dy: its adjoint gathers dz back.
pub(super) fn gather_grad(c: &mut Cx) -> R {
    if !c.w(1) {
        return Ok(());
    }
    let (dz, idx, n) = (c.dy, c.x(0), c.nm(1));
    let d = c.e.op(Gather, &[dz, idx], own_attrs(c.op), None, &n)?;
    c.dense(1, d);
    Ok(())
}

pub(super) fn take_along(c: &mut Cx) -> R {
    if !c.w(0) {
        return Ok(());
    }
    let (dy, idx, xt, n) = (c.dy, c.x(1), c.ty(c.x(0)), c.nm(0));
    let d = c.e.op(TakeAlongGrad, &[idx, dy], own_attrs(c.op), Some(xt), &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn take_along_grad(c: &mut Cx) -> R {
    if !c.w(1) {
        return Ok(());
    }
    let (dz, idx, n) = (c.dy, c.x(0), c.nm(1));
    let d = c.e.op(TakeAlong, &[dz, idx], own_attrs(c.op), None, &n)?;
    c.dense(1, d);
    Ok(())
}

/// Comparisons, logic, iota: integer/bool results are never active, so
/// nothing is emitted (the driver does not even call this).
pub(super) fn constant(_c: &mut Cx) -> R {
    Ok(())
}

/// select(c, a, b): dy flows to a where c holds, to b elsewhere.
pub(super) fn select(c: &mut Cx) -> R {
    let (dy, cond) = (c.dy, c.x(0));
    let yt = c.ty(c.y());
    let zero = if c.w(1) || c.w(2) { Some(c.e.fill(yt, 0.0, &format!("z{}", c.f.name_of(c.y())))?) } else { None };
    let Some(zero) = zero else { return Ok(()) };
    if c.w(1) {
        let n = c.nm(1);
        let d = c.e.op(Select, &[cond, dy, zero], Default::default(), None, &n)?;
        c.dense(1, d);
    }
    if c.w(2) {
        let n = c.nm(2);
        let d = c.e.op(Select, &[cond, zero, dy], Default::default(), None, &n)?;
        c.dense(2, d);
    }
    Ok(())
}

/// cast between float types: the adjoint is cast back (the driver only asks
/// when both x and y are float).
pub(super) fn cast(c: &mut Cx) -> R {
    if !c.w(0) {
        return Ok(());
    }
    let (dy, xt, n) = (c.dy, c.ty(c.x(0)), c.nm(0));
    if c.e.ty(dy) == xt {
        c.dense(0, dy);
    } else {
        let d = c.e.op(Cast, &[dy], Default::default(), Some(xt), &n)?;
        c.dense(0, d);
    }
    Ok(())
}

pub(super) fn cross_entropy(c: &mut Cx) -> R {
    if !c.w(0) {
        return Ok(());
    }
    let (dy, logits, labels, n) = (c.dy, c.x(0), c.x(1), c.nm(0));
    let d = c.e.op(CrossEntropyGrad, &[logits, labels, dy], own_attrs(c.op), None, &n)?;
    c.dense(0, d);
    Ok(())
}

/// cross_entropy_grad is linear in its dy: `dg = sum(dz * grad at dy = 1)`.
/// Its derivative in the logits (a softmax Hessian) has no rule.
pub(super) fn cross_entropy_grad(c: &mut Cx) -> R {
    if c.w(0) {
        return Err(Diag::error(
            c.op.loc.clone(),
            "autodiff: no gradient rule for 'ck.cross_entropy_grad' with respect to its logits (a second derivative of cross_entropy)",
        ));
    }
    if !c.w(2) {
        return Ok(());
    }
    let (dz, logits, labels, g, n) = (c.dy, c.x(0), c.x(1), c.x(2), c.nm(2));
    let gt = c.ty(g);
    let e = &mut *c.e;
    let one = e.fill(gt, 1.0, &n)?;
    let unit = e.op(CrossEntropyGrad, &[logits, labels, one], own_attrs(c.op), None, &n)?;
    let prod = e.bin(Mul, dz, unit, &n)?;
    let d = e.op(ReduceSum, &[prod], super::emit::one("dims", super::emit::ints([0, 1])), None, &n)?;
    c.dense(2, d);
    Ok(())
}
