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
//! Point 4 is a sweep over the schedule with the live values kept in a
//! `BTreeMap` by offset: they are pairwise disjoint (checked on insertion),
//! so a new value only needs comparing with its two neighbours.
//! Complexity: O(n log n) in ops + values.
//!
//! Used after memplan in debug builds, in every memplan test, and by the
//! arena interpreter's property tests.

use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_OFFSET};
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
    // 2. placement of each value.
    let mut place: Vec<Option<(u64, u64)>> = vec![None; nv]; // (offset, size)
    for op in &f.body {
        let Some(r) = op.result else { continue };
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
        } else if def[o.index()].is_none() {
            Some(format!("operand %{} is a function argument", f.name_of(o)))
        } else if returned[o.index()] {
            Some(format!("operand %{} is a function result", f.name_of(o)))
        } else if last[o.index()] != Some(i) {
            Some(format!("operand %{} is read again later", f.name_of(o)))
        } else if f.ty(o).byte_size() != f.ty(r).byte_size() {
            Some(format!("operand %{} has a different size", f.name_of(o)))
        } else if place[o.index()].map(|p| p.0) != place[r.index()].map(|p| p.0) {
            Some(format!("result %{} is not at the offset of operand %{}", f.name_of(r), f.name_of(o)))
        } else {
            None
        };
        match why {
            Some(w) => diags.push(err(&op.loc, format!("illegal in-place: {w}"))),
            None => inplace_src[i] = Some(o),
        }
    }
    // 4. sweep: live values by offset, pairwise disjoint.
    let mut ends: Vec<Vec<ValueId>> = vec![Vec::new(); f.body.len() + 1];
    for (v, d) in def.iter().enumerate() {
        if let Some(d) = *d {
            let e = last[v].unwrap_or(d).max(d);
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
    for (i, op) in f.body.iter().enumerate() {
        if i > 0 {
            for &v in &ends[i - 1] {
                remove(&mut active, v, &place);
            }
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
            let vd = def[v.index()].unwrap_or(0);
            let vl = last[v.index()].unwrap_or(vd).max(vd);
            let d = err(
                &op.loc,
                format!(
                    "%{} (live at ops {i}..={}) at bytes [{off}, {end}) overlaps %{} (live at ops {vd}..={vl}) at bytes [{s}, {e})",
                    f.name_of(r),
                    last[r.index()].unwrap_or(i).max(i),
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
