//! `remat`: rematerialization (gradient checkpointing) under a memory budget.
//!
//! What: in a gradient function (the forward ops the loss depends on, then
//! the backward), chooses which forward values the backward reads are kept
//! and which are dropped and recomputed right before their backward use
//! (Chen et al. 2016, §4). The recomputed ops are clones marked
//! `ck.recompute`; see `remat/emit.rs` for the rewrite and `remat/chain.rs`
//! for how the forward (chain or DAG) is cut into stages.
//!
//! Modes (`remat{mode=... budget=BYTES search=true|false k=N}`):
//! - `none`: no change.
//! - `sqrt`: about sqrt(n) segments, each kept boundary followed by one
//!   segment recomputed at a time (paper §4.1): O(sqrt n) memory for one extra
//!   forward.
//! - `greedy`: the paper's Algorithm 2 with threshold B. `search=true` (the
//!   default) runs its budget search: B = 0 gives x (kept bytes) and y (largest
//!   segment), then B = sqrt(x·y) and the grid B·{1/4, 1/2, 1/√2, 1, √2, 2, 4},
//!   plus the "mirror" plan that only recomputes cheap ops (matmul/conv
//!   outputs kept) and no remat at all; each plan is measured by the real
//!   liveness analysis (after in-place). Without a budget the plan with the
//!   lowest temp_peak_bytes wins; with `budget=` the plan with the least
//!   recompute flops among those within the budget (so matmul and conv are
//!   recomputed only when the budget needs it). `search=false`: one run with
//!   B = budget (or sqrt(x·y)).
//! - `log`: the recursive plan (§4.3): k kept boundaries per level (k=1 by
//!   default), O(log n) memory for O(n log n) recompute.
//! - `optimal`: least recompute flops within `budget=` (required): exact
//!   dynamic programming on the chain of stages (Revolve/Rotor style,
//!   multi-level recomputation, heterogeneous sizes and costs), a best effort
//!   on DAGs (the chain is the DAG cut at its narrow points); long chains are
//!   coarsened until the table fits.
//!
//! With `budget=` every mode checks temp_peak_bytes <= budget after the
//! rewrite and fails with an error at the function that names the smallest
//! feasible budget it found. `ck.mirror` values are never kept (recomputed at
//! their use), `ck.checkpoint` values always kept. Invariants out: results
//! bit-identical to the input function; legal in-place marks only.

pub mod chain;
pub mod emit;
pub mod plan;

use crate::manager::{Pass, PassOptions, Statistics};
use ckopt_ir::{Diag, Diags, Func, Module};
use chain::{Chain, Stage, build_chain};
use emit::{Emitted, Strategy, apply};
use plan::{Dp, Plan, greedy_cuts, log_plan, sqrt_cuts};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    None,
    Sqrt,
    Greedy,
    Log,
    Optimal,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "none" => Mode::None,
            "sqrt" => Mode::Sqrt,
            "greedy" => Mode::Greedy,
            "log" => Mode::Log,
            "optimal" => Mode::Optimal,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Sqrt => "sqrt",
            Mode::Greedy => "greedy",
            Mode::Log => "log",
            Mode::Optimal => "optimal",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct RematOptions {
    pub mode: Mode,
    pub budget: Option<u64>,
    pub search: bool,
    pub k: usize,
}

impl Default for RematOptions {
    fn default() -> Self {
        parse_options(&PassOptions::new("remat")).expect("the registry's defaults of remat parse")
    }
}

/// What remat did to one function.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RematOutcome {
    pub stages: usize,
    pub temp_peak_before: u64,
    pub temp_peak_after: u64,
    pub recompute_flops: u64,
    pub recomputed_ops: usize,
    pub on_demand: usize,
    pub inplace_stripped: usize,
    pub inplace_added: usize,
    pub plans_tried: usize,
    pub plan: String,
}

/// `N bytes` as MiB with two decimals.
pub fn mib(b: u64) -> String {
    format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
}

/// A byte count for messages: `192 B`, `3.50 KiB (3584 bytes)`, `64.00 MiB (67108864 bytes)`.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (u, m) in UNITS {
        if b >= m {
            return format!("{:.2} {u} ({b} bytes)", b as f64 / m as f64);
        }
    }
    format!("{b} B")
}

struct Candidate {
    em: Emitted,
    peak: u64,
    rflops: u64,
    label: String,
}

fn eval(f: &Func, ch: &Chain, strat: &Strategy, label: String) -> Candidate {
    let em = apply(f, ch, strat);
    let peak = em.temp_peak();
    let rflops = em.recompute_flops();
    Candidate { em, peak, rflops, label }
}

/// Keeps the outputs of matmul/conv and every needed value whose
/// recomputation would involve one; drops the rest (cheap ops: activations,
/// broadcasts, elementwise) for on-demand recomputation. The paper's mirror.
pub fn mirror_keep(f: &Func, ch: &Chain) -> Vec<bool> {
    const LIMIT: usize = 16;
    let nv = f.values.len();
    let mut keep = vec![false; nv];
    for v in 0..nv {
        if !ch.needed[v] || ch.forced[v] || ch.mirror[v] {
            continue;
        }
        let Some(d) = ch.def[v] else { continue };
        if f.body[d].kind.is_compute_heavy() {
            keep[v] = true;
            continue;
        }
        let mut heavy = Vec::new();
        let mut stack = vec![d];
        let mut seen = 0usize;
        let mut ok = true;
        while let Some(i) = stack.pop() {
            seen += 1;
            if seen > LIMIT {
                ok = false;
                break;
            }
            for &u in &f.body[i].operands {
                let Some(du) = ch.def[u.index()] else { continue };
                if !ch.fwd_val[u.index()] || ch.forced[u.index()] {
                    continue;
                }
                if f.body[du].kind.is_compute_heavy() {
                    heavy.push(u);
                } else {
                    stack.push(du);
                }
            }
        }
        if ok {
            for u in heavy {
                keep[u.index()] = true;
            }
        } else {
            keep[v] = true;
        }
    }
    keep
}

/// Merges groups of `factor` consecutive stages (for the DP on long chains).
pub fn coarsen(ch: &Chain, f: &Func, factor: usize) -> Chain {
    let factor = factor.max(1);
    let s = ch.len();
    let mut out = ch.clone();
    out.stages.clear();
    out.bounds = vec![Vec::new()];
    out.insert_at.clear();
    let mut j = 0;
    while j < s {
        let e = (j + factor).min(s);
        let mut st = Stage::default();
        for i in j..e {
            st.ops.extend_from_slice(&ch.stages[i].ops);
            st.flops = st.flops.saturating_add(ch.stages[i].flops);
            st.store.extend_from_slice(&ch.stages[i].store);
            if i + 1 < e {
                st.store.extend_from_slice(&ch.bounds[i + 1]);
            }
        }
        st.ops.sort_unstable();
        st.store_bytes = st.store.iter().map(|&v| f.ty(v).bytes()).fold(0, u64::saturating_add);
        out.stages.push(st);
        out.bounds.push(ch.bounds[e].clone());
        out.insert_at.push(ch.insert_at[e - 1]);
        j = e;
    }
    out.bound_bytes =
        out.bounds.iter().map(|b| b.iter().map(|&v| f.ty(v).bytes()).fold(0u64, u64::saturating_add)).collect();
    out
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// Plans for `optimal`: the DP table for the budget, probed at several
/// memory parameters (the DP ignores backward temporaries, so the largest
/// parameter whose measured peak fits is searched for).
fn optimal_candidates(f: &Func, ch: &Chain, budget: u64, out: &mut Vec<Candidate>) {
    const WORK: u64 = 300_000_000;
    const MAX_UNITS: u64 = 512;
    let mut chain = ch.clone();
    loop {
        let mut q = 0u64;
        for st in &chain.stages {
            q = gcd(q, st.store_bytes);
        }
        for &b in &chain.bound_bytes {
            q = gcd(q, b);
        }
        let q = if q == 0 { budget.max(1) } else { q };
        let q = q.max(budget.div_ceil(MAX_UNITS));
        let units = (budget / q.max(1)) as usize;
        if let Some(dp) = Dp::new(&chain, q, units, WORK) {
            // binary search for the largest m whose plan fits
            let (mut lo, mut hi) = (0usize, units);
            let mut probes = 0;
            while lo <= hi && probes < 12 {
                let mid = lo + (hi - lo) / 2;
                probes += 1;
                match dp.plan(mid) {
                    None => lo = mid + 1,
                    Some(p) => {
                        let c = eval(f, &chain, &Strategy::Chain(p), format!("optimal(m={mid}x{q}B)"));
                        let fits = c.peak <= budget;
                        out.push(c);
                        if fits {
                            lo = mid + 1;
                        } else if mid == 0 {
                            break;
                        } else {
                            hi = mid - 1;
                        }
                    }
                }
            }
            return;
        }
        if chain.len() <= 2 {
            return;
        }
        chain = coarsen(&chain, f, 2);
    }
}

fn pick(cands: &[Candidate], budget: Option<u64>) -> Option<usize> {
    let idx = (0..cands.len()).filter(|&i| budget.is_none_or(|b| cands[i].peak <= b));
    match budget {
        Some(_) => idx.min_by_key(|&i| (cands[i].rflops, cands[i].peak)),
        None => idx.min_by_key(|&i| (cands[i].peak, cands[i].rflops)),
    }
}

/// Runs remat on one function. Ok(None): nothing to do (no backward reads).
pub fn remat_func(f: &mut Func, opts: &RematOptions) -> Result<Option<RematOutcome>, Diag> {
    if opts.mode == Mode::None {
        return Ok(None);
    }
    if f.body.iter().any(|o| o.has_attr(ckopt_ir::ops::ATTR_RECOMPUTE)) {
        return Ok(None);
    }
    let ch = build_chain(f);
    if !ch.has_backward || ch.is_empty() {
        return Ok(None);
    }
    let before = crate::analysis::peak(f, &crate::analysis::liveness(f), false);
    let mut cands: Vec<Candidate> = Vec::new();
    match opts.mode {
        Mode::None => {}
        Mode::Sqrt => {
            let cuts = sqrt_cuts(&ch);
            cands.push(eval(f, &ch, &Strategy::Chain(Plan::segments(&cuts)), format!("sqrt({} segments)", cuts.len() + 1)));
        }
        Mode::Log => {
            let p = log_plan(&ch, opts.k.max(1), 1);
            cands.push(eval(f, &ch, &Strategy::Chain(p), format!("log(k={})", opts.k.max(1))));
        }
        Mode::Greedy => {
            let (cuts0, x, y) = greedy_cuts(&ch, 0);
            let bstar = ((x as f64) * (y as f64)).sqrt();
            if opts.search {
                cands.push(eval(f, &ch, &Strategy::Chain(Plan::Store), "none".into()));
                cands.push(eval(f, &ch, &Strategy::Keep(mirror_keep(f, &ch)), "mirror".into()));
                cands.push(eval(f, &ch, &Strategy::Chain(Plan::segments(&cuts0)), "greedy(B=0)".into()));
                for g in [0.25, 0.5, std::f64::consts::FRAC_1_SQRT_2, 1.0, std::f64::consts::SQRT_2, 2.0, 4.0] {
                    let b = (bstar * g) as u64;
                    let (cuts, _, _) = greedy_cuts(&ch, b);
                    cands.push(eval(f, &ch, &Strategy::Chain(Plan::segments(&cuts)), format!("greedy(B={})", mib(b))));
                }
            } else {
                let b = opts.budget.unwrap_or(bstar as u64);
                let (cuts, _, _) = greedy_cuts(&ch, b);
                cands.push(eval(f, &ch, &Strategy::Chain(Plan::segments(&cuts)), format!("greedy(B={})", mib(b))));
            }
        }
        Mode::Optimal => {
            let Some(budget) = opts.budget else {
                return Err(Diag::error(
                    f.loc.clone(),
                    format!("remat{{mode=optimal}} needs budget=BYTES (e.g. budget=48MiB) for @{}", f.name),
                ));
            };
            cands.push(eval(f, &ch, &Strategy::Chain(Plan::Store), "none".into()));
            cands.push(eval(f, &ch, &Strategy::Keep(mirror_keep(f, &ch)), "mirror".into()));
            optimal_candidates(f, &ch, budget, &mut cands);
            if !cands.iter().any(|c| c.peak <= budget) {
                // try the smallest plans we know to name a feasible budget
                cands.push(eval(f, &ch, &Strategy::Chain(log_plan(&ch, 1, 1)), "log(k=1)".into()));
                cands.push(eval(f, &ch, &Strategy::Chain(Plan::segments(&sqrt_cuts(&ch))), "sqrt".into()));
            }
        }
    }
    let tried = cands.len();
    let Some(best) = pick(&cands, opts.budget) else {
        let smallest = cands.iter().map(|c| c.peak).min().unwrap_or(before);
        let b = opts.budget.unwrap_or(0);
        return Err(Diag::error(
            f.loc.clone(),
            format!(
                "remat{{mode={}}}: budget {} is infeasible for @{}: the smallest feasible budget found is {}",
                opts.mode.name(),
                human_bytes(b),
                f.name,
                human_bytes(smallest)
            ),
        ));
    };
    let c = cands.swap_remove(best);
    let out = RematOutcome {
        stages: ch.len(),
        temp_peak_before: before,
        temp_peak_after: c.peak,
        recompute_flops: c.rflops,
        recomputed_ops: c.em.clones,
        on_demand: c.em.on_demand,
        inplace_stripped: c.em.inplace_stripped,
        inplace_added: c.em.inplace_added,
        plans_tried: tried,
        plan: c.label,
    };
    *f = c.em.func;
    Ok(Some(out))
}

/// The pass shell.
pub struct RematPass {
    pub opts: RematOptions,
}

impl Pass for RematPass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let mut diags = Diags::new();
        for f in &mut module.funcs {
            match remat_func(f, &self.opts) {
                Ok(Some(o)) => {
                    stats.add_func(&f.name, "plan", &o.plan);
                    stats.add_func(&f.name, "stages", o.stages);
                    stats.add_func(&f.name, "plans-measured", o.plans_tried);
                    stats.add_func(&f.name, "temp-peak-bytes-before", o.temp_peak_before);
                    stats.add_func(&f.name, "temp-peak-bytes-after", o.temp_peak_after);
                    stats.add_func(&f.name, "recomputed-ops", o.recomputed_ops);
                    stats.add_func(&f.name, "recompute-flops", o.recompute_flops);
                    stats.add_func(&f.name, "on-demand-recomputations", o.on_demand);
                    stats.add_func(&f.name, "inplace-marks-dropped", o.inplace_stripped);
                    stats.add_func(&f.name, "inplace-marks-added", o.inplace_added);
                }
                Ok(None) => {}
                Err(d) => diags.push(d),
            }
        }
        diags.into_result()
    }
}

/// Reads the options; defaults and value checks come from remat's record in the registry.
pub fn parse_options(o: &PassOptions) -> Result<RematOptions, String> {
    let mode = o.choice("mode")?;
    let mode = Mode::parse(mode).ok_or_else(|| format!("remat: mode '{mode}' has no plan"))?;
    Ok(RematOptions { mode, budget: o.bytes("budget")?, search: o.flag("search")?, k: o.int("k")? as usize })
}

pub fn build(o: &PassOptions) -> Result<Box<dyn Pass>, String> {
    Ok(Box::new(RematPass { opts: parse_options(o)? }))
}

#[cfg(test)]
mod tests;
