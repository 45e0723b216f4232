//! The named rewrites of the `inplace` pass. Each is a pure identity on
//! values, one entry of [`crate::identities`] (marked `inplace` there): the
//! list gives each rule its name, and documents the identity and its
//! exactness in f32; the list's tests check that [`rule_fns`] has exactly
//! one rule for each identity the list marks `inplace`. None of them
//! looks at liveness: whether an in-place form may really be used is decided
//! outside the e-graph (`inplace::inplace_is_legal`).
//!
//! No general commutativity or associativity (they blow up the e-graph and
//! change floating-point results). Exactness in f32: every identity is
//! exact (bit-for-bit) except where the list says otherwise.
//!
//! Each rule is a custom egg searcher/applier pair over one function
//! `fn(&dyn Classes, &CkNode) -> Option<Rhs>`: given an e-node of the matched
//! e-class it returns the equivalent e-node (or e-class) to union with it.
//! Matching on e-classes of children looks at every e-node they hold, in
//! place or not. Complexity per iteration: O(e-nodes) per rule.

use super::{CkGraph, CkNode, Classes, Head, TypeOf};
use crate::identities::Identity;
use ckopt_ir::{Attr, Attrs, OpKind};
use egg::{Applier, Id, PatternAst, Rewrite, SearchMatches, Searcher, Subst, Symbol, Var};

/// What a rule makes equal to the matched e-node.
pub enum Rhs {
    /// An existing e-class (e.g. `x` for `x * 1`).
    Class(Id),
    /// A new e-node.
    Node(CkNode),
}

/// A rule reads the e-graph through [`Classes`]: egg's during saturation,
/// or the e-graph as translated (`super::Flat`), where `simplify_func`
/// checks that no algebraic rule fires before it builds egg's at all.
type RuleFn = fn(&dyn Classes, &CkNode) -> Option<Rhs>;

/// A rule: searches e-classes with an e-node for which `f` fires, and
/// unions each such e-node's right-hand side into its e-class.
#[derive(Clone, Copy)]
struct FnRule(RuleFn);

impl Searcher<CkNode, TypeOf> for FnRule {
    fn search_eclass_with_limit(&self, eg: &CkGraph, eclass: Id, limit: usize) -> Option<SearchMatches<'_, CkNode>> {
        if limit == 0 {
            return None;
        }
        eg[eclass].nodes.iter().any(|n| (self.0)(eg as &dyn Classes, n).is_some()).then(|| SearchMatches {
            eclass,
            substs: vec![Subst::default()],
            ast: None,
        })
    }
    fn vars(&self) -> Vec<Var> {
        Vec::new()
    }
}

impl Applier<CkNode, TypeOf> for FnRule {
    fn apply_one(
        &self,
        eg: &mut CkGraph,
        eclass: Id,
        _subst: &Subst,
        _ast: Option<&PatternAst<CkNode>>,
        _rule: Symbol,
    ) -> Vec<Id> {
        let nodes = eg[eclass].nodes.clone();
        let mut changed = Vec::new();
        for n in &nodes {
            let Some(rhs) = (self.0)(&*eg, n) else { continue };
            let id = match rhs {
                Rhs::Class(id) => id,
                Rhs::Node(node) => eg.add(node),
            };
            if eg.union(eclass, id) {
                changed.push(id);
            }
        }
        changed
    }
}

fn rule(name: &str, f: RuleFn) -> Rewrite<CkNode, TypeOf> {
    // Searcher and applier are the same function, so vars always agree.
    match Rewrite::new(name, FnRule(f), FnRule(f)) {
        Ok(r) => r,
        Err(e) => unreachable_rule(name, &e),
    }
}

#[cold]
fn unreachable_rule(name: &str, e: &str) -> ! {
    // Rewrite::new only fails when the applier needs variables the searcher
    // does not bind; FnRule binds and needs none.
    panic!("rule {name}: {e}")
}

/// Whether class `c` holds a `fill` of exactly `value` (any shape).
fn is_fill(eg: &dyn Classes, c: Id, value: f32) -> bool {
    eg.nodes(c).iter().any(|n| {
        n.op().is_some_and(|(k, a)| k == OpKind::Fill && a.get("value").and_then(Attr::as_f32).is_some_and(|v| v == value && v.is_sign_negative() == value.is_sign_negative()))
    })
}

/// The e-nodes of class `c` that are ops of kind `k`, in place or not.
fn ops_of(eg: &dyn Classes, c: Id, k: OpKind) -> impl Iterator<Item = &CkNode> {
    eg.nodes(c).iter().filter(move |n| n.op().is_some_and(|(kk, _)| kk == k))
}

fn kind_of(n: &CkNode) -> Option<OpKind> {
    n.op().map(|(k, _)| k)
}

fn f32_attr(n: &CkNode, key: &str) -> Option<f32> {
    n.op().and_then(|(_, a)| a.get(key)).and_then(Attr::as_f32)
}

fn ints_attr(n: &CkNode, key: &str) -> Option<Vec<i64>> {
    n.op().and_then(|(_, a)| a.get(key)).and_then(Attr::as_ints).map(<[i64]>::to_vec)
}

fn value_attrs(v: f32) -> Attrs {
    ckopt_ir::attrs([("value", Attr::F32(v))])
}

/// An exact power of two (so multiplying by it is exact barring over/underflow).
fn is_pow2(v: f32) -> bool {
    v.is_normal() && (v.abs().to_bits() & 0x007F_FFFF) == 0
}

/// Every rule, in a fixed order, named by its identity.
pub fn rules() -> Vec<Rewrite<CkNode, TypeOf>> {
    rule_fns().into_iter().map(|(id, f)| rule(id.name(), f)).collect()
}

/// The identities the rules implement, in rule order (one per rule).
pub fn rule_identities() -> impl Iterator<Item = Identity> {
    rule_fns().into_iter().map(|(id, _)| id)
}

/// Every rule's identity and function, in a fixed order. The identity
/// (its rewrite and exactness) is documented in [`crate::identities`].
fn rule_fns() -> Vec<(Identity, RuleFn)> {
    vec![
        entry(Identity::MulOne, |eg, n| {
            (kind_of(n) == Some(OpKind::Mul)).then_some(())?;
            let (a, b) = (n.children[0], n.children[1]);
            if is_fill(eg, b, 1.0) {
                Some(Rhs::Class(a))
            } else if is_fill(eg, a, 1.0) {
                Some(Rhs::Class(b))
            } else {
                None
            }
        }),
        entry(Identity::DivOne, |eg, n| {
            (kind_of(n) == Some(OpKind::Div) && is_fill(eg, n.children[1], 1.0)).then(|| Rhs::Class(n.children[0]))
        }),
        entry(Identity::AddZero, |eg, n| {
            (kind_of(n) == Some(OpKind::Add)).then_some(())?;
            let (a, b) = (n.children[0], n.children[1]);
            if is_fill(eg, b, 0.0) || is_fill(eg, b, -0.0) {
                Some(Rhs::Class(a))
            } else if is_fill(eg, a, 0.0) || is_fill(eg, a, -0.0) {
                Some(Rhs::Class(b))
            } else {
                None
            }
        }),
        entry(Identity::SubZero, |eg, n| {
            (kind_of(n) == Some(OpKind::Sub) && is_fill(eg, n.children[1], 0.0)).then(|| Rhs::Class(n.children[0]))
        }),
        entry(Identity::ScaleOne, |_, n| {
            (kind_of(n) == Some(OpKind::Scale) && f32_attr(n, "value") == Some(1.0)).then(|| Rhs::Class(n.children[0]))
        }),
        entry(Identity::NegNeg, |eg, n| {
            (kind_of(n) == Some(OpKind::Neg)).then_some(())?;
            ops_of(eg, n.children[0], OpKind::Neg).next().map(|inner| Rhs::Class(inner.children[0]))
        }),
        entry(Identity::ReluRelu, |eg, n| {
            (kind_of(n) == Some(OpKind::Relu) && ops_of(eg, n.children[0], OpKind::Relu).next().is_some())
                .then(|| Rhs::Class(n.children[0]))
        }),
        entry(Identity::ScaleScale, |eg, n| {
            (kind_of(n) == Some(OpKind::Scale)).then_some(())?;
            let a = f32_attr(n, "value")?;
            ops_of(eg, n.children[0], OpKind::Scale).find_map(|inner| {
                let b = f32_attr(inner, "value")?;
                let ab = a * b;
                ((is_pow2(a) || is_pow2(b)) && ab.is_normal())
                    .then(|| Rhs::Node(CkNode::new_op(OpKind::Scale, value_attrs(ab), n.ty.clone(), smallvec::smallvec![inner.children[0]])))
            })
        }),
        entry(Identity::NegScale, |eg, n| {
            (kind_of(n) == Some(OpKind::Neg)).then_some(())?;
            ops_of(eg, n.children[0], OpKind::Scale).find_map(|inner| {
                let a = f32_attr(inner, "value")?;
                Some(Rhs::Node(CkNode::new_op(OpKind::Scale, value_attrs(-a), n.ty.clone(), smallvec::smallvec![inner.children[0]])))
            })
        }),
        entry(Identity::TransposeIdentity, |_, n| {
            (kind_of(n) == Some(OpKind::Transpose)).then_some(())?;
            let p = ints_attr(n, "perm")?;
            p.iter().enumerate().all(|(i, &v)| v == i as i64).then(|| Rhs::Class(n.children[0]))
        }),
        entry(Identity::TransposeTranspose, |eg, n| {
            // outer perm p, inner perm q: r[i] = q[p[i]]
            (kind_of(n) == Some(OpKind::Transpose)).then_some(())?;
            let p = ints_attr(n, "perm")?;
            ops_of(eg, n.children[0], OpKind::Transpose).find_map(|inner| {
                let q = ints_attr(inner, "perm")?;
                let r: Option<Vec<i64>> = p.iter().map(|&i| usize::try_from(i).ok().and_then(|i| q.get(i).copied())).collect();
                let attrs = ckopt_ir::attrs([("perm", Attr::IntArray(r?))]);
                Some(Rhs::Node(CkNode::new_op(OpKind::Transpose, attrs, n.ty.clone(), smallvec::smallvec![inner.children[0]])))
            })
        }),
        entry(Identity::ReshapeIdentity, |eg, n| {
            (kind_of(n) == Some(OpKind::Reshape) && *eg.ty(n.children[0]) == n.ty).then(|| Rhs::Class(n.children[0]))
        }),
        entry(Identity::ReshapeReshape, |eg, n| {
            (kind_of(n) == Some(OpKind::Reshape)).then_some(())?;
            ops_of(eg, n.children[0], OpKind::Reshape).next().map(|inner| {
                Rhs::Node(CkNode::new_op(OpKind::Reshape, Attrs::new(), n.ty.clone(), smallvec::smallvec![inner.children[0]]))
            })
        }),
        // In-place forms: the ! form writes the same value over operand N's
        // buffer, allocating nothing. Whether that buffer is dead is NOT
        // known here: inplace.rs checks it. `simplify_func` does not run
        // these in the saturation: it adds them to every e-class at
        // extraction (`inplace_forms_of`), which gives the same result.
        entry(Identity::InplaceUnary, |_, n| form(n, 0)),
        entry(Identity::InplaceScale, |_, n| form(n, 1)),
        entry(Identity::InplaceBinaryLhs, |_, n| form(n, 2)),
        entry(Identity::InplaceBinaryRhs, |_, n| form(n, 3)),
        entry(Identity::InplaceReluGradDy, |_, n| form(n, 4)),
        entry(Identity::InplaceReluGradX, |_, n| form(n, 5)),
        entry(Identity::InplaceAccumulateLhs, |_, n| form(n, 6)),
        entry(Identity::InplaceAccumulateRhs, |_, n| form(n, 7)),
        entry(Identity::InplaceReshape, |_, n| form(n, 8)),
    ]
}

/// A rule table entry (the type annotation makes each closure a `RuleFn`).
fn entry(id: Identity, f: RuleFn) -> (Identity, RuleFn) {
    (id, f)
}

/// One in-place form: the op kinds it applies to and the operand written over.
pub struct InplaceForm {
    pub id: Identity,
    pub applies: fn(OpKind) -> bool,
    pub operand: u8,
}

fn unary_not_scale(k: OpKind) -> bool {
    k.is_unary_elementwise() && k != OpKind::Scale
}
fn is_scale(k: OpKind) -> bool {
    k == OpKind::Scale
}
fn sub_mul_div_max(k: OpKind) -> bool {
    matches!(k, OpKind::Sub | OpKind::Mul | OpKind::Div | OpKind::Max)
}
fn is_relu_grad(k: OpKind) -> bool {
    k == OpKind::ReluGrad
}
fn is_add(k: OpKind) -> bool {
    k == OpKind::Add
}
fn is_reshape(k: OpKind) -> bool {
    k == OpKind::Reshape
}

/// The in-place forms, in rule order (the last entries of `rule_fns`).
pub const INPLACE_FORMS: [InplaceForm; 9] = [
    InplaceForm { id: Identity::InplaceUnary, applies: unary_not_scale, operand: 0 },
    InplaceForm { id: Identity::InplaceScale, applies: is_scale, operand: 0 },
    InplaceForm { id: Identity::InplaceBinaryLhs, applies: sub_mul_div_max, operand: 0 },
    InplaceForm { id: Identity::InplaceBinaryRhs, applies: sub_mul_div_max, operand: 1 },
    InplaceForm { id: Identity::InplaceReluGradDy, applies: is_relu_grad, operand: 1 },
    InplaceForm { id: Identity::InplaceReluGradX, applies: is_relu_grad, operand: 0 },
    InplaceForm { id: Identity::InplaceAccumulateLhs, applies: is_add, operand: 0 },
    InplaceForm { id: Identity::InplaceAccumulateRhs, applies: is_add, operand: 1 },
    InplaceForm { id: Identity::InplaceReshape, applies: is_reshape, operand: 0 },
];

/// The rule of in-place form `i`.
fn form(node: &CkNode, i: usize) -> Option<Rhs> {
    let f = &INPLACE_FORMS[i];
    inplace_form(node, f.applies, f.operand)
}

/// The indices into [`INPLACE_FORMS`] of the forms whose rule fires on
/// `node` (exactly when `rule_fns`' entry for it returns a node).
pub fn inplace_forms_of(node: &CkNode) -> impl Iterator<Item = usize> + '_ {
    let kind = match &node.head {
        Head::Op { kind, .. } => Some(*kind),
        _ => None,
    };
    INPLACE_FORMS
        .iter()
        .enumerate()
        .filter(move |(_, f)| kind.is_some_and(|k| (f.applies)(k)) && node.children.len() > f.operand as usize)
        .map(|(i, _)| i)
}

/// The rules `simplify_func` saturates with: the algebraic ones (the
/// in-place forms are added at extraction, see [`inplace_forms_of`]).
pub fn algebraic_rules() -> Vec<Rewrite<CkNode, TypeOf>> {
    algebraic_fns().into_iter().map(|(id, f)| rule(id.name(), f)).collect()
}

fn algebraic_fns() -> Vec<(Identity, RuleFn)> {
    rule_fns().into_iter().filter(|(id, _)| id.info().family == crate::identities::Family::Algebraic).collect()
}

/// Whether an algebraic rule fires on some e-node of `eg` (the search of
/// one saturation iteration, without applying anything).
pub fn any_algebraic_match(eg: &dyn Classes, nodes: &[CkNode]) -> bool {
    let fns = algebraic_fns();
    nodes.iter().any(|n| fns.iter().any(|(_, f)| f(eg, n).is_some()))
}

/// The in-place form over operand `n` of an op e-node whose kind passes `ok`.
fn inplace_form(node: &CkNode, ok: fn(OpKind) -> bool, n: u8) -> Option<Rhs> {
    let Head::Op { kind, attrs } = &node.head else { return None };
    if !ok(*kind) || node.children.len() <= n as usize {
        return None;
    }
    Some(Rhs::Node(CkNode {
        head: Head::InPlace { kind: *kind, attrs: attrs.clone(), n },
        ty: node.ty.clone(),
        uid: node.uid,
        children: node.children.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-place table and the rule table agree: the forms are the
    /// in-place entries of `rule_fns`, in order, and on an e-node of every
    /// op kind with up to three children, `inplace_forms_of` lists exactly
    /// the forms whose rule returns a node.
    #[test]
    fn inplace_table_matches_the_rules() {
        use crate::identities::Family;
        let fns = rule_fns();
        let inplace: Vec<(Identity, RuleFn)> = fns.iter().copied().filter(|(id, _)| id.info().family == Family::InPlaceForm).collect();
        assert_eq!(inplace.iter().map(|(id, _)| *id).collect::<Vec<_>>(), INPLACE_FORMS.iter().map(|f| f.id).collect::<Vec<_>>());
        let eg = CkGraph::new(TypeOf);
        let ty = std::sync::Arc::new(ckopt_ir::TensorType::f32(vec![2]));
        let mut fired = 0;
        for kind in OpKind::ALL.iter().copied() {
            for arity in 0..=3usize {
                let node = CkNode::new_op(kind, Attrs::new(), ty.clone(), smallvec::smallvec![Id::from(0usize); arity]);
                let want: Vec<usize> = inplace.iter().enumerate().filter(|(_, (_, f))| f(&eg, &node).is_some()).map(|(i, _)| i).collect();
                let got: Vec<usize> = inplace_forms_of(&node).collect();
                assert_eq!(got, want, "{kind:?} with {arity} children");
                fired += got.len();
            }
        }
        assert!(fired > 0);
    }
}
