//! An exact planner for general DAGs: a Checkmate-style mixed-integer
//! program (Jain et al. 2020) solved by HiGHS (the `highs` crate), with the
//! plans it proposes measured by the same rewrite and liveness analysis as
//! every other plan.
//!
//! Plan space: the keep sets of [`super::dag`] — each candidate value (a
//! forward value the backward reads, neither forced nor `ck.mirror`) is
//! kept from its definition to its last read, or freed after its last
//! forward read and recomputed in the backward ([`Strategy::Keep`]: at each
//! read; [`Strategy::KeepShared`]: once, shared). Checkmate's matrices
//! `S[t,i]` (value i held during stage t) and `R[t,i]` (op i recomputed in
//! stage t) collapse on this space: a value the backward reads is either
//! held across every stage up to its last read (`S = k_i`, one binary per
//! candidate) or recomputed, and an op no backward op reads is recomputed
//! when a dropped value needs it (`r_u`, one binary per such op). Stages
//! are the op positions of the function as given; positions whose
//! keep-everything footprint is within the budget are dropped (they cannot
//! bind) and positions with the same set of droppable values are merged,
//! so the program has one row per distinct binding stage.
//!
//! The program's numbers are lower bounds of the measured ones: recompute
//! flops >= each dropped value's op and each op it needs recomputed once;
//! live bytes at a stage >= the no-remat live bytes less the dropped
//! values not read there. So the program is a relaxation, and the loop is
//! exact over the plan space: solve, measure the proposed keep set both
//! ways, keep the least measured recompute within the budget (the
//! incumbent), exclude that keep set (a no-good cut) and solve again, until
//! the program's optimum is no better than the incumbent (status
//! `optimal`), it is infeasible (`infeasible` when nothing fits, else
//! `optimal`), or the time limit / solve count runs out (`time-limit`,
//! with the gap between the incumbent and the program's bound).
//! [`min_peak`] does the same for the least temp peak (the smallest
//! feasible budget).
//!
//! Size limits: at most [`MILP_MAX`] candidates and [`NODES_MAX`] recompute
//! ops in the program, at most [`MAX_SOLVES`] solves; functions of at most
//! [`super::dag::MAX_OPS`] ops. Complexity: each round is one HiGHS solve
//! plus two rewrites, O(ops) each.

use super::chain::Chain;
use super::dag::{Found, candidates};
use super::emit::{Strategy, measure};
use crate::analysis::{live_bytes_timeline, liveness, op_flops};
use ckopt_ir::{Func, ValueId};
use std::time::Instant;

/// Most candidate values the program decides about.
pub const MILP_MAX: usize = 48;
/// Most ops (not read by the backward) the program may recompute.
pub const NODES_MAX: usize = 400;
/// Most solves of one search.
pub const MAX_SOLVES: usize = 200;

/// How the search ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The best plan of the plan space is found (proved by the bound).
    Optimal,
    /// Time limit or solve count reached: the incumbent (if any) with a gap.
    TimeLimit,
    /// No keep set fits the budget.
    Infeasible,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Optimal => "optimal",
            Status::TimeLimit => "time-limit",
            Status::Infeasible => "infeasible",
        }
    }
}

/// What the search reports (the pass's `milp-*` statistics).
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub status: Status,
    /// (incumbent - lower bound) / incumbent; 0 when optimal, 1 without an incumbent.
    pub gap: f64,
    pub solves: usize,
    /// Columns and rows of the first program.
    pub cols: usize,
    pub rows: usize,
    /// Keep sets measured that did not fit (the relaxation's misses).
    pub rejected: usize,
}

/// The search's result: the best plan found (if any) and the report.
pub struct Outcome {
    pub best: Option<Found>,
    pub report: Report,
}

/// The program's data, independent of the budget.
struct Model {
    cand: Vec<ValueId>,
    /// Flops of each candidate's op.
    drop_cost: Vec<u64>,
    /// Recompute ops not read by the backward: flops, whether always
    /// recomputed (a mirror region's), the candidates and nodes whose
    /// recomputation needs them.
    node_cost: Vec<u64>,
    node_fixed: Vec<bool>,
    node_by_cand: Vec<Vec<usize>>,
    node_by_node: Vec<Vec<usize>>,
    /// Stages: no-remat live bytes and the droppable candidates (index,
    /// bytes) not live there when dropped.
    stages: Vec<(u64, Vec<(usize, u64)>)>,
}

fn build_model(f: &Func, ch: &Chain) -> Option<Model> {
    let cand = candidates(f, ch);
    if cand.is_empty() || cand.len() > MILP_MAX || f.body.len() > super::dag::MAX_OPS {
        return None;
    }
    let nv = f.values.len();
    let mut cidx = vec![usize::MAX; nv];
    for (i, v) in cand.iter().enumerate() {
        cidx[v.index()] = i;
    }
    let flops_of = |v: usize| ch.def[v].map_or(0, |d| op_flops(f, &f.body[d]));
    let drop_cost: Vec<u64> = cand.iter().map(|v| flops_of(v.index())).collect();
    // Nodes: forward op-defined values that are neither candidates nor
    // forced, reached from a candidate's or mirror value's operands.
    let is_node = |v: usize| ch.fwd_val[v] && ch.def[v].is_some() && !ch.forced[v] && cidx[v] == usize::MAX;
    let mut nidx = vec![usize::MAX; nv];
    let mut nodes: Vec<usize> = Vec::new();
    let mut stack: Vec<usize> = (0..nv).filter(|&v| cidx[v] != usize::MAX || (ch.mirror[v] && ch.needed[v] && is_node(v))).collect();
    let mut seen = vec![false; nv];
    while let Some(v) = stack.pop() {
        if seen[v] {
            continue;
        }
        seen[v] = true;
        if cidx[v] == usize::MAX {
            nidx[v] = nodes.len();
            nodes.push(v);
        }
        let Some(d) = ch.def[v] else { continue };
        for &u in &f.body[d].operands {
            if is_node(u.index()) && !seen[u.index()] {
                stack.push(u.index());
            }
        }
    }
    if nodes.len() > NODES_MAX {
        return None;
    }
    let node_cost: Vec<u64> = nodes.iter().map(|&v| flops_of(v)).collect();
    let node_fixed: Vec<bool> = nodes.iter().map(|&v| ch.mirror[v] && ch.needed[v]).collect();
    let mut node_by_cand = vec![Vec::new(); nodes.len()];
    let mut node_by_node = vec![Vec::new(); nodes.len()];
    for (v, (&cv, &nv_)) in cidx.iter().zip(&nidx).enumerate() {
        if cv == usize::MAX && nv_ == usize::MAX {
            continue;
        }
        let Some(d) = ch.def[v] else { continue };
        for &u in &f.body[d].operands {
            let n = nidx[u.index()];
            if n == usize::MAX {
                continue;
            }
            if cidx[v] != usize::MAX {
                if !node_by_cand[n].contains(&cidx[v]) {
                    node_by_cand[n].push(cidx[v]);
                }
            } else if !node_by_node[n].contains(&nidx[v]) {
                node_by_node[n].push(nidx[v]);
            }
        }
    }
    // Stages: at each position, the candidates a drop frees there.
    let live = liveness(f);
    let tl = live_bytes_timeline(f, &live, false);
    // The values whose drop frees bytes: the candidates, then the mirror
    // values the backward reads (always dropped).
    let mirrors: Vec<usize> = (0..nv).filter(|&v| ch.mirror[v] && ch.needed[v] && ch.fwd_val[v] && ch.def[v].is_some()).collect();
    let droppable: Vec<usize> = cand.iter().map(|v| v.index()).chain(mirrors.iter().copied()).collect();
    let mut didx = vec![usize::MAX; nv];
    for (i, &v) in droppable.iter().enumerate() {
        didx[v] = i;
    }
    let mut last_fwd = vec![0usize; nv];
    let mut reads: Vec<Vec<usize>> = vec![Vec::new(); droppable.len()];
    for (i, op) in f.body.iter().enumerate() {
        for &u in &op.operands {
            let c = didx[u.index()];
            if c == usize::MAX {
                continue;
            }
            if ch.is_fwd[i] {
                last_fwd[u.index()] = last_fwd[u.index()].max(i);
            } else if reads[c].last() != Some(&i) {
                reads[c].push(i);
            }
        }
    }
    // Positions a dropped value is not live at (in the plan) though it is
    // without remat: after its last forward read, before its last read,
    // except at its backward reads.
    let frees = |c: usize, p: usize| {
        let v = droppable[c];
        let (Some(d), Some(last)) = (ch.def[v], live.last_use[v]) else { return false };
        d.max(last_fwd[v]) < p && p < last && reads[c].binary_search(&p).is_err()
    };
    let mut stages: Vec<(u64, Vec<(usize, u64)>)> = Vec::new();
    let mut at: std::collections::HashMap<Vec<usize>, usize> = std::collections::HashMap::new();
    for (p, &bytes) in tl.iter().enumerate() {
        let mut savers: Vec<(usize, u64)> = Vec::new();
        for (c, &v) in cand.iter().enumerate() {
            if frees(c, p) {
                savers.push((c, f.ty(v).bytes()));
            }
        }
        let always: u64 = (cand.len()..droppable.len()).filter(|&c| frees(c, p)).map(|c| f.ty(ValueId(droppable[c] as u32)).bytes()).sum();
        let bytes = bytes.saturating_sub(always);
        let key: Vec<usize> = savers.iter().map(|s| s.0).collect();
        match at.get(&key) {
            Some(&s) => stages[s].0 = stages[s].0.max(bytes),
            None => {
                at.insert(key, stages.len());
                stages.push((bytes, savers));
            }
        }
    }
    Some(Model { cand, drop_cost, node_cost, node_fixed, node_by_cand, node_by_node, stages })
}

impl Model {
    /// Which nodes a keep set recomputes: those a dropped candidate or a
    /// recomputed node reads (to a fixed point), and a mirror region's.
    fn recomputed(&self, kept: &[bool]) -> Vec<bool> {
        let n = self.node_cost.len();
        let mut r: Vec<bool> = (0..n).map(|i| self.node_fixed[i] || self.node_by_cand[i].iter().any(|&c| !kept[c])).collect();
        let mut changed = true;
        while changed {
            changed = false;
            for i in 0..n {
                if !r[i] && self.node_by_node[i].iter().any(|&j| r[j]) {
                    r[i] = true;
                    changed = true;
                }
            }
        }
        r
    }
    /// The program's recompute flops of a keep set (a lower bound of the measured).
    fn cost(&self, kept: &[bool]) -> u64 {
        let r = self.recomputed(kept);
        let a: u64 = (0..self.cand.len()).filter(|&c| !kept[c]).map(|c| self.drop_cost[c]).fold(0, u64::saturating_add);
        let b: u64 = (0..r.len()).filter(|&i| r[i]).map(|i| self.node_cost[i]).fold(0, u64::saturating_add);
        a.saturating_add(b)
    }
    /// The program's temp peak of a keep set (a lower bound of the measured).
    fn peak(&self, kept: &[bool]) -> u64 {
        self.stages
            .iter()
            .map(|(b, s)| b.saturating_sub(s.iter().filter(|x| !kept[x.0]).map(|x| x.1).sum::<u64>()))
            .max()
            .unwrap_or(0)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// What the program minimizes.
#[derive(Clone, Copy)]
enum Goal {
    /// Recompute flops within this temp-peak budget.
    Recompute(u64),
    /// The temp peak.
    Peak,
}

/// One program: columns k_0..k_m (kept), r_0..r_n (recomputed), and for
/// `Goal::Peak` a last column P.
fn solve_once(m: &Model, goal: Goal, cuts: &[Vec<bool>], below: Option<u64>, seconds: f64) -> Result<Option<(Vec<bool>, f64)>, Status> {
    let (nc, nn) = (m.cand.len(), m.node_cost.len());
    let unit = m.drop_cost.iter().chain(&m.node_cost).fold(0u64, |g, &c| gcd(g, c)).max(1);
    let bunit = m.stages.iter().flat_map(|s| s.1.iter().map(|x| x.1)).fold(0u64, gcd).max(1);
    let mut pb = highs::RowProblem::default();
    let mut cols = Vec::with_capacity(nc + nn + 1);
    let peak_goal = matches!(goal, Goal::Peak);
    // Objective: sum over dropped candidates of their cost = const - sum cost*k.
    for c in 0..nc {
        let w = if peak_goal { 0.0 } else { -((m.drop_cost[c] / unit) as f64) };
        cols.push(pb.add_integer_column(w, 0..=1));
    }
    for i in 0..nn {
        let w = if peak_goal { 0.0 } else { (m.node_cost[i] / unit) as f64 };
        let lo = if m.node_fixed[i] { 1 } else { 0 };
        cols.push(pb.add_integer_column(w, lo..=1));
    }
    let pcol = peak_goal.then(|| pb.add_column(1.0, 0.0..));
    // Nodes: r_u >= 1 - k_c for each candidate c needing u; r_u >= r_w.
    for i in 0..nn {
        for &c in &m.node_by_cand[i] {
            pb.add_row(1.0.., [(cols[nc + i], 1.0), (cols[c], 1.0)]);
        }
        for &j in &m.node_by_node[i] {
            pb.add_row(0.0.., [(cols[nc + i], 1.0), (cols[nc + j], -1.0)]);
        }
    }
    // Stages: live(no remat) - sum_{dropped savers} bytes <= budget (or P).
    for (bytes, savers) in &m.stages {
        let total: u64 = savers.iter().map(|x| x.1).sum();
        // sum bytes*k_c (- P) <= total - bytes + budget
        let mut row: Vec<(highs::Col, f64)> = savers.iter().map(|&(c, b)| (cols[c], (b / bunit) as f64)).collect();
        match goal {
            Goal::Recompute(budget) => {
                if *bytes <= budget {
                    continue;
                }
                let need = bytes - budget; // bytes the drops must free here
                if need > total {
                    return Err(Status::Infeasible);
                }
                // sum bytes*(1-k) >= need  <=>  sum bytes*k <= total - need
                pb.add_row(..=((total - need) / bunit) as f64, row);
            }
            Goal::Peak => {
                // (bytes - total)/bunit + sum b k <= P/bunit; P in bunit units.
                if let Some(p) = pcol {
                    row.push((p, -1.0));
                }
                pb.add_row(..=((total as f64 - *bytes as f64) / bunit as f64), row);
            }
        }
    }
    // Only plans that recompute less than `below` (in the program's
    // integral units: LB/unit <= ceil(below/unit) - 1).
    if let (Goal::Recompute(_), Some(below)) = (goal, below) {
        let fixed: u64 = m.drop_cost.iter().map(|&c| c / unit).sum();
        let most = below.div_ceil(unit) as f64 - 1.0 - fixed as f64;
        let mut row: Vec<(highs::Col, f64)> = (0..nc).map(|c| (cols[c], -((m.drop_cost[c] / unit) as f64))).collect();
        row.extend((0..nn).map(|i| (cols[nc + i], (m.node_cost[i] / unit) as f64)));
        pb.add_row(..=most, row);
    }
    for cut in cuts {
        // exclude this keep set: sum_{kept} (1-k) + sum_{dropped} k >= 1
        let ones = cut.iter().filter(|&&k| k).count() as f64;
        let row: Vec<(highs::Col, f64)> = (0..nc).map(|c| (cols[c], if cut[c] { -1.0 } else { 1.0 })).collect();
        pb.add_row((1.0 - ones).., row);
    }
    let mut model = pb.optimise(highs::Sense::Minimise);
    model.make_quiet();
    model.set_option("time_limit", seconds.max(0.01));
    model.set_option("mip_rel_gap", 0.0);
    // The recompute objective is integral (costs in units of their gcd),
    // so a gap below 1 proves optimality.
    model.set_option("mip_abs_gap", if peak_goal { 0.0 } else { 1.0 - 1e-6 });
    let solved = model.try_solve().map_err(|_| Status::TimeLimit)?;
    match solved.status() {
        highs::HighsModelStatus::Optimal => {}
        highs::HighsModelStatus::Infeasible | highs::HighsModelStatus::UnboundedOrInfeasible => return Ok(None),
        _ => return Err(Status::TimeLimit),
    }
    let sol = solved.get_solution();
    let kept: Vec<bool> = sol.columns()[..nc].iter().map(|&x| x > 0.5).collect();
    Ok(Some((kept, solved.objective_value())))
}

fn keep_strategy(nv: usize, cand: &[ValueId], kept: &[bool], shared: bool) -> Strategy {
    let mut k = vec![false; nv];
    for (i, v) in cand.iter().enumerate() {
        k[v.index()] = kept[i];
    }
    if shared { Strategy::KeepShared(k) } else { Strategy::Keep(k) }
}

/// Measures a keep set both ways: (strategy, peak, recompute) of each.
fn measure_both(f: &Func, ch: &Chain, cand: &[ValueId], kept: &[bool]) -> Vec<(Strategy, u64, u64)> {
    let nv = f.values.len();
    [false, true]
        .into_iter()
        .map(|shared| {
            let s = keep_strategy(nv, cand, kept, shared);
            let (peak, rflops) = measure(f, ch, &s);
            (s, peak, rflops)
        })
        .collect()
}

fn found(s: Strategy, kept: &[bool], peak: u64, rflops: u64, status: Status) -> Found {
    let shared = matches!(s, Strategy::KeepShared(_));
    let dropped = kept.iter().filter(|k| !**k).count();
    let label = format!("milp-{}({}, drop {dropped} of {})", status.name(), if shared { "shared" } else { "each read" }, kept.len());
    Found { strategy: s, label, peak, rflops }
}

/// Whether [`least_recompute`] and [`min_peak`] apply to `f`: not a chain
/// (the chain DP is exact there), at most [`MILP_MAX`] candidates.
pub fn applies(f: &Func, ch: &Chain) -> bool {
    let n = candidates(f, ch).len();
    n > 0 && n <= MILP_MAX && f.body.len() <= super::dag::MAX_OPS && !super::dag::is_chain(f, ch)
}

/// The least measured recompute within `budget` over every keep set (both
/// ways), within `time_limit` seconds. None when the program does not
/// apply (size limits).
///
/// `known`: the least recompute of a plan already known to fit (the other
/// planners'); only keep sets that recompute less are searched, and
/// `optimal` without a plan then means none does.
pub fn least_recompute(f: &Func, ch: &Chain, budget: u64, known: Option<u64>, time_limit: f64) -> Option<Outcome> {
    search(f, ch, Goal::Recompute(budget), known, time_limit)
}

/// The least measured temp peak over every keep set (both ways): the
/// smallest feasible budget of the plan space.
pub fn min_peak(f: &Func, ch: &Chain, time_limit: f64) -> Option<Outcome> {
    search(f, ch, Goal::Peak, None, time_limit)
}

fn search(f: &Func, ch: &Chain, goal: Goal, known: Option<u64>, time_limit: f64) -> Option<Outcome> {
    let model = build_model(f, ch)?;
    let start = Instant::now();
    let cols = model.cand.len() + model.node_cost.len() + usize::from(matches!(goal, Goal::Peak));
    let rows = model.stages.len();
    let score = |peak: u64, rflops: u64| match goal {
        Goal::Recompute(_) => (rflops, peak),
        Goal::Peak => (peak, rflops),
    };
    let bound_of = |kept: &[bool]| match goal {
        Goal::Recompute(_) => model.cost(kept),
        Goal::Peak => model.peak(kept),
    };
    let mut best: Option<(Strategy, Vec<bool>, u64, u64)> = None;
    let mut cuts: Vec<Vec<bool>> = Vec::new();
    let (mut solves, mut rejected) = (0usize, 0usize);
    let mut lower = 0u64;
    let finish = |status: Status, best: Option<(Strategy, Vec<bool>, u64, u64)>, solves, rejected, lower: u64| {
        let inc = best.as_ref().map(|(_, _, p, r)| score(*p, *r).0).or(known);
        let gap = match (inc, status) {
            (_, Status::Optimal) => 0.0,
            (Some(inc), _) => {
                if inc == 0 { 0.0 } else { inc.saturating_sub(lower) as f64 / inc as f64 }
            }
            (None, _) => 1.0,
        };
        let report = Report { status, gap, solves, cols, rows, rejected };
        Some(Outcome { best: best.map(|(s, k, p, r)| found(s, &k, p, r, status)), report })
    };
    loop {
        let left = time_limit - start.elapsed().as_secs_f64();
        if solves >= MAX_SOLVES || left <= 0.0 {
            return finish(Status::TimeLimit, best, solves, rejected, lower);
        }
        solves += 1;
        let below = best.as_ref().map(|(_, _, p, r)| score(*p, *r).0).into_iter().chain(known).min();
        let kept = match solve_once(&model, goal, &cuts, below.filter(|_| matches!(goal, Goal::Recompute(_))), left) {
            Err(Status::Infeasible) | Ok(None) => {
                let st = if best.is_some() || known.is_some() { Status::Optimal } else { Status::Infeasible };
                return finish(st, best, solves, rejected, lower);
            }
            Err(st) => return finish(st, best, solves, rejected, lower),
            Ok(Some((kept, _))) => kept,
        };
        // The program's optimum bounds every keep set not measured yet.
        let lb = bound_of(&kept);
        lower = lower.max(lb);
        if let Some((_, _, p, r)) = &best
            && lb >= score(*p, *r).0
        {
            lower = score(*p, *r).0;
            return finish(Status::Optimal, best, solves, rejected, lower);
        }
        let mut fits_any = false;
        for (s, peak, rflops) in measure_both(f, ch, &model.cand, &kept) {
            if let Goal::Recompute(b) = goal
                && peak > b
            {
                continue;
            }
            fits_any = true;
            if best.as_ref().is_none_or(|(_, _, p, r)| score(peak, rflops) < score(*p, *r)) {
                best = Some((s, kept.clone(), peak, rflops));
            }
        }
        if !fits_any {
            rejected += 1;
        }
        cuts.push(kept);
    }
}
