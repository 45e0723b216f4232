//! `autocast{dtype=bf16|f16}`: mixed precision on a f32 function, by
//! PyTorch autocast's rules (torch.amp, "CUDA Ops that can autocast to
//! float16" and "CUDA Ops that can autocast to float32").
//!
//! Each op gets one compute type, and `ck.cast` ops are inserted where an
//! operand has another one:
//! - **low** (`matmul`, `conv2d` and its two gradients — torch's lower-
//!   precision list: mm, bmm, addmm, linear, conv*): every float operand is
//!   cast to the low type, the result is low.
//! - **f32** (`exp`, `log`, `rsqrt`, `reduce_sum`, `cross_entropy` and its
//!   gradient, keyed `dropout` — torch's float32 list: exp, log, rsqrt, sum,
//!   softmax, log_softmax, layer_norm, cross_entropy, nll_loss, mse_loss;
//!   ck's softmax and layer norm are built from exp/reduce_sum/rsqrt, so they
//!   run in f32 as torch's fused ones do; keyed dropout's step key is an
//!   integer-valued f32 scalar that a 2-byte type would round): every low
//!   operand is cast to f32.
//! - **operands** (everything else: elementwise math, data movement, max
//!   reductions, pooling, select, gather — torch's "promote" rule): the op
//!   runs in its float operands' type; when they mix, it runs in f32, except
//!   that an f32 operand computed only from parameters and constants (a bias
//!   after its broadcast) is cast low instead, as torch's addmm/linear casts
//!   its bias with the weight. The cast is placed on the parameter itself,
//!   before any data movement, so it costs the parameter's size, not the
//!   activation's.
//!
//! Parameters stay f32 masters (their gradients and the optimizer state stay
//! f32); the casts of parameters are marked `ck.mirror`, so remat recomputes
//! them in the backward pass instead of keeping a low copy alive across it
//! (torch's autocast cache keeps them for the whole forward). Constants
//! (`fill`) needed low are re-emitted low instead of cast. Results keep their
//! types: a low value returned is cast back.
//!
//! Invariants. In: a verified module (values of every element type; only
//! f32 values are retyped; integer and boolean values are untouched). Out: a
//! verified module with the same signatures and result types; every op
//! computes in one element type; no dead casts (dce at the end).
//! Complexity: O(ops + values) per function.

use crate::manager::{OptionError, Pass, PassOptions, Statistics};
use crate::rewrite::compact_values;
use ckopt_ir::{Attr, Attrs, DType, Diag, Diags, Func, Loc, Module, Op, OpKind, ValueId};
use std::collections::HashMap;

/// The compute type an op gets under autocast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Low,
    F32,
    Operands,
}

/// Which list an op is on (module docs).
pub fn policy(op: &Op) -> Policy {
    use OpKind::*;
    match op.kind {
        Matmul | Conv2d | Conv2dGradInput | Conv2dGradFilter => Policy::Low,
        Exp | Log | Rsqrt | ReduceSum | CrossEntropy | CrossEntropyGrad => Policy::F32,
        Dropout if op.operands.len() == 2 => Policy::F32,
        _ => Policy::Operands,
    }
}

/// What `autocast` did to one function.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutocastStats {
    /// Ops whose compute type became the low one.
    pub ops_low: usize,
    /// `ck.cast` ops inserted (after dce).
    pub casts: usize,
}

struct Rewriter<'a> {
    f: &'a mut Func,
    low: DType,
    body: Vec<Op>,
    /// Old value -> its value in the new body.
    map: Vec<Option<ValueId>>,
    /// New value -> computed only from parameters and constants.
    param_derived: Vec<bool>,
    /// New value -> index of its defining op in `body`.
    def: HashMap<ValueId, usize>,
    /// (new value, type) -> its cast.
    casts: HashMap<(ValueId, DType), ValueId>,
    ops_low: usize,
}

impl Rewriter<'_> {
    fn derived(&self, v: ValueId) -> bool {
        self.param_derived.get(v.index()).copied().unwrap_or(false)
    }

    fn set_derived(&mut self, v: ValueId, d: bool) {
        if self.param_derived.len() <= v.index() {
            self.param_derived.resize(v.index() + 1, false);
        }
        self.param_derived[v.index()] = d;
    }

    fn emit(&mut self, op: Op, derived: bool) -> Option<ValueId> {
        let r = op.result;
        if let Some(r) = r {
            self.def.insert(r, self.body.len());
            self.set_derived(r, derived);
        }
        self.body.push(op);
        r
    }

    /// `v` in element type `to` (itself when it already is).
    fn convert(&mut self, v: ValueId, to: DType, loc: &Loc) -> Result<ValueId, Diag> {
        let from = self.f.ty(v).dtype;
        if from == to {
            return Ok(v);
        }
        if let Some(&c) = self.casts.get(&(v, to)) {
            return Ok(c);
        }
        let derived = self.derived(v);
        let def = self.def.get(&v).map(|&i| self.body[i].clone());
        let out = match def {
            // A constant needed in another type is made in that type.
            Some(op) if op.kind == OpKind::Fill => {
                let ty = self.f.ty(v).with_dtype(to);
                let name = format!("{}_{}", self.f.name_of(v), to.name());
                let new = self.f.make_op(OpKind::Fill, &[], op.attrs.clone(), Some(ty), &name, op.loc.clone())?;
                self.emit(new, true).expect("fill has a result")
            }
            // Parameter-derived data movement: cast its source, then move.
            Some(op) if derived && is_movement(op.kind) && op.operands.len() == 1 => {
                let src = self.convert(op.operands[0], to, loc)?;
                let ty = self.f.ty(v).with_dtype(to);
                let name = format!("{}_{}", self.f.name_of(v), to.name());
                let new = self.f.make_op(op.kind, &[src], op.attrs.clone(), Some(ty), &name, op.loc.clone())?;
                self.emit(new, true).expect("data movement has a result")
            }
            _ => {
                let ty = self.f.ty(v).with_dtype(to);
                let name = format!("{}_{}", self.f.name_of(v), to.name());
                let mut attrs = Attrs::new();
                if derived {
                    attrs.insert(ckopt_ir::ops::ATTR_MIRROR.to_string(), Attr::Unit);
                }
                let new = self.f.make_op(OpKind::Cast, &[v], attrs, Some(ty), &name, loc.clone())?;
                self.emit(new, derived).expect("cast has a result")
            }
        };
        self.casts.insert((v, to), out);
        Ok(out)
    }

    /// The compute type of `op` (its operands already mapped), or None when
    /// it has no float operand to decide by.
    fn compute_type(&self, op: &Op, operands: &[ValueId]) -> Option<DType> {
        let floats: Vec<ValueId> = operands.iter().copied().filter(|&v| self.f.ty(v).dtype.is_float()).collect();
        if floats.is_empty() {
            return None;
        }
        match policy(op) {
            Policy::Low => Some(self.low),
            Policy::F32 => Some(DType::F32),
            Policy::Operands => {
                let is_low = |v: &ValueId| self.f.ty(*v).dtype == self.low;
                if !floats.iter().any(is_low) {
                    Some(self.f.ty(floats[0]).dtype)
                } else if floats.iter().filter(|v| !is_low(v)).all(|&v| self.derived(v)) {
                    Some(self.low)
                } else {
                    Some(DType::F32)
                }
            }
        }
    }

    fn rewrite(&mut self, op: Op) -> Result<(), Diag> {
        let mut operands: Vec<ValueId> = op.operands.iter().map(|v| self.map[v.index()].unwrap_or(*v)).collect();
        let derived = operands.iter().all(|&v| self.derived(v));
        if op.kind == OpKind::Return {
            for (slot, &old) in operands.iter_mut().zip(&op.operands) {
                let want = self.f.ty(old).dtype;
                *slot = self.convert(*slot, want, &op.loc)?;
            }
            self.emit(Op { operands, ..op }, false);
            return Ok(());
        }
        let compute = self.compute_type(&op, &operands);
        if let Some(dt) = compute {
            for v in operands.iter_mut() {
                if self.f.ty(*v).dtype.is_float() {
                    *v = self.convert(*v, dt, &op.loc)?;
                }
            }
        }
        let Some(old_r) = op.result else {
            self.emit(Op { operands, ..op }, false);
            return Ok(());
        };
        let old_ty = self.f.ty(old_r).clone();
        // The result follows the compute type when it had the operands' f32
        // type; casts, comparisons and losses keep their declared types.
        let ty = match compute {
            Some(dt) if op.kind != OpKind::Cast && old_ty.dtype == DType::F32 && result_follows_operands(op.kind) => {
                old_ty.with_dtype(dt)
            }
            _ => old_ty.clone(),
        };
        if ty.dtype == self.low {
            self.ops_low += 1;
        }
        let name = self.f.name_of(old_r).to_string();
        let new = self.f.make_op(op.kind, &operands, op.attrs.clone(), Some(ty), &name, op.loc.clone())?;
        let derived = derived && !operands.is_empty() || op.kind == OpKind::Fill || op.kind == OpKind::Constant;
        let r = self.emit(new, derived).expect("op has a result");
        self.map[old_r.index()] = Some(r);
        Ok(())
    }
}

fn is_movement(k: OpKind) -> bool {
    matches!(k, OpKind::Broadcast | OpKind::Reshape | OpKind::Transpose | OpKind::Slice)
}

/// Ops whose float result has their float operands' element type.
fn result_follows_operands(k: OpKind) -> bool {
    !matches!(k, OpKind::Cast | OpKind::CrossEntropy | OpKind::Fill | OpKind::Constant)
}

/// Rewrites `f` under autocast to `low` (bf16 or f16).
pub fn autocast(f: &mut Func, low: DType) -> Result<AutocastStats, Diag> {
    assert!(low.is_float() && low != DType::F32, "autocast's type is a 2-byte float");
    let old = std::mem::take(&mut f.body);
    let n = f.values.len();
    let mut rw = Rewriter {
        f,
        low,
        body: Vec::with_capacity(old.len()),
        map: vec![None; n],
        param_derived: vec![false; n],
        def: HashMap::new(),
        casts: HashMap::new(),
        ops_low: 0,
    };
    for (i, p) in rw.f.params.clone().iter().enumerate() {
        let d = rw.f.is_trainable(i);
        rw.set_derived(p.value, d);
    }
    for op in old {
        rw.rewrite(op)?;
    }
    let ops_low = rw.ops_low;
    f.body = std::mem::take(&mut rw.body);
    crate::rewrite::remove_dead_ops(f);
    compact_values(f);
    let casts = f.body.iter().filter(|o| o.kind == OpKind::Cast).count();
    Ok(AutocastStats { ops_low, casts })
}

struct Autocast {
    low: DType,
    func: Option<String>,
}

impl Pass for Autocast {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        for f in module.funcs.iter_mut() {
            if self.func.as_deref().is_some_and(|n| n != f.name) {
                continue;
            }
            let s = autocast(f, self.low).map_err(Diags::from)?;
            stats.add("ops-low", s.ops_low);
            stats.add("casts-inserted", s.casts);
        }
        Ok(())
    }
}

/// Registry constructor: `dtype` (bf16 or f16), `func`.
pub fn build(o: &PassOptions) -> Result<Box<dyn Pass>, OptionError> {
    let low = match o.choice("dtype")? {
        "f16" => DType::F16,
        _ => DType::BF16,
    };
    Ok(Box::new(Autocast { low, func: o.func_name("func")? }))
}
