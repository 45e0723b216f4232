//! The one list of the identities the local rewriters use.
//!
//! Two passes rewrite by identities: `canonicalize` (exact, greedy folds in
//! one sweep) and `inplace` (the egg rules of `eqsat/rules.rs`, saturated).
//! Each identity they use is declared once below, in [`identities!`]: its
//! name (the egg rule name, so also the `rewrite-applied[NAME]` statistic),
//! the rewrite, its exactness in f32, and which of the two passes
//! implements it. Both passes name their rules by [`Identity`] values
//! (`canonicalize::FOLDS`, `eqsat::rules::rule_fns`), so a rule cannot exist
//! without an entry here; the tests below fail when an entry claims a pass
//! that has no rule for it, or a pass has a rule the entry does not claim
//! (or two rules for one identity).
//!
//! docs/passes.md carries the table generated from this list (between
//! [`TABLE_BEGIN`] and [`TABLE_END`]); the test `identities_doc_table_is_current`
//! fails with a diff when it is stale, and
//! `CKOPT_BLESS=1 cargo test -p ckopt-passes identities_doc` rewrites it.
//!
//! Notation: `op{attr = v}(operands) : T` with `x` an operand value and
//! `fill{c}` a `fill` of the constant `c` (any shape).

/// What kind of identity an entry is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// An algebraic identity on values (a fold or a simplification).
    Algebraic,
    /// `op(x, ...) = op!N(x, ...)`: the same value computed over operand N's
    /// buffer (egg only; whether that buffer is dead is decided outside).
    InPlaceForm,
}

/// One entry of the list.
#[derive(Clone, Copy, Debug)]
pub struct IdentityInfo {
    pub id: Identity,
    /// Kebab-case name: the egg rule's name and the statistic's bracket.
    pub name: &'static str,
    pub family: Family,
    /// `lhs => rhs`, with side conditions.
    pub rewrite: &'static str,
    /// Exactness in f32 (`exact` = bit for bit).
    pub exact: &'static str,
    /// `canonicalize` folds it.
    pub canonicalize: bool,
    /// `inplace` (eqsat) has a rewrite rule for it.
    pub inplace: bool,
}

macro_rules! identities {
    ($( $id:ident { name: $name:literal, family: $fam:ident, rewrite: $rw:literal, exact: $ex:literal,
                    canonicalize: $c:literal, inplace: $i:literal } )*) => {
        /// An identity of the list (see [`IDENTITIES`] for each one's entry).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Identity { $($id),* }

        /// Every identity, in list order (the order of the docs table).
        pub const IDENTITIES: &[IdentityInfo] = &[
            $(IdentityInfo {
                id: Identity::$id,
                name: $name,
                family: Family::$fam,
                rewrite: $rw,
                exact: $ex,
                canonicalize: $c,
                inplace: $i,
            }),*
        ];
    };
}

identities! {
    MulOne { name: "mul-one", family: Algebraic,
        rewrite: "`mul(x, fill{1}) => x`, `mul(fill{1}, x) => x`", exact: "exact",
        canonicalize: false, inplace: true }
    DivOne { name: "div-one", family: Algebraic,
        rewrite: "`div(x, fill{1}) => x`", exact: "exact",
        canonicalize: false, inplace: true }
    AddZero { name: "add-zero", family: Algebraic,
        rewrite: "`add(x, fill{±0}) => x`, `add(fill{±0}, x) => x`",
        exact: "exact except -0 + (+0) = +0 (equal as numbers, the sign of zero differs)",
        canonicalize: false, inplace: true }
    SubZero { name: "sub-zero", family: Algebraic,
        rewrite: "`sub(x, fill{0}) => x`", exact: "exact (also for x = -0)",
        canonicalize: false, inplace: true }
    ScaleOne { name: "scale-one", family: Algebraic,
        rewrite: "`scale{value = 1}(x) => x`", exact: "exact",
        canonicalize: true, inplace: true }
    ScaleMinusOne { name: "scale-minus-one", family: Algebraic,
        rewrite: "`scale{value = -1}(x) => neg(x)`", exact: "exact (-1·x flips the sign exactly)",
        canonicalize: true, inplace: false }
    NegNeg { name: "neg-neg", family: Algebraic,
        rewrite: "`neg(neg(x)) => x`", exact: "exact",
        canonicalize: true, inplace: true }
    ReluRelu { name: "relu-relu", family: Algebraic,
        rewrite: "`relu(relu(x)) => relu(x)`", exact: "exact (relu is idempotent)",
        canonicalize: false, inplace: true }
    ScaleScale { name: "scale-scale", family: Algebraic,
        rewrite: "`scale{value = a}(scale{value = b}(x)) => scale{value = a·b}(x)` when a or b is a power of two and a·b is a normal f32",
        exact: "exact unless a product over/underflows (other factors would round twice, so they are not rewritten)",
        canonicalize: false, inplace: true }
    NegScale { name: "neg-scale", family: Algebraic,
        rewrite: "`neg(scale{value = a}(x)) => scale{value = -a}(x)`", exact: "exact (negation is exact)",
        canonicalize: false, inplace: true }
    TransposeIdentity { name: "transpose-identity", family: Algebraic,
        rewrite: "`transpose{perm = [0, 1, ..]}(x) => x`", exact: "exact",
        canonicalize: true, inplace: true }
    TransposeTranspose { name: "transpose-transpose", family: Algebraic,
        rewrite: "`transpose{perm = q}(transpose{perm = p}(x)) => transpose{perm = r}(x)`, r[i] = p[q[i]] (canonicalize: `x` when r is the identity)",
        exact: "exact",
        canonicalize: true, inplace: true }
    ReshapeIdentity { name: "reshape-identity", family: Algebraic,
        rewrite: "`reshape(x) : T -> T => x`", exact: "exact",
        canonicalize: true, inplace: true }
    ReshapeReshape { name: "reshape-reshape", family: Algebraic,
        rewrite: "`reshape(reshape(x)) : T => reshape(x) : T` (canonicalize: `x` when x has type T)",
        exact: "exact (row-major order is kept)",
        canonicalize: true, inplace: true }
    BroadcastIdentity { name: "broadcast-identity", family: Algebraic,
        rewrite: "`broadcast(x) : T -> T => x`", exact: "exact",
        canonicalize: true, inplace: false }
    SliceIdentity { name: "slice-identity", family: Algebraic,
        rewrite: "`slice{offsets = [0, ..]}(x) : T -> T => x`", exact: "exact",
        canonicalize: true, inplace: false }
    ReduceNoDims { name: "reduce-no-dims", family: Algebraic,
        rewrite: "`reduce_sum{dims = []}(x) => x`, `reduce_max{dims = []}(x) => x`", exact: "exact",
        canonicalize: true, inplace: false }
    ConcatSingle { name: "concat-single", family: Algebraic,
        rewrite: "`concat{dim = d}(x) => x` (one operand)", exact: "exact",
        canonicalize: true, inplace: false }
    DropoutZero { name: "dropout-zero", family: Algebraic,
        rewrite: "`dropout{rate = 0}(x) => x`", exact: "exact (every element kept, divided by 1)",
        canonicalize: true, inplace: false }
    CastIdentity { name: "cast-identity", family: Algebraic,
        rewrite: "`cast(x) : T => x` when x has type T", exact: "exact",
        canonicalize: true, inplace: false }
    SelectSame { name: "select-same", family: Algebraic,
        rewrite: "`select(c, x, x) => x`", exact: "exact",
        canonicalize: true, inplace: false }
    InplaceUnary { name: "inplace-unary", family: InPlaceForm,
        rewrite: "`u(x) = u!0(x)` for unary elementwise u other than scale (neg, exp, log, tanh, sigmoid, relu, sqrt, rsqrt, dropout, ...)",
        exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceScale { name: "inplace-scale", family: InPlaceForm,
        rewrite: "`scale{value = a}(x) = scale{value = a}!0(x)`", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceBinaryLhs { name: "inplace-binary-lhs", family: InPlaceForm,
        rewrite: "`b(x, y) = b!0(x, y)` for b in sub, mul, div, max", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceBinaryRhs { name: "inplace-binary-rhs", family: InPlaceForm,
        rewrite: "`b(x, y) = b!1(x, y)` for b in sub, mul, div, max", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceReluGradDy { name: "inplace-relu-grad-dy", family: InPlaceForm,
        rewrite: "`relu_grad(x, dy) = relu_grad!1(x, dy)` (the gradient overwrites dy)", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceReluGradX { name: "inplace-relu-grad-x", family: InPlaceForm,
        rewrite: "`relu_grad(x, dy) = relu_grad!0(x, dy)` (over x, when dy is still needed)", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceAccumulateLhs { name: "inplace-accumulate-lhs", family: InPlaceForm,
        rewrite: "`add(x, y) = add!0(x, y)` (gradient accumulation)", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceAccumulateRhs { name: "inplace-accumulate-rhs", family: InPlaceForm,
        rewrite: "`add(x, y) = add!1(x, y)` (gradient accumulation)", exact: "exact (same value)",
        canonicalize: false, inplace: true }
    InplaceReshape { name: "inplace-reshape", family: InPlaceForm,
        rewrite: "`reshape(x) : T = reshape!0(x) : T` (the same bytes under a new shape)", exact: "exact (same value)",
        canonicalize: false, inplace: true }
}

impl Identity {
    /// This identity's entry in [`IDENTITIES`].
    pub fn info(self) -> &'static IdentityInfo {
        // The macro lists the entries in declaration order, the enum's order.
        &IDENTITIES[self as usize]
    }
    /// Its name (the egg rule name).
    pub fn name(self) -> &'static str {
        self.info().name
    }
    /// The identity named `name`, if any.
    pub fn by_name(name: &str) -> Option<Identity> {
        IDENTITIES.iter().find(|i| i.name == name).map(|i| i.id)
    }
}

/// The line before the generated table in docs/passes.md.
pub const TABLE_BEGIN: &str = "<!-- BEGIN identity table: generated from passes/src/identities.rs; regenerate with `CKOPT_BLESS=1 cargo test -p ckopt-passes identities_doc` -->";
/// The line after it.
pub const TABLE_END: &str = "<!-- END identity table -->";

/// The Markdown table of the list, one row per identity in list order.
pub fn table_markdown() -> String {
    let mut s = String::from("| identity | rewrite | exactness in f32 | `canonicalize` | `inplace` |\n|---|---|---|---|---|\n");
    let yes = |b: bool| if b { "yes" } else { "—" };
    for i in IDENTITIES {
        s.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            i.name,
            i.rewrite,
            i.exact,
            yes(i.canonicalize),
            yes(i.inplace)
        ));
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    /// How often each identity occurs in `ids`.
    fn counts(ids: impl IntoIterator<Item = Identity>) -> BTreeMap<Identity, usize> {
        let mut m = BTreeMap::new();
        for i in ids {
            *m.entry(i).or_insert(0) += 1;
        }
        m
    }

    /// Problems with one pass's rules against the list's `claims` flag.
    fn check_pass(pass: &str, rules: BTreeMap<Identity, usize>, claims: fn(&IdentityInfo) -> bool) -> Vec<String> {
        let mut problems = Vec::new();
        for i in IDENTITIES {
            let n = rules.get(&i.id).copied().unwrap_or(0);
            match (claims(i), n) {
                (true, 0) => problems.push(format!("'{}' is listed for {pass}, which has no rule for it", i.name)),
                (false, n) if n > 0 => {
                    problems.push(format!("{pass} implements '{}', which the list does not claim for it", i.name))
                }
                (_, n) if n > 1 => problems.push(format!("{pass} has {n} rules for '{}'; want one", i.name)),
                _ => {}
            }
        }
        problems
    }

    #[test]
    fn identities_are_well_formed() {
        let mut problems = Vec::new();
        for (k, i) in IDENTITIES.iter().enumerate() {
            if i.id as usize != k {
                problems.push(format!("'{}' is entry {k} but variant {}", i.name, i.id as usize));
            }
            if IDENTITIES.iter().filter(|j| j.name == i.name).count() != 1 {
                problems.push(format!("name '{}' is not unique", i.name));
            }
            if !i.canonicalize && !i.inplace {
                problems.push(format!("'{}' is used by no pass", i.name));
            }
            if i.family == Family::InPlaceForm && i.canonicalize {
                problems.push(format!("'{}' is an in-place form; canonicalize writes no in-place marks", i.name));
            }
            let kebab = !i.name.is_empty() && i.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            if !kebab {
                problems.push(format!("name '{}' is not kebab-case", i.name));
            }
            for text in [i.rewrite, i.exact] {
                if text.is_empty() || text.contains('|') || text.contains('\n') {
                    problems.push(format!("'{}': '{text}' must be non-empty, one line, without '|'", i.name));
                }
            }
            assert_eq!(Identity::by_name(i.name), Some(i.id));
        }
        assert!(problems.is_empty(), "passes/src/identities.rs:\n{}", problems.join("\n"));
    }

    /// Every canonicalize fold and every egg rule is listed for its pass,
    /// and every listed claim has exactly one rule.
    #[test]
    fn identities_match_the_rules_of_both_passes() {
        let mut problems = check_pass("canonicalize", counts(crate::canonicalize::folded_identities()), |i| i.canonicalize);
        problems.extend(check_pass("inplace", counts(crate::eqsat::rules::rule_identities()), |i| i.inplace));
        assert!(problems.is_empty(), "the identity list disagrees with the passes:\n{}", problems.join("\n"));
    }

/// One function with an instance of every identity of the list (both
    /// passes' and the in-place forms' operands), returning every value.
    fn every_identity() -> ckopt_ir::Func {
        use ckopt_ir::{Attr, Attrs, Func, Loc, OpKind as K, TensorType, ValueId, attrs};
        let mut f = Func::new("every_identity", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 3]), false);
        let w = f.add_param("w", TensorType::f32(vec![2, 3]), false);
        let mut out = Vec::new();
        let mut push = |f: &mut Func, k: K, ops: &[ValueId], a: Attrs, ty: Option<Vec<u64>>| {
            let v = f.push(k, ops, a, ty.map(TensorType::f32), "v", Loc::unknown()).unwrap();
            out.push(v);
            v
        };
        let value = |v: f32| attrs([("value", Attr::F32(v))]);
        let ints = |name: &str, v: &[i64]| attrs([(name, Attr::IntArray(v.to_vec()))]);
        let none = Attrs::new;
        let one = push(&mut f, K::Fill, &[], value(1.0), Some(vec![2, 3]));
        let zero = push(&mut f, K::Fill, &[], value(0.0), Some(vec![2, 3]));
        push(&mut f, K::Mul, &[x, one], none(), None);
        push(&mut f, K::Div, &[x, one], none(), None);
        push(&mut f, K::Add, &[x, zero], none(), None);
        push(&mut f, K::Sub, &[x, zero], none(), None);
        push(&mut f, K::Scale, &[x], value(1.0), None);
        push(&mut f, K::Scale, &[x], value(-1.0), None);
        let n = push(&mut f, K::Neg, &[x], none(), None);
        push(&mut f, K::Neg, &[n], none(), None);
        let r = push(&mut f, K::Relu, &[x], none(), None);
        push(&mut f, K::Relu, &[r], none(), None);
        let s = push(&mut f, K::Scale, &[x], value(3.0), None);
        push(&mut f, K::Scale, &[s], value(2.0), None);
        push(&mut f, K::Neg, &[s], none(), None);
        push(&mut f, K::Transpose, &[x], ints("perm", &[0, 1]), None);
        let t = push(&mut f, K::Transpose, &[x], ints("perm", &[1, 0]), None);
        push(&mut f, K::Transpose, &[t], ints("perm", &[1, 0]), None);
        push(&mut f, K::Reshape, &[x], none(), Some(vec![2, 3]));
        let rs = push(&mut f, K::Reshape, &[x], none(), Some(vec![3, 2]));
        push(&mut f, K::Reshape, &[rs], none(), Some(vec![6]));
        push(&mut f, K::Broadcast, &[x], ints("dims", &[0, 1]), Some(vec![2, 3]));
        push(&mut f, K::Slice, &[x], ints("offsets", &[0, 0]), Some(vec![2, 3]));
        push(&mut f, K::ReduceSum, &[x], ints("dims", &[]), None);
        push(&mut f, K::ReduceMax, &[x], ints("dims", &[]), None);
        push(&mut f, K::Concat, &[x], attrs([("dim", Attr::Int(0))]), None);
        push(&mut f, K::Dropout, &[x], attrs([("rate", Attr::F32(0.0)), ("seed", Attr::Int(3))]), None);
        push(&mut f, K::Exp, &[x], none(), None);
        push(&mut f, K::Sub, &[x, w], none(), None);
        push(&mut f, K::ReluGrad, &[x, w], none(), None);
        push(&mut f, K::Add, &[x, w], none(), None);
        push(&mut f, K::Cast, &[x], none(), Some(vec![2, 3]));
        let lt = f.push(K::Lt, &[x, w], none(), None, "c", Loc::unknown()).unwrap();
        push(&mut f, K::Select, &[lt, x, x], none(), None);
        f.push_return(&out, Loc::unknown());
        ckopt_ir::verify_module(&ckopt_ir::Module { funcs: vec![f.clone()] }).unwrap();
        f
    }

    /// Each pass applies every identity the list marks for it, and no other,
    /// on a function holding an instance of each.
    #[test]
    fn identities_fire_in_the_passes_the_list_names() {
        let mut problems = Vec::new();
        let mut f = every_identity();
        let mut fired = Vec::new();
        crate::canonicalize::canonicalize_traced(&mut f, &mut fired);
        let mut f = every_identity();
        let (_, report) = crate::eqsat::simplify_func(&mut f, crate::eqsat::Limits::default());
        let applied: Vec<&str> = report.applied.iter().filter(|(_, n)| *n > 0).map(|(r, _)| r.as_str()).collect();
        for i in IDENTITIES {
            if i.canonicalize != fired.contains(&i.id) {
                problems.push(format!("'{}': listed for canonicalize = {}, folded = {}", i.name, i.canonicalize, !i.canonicalize));
            }
            if i.inplace != applied.contains(&i.name) {
                problems.push(format!("'{}': listed for inplace = {}, applied = {}", i.name, i.inplace, !i.inplace));
            }
        }
        for r in &applied {
            if Identity::by_name(r).is_none() {
                problems.push(format!("inplace applied rule '{r}', which is not in the list"));
            }
        }
        assert!(problems.is_empty(), "on every_identity():\n{}", problems.join("\n"));
    }

    /// The egg rules are named from the list, in the order of `rule_fns`.
    #[test]
    fn egg_rule_names_come_from_the_list() {
        let names: Vec<String> = crate::eqsat::rules::rules().iter().map(|r| r.name.to_string()).collect();
        let want: Vec<String> = crate::eqsat::rules::rule_identities().map(|i| i.name().to_string()).collect();
        assert_eq!(names, want);
    }

    /// The checker itself: a claim without a rule, a rule without a claim
    /// and a doubled rule are each reported.
    #[test]
    fn identities_check_reports_each_kind_of_mismatch() {
        let p = check_pass("p", counts([Identity::MulOne, Identity::DivOne, Identity::DivOne]), |i| {
            matches!(i.id, Identity::DivOne | Identity::AddZero)
        });
        assert_eq!(
            p,
            vec![
                "p implements 'mul-one', which the list does not claim for it",
                "p has 2 rules for 'div-one'; want one",
                "'add-zero' is listed for p, which has no rule for it",
            ]
        );
    }

    #[test]
    fn identities_doc_table_is_current() {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/passes.md");
        let doc = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
        let want = crate::autodiff::doc::with_block(&doc, TABLE_BEGIN, TABLE_END, &table_markdown())
            .unwrap_or_else(|| panic!("{} lacks the markers\n{TABLE_BEGIN}\n{TABLE_END}", path.display()));
        if want == doc {
            return;
        }
        if std::env::var_os("CKOPT_BLESS").is_some() {
            std::fs::write(&path, &want).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
            eprintln!("rewrote the identity table of {}", path.display());
            return;
        }
        panic!(
            "docs/passes.md's identity table differs from passes/src/identities.rs \
             (- in the file, + generated):\n{}\nRegenerate it with: CKOPT_BLESS=1 cargo test -p ckopt-passes identities_doc",
            crate::autodiff::doc::line_diff(&doc, &want)
        );
    }
}
