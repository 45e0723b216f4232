//! Plans on the graph itself, not on a chain of stages: which of the
//! forward values the backward reads are kept, every other one recomputed
//! right before its first backward read ([`Strategy::Keep`], each
//! recomputation from scratch) or recomputed there with every needed value
//! produced on the way kept to its own last read ([`Strategy::KeepShared`]:
//! a dropped region recomputed once per backward region; on independent
//! branches, each branch recomputed right before its own backward).
//!
//! - [`exhaustive`]: every keep/recompute assignment of the candidate
//!   values, both ways, when there are at most [`EXHAUSTIVE_MAX`]; returns
//!   the Pareto front of (temp peak, recompute flops) measured by the real
//!   liveness analysis. The exact optimum of this plan space.
//! - [`descent`]: for larger graphs (up to [`DESCENT_MAX`] candidates), a
//!   DAG-aware greedy: starting from keeping everything, drop the value
//!   (among a few of those live at the measured peak) whose drop lowers the
//!   peak most per recomputed flop, until the budget is met (or no drop lowers
//!   the peak); then spend what is left of the budget by keeping again the
//!   dropped values, costliest recomputation first, while the plan fits,
//!   and by swaps (keep one again, drop another) that fit and recompute less. Peaks are measured, so cuts are
//!   weighed by bytes and pending scalar sums cost their 4 bytes, not a
//!   "wide cut".
//!
//! Complexity: exhaustive 2·2^m rewrites (m <= 8); descent at most
//! [`TRIES`] rewrites per step, at most [`DESCENT_EVALS`] rewrites; each rewrite is
//! O(ops) ([`draft`] plus liveness).

use super::chain::Chain;
use super::emit::{Draft, Strategy, draft};
use ckopt_ir::{Func, ValueId};

/// Most candidate values [`exhaustive`] enumerates (2·256 rewrites).
pub const EXHAUSTIVE_MAX: usize = 8;
/// Most candidate values [`descent`] plans.
pub const DESCENT_MAX: usize = 256;
/// Most rewrites one [`descent`] measures.
pub const DESCENT_EVALS: usize = 400;
/// Largest function (ops) the graph planners run on.
pub const MAX_OPS: usize = 5_000;

/// The values a plan decides about: forward values the backward reads,
/// neither forced (returned, `ck.checkpoint`) nor `ck.mirror`.
pub fn candidates(f: &Func, ch: &Chain) -> Vec<ValueId> {
    (0..f.values.len())
        .filter(|&v| ch.needed[v] && ch.fwd_val[v] && !ch.forced[v] && !ch.mirror[v] && ch.def[v].is_some())
        .map(|v| ValueId(v as u32))
        .collect()
}

/// Whether the forward is a chain: every forward op that is not cheap and
/// computed from arguments only ([`Chain::arg_only`]) reads the result of
/// the one before it, and every such result is read by at most one later
/// such op (no branch, no skip).
pub fn is_chain(f: &Func, ch: &Chain) -> bool {
    let spine: Vec<usize> = (0..f.body.len())
        .filter(|&i| ch.is_fwd[i] && f.body[i].result.is_some_and(|r| !ch.arg_only[r.index()]))
        .collect();
    let mut readers = vec![0u32; f.values.len()];
    for w in spine.windows(2) {
        let (prev, op) = (f.body[w[0]].result, &f.body[w[1]]);
        if !prev.is_some_and(|p| op.operands.contains(&p)) {
            return false;
        }
    }
    for &i in &spine {
        let op = &f.body[i];
        let mut seen: Vec<ValueId> = Vec::new();
        for &u in &op.operands {
            if ch.def[u.index()].is_some_and(|d| ch.is_fwd[d]) && !ch.arg_only[u.index()] && !seen.contains(&u) {
                seen.push(u);
                readers[u.index()] += 1;
                if readers[u.index()] > 1 {
                    return false;
                }
            }
        }
    }
    true
}

/// Whether the graph planners apply to `f` (size limits).
pub fn applies(f: &Func, cand: &[ValueId]) -> bool {
    f.body.len() <= MAX_OPS && !cand.is_empty() && cand.len() <= DESCENT_MAX
}

fn keep_of(nv: usize, cand: &[ValueId], kept: &[bool]) -> Vec<bool> {
    let mut k = vec![false; nv];
    for (i, v) in cand.iter().enumerate() {
        k[v.index()] = kept[i];
    }
    k
}

fn strategy(nv: usize, cand: &[ValueId], kept: &[bool], shared: bool) -> Strategy {
    let k = keep_of(nv, cand, kept);
    if shared { Strategy::KeepShared(k) } else { Strategy::Keep(k) }
}

/// (temp peak, recompute flops) of a strategy.
pub fn measure(f: &Func, ch: &Chain, s: &Strategy) -> (u64, u64) {
    super::emit::measure(f, ch, s)
}

fn label(kept: &[bool], shared: bool) -> String {
    let dropped = kept.iter().filter(|k| !**k).count();
    format!("{}(drop {dropped} of {})", if shared { "graph-shared" } else { "graph" }, kept.len())
}

/// A plan found by the graph planners, its label and measured numbers.
pub struct Found {
    pub strategy: Strategy,
    pub label: String,
    pub peak: u64,
    pub rflops: u64,
}

/// The Pareto front of `found` over (peak, recompute): sorted by peak, a
/// plan kept only when it recomputes less than every plan with a lower peak.
fn front(mut found: Vec<Found>) -> Vec<Found> {
    found.sort_by_key(|x| (x.peak, x.rflops));
    let mut out: Vec<Found> = Vec::new();
    for x in found {
        if out.last().is_none_or(|l| x.rflops < l.rflops) {
            out.push(x);
        }
    }
    out
}

/// Every candidate dropped, recomputed shared: on independent branches
/// (whose first backward reads come branch by branch) each branch is
/// recomputed once, right before its own backward.
pub fn branchwise(f: &Func, ch: &Chain) -> Found {
    let s = Strategy::KeepShared(vec![false; f.values.len()]);
    let (peak, rflops) = measure(f, ch, &s);
    Found { strategy: s, label: "graph-shared(drop all)".into(), peak, rflops }
}

/// Every keep/recompute assignment of the candidates, both ways (None when
/// there are more than [`EXHAUSTIVE_MAX`]): the Pareto front.
pub fn exhaustive(f: &Func, ch: &Chain) -> Option<Vec<Found>> {
    let cand = candidates(f, ch);
    let m = cand.len();
    if m == 0 || m > EXHAUSTIVE_MAX || f.body.len() > MAX_OPS {
        return None;
    }
    let nv = f.values.len();
    let mut found = Vec::new();
    for mask in 0u32..(1u32 << m) {
        let kept: Vec<bool> = (0..m).map(|i| mask >> i & 1 == 1).collect();
        for shared in [false, true] {
            let s = strategy(nv, &cand, &kept, shared);
            let (peak, rflops) = measure(f, ch, &s);
            found.push(Found { strategy: s, label: label(&kept, shared), peak, rflops });
        }
    }
    Some(front(found))
}

/// Drops measured per descent step.
pub const TRIES: usize = 4;

/// Bytes of `v` per flop of the op that defines it (+1).
fn static_score(f: &Func, ch: &Chain, v: ValueId) -> f64 {
    let flops = ch.def[v.index()].map_or(0, |d| crate::analysis::op_flops(f, &f.body[d]));
    f.ty(v).bytes() as f64 / (flops as f64 + 1.0)
}

/// The candidates (indices into `cand`) kept and live at the temp peak of
/// the rewritten function: the only drops that can lower it.
fn live_at_peak(f: &Func, d: &Draft, cand: &[ValueId], kept: &[bool]) -> Vec<usize> {
    let (live, tl) = d.live_bytes(f);
    let peak = tl.iter().copied().max().unwrap_or(0);
    let at: Vec<usize> = (0..tl.len()).filter(|&i| tl[i] == peak).collect();
    (0..cand.len())
        .filter(|&i| kept[i])
        .filter(|&i| {
            let v = cand[i].index();
            let root = live.buffer.get(v).copied();
            live.intervals.iter().any(|iv| Some(iv.root) == root && at.iter().any(|&t| iv.start <= t && t <= iv.end))
        })
        .collect()
}

/// The greedy descent over keep sets (shared recomputation), aimed at
/// `budget` (None: as low a peak as single drops reach). Each step tries
/// dropping the [`TRIES`] kept candidates live at the current peak with the
/// most bytes per flop of their op, and takes the one that lowers the
/// measured peak most per recomputed flop. Returns the
/// plans of its path (Pareto front) and, with a budget, the plan after
/// spending it: the dropped values, costliest recomputation first, kept
/// again whenever the plan still fits, then swaps (one dropped value kept
/// again, one kept value dropped) while they fit and recompute less.
pub fn descent(f: &Func, ch: &Chain, budget: Option<u64>) -> Vec<Found> {
    let cand = candidates(f, ch);
    if !applies(f, &cand) {
        return Vec::new();
    }
    let (m, nv) = (cand.len(), f.values.len());
    let shared = true;
    let mut kept = vec![true; m];
    let mut em = draft(f, ch, &strategy(nv, &cand, &kept, shared));
    let (mut peak, mut rflops) = (em.temp_peak(f), em.recompute_flops(f));
    let mut evals = 1usize;
    let mut path = vec![Found { strategy: strategy(nv, &cand, &kept, shared), label: label(&kept, shared), peak, rflops }];
    // Drop phase.
    while budget.is_none_or(|b| peak > b) && evals < DESCENT_EVALS {
        let mut best: Option<(usize, u64, u64, Draft)> = None;
        let mut best_score = 0f64;
        // The drops worth measuring: the values live at the peak with the
        // most bytes per flop of their own op ([`TRIES`] of them).
        let mut tries = live_at_peak(f, &em, &cand, &kept);
        tries.sort_by(|&a, &b| static_score(f, ch, cand[b]).total_cmp(&static_score(f, ch, cand[a])).then(a.cmp(&b)));
        tries.truncate(TRIES);
        for i in tries {
            if evals >= DESCENT_EVALS {
                break;
            }
            kept[i] = false;
            let e = draft(f, ch, &strategy(nv, &cand, &kept, shared));
            let (p, r) = (e.temp_peak(f), e.recompute_flops(f));
            evals += 1;
            kept[i] = true;
            if p >= peak {
                continue;
            }
            let score = (peak - p) as f64 / (r.saturating_sub(rflops) as f64 + 1.0);
            if best.is_none() || score > best_score {
                best = Some((i, p, r, e));
                best_score = score;
            }
        }
        let Some((i, p, r, e)) = best else { break };
        kept[i] = false;
        (peak, rflops, em) = (p, r, e);
        path.push(Found { strategy: strategy(nv, &cand, &kept, shared), label: label(&kept, shared), peak, rflops });
    }
    // Spend phase: keep again what saves recompute while the plan fits.
    if let Some(b) = budget
        && peak <= b
    {
        let cost = |i: usize| ch.def[cand[i].index()].map_or(0, |d| crate::analysis::op_flops(f, &f.body[d]));
        let mut dropped: Vec<usize> = (0..m).filter(|&i| !kept[i]).collect();
        dropped.sort_by_key(|&i| std::cmp::Reverse(cost(i)));
        let before = rflops;
        for i in dropped {
            if evals >= DESCENT_EVALS {
                break;
            }
            kept[i] = true;
            let (p, r) = measure(f, ch, &strategy(nv, &cand, &kept, shared));
            evals += 1;
            if p <= b && r < rflops {
                (peak, rflops) = (p, r);
            } else {
                kept[i] = false;
            }
        }
        // Swaps: keep a dropped value again in exchange for dropping a kept
        // one, while that fits and recomputes less.
        let mut improved = true;
        while improved && evals < DESCENT_EVALS {
            improved = false;
            let mut dropped: Vec<usize> = (0..m).filter(|&i| !kept[i]).collect();
            dropped.sort_by_key(|&i| std::cmp::Reverse(cost(i)));
            'outer: for i in dropped {
                let mut held: Vec<usize> = (0..m).filter(|&j| kept[j]).collect();
                held.sort_by_key(|&j| cost(j));
                for j in held {
                    if evals >= DESCENT_EVALS {
                        break 'outer;
                    }
                    kept[i] = true;
                    kept[j] = false;
                    let (p, r) = measure(f, ch, &strategy(nv, &cand, &kept, shared));
                    evals += 1;
                    if p <= b && r < rflops {
                        (peak, rflops) = (p, r);
                        improved = true;
                        break 'outer;
                    }
                    kept[i] = false;
                    kept[j] = true;
                }
            }
        }
        if rflops < before {
            path.push(Found { strategy: strategy(nv, &cand, &kept, shared), label: format!("{} spent", label(&kept, shared)), peak, rflops });
        }
    }
    front(path)
}
