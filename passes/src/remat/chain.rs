//! The forward pass of a gradient function seen as a chain of stages.
//!
//! What: splits the forward ops (the ops the loss depends on, `analysis::phase`)
//! into stages separated by *cuts*: schedule positions after which only a few
//! forward values are still needed by later forward ops (the paper's candidate
//! split points; on a chain every layer output, on a resnet the block outputs,
//! on an LSTM the pair (h, c)). Every value needed to restart the forward after
//! a cut is in that cut's boundary set, so keeping a boundary set is enough to
//! recompute everything after it. All remat plans (sqrt, greedy, log, optimal)
//! are trees over this chain, so DAGs are handled the same way as chains.
//!
//! Definitions (forward ops only; backward uses are what remat rewires):
//! - *arg-only* values are computed by cheap ops (not matmul/conv) from
//!   arguments and other arg-only values only (fills, broadcasts of biases,
//!   slices of the input); they never cross a cut and belong to the stage of
//!   their first forward user, so a stage recomputes them when needed.
//! - *spine* ops are the other forward ops, numbered by position p.
//! - the crossing set C_p = spine values defined at or before p and read by a
//!   spine op after p. Position p is *eligible* when no value in C_p is
//!   `ck.mirror`, and *free* when the backward reads every value of C_p anyway
//!   (keeping it costs nothing extra: the relu outputs of an MLP). The cuts
//!   are the free positions with |C_p| <= kappa when there are at least
//!   sqrt(P) of them, else the eligible ones with |C_p| <= kappa (the residual stream
//!   of a resmlp/transformer block end), kappa the smallest count that gives
//!   about 2·sqrt(P) cuts.
//! - *needed* (V_B) values: forward values read by a non-forward op.
//! - *forced* values (returned ones, `ck.checkpoint`) are always kept and never
//!   part of a boundary; *mirror* values (`ck.mirror`) are never kept.
//!
//! Invariant out: stages partition the forward ops; `bounds[j]` (j = 1..S-1) is
//! C at the cut before stage j; `bounds[0]` and `bounds[S]` are empty; a
//! stage's `store` values are its needed values outside `bounds[j+1]`;
//! `insert_at[j]` is a body position before the first backward read of any
//! needed value of stages 0..=j and is non-increasing in j.
//! Complexity: O(ops + values) plus O(sum of |C| over cuts).

use crate::analysis::{Phase, op_flops, op_phases};
use ckopt_ir::{Func, ValueId, ops::{ATTR_CHECKPOINT, ATTR_MIRROR}};

/// One stage of the chain.
#[derive(Clone, Debug, Default)]
pub struct Stage {
    /// Body indices of its ops (spine and arg-only), ascending.
    pub ops: Vec<usize>,
    /// Flops of running all its ops once.
    pub flops: u64,
    /// Needed values of the stage that are not in the next boundary (not forced, not mirror).
    pub store: Vec<ValueId>,
    pub store_bytes: u64,
}

/// The chain of stages of one function.
#[derive(Clone, Debug)]
pub struct Chain {
    /// Per body op: whether it is a forward op.
    pub is_fwd: Vec<bool>,
    /// Per value: defined by a forward op.
    pub fwd_val: Vec<bool>,
    /// Per value: a forward value read by a non-forward op (V_B).
    pub needed: Vec<bool>,
    /// Per value: always kept (returned or `ck.checkpoint`).
    pub forced: Vec<bool>,
    /// Per value: `ck.mirror` (never kept across, recomputed at its use).
    pub mirror: Vec<bool>,
    /// Per value: computed by cheap ops from arguments only.
    pub arg_only: Vec<bool>,
    /// Per value: defining body index.
    pub def: Vec<Option<usize>>,
    /// Per value: body index of its first read by a non-forward op (usize::MAX: none).
    pub first_use: Vec<usize>,
    pub stages: Vec<Stage>,
    /// `bounds[j]`: values held at the cut before stage j (S+1 entries).
    pub bounds: Vec<Vec<ValueId>>,
    /// Bytes of `bounds[j]`.
    pub bound_bytes: Vec<u64>,
    /// Bytes of the values of `bounds[j]` that the backward reads (what a
    /// stored range keeps of its inner boundaries).
    pub bound_needed_bytes: Vec<u64>,
    /// Body position where stage j's recomputation goes (usize::MAX: never needed).
    pub insert_at: Vec<usize>,
    /// Total bytes of needed values not forced (what "no remat" keeps).
    pub needed_bytes: u64,
    /// Whether the function has any backward read of a forward value at all.
    pub has_backward: bool,
}

impl Chain {
    pub fn len(&self) -> usize {
        self.stages.len()
    }
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
    /// Flops of stages a..b.
    pub fn flops(&self, a: usize, b: usize) -> u64 {
        self.stages[a..b].iter().map(|s| s.flops).fold(0u64, u64::saturating_add)
    }
}

/// An indexed set with O(1) insert/remove and iteration over members.
struct ActiveSet {
    items: Vec<ValueId>,
    slot: Vec<u32>,
}

impl ActiveSet {
    fn new(n: usize) -> Self {
        ActiveSet { items: Vec::new(), slot: vec![u32::MAX; n] }
    }
    fn insert(&mut self, v: ValueId) {
        if self.slot[v.index()] == u32::MAX {
            self.slot[v.index()] = self.items.len() as u32;
            self.items.push(v);
        }
    }
    fn remove(&mut self, v: ValueId) {
        let s = self.slot[v.index()];
        if s == u32::MAX {
            return;
        }
        self.slot[v.index()] = u32::MAX;
        if let Some(last) = self.items.pop()
            && last != v
        {
            self.items[s as usize] = last;
            self.slot[last.index()] = s;
        }
    }
}

/// Builds the chain of `f`. Never fails: a function without backward reads
/// gives a chain with `has_backward == false`.
pub fn build_chain(f: &Func) -> Chain {
    let nv = f.values.len();
    let nb = f.body.len();
    let phases = op_phases(f);
    let is_fwd: Vec<bool> = phases.iter().map(|p| *p == Phase::Forward).collect();
    let def = f.def_table();
    let mut fwd_val = vec![false; nv];
    let mut mirror = vec![false; nv];
    let mut forced = vec![false; nv];
    for (i, op) in f.body.iter().enumerate() {
        if let Some(r) = op.result
            && is_fwd[i]
        {
            fwd_val[r.index()] = true;
            mirror[r.index()] = op.has_attr(ATTR_MIRROR);
            forced[r.index()] = op.has_attr(ATTR_CHECKPOINT);
        }
    }
    for &r in f.returned() {
        if fwd_val[r.index()] {
            forced[r.index()] = true;
            mirror[r.index()] = false;
        }
    }
    // forced wins over mirror
    for v in 0..nv {
        if forced[v] {
            mirror[v] = false;
        }
    }
    // needed values and their first backward use
    let mut needed = vec![false; nv];
    let mut first_bwd_use = vec![usize::MAX; nv];
    for (i, op) in f.body.iter().enumerate() {
        if is_fwd[i] {
            continue;
        }
        for &o in &op.operands {
            if fwd_val[o.index()] {
                needed[o.index()] = true;
                if first_bwd_use[o.index()] == usize::MAX {
                    first_bwd_use[o.index()] = i;
                }
            }
        }
    }
    let has_backward = (0..nv).any(|v| needed[v] && !forced[v]);
    // arg-only values
    let mut arg_only = vec![false; nv];
    for (i, op) in f.body.iter().enumerate() {
        if !is_fwd[i] {
            continue;
        }
        if let Some(r) = op.result {
            arg_only[r.index()] = !op.kind.is_compute_heavy()
                && op.operands.iter().all(|o| def[o.index()].is_none() || arg_only[o.index()]);
        }
    }
    // spine positions
    let spine: Vec<usize> = (0..nb).filter(|&i| is_fwd[i] && f.body[i].result.is_some_and(|r| !arg_only[r.index()])).collect();
    let np = spine.len();
    let mut pos_of = vec![usize::MAX; nb];
    for (p, &i) in spine.iter().enumerate() {
        pos_of[i] = p;
    }
    // last forward (spine) use position of each spine value
    let mut last_fwd_use = vec![0usize; nv];
    for (p, &i) in spine.iter().enumerate() {
        for &o in &f.body[i].operands {
            last_fwd_use[o.index()] = p;
        }
    }
    // crossing counts via difference arrays (forced values excluded: always held)
    let mut d_cnt = vec![0i64; np + 1];
    let mut d_bad = vec![0i64; np + 1];
    let mut d_mirror = vec![0i64; np + 1];
    for (p, &i) in spine.iter().enumerate() {
        let Some(r) = f.body[i].result else { continue };
        let u = last_fwd_use[r.index()];
        if u > p && !forced[r.index()] {
            d_cnt[p] += 1;
            d_cnt[u] -= 1;
            if !needed[r.index()] {
                d_bad[p] += 1;
                d_bad[u] -= 1;
            }
            if mirror[r.index()] {
                d_mirror[p] += 1;
                d_mirror[u] -= 1;
            }
        }
    }
    let mut cnt = vec![0i64; np];
    let mut extra = vec![0i64; np];
    let mut eligible = vec![false; np];
    let (mut c, mut b, mut mcnt) = (0i64, 0i64, 0i64);
    for p in 0..np {
        c += d_cnt[p];
        b += d_bad[p];
        mcnt += d_mirror[p];
        cnt[p] = c;
        extra[p] = b;
        eligible[p] = mcnt == 0 && p + 1 < np;
    }
    // choose the cuts: positions whose crossing values the backward reads
    // anyway (free to keep) when there are enough of them, else any position;
    // in both cases those with at most kappa crossing values, kappa the
    // smallest count giving about 2·sqrt(P) cuts.
    let target = ((2.0 * (np as f64).sqrt()).ceil() as usize).max(1);
    let choose = |free_only: bool| -> (Vec<bool>, usize) {
        let mut hist: Vec<usize> = Vec::new();
        for p in 0..np {
            if eligible[p] && (!free_only || extra[p] == 0) {
                let k = cnt[p].max(0) as usize;
                if hist.len() <= k {
                    hist.resize(k + 1, 0);
                }
                hist[k] += 1;
            }
        }
        let total: usize = hist.iter().sum();
        let want = target.min(total);
        let (mut kappa, mut acc) = (0usize, 0usize);
        for (k, &h) in hist.iter().enumerate() {
            acc += h;
            kappa = k;
            if acc >= want {
                break;
            }
        }
        let cut: Vec<bool> = (0..np)
            .map(|p| eligible[p] && (!free_only || extra[p] == 0) && (cnt[p].max(0) as usize) <= kappa)
            .collect();
        (cut, total)
    };
    let (free_cut, n_free) = choose(true);
    let is_cut = if 2 * n_free >= target { free_cut } else { choose(false).0 };
    // stage of each spine position
    let mut stage_of_pos = vec![0usize; np];
    let mut s = 0usize;
    for p in 0..np {
        stage_of_pos[p] = s;
        if is_cut[p] {
            s += 1;
        }
    }
    let n_stages = if np == 0 { 0 } else { stage_of_pos[np - 1] + 1 };
    // boundary sets by a sweep
    let mut bounds: Vec<Vec<ValueId>> = vec![Vec::new(); n_stages + 1];
    let mut active = ActiveSet::new(nv);
    let mut ends_at: Vec<Vec<ValueId>> = vec![Vec::new(); np];
    for (p, &i) in spine.iter().enumerate() {
        if let Some(r) = f.body[i].result {
            let u = last_fwd_use[r.index()];
            if u > p && !forced[r.index()] {
                ends_at[u].push(r);
            }
        }
    }
    for (p, &i) in spine.iter().enumerate() {
        for &v in &ends_at[p] {
            active.remove(v);
        }
        if let Some(r) = f.body[i].result
            && last_fwd_use[r.index()] > p
            && !forced[r.index()]
        {
            active.insert(r);
        }
        if is_cut[p] {
            let mut members = active.items.clone();
            members.sort();
            bounds[stage_of_pos[p] + 1] = members;
        }
    }
    // stage of every forward op: spine by position, arg-only by first forward user
    let mut stage_of_op = vec![usize::MAX; nb];
    for (p, &i) in spine.iter().enumerate() {
        stage_of_op[i] = stage_of_pos[p];
    }
    let uses = f.uses();
    for i in (0..nb).rev() {
        if !is_fwd[i] || stage_of_op[i] != usize::MAX {
            continue;
        }
        let mut st = usize::MAX;
        if let Some(r) = f.body[i].result {
            for &u in &uses[r.index()] {
                if is_fwd[u] && stage_of_op[u] != usize::MAX {
                    st = st.min(stage_of_op[u]);
                }
            }
        }
        if st == usize::MAX {
            // no forward user (the loss itself or dead): the stage of the next spine op
            st = spine.partition_point(|&x| x < i);
            st = if st < np { stage_of_pos[st] } else { n_stages.saturating_sub(1) };
        }
        stage_of_op[i] = st;
    }
    let mut stages: Vec<Stage> = vec![Stage::default(); n_stages];
    for i in 0..nb {
        if is_fwd[i] && stage_of_op[i] < n_stages {
            let st = &mut stages[stage_of_op[i]];
            st.ops.push(i);
            st.flops = st.flops.saturating_add(op_flops(f, &f.body[i]));
        }
    }
    let mut in_next_bound = vec![false; nv];
    let mut first_use_stage = vec![usize::MAX; n_stages];
    for j in 0..n_stages {
        for &v in &bounds[j + 1] {
            in_next_bound[v.index()] = true;
        }
        let mut store = Vec::new();
        let mut bytes = 0u64;
        let mut t = usize::MAX;
        for &i in &stages[j].ops {
            let Some(r) = f.body[i].result else { continue };
            if needed[r.index()] && !forced[r.index()] {
                t = t.min(first_bwd_use[r.index()]);
                if !mirror[r.index()] && !in_next_bound[r.index()] {
                    store.push(r);
                    bytes = bytes.saturating_add(f.ty(r).bytes());
                }
            }
        }
        for &v in &bounds[j + 1] {
            in_next_bound[v.index()] = false;
        }
        stages[j].store = store;
        stages[j].store_bytes = bytes;
        first_use_stage[j] = t;
    }
    // insertion points: prefix minimum, never before the end of the forward
    let fwd_end = (0..nb).filter(|&i| is_fwd[i]).max().map(|i| i + 1).unwrap_or(0);
    let mut insert_at = vec![usize::MAX; n_stages];
    let mut m = usize::MAX;
    for j in 0..n_stages {
        m = m.min(first_use_stage[j]);
        insert_at[j] = if m == usize::MAX { m } else { m.max(fwd_end) };
    }
    let bound_bytes: Vec<u64> =
        bounds.iter().map(|b| b.iter().map(|&v| f.ty(v).bytes()).fold(0u64, u64::saturating_add)).collect();
    let bound_needed_bytes: Vec<u64> = bounds
        .iter()
        .map(|b| b.iter().filter(|v| needed[v.index()]).map(|&v| f.ty(v).bytes()).fold(0u64, u64::saturating_add))
        .collect();
    let needed_bytes =
        (0..nv).filter(|&v| needed[v] && !forced[v]).map(|v| f.values[v].ty.bytes()).fold(0u64, u64::saturating_add);
    Chain {
        is_fwd,
        fwd_val,
        needed,
        forced,
        mirror,
        arg_only,
        def,
        first_use: first_bwd_use,
        stages,
        bounds,
        bound_bytes,
        bound_needed_bytes,
        insert_at,
        needed_bytes,
        has_backward,
    }
}

/// Merges groups of `factor` consecutive stages (for the DP on long
/// chains). Every per-boundary quantity is rebuilt for the coarse indices:
/// the inner boundaries of a group become stored values of its stage.
pub fn coarsen(ch: &Chain, f: &Func, factor: usize) -> Chain {
    let factor = factor.max(1);
    let s = ch.len();
    let bytes = |vs: &[ValueId], only_needed: bool| {
        vs.iter().filter(|v| !only_needed || ch.needed[v.index()]).map(|&v| f.ty(v).bytes()).fold(0u64, u64::saturating_add)
    };
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
                // an inner boundary: what the backward reads of it is stored
                st.store.extend(ch.bounds[i + 1].iter().copied().filter(|v| ch.needed[v.index()]));
            }
        }
        st.ops.sort_unstable();
        st.store.sort_unstable();
        st.store.dedup();
        st.store_bytes = bytes(&st.store, false);
        out.stages.push(st);
        out.bounds.push(ch.bounds[e].clone());
        out.insert_at.push(ch.insert_at[e - 1]);
        j = e;
    }
    out.bound_bytes = out.bounds.iter().map(|b| bytes(b, false)).collect();
    out.bound_needed_bytes = out.bounds.iter().map(|b| bytes(b, true)).collect();
    out
}

/// `f` with its forward ops in wavefront order, or None when that is the
/// given order (or would not be a valid schedule).
///
/// Why: the chain's cuts count the values crossing a schedule position, so
/// they depend on the order the forward was written in. A stacked LSTM
/// written layer by layer crosses every hidden state of a layer at every
/// cut; in wavefront order (as a Checkmate/MONeT-style planner would
/// schedule it) a cut crosses one (h, c) per layer. Order: each forward op
/// as late as possible (ALAP): its level is one less than the lowest level
/// of the forward ops that read it, the loss (no forward reader) at 0; ops
/// sorted by level, ties in the given order. On a stacked recurrence the
/// levels are anti-diagonals (cell (l, t) at minus its distance to the
/// loss); on a chain it is the given order. The permuted ops keep the
/// positions of the forward ops; the backward ops are reordered the same
/// way in reverse (below), keeping the backward positions. The result
/// computes the same values bit for bit (only independent ops are
/// reordered); an order that is not a valid schedule gives None. In-place
/// marks are re-checked by remat's rewrite (`emit::fix_inplace`).
pub fn wavefront(f: &Func) -> Option<Func> {
    let n = f.body.len();
    let phases = op_phases(f);
    let def = f.def_table();
    let fwd: Vec<usize> = (0..n).filter(|&i| phases[i] == Phase::Forward).collect();
    let mut key: Vec<i64> = vec![0; n];
    let mut seen = vec![false; n];
    for &i in fwd.iter().rev() {
        if !seen[i] {
            key[i] = 0;
        }
        for o in &f.body[i].operands {
            if let Some(d) = def[o.index()].filter(|&d| phases[d] == Phase::Forward) {
                let k = key[i] - 1;
                key[d] = if seen[d] { key[d].min(k) } else { k };
                seen[d] = true;
            }
        }
    }
    let mut order = fwd.clone();
    order.sort_by_key(|&i| (key[i], i));
    if order == fwd {
        return None;
    }
    // The backward in the matching (reverse) order: an op's level is one
    // more than the highest of its operands' levels, where a forward value's
    // level is its distance to the loss (-key) and a backward value's its
    // own level; so the backward of the cells nearest the loss comes first,
    // as autodiff would have emitted it from a forward written that way.
    let bwd: Vec<usize> = (0..n).filter(|&i| phases[i] != Phase::Forward && f.body[i].kind != ckopt_ir::OpKind::Return).collect();
    let mut blevel: Vec<i64> = vec![0; n];
    for &i in &bwd {
        blevel[i] = 1 + f.body[i]
            .operands
            .iter()
            .filter_map(|o| def[o.index()])
            .map(|d| if phases[d] == Phase::Forward { -key[d] } else { blevel[d] })
            .max()
            .unwrap_or(0);
    }
    let mut border = bwd.clone();
    border.sort_by_key(|&i| (blevel[i], i));
    let mut g = f.clone();
    for (&pos, &src) in fwd.iter().zip(&order).chain(bwd.iter().zip(&border)) {
        g.body[pos] = f.body[src].clone();
    }
    // a valid schedule: every operand defined before its use
    let mut defined = vec![false; g.values.len()];
    for p in &g.params {
        defined[p.value.index()] = true;
    }
    for op in &g.body {
        if op.operands.iter().any(|o| !defined[o.index()]) {
            return None;
        }
        if let Some(r) = op.result {
            defined[r.index()] = true;
        }
    }
    Some(g)
}
