//! Elementwise ops: result element `idx` from operand elements `idx`
//! (unary and binary arithmetic, math functions, dropout, fill).
//!
//! Dropout reproduces the interpreter's SplitMix64 mask bit for bit: its
//! key, multipliers and unit-interval mapping are those of
//! `ckopt_ir::random` (the one definition), emitted as i64 arithmetic.

use super::{Ctx, Em};
use ckopt_ir::Diag;
use ckopt_ir::random::{MIX_MUL, dropout_key};

/// `y = OP x` for a one-operand MLIR op `OP` (`arith.negf`, `math.exp`, ...).
pub(super) fn unary(em: &mut Em, c: &Ctx, mlir_op: &str) -> Result<String, Diag> {
    let x = em.load(&c.ins[0], c.idx);
    Ok(em.op(&format!("{mlir_op} {x} : f32")))
}

/// `1 / (1 + exp(-x))`.
pub(super) fn sigmoid(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let x = em.load(&c.ins[0], c.idx);
    let n = em.op(&format!("arith.negf {x} : f32"));
    let e = em.op(&format!("math.exp {n} : f32"));
    let one = em.cf(1.0);
    let d = em.fbin("addf", &one, &e);
    Ok(em.fbin("divf", &one, &d))
}

/// `x > 0 ? x : 0`.
pub(super) fn relu(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let x = em.load(&c.ins[0], c.idx);
    let z = em.cf(0.0);
    let cond = em.op(&format!("arith.cmpf ogt, {x}, {z} : f32"));
    Ok(em.op(&format!("arith.select {cond}, {x}, {z} : f32")))
}

/// `value * x`.
pub(super) fn scale(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let x = em.load(&c.ins[0], c.idx);
    let v = em.cf(c.f32_attr("value")?);
    Ok(em.fbin("mulf", &v, &x))
}

/// `keep ? x / (1 - rate) : 0` with `keep = unit_f32(mix64(key ^ idx)) >= rate`
/// and `key = dropout_key(seed, None)` (`ckopt_ir::random`); `unit_f32` is
/// `(h >> 40) * 2^-24`.
pub(super) fn dropout(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let x = em.load(&c.ins[0], c.idx);
    let rate = c.f32_attr("rate")?;
    let seed = c.int_attr("seed")?;
    let base = dropout_key(seed, None);
    let i64c = |em: &mut Em, v: u64| em.op(&format!("arith.constant {} : i64", v as i64));
    let i = em.op(&format!("arith.index_cast {} : index to i64", c.idx));
    let b = i64c(em, base);
    // mix64(b ^ i), as in `ckopt_ir::random::mix64`.
    let mut z = em.op(&format!("arith.xori {b}, {i} : i64"));
    for (sh, mul) in [(30u64, MIX_MUL[0]), (27, MIX_MUL[1])] {
        let s = i64c(em, sh);
        let t = em.op(&format!("arith.shrui {z}, {s} : i64"));
        let x2 = em.op(&format!("arith.xori {z}, {t} : i64"));
        let m = i64c(em, mul);
        z = em.op(&format!("arith.muli {x2}, {m} : i64"));
    }
    let s31 = i64c(em, 31);
    let t = em.op(&format!("arith.shrui {z}, {s31} : i64"));
    let h = em.op(&format!("arith.xori {z}, {t} : i64"));
    let s40 = i64c(em, 40);
    let top = em.op(&format!("arith.shrui {h}, {s40} : i64"));
    let fl = em.op(&format!("arith.uitofp {top} : i64 to f32"));
    let sc = em.cf(1.0 / 16_777_216.0);
    let u = em.fbin("mulf", &fl, &sc);
    let r = em.cf(rate);
    let keep = em.op(&format!("arith.cmpf oge, {u}, {r} : f32"));
    let q = em.cf(1.0 - rate);
    let y = em.fbin("divf", &x, &q);
    let z0 = em.cf(0.0);
    Ok(em.op(&format!("arith.select {keep}, {y}, {z0} : f32")))
}

/// `a OP b` for an `arith` f32 op `OP` (`addf`, `maxnumf`, ...).
pub(super) fn binary(em: &mut Em, c: &Ctx, arith_op: &str) -> Result<String, Diag> {
    let a = em.load(&c.ins[0], c.idx);
    let b = em.load(&c.ins[1], c.idx);
    Ok(em.fbin(arith_op, &a, &b))
}

/// `a > 0 ? b : 0` (relu's gradient: `a` the input, `b` the incoming gradient).
pub(super) fn relu_grad(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let a = em.load(&c.ins[0], c.idx);
    let b = em.load(&c.ins[1], c.idx);
    let z = em.cf(0.0);
    let cond = em.op(&format!("arith.cmpf ogt, {a}, {z} : f32"));
    Ok(em.op(&format!("arith.select {cond}, {b}, {z} : f32")))
}

/// The constant `value`.
pub(super) fn fill(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    Ok(em.cf(c.f32_attr("value")?))
}
