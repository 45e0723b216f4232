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
//!   whose drop lowers the measured peak most per recomputed flop, until the
//!   budget is met (or no drop lowers the peak); then spend what is left of
//!   the budget by keeping again the dropped values that save the most
//!   recompute while the plan still fits. Peaks are measured, so cuts are
//!   weighed by bytes and pending scalar sums cost their 4 bytes, not a
//!   "wide cut".
//!
//! Complexity: exhaustive 2·2^m rewrites (m <= 12); descent O(m) rewrites
//! per step, at most [`DESCENT_EVALS`] rewrites in all; each rewrite is
//! O(ops) ([`apply`] plus liveness).

use super::chain::Chain;
use super::emit::{Strategy, apply};
use ckopt_ir::{Func, ValueId};

/// Most candidate values [`exhaustive`] enumerates (2·4096 rewrites).
pub const EXHAUSTIVE_MAX: usize = 12;
/// Most candidate values [`descent`] plans.
pub const DESCENT_MAX: usize = 256;
/// Most rewrites one [`descent`] measures.
pub const DESCENT_EVALS: usize = 3000;
/// Largest function (ops) the graph planners run on.
pub const MAX_OPS: usize = 20_000;

/// The values a plan decides about: forward values the backward reads,
/// neither forced (returned, `ck.checkpoint`) nor `ck.mirror`.
pub fn candidates(f: &Func, ch: &Chain) -> Vec<ValueId> {
    (0..f.values.len())
        .filter(|&v| ch.needed[v] && ch.fwd_val[v] && !ch.forced[v] && !ch.mirror[v] && ch.def[v].is_some())
        .map(|v| ValueId(v as u32))
        .collect()
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
    let em = apply(f, ch, s);
    (em.temp_peak(), em.recompute_flops())
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

/// The greedy descent over keep sets (shared recomputation), aimed at
/// `budget` (None: as low a peak as single drops reach). Returns the plans
/// of its path (Pareto front) and, with a budget, the plan after spending it.
pub fn descent(f: &Func, ch: &Chain, budget: Option<u64>) -> Vec<Found> {
    let cand = candidates(f, ch);
    if !applies(f, &cand) {
        return Vec::new();
    }
    let (m, nv) = (cand.len(), f.values.len());
    let shared = true;
    let mut kept = vec![true; m];
    let (mut peak, mut rflops) = measure(f, ch, &strategy(nv, &cand, &kept, shared));
    let mut evals = 1usize;
    let mut path = vec![Found { strategy: strategy(nv, &cand, &kept, shared), label: label(&kept, shared), peak, rflops }];
    // Drop phase.
    while budget.is_none_or(|b| peak > b) && evals < DESCENT_EVALS {
        let mut best: Option<(usize, u64, u64)> = None;
        let mut best_score = 0f64;
        for i in 0..m {
            if !kept[i] || evals >= DESCENT_EVALS {
                continue;
            }
            kept[i] = false;
            let (p, r) = measure(f, ch, &strategy(nv, &cand, &kept, shared));
            evals += 1;
            kept[i] = true;
            if p >= peak {
                continue;
            }
            let score = (peak - p) as f64 / (r.saturating_sub(rflops) as f64 + 1.0);
            if best.is_none() || score > best_score {
                best = Some((i, p, r));
                best_score = score;
            }
        }
        let Some((i, p, r)) = best else { break };
        kept[i] = false;
        (peak, rflops) = (p, r);
        path.push(Found { strategy: strategy(nv, &cand, &kept, shared), label: label(&kept, shared), peak, rflops });
    }
    // Spend phase: keep again what saves the most recompute while it fits.
    if let Some(b) = budget
        && peak <= b
    {
        let mut improved = true;
        while improved && evals < DESCENT_EVALS {
            improved = false;
            let mut best: Option<(usize, u64, u64)> = None;
            for i in 0..m {
                if kept[i] || evals >= DESCENT_EVALS {
                    continue;
                }
                kept[i] = true;
                let (p, r) = measure(f, ch, &strategy(nv, &cand, &kept, shared));
                evals += 1;
                kept[i] = false;
                if p <= b && r < rflops && best.is_none_or(|(_, _, br)| r < br) {
                    best = Some((i, p, r));
                }
            }
            if let Some((i, p, r)) = best {
                kept[i] = true;
                (peak, rflops) = (p, r);
                improved = true;
            }
        }
        path.push(Found { strategy: strategy(nv, &cand, &kept, shared), label: format!("{} spent", label(&kept, shared)), peak, rflops });
    }
    front(path)
}
