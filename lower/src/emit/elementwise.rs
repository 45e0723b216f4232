//! Elementwise ops (unary and binary arithmetic, math functions, dropout,
//! fill): the one definition of their per-element arithmetic.
//!
//! Both emitters use these functions: `element` (one scalar f32 per result
//! element, single-op kernels) through `Em`, and the fused kernels' vector
//! emitter (`crate::vemit`, `w` lanes at a time) through `VEm`. The formulas
//! are the interpreter's (`ckopt_interp::eval`), op for op: the same f32
//! operations in the same order (an exact division for rsqrt and sigmoid, not
//! an approximate reciprocal), so results are bit-identical to the
//! interpreter whichever emitter ran.
//!
//! Dropout reproduces the interpreter's SplitMix64 mask bit for bit: its
//! key (with the optional step key operand mixed in), multipliers and
//! unit-interval mapping are those of `ckopt_ir::random` (the one
//! definition), emitted as i64 arithmetic.

use super::{Ctx, Em};
use ckopt_ir::math::{self, Arith};
use ckopt_ir::random::{GOLDEN, MIX_MUL, dropout_key};
use ckopt_ir::{Attr, Diag, Op, OpKind};

/// The value type an elementwise formula computes in: scalar `f32` (`Em`,
/// one lane) or `vector<w x f32>` (`VEm`, `w` lanes), and its constants.
pub trait Lanes {
    fn em(&mut self) -> &mut Em;
    /// The number of lanes (1: scalars).
    fn lanes(&self) -> usize;
    /// An f32 constant of the value type.
    fn cf(&mut self, v: f32) -> String;
    /// An i64 constant of the i64 value type (`i64` or `vector<w x i64>`).
    fn ci64(&mut self, v: u64) -> String;
}

impl Lanes for Em {
    fn em(&mut self) -> &mut Em {
        self
    }
    fn lanes(&self) -> usize {
        1
    }
    fn cf(&mut self, v: f32) -> String {
        Em::cf(self, v)
    }
    fn ci64(&mut self, v: u64) -> String {
        self.op(&format!("arith.constant {} : i64", v as i64))
    }
}

/// `ckopt_ir::math`'s operations as MLIR `arith` ops of the value type
/// (scalars or `w` lanes): the exp, tanh, erf and sigmoid of every kernel,
/// the same f32 operations in the same order as the interpreter's.
pub struct MathEm<'a, L: Lanes + ?Sized>(pub &'a mut L);

impl<L: Lanes + ?Sized> MathEm<'_, L> {
    fn ty(&self, elem: &str) -> String {
        lane_ty(&*self.0, elem)
    }
    fn ibin(&mut self, op: &str, a: &String, b: &String) -> String {
        let t = self.ty("i32");
        self.0.em().op(&format!("arith.{op} {a}, {b} : {t}"))
    }
    fn cast(&mut self, op: &str, a: &String, from: &str, to: &str) -> String {
        let (f, t) = (self.ty(from), self.ty(to));
        self.0.em().op(&format!("arith.{op} {a} : {f} to {t}"))
    }
}

impl<L: Lanes + ?Sized> Arith for MathEm<'_, L> {
    type F = String;
    type I = String;
    type B = String;
    fn f(&mut self, v: f32) -> String {
        self.0.cf(v)
    }
    fn i(&mut self, v: i32) -> String {
        if self.0.lanes() == 1 {
            self.0.em().op(&format!("arith.constant {v} : i32"))
        } else {
            let t = self.ty("i32");
            self.0.em().op(&format!("arith.constant dense<{v}> : {t}"))
        }
    }
    fn add(&mut self, a: &String, b: &String) -> String {
        fbin(self.0, "addf", a, b)
    }
    fn sub(&mut self, a: &String, b: &String) -> String {
        fbin(self.0, "subf", a, b)
    }
    fn mul(&mut self, a: &String, b: &String) -> String {
        fbin(self.0, "mulf", a, b)
    }
    fn div(&mut self, a: &String, b: &String) -> String {
        fbin(self.0, "divf", a, b)
    }
    fn neg(&mut self, a: &String) -> String {
        fun(self.0, "arith.negf", a)
    }
    fn lt(&mut self, a: &String, b: &String) -> String {
        cmpf(self.0, "olt", a, b)
    }
    fn is_nan(&mut self, a: &String) -> String {
        cmpf(self.0, "uno", a, a)
    }
    fn select(&mut self, c: &String, a: &String, b: &String) -> String {
        select(self.0, c, a, b)
    }
    fn to_bits(&mut self, a: &String) -> String {
        self.cast("bitcast", a, "f32", "i32")
    }
    fn from_bits(&mut self, a: &String) -> String {
        self.cast("bitcast", a, "i32", "f32")
    }
    fn iadd(&mut self, a: &String, b: &String) -> String {
        self.ibin("addi", a, b)
    }
    fn isub(&mut self, a: &String, b: &String) -> String {
        self.ibin("subi", a, b)
    }
    fn and(&mut self, a: &String, b: &String) -> String {
        self.ibin("andi", a, b)
    }
    fn or(&mut self, a: &String, b: &String) -> String {
        self.ibin("ori", a, b)
    }
    fn shl(&mut self, a: &String, n: u32) -> String {
        let c = self.i(n as i32);
        self.ibin("shli", a, &c)
    }
    fn ashr(&mut self, a: &String, n: u32) -> String {
        let c = self.i(n as i32);
        self.ibin("shrsi", a, &c)
    }
    fn to_int(&mut self, a: &String) -> String {
        self.cast("fptosi", a, "f32", "i32")
    }
}

/// `elem`, or `vector<w x elem>` with `w` lanes.
pub fn lane_ty<L: Lanes + ?Sized>(l: &L, elem: &str) -> String {
    if l.lanes() == 1 { elem.into() } else { format!("vector<{}x{elem}>", l.lanes()) }
}
fn fbin<L: Lanes + ?Sized>(l: &mut L, op: &str, a: &str, b: &str) -> String {
    let t = lane_ty(l, "f32");
    l.em().op(&format!("arith.{op} {a}, {b} : {t}"))
}
fn fun<L: Lanes + ?Sized>(l: &mut L, op: &str, a: &str) -> String {
    let t = lane_ty(l, "f32");
    l.em().op(&format!("{op} {a} : {t}"))
}
/// The correctly rounded square root, as the interpreter's `f32::sqrt`.
/// On the cpu `math.sqrt` (LLVM's `llvm.sqrt`: `sqrtss`/`vsqrtps`). In a
/// cuda kernel the NVVM intrinsic `llvm.nvvm.sqrt.rn.f` (`sqrt.rn.f32`):
/// MLIR's NVVM conversion turns `math.sqrt` into libdevice's `__nv_sqrtf`,
/// which the pipeline resolves to `sqrt.approx.f32` (and `1 / sqrt` then
/// became `rsqrt.approx.f32`). The cpu emulation of the cuda kernels maps
/// the intrinsic back to `math.sqrt` (`crate::emu`).
pub fn sqrt<L: Lanes + ?Sized>(l: &mut L, a: &str) -> String {
    if l.em().nvptx && l.lanes() == 1 {
        l.em().op(&format!("llvm.call_intrinsic \"{NVVM_SQRT_RN}\"({a}) : (f32) -> f32"))
    } else {
        fun(l, "math.sqrt", a)
    }
}
/// The NVVM intrinsic of a correctly rounded f32 square root.
pub const NVVM_SQRT_RN: &str = "llvm.nvvm.sqrt.rn.f";
fn cmpf<L: Lanes + ?Sized>(l: &mut L, pred: &str, a: &str, b: &str) -> String {
    let t = lane_ty(l, "f32");
    l.em().op(&format!("arith.cmpf {pred}, {a}, {b} : {t}"))
}
fn select<L: Lanes + ?Sized>(l: &mut L, c: &str, a: &str, b: &str) -> String {
    let t = lane_ty(l, "f32");
    if l.lanes() == 1 {
        l.em().op(&format!("arith.select {c}, {a}, {b} : {t}"))
    } else {
        let ct = lane_ty(l, "i1");
        l.em().op(&format!("arith.select {c}, {a}, {b} : {ct}, {t}"))
    }
}

fn f32_attr(op: &Op, name: &str) -> Result<f32, Diag> {
    op.attrs.get(name).and_then(Attr::as_f32).ok_or_else(|| {
        Diag::error(op.loc.clone(), format!("'{}' op needs f32 attribute '{name}'", op.kind.full_name()))
    })
}
/// Integer attribute `name` of `op`, else a located error (`Ctx::int_attr`
/// of the other families reads through it).
pub(super) fn int_attr(op: &Op, name: &str) -> Result<i64, Diag> {
    op.int_attr(name).ok_or_else(|| Diag::error(op.loc.clone(), format!("'{}' op: needs i64 attribute '{name}'", op.kind.full_name())))
}

/// The value of elementwise op `op` (or fill) from its operand values `xs`
/// (of the value type, at one index), as the interpreter computes it.
/// Dropout needs the element's index and key: see `dropout`.
pub fn formula<L: Lanes + ?Sized>(l: &mut L, op: &Op, xs: &[String]) -> Result<String, Diag> {
    use OpKind::*;
    let x = |i: usize| -> Result<&str, Diag> {
        xs.get(i).map(String::as_str).ok_or_else(|| Diag::error(op.loc.clone(), format!("'{}' op: operand {i} is missing", op.kind.full_name())))
    };
    Ok(match op.kind {
        Neg => fun(l, "arith.negf", x(0)?),
        Exp => math::exp(&mut MathEm(l), &x(0)?.to_string()),
        Log => fun(l, "math.log", x(0)?),
        Tanh => math::tanh(&mut MathEm(l), &x(0)?.to_string()),
        Sqrt => sqrt(l, x(0)?),
        Erf => math::erf(&mut MathEm(l), &x(0)?.to_string()),
        // `1 / sqrt(x)`: an exact division, as the interpreter (not `math.rsqrt`,
        // which the cuda backend lowers to an approximate reciprocal).
        Rsqrt => {
            let s = sqrt(l, x(0)?);
            let one = l.cf(1.0);
            fbin(l, "divf", &one, &s)
        }
        // `1 / (1 + exp(-x))`.
        Sigmoid => math::sigmoid(&mut MathEm(l), &x(0)?.to_string()),
        // `x > 0 ? x : 0`.
        Relu => {
            let a = x(0)?;
            let z = l.cf(0.0);
            let c = cmpf(l, "ogt", a, &z);
            select(l, &c, a, &z)
        }
        // `value * x`.
        Scale => {
            let v = l.cf(f32_attr(op, "value")?);
            fbin(l, "mulf", &v, x(0)?)
        }
        Add | Sub | Mul | Div | Max => {
            let o = match op.kind {
                Add => "addf",
                Sub => "subf",
                Mul => "mulf",
                Div => "divf",
                _ => "maxnumf",
            };
            fbin(l, o, x(0)?, x(1)?)
        }
        // `a > 0 ? b : 0` (relu's gradient: `a` the input, `b` the incoming gradient).
        ReluGrad => {
            let z = l.cf(0.0);
            let c = cmpf(l, "ogt", x(0)?, &z);
            select(l, &c, x(1)?, &z)
        }
        Fill => l.cf(f32_attr(op, "value")?),
        other => return Err(Diag::error(op.loc.clone(), format!("'{}' op: not an elementwise formula", other.full_name()))),
    })
}

/// The scalar i64 key of dropout op `op`: `dropout_key(seed, step)` of
/// `ckopt_ir::random`, with `step` the bits of the step key operand's value
/// (`step`, a scalar f32 SSA value) when it has one. Emit with one lane.
pub fn dropout_key_value<L: Lanes + ?Sized>(l: &mut L, op: &Op, step: Option<&str>) -> Result<String, Diag> {
    let k = dropout_key(int_attr(op, "seed")?, None);
    Ok(match step {
        None => l.em().op(&format!("arith.constant {} : i64", k as i64)),
        Some(sv) => {
            let em = l.em();
            let bits = em.op(&format!("arith.bitcast {sv} : f32 to i32"));
            let wide = em.op(&format!("arith.extui {bits} : i32 to i64"));
            let g = em.op(&format!("arith.constant {} : i64", GOLDEN as i64));
            let m = em.op(&format!("arith.muli {wide}, {g} : i64"));
            let k0 = em.op(&format!("arith.constant {} : i64", k as i64));
            let x = em.op(&format!("arith.xori {k0}, {m} : i64"));
            mix(l, &x)
        }
    })
}

/// `keep ? x / (1 - rate) : 0` with `keep = unit_f32(mix64(key ^ index)) >= rate`
/// (`ckopt_ir::random`); `unit_f32` is `(h >> 40) * 2^-24`. `x` and `index`
/// (the operand's flat index as i64) are of the value type, `key` a scalar
/// i64 (`dropout_key_value`), splat to `keyv` of the i64 value type.
pub fn dropout<L: Lanes + ?Sized>(l: &mut L, op: &Op, x: &str, index: &str, keyv: &str) -> Result<String, Diag> {
    let rate = f32_attr(op, "rate")?;
    let it = lane_ty(l, "i64");
    let z = l.em().op(&format!("arith.xori {keyv}, {index} : {it}"));
    let h = mix(l, &z);
    let s40 = l.ci64(40);
    let top = l.em().op(&format!("arith.shrui {h}, {s40} : {it}"));
    let t = lane_ty(l, "f32");
    let fl = l.em().op(&format!("arith.uitofp {top} : {it} to {t}"));
    let sc = l.cf(1.0 / 16_777_216.0);
    let u = fbin(l, "mulf", &fl, &sc);
    let r = l.cf(rate);
    let keep = cmpf(l, "oge", &u, &r);
    let q = l.cf(1.0 - rate);
    let y = fbin(l, "divf", x, &q);
    let z0 = l.cf(0.0);
    Ok(select(l, &keep, &y, &z0))
}

/// SplitMix64's output function (`ckopt_ir::random::mix64`) on an i64 of the value type.
fn mix<L: Lanes + ?Sized>(l: &mut L, z: &str) -> String {
    let t = lane_ty(l, "i64");
    let mut z = z.to_string();
    for (sh, mul) in [(30u64, MIX_MUL[0]), (27, MIX_MUL[1])] {
        let s = l.ci64(sh);
        let tt = l.em().op(&format!("arith.shrui {z}, {s} : {t}"));
        let x2 = l.em().op(&format!("arith.xori {z}, {tt} : {t}"));
        let m = l.ci64(mul);
        z = l.em().op(&format!("arith.muli {x2}, {m} : {t}"));
    }
    let s31 = l.ci64(31);
    let tt = l.em().op(&format!("arith.shrui {z}, {s31} : {t}"));
    l.em().op(&format!("arith.xori {z}, {tt} : {t}"))
}

/// Result element `c.idx` of an elementwise op (or fill): its operands
/// loaded at `c.idx` (dropout's rank-0 step key at 0), then `formula`.
pub(super) fn element(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let op = c.op;
    if op.kind == OpKind::Dropout {
        let x = em.load(&c.ins[0], c.idx);
        let step = match c.ins.get(1) {
            Some(m) => {
                let c0 = em.ci(0);
                Some(em.load(m, &c0))
            }
            None => None,
        };
        let key = dropout_key_value(em, op, step.as_deref())?;
        let i = em.op(&format!("arith.index_cast {} : index to i64", c.idx));
        return dropout(em, op, &x, &i, &key);
    }
    let xs: Vec<String> = c.ins.iter().map(|m| em.load(m, c.idx)).collect();
    formula(em, op, &xs)
}
