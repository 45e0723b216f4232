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
//!   multi-level recomputation, heterogeneous sizes and costs), plus the
//!   plans on the graph itself (`remat/dag.rs`: every keep/recompute
//!   assignment when at most 8 values are in play, else a descent over keep
//!   sets); long chains are coarsened until the table fits.
//!
//! With a limit, every mode measures every mode's plans (and the graph
//! plans) and takes the least recompute within it ([`plan_modes`]).
//!
//! With `budget=` every mode checks temp_peak_bytes <= budget after the
//! rewrite and fails with an error at the function that names the smallest
//! feasible budget it found. Without a limit, `min_gain` (a fraction of no
//! remat's peak, at least `align` bytes) is the least saving worth more
//! recompute ([`pick`]). `ck.mirror` values are never kept from the forward
//! (a mirror region is recomputed once, right before its first backward
//! read, and shared by the later reads), `ck.checkpoint` values always kept. Invariants out: results
//! bit-identical to the input function; legal in-place marks only.

pub mod chain;
pub mod curve;
pub mod dag;
pub mod emit;
pub mod milp;
pub mod plan;

use crate::manager::{OptionError, Pass, PassOptions, Statistics};
use ckopt_ir::{Diag, Diags, Func, Module};
use chain::{Chain, build_chain};
use emit::{Draft, Emitted, Strategy};
use std::rc::Rc;
use plan::{Plan, greedy_cuts, log_plan, mirror_keep, optimal_candidates, sqrt_cuts};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    None,
    Sqrt,
    Greedy,
    Log,
    Optimal,
}

impl Mode {
    /// Every mode (a test checks the registry's `mode` choices against it).
    pub const ALL: [Mode; 5] = [Mode::None, Mode::Sqrt, Mode::Greedy, Mode::Log, Mode::Optimal];
    pub fn parse(s: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == s)
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
    /// Limit on temp_peak_bytes.
    pub budget: Option<u64>,
    /// Limit on device_bytes: argument bytes + arena after memplan.
    pub device_budget: Option<u64>,
    /// The arena alignment `device_budget` is measured with (memplan's `align`).
    pub align: u64,
    pub search: bool,
    pub k: usize,
    /// greedy with `search=false`: the threshold B (default: `budget`, else sqrt(x·y)).
    pub threshold: Option<u64>,
    /// Without a limit: the least fraction of no remat's temp peak a plan
    /// must save (and at least `align` bytes) to be chosen over no remat.
    pub min_gain: f64,
    /// Only this function (without `@`); None: every function.
    pub func: Option<String>,
    /// Seconds the MILP planner ([`milp`]) may search, per function.
    pub time_limit: f64,
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
    /// device_bytes of the chosen plan, when `device_budget` was given.
    pub device_bytes: Option<u64>,
    /// What the MILP planner reported, when it ran.
    pub milp: Option<milp::Report>,
}

/// `N bytes` as MiB with two decimals.
pub fn mib(b: u64) -> String {
    format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
}

/// A size option's text with three significant digits in the largest unit
/// it reaches, rounded up (`22.4MiB`, `731KiB`, `700`), and the bytes that
/// text parses to (never fewer than `b`): plan texts a person reads, which
/// reproduce exactly, and a budget rounded this way stays feasible.
pub fn round_size(b: u64) -> (String, u64) {
    const UNITS: [(&str, u64); 3] = [("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    let text = UNITS
        .iter()
        .find(|(_, m)| b >= *m)
        .map(|&(u, m)| {
            let v = b as f64 / m as f64;
            let digits = if v >= 100.0 { 0 } else if v >= 10.0 { 1 } else { 2 };
            let scale = 10f64.powi(digits as i32);
            format!("{:.digits$}{u}", (v * scale).ceil() / scale)
        })
        .unwrap_or_else(|| b.to_string());
    let bytes = crate::manager::parse_bytes(&text).unwrap_or(b);
    (text, bytes)
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

/// One measured plan. `em` and `draft` both `None` is "no remat": the
/// function as given.
struct Candidate {
    /// The rewritten function, when it had to be built to be measured
    /// (a fused function, measured fused).
    em: Option<Emitted>,
    /// The rewrite, measured unbuilt ([`Draft`]), and the function it
    /// rewrites when that is not the given one (the wavefront schedule):
    /// only the plan picked is built.
    draft: Option<(Option<Rc<Func>>, Draft)>,
    peak: u64,
    rflops: u64,
    label: String,
    /// device_bytes, measured only when a device budget is given.
    device: Option<u64>,
    /// `em` was freed by [`prune`]: the plan can never be chosen.
    pruned: bool,
}

impl Candidate {
    /// Whether the plan rewrites the function (not "no remat" as given).
    fn rewrites(&self) -> bool {
        self.em.is_some() || self.draft.is_some()
    }
}

/// Frees the rewritten functions of the candidates [`pick`] can never
/// choose, whatever is measured later: B is dominated by A when A's peak
/// and recompute are no larger and A sorts first by (recompute, peak,
/// index). Then A fits every limit B fits, stays near the lowest peak
/// whenever B does, and wins against B. Only the statistics of a dominated
/// plan are kept (the error of an infeasible limit reads only those), so at
/// most the plans on the front hold a copy of the function. Not with a
/// device budget, which memplan measures on each plan's function.
fn prune(cands: &mut [Candidate], opts: &RematOptions) {
    if opts.device_budget.is_some() {
        return;
    }
    let key = |i: usize, c: &Candidate| (c.rflops, c.peak, i);
    for j in 0..cands.len() {
        if !cands[j].rewrites() {
            continue;
        }
        let b = &cands[j];
        let dominated = cands.iter().enumerate().any(|(i, a)| i != j && a.peak <= b.peak && a.rflops <= b.rflops && key(i, a) < key(j, b));
        if dominated {
            cands[j].em = None;
            cands[j].draft = None;
            cands[j].pruned = true;
        }
    }
}

/// Measures the plan `strat` over chain `ch` of `f`; `owner` holds `f`
/// when it is not the function remat was given (the wavefront schedule).
fn eval(f: &Func, owner: Option<&Rc<Func>>, ch: &Chain, strat: &Strategy, label: String) -> Candidate {
    let d = emit::draft(f, ch, strat);
    if d.fused {
        let em = d.build(f);
        let (peak, rflops) = (em.temp_peak(), em.recompute_flops());
        return Candidate { em: Some(em), draft: None, peak, rflops, label, device: None, pruned: false };
    }
    let peak = d.temp_peak(f);
    let rflops = d.recompute_flops(f);
    if cfg!(debug_assertions) {
        let em = d.build(f);
        assert_eq!((em.temp_peak(), em.recompute_flops()), (peak, rflops), "remat: plan {label} measured unbuilt and built");
    }
    Candidate { em: None, draft: Some((owner.cloned(), d)), peak, rflops, label, device: None, pruned: false }
}

/// device_bytes of `f` (docs/memory.md): its arguments plus the arena memplan
/// gives it at `align`.
pub fn device_bytes(f: &Func, align: u64) -> Result<u64, Diag> {
    let mut g = f.clone();
    let plan = crate::memplan::memplan_func(&mut g, align).map_err(|mut d| d.0.remove(0))?;
    Ok(crate::analysis::argument_bytes(f).saturating_add(plan.arena_bytes))
}

/// The limits a plan must meet, and without any, the least saving worth a
/// recompute.
struct Limits {
    budget: Option<u64>,
    device: Option<u64>,
    /// Without a limit: bytes of temp peak a plan must save against no remat.
    min_gain: u64,
}

/// The least saving worth a recompute without a limit: `min_gain` of no
/// remat's temp peak, rounded up, and at least one alignment unit.
pub fn min_gain_bytes(opts: &RematOptions, none_peak: u64) -> u64 {
    ((none_peak as f64 * opts.min_gain).ceil() as u64).max(opts.align)
}

impl Limits {
    fn any(&self) -> bool {
        self.budget.is_some() || self.device.is_some()
    }
    fn fits(&self, c: &Candidate) -> bool {
        self.budget.is_none_or(|b| c.peak <= b) && self.device.is_none_or(|d| c.device.is_some_and(|x| x <= d))
    }
}

/// The selection rule, the same for every mode: with a limit, the least
/// recompute among the plans within it (then the lower peak); without, the
/// least recompute (then the lower peak) among the plans whose peak is
/// less than `min_gain` bytes above the lowest peak found: a plan is not
/// worth more recompute than another for saving less than that. "No
/// remat" is always a candidate (index 0, the least recompute: zero, or
/// only the `ck.mirror` regions), so no plan that recomputes without
/// lowering the peak by at least `min_gain` (or without being needed for a
/// limit) is ever chosen. Ties: the earlier candidate.
fn pick(cands: &[Candidate], limits: &Limits) -> Option<usize> {
    let idx = (0..cands.len()).filter(|&i| limits.fits(&cands[i]));
    if limits.any() {
        idx.min_by_key(|&i| (cands[i].rflops, cands[i].peak, i))
    } else {
        let idx: Vec<usize> = idx.collect();
        let lowest = idx.iter().map(|&i| cands[i].peak).min()?;
        let near = lowest.saturating_add(limits.min_gain);
        idx.into_iter().filter(|&i| cands[i].peak < near).min_by_key(|&i| (cands[i].rflops, cands[i].peak, i))
    }
}

/// The greedy thresholds of the budget search: B = 0 and B* = sqrt(x·y)
/// (x, y from B = 0) times 2^(i/2), i = -6..=6. They depend on the chain
/// only, never on the budget, so a larger budget can only widen the set of
/// plans within it: swept over budgets, greedy's recompute never grows as
/// the budget grows.
pub fn greedy_thresholds(ch: &Chain) -> Vec<u64> {
    let (_, x, y) = greedy_cuts(ch, 0);
    let bstar = ((x as f64) * (y as f64)).sqrt();
    let mut out = vec![0u64];
    for i in -6i32..=6 {
        let (_, b) = round_size((bstar * 2f64.powf(i as f64 / 2.0)) as u64);
        if !out.contains(&b) {
            out.push(b);
        }
    }
    out
}

/// The plans of one mode (after "no remat", which the caller adds).
///
/// `plain_thresholds`: the greedy search also tries the thresholds of the
/// function's plain chain on this chain (the fine and wavefront chains have
/// thresholds of their own), so that every `greedy search=false
/// threshold=T` plan the memory curve shows is among the search's
/// candidates. Thresholds that give the same cuts are measured once.
fn mode_candidates(f: &Func, owner: Option<&Rc<Func>>, ch: &Chain, opts: &RematOptions, temp_budget: Option<u64>, plain_thresholds: &[u64], out: &mut Vec<Candidate>) {
    match opts.mode {
        Mode::None => {}
        Mode::Sqrt => {
            let cuts = sqrt_cuts(ch);
            out.push(eval(f, owner, ch, &Strategy::Chain(Plan::segments(&cuts)), format!("sqrt({} segments)", cuts.len() + 1)));
        }
        Mode::Log => {
            let p = log_plan(ch, opts.k.max(1), 1);
            out.push(eval(f, owner, ch, &Strategy::Chain(p), format!("log(k={})", opts.k.max(1))));
        }
        Mode::Greedy => {
            if opts.search {
                out.push(eval(f, owner, ch, &Strategy::Keep(mirror_keep(f, ch)), "mirror".into()));
                let mut seen: Vec<Vec<usize>> = Vec::new();
                for b in greedy_thresholds(ch).into_iter().chain(plain_thresholds.iter().copied()) {
                    let (cuts, _, _) = greedy_cuts(ch, b);
                    if seen.contains(&cuts) {
                        continue;
                    }
                    out.push(eval(f, owner, ch, &Strategy::Chain(Plan::segments(&cuts)), format!("greedy(B={})", mib(b))));
                    prune(out, opts);
                    seen.push(cuts);
                }

            } else {
                let (_, x, y) = greedy_cuts(ch, 0);
                let b = opts.threshold.or(opts.budget).unwrap_or(((x as f64) * (y as f64)).sqrt() as u64);
                let (cuts, _, _) = greedy_cuts(ch, b);
                out.push(eval(f, owner, ch, &Strategy::Chain(Plan::segments(&cuts)), format!("greedy(B={})", mib(b))));
            }
        }
        Mode::Optimal => {
            out.push(eval(f, owner, ch, &Strategy::Keep(mirror_keep(f, ch)), "mirror".into()));
            if let Some(b) = temp_budget {
                optimal_candidates(f, ch, b, &mut |c, p, label| {
                    let c = eval(f, owner, c, &Strategy::Chain(p), label);
                    let peak = c.peak;
                    out.push(c);
                    peak
                });

            }
        }
    }
}

/// Plans found on the graph itself ([`dag`]), measured and added.
fn push_found(f: &Func, ch: &Chain, found: Vec<dag::Found>, out: &mut Vec<Candidate>) {
    for x in found {
        out.push(eval(f, None, ch, &x.strategy, x.label));
    }
}

/// [`mode_candidates`] over another chain (or schedule) of the function,
/// their labels prefixed with which one.
#[allow(clippy::too_many_arguments)]
fn labelled_candidates(
    f: &Func,
    owner: Option<&Rc<Func>>,
    ch: &Chain,
    opts: &RematOptions,
    temp_budget: Option<u64>,
    plain_thresholds: &[u64],
    prefix: &str,
    out: &mut Vec<Candidate>,
) {
    let n = out.len();
    mode_candidates(f, owner, ch, opts, temp_budget, plain_thresholds, out);
    for c in &mut out[n..] {
        c.label = format!("{prefix} {}", c.label);
    }
}

/// The smallest plans known (log with k=1, sqrt), over the same chains as
/// every other plan ([`all_candidates`]), tried when no plan meets the
/// limits so that the error can name the smallest feasible amount (the
/// memory curve's smallest point, where its smallest plan is one of these).
fn smallest_candidates(f: &Func, ch: &Chain, opts: &RematOptions, out: &mut Vec<Candidate>) {
    for mode in [Mode::Log, Mode::Sqrt] {
        all_candidates(f, ch, &RematOptions { mode, k: 1, ..opts.clone() }, None, out);
    }
    match dag::exhaustive(f, ch) {
        Some(front) => push_found(f, ch, front, out),
        None if !dag::is_chain(f, ch) && dag::applies(f, &dag::candidates(f, ch)) => {
            push_found(f, ch, vec![dag::branchwise(f, ch)], out);
            push_found(f, ch, dag::descent(f, ch, None), out);
            if milp::applies(f, ch)
                && let Some(o) = milp::min_peak(f, ch, opts.time_limit)
            {
                push_found(f, ch, o.best.into_iter().collect(), out);
            }
        }
        None => {}
    }
}

fn measure_device(f: &Func, fused: bool, cands: &mut [Candidate], align: u64) -> Result<(), Diag> {
    for c in cands.iter_mut().filter(|c| c.device.is_none()) {
        c.device = Some(match (&c.em, &c.draft) {
            (Some(e), _) => device_bytes(&e.measured(), align)?,
            (None, Some((owner, d))) => device_bytes(&d.build(owner.as_deref().unwrap_or(f)).measured(), align)?,
            (None, None) => device_bytes(&emit::measured(f, fused), align)?,
        });
    }
    Ok(())
}

/// Runs remat on one function. Ok(None): nothing to do (mode none, no
/// backward reads, or already rematerialized).
///
/// Phases: refuse a device budget below the arguments; the "no remat"
/// candidate; aim `optimal` at a device budget; the mode's plans over the
/// chain, the fine chain and the wavefront schedule; re-aim `optimal` where
/// the device budget was missed; the smallest plans when nothing fits (for
/// the error); pick by the one selection rule ([`pick`]) and apply.
///
/// A fused function (`ck.fusion` marks, from `fuse`) is planned unfused
/// and fused again afterwards, and every plan, no remat included, is
/// measured fused: the peaks compared are the ones memplan and the memory
/// report will see (fused values are never stored; a recomputed group's
/// clones are fused again and cost its ops' flops).
pub fn remat_func(f: &mut Func, opts: &RematOptions) -> Result<Option<RematOutcome>, Diag> {
    if opts.mode == Mode::None {
        return Ok(None);
    }
    let fused = ckopt_ir::fusion::strip_fusion(f);
    let r = plan_func(f, opts, fused);
    if fused {
        crate::fuse::fuse_func(f);
    }
    r
}

fn plan_func(f: &mut Func, opts: &RematOptions, fused: bool) -> Result<Option<RematOutcome>, Diag> {
    if f.body.iter().any(|o| o.has_attr(ckopt_ir::ops::ATTR_RECOMPUTE)) {
        return Ok(None);
    }
    let mut ch = build_chain(f);
    ch.fused = fused;
    if !ch.has_backward || ch.is_empty() {
        return Ok(None);
    }
    let args = crate::analysis::argument_bytes(f);
    check_device_floor(f, opts, args)?;
    let before = emit::measured_peak(f, fused);
    let mut cands = vec![no_remat(f, &ch, before)];
    let limits = Limits { budget: opts.budget, device: opts.device_budget, min_gain: min_gain_bytes(opts, cands[0].peak) };
    let temp_budget = aim_temp_budget(f, fused, opts, before, &mut cands)?;
    for o in plan_modes(opts, limits.any()) {
        all_candidates(f, &ch, &o, temp_budget, &mut cands);
    }
    let milp_report = graph_candidates(f, &ch, opts, limits.any(), temp_budget, &mut cands);
    prune(&mut cands, opts);
    if opts.device_budget.is_some() {
        measure_device(f, fused, &mut cands, opts.align)?;
        reaim_optimal(f, &ch, opts, &limits, temp_budget, &mut cands)?;
    }
    if limits.any() && !cands.iter().any(|c| limits.fits(c)) {
        smallest_candidates(f, &ch, opts, &mut cands);
        prune(&mut cands, opts);
        if opts.device_budget.is_some() {
            measure_device(f, fused, &mut cands, opts.align)?;
        }
    }
    let tried = cands.len();
    let Some(best) = pick(&cands, &limits) else {
        return Err(infeasible(f, opts, &cands, args));
    };
    let mut out = adopt(f, cands.swap_remove(best), ch.len(), before, tried);
    out.milp = milp_report;
    Ok(Some(out))
}

/// The plans found on the graph itself ([`dag`]), for `greedy` and
/// `optimal` and for every mode under a limit: the exhaustive front of
/// keep/recompute assignments when the graph is small enough, else the
/// greedy descent aimed at the temp budget, and without a limit (then as
/// low as it goes) only when the forward is not a chain (on a chain the
/// chain planners see every choice of cuts already).
///
/// With a temp budget, when the forward is not a chain and has more
/// candidates than the exhaustive enumeration takes but at most
/// [`milp::MILP_MAX`], the MILP planner's plan too (its report returned).
fn graph_candidates(f: &Func, ch: &Chain, opts: &RematOptions, limited: bool, temp_budget: Option<u64>, cands: &mut Vec<Candidate>) -> Option<milp::Report> {
    let exhaustive = limited || opts.mode == Mode::Optimal;
    if !(limited || matches!(opts.mode, Mode::Greedy | Mode::Optimal)) || (opts.mode == Mode::Greedy && !opts.search && !limited) {
        return None;
    }
    match dag::exhaustive(f, ch).filter(|_| exhaustive) {
        Some(front) => push_found(f, ch, front, cands),
        None if (limited || !dag::is_chain(f, ch)) && dag::applies(f, &dag::candidates(f, ch)) => {
            push_found(f, ch, vec![dag::branchwise(f, ch)], cands);
            push_found(f, ch, dag::descent(f, ch, temp_budget), cands);
            // The least recompute already known within the budget bounds
            // the search (only without a device budget, which the known
            // plan may miss).
            let known = temp_budget
                .filter(|_| opts.device_budget.is_none())
                .and_then(|b| cands.iter().filter(|c| c.peak <= b).map(|c| c.rflops).min());
            if let Some(b) = temp_budget
                && milp::applies(f, ch)
                && let Some(out) = milp::least_recompute(f, ch, b, known, opts.time_limit)
            {
                push_found(f, ch, out.best.into_iter().collect(), cands);
                return Some(out.report);
            }
        }
        None => {}
    }
    None
}

/// The modes whose plans are measured. Without a limit, the mode's own.
/// With one, every mode's (the given mode's options first, the others
/// with their defaults and greedy's search): within a budget every mode
/// spends it the same way, the least recompute among all the plans ckopt
/// can make that fit, so no mode's choice recomputes more than a plan of
/// another mode that fits the same budget.
fn plan_modes(opts: &RematOptions, limited: bool) -> Vec<RematOptions> {
    let mut out = vec![opts.clone()];
    if limited {
        for mode in [Mode::Sqrt, Mode::Greedy, Mode::Log, Mode::Optimal] {
            if mode != opts.mode {
                out.push(RematOptions { mode, search: true, k: 1, threshold: None, ..opts.clone() });
            }
        }
    }
    out
}

/// A device budget below the arguments alone is an option error.
fn check_device_floor(f: &Func, opts: &RematOptions, args: u64) -> Result<(), Diag> {
    match opts.device_budget {
        Some(d) if d < args => Err(Diag::error(
            f.loc.clone(),
            format!(
                "option 'device_budget' of pass 'remat': {} is below the arguments of @{} alone ({})",
                human_bytes(d),
                f.name,
                human_bytes(args)
            ),
        )),
        _ => Ok(()),
    }
}

/// "No remat": the function as given, or, when `ck.mirror` values must be
/// recomputed anyway, every other needed value kept (Plan::Store).
fn no_remat(f: &Func, ch: &Chain, before: u64) -> Candidate {
    let has_mirror = (0..f.values.len()).any(|v| ch.mirror[v] && ch.needed[v]);
    if has_mirror {
        eval(f, None, ch, &Strategy::Chain(Plan::Store), "none".into())
    } else {
        Candidate { em: None, draft: None, peak: before, rflops: 0, label: "none".into(), device: None, pruned: false }
    }
}

/// The temp-peak budget the plans aim at: `budget=`, or for `optimal` with
/// only `device_budget=`, the device budget less what the device holds
/// beyond the temp peak (arguments, results, alignment), which is about
/// the same for every plan.
fn aim_temp_budget(f: &Func, fused: bool, opts: &RematOptions, before: u64, cands: &mut [Candidate]) -> Result<Option<u64>, Diag> {
    if opts.budget.is_some() || (opts.mode != Mode::Optimal && opts.device_budget.is_none()) {
        return Ok(opts.budget);
    }
    let Some(d) = opts.device_budget else {
        return Err(Diag::error(
            f.loc.clone(),
            format!("remat{{mode=optimal}} needs budget=BYTES or device_budget=BYTES (e.g. budget=48MiB) for @{}", f.name),
        ));
    };
    measure_device(f, fused, cands, opts.align)?;
    let overhead = cands[0].device.unwrap_or(0).saturating_sub(before);
    Ok(Some(d.saturating_sub(overhead).max(1)))
}

/// The mode's plans over the chain of narrow cuts, over the chain cut at
/// every free position when that gives more stages (long skips: every
/// position crosses many values), and over the forward in wavefront order
/// when that differs from the given one.
fn all_candidates(f: &Func, ch: &Chain, opts: &RematOptions, temp_budget: Option<u64>, cands: &mut Vec<Candidate>) {
    mode_candidates(f, None, ch, opts, temp_budget, &[], cands);
    prune(cands, opts);
    let plain = if opts.mode == Mode::Greedy && opts.search { greedy_thresholds(ch) } else { Vec::new() };
    let mut fine = chain::build_chain_with(f, chain::CutRule::AllFree);
    fine.fused = ch.fused;
    if fine.len() > ch.len() {
        labelled_candidates(f, None, &fine, opts, temp_budget, &plain, "fine", cands);
        prune(cands, opts);
    }
    drop(fine);
    if let Some(g) = chain::wavefront(f) {
        let g = Rc::new(g);
        let mut wch = build_chain(&g);
        wch.fused = ch.fused;
        if wch.has_backward && !wch.is_empty() {
            labelled_candidates(&g, Some(&g), &wch, opts, temp_budget, &plain, "wavefront", cands);
            prune(cands, opts);
        }
    }
}

/// `optimal` with only a device budget: where no plan fit, aim the DP lower
/// by what the nearest plan missed, up to three times.
fn reaim_optimal(f: &Func, ch: &Chain, opts: &RematOptions, limits: &Limits, mut temp_budget: Option<u64>, cands: &mut Vec<Candidate>) -> Result<(), Diag> {
    if opts.budget.is_some() {
        return Ok(());
    }
    let d = opts.device_budget.unwrap_or(0);
    for _ in 0..3 {
        if cands.iter().any(|c| limits.fits(c)) {
            break;
        }
        let excess = cands.iter().filter_map(|c| c.device).min().unwrap_or(d).saturating_sub(d);
        let tb = temp_budget.unwrap_or(0).saturating_sub(excess.max(1)).max(1);
        temp_budget = Some(tb);
        let n = cands.len();
        optimal_candidates(f, ch, tb, &mut |c, p, label| {
            let c = eval(f, None, c, &Strategy::Chain(p), label);
            let peak = c.peak;
            cands.push(c);
            peak
        });
        measure_device(f, ch.fused, &mut cands[n..], opts.align)?;
    }
    Ok(())
}

/// Applies the chosen candidate to `f` and reports it.
fn adopt(f: &mut Func, c: Candidate, stages: usize, before: u64, tried: usize) -> RematOutcome {
    assert!(!c.pruned, "remat chose a plan prune() had ruled out");
    let mut out = RematOutcome {
        stages,
        temp_peak_before: before,
        temp_peak_after: c.peak,
        plans_tried: tried,
        plan: c.label,
        device_bytes: c.device,
        ..RematOutcome::default()
    };
    let em = match (c.em, c.draft) {
        (Some(em), _) => Some(em),
        (None, Some((owner, d))) => Some(d.build(owner.as_deref().unwrap_or(f))),
        (None, None) => None,
    };
    if let Some(em) = em {
        out.recompute_flops = c.rflops;
        out.recomputed_ops = em.clones;
        out.on_demand = em.on_demand;
        out.inplace_stripped = em.inplace_stripped;
        out.inplace_added = em.inplace_added;
        *f = em.func;
    }
    out
}

/// The error when no plan meets the limits: names the smallest feasible
/// amount found (for the limit that failed).
fn infeasible(f: &Func, opts: &RematOptions, cands: &[Candidate], args: u64) -> Diag {
    let mode = opts.mode.name();
    let fits_budget = |c: &&Candidate| opts.budget.is_none_or(|b| c.peak <= b);
    let msg = if let (Some(d), true) = (opts.device_budget, cands.iter().any(|c| fits_budget(&c))) {
        let smallest = cands.iter().filter(fits_budget).filter_map(|c| c.device).min().unwrap_or(0);
        format!(
            "remat{{mode={mode}}}: device budget {} is infeasible for @{}: the smallest feasible total found is {} (arguments {} + arena {})",
            human_bytes(d),
            f.name,
            human_bytes(smallest),
            human_bytes(args),
            human_bytes(smallest.saturating_sub(args))
        )
    } else {
        let smallest = cands.iter().map(|c| c.peak).min().unwrap_or(0);
        format!(
            "remat{{mode={mode}}}: budget {} is infeasible for @{}: the smallest feasible budget found is {}",
            human_bytes(opts.budget.unwrap_or(0)),
            f.name,
            human_bytes(smallest)
        )
    };
    Diag::error(f.loc.clone(), msg)
}

/// The pass shell.
pub struct RematPass {
    pub opts: RematOptions,
}

impl Pass for RematPass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let mut diags = Diags::new();
        if let Some(name) = &self.opts.func
            && module.func(name).is_none()
        {
            return Err(Diags::from(Diag::error(
                ckopt_ir::Loc::unknown(),
                format!("option 'func' of pass 'remat': no function @{name} in the module"),
            )));
        }
        for f in &mut module.funcs {
            if self.opts.func.as_ref().is_some_and(|n| *n != f.name) {
                continue;
            }
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
                    if let Some(d) = o.device_bytes {
                        stats.add_func(&f.name, "device-bytes", d);
                    }
                    if let Some(m) = &o.milp {
                        stats.add_func(&f.name, "milp-status", m.status.name());
                        stats.add_func(&f.name, "milp-gap", format!("{:.4}", m.gap));
                        stats.add_func(&f.name, "milp-solves", m.solves);
                        stats.add_func(&f.name, "milp-rejected", m.rejected);
                    }
                }
                Ok(None) => {}
                Err(d) => diags.push(d),
            }
        }
        diags.into_result()
    }
}

fn positive_bytes(o: &PassOptions, key: &str) -> Result<Option<u64>, OptionError> {
    match o.bytes(key)? {
        Some(0) => Err(OptionError::BadValue { pass: "remat".into(), key: key.into(), problem: "must be more than 0 bytes".into() }),
        v => Ok(v),
    }
}

/// Reads the options; defaults and value checks come from remat's record in the registry.
pub fn parse_options(o: &PassOptions) -> Result<RematOptions, OptionError> {
    let mode = o.choice("mode")?;
    let mode = Mode::parse(mode).ok_or_else(|| OptionError::Pass { pass: "remat".into(), message: format!("mode '{mode}' has no plan") })?;
    Ok(RematOptions {
        mode,
        budget: positive_bytes(o, "budget")?,
        device_budget: positive_bytes(o, "device_budget")?,
        align: o.int("align")?,
        search: o.flag("search")?,
        k: o.int("k")? as usize,
        threshold: o.bytes("threshold")?,
        min_gain: o.number("min_gain")?,
        func: o.func_name("func")?,
        time_limit: o.number("time_limit")?,
    })
}

pub fn build(o: &PassOptions) -> Result<Box<dyn Pass>, OptionError> {
    Ok(Box::new(RematPass { opts: parse_options(o)? }))
}

#[cfg(test)]
pub(crate) mod families;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_dag;
#[cfg(test)]
mod tests_milp;
#[cfg(test)]
mod tests_fused;
