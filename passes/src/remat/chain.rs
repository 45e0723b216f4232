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
    /// Whether the function runs fused (it had `ck.fusion` marks, which
    /// remat removed to plan): every plan is then measured after fusing it
    /// again ([`super::emit::Emitted::temp_peak`]), as memplan will see it.
    pub fused: bool,
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
///
/// The phases, in order: classify the values, number the spine, count the
/// crossing values of every spine position, choose the cuts, give every spine
/// position its stage, collect the boundary sets, put every forward op in a
/// stage, collect each stage's store set, place the recomputations, assemble.
pub fn build_chain(f: &Func) -> Chain {
    build_chain_with(f, CutRule::Narrow)
}

/// How cuts are chosen (see [`choose_cuts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CutRule {
    /// About 2·sqrt(P) of the narrowest positions (the default).
    Narrow,
    /// Every position whose crossing values the backward reads anyway,
    /// however many: keeping such a boundary adds no bytes, so on graphs
    /// where every position crosses many values (long skip connections)
    /// the plans still get fine stages. Falls back to `Narrow` when fewer
    /// than sqrt(P) positions are free.
    AllFree,
}

/// [`build_chain`] with a choice of cut rule.
pub fn build_chain_with(f: &Func, rule: CutRule) -> Chain {
    let vals = classify_values(f);
    let spine = Spine::new(f, &vals);
    let cross = crossing_counts(f, &vals, &spine);
    let is_cut = match rule {
        CutRule::Narrow => choose_cuts(&cross),
        CutRule::AllFree => all_free_cuts(&cross).unwrap_or_else(|| choose_cuts(&cross)),
    };
    let stage_of_pos = stage_positions(&is_cut);
    let n_stages = stage_of_pos.last().map_or(0, |&s| s + 1);
    let bounds = boundary_sets(f, &vals, &spine, &is_cut, &stage_of_pos, n_stages);
    let mut stages = assign_stages(f, &vals, &spine, &stage_of_pos, n_stages);
    let first_use_stage = store_sets(f, &vals, &bounds, &mut stages);
    let insert_at = insertion_points(&vals.is_fwd, &first_use_stage);
    assemble(f, vals, stages, bounds, insert_at)
}

/// Per-value facts of the forward pass (the first columns of [`Chain`]).
struct Values {
    is_fwd: Vec<bool>,
    def: Vec<Option<usize>>,
    fwd_val: Vec<bool>,
    mirror: Vec<bool>,
    forced: Vec<bool>,
    needed: Vec<bool>,
    first_bwd_use: Vec<usize>,
    arg_only: Vec<bool>,
    has_backward: bool,
}

/// Classifies ops and values: forward, forced, mirror, needed (and the first
/// backward read), arg-only.
fn classify_values(f: &Func) -> Values {
    let phases = op_phases(f);
    let is_fwd: Vec<bool> = phases.iter().map(|p| *p == Phase::Forward).collect();
    let def = f.def_table();
    let (fwd_val, mirror, forced) = forward_marks(f, &is_fwd);
    let (needed, first_bwd_use) = needed_values(f, &is_fwd, &fwd_val);
    let has_backward = (0..f.values.len()).any(|v| needed[v] && !forced[v]);
    let arg_only = arg_only_values(f, &is_fwd, &def);
    Values { is_fwd, def, fwd_val, mirror, forced, needed, first_bwd_use, arg_only, has_backward }
}

/// Forward values, and which of them are mirror and forced (returned or
/// `ck.checkpoint`); forced wins over mirror.
fn forward_marks(f: &Func, is_fwd: &[bool]) -> (Vec<bool>, Vec<bool>, Vec<bool>) {
    let nv = f.values.len();
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
    for v in 0..nv {
        if forced[v] {
            mirror[v] = false;
        }
    }
    (fwd_val, mirror, forced)
}

/// Needed values (forward values read by a non-forward op) and the body
/// index of their first backward read.
fn needed_values(f: &Func, is_fwd: &[bool], fwd_val: &[bool]) -> (Vec<bool>, Vec<usize>) {
    let nv = f.values.len();
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
    (needed, first_bwd_use)
}

/// Arg-only values: results of cheap forward ops whose operands are
/// arguments or arg-only.
fn arg_only_values(f: &Func, is_fwd: &[bool], def: &[Option<usize>]) -> Vec<bool> {
    let mut arg_only = vec![false; f.values.len()];
    for (i, op) in f.body.iter().enumerate() {
        if !is_fwd[i] {
            continue;
        }
        if let Some(r) = op.result {
            arg_only[r.index()] = !op.kind.is_compute_heavy()
                && op.operands.iter().all(|o| def[o.index()].is_none() || arg_only[o.index()]);
        }
    }
    arg_only
}

/// The spine: forward ops with a non-arg-only result, by position.
struct Spine {
    /// Body index of each spine position.
    ops: Vec<usize>,
    /// Per value: the last spine position that reads it (0: none).
    last_fwd_use: Vec<usize>,
}

impl Spine {
    /// Numbers the spine ops and finds the last spine read of every value.
    fn new(f: &Func, vals: &Values) -> Spine {
        let ops: Vec<usize> = (0..f.body.len())
            .filter(|&i| vals.is_fwd[i] && f.body[i].result.is_some_and(|r| !vals.arg_only[r.index()]))
            .collect();
        let mut last_fwd_use = vec![0usize; f.values.len()];
        for (p, &i) in ops.iter().enumerate() {
            for &o in &f.body[i].operands {
                last_fwd_use[o.index()] = p;
            }
        }
        Spine { ops, last_fwd_use }
    }

    fn len(&self) -> usize {
        self.ops.len()
    }

    /// The spine result defined at position p that crosses p: read by a later
    /// spine op and not forced (forced values are always held). With its last
    /// spine read.
    fn crossing_result(&self, f: &Func, vals: &Values, p: usize) -> Option<(ValueId, usize)> {
        let r = f.body[self.ops[p]].result?;
        let u = self.last_fwd_use[r.index()];
        (u > p && !vals.forced[r.index()]).then_some((r, u))
    }
}

/// Per spine position: |C_p|, how many of C_p the backward does not read,
/// and whether p may be a cut.
struct Crossing {
    cnt: Vec<i64>,
    extra: Vec<i64>,
    eligible: Vec<bool>,
}

/// Counts the crossing values of every spine position via difference arrays
/// (forced values excluded: always held).
fn crossing_counts(f: &Func, vals: &Values, spine: &Spine) -> Crossing {
    let np = spine.len();
    let mut d_cnt = vec![0i64; np + 1];
    let mut d_bad = vec![0i64; np + 1];
    let mut d_mirror = vec![0i64; np + 1];
    for p in 0..np {
        let Some((r, u)) = spine.crossing_result(f, vals, p) else { continue };
        d_cnt[p] += 1;
        d_cnt[u] -= 1;
        if !vals.needed[r.index()] {
            d_bad[p] += 1;
            d_bad[u] -= 1;
        }
        if vals.mirror[r.index()] {
            d_mirror[p] += 1;
            d_mirror[u] -= 1;
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
    Crossing { cnt, extra, eligible }
}

/// Chooses the cuts: positions whose crossing values the backward reads
/// anyway (free to keep) when there are enough of them, else any eligible
/// position; in both cases those with at most kappa crossing values, kappa
/// the smallest count giving about 2·sqrt(P) cuts.
fn choose_cuts(cross: &Crossing) -> Vec<bool> {
    let np = cross.cnt.len();
    let target = ((2.0 * (np as f64).sqrt()).ceil() as usize).max(1);
    let (free_cut, n_free) = cuts_under_kappa(cross, target, true);
    if 2 * n_free >= target { free_cut } else { cuts_under_kappa(cross, target, false).0 }
}

/// Every free eligible position, when there are at least sqrt(P) of them.
fn all_free_cuts(cross: &Crossing) -> Option<Vec<bool>> {
    let np = cross.cnt.len();
    let cut: Vec<bool> = (0..np).map(|p| cross.eligible[p] && cross.extra[p] == 0).collect();
    let n = cut.iter().filter(|&&c| c).count();
    (n * n >= np && n > 0).then_some(cut)
}

/// The candidate positions (free ones only, or all eligible ones) with at
/// most kappa crossing values, and how many candidates there are.
fn cuts_under_kappa(cross: &Crossing, target: usize, free_only: bool) -> (Vec<bool>, usize) {
    let np = cross.cnt.len();
    let candidate = |p: usize| cross.eligible[p] && (!free_only || cross.extra[p] == 0);
    let mut hist: Vec<usize> = Vec::new();
    for p in 0..np {
        if candidate(p) {
            let k = cross.cnt[p].max(0) as usize;
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
    let cut: Vec<bool> = (0..np).map(|p| candidate(p) && (cross.cnt[p].max(0) as usize) <= kappa).collect();
    (cut, total)
}

/// The stage of each spine position: a cut ends its stage.
fn stage_positions(is_cut: &[bool]) -> Vec<usize> {
    let mut stage_of_pos = vec![0usize; is_cut.len()];
    let mut s = 0usize;
    for (p, &cut) in is_cut.iter().enumerate() {
        stage_of_pos[p] = s;
        if cut {
            s += 1;
        }
    }
    stage_of_pos
}

/// The boundary sets C_p of the cuts, by a sweep over the spine
/// (`n_stages + 1` entries, the first and last empty).
fn boundary_sets(
    f: &Func,
    vals: &Values,
    spine: &Spine,
    is_cut: &[bool],
    stage_of_pos: &[usize],
    n_stages: usize,
) -> Vec<Vec<ValueId>> {
    let np = spine.len();
    let mut bounds: Vec<Vec<ValueId>> = vec![Vec::new(); n_stages + 1];
    let mut active = ActiveSet::new(f.values.len());
    let mut ends_at: Vec<Vec<ValueId>> = vec![Vec::new(); np];
    for p in 0..np {
        if let Some((r, u)) = spine.crossing_result(f, vals, p) {
            ends_at[u].push(r);
        }
    }
    for p in 0..np {
        for &v in &ends_at[p] {
            active.remove(v);
        }
        if let Some((r, _)) = spine.crossing_result(f, vals, p) {
            active.insert(r);
        }
        if is_cut[p] {
            let mut members = active.items.clone();
            members.sort();
            bounds[stage_of_pos[p] + 1] = members;
        }
    }
    bounds
}

/// Puts every forward op in a stage (spine ops by position, arg-only ones
/// by their first forward user) and sums the stages' flops.
fn assign_stages(f: &Func, vals: &Values, spine: &Spine, stage_of_pos: &[usize], n_stages: usize) -> Vec<Stage> {
    let nb = f.body.len();
    let np = spine.len();
    let is_fwd = &vals.is_fwd;
    let mut stage_of_op = vec![usize::MAX; nb];
    for (p, &i) in spine.ops.iter().enumerate() {
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
            st = spine.ops.partition_point(|&x| x < i);
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
    stages
}

/// Fills each stage's store set (needed values, not forced, not mirror, not
/// in the next boundary) and returns each stage's first backward read.
fn store_sets(f: &Func, vals: &Values, bounds: &[Vec<ValueId>], stages: &mut [Stage]) -> Vec<usize> {
    let mut in_next_bound = vec![false; f.values.len()];
    let mut first_use_stage = vec![usize::MAX; stages.len()];
    for j in 0..stages.len() {
        for &v in &bounds[j + 1] {
            in_next_bound[v.index()] = true;
        }
        let mut store = Vec::new();
        let mut bytes = 0u64;
        let mut t = usize::MAX;
        for &i in &stages[j].ops {
            let Some(r) = f.body[i].result else { continue };
            if vals.needed[r.index()] && !vals.forced[r.index()] {
                t = t.min(vals.first_bwd_use[r.index()]);
                if !vals.mirror[r.index()] && !in_next_bound[r.index()] {
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
    first_use_stage
}

/// Insertion points: prefix minimum of the stages' first backward reads,
/// never before the end of the forward.
fn insertion_points(is_fwd: &[bool], first_use_stage: &[usize]) -> Vec<usize> {
    let fwd_end = (0..is_fwd.len()).filter(|&i| is_fwd[i]).max().map(|i| i + 1).unwrap_or(0);
    let mut insert_at = vec![usize::MAX; first_use_stage.len()];
    let mut m = usize::MAX;
    for (j, &t) in first_use_stage.iter().enumerate() {
        m = m.min(t);
        insert_at[j] = if m == usize::MAX { m } else { m.max(fwd_end) };
    }
    insert_at
}

/// Assembles the chain, with the byte totals of the boundaries and of the
/// needed values.
fn assemble(f: &Func, vals: Values, stages: Vec<Stage>, bounds: Vec<Vec<ValueId>>, insert_at: Vec<usize>) -> Chain {
    let needed = &vals.needed;
    let bound_bytes: Vec<u64> =
        bounds.iter().map(|b| b.iter().map(|&v| f.ty(v).bytes()).fold(0u64, u64::saturating_add)).collect();
    let bound_needed_bytes: Vec<u64> = bounds
        .iter()
        .map(|b| b.iter().filter(|v| needed[v.index()]).map(|&v| f.ty(v).bytes()).fold(0u64, u64::saturating_add))
        .collect();
    let needed_bytes = (0..f.values.len())
        .filter(|&v| needed[v] && !vals.forced[v])
        .map(|v| f.values[v].ty.bytes())
        .fold(0u64, u64::saturating_add);
    Chain {
        is_fwd: vals.is_fwd,
        fwd_val: vals.fwd_val,
        needed: vals.needed,
        forced: vals.forced,
        mirror: vals.mirror,
        arg_only: vals.arg_only,
        def: vals.def,
        first_use: vals.first_bwd_use,
        stages,
        bounds,
        bound_bytes,
        bound_needed_bytes,
        insert_at,
        needed_bytes,
        has_backward: vals.has_backward,
        fused: false,
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

/// `order` (backward op indices of `f`) with every op at which all its
/// operands die, each operand a backward value (the in-place additions that
/// accumulate a weight's gradient over time steps), moved to run as soon as
/// its operands exist.
///
/// Why: ordering by level groups one level's ops of every layer, so the
/// layers' per-step weight-gradient products were all computed before any of
/// them was added into its accumulator: one [in, 4·hidden] temporary per
/// weight live at once (8 of 64 KiB on the 4-layer LSTM). Moving an op
/// earlier only shortens its operands' lives (they die at it) and keeps
/// every dependence, so the values are the same bit for bit.
fn eager_accumulations(f: &Func, phases: &[Phase], order: &[usize]) -> Vec<usize> {
    let n = f.body.len();
    let def = f.def_table();
    let uses = f.uses();
    let backward_def = |o: &ValueId| def[o.index()].filter(|&d| phases[d] != Phase::Forward);
    // An op is eager when it is the last reader of each of its operands, all
    // backward values; so a value has at most one eager reader.
    let mut eager = vec![false; n];
    for &i in order {
        let ops = &f.body[i].operands;
        eager[i] = !ops.is_empty() && ops.iter().all(|o| backward_def(o).is_some() && uses[o.index()].last() == Some(&i));
    }
    let ready = |i: usize, placed: &[bool]| f.body[i].operands.iter().all(|o| backward_def(o).is_some_and(|d| placed[d]));
    let mut placed = vec![false; n];
    let mut out = Vec::with_capacity(order.len());
    let mut stack = Vec::new();
    for &i in order.iter().filter(|&&i| !eager[i]) {
        stack.push(i);
        while let Some(j) = stack.pop() {
            if placed[j] {
                continue;
            }
            placed[j] = true;
            out.push(j);
            let readers = f.body[j].result.map_or(&[][..], |r| uses[r.index()].as_slice());
            stack.extend(readers.iter().copied().filter(|&e| eager[e] && !placed[e] && ready(e, &placed)));
        }
    }
    // Every eager op's operands are backward ops of `order`, so all are
    // placed above; this only keeps `out` a permutation of `order` should
    // that ever fail (the caller's schedule check then rejects the order).
    out.extend(order.iter().copied().filter(|&i| !placed[i]));
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
    let border = eager_accumulations(f, &phases, &border);
    let mut from: Vec<usize> = (0..n).collect();
    for (&pos, &src) in fwd.iter().zip(&order).chain(bwd.iter().zip(&border)) {
        from[pos] = src;
    }
    let g = super::emit::with_body(f, from.iter().map(|&src| f.body[src].clone()).collect());
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
