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

/// Checks one function's plan; `Err` lists every violation found.
pub fn check_func(f: &Func, align: u64) -> Result<(), Diags> {
    let mut diags = Diags::new();
    let err = |loc: &ckopt_ir::Loc, m: String| Diag::error(loc.clone(), format!("memplan checker: {m}"));
    if align == 0 || !align.is_power_of_two() {
        return Err(Diags::from(err(&f.loc, format!("alignment {align} is not a power of two"))));
    }
    let Some(arena) = f.attrs.get(ATTR_ARENA_BYTES).and_then(|a| a.as_int()).and_then(|v| u64::try_from(v).ok())
    else {
        return Err(Diags::from(err(&f.loc, format!("@{} has no valid '{ATTR_ARENA_BYTES}'", f.name))));
    };
    let nv = f.values.len();
    let mut def: Vec<Option<usize>> = vec![None; nv];
    let mut last: Vec<Option<usize>> = vec![None; nv];
    let mut returned = vec![false; nv];
    for (i, op) in f.body.iter().enumerate() {
        for &o in &op.operands {
            if o.index() < nv {
                last[o.index()] = Some(i);
            }
        }
        if let Some(r) = op.result
            && r.index() < nv
        {
            def[r.index()] = Some(i);
        }
        if op.kind == OpKind::Return {
            for &o in &op.operands {
                if o.index() < nv {
                    returned[o.index()] = true;
                }
            }
        }
    }
    // Fusion groups, derived here from the marks: a group is a maximal run of
    // consecutive ops with equal `ck.fusion`; it runs as one step, so its
    // values are defined at its first op and its operands read at its last.
    let mut span: Vec<(usize, usize)> = (0..f.body.len()).map(|i| (i, i)).collect();
    let mut i = 0;
    while i < f.body.len() {
        let id = f.body[i].int_attr(ATTR_FUSION);
        let mut j = i;
        while id.is_some() && j + 1 < f.body.len() && f.body[j + 1].int_attr(ATTR_FUSION) == id {
            j += 1;
        }
        span[i..=j].fill((i, j));
        i = j + 1;
    }
    // Internal: defined in a group, read only inside it, not returned.
    let mut internal = vec![false; nv];
    for op in &f.body {
        if let Some(r) = op.result
            && r.index() < nv
            && op.has_attr(ATTR_FUSION)
        {
            internal[r.index()] = !returned[r.index()];
        }
    }
    for (i, op) in f.body.iter().enumerate() {
        for &o in &op.operands {
            if o.index() < nv && internal[o.index()] && def[o.index()].is_some_and(|d| span[d] != span[i]) {
                internal[o.index()] = false;
            }
        }
    }
    let mut kdef: Vec<Option<usize>> = vec![None; nv];
    let mut klast: Vec<Option<usize>> = vec![None; nv];
    for (i, op) in f.body.iter().enumerate() {
        for &o in &op.operands {
            if o.index() < nv {
                klast[o.index()] = Some(klast[o.index()].map_or(span[i].1, |x| x.max(span[i].1)));
            }
        }
        if let Some(r) = op.result
            && r.index() < nv
        {
            kdef[r.index()] = Some(span[i].0);
        }
    }
    let donated: Vec<bool> = {
        let mut d = vec![false; nv];
        for p in &f.params {
            if p.value.index() < nv && p.attrs.contains_key(ATTR_DONATE) {
                d[p.value.index()] = true;
            }
        }
        d
    };
    // Where an in-place write lands: the operand, or (through internal
    // values) the stored value or donated argument it inherits from.
    let mut home: Vec<Option<ValueId>> = vec![None; nv];
    for op in &f.body {
        let (Some(r), Some(n)) = (op.result, op.int_attr(ATTR_INPLACE)) else { continue };
        let Some(&o) = usize::try_from(n).ok().and_then(|n| op.operands.get(n)) else { continue };
        if o.index() < nv && r.index() < nv && f.ty(o).byte_size() == f.ty(r).byte_size() {
            // Over an internal value with no stored ancestor: nothing is overwritten.
            home[r.index()] = if internal[o.index()] { home[o.index()] } else { Some(o) };
        }
    }
    let in_arg = |v: ValueId| home[v.index()].is_some_and(|h| def[h.index()].is_none() && donated[h.index()]);
    // 2. placement of each stored value.
    let mut place: Vec<Option<(u64, u64)>> = vec![None; nv]; // (offset, size)
    for op in &f.body {
        let Some(r) = op.result else { continue };
        if internal[r.index()] || in_arg(r) {
            if op.has_attr(ATTR_OFFSET) {
                let what = if internal[r.index()] { "internal to its fusion group" } else { "in a donated argument's buffer" };
                diags.push(err(&op.loc, format!("%{} is {what} but has a '{ATTR_OFFSET}'", f.name_of(r))));
            }
            continue;
        }
        let name = f.name_of(r);
        let Some(size) = f.ty(r).byte_size() else {
            diags.push(err(&op.loc, format!("%{name} has an unknown size")));
            continue;
        };
        let off = match op.int_attr(ATTR_OFFSET).map(u64::try_from) {
            Some(Ok(o)) => o,
            _ => {
                diags.push(err(&op.loc, format!("%{name} has no valid '{ATTR_OFFSET}'")));
                continue;
            }
        };
        if off % align != 0 {
            diags.push(err(&op.loc, format!("%{name} at offset {off} is not aligned to {align}")));
        }
        match off.checked_add(size) {
            Some(end) if end <= arena => {}
            _ => diags.push(err(&op.loc, format!("%{name} at [{off}, {off}+{size}) exceeds the arena of {arena} bytes"))),
        }
        place[r.index()] = Some((off, size));
    }
    // 3. in-place marks: `inplace_src[i]` = the operand op i may overwrite.
    let mut inplace_src: Vec<Option<ValueId>> = vec![None; f.body.len()];
    for (i, op) in f.body.iter().enumerate() {
        let Some(n) = op.int_attr(ATTR_INPLACE) else { continue };
        let (Some(r), Some(&o)) = (op.result, usize::try_from(n).ok().and_then(|n| op.operands.get(n))) else {
            diags.push(err(&op.loc, format!("'{ATTR_INPLACE}' = {n} names no operand")));
            continue;
        };
        let why = if !may_write_over_operand(op.kind) {
            Some(format!("'ck.{}' cannot write over its operand", op.kind.name()))
        } else if def[o.index()].is_none() && !donated[o.index()] {
            Some(format!("operand %{} is a function argument not marked ck.donate", f.name_of(o)))
        } else if !group_reads_stepwise(f, i, o, &span) {
            Some(format!("its fusion group reads %{} (or a value computed from it) at other elements", f.name_of(o)))
        } else if returned[o.index()] {
            Some(format!("operand %{} is a function result", f.name_of(o)))
        } else if last[o.index()] != Some(i) {
            Some(format!("operand %{} is read again later", f.name_of(o)))
        } else if f.ty(o).byte_size() != f.ty(r).byte_size() {
            Some(format!("operand %{} has a different size", f.name_of(o)))
        } else if !internal[r.index()]
            && !in_arg(r)
            && home[r.index()].is_some_and(|h| place[h.index()].map(|p| p.0) != place[r.index()].map(|p| p.0))
        {
            Some(format!("result %{} is not at the offset of operand %{}", f.name_of(r), f.name_of(o)))
        } else {
            None
        };
        match why {
            Some(w) => diags.push(err(&op.loc, format!("illegal in-place: {w}"))),
            None => inplace_src[i] = home[r.index()],
        }
    }
    // 4. sweep: live values by offset, pairwise disjoint.
    let mut ends: Vec<Vec<ValueId>> = vec![Vec::new(); f.body.len() + 1];
    for (v, d) in kdef.iter().enumerate() {
        if let Some(d) = *d {
            let e = klast[v].unwrap_or(span[d].1).max(span[d].1);
            ends[e].push(ValueId(v as u32));
        }
    }
    let mut active: BTreeMap<u64, (u64, ValueId)> = BTreeMap::new(); // offset -> (end, value)
    let remove = |active: &mut BTreeMap<u64, (u64, ValueId)>, v: ValueId, place: &[Option<(u64, u64)>]| {
        if let Some((off, _)) = place[v.index()]
            && active.get(&off).is_some_and(|&(_, w)| w == v)
        {
            active.remove(&off);
        }
    };
    // Ops of a group all insert at the group's first op (kernel-level time).
    let mut order: Vec<usize> = (0..f.body.len()).collect();
    order.sort_by_key(|&i| (span[i].0, i));
    let mut t = 0usize;
    for i in order {
        let op = &f.body[i];
        while t < span[i].0 {
            for &v in &ends[t] {
                remove(&mut active, v, &place);
            }
            t += 1;
        }
        let Some(r) = op.result else { continue };
        let Some((off, size)) = place[r.index()] else { continue };
        if let Some(o) = inplace_src[i] {
            remove(&mut active, o, &place);
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
            let vd = kdef[v.index()].unwrap_or(0);
            let vl = klast[v.index()].unwrap_or(vd).max(vd);
            let d = err(
                &op.loc,
                format!(
                    "%{} (live at ops {i}..={}) at bytes [{off}, {end}) overlaps %{} (live at ops {vd}..={vl}) at bytes [{s}, {e})",
                    f.name_of(r),
                    klast[r.index()].unwrap_or(i).max(i),
                    f.name_of(v)
                ),
            )
            .with_note(Diag::note(f.body[vd].loc.clone(), format!("%{} is defined here", f.name_of(v))));
            diags.push(d);
            continue;
        }
        active.insert(off, (end, r));
    }
    diags.into_result()
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
