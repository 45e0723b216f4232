//! The inplace pass (egg rewrites + legal in-place marks) and the arena
//! interpreter: rewrites fire as named, every mark is legal, and planned
//! functions run in one arena bit-identically to the reference interpreter.

use ckopt_interp::{Tensor, random_inputs, run_func, run_func_in_arena};
use ckopt_ir::ops::ATTR_INPLACE;
use ckopt_ir::{Attrs, Func, Loc, Module, OpKind, TensorType, ValueId, parse_and_verify, verify_module};
use ckopt_passes::analysis::liveness;
use ckopt_passes::autodiff::{AutodiffOptions, autodiff};
use ckopt_passes::eqsat::Limits;
use ckopt_passes::inplace::{inplace_func, inplace_is_legal};
use ckopt_passes::memplan::memplan_func;
use ckopt_passes::memplan_check::check_func;

fn parse(src: &str) -> Module {
    parse_and_verify(src, "test.ck").unwrap_or_else(|e| panic!("{}", e.render(Some(src))))
}

fn bits(ts: &[Tensor]) -> Vec<(Vec<usize>, Vec<u32>)> {
    ts.iter().map(|t| (t.shape.clone(), t.data.iter().map(|x| x.to_bits()).collect())).collect()
}

/// Equal as numbers (so -0 == +0, which `add-zero` may flip), NaN == NaN.
fn same_numbers(a: &[Tensor], b: &[Tensor]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.shape == y.shape && x.data.iter().zip(&y.data).all(|(p, q)| p == q || (p.is_nan() && q.is_nan()))
        })
}

/// Every ck.inplace mark in `f` is legal.
fn assert_marks_legal(f: &Func) {
    let live = liveness(f);
    for (i, op) in f.body.iter().enumerate() {
        if op.has_attr(ATTR_INPLACE) {
            assert!(inplace_is_legal(f, i, &live), "illegal mark on op {i} ({:?}) in @{}", op.kind, f.name);
        }
    }
}

/// inplace then memplan on every function; the checker accepts; the arena
/// run is bit-identical to the plain run of the same IR, and numerically
/// identical to the original module (every rewrite is exact up to the sign
/// of zero).
fn check_pipeline(m: &Module, seed: u64) -> Module {
    let mut out = m.clone();
    for f in &mut out.funcs {
        inplace_func(f, Limits::default());
        assert_marks_legal(f);
        memplan_func(f, 64).unwrap_or_else(|e| panic!("{e}"));
        check_func(f, 64).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
    }
    verify_module(&out).unwrap_or_else(|e| panic!("{e}"));
    // The same after fusion: groups are one step of the liveness timeline,
    // internal values get no bytes, and the plan still holds in the arena.
    let mut fused = m.clone();
    for f in &mut fused.funcs {
        inplace_func(f, Limits::default());
        ckopt_passes::fuse::fuse_func(f);
        assert_marks_legal(f);
        memplan_func(f, 64).unwrap_or_else(|e| panic!("fused: {e}"));
        check_func(f, 64).unwrap_or_else(|e| panic!("fused @{}: {e}", f.name));
    }
    verify_module(&fused).unwrap_or_else(|e| panic!("fused: {e}"));
    for f in &m.funcs {
        let inputs = random_inputs(f, seed);
        let want = run_func(m, &f.name, &inputs).unwrap_or_else(|e| panic!("{e}"));
        let plain = run_func(&out, &f.name, &inputs).unwrap_or_else(|e| panic!("{e}"));
        let (arena, _) = run_func_in_arena(&out, &f.name, &inputs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bits(&plain), bits(&arena), "@{}: arena run differs from the plain run", f.name);
        assert!(same_numbers(&want, &plain), "@{}: the pass changed the results", f.name);
        let fplain = run_func(&fused, &f.name, &inputs).unwrap_or_else(|e| panic!("{e}"));
        let (farena, _) = run_func_in_arena(&fused, &f.name, &inputs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bits(&fplain), bits(&farena), "@{}: fused arena run differs from the plain run", f.name);
    }
    out
}

/// Each named algebraic rewrite removes its op; results are unchanged.
#[test]
fn algebraic_rewrites_fire() {
    let src = r#"module {
  func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<6xf32>, tensor<2x3xf32>) {
    %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<2x3xf32>
    %e = "ck.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %m = "ck.mul"(%e, %one) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %n1 = "ck.neg"(%m) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %n2 = "ck.neg"(%n1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %t1 = "ck.transpose"(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %t2 = "ck.transpose"(%t1) {perm = [1, 0]} : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %r1 = "ck.reshape"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %r2 = "ck.reshape"(%r1) : (tensor<3x2xf32>) -> tensor<6xf32>
    %s1 = "ck.scale"(%x) {value = 2.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %s2 = "ck.scale"(%s1) {value = 3.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "ck.return"(%n2, %t2, %r1, %r2, %s2) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32>, tensor<6xf32>, tensor<2x3xf32>) -> ()
  }
}"#;
    let m = parse(src);
    let out = check_pipeline(&m, 1);
    let f = &out.funcs[0];
    let kinds: Vec<OpKind> = f.body.iter().map(|o| o.kind).collect();
    // fill, mul, both negs, both transposes: gone; r2 reads x directly; one scale{6}.
    assert!(!kinds.contains(&OpKind::Mul) && !kinds.contains(&OpKind::Neg) && !kinds.contains(&OpKind::Fill), "{kinds:?}");
    assert!(!kinds.contains(&OpKind::Transpose), "{kinds:?}");
    assert_eq!(kinds.iter().filter(|k| **k == OpKind::Scale).count(), 1, "{kinds:?}");
    let scale = f.body.iter().find(|o| o.kind == OpKind::Scale).expect("scale");
    assert_eq!(scale.f32_attr("value"), Some(6.0));
    let x = f.params[0].value;
    let r2 = f.body.iter().find(|o| o.result.is_some_and(|r| f.ty(r).shape == vec![6])).expect("r2");
    assert_eq!(r2.operands, vec![x]);
}

/// Gradient-like chains: relu_grad overwrites dy, add accumulates in place;
/// a value read later (x by relu_grad) is never overwritten.
#[test]
fn inplace_marks_respect_later_reads() {
    let src = r#"module {
  func.func @g(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %x = "ck.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %y = "ck.relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %dy = "ck.tanh"(%y) : (tensor<4xf32>) -> tensor<4xf32>
    %dx = "ck.relu_grad"(%x, %dy) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %e = "ck.exp"(%b) : (tensor<4xf32>) -> tensor<4xf32>
    %acc = "ck.add"(%e, %dx) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%acc) : (tensor<4xf32>) -> ()
  }
}"#;
    let m = parse(src);
    let out = check_pipeline(&m, 2);
    let f = &out.funcs[0];
    let mark = |k: OpKind| f.body.iter().find(|o| o.kind == k).and_then(|o| o.int_attr(ATTR_INPLACE));
    assert_eq!(mark(OpKind::Relu), None, "x is read later by relu_grad");
    assert_eq!(mark(OpKind::Tanh), Some(0));
    assert!(mark(OpKind::ReluGrad).is_some());
    assert!(mark(OpKind::Add).is_some());
}

/// A small deterministic PRNG (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random DAGs mixing elementwise ops, matmuls, scales, negs and transposes
/// (so rewrites and in-place marks interact).
fn random_module(seed: u64, n: usize) -> Module {
    let mut r = Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    let mut f = Func::new("rand", Loc::unknown());
    let sq = TensorType::f32(vec![4, 4]);
    let mut vals = vec![f.add_param("x", sq.clone(), false), f.add_param("w", sq.clone(), true)];
    for _ in 0..n {
        let a = vals[vals.len() - 1 - r.below(vals.len().min(5))];
        let b = vals[r.below(vals.len())];
        let k = [
            OpKind::Matmul,
            OpKind::Add,
            OpKind::Mul,
            OpKind::Relu,
            OpKind::Tanh,
            OpKind::Neg,
            OpKind::ReluGrad,
            OpKind::Sub,
            OpKind::Scale,
            OpKind::Transpose,
        ][r.below(10)];
        let attrs = match k {
            OpKind::Scale => ckopt_ir::attrs([("value", ckopt_ir::Attr::F32([0.5, 2.0, -1.0][r.below(3)]))]),
            OpKind::Transpose => ckopt_ir::attrs([("perm", ckopt_ir::Attr::IntArray(vec![1, 0]))]),
            _ => Attrs::new(),
        };
        let ops: Vec<ValueId> = if k.arity() == ckopt_ir::Arity::Exactly(1) { vec![a] } else { vec![a, b] };
        vals.push(f.push(k, &ops, attrs, None, "v", Loc::unknown()).expect("typed"));
    }
    let rets = [vals[vals.len() - 1], vals[2 + r.below(vals.len() - 2)]];
    f.push_return(&rets, Loc::unknown());
    Module { funcs: vec![f] }
}

/// Property: on random DAGs, inplace+memplan keeps results bit-identical and
/// the arena run equals the plain run.
#[test]
fn random_graphs_run_identically_in_the_arena() {
    let (mut marks, mut removed) = (0, 0);
    for seed in 0..120u64 {
        let m = random_module(seed, 3 + (seed as usize % 30));
        let out = check_pipeline(&m, seed);
        marks += out.funcs[0].body.iter().filter(|o| o.has_attr(ATTR_INPLACE)).count();
        removed += m.funcs[0].body.len() - out.funcs[0].body.len();
    }
    // The generator exercises both halves of the pass.
    assert!(marks > 100, "only {marks} in-place marks");
    assert!(removed > 10, "only {removed} ops simplified away");
}

/// Property: on the shared random graphs (ckopt_ir::testgen) and their
/// gradients, inplace+memplan is sound and the arena run is bit-identical.
#[test]
fn testgen_graphs_and_gradients_run_identically_in_the_arena() {
    use ckopt_ir::testgen::{GenConfig, gen_module};
    let mut with_grad = 0;
    let cfgs = [GenConfig::default().annotated(), GenConfig::default().annotated().with_int_ops()];
    for (seed, cfg) in (0..60u64).map(|s| (s, &cfgs[0])).chain((0..40u64).map(|s| (s, &cfgs[1]))) {
        let mut m = gen_module(cfg, seed);
        // A few generated ops have no gradient rule (e.g. max_pool2d_grad with
        // overlapping windows): then the forward function alone is checked.
        if autodiff(&mut m, &AutodiffOptions::default()).is_ok() {
            with_grad += 1;
        }
        check_pipeline(&m, seed);
    }
    assert!(with_grad >= 65, "only {with_grad} of 100 graphs had gradients");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
    /// Same property, driven (and shrunk) by proptest.
    #[test]
    fn prop_arena_matches_interpreter(m in ckopt_ir::testgen::arb_module(&ckopt_ir::testgen::GenConfig::default())) {
        let mut m = m;
        let mut g = m.clone();
        if autodiff(&mut g, &AutodiffOptions::default()).is_ok() {
            m = g;
        }
        check_pipeline(&m, 11);
    }
}

/// Property: every generated model (small sizes), with its gradient, runs bit-identically in the
/// arena after inplace and memplan.
#[test]
fn generated_models_run_identically_in_the_arena() {
    use ckopt_models::{GenOptions, ModelKind, SizeOpt, generate};
    for kind in ModelKind::ALL {
        let mut o = GenOptions::default();
        for &(opt, _) in kind.options() {
            let v = match opt {
                SizeOpt::Depth => 3,
                SizeOpt::Width => 8,
                SizeOpt::Batch => 2,
                SizeOpt::Seq => 3,
                SizeOpt::Heads => 2,
                SizeOpt::Channels => 4,
                SizeOpt::Image => 8,
                SizeOpt::Classes => 4,
                SizeOpt::Vocab => 11,
            };
            o.set(opt, Some(v));
        }
        let mut m = generate(kind, &o).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        autodiff(&mut m, &AutodiffOptions::default()).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        assert_eq!(m.funcs.len(), 2, "{kind:?}: forward and gradient");
        let out = check_pipeline(&m, 7);
        let g = &out.funcs[1];
        assert!(g.body.iter().any(|o| o.has_attr(ATTR_INPLACE)), "{kind:?}: no in-place op in {}", g.name);
    }
}

/// The arena interpreter refuses an unplanned function.
#[test]
fn arena_run_requires_a_plan() {
    let m = random_module(3, 5);
    let f = &m.funcs[0];
    let e = run_func_in_arena(&m, &f.name, &random_inputs(f, 0)).expect_err("not planned");
    assert!(e.message.contains("not planned"), "{}", e.message);
}

/// The arena interpreter makes an unsound plan visible: putting two values
/// that are live together at one offset changes the results (and the
/// checker rejects that plan).
#[test]
fn arena_run_exposes_an_overlapping_plan() {
    let src = r#"module {
  func.func @h(%x: tensor<8xf32>) -> tensor<8xf32> {
    %a = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.tanh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %c = "ck.add"(%a, %b) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%c) : (tensor<8xf32>) -> ()
  }
}"#;
    let mut m = parse(src);
    memplan_func(&mut m.funcs[0], 64).expect("plans");
    let inputs = random_inputs(&m.funcs[0], 3);
    let good = run_func_in_arena(&m, "h", &inputs).expect("runs").0;
    assert_eq!(bits(&good), bits(&run_func(&m, "h", &inputs).expect("runs")));
    let a_off = m.funcs[0].body[0].int_attr(ckopt_ir::ops::ATTR_OFFSET).expect("placed");
    m.funcs[0].body[1].attrs.insert(ckopt_ir::ops::ATTR_OFFSET.into(), ckopt_ir::Attr::Int(a_off));
    assert!(check_func(&m.funcs[0], 64).is_err());
    let bad = run_func_in_arena(&m, "h", &inputs).expect("runs").0;
    assert_ne!(bits(&good), bits(&bad));
}
