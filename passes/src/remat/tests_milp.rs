//! The MILP planner ([`super::milp`]) against brute force over every
//! keep/recompute assignment, on random DAGs of the testgen generator.

use super::families::*;
use super::*;

fn try_run(f: &Func, o: &RematOptions) -> Result<(Func, RematOutcome), String> {
    let mut g = f.clone();
    match remat_func(&mut g, o) {
        Ok(Some(out)) => Ok((g, out)),
        Ok(None) => Err("nothing to do".into()),
        Err(d) => Err(d.message),
    }
}

fn smallest_named(msg: &str) -> u64 {
    let tail = msg.rsplit(if msg.ends_with(" bytes)") { '(' } else { ' ' }).nth(if msg.ends_with(" bytes)") { 0 } else { 1 }).unwrap_or("");
    tail.split(' ').next().and_then(|n| n.parse().ok()).unwrap_or_else(|| panic!("no byte count in: {msg}"))
}

/// Every keep/recompute assignment of the candidates, both ways: (peak, recompute).
fn brute_force(f: &Func, ch: &chain::Chain) -> Vec<(u64, u64)> {
    let cand = dag::candidates(f, ch);
    let nv = f.values.len();
    let mut all = Vec::new();
    for mask in 0u32..(1 << cand.len()) {
        let mut k = vec![false; nv];
        for (i, v) in cand.iter().enumerate() {
            k[v.index()] = mask >> i & 1 == 1;
        }
        all.push(dag::measure(f, ch, &emit::Strategy::Keep(k.clone())));
        all.push(dag::measure(f, ch, &emit::Strategy::KeepShared(k)));
    }
    all
}

/// Gradient functions of random testgen DAGs whose forward is not a chain,
/// with `lo..=hi` candidate values.
fn random_dags(seeds: std::ops::Range<u64>, max_ops: usize, lo: usize, hi: usize) -> Vec<(u64, Func)> {
    let cfg = ckopt_ir::testgen::GenConfig { max_ops, annotate: true, ..Default::default() };
    let mut out = Vec::new();
    for seed in seeds {
        let mut m = ckopt_ir::testgen::gen_module(&cfg, seed * 7 + 3);
        if crate::PassManager::parse("autodiff,inplace").unwrap().run(&mut m).is_err() {
            continue;
        }
        let Some(f) = m.funcs.iter().find(|f| f.name.ends_with("_grad")).cloned() else { continue };
        let ch = chain::build_chain(&f);
        if !ch.has_backward || ch.is_empty() || dag::is_chain(&f, &ch) {
            continue;
        }
        let n = dag::candidates(&f, &ch).len();
        if (lo..=hi).contains(&n) {
            out.push((seed, f));
        }
    }
    out
}

/// On random DAGs with 2 to 10 values in play: at budgets across the range
/// brute force reaches, the MILP search ends `optimal` with exactly the
/// least recompute among the assignments within the budget (its plan
/// measured within it); below the smallest peak it ends `infeasible`; its
/// least-peak search finds exactly brute force's smallest peak. Through the
/// pass (`optimal`, where the MILP runs beyond 8 values in play), the plan
/// fits and recomputes no more than brute force's least, and the smallest
/// feasible budget it names is no more than brute force's.
#[test]
fn milp_matches_brute_force_on_random_dags() {
    let graphs = random_dags(0..120, 28, 2, 10);
    let (mut checked, mut budgets, mut big) = (0, 0, 0);
    for (seed, f) in &graphs {
        let ch = chain::build_chain(f);
        let all = brute_force(f, &ch);
        let lowest = all.iter().map(|x| x.0).min().unwrap();
        let mp = milp::min_peak(f, &ch, 30.0).expect("applies");
        assert_eq!(mp.report.status, milp::Status::Optimal, "seed {seed}: {:?}", mp.report);
        assert_eq!(mp.best.as_ref().map(|b| b.peak), Some(lowest), "seed {seed}: least peak");
        if lowest > 1 {
            let o = milp::least_recompute(f, &ch, lowest - 1, None, 30.0).expect("applies");
            assert_eq!(o.report.status, milp::Status::Infeasible, "seed {seed}");
            assert!(o.best.is_none());
        }
        let mut peaks: Vec<u64> = all.iter().map(|x| x.0).collect();
        peaks.sort_unstable();
        peaks.dedup();
        let n = dag::candidates(f, &ch).len();
        for &b in peaks.iter().step_by((peaks.len() / 4).max(1)) {
            let least = all.iter().filter(|x| x.0 <= b).map(|x| x.1).min().unwrap();
            let o = milp::least_recompute(f, &ch, b, None, 30.0).expect("applies");
            assert_eq!(o.report.status, milp::Status::Optimal, "seed {seed} budget {b}: {:?}", o.report);
            assert_eq!(o.report.gap, 0.0);
            let best = o.best.expect("a plan fits");
            assert!(best.peak <= b, "seed {seed} budget {b}");
            assert_eq!(best.rflops, least, "seed {seed} budget {b}: MILP vs brute force ({n} values, {:?})", o.report);
            let (mp2, r2) = dag::measure(f, &ch, &best.strategy);
            assert_eq!((mp2, r2), (best.peak, best.rflops), "seed {seed}: the plan re-measures the same");
            if n > dag::EXHAUSTIVE_MAX {
                let opts = RematOptions { mode: Mode::Optimal, budget: Some(b), ..Default::default() };
                let (_, out) = try_run(f, &opts).unwrap_or_else(|e| panic!("seed {seed} budget {b}: {e}"));
                assert!(out.temp_peak_after <= b && out.recompute_flops <= least, "seed {seed} budget {b}: {out:?} vs {least}");
                // (With the default 10 s the pass's search may stop at the
                // time limit on a loaded machine; its plan still fits and
                // recomputes no more than brute force's least, asserted above.)
                let rep = out.milp.as_ref().expect("the MILP ran");
                assert!(rep.status != milp::Status::Infeasible, "seed {seed}: {rep:?}");
                big += 1;
            }
            budgets += 1;
        }
        if n > dag::EXHAUSTIVE_MAX && lowest > 1 {
            let opts = RematOptions { mode: Mode::Optimal, budget: Some(lowest - 1), ..Default::default() };
            if let Err(e) = try_run(f, &opts) {
                assert!(smallest_named(&e) <= lowest, "seed {seed}: {e}, brute force reaches {lowest}");
            }
        }
        checked += 1;
    }
    assert!(checked >= 20 && budgets >= 60 && big >= 5, "only {checked} graphs, {budgets} budgets, {big} through the pass beyond 8 values");
}

/// The wide-branch family (ten branches off one input) has more values in
/// play than brute force takes: the MILP proves its plan optimal, within
/// the budget, and reports so in the pass's statistics; a budget too small
/// for any keep set ends `infeasible` and the pass falls back to the other
/// planners.
#[test]
fn milp_plans_wide_branches_and_reports_its_status() {
    let f = grad_of(&wide_branches(4, 3, 64, 64, false));
    let ch = chain::build_chain(&f);
    assert!(milp::applies(&f, &ch), "{} values in play", dag::candidates(&f, &ch).len());
    let mp = milp::min_peak(&f, &ch, 30.0).expect("applies").best.expect("a plan");
    let none = crate::analysis::peak(&f, &crate::analysis::liveness(&f), false);
    let b = mp.peak + (none - mp.peak) / 3;
    let o = milp::least_recompute(&f, &ch, b, None, 30.0).expect("applies");
    assert_eq!(o.report.status, milp::Status::Optimal, "{:?}", o.report);
    let best = o.best.expect("fits");
    assert!(best.peak <= b && best.rflops > 0);
    let opts = RematOptions { mode: Mode::Optimal, budget: Some(b), ..Default::default() };
    let (g, out) = try_run(&f, &opts).unwrap();
    assert!(out.temp_peak_after <= b && out.recompute_flops <= best.rflops, "{out:?}");
    assert_eq!(out.milp.as_ref().map(|m| m.status), Some(milp::Status::Optimal));
    ckopt_ir::verify_module(&Module { funcs: vec![g.clone()] }).unwrap();
    assert_eq!(super::tests::result_exprs(&f), super::tests::result_exprs(&g));
    let o = milp::least_recompute(&f, &ch, mp.peak - 1, None, 30.0).expect("applies");
    assert_eq!(o.report.status, milp::Status::Infeasible);
    // Through the pass manager: the statistics name the status.
    let mut m = Module { funcs: vec![f.clone()] };
    let mut stats = crate::manager::Statistics::default();
    RematPass { opts }.run(&mut m, &mut stats).unwrap();
    let text = format!("{stats:?}");
    assert!(text.contains("milp-status") && text.contains("optimal"), "{text}");
}

/// A time limit too short for any solve ends the search at `time-limit`
/// with gap 1 and no plan; the pass still plans (the other planners).
#[test]
fn milp_time_limit_is_reported() {
    let f = grad_of(&wide_branches(4, 3, 64, 64, false));
    let ch = chain::build_chain(&f);
    let o = milp::least_recompute(&f, &ch, u64::MAX / 2, None, 1e-9).expect("applies");
    assert_eq!(o.report.status, milp::Status::TimeLimit);
    assert!(o.best.is_none() && o.report.gap == 1.0);
    let none = crate::analysis::peak(&f, &crate::analysis::liveness(&f), false);
    let opts = RematOptions { mode: Mode::Optimal, budget: Some(none * 3 / 4), time_limit: 1e-9, ..Default::default() };
    let (_, out) = try_run(&f, &opts).unwrap();
    assert!(out.temp_peak_after <= none * 3 / 4);
    assert_eq!(out.milp.as_ref().map(|m| m.status), Some(milp::Status::TimeLimit));
}
