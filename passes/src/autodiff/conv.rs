//! Rules of the contractions and windows: `matmul`, `conv2d` and its two
//! gradient ops, the pools and their gradient ops. Bilinear ops read the
//! other operand; the gradient ops differentiate through each other, which
//! gives second-order derivatives.

use super::Rule;
use super::emit::{Cx, own_attrs, with_bools};
use ckopt_ir::ops::{attr_bool, pool_params};
use ckopt_ir::{Diag, OpKind::*};

type R = Result<(), Diag>;

/// The documented rules of this family (docs/autodiff.md's table is generated from them).
pub(super) const RULES: &[Rule] = &[
    Rule::new(Matmul, "`dA, dB` by matmuls with transpose flags (4 cases), batch dims carried", "the other operand"),
    Rule::new(Conv2d, "`conv2d(x, w)`: `dx = conv2d_grad_input(dy, w)`, `dw = conv2d_grad_filter(x, dy)`", "w for dx, x for dw"),
    Rule::new(Conv2dGradInput, "`conv2d_grad_input(g, w)`: `dg = conv2d(dz, w)`, `dw = conv2d_grad_filter(dz, g)`", "w, g"),
    Rule::new(Conv2dGradFilter, "`conv2d_grad_filter(x, g)`: `dx = conv2d_grad_input(g, dz)`, `dg = conv2d(x, dz)`", "g, x"),
    Rule::new(MaxPool2d, "`dx = max_pool2d_grad(x, dy)` (first maximum of a window takes it)", "input x"),
    Rule::new(AvgPool2d, "`dx = avg_pool2d_grad(dy)`", "none"),
    Rule::new(
        MaxPool2dGrad,
        "`max_pool2d_grad(x, g)`: `dg = k * avg_pool2d(dz * max_pool2d_grad(x, 1))` with k the window area; needs stride >= window (non-overlapping windows), otherwise a located error; x: zero a.e.",
        "x",
    ),
    Rule::new(AvgPool2dGrad, "`avg_pool2d_grad(g)`: `dg = avg_pool2d(dz)`", "none"),
];

pub(super) fn matmul(c: &mut Cx) -> R {
    let (ta, tb) = (attr_bool(&c.op.attrs, "transpose_a"), attr_bool(&c.op.attrs, "transpose_b"));
    let (dy, a, b) = (c.dy, c.x(0), c.x(1));
    // Y = op(A) op(B). Each case reads only the other operand.
    if c.w(0) {
        let n = c.nm(0);
        let e = &mut *c.e;
        let da = match (ta, tb) {
            (false, false) => e.op(Matmul, &[dy, b], with_bools(false, true), None, &n)?,
            (true, false) => e.op(Matmul, &[b, dy], with_bools(false, true), None, &n)?,
            (false, true) => e.op(Matmul, &[dy, b], with_bools(false, false), None, &n)?,
            (true, true) => e.op(Matmul, &[b, dy], with_bools(true, true), None, &n)?,
        };
        c.dense(0, da);
    }
    if c.w(1) {
        let n = c.nm(1);
        let e = &mut *c.e;
        let db = match (ta, tb) {
            (false, false) => e.op(Matmul, &[a, dy], with_bools(true, false), None, &n)?,
            (true, false) => e.op(Matmul, &[a, dy], with_bools(false, false), None, &n)?,
            (false, true) => e.op(Matmul, &[dy, a], with_bools(true, false), None, &n)?,
            (true, true) => e.op(Matmul, &[dy, a], with_bools(true, true), None, &n)?,
        };
        c.dense(1, db);
    }
    Ok(())
}

pub(super) fn conv2d(c: &mut Cx) -> R {
    let (dy, x, w, at) = (c.dy, c.x(0), c.x(1), own_attrs(c.op));
    if c.w(0) {
        let (xt, n) = (c.ty(x), c.nm(0));
        let d = c.e.op(Conv2dGradInput, &[dy, w], at.clone(), Some(xt), &n)?;
        c.dense(0, d);
    }
    if c.w(1) {
        let (wt, n) = (c.ty(w), c.nm(1));
        let d = c.e.op(Conv2dGradFilter, &[x, dy], at, Some(wt), &n)?;
        c.dense(1, d);
    }
    Ok(())
}

/// z = conv2d_grad_input(g, w): the transpose of conv2d(., w).
pub(super) fn conv2d_grad_input(c: &mut Cx) -> R {
    let (dy, g, w, at) = (c.dy, c.x(0), c.x(1), own_attrs(c.op));
    if c.w(0) {
        let n = c.nm(0);
        let d = c.e.op(Conv2d, &[dy, w], at.clone(), None, &n)?;
        c.dense(0, d);
    }
    if c.w(1) {
        let (wt, n) = (c.ty(w), c.nm(1));
        let d = c.e.op(Conv2dGradFilter, &[dy, g], at, Some(wt), &n)?;
        c.dense(1, d);
    }
    Ok(())
}

/// z = conv2d_grad_filter(x, g): bilinear in x and g.
pub(super) fn conv2d_grad_filter(c: &mut Cx) -> R {
    let (dy, x, g, at) = (c.dy, c.x(0), c.x(1), own_attrs(c.op));
    if c.w(0) {
        let (xt, n) = (c.ty(x), c.nm(0));
        let d = c.e.op(Conv2dGradInput, &[g, dy], at.clone(), Some(xt), &n)?;
        c.dense(0, d);
    }
    if c.w(1) {
        let n = c.nm(1);
        let d = c.e.op(Conv2d, &[x, dy], at, None, &n)?;
        c.dense(1, d);
    }
    Ok(())
}

pub(super) fn max_pool2d(c: &mut Cx) -> R {
    let (dy, x, at, n) = (c.dy, c.x(0), own_attrs(c.op), c.nm(0));
    let d = c.e.op(MaxPool2dGrad, &[x, dy], at, None, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn avg_pool2d(c: &mut Cx) -> R {
    let (dy, xt, at, n) = (c.dy, c.ty(c.x(0)), own_attrs(c.op), c.nm(0));
    let d = c.e.op(AvgPool2dGrad, &[dy], at, Some(xt), &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn max_pool2d_grad(c: &mut Cx) -> R {
    if !c.w(1) {
        return Ok(());
    }
    let op = c.op;
    let (win, stride) = pool_params(&op.attrs).map_err(|e| Diag::error(op.loc.clone(), e.to_string()))?;
    if stride[0] < win[0] || stride[1] < win[1] {
        return Err(Diag::error(
            op.loc.clone(),
            format!(
                "autodiff: no gradient rule for 'ck.max_pool2d_grad' with overlapping windows (window {win:?}, stride {stride:?}); it is differentiable only when stride >= window"
            ),
        ));
    }
    let (dy, x, gt, n) = (c.dy, c.x(0), c.ty(c.x(1)), c.nm(1));
    let e = &mut *c.e;
    let ones = e.fill(gt, 1.0, &n)?;
    let mask = e.op(MaxPool2dGrad, &[x, ones], own_attrs(op), None, &n)?;
    let picked = e.bin(Mul, dy, mask, &n)?;
    let avg = e.op(AvgPool2d, &[picked], own_attrs(op), None, &n)?;
    let d = e.scale(avg, (win[0] * win[1]) as f32, &n)?;
    c.dense(1, d);
    Ok(())
}

pub(super) fn avg_pool2d_grad(c: &mut Cx) -> R {
    let (dy, at, n) = (c.dy, own_attrs(c.op), c.nm(0));
    let d = c.e.op(AvgPool2d, &[dy], at, None, &n)?;
    c.dense(0, d);
    Ok(())
}
