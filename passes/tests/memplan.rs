//! Memplan and its checker on hand-built and pseudo-random functions:
//! every plan the pass writes is accepted by the independent checker, the
//! checker rejects broken plans, and sharing/in-place behave as specified.

use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_OFFSET};
use ckopt_ir::{Attr, Attrs, Func, Loc, OpKind, TensorType, ValueId};
use ckopt_passes::analysis::{liveness, peak};
use ckopt_passes::inplace::{inplace_is_legal, mark_inplace_greedy, strip_illegal_inplace};
use ckopt_passes::memplan::{Policy, memplan_func, place};
use ckopt_passes::memplan_check::check_func;

fn push(f: &mut Func, k: OpKind, ops: &[ValueId]) -> ValueId {
    f.push(k, ops, Attrs::new(), None, "v", Loc::unknown()).expect("well-typed")
}

/// A chain x -> relu -> exp -> ... of `n` unary ops on [rows, 16] f32, returning the last.
fn chain(n: usize, rows: u64) -> Func {
    let mut f = Func::new("chain", Loc::unknown());
    let mut v = f.add_param("x", TensorType::f32(vec![rows, 16]), false);
    for i in 0..n {
        v = push(&mut f, if i % 2 == 0 { OpKind::Relu } else { OpKind::Exp }, &[v]);
    }
    f.push_return(&[v], Loc::unknown());
    f
}

fn offset(f: &Func, v: ValueId) -> i64 {
    f.body.iter().find(|o| o.result == Some(v)).and_then(|o| o.int_attr(ATTR_OFFSET)).expect("placed")
}

fn arena(f: &Func) -> i64 {
    f.attrs.get(ATTR_ARENA_BYTES).and_then(Attr::as_int).expect("arena")
}

/// Property: a chain needs two live buffers at a time, so its arena is two slots.
#[test]
fn chain_shares_two_slots() {
    let mut f = chain(10, 4); // 4*16*4 = 256 bytes per value
    let p = memplan_func(&mut f, 64).expect("plans");
    check_func(&f, 64).expect("checker accepts");
    assert_eq!(p.arena_bytes, 512);
    assert_eq!(arena(&f), 512);
    assert!(p.first_fit_bytes >= p.arena_bytes);
}

/// Property: with greedy in-place marks a chain runs in one buffer, and every
/// in-place result sits at its operand's offset.
#[test]
fn inplace_chain_runs_in_one_buffer() {
    let mut f = chain(10, 4);
    let marked = mark_inplace_greedy(&mut f);
    // The first op reads an argument: it cannot be in place.
    assert_eq!(marked, 9);
    let p = memplan_func(&mut f, 64).expect("plans");
    check_func(&f, 64).expect("checker accepts");
    assert_eq!(p.arena_bytes, 256);
    let live = liveness(&f);
    assert_eq!(peak(&f, &live, true), 256);
    for (i, op) in f.body.iter().enumerate() {
        if let Some(n) = op.int_attr(ATTR_INPLACE) {
            assert!(inplace_is_legal(&f, i, &live));
            let src = op.operands[n as usize];
            assert_eq!(op.int_attr(ATTR_OFFSET), Some(offset(&f, src)));
        }
    }
}

/// Property: a value read later (a skip connection) is never overwritten.
#[test]
fn value_read_later_is_not_overwritten() {
    let mut f = Func::new("skip", Loc::unknown());
    let x = f.add_param("x", TensorType::f32(vec![8]), false);
    let a = push(&mut f, OpKind::Exp, &[x]);
    let b = push(&mut f, OpKind::Relu, &[a]); // a is read again below
    let c = push(&mut f, OpKind::Add, &[a, b]); // a and b die here
    f.push_return(&[c], Loc::unknown());
    mark_inplace_greedy(&mut f);
    assert!(!f.body[1].has_attr(ATTR_INPLACE), "relu must not overwrite a");
    assert_eq!(f.body[2].int_attr(ATTR_INPLACE), Some(0));
    memplan_func(&mut f, 64).expect("plans");
    check_func(&f, 64).expect("checker accepts");
    assert_ne!(offset(&f, a), offset(&f, b));
    assert_eq!(offset(&f, c), offset(&f, a));
}

/// Property: results and arguments are never overwritten in place.
#[test]
fn results_and_arguments_are_not_overwritten() {
    let mut f = Func::new("res", Loc::unknown());
    let x = f.add_param("x", TensorType::f32(vec![8]), false);
    let a = push(&mut f, OpKind::Exp, &[x]);
    let b = push(&mut f, OpKind::Neg, &[a]);
    f.push_return(&[a, b], Loc::unknown());
    assert_eq!(mark_inplace_greedy(&mut f), 0);
    // A hand-written illegal mark is rejected by memplan, removed by strip.
    f.body[1].attrs.insert(ATTR_INPLACE.into(), Attr::Int(0));
    let e = memplan_func(&mut f, 64).expect_err("illegal mark");
    assert!(e.to_string().contains("not legal"), "{e}");
    assert_eq!(strip_illegal_inplace(&mut f), 1);
    memplan_func(&mut f, 64).expect("plans");
    check_func(&f, 64).expect("checker accepts");
}

#[test]
fn bad_align_and_unknown_size_are_errors() {
    let mut f = chain(2, 4);
    assert!(memplan_func(&mut f, 48).is_err());
    let mut g = Func::new("huge", Loc::unknown());
    let x = g.add_param("x", TensorType::f32(vec![2]), false);
    let v = g.new_value("big", TensorType::f32(vec![u64::MAX / 2, 4]));
    g.body.push(ckopt_ir::Op { kind: OpKind::Neg, operands: vec![x], result: Some(v), attrs: Attrs::new(), loc: Loc::unknown() });
    g.push_return(&[v], Loc::unknown());
    let e = memplan_func(&mut g, 64).expect_err("unknown size");
    assert!(e.to_string().contains("unknown size"), "{e}");
}

/// The checker rejects: overlapping live values, misalignment, out of arena,
/// a missing offset, an in-place result not at its operand's offset.
#[test]
fn checker_rejects_broken_plans() {
    let mut f = Func::new("skip", Loc::unknown());
    let x = f.add_param("x", TensorType::f32(vec![16]), false);
    let a = push(&mut f, OpKind::Exp, &[x]);
    let b = push(&mut f, OpKind::Relu, &[a]);
    let c = push(&mut f, OpKind::Add, &[a, b]);
    f.push_return(&[c], Loc::unknown());
    memplan_func(&mut f, 64).expect("plans");
    check_func(&f, 64).expect("good plan");
    let set = |f: &mut Func, i: usize, k: &str, v: i64| {
        f.body[i].attrs.insert(k.into(), Attr::Int(v));
    };
    let good = f.clone();
    // a and b live together: same offset is an overlap.
    let mut g = good.clone();
    let oa = offset(&g, a);
    set(&mut g, 1, ATTR_OFFSET, oa);
    let e = check_func(&g, 64).expect_err("overlap");
    assert!(e.to_string().contains("overlaps"), "{e}");
    // misaligned
    let mut g = good.clone();
    set(&mut g, 0, ATTR_OFFSET, 4);
    assert!(check_func(&g, 64).expect_err("misaligned").to_string().contains("aligned"));
    // beyond the arena
    let mut g = good.clone();
    set(&mut g, 2, ATTR_OFFSET, 1 << 20);
    assert!(check_func(&g, 64).expect_err("outside").to_string().contains("exceeds"));
    // missing offset
    let mut g = good.clone();
    g.body[0].attrs.remove(ATTR_OFFSET);
    assert!(check_func(&g, 64).is_err());
    // an in-place mark whose result is elsewhere
    let mut g = good.clone();
    set(&mut g, 2, ATTR_INPLACE, 0);
    let ob = offset(&g, b);
    set(&mut g, 2, ATTR_OFFSET, ob + 128);
    assert!(check_func(&g, 64).is_err());
    // an in-place mark on an operand read later
    let mut g = good.clone();
    set(&mut g, 1, ATTR_INPLACE, 0);
    set(&mut g, 1, ATTR_OFFSET, oa);
    assert!(check_func(&g, 64).expect_err("illegal").to_string().contains("read again later"));
}

/// A small deterministic PRNG (xorshift) for the generated functions below.
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

/// A random DAG of elementwise ops, matmuls and reductions over two shapes.
fn random_func(seed: u64, n: usize) -> Func {
    let mut r = Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1);
    let mut f = Func::new("rand", Loc::unknown());
    let sq = TensorType::f32(vec![8, 8]);
    let mut vals = vec![f.add_param("x", sq.clone(), false), f.add_param("w", sq.clone(), true)];
    for _ in 0..n {
        let a = vals[vals.len() - 1 - r.below(vals.len().min(6))];
        let b = vals[r.below(vals.len())];
        let k = match r.below(8) {
            0 => OpKind::Matmul,
            1 => OpKind::Add,
            2 => OpKind::Mul,
            3 => OpKind::Relu,
            4 => OpKind::Tanh,
            5 => OpKind::Neg,
            6 => OpKind::ReluGrad,
            _ => OpKind::Sub,
        };
        let ops: Vec<ValueId> = if k.arity() == ckopt_ir::Arity::Exactly(1) { vec![a] } else { vec![a, b] };
        vals.push(push(&mut f, k, &ops));
    }
    let last = vals[vals.len() - 1];
    let mid = vals[vals.len() / 2];
    f.push_return(&[last, mid], Loc::unknown());
    f
}

/// Property: on random functions, with or without in-place marks, the plan
/// is accepted by the checker, its arena is at least the live peak, and the
/// best-fit plan never needs more than the sum of all buffers.
#[test]
fn random_functions_plan_soundly() {
    for seed in 0..200u64 {
        let mut f = random_func(seed, 5 + (seed as usize % 40));
        if seed % 2 == 1 {
            mark_inplace_greedy(&mut f);
        }
        let p = memplan_func(&mut f, 64).expect("plans");
        check_func(&f, 64).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let live = liveness(&f);
        assert!(p.arena_bytes >= peak(&f, &live, true), "seed {seed}");
        let total: u64 = live.intervals.iter().map(|iv| iv.bytes.div_ceil(64) * 64).sum();
        assert!(p.arena_bytes <= total);
        assert!(p.first_fit_bytes >= peak(&f, &live, true));
    }
}

/// Property: planning a 100k-op chain-with-skips is fast (O(n log n)) even in
/// debug builds; best-fit beats or ties first-fit.
#[test]
fn large_function_plans_quickly() {
    let mut f = Func::new("big", Loc::unknown());
    let mut v = f.add_param("x", TensorType::f32(vec![4, 16]), false);
    let mut saved = Vec::new();
    for i in 0..50_000 {
        v = push(&mut f, OpKind::Tanh, &[v]);
        if i % 2 == 0 {
            saved.push(v);
        }
    }
    // "backward": consume the saved values in reverse.
    for s in saved.into_iter().rev() {
        v = push(&mut f, OpKind::Mul, &[v, s]);
    }
    f.push_return(&[v], Loc::unknown());
    let t = std::time::Instant::now();
    let p = memplan_func(&mut f, 64).expect("plans");
    let el = t.elapsed();
    check_func(&f, 64).expect("checker accepts");
    assert!(el.as_secs_f64() < 10.0, "took {el:?}");
    assert!(p.arena_bytes <= p.first_fit_bytes);
    let live = liveness(&f);
    assert!(p.arena_bytes <= peak(&f, &live, true) + 256 * 2);
    let _ = place(&[], 0, Policy::FirstFit);
}

/// The checker's verdict on `f` recomputed by brute force over all pairs of
/// values (the oracle for the mutation test below).
fn brute_force_valid(f: &Func, align: i64) -> bool {
    let arena = f.attrs.get(ATTR_ARENA_BYTES).and_then(Attr::as_int).unwrap_or(-1);
    let mut last = vec![None; f.values.len()];
    for (i, op) in f.body.iter().enumerate() {
        for &o in &op.operands {
            last[o.index()] = Some(i);
        }
    }
    // (value, def, last use, offset, size)
    let mut vals = Vec::new();
    for (i, op) in f.body.iter().enumerate() {
        let Some(r) = op.result else { continue };
        let Some(off) = op.int_attr(ATTR_OFFSET) else { return false };
        let size = f.ty(r).bytes() as i64;
        if off % align != 0 || off + size > arena {
            return false;
        }
        vals.push((r, i, last[r.index()].unwrap_or(i), off, size));
    }
    let off_of = |v: ValueId| vals.iter().find(|x| x.0 == v).map(|x| x.3);
    let mut pairs_ok = Vec::new();
    for (i, op) in f.body.iter().enumerate() {
        if let Some(n) = op.int_attr(ATTR_INPLACE) {
            let (o, r) = (op.operands[n as usize], op.result.expect("result"));
            if off_of(o) != off_of(r) || last[o.index()] != Some(i) {
                return false;
            }
            pairs_ok.push((o, r));
        }
    }
    for (a, x) in vals.iter().enumerate() {
        for y in &vals[a + 1..] {
            let time = x.1 <= y.2 && y.1 <= x.2;
            let bytes = x.4 > 0 && y.4 > 0 && x.3 < y.3 + y.4 && y.3 < x.3 + x.4;
            if time && bytes && !pairs_ok.contains(&(x.0, y.0)) && !pairs_ok.contains(&(y.0, x.0)) {
                return false;
            }
        }
    }
    true
}

/// Property: the checker accepts exactly the plans a brute-force pairwise
/// check accepts, on plans perturbed by moving one value to another offset
/// (regalloc2-style: the checker is itself checked).
#[test]
fn checker_agrees_with_brute_force_on_mutated_plans() {
    let (mut rejected, mut accepted) = (0, 0);
    for seed in 0..300u64 {
        let mut f = random_func(seed, 4 + (seed as usize % 25));
        if seed % 3 != 0 {
            mark_inplace_greedy(&mut f);
        }
        memplan_func(&mut f, 64).expect("plans");
        assert!(brute_force_valid(&f, 64), "seed {seed}: the planner's own plan");
        let mut r = Rng(seed | 1);
        let ops: Vec<usize> = (0..f.body.len()).filter(|&i| f.body[i].result.is_some()).collect();
        let i = ops[r.below(ops.len())];
        let slots = (arena(&f) / 64).max(1) as usize;
        let off = 64 * r.below(slots + 1) as i64;
        f.body[i].attrs.insert(ATTR_OFFSET.into(), Attr::Int(off));
        let oracle = brute_force_valid(&f, 64);
        let verdict = check_func(&f, 64).is_ok();
        assert_eq!(verdict, oracle, "seed {seed}: op {i} moved to {off}: checker {verdict}, brute force {oracle}");
        if oracle { accepted += 1 } else { rejected += 1 }
    }
    // Both outcomes are exercised.
    assert!(rejected > 30 && accepted > 10, "rejected {rejected}, accepted {accepted}");
}

/// The causal mask of a decoder at real element sizes: i64 iotas (8 bytes
/// an element) and the i1 mask (1 byte) are placed, counted and checked at
/// their sizes; `fuse` builds the mask inside the select's loop, so it is
/// never stored; and no op writes in place across element sizes.
#[test]
fn masks_and_indices_are_placed_at_their_real_sizes() {
    let src = r#"
func.func @mask(%s: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %e = "ck.exp"(%s) : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = "ck.iota"() {dim = 0} : () -> tensor<8x8xi64>
  %c = "ck.iota"() {dim = 1} : () -> tensor<8x8xi64>
  %m = "ck.ge"(%r, %c) : (tensor<8x8xi64>, tensor<8x8xi64>) -> tensor<8x8xi1>
  %z = "ck.fill"() {value = 0.0 : f32} : () -> tensor<8x8xf32>
  %y = "ck.select"(%m, %e, %z) : (tensor<8x8xi1>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  "ck.return"(%y) : (tensor<8x8xf32>) -> ()
}"#;
    let m0 = ckopt_ir::parse_and_verify(src, "mask.ck").expect("parses");
    // No fusion: every value stored. 2 iotas * 512 + mask 64 + exp/fill/select 3 * 256.
    let mut m = m0.clone();
    ckopt_passes::PassManager::parse("inplace,memplan").expect("pipeline").run(&mut m).expect("runs");
    let f = &m.funcs[0];
    let rep = ckopt_passes::analysis::memory_report(f);
    assert_eq!(rep.total_bytes, 2 * 512 + 64 + 3 * 256, "{rep:?}");
    check_func(f, 64).expect("the checker accepts the plan");
    // The i1 mask never overwrites (or is overwritten by) a value of another element size.
    for op in &f.body {
        if let (Some(n), Some(r)) = (op.int_attr(ATTR_INPLACE), op.result) {
            let o = op.operands[n as usize];
            assert_eq!(f.ty(o).dtype.bytes(), f.ty(r).dtype.bytes(), "'ck.{}' in place across element sizes", op.kind.name());
        }
    }
    let ge = f.body.iter().find(|o| o.kind == OpKind::Ge).expect("ge");
    assert!(!ge.has_attr(ATTR_INPLACE), "ge's i1 result must not overwrite an i64 iota");
    let out = ckopt_interp::arena::run_func_in_arena(&m, "mask", &[ckopt_interp::Tensor::new(vec![8, 8], vec![0.0; 64]).expect("x")])
        .expect("arena run")
        .0;
    assert_eq!(out[0].data.iter().filter(|&&v| v == 1.0).count(), 36, "the lower triangle with its diagonal");
    // Fused: the iotas, the mask, exp, fill and select form one loop; only the result is stored.
    let mut m = m0;
    ckopt_passes::PassManager::parse("fuse,memplan").expect("pipeline").run(&mut m).expect("runs");
    let f = &m.funcs[0];
    let rep = ckopt_passes::analysis::memory_report(f);
    assert_eq!(rep.kernels, 1, "{rep:?}");
    assert_eq!(rep.fused_bytes, 2 * 512 + 64 + 2 * 256, "{rep:?}");
    assert_eq!(rep.total_bytes, 2 * 512 + 64 + 3 * 256, "{rep:?}");
    assert_eq!(rep.arena_bytes, Some(256), "{rep:?}");
}
