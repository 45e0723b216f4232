//! Remat plans over a chain of stages, and the planners that build them.
//!
//! A plan for a stage range [a, b) assumes the boundary at `a` is held and
//! the boundary at `b` is held by the caller (since the backward of a stage
//! reads its output as well as its input). Three node kinds, as in
//! Revolve/Rotor:
//! - `Store`: run a..b once storing every needed value, then backward.
//! - `StoreFirst { upto, rest }`: run a..upto storing, hold those values and
//!   the boundary `upto`, solve [upto, b) with `rest`, then the backward of
//!   a..upto needs no recomputation.
//! - `Split { at, left, right }`: run a..at keeping only the boundary `at`,
//!   solve [at, b) with `right`, then recompute and solve [a, at) with `left`.
//!
//! At the top level the forward pass itself runs the right spine of the tree
//! (no recomputation there); every other node's forward is recomputation.
//!
//! Planners: `sqrt_plan` (segments of about sqrt(total·boundary) bytes),
//! `greedy_plan` (the paper's Algorithm 2 for a threshold B), `log_plan`
//! (recursive, fan-out k), `optimal_plan` (dynamic programming on the chain,
//! Revolve/Rotor style with heterogeneous sizes and costs; multi-level).
//! Complexity: planners O(S) except `optimal_plan`, O(sum over distinct
//! stage ranges of their length · M) with memoization keyed by the exact
//! sequence of stage signatures (so uniform chains are cheap).

use super::chain::{Chain, coarsen};
use ckopt_ir::Func;
use std::collections::HashMap;

#[derive(Clone, Debug, PartialEq)]
pub enum Plan {
    Store,
    StoreFirst { upto: usize, rest: Box<Plan> },
    Split { at: usize, left: Box<Plan>, right: Box<Plan> },
}

impl Plan {
    /// The top-level plan that keeps the boundaries `cuts` (ascending, inside
    /// (0, S)) and stores every segment in between: a one-level plan.
    pub fn segments(cuts: &[usize]) -> Plan {
        let mut p = Plan::Store;
        for &c in cuts.iter().rev() {
            p = Plan::Split { at: c, left: Box::new(Plan::Store), right: Box::new(p) };
        }
        p
    }
}

/// The weight of stage j in the one-level planners: what storing it keeps
/// (its stored values and the needed part of its output boundary).
fn weight(ch: &Chain, j: usize) -> u64 {
    ch.stages[j].store_bytes.saturating_add(ch.bound_needed_bytes[j + 1])
}

/// Paper Algorithm 2: walk the stages, accumulate bytes; at a cut, when the
/// running total exceeds `b`, keep that boundary. Returns (cuts, x, y):
/// x = kept boundary bytes, y = the largest segment.
pub fn greedy_cuts(ch: &Chain, b: u64) -> (Vec<usize>, u64, u64) {
    let s = ch.len();
    let (mut acc, mut x, mut y) = (0u64, 0u64, 0u64);
    let mut cuts = Vec::new();
    for j in 0..s {
        acc = acc.saturating_add(weight(ch, j));
        if j + 1 < s && acc > b {
            cuts.push(j + 1);
            x = x.saturating_add(ch.bound_bytes[j + 1]);
            y = y.max(acc);
            acc = 0;
        }
    }
    y = y.max(acc);
    (cuts, x, y)
}

/// About sqrt(n) segments: segment bytes ~ sqrt(total · mean boundary).
pub fn sqrt_cuts(ch: &Chain) -> Vec<usize> {
    let s = ch.len();
    if s < 2 {
        return Vec::new();
    }
    let total: u64 = (0..s).map(|j| weight(ch, j)).fold(0, u64::saturating_add);
    let nb = (s - 1) as f64;
    let mean_b = (1..s).map(|j| ch.bound_bytes[j] as f64).sum::<f64>() / nb;
    let target = (total as f64 * mean_b.max(1.0)).sqrt();
    let mut cuts = Vec::new();
    let mut acc = 0.0f64;
    for j in 0..s - 1 {
        acc += weight(ch, j) as f64;
        if acc >= target {
            cuts.push(j + 1);
            acc = 0.0;
        }
    }
    cuts
}

/// The recursive plan: each range keeps `k` evenly spaced (by bytes)
/// boundaries and recurses into the k+1 parts; ranges of at most `leaf`
/// stages are stored.
pub fn log_plan(ch: &Chain, k: usize, leaf: usize) -> Plan {
    fn rec(prefix: &[u64], a: usize, b: usize, k: usize, leaf: usize) -> Plan {
        if b - a <= leaf.max(1) {
            return Plan::Store;
        }
        // k split points at byte quantiles of [a, b)
        let lo = prefix[a];
        let hi = prefix[b];
        let k = k.min(b - a - 1);
        let mut pts: Vec<usize> = Vec::new();
        for i in 1..=k {
            let t = lo + ((hi - lo) as u128 * i as u128 / (k as u128 + 1)) as u64;
            let mut c = prefix[a..=b].partition_point(|&x| x < t) + a;
            c = c.clamp(a + 1, b - 1);
            if pts.last().is_none_or(|&l| c > l) {
                pts.push(c);
            }
        }
        // right-nested splits: Split(p1, [a,p1), Split(p2, [p1,p2), ... [pk, b)))
        let mut bounds = vec![a];
        bounds.extend(&pts);
        bounds.push(b);
        let mut plan = rec(prefix, bounds[bounds.len() - 2], b, k, leaf);
        for w in (1..bounds.len() - 1).rev() {
            let left = rec(prefix, bounds[w - 1], bounds[w], k, leaf);
            plan = Plan::Split { at: bounds[w], left: Box::new(left), right: Box::new(plan) };
        }
        plan
    }
    let s = ch.len();
    if s == 0 {
        return Plan::Store;
    }
    let mut prefix = vec![0u64; s + 1];
    for j in 0..s {
        prefix[j + 1] = prefix[j].saturating_add(weight(ch, j).max(1));
    }
    rec(&prefix, 0, s, k.max(1), leaf)
}

/// Dynamic programming over the chain (Revolve/Rotor with heterogeneous
/// stages). `opt(a, b, m)` = least forward flops to process [a, b) with m
/// memory units beyond the held boundaries a and b:
/// - b = a+1: F(a) if store(a) <= m;
/// - StoreFirst: F(a) + opt(a+1, b, m - store(a) - bound(a+1));
/// - Split at c: F(a..c) + opt(c, b, m - bound(c)) + opt(a, c, m - bound(c))
///   (the boundary c stays live during both halves).
///
/// The memo is keyed by the exact signature sequence of a range, so equal
/// sub-chains share entries.
pub struct Dp {
    /// unit size in bytes
    pub quantum: u64,
    pub max_units: usize,
    s: usize,
    key: Vec<u32>, // key[a * (s + 1) + b]
    key_a: Vec<usize>,
    key_len: Vec<usize>,
    cost: Vec<u64>,   // key * (M+1) + m
    choice: Vec<i32>, // -1 leaf/none, 0 store-first, c-a split
    store_u: Vec<usize>,
    bound_u: Vec<usize>,
    prefix: Vec<u64>,
    /// prefix sums of store units + needed inner-boundary units (Store of a range)
    keep_prefix: Vec<usize>,
    bound_needed_u: Vec<usize>,
}

const INF: u64 = u64::MAX;

impl Dp {
    /// Builds the table for memory up to `max_units` of `quantum` bytes.
    /// Returns None when the table would exceed `work_limit` steps.
    pub fn new(ch: &Chain, quantum: u64, max_units: usize, work_limit: u64) -> Option<Dp> {
        let s = ch.len();
        let q = quantum.max(1);
        let units = |b: u64| -> usize { b.div_ceil(q).min(1 << 40) as usize };
        let store_u: Vec<usize> = ch.stages.iter().map(|st| units(st.store_bytes)).collect();
        let bound_u: Vec<usize> = ch.bound_bytes.iter().map(|&b| units(b)).collect();
        let bound_needed_u: Vec<usize> = ch.bound_needed_bytes.iter().map(|&b| units(b)).collect();
        let mut prefix = vec![0u64; s + 1];
        let mut keep_prefix = vec![0usize; s + 1];
        for j in 0..s {
            prefix[j + 1] = prefix[j].saturating_add(ch.stages[j].flops);
            keep_prefix[j + 1] = keep_prefix[j] + store_u[j] + bound_needed_u[j + 1];
        }
        // stage signatures: (flops, store, bound-before, needed part of bound-before)
        let mut sig_ids: HashMap<(u64, usize, usize, usize), u32> = HashMap::new();
        let mut sig = vec![0u32; s];
        let mut lead = vec![0u32; s];
        for j in 0..s {
            let n = sig_ids.len() as u32;
            sig[j] = *sig_ids.entry((ch.stages[j].flops, store_u[j], bound_u[j], bound_needed_u[j])).or_insert(n);
            let n = sig_ids.len() as u32;
            lead[j] = *sig_ids.entry((ch.stages[j].flops, store_u[j], usize::MAX, usize::MAX)).or_insert(n);
        }
        let w = s + 1;
        if (w as u64).saturating_mul(w as u64) > 40_000_000 {
            return None;
        }
        let mut key = vec![u32::MAX; w * w];
        let mut intern: HashMap<(u32, u32), u32> = HashMap::new();
        let mut key_a = Vec::new();
        let mut key_len = Vec::new();
        let mut work: u64 = 0;
        for a in 0..s {
            let mut prev = u32::MAX;
            for b in a + 1..=s {
                let part = if b == a + 1 { lead[a] } else { sig[b - 1] };
                let n = key_a.len() as u32;
                let k = *intern.entry((prev, part)).or_insert_with(|| {
                    key_a.push(a);
                    key_len.push(b - a);
                    work = work.saturating_add((b - a) as u64 * (max_units as u64 + 1));
                    n
                });
                key[a * w + b] = k;
                prev = k;
            }
            if work > work_limit {
                return None;
            }
        }
        let nk = key_a.len();
        let mu = max_units + 1;
        let mut dp = Dp {
            quantum: q,
            max_units,
            s,
            key,
            key_a,
            key_len,
            cost: vec![INF; nk * mu],
            choice: vec![-1; nk * mu],
            store_u,
            bound_u,
            prefix,
            keep_prefix,
            bound_needed_u,
        };
        let mut order: Vec<usize> = (0..nk).collect();
        order.sort_by_key(|&k| dp.key_len[k]);
        for k in order {
            let a = dp.key_a[k];
            let b = a + dp.key_len[k];
            for m in 0..mu {
                let (c, ch) = dp.eval(a, b, m);
                dp.cost[k * mu + m] = c;
                dp.choice[k * mu + m] = ch;
            }
        }
        Some(dp)
    }

    fn f(&self, a: usize, b: usize) -> u64 {
        self.prefix[b] - self.prefix[a]
    }

    fn get(&self, a: usize, b: usize, m: usize) -> u64 {
        let k = self.key[a * (self.s + 1) + b] as usize;
        self.cost[k * (self.max_units + 1) + m]
    }

    fn eval(&self, a: usize, b: usize, m: usize) -> (u64, i32) {
        if b == a + 1 {
            return if self.store_u[a] <= m { (self.f(a, b), -1) } else { (INF, -1) };
        }
        // store the whole range at once (inner boundaries: only their needed part)
        let all = self.keep_prefix[b] - self.keep_prefix[a] - self.bound_needed_u[b];
        let mut best = if all <= m { (self.f(a, b), -1) } else { (INF, -1) };
        let need = self.store_u[a] + self.bound_u[a + 1];
        if need <= m {
            let r = self.get(a + 1, b, m - need);
            // (only when cheaper: storing the whole range may already be)
            if r != INF && self.f(a, a + 1).saturating_add(r) < best.0 {
                best = (self.f(a, a + 1).saturating_add(r), 0);
            }
        }
        for c in a + 1..b {
            let bc = self.bound_u[c];
            if bc > m {
                continue;
            }
            let r = self.get(c, b, m - bc);
            if r == INF {
                continue;
            }
            let l = self.get(a, c, m - bc);
            if l == INF {
                continue;
            }
            let tot = self.f(a, c).saturating_add(r).saturating_add(l);
            if tot < best.0 {
                best = (tot, (c - a) as i32);
            }
        }
        best
    }

    /// Least total forward flops for the whole chain with m units (INF if infeasible).
    pub fn total(&self, m: usize) -> u64 {
        if self.s == 0 {
            return 0;
        }
        self.get(0, self.s, m.min(self.max_units))
    }

    /// The plan achieving `total(m)`, or None if infeasible.
    pub fn plan(&self, m: usize) -> Option<Plan> {
        if self.s == 0 {
            return Some(Plan::Store);
        }
        let m = m.min(self.max_units);
        if self.get(0, self.s, m) == INF {
            return None;
        }
        Some(self.build(0, self.s, m))
    }

    /// Builds the plan iteratively along the right spine (store-first and
    /// split-right chains can be as long as the chain); recursion only
    /// descends into left children.
    fn build(&self, a0: usize, b: usize, m0: usize) -> Plan {
        enum Frame {
            First(usize),
            Split(usize, Plan),
        }
        let (mut a, mut m) = (a0, m0);
        let mut frames: Vec<Frame> = Vec::new();
        loop {
            let k = self.key[a * (self.s + 1) + b] as usize;
            let ch = self.choice[k * (self.max_units + 1) + m];
            if b == a + 1 || ch < 0 {
                break;
            }
            if ch == 0 {
                let need = self.store_u[a] + self.bound_u[a + 1];
                frames.push(Frame::First(a + 1));
                a += 1;
                m -= need;
                continue;
            }
            let c = a + ch as usize;
            let bc = self.bound_u[c];
            frames.push(Frame::Split(c, self.build(a, c, m - bc)));
            a = c;
            m -= bc;
        }
        let mut plan = Plan::Store;
        while let Some(fr) = frames.pop() {
            plan = match fr {
                // a store-first followed by a plain store is one store
                Frame::First(_) if plan == Plan::Store => Plan::Store,
                Frame::First(upto) => Plan::StoreFirst { upto, rest: Box::new(plan) },
                Frame::Split(at, left) => Plan::Split { at, left: Box::new(left), right: Box::new(plan) },
            };
        }
        plan
    }
}

impl Drop for Plan {
    /// Iterative drop: right spines can be thousands of nodes deep.
    fn drop(&mut self) {
        let mut stack: Vec<Plan> = Vec::new();
        let take = |p: &mut Plan, stack: &mut Vec<Plan>| match p {
            Plan::Store => {}
            Plan::StoreFirst { rest, .. } => stack.push(std::mem::replace(&mut **rest, Plan::Store)),
            Plan::Split { left, right, .. } => {
                stack.push(std::mem::replace(&mut **left, Plan::Store));
                stack.push(std::mem::replace(&mut **right, Plan::Store));
            }
        };
        take(self, &mut stack);
        while let Some(mut p) = stack.pop() {
            take(&mut p, &mut stack);
        }
    }
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

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// The plans `optimal` measures for a temp-peak budget: the DP table for
/// the budget, probed at several memory parameters (the DP ignores backward
/// temporaries, so the largest parameter whose measured peak fits is
/// binary-searched). `measure(chain, plan, label)` rewrites and returns the
/// measured temp peak. Chains whose table is too large are coarsened
/// (pairs of stages merged) until it fits.
pub fn optimal_candidates(f: &Func, ch: &Chain, budget: u64, measure: &mut dyn FnMut(&Chain, Plan, String) -> u64) {
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
        let exact = if q == 0 { budget.max(1) } else { q };
        let q = exact.max(budget.div_ceil(MAX_UNITS));
        let units = (budget / q.max(1)) as usize;
        // When the unit is coarser than the sizes' common divisor, sizes are
        // rounded up to whole units: with a unit above the mean stage the DP
        // counts every small stage as a full unit and can store only part
        // of the chain even with room for all of it (a 1000-layer MLP at
        // 900 MiB kept recomputing half a forward). Merge stages first
        // until the mean stage weighs four units (the rounding then costs
        // at most a quarter). Exact units (small budgets) keep every stage.
        let kept: u64 = chain.stages.iter().map(|st| st.store_bytes).fold(0, u64::saturating_add);
        if q > exact && chain.len() > 2 && kept / (chain.len() as u64) < 4 * q {
            chain = coarsen(&chain, f, 2);
            continue;
        }
        if let Some(dp) = Dp::new(&chain, q, units, WORK) {
            let (mut lo, mut hi) = (0usize, units);
            let mut probes = 0;
            while lo <= hi && probes < 12 {
                let mid = lo + (hi - lo) / 2;
                probes += 1;
                match dp.plan(mid) {
                    None => lo = mid + 1,
                    Some(p) => {
                        let peak = measure(&chain, p, format!("optimal(m={mid}x{q}B)"));
                        if peak <= budget {
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
