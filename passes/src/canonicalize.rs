//! `canonicalize`: local folds that remove no-op and doubled data movement.
//!
//! Each rule is exact (the result is bit-for-bit what the original computed,
//! so `interp(f) == interp(canonicalize(f))` with no tolerance). The rules
//! are the entries of [`crate::identities`] marked `canonicalize` (scale by
//! ±1, `neg(neg x)`, identity reshape/transpose/broadcast/slice/reduce/
//! concat/dropout, `transpose∘transpose` composed, `reshape∘reshape`
//! merged); `FOLDS` implements them, one fold per identity, and the
//! identity list's tests check the two agree.
//!
//! Ops left without uses by a fold (and ops that were already dead) are
//! erased, as MLIR's canonicalizer erases trivially dead ops. This pass stays
//! deliberately small: algebraic rewrites with side conditions live in the
//! egg-based `inplace` pass.
//!
//! Safety with earlier passes: a fold that redirects uses to another value
//! extends that value's lifetime, so it is skipped when either value is
//! overwritten in place by a later op (`ck.inplace`) or the function is
//! already placed by memplan (see [`ReplaceGuard`]); folds that rewrite an
//! op into a new one are skipped on ops carrying `ck.inplace`/`ck.offset`, and look-through folds
//! never look through an in-place producer.
//!
//! Invariants. In: a verified module. Out: a verified module with the same
//! signatures and the same results; surviving ops in their original order,
//! keeping their attributes and locations; a fold never adds an op.
//! Complexity: O(ops · rank) per function, one forward sweep plus one dead-op
//! sweep; folds cascade in the sweep because operands are resolved first.

use crate::manager::{Pass, PassOptions, Statistics};
use crate::rewrite::{ReplaceGuard, Replacements, compact_values, remove_dead_ops};
use ckopt_ir::ops::{ATTR_INPLACE, ATTR_OFFSET};
use crate::identities::Identity;
use ckopt_ir::{Attr, Diags, Func, Module, Op, OpKind, ValueId};

/// What one canonicalization run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CanonStats {
    /// Ops replaced by one of their operands' values.
    pub folded: usize,
    /// Ops rewritten into a simpler op (composed transpose, merged reshape, neg).
    pub rewritten: usize,
    /// Ops erased because nothing used them any more.
    pub erased: usize,
}

/// The outcome of trying the rules on one op.
enum Fold {
    /// The op's value is this existing value.
    Value(ValueId),
    /// The op becomes this op (same result value and type).
    Op(Op),
}

/// Applies the folds to `f`.
pub fn canonicalize(f: &mut Func) -> CanonStats {
    canonicalize_traced(f, &mut Vec::new())
}

/// [`canonicalize`], also listing the identity of every fold applied, in order.
pub(crate) fn canonicalize_traced(f: &mut Func, fired: &mut Vec<Identity>) -> CanonStats {
    let guard = ReplaceGuard::new(f);
    let mut repl = Replacements::new(f);
    let mut stats = CanonStats::default();
    // Index, in the new body, of the op defining each value.
    let mut def: Vec<Option<usize>> = vec![None; f.values.len()];
    let mut body: Vec<Op> = Vec::with_capacity(f.body.len());
    for mut op in std::mem::take(&mut f.body) {
        repl.apply(&mut op.operands);
        let folded = fold(f, &body, &def, &guard, &op).map(|(id, fold)| {
            fired.push(id);
            fold
        });
        match folded {
            Some(Fold::Value(v)) => {
                if let Some(r) = op.result {
                    repl.replace(r, v);
                }
                stats.folded += 1;
            }
            Some(Fold::Op(new)) => {
                stats.rewritten += 1;
                if let Some(r) = new.result {
                    def[r.index()] = Some(body.len());
                }
                body.push(new);
            }
            None => {
                if let Some(r) = op.result {
                    def[r.index()] = Some(body.len());
                }
                body.push(op);
            }
        }
    }
    f.body = body;
    stats.erased = remove_dead_ops(f);
    compact_values(f);
    stats
}

/// The producer of `v` in the new body, unless it writes in place (looking
/// through it would read a buffer it overwrote) or it is the op itself.
fn producer<'a>(body: &'a [Op], def: &[Option<usize>], v: ValueId) -> Option<&'a Op> {
    let op = body.get(def.get(v.index()).copied().flatten()?)?;
    (!op.has_attr(ATTR_INPLACE)).then_some(op)
}

fn ints<'a>(op: &'a Op, name: &str) -> Option<&'a [i64]> {
    op.attrs.get(name).and_then(Attr::as_ints)
}

fn is_identity_perm(p: &[i64]) -> bool {
    p.iter().enumerate().all(|(i, &d)| d == i as i64)
}

/// What a fold sees besides the op: the function, the new body so far, the
/// defining op of each value in it, and the lifetime guard.
struct Ctx<'a> {
    f: &'a Func,
    body: &'a [Op],
    def: &'a [Option<usize>],
    guard: &'a ReplaceGuard,
}

impl Ctx<'_> {
    /// A fold of `r` to an existing value `v` extends `v`'s life, and hands
    /// it any in-place overwrite of `r`.
    fn to_value(&self, r: ValueId, v: ValueId) -> Option<Fold> {
        self.guard.may_replace(r, v).then_some(Fold::Value(v))
    }
    fn producer(&self, v: ValueId) -> Option<&Op> {
        producer(self.body, self.def, v)
    }
}

/// Rewriting the op itself is not done on ops placed or made in-place by later passes.
fn rewritable(op: &Op) -> bool {
    !op.has_attr(ATTR_INPLACE) && !op.has_attr(ATTR_OFFSET)
}

/// One fold: given the op, its result `r` and first operand `x`.
type FoldFn = fn(&Ctx, &Op, ValueId, ValueId) -> Option<Fold>;

/// The folds, each under its identity of [`crate::identities`] and for the
/// op kinds it applies to. An op gets the first fold (in this order) that
/// fires; the folds of one kind exclude each other.
const FOLDS: &[(Identity, &[OpKind], FoldFn)] = &[
    (Identity::ScaleOne, &[OpKind::Scale], |c, op, r, x| (op.f32_attr("value")? == 1.0).then(|| c.to_value(r, x)).flatten()),
    (Identity::ScaleMinusOne, &[OpKind::Scale], |_, op, _, _| {
        (op.f32_attr("value")? == -1.0 && rewritable(op)).then(|| {
            let mut new = op.clone();
            new.kind = OpKind::Neg;
            new.attrs.remove("value");
            Fold::Op(new)
        })
    }),
    (Identity::NegNeg, &[OpKind::Neg], |c, _, r, x| {
        let inner = c.producer(x)?;
        let src = *inner.operands.first()?;
        (inner.kind == OpKind::Neg).then(|| c.to_value(r, src)).flatten()
    }),
    (Identity::ReshapeIdentity, &[OpKind::Reshape], |c, _, r, x| (c.f.ty(x) == c.f.ty(r)).then(|| c.to_value(r, x)).flatten()),
    (Identity::ReshapeReshape, &[OpKind::Reshape], |c, op, r, x| {
        if c.f.ty(x) == c.f.ty(r) {
            return None; // reshape-identity's case, even when its guard refused
        }
        let inner = c.producer(x).filter(|p| p.kind == OpKind::Reshape)?;
        let src = *inner.operands.first()?;
        if c.f.ty(src) == c.f.ty(r) {
            return c.to_value(r, src);
        }
        if !rewritable(op) || !c.guard.may_extend(src) {
            return None;
        }
        let mut new = op.clone();
        new.operands = vec![src];
        Some(Fold::Op(new))
    }),
    (Identity::TransposeIdentity, &[OpKind::Transpose], |c, op, r, x| {
        is_identity_perm(ints(op, "perm")?).then(|| c.to_value(r, x)).flatten()
    }),
    (Identity::TransposeTranspose, &[OpKind::Transpose], |c, op, r, x| {
        let q = ints(op, "perm")?;
        if is_identity_perm(q) {
            return None; // transpose-identity's case, even when its guard refused
        }
        let inner = c.producer(x).filter(|p| p.kind == OpKind::Transpose)?;
        let p = ints(inner, "perm")?;
        let src = *inner.operands.first()?;
        // result dim i = inner dim q[i] = src dim p[q[i]]
        let composed: Option<Vec<i64>> =
            q.iter().map(|&qi| usize::try_from(qi).ok().and_then(|qi| p.get(qi).copied())).collect();
        let composed = composed?;
        if is_identity_perm(&composed) {
            return c.to_value(r, src);
        }
        if !rewritable(op) || !c.guard.may_extend(src) {
            return None;
        }
        let mut new = op.clone();
        new.operands = vec![src];
        new.attrs.insert("perm".into(), Attr::IntArray(composed));
        Some(Fold::Op(new))
    }),
    (Identity::BroadcastIdentity, &[OpKind::Broadcast], |c, _, r, x| (c.f.ty(x) == c.f.ty(r)).then(|| c.to_value(r, x)).flatten()),
    (Identity::SliceIdentity, &[OpKind::Slice], |c, op, r, x| {
        (c.f.ty(x) == c.f.ty(r) && ints(op, "offsets")?.iter().all(|&o| o == 0)).then(|| c.to_value(r, x)).flatten()
    }),
    (Identity::ReduceNoDims, &[OpKind::ReduceSum, OpKind::ReduceMax], |c, op, r, x| {
        ints(op, "dims")?.is_empty().then(|| c.to_value(r, x)).flatten()
    }),
    (Identity::ConcatSingle, &[OpKind::Concat], |c, op, r, x| (op.operands.len() == 1).then(|| c.to_value(r, x)).flatten()),
    (Identity::DropoutZero, &[OpKind::Dropout], |c, op, r, x| (op.f32_attr("rate") == Some(0.0)).then(|| c.to_value(r, x)).flatten()),
    (Identity::CastIdentity, &[OpKind::Cast], |c, _, r, x| (c.f.ty(x) == c.f.ty(r)).then(|| c.to_value(r, x)).flatten()),
    (Identity::SelectSame, &[OpKind::Select], |c, op, r, _| {
        let (a, b) = (*op.operands.get(1)?, *op.operands.get(2)?);
        (a == b).then(|| c.to_value(r, a)).flatten()
    }),
];

/// The identities canonicalize folds by, one per entry of its fold table
/// (checked against [`crate::identities::IDENTITIES`] by its tests).
pub fn folded_identities() -> impl Iterator<Item = Identity> {
    FOLDS.iter().map(|(id, _, _)| *id)
}

/// The first fold of `FOLDS` that fires on `op`, with its identity.
fn fold(f: &Func, body: &[Op], def: &[Option<usize>], guard: &ReplaceGuard, op: &Op) -> Option<(Identity, Fold)> {
    let r = op.result?;
    let x = *op.operands.first()?;
    let c = Ctx { f, body, def, guard };
    FOLDS
        .iter()
        .filter(|(_, kinds, _)| kinds.contains(&op.kind))
        .find_map(|(id, _, fold)| fold(&c, op, r, x).map(|fold| (*id, fold)))
}

struct Canonicalize;

impl Pass for Canonicalize {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let mut total = CanonStats::default();
        for f in &mut module.funcs {
            let s = canonicalize(f);
            total.folded += s.folded;
            total.rewritten += s.rewritten;
            total.erased += s.erased;
        }
        stats.add("num-folded", total.folded);
        stats.add("num-rewritten", total.rewritten);
        stats.add("num-erased", total.erased);
        Ok(())
    }
}

/// Registry constructor (the pass takes no options).
pub fn build(_: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(Canonicalize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Attrs, Loc, TensorType, attrs, verify_module};

    fn push(f: &mut Func, kind: OpKind, ops: &[ValueId], a: Attrs, ty: Option<Vec<u64>>) -> ValueId {
        f.push(kind, ops, a, ty.map(TensorType::f32), "v", Loc::unknown()).unwrap()
    }
    fn kinds(f: &Func) -> Vec<OpKind> {
        f.body.iter().map(|o| o.kind).collect()
    }
    fn check(f: Func) -> Func {
        let m = Module { funcs: vec![f] };
        verify_module(&m).unwrap();
        m.funcs.into_iter().next().unwrap()
    }

    /// scale by 1 and neg(neg x) vanish: the function returns its argument.
    #[test]
    fn scale_one_and_double_neg_fold_to_the_argument() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 3]), false);
        let s = push(&mut f, OpKind::Scale, &[x], attrs([("value", Attr::F32(1.0))]), None);
        let n1 = push(&mut f, OpKind::Neg, &[s], Attrs::new(), None);
        let n2 = push(&mut f, OpKind::Neg, &[n1], Attrs::new(), None);
        f.push_return(&[n2], Loc::unknown());
        let st = canonicalize(&mut f);
        assert_eq!(st, CanonStats { folded: 2, rewritten: 0, erased: 1 });
        let f = check(f);
        assert_eq!(kinds(&f), vec![OpKind::Return]);
        assert_eq!(f.returned(), &[x]);
    }

    /// transpose [1,2,0] then [2,0,1] composes to the identity; [1,0,2]∘[0,2,1] does not.
    #[test]
    fn transposes_compose() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 3, 4]), false);
        let perm = |p: &[i64]| attrs([("perm", Attr::IntArray(p.to_vec()))]);
        let a = push(&mut f, OpKind::Transpose, &[x], perm(&[1, 2, 0]), None);
        let b = push(&mut f, OpKind::Transpose, &[a], perm(&[2, 0, 1]), None);
        let c = push(&mut f, OpKind::Transpose, &[x], perm(&[1, 0, 2]), None);
        let d = push(&mut f, OpKind::Transpose, &[c], perm(&[0, 2, 1]), None);
        f.push_return(&[b, d], Loc::unknown());
        let st = canonicalize(&mut f);
        assert_eq!(st.folded, 1);
        assert_eq!(st.rewritten, 1);
        let f = check(f);
        assert_eq!(f.returned()[0], x);
        assert_eq!(kinds(&f), vec![OpKind::Transpose, OpKind::Return]);
        // c = x.transpose(1,0,2) : [3,2,4]; d = c.transpose(0,2,1) : [3,4,2];
        // d[i] = c[q[i]] = x[p[q[i]]] with p=[1,0,2], q=[0,2,1] -> [1,2,0]
        assert_eq!(ints(&f.body[0], "perm"), Some(&[1i64, 2, 0][..]));
        assert_eq!(f.ty(f.returned()[1]), &TensorType::f32(vec![3, 4, 2]));
    }

    /// reshape∘reshape becomes one reshape; a reshape back to the source type vanishes.
    #[test]
    fn reshapes_merge() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 6]), false);
        let a = push(&mut f, OpKind::Reshape, &[x], Attrs::new(), Some(vec![3, 4]));
        let b = push(&mut f, OpKind::Reshape, &[a], Attrs::new(), Some(vec![12]));
        let c = push(&mut f, OpKind::Reshape, &[a], Attrs::new(), Some(vec![2, 6]));
        let d = push(&mut f, OpKind::Reshape, &[c], Attrs::new(), Some(vec![2, 6]));
        f.push_return(&[b, d], Loc::unknown());
        let st = canonicalize(&mut f);
        assert_eq!((st.folded, st.rewritten, st.erased), (2, 1, 1));
        let f = check(f);
        assert_eq!(kinds(&f), vec![OpKind::Reshape, OpKind::Return]);
        assert_eq!(f.body[0].operands, vec![x]);
        assert_eq!(f.returned()[1], x);
    }

    /// A value overwritten in place later must not be used longer: no fold.
    #[test]
    fn no_fold_onto_a_value_that_is_overwritten_in_place() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![4]), false);
        let e = push(&mut f, OpKind::Exp, &[x], Attrs::new(), None);
        let s = push(&mut f, OpKind::Scale, &[e], attrs([("value", Attr::F32(1.0))]), None);
        let t = push(&mut f, OpKind::Tanh, &[e], attrs([("ck.inplace", Attr::Int(0))]), None);
        let y = push(&mut f, OpKind::Add, &[s, t], Attrs::new(), None);
        f.push_return(&[y], Loc::unknown());
        assert_eq!(canonicalize(&mut f), CanonStats::default());
        assert_eq!(f.body.len(), 5);
    }

    /// Identity slice/broadcast/reduce/concat/dropout fold; scale by -1 becomes neg.
    #[test]
    fn identity_data_movement_folds() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 2]), false);
        let a = push(&mut f, OpKind::Slice, &[x], attrs([("offsets", Attr::IntArray(vec![0, 0]))]), Some(vec![2, 2]));
        let b = push(&mut f, OpKind::Broadcast, &[a], attrs([("dims", Attr::IntArray(vec![0, 1]))]), Some(vec![2, 2]));
        let c = push(&mut f, OpKind::ReduceMax, &[b], attrs([("dims", Attr::IntArray(vec![]))]), None);
        let d = push(&mut f, OpKind::Concat, &[c], attrs([("dim", Attr::Int(1))]), None);
        let d0 = push(&mut f, OpKind::Dropout, &[d], attrs([("rate", Attr::F32(0.0)), ("seed", Attr::Int(3))]), None);
        let e = push(&mut f, OpKind::Scale, &[d0], attrs([("value", Attr::F32(-1.0))]), None);
        f.push_return(&[e], Loc::unknown());
        let st = canonicalize(&mut f);
        assert_eq!((st.folded, st.rewritten), (5, 1));
        let f = check(f);
        assert_eq!(kinds(&f), vec![OpKind::Neg, OpKind::Return]);
        assert_eq!(f.body[0].operands, vec![x]);
        assert!(f.body[0].attrs.is_empty());
    }
}
