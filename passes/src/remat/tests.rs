//! Unit tests of remat on hand-built gradient-like functions.
//!
//! Equivalence is checked structurally here: every value gets the hash of
//! its expression tree (op, attributes, operand expressions; arguments by
//! position), so two functions return bit-identical results on any
//! interpreter when their returned expressions are equal (remat only clones
//! ops). Interpreter-based bit-identity tests live in `tests/remat.rs`.

use super::*;
use super::emit::apply;
use crate::analysis::{memory_report, op_phases, Phase};
use ckopt_ir::{Attr, Attrs, Loc, OpKind, TensorType, ValueId, attrs, verify_module};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};

/// Expression hashes of the returned values.
pub fn result_exprs(f: &Func) -> Vec<u64> {
    let mut h = vec![0u64; f.values.len()];
    for (i, p) in f.params.iter().enumerate() {
        let mut s = DefaultHasher::new();
        ("arg", i).hash(&mut s);
        h[p.value.index()] = s.finish();
    }
    for op in &f.body {
        let Some(r) = op.result else { continue };
        let mut s = DefaultHasher::new();
        op.kind.hash(&mut s);
        for (k, v) in &op.attrs {
            if k.starts_with("ck.") {
                continue;
            }
            k.hash(&mut s);
            format!("{v}").hash(&mut s);
        }
        for o in &op.operands {
            h[o.index()].hash(&mut s);
        }
        h[r.index()] = s.finish();
    }
    f.returned().iter().map(|v| h[v.index()]).collect()
}

fn t(s: &[u64]) -> TensorType {
    TensorType::f32(s.to_vec())
}

/// A gradient-like MLP: n layers relu(x W + b), squared-error loss, and a
/// hand-written backward that reads the relu outputs and layer inputs.
pub fn mlp_grad(n: usize, batch: u64, width: u64, dropout: bool) -> Func {
    let l = Loc::unknown();
    let mut f = Func::new("mlp_grad", l.clone());
    let x = f.add_param("x", t(&[batch, width]), false);
    let tg = f.add_param("t", t(&[batch, width]), false);
    let mut ws = Vec::new();
    for i in 0..n {
        let w = f.add_param(format!("w{i}"), t(&[width, width]), true);
        let b = f.add_param(format!("b{i}"), t(&[width]), true);
        ws.push((w, b));
    }
    let mut acts = vec![x];
    for (i, &(w, b)) in ws.iter().enumerate() {
        let a = *acts.last().unwrap();
        let h = f.push(OpKind::Matmul, &[a, w], Attrs::new(), None, "h", l.clone()).unwrap();
        let bb = f
            .push(OpKind::Broadcast, &[b], attrs([("dims", Attr::IntArray(vec![1]))]), Some(t(&[batch, width])), "bb", l.clone())
            .unwrap();
        let z = f.push(OpKind::Add, &[h, bb], Attrs::new(), None, "z", l.clone()).unwrap();
        let mut y = f.push(OpKind::Relu, &[z], Attrs::new(), None, "a", l.clone()).unwrap();
        if dropout && i % 2 == 0 {
            y = f
                .push(OpKind::Dropout, &[y], attrs([("rate", Attr::F32(0.5)), ("seed", Attr::Int(7 + i as i64))]), None, "dr", l.clone())
                .unwrap();
        }
        acts.push(y);
    }
    let last = *acts.last().unwrap();
    let d = f.push(OpKind::Sub, &[last, tg], Attrs::new(), None, "d", l.clone()).unwrap();
    let s = f.push(OpKind::Mul, &[d, d], Attrs::new(), None, "s", l.clone()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l.clone()).unwrap();
    // backward
    let mut da = f.push(OpKind::Scale, &[d], attrs([("value", Attr::F32(2.0))]), None, "dd", l.clone()).unwrap();
    let mut grads = Vec::new();
    for i in (0..n).rev() {
        let (w, _) = ws[i];
        let y = acts[i + 1];
        // relu_grad reads the relu output (or the dropout output: same sign pattern for this test)
        let dz = f.push(OpKind::ReluGrad, &[y, da], Attrs::new(), None, "dz", l.clone()).unwrap();
        let dw = f
            .push(OpKind::Matmul, &[acts[i], dz], attrs([("transpose_a", Attr::Bool(true))]), None, "dw", l.clone())
            .unwrap();
        let db = f.push(OpKind::ReduceSum, &[dz], attrs([("dims", Attr::IntArray(vec![0]))]), None, "db", l.clone()).unwrap();
        grads.push((dw, db));
        if i > 0 {
            da = f.push(OpKind::Matmul, &[dz, w], attrs([("transpose_b", Attr::Bool(true))]), None, "da", l.clone()).unwrap();
        }
    }
    let mut rets = vec![loss];
    for (dw, db) in grads.into_iter().rev() {
        rets.push(dw);
        rets.push(db);
    }
    f.push_return(&rets, l);
    f
}

fn check(f: &Func, g: &Func) {
    let m = Module { funcs: vec![g.clone()] };
    if let Err(e) = verify_module(&m) {
        panic!("remat output does not verify: {e}");
    }
    assert_eq!(result_exprs(f), result_exprs(g), "results differ structurally");
}

fn run(f: &Func, mode: Mode, budget: Option<u64>) -> (Func, RematOutcome) {
    let mut g = f.clone();
    let o = remat_func(&mut g, &RematOptions { mode, budget, search: true, k: 1, ..Default::default() }).unwrap().unwrap();
    check(f, &g);
    (g, o)
}

const UNIT: u64 = 8 * 16 * 4;

#[test]
fn chain_of_mlp_has_one_stage_per_layer_plus_loss() {
    let f = mlp_grad(20, 8, 16, false);
    let ch = build_chain(&f);
    assert!(ch.has_backward);
    assert!(ch.len() >= 20 && ch.len() <= 22, "stages: {}", ch.len());
    for j in 1..20 {
        assert_eq!(ch.bound_bytes[j], UNIT, "boundary {j} is one activation");
    }
}

#[test]
fn sqrt_mode_reduces_peak_and_recomputes_at_most_one_forward() {
    let f = mlp_grad(100, 8, 16, false);
    let before = memory_report(&f);
    let (g, o) = run(&f, Mode::Sqrt, None);
    let after = memory_report(&g);
    assert!(after.temp_peak_bytes * 3 < before.temp_peak_bytes, "{} vs {}", after.temp_peak_bytes, before.temp_peak_bytes);
    // 2 sqrt(n) + a few units
    assert!(after.temp_peak_bytes <= (20 + 6) * UNIT, "peak {} units", after.temp_peak_bytes / UNIT);
    assert!(after.recompute_flops <= before.forward_flops);
    assert!(after.recomputed_ops > 0);
    assert_eq!(o.on_demand, 0);
    // recompute ops are their own phase
    assert!(op_phases(&g).contains(&Phase::Recompute));
}

#[test]
fn log_mode_is_logarithmic() {
    let f = mlp_grad(128, 8, 16, false);
    let before = memory_report(&f);
    let (g, _) = run(&f, Mode::Log, None);
    let r = memory_report(&g);
    assert!(r.temp_peak_bytes <= (7 + 8) * UNIT, "peak {} units", r.temp_peak_bytes / UNIT);
    assert!(r.recompute_flops <= 8 * before.forward_flops);
}

#[test]
fn greedy_search_beats_or_matches_sqrt_and_respects_budget() {
    let f = mlp_grad(100, 8, 16, false);
    let (_, s) = run(&f, Mode::Sqrt, None);
    let (_, g) = run(&f, Mode::Greedy, None);
    assert!(g.temp_peak_after <= s.temp_peak_after);
    let (gb, o) = run(&f, Mode::Greedy, Some(30 * UNIT));
    assert!(memory_report(&gb).temp_peak_bytes <= 30 * UNIT);
    assert!(o.temp_peak_after <= 30 * UNIT);
}

#[test]
fn infeasible_budget_names_the_smallest_feasible_one() {
    let f = mlp_grad(50, 8, 16, false);
    let mut g = f.clone();
    let e = remat_func(&mut g, &RematOptions { mode: Mode::Greedy, budget: Some(UNIT), search: true, k: 1, ..Default::default() }).unwrap_err();
    assert!(e.message.contains("smallest feasible budget found is"), "{}", e.message);
    assert_eq!(g, f, "function untouched on error");
}

#[test]
fn optimal_meets_tight_budgets_with_multi_level_recompute() {
    let f = mlp_grad(100, 8, 16, false);
    let before = memory_report(&f);
    for units in [40u64, 20, 14] {
        let (g, _) = run(&f, Mode::Optimal, Some(units * UNIT));
        let r = memory_report(&g);
        assert!(r.temp_peak_bytes <= units * UNIT, "budget {units}: peak {}", r.temp_peak_bytes / UNIT);
        assert!(r.recompute_flops <= 3 * before.forward_flops, "budget {units}");
    }
    // ample budget: no recomputation at all
    let (g, _) = run(&f, Mode::Optimal, Some(before.temp_peak_bytes));
    assert_eq!(memory_report(&g).recompute_flops, 0);
}

#[test]
fn optimal_recomputes_less_than_log_at_the_same_memory() {
    let f = mlp_grad(100, 8, 16, false);
    let (_, lg) = run(&f, Mode::Log, None);
    let (_, op) = run(&f, Mode::Optimal, Some(lg.temp_peak_after));
    assert!(op.temp_peak_after <= lg.temp_peak_after);
    assert!(op.recompute_flops <= lg.recompute_flops, "{} > {}", op.recompute_flops, lg.recompute_flops);
}

#[test]
fn dropout_is_recomputed_with_its_seed() {
    let f = mlp_grad(30, 8, 16, true);
    let (g, _) = run(&f, Mode::Sqrt, None);
    let drops: Vec<_> = g.body.iter().filter(|o| o.kind == OpKind::Dropout && o.has_attr("ck.recompute")).collect();
    assert!(!drops.is_empty(), "some dropout is recomputed");
    for d in drops {
        assert!(d.int_attr("seed").is_some_and(|s| s >= 7));
    }
}

#[test]
fn mirror_forces_recompute_and_checkpoint_forces_keep() {
    let mut f = mlp_grad(10, 8, 16, false);
    // mark every relu output mirror except the 5th, which is checkpointed
    let mut relus = 0;
    let mut kept = None;
    for op in f.body.iter_mut() {
        if op.kind == OpKind::Relu {
            relus += 1;
            if relus == 5 {
                op.attrs.insert("ck.checkpoint".into(), Attr::Unit);
                kept = op.result;
            } else {
                op.attrs.insert("ck.mirror".into(), Attr::Unit);
            }
        }
    }
    let kept: ValueId = kept.unwrap();
    let (g, _) = run(&f, Mode::Sqrt, None);
    // the checkpointed value is still read by the backward
    let bwd_reads_kept = g.body.iter().skip_while(|o| o.kind != OpKind::Scale).any(|o| o.operands.contains(&kept));
    assert!(bwd_reads_kept);
    // no mirror value (original) is read after the forward
    let mirrors: Vec<ValueId> = f.body.iter().filter(|o| o.has_attr("ck.mirror")).filter_map(|o| o.result).collect();
    let start = g.body.iter().position(|o| o.kind == OpKind::Scale).unwrap();
    for o in &g.body[start..] {
        for m in &mirrors {
            assert!(!o.operands.contains(m), "mirror value read in backward");
        }
    }
}

#[test]
fn inplace_marks_stay_legal() {
    let mut f = mlp_grad(30, 8, 16, false);
    // mark add in place into the matmul result (it dies there), and relu_grad into dy
    for op in f.body.iter_mut() {
        if op.kind == OpKind::Add || op.kind == OpKind::Relu {
            op.attrs.insert("ck.inplace".into(), Attr::Int(0));
        }
        if op.kind == OpKind::ReluGrad {
            op.attrs.insert("ck.inplace".into(), Attr::Int(1));
        }
    }
    // strip the ones that are illegal in the input (relu outputs are read later)
    emit::fix_inplace(&mut f);
    let (g, _) = run(&f, Mode::Sqrt, None);
    let mut g2 = g.clone();
    let (stripped, _) = emit::fix_inplace(&mut g2);
    assert_eq!(stripped, 0, "every in-place mark in the output is legal");
    assert!(g.body.iter().any(|o| o.has_attr("ck.recompute") && o.has_attr("ck.inplace")));
}

#[test]
fn forward_only_function_is_unchanged() {
    let l = Loc::unknown();
    let mut f = Func::new("fwd", l.clone());
    let x = f.add_param("x", t(&[4]), false);
    let y = f.push(OpKind::Relu, &[x], Attrs::new(), None, "y", l.clone()).unwrap();
    let s = f.push(OpKind::ReduceSum, &[y], attrs([("dims", Attr::IntArray(vec![0]))]), None, "s", l.clone()).unwrap();
    f.push_return(&[s], l);
    let mut g = f.clone();
    assert!(remat_func(&mut g, &RematOptions::default()).unwrap().is_none());
    assert_eq!(f, g);
}

/// A chain whose layers are one matmul followed by cheap ops whose outputs
/// the backward reads: with a budget that the mirror plan (keep matmul
/// outputs, recompute the cheap ops) meets, greedy and optimal recompute no
/// matmul ("cheap ops first").
#[test]
fn budget_met_by_cheap_recompute_recomputes_no_matmul() {
    let l = Loc::unknown();
    let mut f = Func::new("net", l.clone());
    let x = f.add_param("x", t(&[8, 16]), false);
    let mut a = x;
    for i in 0..12 {
        let w = f.add_param(format!("w{i}"), t(&[16, 16]), true);
        let h = f.push(OpKind::Matmul, &[a, w], Attrs::new(), None, "h", l.clone()).unwrap();
        let th = f.push(OpKind::Tanh, &[h], Attrs::new(), None, "t", l.clone()).unwrap();
        let sg = f.push(OpKind::Sigmoid, &[th], Attrs::new(), None, "s", l.clone()).unwrap();
        a = f.push(OpKind::Tanh, &[sg], Attrs::new(), None, "a", l.clone()).unwrap();
    }
    let s = f.push(OpKind::ReduceSum, &[a], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l.clone()).unwrap();
    f.push_return(&[s], l);
    let mut m = Module { funcs: vec![f] };
    let mut pm = crate::PassManager::parse("autodiff").unwrap();
    pm.run(&mut m).unwrap();
    let g = m.func("net_grad").unwrap().clone();
    let none = memory_report(&g).temp_peak_bytes;
    let budget = none * 6 / 10;
    for mode in [Mode::Greedy, Mode::Optimal] {
        let mut r = g.clone();
        let o = remat_func(&mut r, &RematOptions { mode, budget: Some(budget), search: true, k: 1, ..Default::default() }).unwrap().unwrap();
        check(&g, &r);
        assert!(o.temp_peak_after <= budget, "{mode:?}: {} > {budget}", o.temp_peak_after);
        let heavy = r.body.iter().filter(|op| op.has_attr("ck.recompute") && op.kind == OpKind::Matmul).count();
        assert_eq!(heavy, 0, "{mode:?} recomputed {heavy} matmuls (plan {})", o.plan);
        assert!(o.recomputed_ops > 0, "{mode:?}: something cheap is recomputed");
    }
}

/// Extreme option values neither hang nor panic: a huge fan-out, a zero or
/// huge budget in every mode.
#[test]
fn extreme_options_are_handled() {
    let f = mlp_grad(40, 8, 16, false);
    let mut g = f.clone();
    remat_func(&mut g, &RematOptions { mode: Mode::Log, budget: None, search: true, k: 1_000_000_000, ..Default::default() }).unwrap();
    check(&f, &g);
    for mode in [Mode::Sqrt, Mode::Greedy, Mode::Log, Mode::Optimal] {
        let mut g = f.clone();
        assert!(remat_func(&mut g, &RematOptions { mode, budget: Some(0), search: true, k: 1, ..Default::default() }).is_err());
        let mut g = f.clone();
        remat_func(&mut g, &RematOptions { mode, budget: Some(u64::MAX), search: true, k: 3, ..Default::default() }).unwrap();
        check(&f, &g);
    }
}

/// The byte count an infeasibility error names ("... found is 3.50 KiB (3584 bytes)" or "... is 192 B").
fn named_bytes(msg: &str, after: &str) -> u64 {
    let rest = &msg[msg.find(after).unwrap_or_else(|| panic!("'{after}' not in: {msg}")) + after.len()..];
    if let Some(i) = rest.find(" bytes)")
        && let Some(j) = rest[..i].rfind('(')
    {
        return rest[j + 1..i].parse().unwrap();
    }
    rest.split(' ').next().unwrap().parse().unwrap()
}

fn opts(mode: Mode, budget: Option<u64>) -> RematOptions {
    RematOptions { mode, budget, ..Default::default() }
}

/// No mode recomputes for nothing: without a limit, the chosen plan either
/// lowers the peak or is no remat at all (zero recompute, function unchanged).
/// A chain whose every forward value is returned has nothing to drop: all
/// modes keep it as it is.
#[test]
fn no_plan_recomputes_without_lowering_the_peak() {
    for f in [mlp_grad(30, 8, 16, false), mlp_grad(3, 8, 16, false)] {
        for mode in [Mode::Sqrt, Mode::Greedy, Mode::Log] {
            let mut g = f.clone();
            let o = remat_func(&mut g, &opts(mode, None)).unwrap().unwrap();
            check(&f, &g);
            if o.recompute_flops > 0 {
                assert!(o.temp_peak_after < o.temp_peak_before, "{mode:?} recomputes {} flops for no memory", o.recompute_flops);
            } else {
                assert_eq!(o.recomputed_ops, 0);
            }
            if o.plan == "none" {
                assert_eq!(g, f, "{mode:?}: 'none' leaves the function as it was");
            }
        }
    }
    // a 1-layer net: recomputing its single stage cannot lower the peak
    let f = mlp_grad(1, 8, 16, false);
    for mode in [Mode::Sqrt, Mode::Greedy, Mode::Log] {
        let mut g = f.clone();
        let o = remat_func(&mut g, &opts(mode, None)).unwrap().unwrap();
        assert_eq!((o.recompute_flops, o.plan.as_str()), (0, "none"), "{mode:?}");
    }
}

/// greedy with a budget: within it, and swept over budgets, monotone: as the
/// budget grows, recompute never grows (and peak never exceeds the budget).
#[test]
fn greedy_is_monotone_over_budgets() {
    let f = mlp_grad(60, 8, 16, false);
    let none = memory_report(&f).temp_peak_bytes;
    let mut prev: Option<(u64, u64)> = None;
    let mut feasible = 0;
    for i in 0..=24u64 {
        let b = none * (4 + i) / 28;
        let mut g = f.clone();
        let Ok(o) = remat_func(&mut g, &opts(Mode::Greedy, Some(b))) else { continue };
        let o = o.unwrap();
        feasible += 1;
        assert!(o.temp_peak_after <= b);
        if let Some((pb, pr)) = prev {
            assert!(o.recompute_flops <= pr, "budget {pb} -> {b}: recompute {pr} -> {}", o.recompute_flops);
        }
        prev = Some((b, o.recompute_flops));
    }
    assert!(feasible >= 15, "only {feasible} budgets were feasible");
    assert_eq!(prev.map(|p| p.1), Some(0), "the largest budget (no remat's peak x 1) needs no recompute");
}

/// The smallest feasible budget an error names is feasible: rerunning with
/// it succeeds and meets it (greedy, optimal, sqrt).
#[test]
fn the_named_smallest_budget_is_feasible() {
    let f = mlp_grad(50, 8, 16, false);
    for mode in [Mode::Greedy, Mode::Optimal, Mode::Sqrt] {
        let mut g = f.clone();
        let e = remat_func(&mut g, &opts(mode, Some(UNIT))).unwrap_err();
        let b = named_bytes(&e.message, "smallest feasible budget found is ");
        assert!(b > UNIT, "{mode:?}: {}", e.message);
        let mut g = f.clone();
        let o = remat_func(&mut g, &opts(mode, Some(b))).unwrap_or_else(|e| panic!("{mode:?} at {b}: {e:?}")).unwrap();
        assert!(o.temp_peak_after <= b);
        check(&f, &g);
    }
}

/// device_budget counts arguments + arena after memplan: met when feasible
/// (measured by memplan itself), an infeasible one names the smallest total
/// found (which is then feasible), one below the arguments alone names the option.
#[test]
fn device_budget_counts_arguments_and_arena() {
    // batch 64: activations (temp) outweigh the returned gradients
    let f = mlp_grad(40, 64, 16, false);
    let args = crate::analysis::argument_bytes(&f);
    let none_dev = device_bytes(&f, 64).unwrap();
    assert!(none_dev > args);
    for mode in [Mode::Greedy, Mode::Optimal, Mode::Sqrt] {
        // a budget between the arguments and no remat's total
        let d = args + (none_dev - args) * 6 / 10;
        let mut g = f.clone();
        let r = remat_func(&mut g, &RematOptions { mode, device_budget: Some(d), ..Default::default() });
        match r {
            Ok(o) => {
                let o = o.unwrap();
                check(&f, &g);
                let mut planned = g.clone();
                let arena = crate::memplan::memplan_func(&mut planned, 64).unwrap().arena_bytes;
                assert!(args + arena <= d, "{mode:?}: {} + {arena} > {d}", args);
                assert_eq!(o.device_bytes, Some(args + arena));
                assert!(o.recompute_flops > 0, "{mode:?}: no remat does not fit");
            }
            Err(e) => panic!("{mode:?}: {}", e.message),
        }
        // infeasible: the named total is feasible
        let mut g = f.clone();
        let e = remat_func(&mut g, &RematOptions { mode, device_budget: Some(args + 1), ..Default::default() }).unwrap_err();
        let t = named_bytes(&e.message, "smallest feasible total found is ");
        assert!(e.message.contains("arguments"), "{}", e.message);
        let mut g = f.clone();
        remat_func(&mut g, &RematOptions { mode, device_budget: Some(t), ..Default::default() })
            .unwrap_or_else(|e| panic!("{mode:?} at {t}: {}", e.message));
        // below the arguments alone
        let mut g = f.clone();
        let e = remat_func(&mut g, &RematOptions { mode, device_budget: Some(args / 2), ..Default::default() }).unwrap_err();
        assert!(e.message.contains("option 'device_budget'") && e.message.contains("arguments"), "{}", e.message);
        assert_eq!(g, f);
    }
}

/// Coarsening rebuilds every per-boundary quantity at the coarse indices:
/// the same values as computing them from the coarse boundary sets.
#[test]
fn coarsen_rebuilds_boundary_bytes() {
    let f = mlp_grad(21, 8, 16, false);
    let ch = build_chain(&f);
    for factor in [2, 3, 5] {
        let c = chain::coarsen(&ch, &f, factor);
        assert_eq!(c.len(), ch.len().div_ceil(factor));
        assert_eq!(c.bounds.len(), c.len() + 1);
        assert_eq!(c.bound_bytes.len(), c.len() + 1);
        assert_eq!(c.bound_needed_bytes.len(), c.len() + 1);
        for (j, b) in c.bounds.iter().enumerate() {
            let all: u64 = b.iter().map(|&v| f.ty(v).bytes()).sum();
            let needed: u64 = b.iter().filter(|v| ch.needed[v.index()]).map(|&v| f.ty(v).bytes()).sum();
            assert_eq!((c.bound_bytes[j], c.bound_needed_bytes[j]), (all, needed), "factor {factor}, boundary {j}");
        }
        // the plans over the coarse chain are still correct
        let p = plan::sqrt_cuts(&c);
        let em = apply(&f, &c, &Strategy::Chain(Plan::segments(&p)));
        check(&f, &em.func);
    }
}

/// A brute-force oracle for the DP: on small random chains, the least
/// recompute over every plan tree (store a range, store its first stage and
/// go on, or keep a boundary and split: all schedules of the DP's model,
/// enumerated without memo or interning) equals `Dp::total(m)` for every m,
/// and the plan `Dp::plan(m)` returns needs at most m units and costs exactly that.
#[test]
fn dp_matches_brute_force_on_small_chains() {
    fn brute(c: &Chain, a: usize, b: usize, m: u64) -> u64 {
        let f = |x: usize, y: usize| c.stages[x..y].iter().map(|s| s.flops).sum::<u64>();
        let store = |x: usize, y: usize| {
            c.stages[x..y].iter().map(|s| s.store_bytes).sum::<u64>() + (x + 1..y).map(|j| c.bound_needed_bytes[j]).sum::<u64>()
        };
        let mut best = if store(a, b) <= m { f(a, b) } else { u64::MAX };
        if b > a + 1 {
            let need = c.stages[a].store_bytes + c.bound_bytes[a + 1];
            if need <= m {
                let r = brute(c, a + 1, b, m - need);
                if r != u64::MAX {
                    best = best.min(f(a, a + 1) + r);
                }
            }
            for cut in a + 1..b {
                let bc = c.bound_bytes[cut];
                if bc > m {
                    continue;
                }
                let (r, l) = (brute(c, cut, b, m - bc), brute(c, a, cut, m - bc));
                if r != u64::MAX && l != u64::MAX {
                    best = best.min(f(a, cut) + r + l);
                }
            }
        }
        best
    }
    /// (memory, cost) of a plan tree over [a, b), computed from the tree alone.
    fn walk(c: &Chain, p: &Plan, a: usize, b: usize) -> (u64, u64) {
        let f = |x: usize, y: usize| c.stages[x..y].iter().map(|s| s.flops).sum::<u64>();
        match p {
            Plan::Store => (
                c.stages[a..b].iter().map(|s| s.store_bytes).sum::<u64>() + (a + 1..b).map(|j| c.bound_needed_bytes[j]).sum::<u64>(),
                f(a, b),
            ),
            Plan::StoreFirst { upto, rest } => {
                let held = c.stages[a..*upto].iter().map(|s| s.store_bytes).sum::<u64>()
                    + (a + 1..*upto).map(|j| c.bound_needed_bytes[j]).sum::<u64>()
                    + c.bound_bytes[*upto];
                let (m, k) = walk(c, rest, *upto, b);
                (held + m, f(a, *upto) + k)
            }
            Plan::Split { at, left, right } => {
                let (mr, kr) = walk(c, right, *at, b);
                let (ml, kl) = walk(c, left, a, *at);
                (c.bound_bytes[*at] + mr.max(ml), f(a, *at) + kr + kl)
            }
        }
    }
    let mut seed = 0x1234_5678u64;
    let mut rnd = |n: u64| {
        seed = ckopt_ir::random::mix64(seed);
        seed % n
    };
    for _ in 0..60 {
        let s = 2 + rnd(6) as usize;
        let mut c = build_chain(&mlp_grad(1, 1, 1, false));
        c.stages = (0..s)
            .map(|_| chain::Stage { flops: 1 + rnd(5), store_bytes: rnd(4), ..Default::default() })
            .collect();
        c.bound_bytes = (0..=s).map(|j| if j == 0 || j == s { 0 } else { 1 + rnd(3) }).collect();
        c.bound_needed_bytes = c.bound_bytes.iter().map(|&b| rnd(b + 1)).collect();
        let dp = plan::Dp::new(&c, 1, 24, u64::MAX).unwrap();
        for m in 0..=24u64 {
            let want = brute(&c, 0, s, m);
            assert_eq!(dp.total(m as usize), want, "chain {:?} m {m}", c.stages.iter().map(|x| (x.flops, x.store_bytes)).collect::<Vec<_>>());
            if want != u64::MAX {
                let p = dp.plan(m as usize).unwrap();
                let (mem, cost) = walk(&c, &p, 0, s);
                assert!(mem <= m, "plan needs {mem} > {m}");
                assert_eq!(cost, want);
            } else {
                assert!(dp.plan(m as usize).is_none());
            }
        }
    }
}

/// The curve: a Pareto front sorted by peak (recompute strictly falling),
/// ending at no remat, no measured plan dominating a point, and every point's
/// plan text reproducing its numbers through the pass pipeline.
#[test]
fn memory_curve_is_a_reproducible_pareto_front() {
    let f = mlp_grad(40, 8, 16, false);
    let c = curve::memory_curve(&f).unwrap();
    assert!(c.points.len() >= 4, "{:?}", c.points);
    assert_eq!(c.min_feasible_bytes, c.points[0].peak_bytes);
    let last = c.points.last().unwrap();
    assert_eq!((last.recompute_flops, last.plan.as_str()), (0, "remat{mode=none}"));
    for w in c.points.windows(2) {
        assert!(w[0].peak_bytes < w[1].peak_bytes && w[0].recompute_flops > w[1].recompute_flops, "{w:?}");
    }
    for p in &c.points {
        assert!(
            !c.measured.iter().any(|q| q.peak_bytes <= p.peak_bytes && q.recompute_flops < p.recompute_flops
                || q.peak_bytes < p.peak_bytes && q.recompute_flops <= p.recompute_flops),
            "{p:?} is dominated"
        );
        let mut m = Module { funcs: vec![f.clone()] };
        crate::PassManager::parse(&p.plan).unwrap().run(&mut m).unwrap();
        let r = memory_report(&m.funcs[0]);
        assert_eq!((r.temp_peak_bytes, r.recompute_flops), (p.peak_bytes, p.recompute_flops), "{}", p.plan);
        check(&f, &m.funcs[0]);
    }
    assert!(c.min_feasible_bytes * 4 < last.peak_bytes);
    let svg = curve::curves_svg(std::slice::from_ref(&c));
    for needle in ["temp peak (MiB)", "recompute (forward passes)", "optimal", "greedy", "Pareto front", "@mlp_grad"] {
        assert!(svg.contains(needle), "svg lacks {needle}");
    }
    let json: serde_json::Value = serde_json::from_str(&curve::curves_json(&[c])).unwrap();
    let keys: Vec<&str> = json[0].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys, ["function", "min_feasible_bytes", "points"]);
}

/// optimal with a large budget on a long chain, where the DP's unit (budget
/// / 512) outweighs a stage: the stages are merged before the table is
/// built, so a larger budget keeps buying less recompute instead of
/// stalling at the plan of a smaller one.
#[test]
fn optimal_keeps_improving_at_large_budgets_on_long_chains() {
    let f = mlp_grad(1000, 8, 16, false);
    let none = memory_report(&f).temp_peak_bytes;
    let mut last = u64::MAX;
    for frac in [60u64, 95] {
        let b = none * frac / 100;
        let (g, o) = run(&f, Mode::Optimal, Some(b));
        assert!(o.temp_peak_after <= b);
        let r = memory_report(&g).recompute_flops;
        assert!(r < last, "budget {frac}% of no remat: recompute {r} not below {last}");
        last = r;
    }
    // at 95% of no remat's peak, under a quarter of a forward pass (it
    // stalled at about half of one, the plan of the 60% budget, before
    // the stages were merged)
    assert!(last * 4 < memory_report(&f).forward_flops, "recompute {last}");
}

/// Plan texts carry sizes a person reads: three significant digits, rounded
/// up, and the bytes are what the text parses to.
#[test]
fn round_size_reads_well_and_never_rounds_down() {
    assert_eq!(super::round_size(700), ("700".to_string(), 700));
    assert_eq!(super::round_size(23458592).0, "22.4MiB");
    assert_eq!(super::round_size(1 << 20), ("1.00MiB".to_string(), 1 << 20));
    assert_eq!(super::round_size(748_544).0, "731KiB");
    for b in [1u64, 1023, 1024, 1025, 99_999, 1 << 30, 3_000_000_000, 12_345_678] {
        let (t, v) = super::round_size(b);
        assert!(v >= b, "{b}: {t} = {v}");
        assert_eq!(crate::manager::parse_bytes(&t).unwrap(), v);
        assert!(v - b <= b / 100 + 1, "{b}: {t} = {v} rounds too far");
    }
}

/// A new remat mode is declared in two places the compiler cannot connect:
/// `Mode` (with `Mode::ALL`) and the registry's `mode` choices. They agree.
#[test]
fn registry_mode_choices_are_the_modes() {
    let info = crate::registry().iter().find(|p| p.name == "remat").expect("remat is registered");
    let crate::registry::OptionKind::Choice(words) = info.option("mode").expect("mode option").kind else {
        panic!("remat's mode is not a choice")
    };
    let names: Vec<&str> = super::Mode::ALL.iter().map(|m| m.name()).collect();
    assert_eq!(words, names.as_slice());
    for m in super::Mode::ALL {
        assert_eq!(super::Mode::parse(m.name()), Some(m));
    }
}
