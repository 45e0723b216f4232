//! `inplace`: in-place updates (the paper's first optimization, §3) plus safe
//! algebraic simplifications, with equality saturation (egg) for the pure part
//! and a linear scan for the liveness side condition.
//!
//! What: an op whose operand dies at that op writes its result into the
//! operand's buffer, marked `ck.inplace = N` (operand index). Candidates:
//! elementwise ops (unary, binary, `scale`, `dropout`, comparisons, logic,
//! `select`, `cast`), `relu_grad`, gradient accumulation (`add`), and
//! `reshape` (same bytes); never across element sizes (`cmp` of f32 to
//! i1, `cast` of i32 to i64), only between values of one element size.
//!
//! The side condition — operand N is defined by an op (not an argument),
//! is not a function result, has the result's byte size, and no op after
//! this one reads it (backward or recompute) — is a fact about the schedule,
//! not about values, so it is never part of a rewrite: it is checked here,
//! by `inplace_is_legal`, on the final IR, and only legal marks are written.
//!
//! Design (see `eqsat/` for the egg half):
//! 1. `eqsat::simplify_func` translates the function's dataflow into an egg
//!    e-graph (one e-class per value), saturates it with named rewrites
//!    (algebraic identities, plus "this op may write over operand N" forms),
//!    extracts with a cost equal to newly allocated bytes, and rebuilds the
//!    body in the original schedule. The extraction says, for each op,
//!    which operand it would like to overwrite.
//! 2. A linear scan (`mark_guided`) walks the rebuilt body and writes each
//!    preferred mark when `inplace_is_legal` holds, else tries the other
//!    operands, else leaves the op allocating.
//!
//! Invariants out: every `ck.inplace` mark in the module is legal; values
//! computed are unchanged up to the simplifications' exactness (all exact
//! in f32 except where noted in `eqsat/rules.rs`).
//! Complexity: the scan is O(ops + values); the e-graph part is bounded by
//! the `node-limit`, `iter-limit` and `time-limit-ms` options.
//!
//! Remat runs after this pass and may add recompute ops that read a value
//! later; it keeps marks sound with `strip_illegal_inplace` and can mark its
//! own ops with `mark_inplace_greedy`.

use crate::analysis::liveness::{Liveness, liveness};
use ckopt_ir::ops::{ATTR_DONATE, ATTR_INPLACE};
use ckopt_ir::{Attr, Func, OpKind};

/// Op kinds that may write their result over an operand: result element i
/// depends only on element i of the operands, or (reshape) the bytes are the
/// same in the same order.
pub fn inplace_capable(k: OpKind) -> bool {
    k.is_elementwise() || k == OpKind::Reshape
}

/// Whether op `op_index` may write its result over operand `n`, given the
/// value-level liveness of `f` (marks do not change value-level liveness).
pub fn operand_is_overwritable(f: &Func, op_index: usize, n: usize, live: &Liveness) -> bool {
    let Some(op) = f.body.get(op_index) else { return false };
    let (Some(r), Some(&v)) = (op.result, op.operands.get(n)) else { return false };
    let defined_before = match live.def.get(v.index()).copied().flatten() {
        Some(d) => d < op_index,
        // An argument may be overwritten only when the caller donated it.
        None => f.params.iter().any(|p| p.value == v && p.attrs.contains_key(ATTR_DONATE)),
    };
    inplace_capable(op.kind)
        && defined_before
        // Nothing after this op reads v; this also rules out a returned v,
        // whose last reader is `ck.return` (never an in-place op).
        && live.last_use.get(v.index()).copied().flatten() == Some(op_index)
        && f.ty(v).byte_size().is_some()
        && f.ty(v).byte_size() == f.ty(r).byte_size()
        // Never across element sizes (a comparison's 1-byte i1 over its f32
        // operand, a cast to i64): element i must sit where it is read.
        && f.ty(v).dtype.bytes() == f.ty(r).dtype.bytes()
        && fused_reads_in_step(f, op_index, v)
}

/// Inside a fusion group (one kernel, visiting elements in order), writing
/// over `v` is safe only if the group reads `v`, and everything computed
/// from it, at the element being written: every consumer of those values in
/// the group is elementwise, a reshape or the reduction (no broadcast,
/// transpose or slice that would read an element already overwritten).
fn fused_reads_in_step(f: &Func, op_index: usize, v: ckopt_ir::ValueId) -> bool {
    let Some(id) = f.body[op_index].int_attr(ckopt_ir::ops::ATTR_FUSION) else { return true };
    let (mut s, mut e) = (op_index, op_index);
    while s > 0 && f.body[s - 1].int_attr(ckopt_ir::ops::ATTR_FUSION) == Some(id) {
        s -= 1;
    }
    while e + 1 < f.body.len() && f.body[e + 1].int_attr(ckopt_ir::ops::ATTR_FUSION) == Some(id) {
        e += 1;
    }
    let mut derived = vec![v];
    for op in &f.body[s..=e] {
        if !op.operands.iter().any(|o| derived.contains(o)) {
            continue;
        }
        let step_wise = inplace_capable(op.kind) || matches!(op.kind, OpKind::ReduceSum | OpKind::ReduceMax);
        if !step_wise {
            return false;
        }
        if let Some(r) = op.result
            && inplace_capable(op.kind)
        {
            derived.push(r);
        }
    }
    true
}

/// Whether the `ck.inplace` mark on op `op_index` is legal (false when the
/// op has no mark): see the module doc for the side condition.
pub fn inplace_is_legal(f: &Func, op_index: usize, live: &Liveness) -> bool {
    let Some(op) = f.body.get(op_index) else { return false };
    let Some(n) = op.int_attr(ATTR_INPLACE).and_then(|n| usize::try_from(n).ok()) else { return false };
    operand_is_overwritable(f, op_index, n, live)
}

/// Removes every illegal `ck.inplace` mark; returns how many were removed.
/// One pass suffices: value-level liveness does not depend on marks.
pub fn strip_illegal_inplace(f: &mut Func) -> usize {
    let live = liveness(f);
    let bad: Vec<usize> = (0..f.body.len())
        .filter(|&i| f.body[i].has_attr(ATTR_INPLACE) && !inplace_is_legal(f, i, &live))
        .collect();
    for &i in &bad {
        f.body[i].attrs.remove(ATTR_INPLACE);
    }
    bad.len()
}

/// Marks ops in place with a linear scan, trying `prefer(i)` first for op
/// `i` and then every operand in order; existing legal marks are kept,
/// illegal ones removed. Returns the number of marked ops.
pub fn mark_guided(f: &mut Func, prefer: impl Fn(usize) -> Option<usize>) -> usize {
    let live = liveness(f);
    let mut marked = 0;
    for i in 0..f.body.len() {
        if f.body[i].has_attr(ATTR_INPLACE) {
            if inplace_is_legal(f, i, &live) {
                marked += 1;
                continue;
            }
            f.body[i].attrs.remove(ATTR_INPLACE);
        }
        if !inplace_capable(f.body[i].kind) {
            continue;
        }
        let n_ops = f.body[i].operands.len();
        let choice = prefer(i)
            .into_iter()
            .chain(0..n_ops)
            .find(|&n| operand_is_overwritable(f, i, n, &live));
        if let Some(n) = choice {
            f.body[i].attrs.insert(ATTR_INPLACE.into(), Attr::Int(n as i64));
            marked += 1;
        }
    }
    marked
}

/// Fast marking without egg: every capable op overwrites the first operand
/// that dies at it. Usable by remat for the recompute ops it inserts.
pub fn mark_inplace_greedy(f: &mut Func) -> usize {
    mark_guided(f, |_| None)
}

/// What the pass did to one function.
#[derive(Clone, Debug, Default)]
pub struct InplaceReport {
    pub sat: crate::eqsat::SatReport,
    /// Ops carrying a (legal) `ck.inplace` mark afterwards.
    pub inplace_ops: usize,
    /// Ops whose extraction asked for an in-place form the side condition refused.
    pub refused: usize,
}

/// The pass on one function: egg simplification and extraction, then the
/// guided linear scan that writes only legal marks.
pub fn inplace_func(f: &mut Func, limits: crate::eqsat::Limits) -> InplaceReport {
    let (pref, sat) = crate::eqsat::simplify_func(f, limits);
    let inplace_ops = mark_guided(f, |i| pref.get(i).copied().flatten());
    let refused = pref
        .iter()
        .zip(&f.body)
        .filter(|(p, op)| p.is_some() && op.int_attr(ATTR_INPLACE).map(|n| n as usize) != **p)
        .count();
    InplaceReport { sat, inplace_ops, refused }
}

struct InplacePass {
    limits: crate::eqsat::Limits,
}

impl crate::manager::Pass for InplacePass {
    fn run(&self, module: &mut ckopt_ir::Module, stats: &mut crate::manager::Statistics) -> Result<(), ckopt_ir::Diags> {
        for f in &mut module.funcs {
            let r = inplace_func(f, self.limits);
            let n = &f.name;
            stats.add_func(n, "e-graph-stop-reason", &r.sat.stop_reason);
            stats.add_func(n, "e-graph-iterations", r.sat.iterations);
            stats.add_func(n, "e-nodes", r.sat.enodes);
            stats.add_func(n, "e-classes", r.sat.eclasses);
            for (rule, count) in &r.sat.applied {
                if *count > 0 {
                    stats.add_func(n, &format!("rewrite-applied[{rule}]"), count);
                }
            }
            stats.add_func(n, "ops-simplified-away", r.sat.ops_removed);
            stats.add_func(n, "ops-replaced", r.sat.ops_replaced);
            stats.add_func(n, "ops-in-place", r.inplace_ops);
            stats.add_func(n, "inplace-forms-refused", r.refused);
        }
        Ok(())
    }
}

/// The runner limits from the pass options (`eqsat::Limits::default()`
/// is this on no options: the registry's defaults).
pub fn parse_limits(opts: &crate::manager::PassOptions) -> Result<crate::eqsat::Limits, crate::manager::OptionError> {
    Ok(crate::eqsat::Limits {
        node_limit: usize::try_from(opts.int("node-limit")?).unwrap_or(usize::MAX),
        iter_limit: usize::try_from(opts.int("iter-limit")?).unwrap_or(usize::MAX),
        time_limit: std::time::Duration::from_millis(opts.int("time-limit-ms")?),
    })
}

/// Registry constructor: reads the runner limits.
pub fn build(opts: &crate::manager::PassOptions) -> Result<Box<dyn crate::manager::Pass>, crate::manager::OptionError> {
    Ok(Box::new(InplacePass { limits: parse_limits(opts)? }))
}
