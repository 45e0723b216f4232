//! The memplan checker: an independent proof that an arena plan is sound
//! (after regalloc2's `checker.rs`: the allocator's output is re-verified by
//! code that shares nothing with it but the IR).
//!
//! It reads only the IR (`ck.offset`, `ck.inplace`, `ck.arena_bytes`) and
//! recomputes value lifetimes itself: value-level, a value defined by op `d`
//! and last read by op `u` is live on `[d, u]` (on `[d, d]` if never read).
//! It proves, accumulating one error per offending op:
//! 1. the function has a non-negative `ck.arena_bytes`;
//! 2. every op-defined value has a `ck.offset`, a multiple of `align`, and
//!    `offset + size <= arena_bytes` (no overflow);
//! 3. every `ck.inplace = N` mark is legal: op kind elementwise or reshape,
//!    operand N op-defined, same byte size, not a function result, its last
//!    reader is this op; and the result sits at the operand's offset;
//! 4. no two values whose live ranges overlap share a byte, except a legal
//!    in-place result and its operand at that op (the operand's last use).
//!
//! Fusion groups (`ck.fusion`, re-derived here from the marks): values
//! internal to a group need no offset and are not stored; a group is one
//! step (its values defined at its first op, its operands read at its last);
//! an in-place write through internal values lands where the first stored
//! ancestor (or donated argument) lives. In-place writes into a
//! `{ck.donate}` argument are legal at the argument's last reader, and such
//! results need no offset.
//!
//! Point 4 is a sweep over the schedule with the live values kept in a
//! `BTreeMap` by offset: they are pairwise disjoint (checked on insertion),
//! so a new value only needs comparing with its two neighbours.
//! Complexity: O(n log n) in ops + values.
//!
//! Used after memplan in debug builds, in every memplan test, and by the
//! arena interpreter's property tests.

use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_DONATE, ATTR_FUSION, ATTR_INPLACE, ATTR_OFFSET};
use ckopt_ir::{Diag, Diags, Func, Module, OpKind, ValueId};
use std::collections::BTreeMap;

/// Op kinds whose kernels may write their result over an operand: result
/// element i depends only on element i of the operands (and reshape, a
/// relabelling of the same bytes). Kept separate from `inplace.rs` on purpose.
fn may_write_over_operand(k: OpKind) -> bool {
    use OpKind::*;
    matches!(
        k,
        Neg | Exp | Log | Tanh | Sigmoid | Relu | Sqrt | Rsqrt | Erf | Scale | Dropout | Add | Sub | Mul | Div | Max
            | ReluGrad
            | Reshape
            | Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select | Cast
    )
}

/// Checks the plan of every function.
pub fn check_module(m: &Module, align: u64) -> Result<(), Diags> {
    let mut all = Diags::new();
    for f in &m.funcs {
        if let Err(d) = check_func(f, align) {
            all.0.extend(d.0);
        }
    }
    all.into_result()
}

/// What the checker derives from the IR alone, phase by phase.
struct Facts<'f> {
    f: &'f Func,
    align: u64,
    arena: u64,
    /// Value level: defining op, last reader, returned.
    def: Vec<Option<usize>>,
    last: Vec<Option<usize>>,
    returned: Vec<bool>,
    /// Kernel level: the fusion group (first, last op) of each op, the
    /// values internal to a group, and each value's first/last kernel step.
    span: Vec<(usize, usize)>,
    internal: Vec<bool>,
    kdef: Vec<Option<usize>>,
    klast: Vec<Option<usize>>,
    /// Donated arguments, and where each in-place write lands.
    donated: Vec<bool>,
    home: Vec<Option<ValueId>>,
    /// Offset and size of each stored value.
    place: Vec<Option<(u64, u64)>>,
    /// Per op: the value its in-place write may overwrite (legal marks only).
    inplace_src: Vec<Option<ValueId>>,
    diags: Diags,
}

fn err(loc: &ckopt_ir::Loc, m: String) -> Diag {
    Diag::error(loc.clone(), format!("memplan checker: {m}"))
}

/// Checks one function's plan; `Err` lists every violation found. Phases:
/// value-level lifetimes, fusion groups and kernel-level lifetimes,
/// in-place homes, placement, in-place legality, the overlap sweep.
pub fn check_func(f: &Func, align: u64) -> Result<(), Diags> {
    if align == 0 || !align.is_power_of_two() {
        return Err(Diags::from(err(&f.loc, format!("alignment {align} is not a power of two"))));
    }
    let Some(arena) = f.attrs.get(ATTR_ARENA_BYTES).and_then(|a| a.as_int()).and_then(|v| u64::try_from(v).ok())
    else {
        return Err(Diags::from(err(&f.loc, format!("@{} has no valid '{ATTR_ARENA_BYTES}'", f.name))));
    };
    let mut c = Facts::new(f, align, arena);
    c.value_lifetimes();
    c.fusion_groups();
    c.inplace_homes();
    c.placement();
    c.inplace_legality();
    c.overlap_sweep();
    c.diags.into_result()
}

impl<'f> Facts<'f> {
    fn new(f: &'f Func, align: u64, arena: u64) -> Facts<'f> {
        let (nv, nops) = (f.values.len(), f.body.len());
        Facts {
            f,
            align,
            arena,
            def: vec![None; nv],
            last: vec![None; nv],
            returned: vec![false; nv],
            span: (0..nops).map(|i| (i, i)).collect(),
            internal: vec![false; nv],
            kdef: vec![None; nv],
            klast: vec![None; nv],
            donated: vec![false; nv],
            home: vec![None; nv],
            place: vec![None; nv],
            inplace_src: vec![None; nops],
            diags: Diags::new(),
        }
    }

    fn nv(&self) -> usize {
        self.f.values.len()
    }

    /// A value defined by op `d` and last read by op `u` is live on `[d, u]`.
    fn value_lifetimes(&mut self) {
        let nv = self.nv();
        for (i, op) in self.f.body.iter().enumerate() {
            for &o in op.operands.iter().filter(|o| o.index() < nv) {
                self.last[o.index()] = Some(i);
                if op.kind == OpKind::Return {
                    self.returned[o.index()] = true;
                }
            }
            if let Some(r) = op.result.filter(|r| r.index() < nv) {
                self.def[r.index()] = Some(i);
            }
        }
        for p in self.f.params.iter().filter(|p| p.value.index() < nv) {
            self.donated[p.value.index()] = p.attrs.contains_key(ATTR_DONATE);
        }
    }

    /// Fusion groups, derived here from the marks: a group is a maximal run
    /// of consecutive ops with equal `ck.fusion`; it runs as one step, so its
    /// values are defined at its first op and its operands read at its last.
    /// Internal: defined in a group, read only inside it, not returned.
    fn fusion_groups(&mut self) {
        let (f, nv) = (self.f, self.nv());
        let mut i = 0;
        while i < f.body.len() {
            let id = f.body[i].int_attr(ATTR_FUSION);
            let mut j = i;
            while id.is_some() && j + 1 < f.body.len() && f.body[j + 1].int_attr(ATTR_FUSION) == id {
                j += 1;
            }
            self.span[i..=j].fill((i, j));
            i = j + 1;
        }
        for op in &f.body {
            if let Some(r) = op.result.filter(|r| r.index() < nv && op.has_attr(ATTR_FUSION)) {
                self.internal[r.index()] = !self.returned[r.index()];
            }
        }
        for (i, op) in f.body.iter().enumerate() {
            for &o in op.operands.iter().filter(|o| o.index() < nv) {
                if self.def[o.index()].is_some_and(|d| self.span[d] != self.span[i]) {
                    self.internal[o.index()] = false;
                }
                let e = self.span[i].1;
                self.klast[o.index()] = Some(self.klast[o.index()].map_or(e, |x| x.max(e)));
            }
            if let Some(r) = op.result.filter(|r| r.index() < nv) {
                self.kdef[r.index()] = Some(self.span[i].0);
            }
        }
    }

    /// Where an in-place write lands: the operand, or (through internal
    /// values) the stored value or donated argument it inherits from; over
    /// an internal value with no stored ancestor nothing is overwritten.
    fn inplace_homes(&mut self) {
        let (f, nv) = (self.f, self.nv());
        for op in &f.body {
            let (Some(r), Some(n)) = (op.result, op.int_attr(ATTR_INPLACE)) else { continue };
            let Some(&o) = usize::try_from(n).ok().and_then(|n| op.operands.get(n)) else { continue };
            if o.index() < nv && r.index() < nv && f.ty(o).byte_size() == f.ty(r).byte_size() {
                self.home[r.index()] = if self.internal[o.index()] { self.home[o.index()] } else { Some(o) };
            }
        }
    }

    /// Whether `v` lives in a donated argument's buffer: its chain of
    /// in-place homes (an SGD-with-momentum update writes into the decayed
    /// velocity, which was written into the velocity argument) ends at one.
    fn in_arg(&self, v: ValueId) -> bool {
        let mut h = self.home[v.index()];
        // homes are defined before their writers: the chain is acyclic and at most nv long
        for _ in 0..self.nv() {
            let Some(x) = h else { return false };
            if self.def[x.index()].is_none() {
                return self.donated[x.index()];
            }
            h = self.home[x.index()];
        }
        false
    }

    /// Every stored value has an aligned offset inside the arena; values
    /// internal to a group or living in a donated argument have none.
    fn placement(&mut self) {
        let f = self.f;
        for op in &f.body {
            let Some(r) = op.result else { continue };
            if self.internal[r.index()] || self.in_arg(r) {
                if op.has_attr(ATTR_OFFSET) {
                    let what = if self.internal[r.index()] { "internal to its fusion group" } else { "in a donated argument's buffer" };
                    self.diags.push(err(&op.loc, format!("%{} is {what} but has a '{ATTR_OFFSET}'", f.name_of(r))));
                }
                continue;
            }
            let name = f.name_of(r);
            let Some(size) = f.ty(r).byte_size() else {
                self.diags.push(err(&op.loc, format!("%{name} has an unknown size")));
                continue;
            };
            let off = match op.int_attr(ATTR_OFFSET).map(u64::try_from) {
                Some(Ok(o)) => o,
                _ => {
                    self.diags.push(err(&op.loc, format!("%{name} has no valid '{ATTR_OFFSET}'")));
                    continue;
                }
            };
            if off % self.align != 0 {
                self.diags.push(err(&op.loc, format!("%{name} at offset {off} is not aligned to {}", self.align)));
            }
            if off.checked_add(size).is_none_or(|end| end > self.arena) {
                self.diags.push(err(&op.loc, format!("%{name} at [{off}, {off}+{size}) exceeds the arena of {} bytes", self.arena)));
            }
            self.place[r.index()] = Some((off, size));
        }
    }

    /// Every `ck.inplace` mark is legal, and the result sits where the
    /// overwritten value does.
    fn inplace_legality(&mut self) {
        let f = self.f;
        for (i, op) in f.body.iter().enumerate() {
            let Some(n) = op.int_attr(ATTR_INPLACE) else { continue };
            let (Some(r), Some(&o)) = (op.result, usize::try_from(n).ok().and_then(|n| op.operands.get(n))) else {
                self.diags.push(err(&op.loc, format!("'{ATTR_INPLACE}' = {n} names no operand")));
                continue;
            };
            let moved = !self.internal[r.index()]
                && !self.in_arg(r)
                && self.home[r.index()].is_some_and(|h| self.place[h.index()].map(|p| p.0) != self.place[r.index()].map(|p| p.0));
            let why = if !may_write_over_operand(op.kind) {
                Some(format!("'ck.{}' cannot write over its operand", op.kind.name()))
            } else if self.def[o.index()].is_none() && !self.donated[o.index()] {
                Some(format!("operand %{} is a function argument not marked ck.donate", f.name_of(o)))
            } else if !group_reads_stepwise(f, i, o, &self.span) {
                Some(format!("its fusion group reads %{} (or a value computed from it) at other elements", f.name_of(o)))
            } else if self.returned[o.index()] {
                Some(format!("operand %{} is a function result", f.name_of(o)))
            } else if self.last[o.index()] != Some(i) {
                Some(format!("operand %{} is read again later", f.name_of(o)))
            } else if f.ty(o).byte_size() != f.ty(r).byte_size() || f.ty(o).dtype.bytes() != f.ty(r).dtype.bytes() {
                Some(format!("operand %{} has a different size", f.name_of(o)))
            } else if moved {
                Some(format!("result %{} is not at the offset of operand %{}", f.name_of(r), f.name_of(o)))
            } else {
                None
            };
            match why {
                Some(w) => self.diags.push(err(&op.loc, format!("illegal in-place: {w}"))),
                None => self.inplace_src[i] = self.home[r.index()],
            }
        }
    }

    /// A sweep over the schedule (kernel steps) with the live values kept by
    /// offset: they must be pairwise disjoint (checked on insertion, so a new
    /// value is compared with its two neighbours), except a legal in-place
    /// result and the value it overwrites.
    fn overlap_sweep(&mut self) {
        let f = self.f;
        // The values whose last step is t, in value order: ends[at[t]..at[t + 1]].
        let last_step = |v: usize| self.kdef[v].map(|d| self.klast[v].unwrap_or(self.span[d].1).max(self.span[d].1));
        let mut at = vec![0usize; f.body.len() + 2];
        for v in 0..self.kdef.len() {
            if let Some(e) = last_step(v) {
                at[e + 1] += 1;
            }
        }
        for t in 1..at.len() {
            at[t] += at[t - 1];
        }
        let mut ends = vec![ValueId(0); at[at.len() - 1]];
        let mut fill = at.clone();
        for v in 0..self.kdef.len() {
            if let Some(e) = last_step(v) {
                ends[fill[e]] = ValueId(v as u32);
                fill[e] += 1;
            }
        }
        let mut active: BTreeMap<u64, (u64, ValueId)> = BTreeMap::new(); // offset -> (end, value)
        let place = &self.place;
        let remove = |active: &mut BTreeMap<u64, (u64, ValueId)>, v: ValueId| {
            if let Some((off, _)) = place[v.index()]
                && active.get(&off).is_some_and(|&(_, w)| w == v)
            {
                active.remove(&off);
            }
        };
        // Ops of a group all insert at the group's first op (kernel-level time).
        let mut order: Vec<usize> = (0..f.body.len()).collect();
        order.sort_by_key(|&i| (self.span[i].0, i));
        let mut t = 0usize;
        for i in order {
            let op = &f.body[i];
            while t < self.span[i].0 {
                for &v in &ends[at[t]..at[t + 1]] {
                    remove(&mut active, v);
                }
                t += 1;
            }
            let Some(r) = op.result else { continue };
            let Some((off, size)) = place[r.index()] else { continue };
            if let Some(o) = self.inplace_src[i] {
                remove(&mut active, o);
            }
            if size == 0 {
                continue;
            }
            let end = off + size;
            let clash = active
                .range(..=off)
                .next_back()
                .filter(|(_, (e, _))| *e > off)
                .or_else(|| active.range(off..end).next())
                .map(|(&s, &(e, v))| (s, e, v));
            if let Some((s, e, v)) = clash {
                let vd = self.kdef[v.index()].unwrap_or(0);
                let vl = self.klast[v.index()].unwrap_or(vd).max(vd);
                let d = err(
                    &op.loc,
                    format!(
                        "%{} (live at ops {i}..={}) at bytes [{off}, {end}) overlaps %{} (live at ops {vd}..={vl}) at bytes [{s}, {e})",
                        f.name_of(r),
                        self.klast[r.index()].unwrap_or(i).max(i),
                        f.name_of(v)
                    ),
                )
                .with_note(Diag::note(f.body[vd].loc.clone(), format!("%{} is defined here", f.name_of(v))));
                self.diags.push(d);
                continue;
            }
            active.insert(off, (end, r));
        }
    }
}

/// Whether the fusion group of op `i` reads `o`, and every value it computes
/// from `o`, only element by element (elementwise ops, reshape, the
/// reduction), so an in-place write over `o` cannot clobber an element the
/// kernel still needs. Re-derived here, independently of the inplace pass.
fn group_reads_stepwise(f: &Func, i: usize, o: ValueId, span: &[(usize, usize)]) -> bool {
    let (s, e) = span[i];
    if s == e {
        return true;
    }
    let mut derived = vec![o];
    for op in &f.body[s..=e] {
        if !op.operands.iter().any(|x| derived.contains(x)) {
            continue;
        }
        let reduce = matches!(op.kind, OpKind::ReduceSum | OpKind::ReduceMax);
        if !may_write_over_operand(op.kind) && !reduce {
            return false;
        }
        if let Some(r) = op.result
            && !reduce
        {
            derived.push(r);
        }
    }
    true
}
