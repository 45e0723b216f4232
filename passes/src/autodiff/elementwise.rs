//! Rules of the elementwise ops: unary math and activations, binary
//! arithmetic, `scale`, `dropout`, `relu_grad`, and the sources `fill` and
//! `constant` (no operands). `dy` is the adjoint of the result `y`.

use super::Rule;
use super::emit::{Cx, own_attrs};
use ckopt_ir::{Diag, OpKind::*};

type R = Result<(), Diag>;

/// The documented rules of this family (docs/autodiff.md's table is generated from them).
pub(super) const RULES: &[Rule] = &[
    Rule::new(Neg, "`dx = neg dy`", "none"),
    Rule::new(Exp, "`dx = dy*y`", "output y (input may die)"),
    Rule::new(Log, "`dx = dy/x`", "input x"),
    Rule::new(Tanh, "`dx = dy - dy*(y*y)`", "output y"),
    Rule::new(Sigmoid, "`t = dy*y; dx = t - t*y`", "output y"),
    Rule::new(Relu, "`dx = relu_grad(y, dy)` (y>0 iff x>0)", "output y (input may die)"),
    Rule::new(Sqrt, "`dx = 0.5 * (dy/y)`", "output y"),
    Rule::new(Rsqrt, "`dx = -0.5 * (dy*y)*(y*y)`", "output y"),
    Rule::new(Erf, "`dx = 2/sqrt(pi) * (dy * exp(neg(x*x)))`", "input x"),
    Rule::new(Add, "`da = dy, db = dy` (no op; `add(x,x)`: `2*dy`)", "none"),
    Rule::new(Sub, "`da = dy, db = neg dy`", "none"),
    Rule::new(Mul, "`da = dy*b, db = dy*a` (`mul(x,x)`: `2*(dy*x)`)", "the other operand"),
    Rule::new(Div, "`da = dy/b, db = neg((dy/b)*y)`", "b and output y (a may die)"),
    Rule::new(Max, "`da = relu_grad(a-b, dy), db = dy - da`; tie → b", "a, b"),
    Rule::new(Scale, "`dx = value * dy`", "none"),
    Rule::new(Fill, "no operands", "—"),
    Rule::new(Constant, "no operands", "—"),
    Rule::new(ReluGrad, "`relu_grad(x, g)`: `dg = relu_grad(x, dz)`; x: zero a.e. (not differentiated)", "x"),
    Rule::new(Dropout, "`dx = dropout(dy)` with the same rate, seed and step key (same mask)", "none"),
];

pub(super) fn neg(c: &mut Cx) -> R {
    let (dy, n) = (c.dy, c.nm(0));
    let d = c.e.un(Neg, dy, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn exp(c: &mut Cx) -> R {
    let (dy, y, n) = (c.dy, c.y(), c.nm(0));
    let d = c.e.bin(Mul, dy, y, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn log(c: &mut Cx) -> R {
    let (dy, x, n) = (c.dy, c.x(0), c.nm(0));
    let d = c.e.bin(Div, dy, x, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn tanh(c: &mut Cx) -> R {
    let (dy, y, n) = (c.dy, c.y(), c.nm(0));
    let yy = c.e.bin(Mul, y, y, &n)?;
    let t = c.e.bin(Mul, dy, yy, &n)?;
    let d = c.e.bin(Sub, dy, t, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn sigmoid(c: &mut Cx) -> R {
    let (dy, y, n) = (c.dy, c.y(), c.nm(0));
    let t = c.e.bin(Mul, dy, y, &n)?;
    let u = c.e.bin(Mul, t, y, &n)?;
    let d = c.e.bin(Sub, t, u, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn relu(c: &mut Cx) -> R {
    let (dy, y, n) = (c.dy, c.y(), c.nm(0));
    let d = c.e.bin(ReluGrad, y, dy, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn sqrt(c: &mut Cx) -> R {
    let (dy, y, n) = (c.dy, c.y(), c.nm(0));
    let t = c.e.bin(Div, dy, y, &n)?;
    let d = c.e.scale(t, 0.5, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn rsqrt(c: &mut Cx) -> R {
    let (dy, y, n) = (c.dy, c.y(), c.nm(0));
    let t = c.e.bin(Mul, dy, y, &n)?;
    let yy = c.e.bin(Mul, y, y, &n)?;
    let t3 = c.e.bin(Mul, t, yy, &n)?;
    let d = c.e.scale(t3, -0.5, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn erf(c: &mut Cx) -> R {
    let (dy, x, n) = (c.dy, c.x(0), c.nm(0));
    let xx = c.e.bin(Mul, x, x, &n)?;
    let m = c.e.un(Neg, xx, &n)?;
    let g = c.e.un(Exp, m, &n)?;
    let t = c.e.bin(Mul, dy, g, &n)?;
    let d = c.e.scale(t, std::f32::consts::FRAC_2_SQRT_PI, &n)?;
    c.dense(0, d);
    Ok(())
}

pub(super) fn add(c: &mut Cx) -> R {
    let dy = c.dy;
    if c.x(0) == c.x(1) {
        let n = c.nm(0);
        let d = c.e.scale(dy, 2.0, &n)?;
        c.dense(0, d);
    } else {
        if c.w(0) {
            c.dense(0, dy);
        }
        if c.w(1) {
            c.dense(1, dy);
        }
    }
    Ok(())
}

pub(super) fn sub(c: &mut Cx) -> R {
    let dy = c.dy;
    if c.x(0) != c.x(1) {
        if c.w(0) {
            c.dense(0, dy);
        }
        if c.w(1) {
            let n = c.nm(1);
            let d = c.e.un(Neg, dy, &n)?;
            c.dense(1, d);
        }
    }
    Ok(())
}

pub(super) fn mul(c: &mut Cx) -> R {
    let (dy, a, b) = (c.dy, c.x(0), c.x(1));
    if a == b {
        let n = c.nm(0);
        let t = c.e.bin(Mul, dy, a, &n)?;
        let d = c.e.scale(t, 2.0, &n)?;
        c.dense(0, d);
    } else {
        if c.w(0) {
            let n = c.nm(0);
            let d = c.e.bin(Mul, dy, b, &n)?;
            c.dense(0, d);
        }
        if c.w(1) {
            let n = c.nm(1);
            let d = c.e.bin(Mul, dy, a, &n)?;
            c.dense(1, d);
        }
    }
    Ok(())
}

pub(super) fn div(c: &mut Cx) -> R {
    let (dy, b, y) = (c.dy, c.x(1), c.y());
    let n0 = c.nm(0);
    let t = c.e.bin(Div, dy, b, &n0)?;
    if c.w(0) {
        c.dense(0, t);
    }
    if c.w(1) {
        let n1 = c.nm(1);
        let u = c.e.bin(Mul, t, y, &n1)?;
        let d = c.e.un(Neg, u, &n1)?;
        c.dense(1, d);
    }
    Ok(())
}

pub(super) fn max(c: &mut Cx) -> R {
    let (dy, a, b) = (c.dy, c.x(0), c.x(1));
    if a == b {
        c.dense(0, dy);
    } else {
        let n0 = c.nm(0);
        let diff = c.e.bin(Sub, a, b, &n0)?;
        let da = c.e.bin(ReluGrad, diff, dy, &n0)?;
        if c.w(0) {
            c.dense(0, da);
        }
        if c.w(1) {
            let n1 = c.nm(1);
            let db = c.e.bin(Sub, dy, da, &n1)?;
            c.dense(1, db);
        }
    }
    Ok(())
}

pub(super) fn scale(c: &mut Cx) -> R {
    let (dy, n) = (c.dy, c.nm(0));
    let v = c.op.f32_attr("value").unwrap_or(1.0);
    let d = c.e.scale(dy, v, &n)?;
    c.dense(0, d);
    Ok(())
}

/// `fill` and `constant`: no operands, nothing to do.
pub(super) fn source(_c: &mut Cx) -> R {
    Ok(())
}

pub(super) fn relu_grad(c: &mut Cx) -> R {
    if c.w(1) {
        let (dy, x, n) = (c.dy, c.x(0), c.nm(1));
        let d = c.e.bin(ReluGrad, x, dy, &n)?;
        c.dense(1, d);
    }
    Ok(())
}

pub(super) fn dropout(c: &mut Cx) -> R {
    // Same mask: same attributes and the same step key operand (if any).
    let mut ops = vec![c.dy];
    ops.extend(c.op.operands.get(1).copied());
    let (at, n) = (own_attrs(c.op), c.nm(0));
    let d = c.e.op(Dropout, &ops, at, None, &n)?;
    c.dense(0, d);
    Ok(())
}
