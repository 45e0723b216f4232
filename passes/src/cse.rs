//! `cse`: common subexpression elimination.
//!
//! Two ops are the same computation when they have the same kind, the same
//! operands (after earlier replacements), the same attributes and the same
//! result type (the type matters for `fill`, `reshape`, `slice`, ... whose
//! result is declared). Every ck op is pure, `dropout` included (its mask is
//! a function of `seed` and the element index), so the later op's uses are
//! redirected to the earlier one and the later op is removed.
//!
//! Not merged, on purpose:
//! - ops whose attributes differ in any way, so an op marked `ck.recompute`
//!   (inserted by remat to shorten a value's lifetime) is never merged with
//!   the original it recomputes, and `ck.mirror`/`ck.checkpoint` hints stay
//!   where the user put them;
//! - ops carrying `ck.offset` (memplan placed them: merging would change the
//!   plan it proved) or `ck.inplace` (they overwrite an operand's buffer, so
//!   their result is not a fresh copy that can be shared);
//! - `ck.return`;
//! - any pair when either value is overwritten in place by a later op or the
//!   function was already memory-planned ([`ReplaceGuard`]): merging extends
//!   the earlier value's lifetime, and would move the later one's in-place
//!   overwrite onto a value that is still read.
//!
//! Cost model: merging makes the earlier value live until the later one's
//! last use. For a large cheap constant (`fill`) used far apart that can
//! raise the peak by its size; run cse before remat/memplan, which then
//! account for the new lifetimes.
//!
//! Invariants. In: a verified module. Out: a verified module, same results
//! bit for bit; surviving ops keep their schedule order; no two mergeable ops
//! remain. Complexity: O(ops · (operands + attrs)) with a hash map keyed by
//! the op's printed signature.

use crate::manager::{Pass, PassOptions, Statistics};
use crate::rewrite::{ReplaceGuard, Replacements, compact_values};
use ckopt_ir::attr::format_dict;
use ckopt_ir::ops::{ATTR_INPLACE, ATTR_OFFSET};
use ckopt_ir::{Diags, Func, Module, Op, OpKind, ValueId};
use std::collections::HashMap;

/// What identifies a computation: kind, operands, attributes (printed: f32s
/// print exactly, so equal text is equal bits), result type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    kind: OpKind,
    operands: Vec<ValueId>,
    attrs: String,
    ty: Option<ckopt_ir::TensorType>,
}

/// Whether `op` may be merged with (or replace) an identical op.
pub fn is_cse_candidate(op: &Op) -> bool {
    op.kind != OpKind::Return && op.result.is_some() && !op.has_attr(ATTR_OFFSET) && !op.has_attr(ATTR_INPLACE)
}

/// Merges identical ops of `f`; returns how many ops were removed.
pub fn cse(f: &mut Func) -> usize {
    let guard = ReplaceGuard::new(f);
    let mut repl = Replacements::new(f);
    let mut seen: HashMap<Key, ValueId> = HashMap::new();
    let mut body = Vec::with_capacity(f.body.len());
    let mut removed = 0;
    for mut op in std::mem::take(&mut f.body) {
        repl.apply(&mut op.operands);
        if let (true, Some(r)) = (is_cse_candidate(&op), op.result) {
            let key = Key {
                kind: op.kind,
                operands: op.operands.clone(),
                attrs: format_dict(&op.attrs),
                ty: Some(f.ty(r).clone()),
            };
            match seen.get(&key) {
                Some(&earlier) if guard.may_replace(r, earlier) => {
                    repl.replace(r, earlier);
                    removed += 1;
                    continue;
                }
                Some(_) => {}
                None => {
                    seen.insert(key, r);
                }
            }
        }
        body.push(op);
    }
    f.body = body;
    if removed > 0 {
        compact_values(f);
    }
    removed
}

struct Cse;

impl Pass for Cse {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let removed: usize = module.funcs.iter_mut().map(cse).sum();
        stats.add("num-cse'd", removed);
        Ok(())
    }
}

/// Registry constructor (the pass takes no options).
pub fn build(_: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(Cse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Attr, Attrs, Loc, TensorType, attrs};

    fn func() -> (Func, ValueId) {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![3]), false);
        (f, x)
    }

    /// Two identical exps merge; the add then reads the first one twice.
    #[test]
    fn identical_ops_merge_and_uses_are_rewritten() {
        let (mut f, x) = func();
        let a = f.push(OpKind::Exp, &[x], Attrs::new(), None, "a", Loc::unknown()).unwrap();
        let b = f.push(OpKind::Exp, &[x], Attrs::new(), None, "b", Loc::unknown()).unwrap();
        let s = f.push(OpKind::Add, &[a, b], Attrs::new(), None, "s", Loc::unknown()).unwrap();
        f.push_return(&[s], Loc::unknown());
        assert_eq!(cse(&mut f), 1);
        assert_eq!(f.body.len(), 3);
        assert_eq!(f.body[1].operands[0], f.body[1].operands[1]);
    }

    /// Merging cascades: once the exps merge, the two negs of them merge too.
    #[test]
    fn merging_cascades_through_users() {
        let (mut f, x) = func();
        let a = f.push(OpKind::Exp, &[x], Attrs::new(), None, "a", Loc::unknown()).unwrap();
        let b = f.push(OpKind::Exp, &[x], Attrs::new(), None, "b", Loc::unknown()).unwrap();
        let na = f.push(OpKind::Neg, &[a], Attrs::new(), None, "na", Loc::unknown()).unwrap();
        let nb = f.push(OpKind::Neg, &[b], Attrs::new(), None, "nb", Loc::unknown()).unwrap();
        f.push_return(&[na, nb], Loc::unknown());
        assert_eq!(cse(&mut f), 2);
        assert_eq!(f.returned()[0], f.returned()[1]);
    }

    /// Different attributes (scale value, dropout seed, ck.recompute) keep ops apart;
    /// ck.inplace / ck.offset ops are never merged; same-seed dropouts merge.
    #[test]
    fn attributes_and_pass_marks_block_merging() {
        let (mut f, x) = func();
        let mut outs = Vec::new();
        for a in [
            attrs([("value", Attr::F32(2.0))]),
            attrs([("value", Attr::F32(3.0))]),
            attrs([("value", Attr::F32(2.0)), ("ck.recompute", Attr::Unit)]),
            attrs([("value", Attr::F32(2.0)), ("ck.inplace", Attr::Int(0))]),
            attrs([("value", Attr::F32(2.0)), ("ck.inplace", Attr::Int(0))]),
        ] {
            outs.push(f.push(OpKind::Scale, &[x], a, None, "s", Loc::unknown()).unwrap());
        }
        for seed in [1, 2, 1] {
            let a = attrs([("rate", Attr::F32(0.5)), ("seed", Attr::Int(seed))]);
            outs.push(f.push(OpKind::Dropout, &[x], a, None, "d", Loc::unknown()).unwrap());
        }
        f.push_return(&outs, Loc::unknown());
        assert_eq!(cse(&mut f), 1, "only the second seed-1 dropout merges");
        assert_eq!(f.body.len(), 8);
    }

    /// A function memplan already placed is left alone: merging would extend
    /// a lifetime the placement proof relied on.
    #[test]
    fn placed_functions_are_not_changed() {
        let (mut f, x) = func();
        let a = f.push(OpKind::Exp, &[x], Attrs::new(), None, "a", Loc::unknown()).unwrap();
        let b = f.push(OpKind::Exp, &[x], Attrs::new(), None, "b", Loc::unknown()).unwrap();
        let c = f.push(OpKind::Exp, &[x], attrs([("ck.offset", Attr::Int(0))]), None, "c", Loc::unknown()).unwrap();
        f.push_return(&[a, b, c], Loc::unknown());
        assert_eq!(cse(&mut f), 0);
    }

    /// Grouped convolutions: equal ones merge (keeping `groups`); filter
    /// gradients of the same operands with groups 2 and 4 stay apart.
    #[test]
    fn conv_groups_distinguish_ops() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![1, 4, 3, 3]), false);
        let w = f.add_param("w", TensorType::f32(vec![4, 2, 1, 1]), false);
        let g = |n: i64| attrs([("groups", Attr::Int(n))]);
        let a = f.push(OpKind::Conv2d, &[x, w], g(2), None, "a", Loc::unknown()).unwrap();
        let b = f.push(OpKind::Conv2d, &[x, w], g(2), None, "b", Loc::unknown()).unwrap();
        let d2 = f.push(OpKind::Conv2dGradFilter, &[x, a], g(2), Some(TensorType::f32(vec![4, 2, 1, 1])), "d2", Loc::unknown()).unwrap();
        let d4 = f.push(OpKind::Conv2dGradFilter, &[x, a], g(4), Some(TensorType::f32(vec![4, 1, 1, 1])), "d4", Loc::unknown()).unwrap();
        f.push_return(&[a, b, d2, d4], Loc::unknown());
        assert_eq!(cse(&mut f), 1, "only the two equal convs merge");
        let r = f.returned();
        assert_eq!(r[0], r[1]);
        assert_ne!(r[2], r[3]);
        let groups: Vec<_> = f.body.iter().filter_map(|o| o.attrs.get("groups").cloned()).collect();
        assert_eq!(groups, vec![Attr::Int(2), Attr::Int(2), Attr::Int(4)]);
    }

    /// Fills of different declared types are different values.
    #[test]
    fn result_type_is_part_of_the_key() {
        let (mut f, _) = func();
        let v = attrs([("value", Attr::F32(0.0))]);
        let a = f.push(OpKind::Fill, &[], v.clone(), Some(TensorType::f32(vec![2])), "a", Loc::unknown()).unwrap();
        let b = f.push(OpKind::Fill, &[], v.clone(), Some(TensorType::f32(vec![3])), "b", Loc::unknown()).unwrap();
        let c = f.push(OpKind::Fill, &[], v, Some(TensorType::f32(vec![3])), "c", Loc::unknown()).unwrap();
        f.push_return(&[a, b, c], Loc::unknown());
        assert_eq!(cse(&mut f), 1);
        assert_eq!(f.returned()[1], f.returned()[2]);
        assert_ne!(f.returned()[0], f.returned()[1]);
    }
}
