//! Property tests of canonicalize, cse and dce on the shared random graphs
//! (`ckopt_ir::testgen`), run by the reference interpreter.
//!
//! Properties pinned, for every generated module `m` and a "redundant" copy
//! `r` of it (see `add_redundancy`: exact duplicates, dead ops, neg∘neg,
//! scale by 1, transpose pairs and reshape pairs inserted at random):
//! 1. `interp(r) == interp(m)` bit for bit (the redundancy is exact);
//! 2. for P in {canonicalize, cse, dce, the pipeline canonicalize,cse,dce}:
//!    P(r) verifies, prints and re-parses to the same text, never has more
//!    ops than `r`, and `interp(P(r)) == interp(r)` bit for bit (every rule
//!    is exact, so no tolerance);
//! 3. the pipeline removes everything that was added: P(r) has at most as
//!    many ops as `m`; dce alone removes every inserted dead op, and cse
//!    alone every inserted duplicate;
//! 4. on `r` with greedy `ck.inplace` marks (`inplace::mark_inplace_greedy`),
//!    every pass keeps every remaining mark legal (no value is read after
//!    its buffer was overwritten) and the results unchanged.

use ckopt_interp::{Tensor, random_inputs, run_func};
use ckopt_ir::testgen::{GenConfig, arb_module};
use ckopt_ir::{Attr, Func, Loc, Module, Op, OpKind, TensorType, ValueId, attrs, print_module, verify_module};
use ckopt_passes::inplace::{inplace_is_legal, mark_inplace_greedy};
use ckopt_passes::{analysis::liveness, canonicalize::canonicalize, cse::cse, dce::dce};
use proptest::prelude::*;

/// A small deterministic generator for the mutation choices.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// How much redundancy was added, by kind.
#[derive(Debug, Default)]
struct Added {
    duplicates: usize,
    dead: usize,
    identities: usize,
}

fn push(f: &mut Func, body: &mut Vec<Op>, kind: OpKind, operands: &[ValueId], a: ckopt_ir::Attrs, ty: &TensorType) -> ValueId {
    let op = f
        .make_op(kind, operands, a, Some(ty.clone()), "r", Loc::unknown())
        .unwrap_or_else(|d| panic!("mutation built an ill-typed op: {d}"));
    let r = op.result.expect("non-return op");
    body.push(op);
    r
}

/// Inserts exact redundancy after random ops and redirects later uses to it.
fn add_redundancy(f: &mut Func, seed: u64) -> Added {
    let mut rng = Rng(seed);
    let mut added = Added::default();
    let mut alias: Vec<ValueId> = (0..f.values.len() as u32).map(ValueId).collect();
    let old = std::mem::take(&mut f.body);
    let mut body = Vec::with_capacity(old.len() * 2);
    for mut op in old {
        for o in &mut op.operands {
            *o = alias[o.index()];
        }
        let Some(v) = op.result else {
            body.push(op);
            continue;
        };
        let ty = f.ty(v).clone();
        let orig = op.clone();
        body.push(op);
        // New values map to themselves; `v`'s later uses read `to`.
        let set = |alias: &mut Vec<ValueId>, f: &Func, to: ValueId| {
            grow(alias, f);
            alias[v.index()] = to;
        };
        // Float mutations (exp, neg, scale) only on float values; integer and
        // bool values get the duplicates and data-movement identities.
        let choice = match rng.below(8) {
            1..=3 if !ty.dtype.is_float() => 7,
            c => c,
        };
        match choice {
            0 => {
                let c = push(f, &mut body, orig.kind, &orig.operands, orig.attrs.clone(), &ty);
                set(&mut alias, f, c);
                added.duplicates += 1;
            }
            1 => {
                push(f, &mut body, OpKind::Exp, &[v], Default::default(), &ty);
                added.dead += 1;
            }
            2 => {
                let n1 = push(f, &mut body, OpKind::Neg, &[v], Default::default(), &ty);
                let n2 = push(f, &mut body, OpKind::Neg, &[n1], Default::default(), &ty);
                set(&mut alias, f, n2);
                added.identities += 2;
            }
            3 => {
                let s = push(f, &mut body, OpKind::Scale, &[v], attrs([("value", Attr::F32(1.0))]), &ty);
                set(&mut alias, f, s);
                added.identities += 1;
            }
            4 if ty.rank() >= 2 => {
                // p rotates the dims left by one; q = p^-1 rotates them back.
                let n = ty.rank() as i64;
                let p: Vec<i64> = (0..n).map(|i| (i + 1) % n).collect();
                let q: Vec<i64> = (0..n).map(|i| (i + n - 1) % n).collect();
                let pt = ty.with_shape(p.iter().map(|&d| ty.shape[d as usize]).collect());
                let t1 = push(f, &mut body, OpKind::Transpose, &[v], attrs([("perm", Attr::IntArray(p))]), &pt);
                let t2 = push(f, &mut body, OpKind::Transpose, &[t1], attrs([("perm", Attr::IntArray(q))]), &ty);
                set(&mut alias, f, t2);
                added.identities += 2;
            }
            5 => {
                let flat = ty.with_shape(vec![ty.elems()]);
                let r1 = push(f, &mut body, OpKind::Reshape, &[v], Default::default(), &flat);
                let r2 = push(f, &mut body, OpKind::Reshape, &[r1], Default::default(), &ty);
                set(&mut alias, f, r2);
                added.identities += 2;
            }
            _ => {}
        }
        grow(&mut alias, f);
    }
    f.body = body;
    added
}

fn grow(alias: &mut Vec<ValueId>, f: &Func) {
    while alias.len() < f.values.len() {
        alias.push(ValueId(alias.len() as u32));
    }
}

fn bits(ts: &[Tensor]) -> Vec<(Vec<usize>, Vec<u32>)> {
    ts.iter().map(|t| (t.shape.clone(), t.data.iter().map(|x| x.to_bits()).collect())).collect()
}

fn ops(m: &Module) -> usize {
    m.funcs.iter().map(|f| f.body.len()).sum()
}

fn run(m: &Module, inputs: &[Tensor]) -> Result<Vec<(Vec<usize>, Vec<u32>)>, String> {
    run_func(m, "f", inputs).map(|t| bits(&t)).map_err(|d| d.to_string())
}

/// Applies `pass` to a copy of `r` and checks property 2; returns the result.
fn check_pass(name: &str, r: &Module, pass: impl Fn(&mut Func), want: &[(Vec<usize>, Vec<u32>)], inputs: &[Tensor]) -> Result<Module, TestCaseError> {
    let mut p = r.clone();
    for f in &mut p.funcs {
        pass(f);
    }
    verify_module(&p).map_err(|d| TestCaseError::fail(format!("{name}: output does not verify: {d}\n{}", print_module(&p))))?;
    let text = print_module(&p);
    let back = ckopt_ir::parse_and_verify(&text, "out.ck").map_err(|d| TestCaseError::fail(format!("{name}: printed output does not re-parse: {d}\n{text}")))?;
    prop_assert_eq!(print_module(&back), text.clone(), "{}: print/parse round trip", name);
    prop_assert!(ops(&p) <= ops(r), "{}: more ops after the pass", name);
    let got = run(&p, inputs).map_err(TestCaseError::fail)?;
    prop_assert!(got == want, "{}: results differ\nbefore:\n{}\nafter:\n{}", name, print_module(r), text);
    Ok(p)
}

fn property(m: Module, seed: u64) -> Result<(), TestCaseError> {
    let mut r = m.clone();
    let added = add_redundancy(&mut r.funcs[0], seed);
    verify_module(&r).map_err(|d| TestCaseError::fail(format!("mutation broke the module: {d}\n{}", print_module(&r))))?;
    let inputs = random_inputs(&m.funcs[0], seed);
    let want = run(&m, &inputs).map_err(TestCaseError::fail)?;
    prop_assert!(run(&r, &inputs).map_err(TestCaseError::fail)? == want, "redundancy changed the results");

    let d = check_pass("dce", &r, |f| {
        dce(f);
    }, &want, &inputs)?;
    prop_assert!(ops(&d) + added.dead <= ops(&r), "dce left some of the {} dead ops", added.dead);
    let c = check_pass("cse", &r, |f| {
        cse(f);
    }, &want, &inputs)?;
    prop_assert!(ops(&c) + added.duplicates <= ops(&r), "cse left some of the {} duplicates", added.duplicates);
    check_pass("canonicalize", &r, |f| {
        canonicalize(f);
    }, &want, &inputs)?;
    let all = check_pass(
        "canonicalize,cse,dce",
        &r,
        |f| {
            canonicalize(f);
            cse(f);
            dce(f);
        },
        &want,
        &inputs,
    )?;
    prop_assert!(ops(&all) <= ops(&m), "pipeline kept added ops: {} > {}\n{}", ops(&all), ops(&m), print_module(&all));

    let mut marked = r.clone();
    mark_inplace_greedy(&mut marked.funcs[0]);
    let passes: [(&str, fn(&mut Func)); 4] = [
        ("dce", |f| {
            dce(f);
        }),
        ("cse", |f| {
            cse(f);
        }),
        ("canonicalize", |f| {
            canonicalize(f);
        }),
        ("canonicalize,cse,dce", |f| {
            canonicalize(f);
            cse(f);
            dce(f);
        }),
    ];
    for (name, pass) in passes {
        let p = check_pass(name, &marked, pass, &want, &inputs)?;
        let f = &p.funcs[0];
        let live = liveness(f);
        for (i, op) in f.body.iter().enumerate() {
            if op.has_attr("ck.inplace") {
                prop_assert!(inplace_is_legal(f, i, &live), "{}: op {} has an illegal in-place mark\nbefore:\n{}\nafter:\n{}", name, i, print_module(&marked), print_module(&p));
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Properties 1-3 on the default generator (every op of the table).
    #[test]
    fn local_passes_preserve_results_and_remove_redundancy(m in arb_module(&GenConfig::default()), seed in any::<u64>()) {
        property(m, seed)?;
    }

    /// Same with ck.mirror / ck.checkpoint annotations on generated ops.
    #[test]
    fn local_passes_preserve_results_on_annotated_graphs(m in arb_module(&GenConfig::default().annotated()), seed in any::<u64>()) {
        property(m, seed)?;
    }

    /// Same with the integer/bool/indexing ops.
    #[test]
    fn local_passes_preserve_results_with_int_ops(m in arb_module(&GenConfig::default().with_int_ops()), seed in any::<u64>()) {
        property(m, seed)?;
    }
}
