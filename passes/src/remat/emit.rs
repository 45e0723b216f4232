//! Applies a remat plan: drops forward values and inserts recompute blocks.
//!
//! What: given a function, its chain (`chain.rs`) and a strategy, builds the
//! new body. The forward runs unchanged; forward values the backward reads
//! are either *kept* (the original value stays live until its last backward
//! use) or *dropped*, in which case clones of the ops that produce them
//! (marked `ck.recompute`, fresh result values) are inserted in the backward
//! right before they are needed, and the backward's operands are rewired to
//! the clones. A recompute block clones exactly the ops needed to produce its
//! targets from what is currently available (arguments, kept values, clones
//! registered by earlier blocks such as the boundary of the segment), in
//! forward order; only its targets are registered, its intermediates die in
//! the block.
//!
//! Safety net: a backward op that reads a dropped value with no available copy
//! gets an on-demand block right before it, so the result is correct for any
//! plan; plans only decide how much memory and recompute it costs.
//!
//! In-place: afterwards every `ck.inplace` mark is re-checked (the operand
//! must be op-defined, of the result's size, not returned and read by no
//! later op) and dropped if illegal (a forward op whose operand is now read by
//! a recompute op loses it); recompute clones of elementwise ops are marked
//! in place when legal (same rule as the `inplace` pass). Invariant out: same results bit for bit (clones
//! repeat the same ops with the same attributes, dropout seeds included).
//! Complexity: O(ops + clones).

use super::chain::Chain;
use super::plan::Plan;
use crate::analysis::liveness::{Body, liveness_of};
use crate::analysis::{liveness, op_flops, peak};
use ckopt_ir::fusion::Fusion;
use ckopt_ir::{
    Attr, Func, Op, OpKind, Param, TensorType, ValueData, ValueId,
    ops::{ATTR_CHECKPOINT, ATTR_INPLACE, ATTR_MIRROR, ATTR_OFFSET, ATTR_RECOMPUTE},
};

/// How to choose what is kept.
#[derive(Clone, Debug)]
pub enum Strategy {
    /// A plan over the chain (sqrt, greedy, log, optimal).
    Chain(Plan),
    /// Keep exactly these values (plus the forced ones); every other needed
    /// value is recomputed on demand right before its first backward use.
    Keep(Vec<bool>),
    /// Keep these values; every other needed value is recomputed on demand
    /// right before its first backward use, and every needed value such a
    /// recomputation produces on the way is kept from there until its own
    /// last backward use (the dropped region is recomputed once per backward
    /// region, as torch.utils.checkpoint does; on independent branches: each
    /// branch recomputed right before its own backward).
    KeepShared(Vec<bool>),
}

/// The rewritten function and what the rewrite did.
#[derive(Clone, Debug)]
pub struct Emitted {
    pub func: Func,
    pub clones: usize,
    pub on_demand: usize,
    pub inplace_stripped: usize,
    pub inplace_added: usize,
    /// Measure the result fused ([`Chain::fused`]).
    pub fused: bool,
}

impl Emitted {
    /// temp_peak_bytes of the result (docs/memory.md), with in-place
    /// sharing; of the result fused again when the function runs fused.
    pub fn temp_peak(&self) -> u64 {
        let g = self.measured();
        peak(&g, &liveness(&g), false)
    }
    /// The function whose liveness is the plan's: the result, or a fused
    /// copy of it when the function runs fused (fusion only adds marks, so
    /// its values are the result's).
    pub fn measured(&self) -> std::borrow::Cow<'_, Func> {
        measured(&self.func, self.fused)
    }
    /// Flops of the ops marked `ck.recompute`.
    pub fn recompute_flops(&self) -> u64 {
        recompute_flops(&self.func)
    }
}

/// `f`, or when `fused`, `f` fused as `fuse` does (what memplan and the
/// memory report of a fused pipeline measure).
pub fn measured(f: &Func, fused: bool) -> std::borrow::Cow<'_, Func> {
    if fused {
        let mut g = f.clone();
        crate::fuse::fuse_func(&mut g);
        std::borrow::Cow::Owned(g)
    } else {
        std::borrow::Cow::Borrowed(f)
    }
}

/// temp_peak_bytes of `f` as given, or fused ([`measured`]).
pub fn measured_peak(f: &Func, fused: bool) -> u64 {
    let g = measured(f, fused);
    peak(&g, &liveness(&g), false)
}

pub fn recompute_flops(f: &Func) -> u64 {
    f.body.iter().filter(|o| o.has_attr(ATTR_RECOMPUTE)).map(|o| op_flops(f, o)).fold(0u64, u64::saturating_add)
}

struct Emitter<'a> {
    ch: &'a Chain,
    keep: Vec<bool>,
    actions: Vec<(usize, Vec<ValueId>)>,
}

impl<'a> Emitter<'a> {
    fn targets(&self, a: usize, b: usize, with_end: bool) -> Vec<ValueId> {
        let mut t = Vec::new();
        for j in a..b {
            t.extend_from_slice(&self.ch.stages[j].store);
            if j + 1 < b {
                // inner boundaries: only what the backward reads is kept
                t.extend(self.ch.bounds[j + 1].iter().filter(|v| self.ch.needed[v.index()]));
            } else if with_end {
                // the boundary the rest of the plan restarts from
                t.extend_from_slice(&self.ch.bounds[j + 1]);
            }
        }
        t
    }
    fn keep_all(&mut self, vs: Vec<ValueId>) {
        for v in vs {
            self.keep[v.index()] = true;
        }
    }
    fn act(&mut self, pos: usize, vs: Vec<ValueId>) {
        if pos != usize::MAX && !vs.is_empty() {
            self.actions.push((pos, vs));
        }
    }
    /// Walks a plan for [a, b): the right spine iteratively, lefts recursively.
    fn walk(&mut self, plan: &Plan, a0: usize, b: usize, pos: usize, orig: bool) {
        let mut a = a0;
        let mut plan = plan;
        let mut lefts: Vec<(&Plan, usize, usize)> = Vec::new();
        loop {
            match plan {
                Plan::Store => {
                    let t = self.targets(a, b, false);
                    if orig { self.keep_all(t) } else { self.act(pos, t) }
                    break;
                }
                Plan::StoreFirst { upto, rest } => {
                    let upto = (*upto).clamp(a + 1, b);
                    let t = self.targets(a, upto, true);
                    if orig { self.keep_all(t) } else { self.act(pos, t) }
                    if upto >= b {
                        break;
                    }
                    a = upto;
                    plan = rest;
                }
                Plan::Split { at, left, right } => {
                    let at = (*at).clamp(a + 1, b.saturating_sub(1).max(a + 1));
                    if at >= b {
                        plan = left;
                        continue;
                    }
                    let t = self.ch.bounds[at].clone();
                    if orig { self.keep_all(t) } else { self.act(pos, t) }
                    lefts.push((left, a, at));
                    a = at;
                    plan = right;
                }
            }
        }
        while let Some((left, la, lb)) = lefts.pop() {
            let lpos = self.ch.insert_at[lb - 1];
            if lpos != usize::MAX {
                self.walk(left, la, lb, lpos, false);
            }
        }
    }
}

/// Rewrites `f` according to `strat`.
pub fn apply(f: &Func, ch: &Chain, strat: &Strategy) -> Emitted {
    draft(f, ch, strat).build(f)
}

/// The rewrite of `f` according to `strat`, not built yet ([`Draft`]).
pub fn draft(f: &Func, ch: &Chain, strat: &Strategy) -> Draft {
    let nv = f.values.len();
    let mut em = Emitter { ch, keep: ch.forced.clone(), actions: Vec::new() };
    match strat {
        Strategy::Chain(plan) => {
            if !ch.is_empty() {
                em.walk(plan, 0, ch.len(), usize::MAX, true);
            }
        }
        Strategy::Keep(k) | Strategy::KeepShared(k) => {
            for (v, &b) in k.iter().enumerate().take(nv) {
                if b && !ch.mirror[v] {
                    em.keep[v] = true;
                }
            }
        }
    }
    let share_all = matches!(strat, Strategy::KeepShared(_));
    let Emitter { keep, mut actions, .. } = em;
    // Place every block as late as possible: right before the first backward
    // read of its targets, but never after a block generated later (which
    // may read what it registers), so generation order is schedule order.
    let last = f.body.len().saturating_sub(1);
    let mut next = last;
    for k in (0..actions.len()).rev() {
        let want = actions[k].1.iter().map(|v| ch.first_use[v.index()]).min().unwrap_or(usize::MAX);
        let p = want.min(next).max(actions[k].0.min(last));
        actions[k].0 = p.min(next);
        next = actions[k].0;
    }
    actions.sort_by_key(|a| a.0); // stable; already sorted
    let src = f;
    let mut out = Draft { ops: Vec::with_capacity(f.body.len() + f.body.len() / 2), operands: Vec::new(), new_values: Vec::new(), nv, clones: 0, on_demand: 0, fused: ch.fused };
    let mut env: Vec<Option<ValueId>> = (0..nv).map(|v| if keep[v] { Some(ValueId(v as u32)) } else { None }).collect();
    let mut b = Builder { src, ch, out: &mut out, env: &mut env, local: vec![None; nv], mark: vec![false; nv], clones: 0, share_all };
    let mut on_demand = 0usize;
    let mut ai = 0usize;
    let mut operands: Vec<ValueId> = Vec::new();
    for (i, op) in src.body.iter().enumerate() {
        while ai < actions.len() && actions[ai].0 <= i {
            b.block(&actions[ai].1);
            ai += 1;
        }
        if ch.is_fwd[i] {
            b.out.push(i, false, &op.operands, op.result);
            continue;
        }
        operands.clear();
        operands.extend_from_slice(&op.operands);
        for k in 0..operands.len() {
            let v = operands[k];
            if !ch.fwd_val[v.index()] {
                continue;
            }
            if b.env[v.index()].is_none() {
                b.block(&[v]);
                on_demand += 1;
            }
            if let Some(c) = b.env[v.index()] {
                operands[k] = c;
            }
        }
        b.out.push(i, false, &operands, op.result);
    }
    out.clones = b.clones;
    out.on_demand = on_demand;
    out
}

/// One op of a [`Draft`]: a copy of op `src` of the source function (a
/// `ck.recompute` clone when `clone`), with its operands at
/// `Draft::operands[at..at + len]` and its result.
#[derive(Clone, Copy, Debug)]
struct DraftOp {
    src: u32,
    clone: bool,
    at: u32,
    len: u32,
    result: Option<ValueId>,
}

/// A rewritten body before it is built: which source op each op copies,
/// with which operands and result, and the values the clones define. A
/// candidate plan is measured on it ([`Draft::temp_peak`]) by the same
/// liveness code as a built function, without building one: remat builds
/// only the plan it picks ([`Draft::build`]).
#[derive(Clone, Debug)]
pub struct Draft {
    ops: Vec<DraftOp>,
    operands: Vec<ValueId>,
    /// The source value each value the rewrite creates recomputes (ids from `nv` on).
    new_values: Vec<ValueId>,
    /// Values of the source function.
    nv: usize,
    pub clones: usize,
    pub on_demand: usize,
    /// Measure it fused ([`Chain::fused`]).
    pub fused: bool,
}

impl Draft {
    fn push(&mut self, src: usize, clone: bool, operands: &[ValueId], result: Option<ValueId>) {
        let at = self.operands.len() as u32;
        self.operands.extend_from_slice(operands);
        self.ops.push(DraftOp { src: src as u32, clone, at, len: operands.len() as u32, result });
    }

    /// A new value recomputing source value `r`.
    fn new_value(&mut self, r: ValueId) -> ValueId {
        let v = ValueId((self.nv + self.new_values.len()) as u32);
        self.new_values.push(r);
        v
    }

    /// Builds the rewritten function of `f` (the function the draft was
    /// made from): the clones' values and ops, then [`fix_inplace`].
    pub fn build(&self, f: &Func) -> Emitted {
        let mut out = with_body(f, Vec::with_capacity(self.ops.len()));
        out.values.reserve(self.new_values.len());
        for &r in &self.new_values {
            let data = &f.values[r.index()];
            out.values.push(ValueData { name: format!("{}_rc", data.name), ty: data.ty.clone() });
        }
        for d in &self.ops {
            let op = &f.body[d.src as usize];
            let operands = &self.operands[d.at as usize..(d.at + d.len) as usize];
            if d.clone {
                let mut attrs = op.attrs.clone();
                attrs.remove(ATTR_MIRROR);
                attrs.remove(ATTR_CHECKPOINT);
                attrs.remove(ATTR_OFFSET);
                attrs.insert(ATTR_RECOMPUTE.to_string(), Attr::Unit);
                out.body.push(Op { kind: op.kind, operands: operands.to_vec(), result: d.result, attrs, loc: op.loc.clone() });
            } else {
                let mut o = op.clone();
                if o.operands != operands {
                    o.operands.copy_from_slice(operands);
                }
                out.body.push(o);
            }
        }
        let (stripped, added) = fix_inplace(&mut out);
        Emitted { func: out, clones: self.clones, on_demand: self.on_demand, inplace_stripped: stripped, inplace_added: added, fused: self.fused }
    }

    /// temp_peak_bytes of the rewritten function ([`Emitted::temp_peak`]),
    /// measured on the draft when the function runs unfused.
    pub fn temp_peak(&self, f: &Func) -> u64 {
        self.live_bytes(f).1.into_iter().max().unwrap_or(0)
    }

    /// Liveness and temp live bytes per op of the rewritten function (as
    /// measured: fused again when it runs fused), on the draft itself when
    /// nothing in it is fused (remat plans a fused function unfused and
    /// measures its plans fused again: built).
    pub fn live_bytes(&self, f: &Func) -> (crate::analysis::Liveness, Vec<u64>) {
        if self.fused || f.body.iter().any(|o| o.has_attr(ckopt_ir::ops::ATTR_FUSION)) {
            let em = self.build(f);
            let g = em.measured();
            let live = liveness(&g);
            let tl = crate::analysis::live_bytes_timeline(&g, &live, false);
            return (live, tl);
        }
        let view = DraftBody { f, d: self, marks: None };
        let (marks, _, _) = fixed_marks(&view, |i| self.ops[i].clone || f.body[self.ops[i].src as usize].has_attr(ATTR_RECOMPUTE));
        let view = DraftBody { f, d: self, marks: Some(&marks) };
        let live = liveness_of(&view, &Fusion::default());
        let tl = crate::analysis::liveness::live_bytes_timeline_of(&view, &live, false);
        (live, tl)
    }

    /// Flops of the ops marked `ck.recompute` ([`Emitted::recompute_flops`]).
    pub fn recompute_flops(&self, f: &Func) -> u64 {
        // A clone reads and defines values of the same types as its source
        // op, with the same attributes that count: its flops are the source's.
        self.ops
            .iter()
            .filter(|d| d.clone || f.body[d.src as usize].has_attr(ATTR_RECOMPUTE))
            .map(|d| op_flops(f, &f.body[d.src as usize]))
            .fold(0u64, u64::saturating_add)
    }
}

/// (temp peak, recompute flops) of the plan `strat`, measured without
/// building the rewritten function when it runs unfused.
pub fn measure(f: &Func, ch: &Chain, strat: &Strategy) -> (u64, u64) {
    let d = draft(f, ch, strat);
    (d.temp_peak(f), d.recompute_flops(f))
}

/// A [`Draft`] seen as a [`Body`] (with the in-place marks `fix_inplace`
/// would leave, when given).
struct DraftBody<'a> {
    f: &'a Func,
    d: &'a Draft,
    marks: Option<&'a [Option<i64>]>,
}

impl Body for DraftBody<'_> {
    fn num_values(&self) -> usize {
        self.d.nv + self.d.new_values.len()
    }
    fn num_ops(&self) -> usize {
        self.d.ops.len()
    }
    fn operands(&self, i: usize) -> &[ValueId] {
        let d = self.d.ops[i];
        &self.d.operands[d.at as usize..(d.at + d.len) as usize]
    }
    fn result(&self, i: usize) -> Option<ValueId> {
        self.d.ops[i].result
    }
    fn kind(&self, i: usize) -> OpKind {
        self.f.body[self.d.ops[i].src as usize].kind
    }
    fn inplace(&self, i: usize) -> Option<i64> {
        match self.marks {
            Some(m) => m[i],
            None => self.f.body[self.d.ops[i].src as usize].int_attr(ATTR_INPLACE),
        }
    }
    fn ty(&self, v: ValueId) -> &TensorType {
        let v = if v.index() < self.d.nv { v } else { self.d.new_values[v.index() - self.d.nv] };
        self.f.ty(v)
    }
    fn params(&self) -> &[Param] {
        &self.f.params
    }
}


/// `f` with another body (everything else cloned; the body never is).
pub fn with_body(f: &Func, body: Vec<Op>) -> Func {
    Func {
        name: f.name.clone(),
        params: f.params.clone(),
        result_types: f.result_types.clone(),
        body,
        attrs: f.attrs.clone(),
        values: f.values.clone(),
        loc: f.loc.clone(),
    }
}

struct Builder<'a> {
    src: &'a Func,
    ch: &'a Chain,
    out: &'a mut Draft,
    env: &'a mut Vec<Option<ValueId>>,
    local: Vec<Option<ValueId>>,
    mark: Vec<bool>,
    clones: usize,
    /// Register every needed value a block clones, not only its targets.
    share_all: bool,
}

impl Builder<'_> {
    /// Emits clones producing `targets` from what is available; registers the targets.
    fn block(&mut self, targets: &[ValueId]) {
        let mut list: Vec<usize> = Vec::new();
        let mut touched: Vec<ValueId> = Vec::new();
        let mut stack: Vec<ValueId> = Vec::new();
        for &t in targets {
            if self.ch.fwd_val[t.index()] && self.env[t.index()].is_none() {
                stack.push(t);
            }
        }
        while let Some(v) = stack.pop() {
            if self.mark[v.index()] {
                continue;
            }
            self.mark[v.index()] = true;
            touched.push(v);
            let Some(d) = self.ch.def[v.index()] else { continue };
            list.push(d);
            for &u in &self.src.body[d].operands {
                if self.ch.fwd_val[u.index()] && self.env[u.index()].is_none() && !self.mark[u.index()] {
                    stack.push(u);
                }
            }
        }
        list.sort_unstable();
        let mut operands: Vec<ValueId> = Vec::new();
        for d in list {
            let op = &self.src.body[d];
            let Some(r) = op.result else { continue };
            operands.clear();
            operands.extend(op.operands.iter().map(|&u| self.local[u.index()].or(self.env[u.index()]).unwrap_or(u)));
            let nr = self.out.new_value(r);
            self.out.push(d, true, &operands, Some(nr));
            self.local[r.index()] = Some(nr);
            self.clones += 1;
        }
        // A cheap mirror value computed from arguments only (a cast or
        // broadcast of a parameter) is recomputed right before each use and
        // dies at once, unless it is this block's only target.
        let cheap = |i: usize| self.ch.mirror[i] && self.ch.arg_only[i];
        for &t in targets {
            if let Some(c) = self.local[t.index()]
                && (!cheap(t.index()) || targets.len() == 1)
            {
                self.env[t.index()] = Some(c);
            }
        }
        // A `ck.mirror` region is recomputed once per backward region: the
        // needed mirror values this block produced on the way stay available
        // to later backward reads (instead of one recomputation per read).
        // A cheap value computed from arguments alone (autocast's cast of a
        // parameter, a bias broadcast) is not shared: recomputing it again
        // costs one cheap op and no other recomputation, while keeping it
        // would hold it across the region.
        for &v in &touched {
            let i = v.index();
            let cheap_from_args = self.ch.arg_only[i]
                || self.ch.def[i].is_some_and(|d| {
                    let op = &self.src.body[d];
                    !op.kind.is_compute_heavy() && op.operands.iter().all(|u| !self.ch.fwd_val[u.index()])
                });
            if self.ch.needed[i] && !cheap_from_args && (self.share_all || self.ch.mirror[i])
                && let Some(c) = self.local[i]
            {
                self.env[i] = Some(c);
            }
        }
        for v in touched {
            self.mark[v.index()] = false;
            self.local[v.index()] = None;
        }
    }
}

/// Whether op `i` may write its result into operand `n` given the last use
/// of every value in the final schedule: the rule of
/// `inplace::operand_is_overwritable` (capable kind, op-defined or donated
/// operand of the result's size, read by nothing later, not returned).
fn inplace_ok<B: Body + ?Sized>(f: &B, i: usize, n: usize, def: &[Option<usize>], last_use: &[usize], returned: &[bool]) -> bool {
    let (Some(r), Some(&v)) = (f.result(i), f.operands(i).get(n)) else { return false };
    let donated = || f.params().iter().any(|p| p.value == v && p.attrs.contains_key(ckopt_ir::ops::ATTR_DONATE));
    crate::inplace::inplace_capable(f.kind(i))
        && def[v.index()].map_or_else(donated, |d| d < i)
        && f.ty(v).bytes() == f.ty(r).bytes()
        && last_use[v.index()] == i
        && !returned[v.index()]
}

/// The `ck.inplace` mark of every op after [`fix_inplace`], with how many
/// marks it drops and adds; `recompute(i)`: op `i` is a `ck.recompute` clone.
fn fixed_marks<B: Body + ?Sized>(f: &B, recompute: impl Fn(usize) -> bool) -> (Vec<Option<i64>>, usize, usize) {
    let nv = f.num_values();
    let mut def: Vec<Option<usize>> = vec![None; nv];
    let mut last_use = vec![usize::MAX; nv];
    for i in 0..f.num_ops() {
        if let Some(r) = f.result(i) {
            def[r.index()] = Some(i);
        }
        for &o in f.operands(i) {
            last_use[o.index()] = i;
        }
    }
    let mut returned = vec![false; nv];
    for &r in f.returned() {
        returned[r.index()] = true;
    }
    let mut stripped = 0;
    let mut added = 0;
    let mut claimed = vec![false; nv];
    let mut marks = Vec::with_capacity(f.num_ops());
    for i in 0..f.num_ops() {
        let mut mark = f.inplace(i);
        if let Some(n) = mark {
            let ok = usize::try_from(n).ok().is_some_and(|n| {
                inplace_ok(f, i, n, &def, &last_use, &returned) && !claimed[f.operands(i)[n].index()]
            });
            if ok {
                claimed[f.operands(i)[n as usize].index()] = true;
            } else {
                mark = None;
                stripped += 1;
            }
        } else if recompute(i) && crate::inplace::inplace_capable(f.kind(i)) {
            let pick = (0..f.operands(i).len()).find(|&n| {
                inplace_ok(f, i, n, &def, &last_use, &returned) && !claimed[f.operands(i)[n].index()]
            });
            if let Some(n) = pick {
                claimed[f.operands(i)[n].index()] = true;
                mark = Some(n as i64);
                added += 1;
            }
        }
        marks.push(mark);
    }
    (marks, stripped, added)
}

/// Drops illegal `ck.inplace` marks and marks elementwise recompute clones in
/// place where legal. Returns (stripped, added).
pub fn fix_inplace(f: &mut Func) -> (usize, usize) {
    let (marks, stripped, added) = fixed_marks(&*f, |i| f.body[i].has_attr(ATTR_RECOMPUTE));
    for (op, mark) in f.body.iter_mut().zip(marks) {
        match (op.int_attr(ATTR_INPLACE), mark) {
            (Some(_), None) => {
                op.attrs.remove(ATTR_INPLACE);
            }
            (None, Some(n)) => {
                op.attrs.insert(ATTR_INPLACE.to_string(), Attr::Int(n));
            }
            _ => {}
        }
    }
    (stripped, added)
}
