//! Small rewriting helpers shared by the local passes (canonicalize, cse, dce).
//!
//! - [`Replacements`]: a value-to-value substitution built while walking a
//!   body in schedule order. A replacement always points to a value defined
//!   earlier (or an argument), so chains are finite and resolving them keeps
//!   every use after its definition.
//! - [`remove_dead_ops`]: drops ops whose result no kept op reads (never
//!   `ck.return`), keeping the schedule order of the rest.
//! - [`compact_values`]: drops values that no argument, op result or operand
//!   refers to any more, so printed names stay stable and short after a pass
//!   removed ops.
//!
//! - [`ReplaceGuard`]: which values may stand in for another. Replacing `v`
//!   by `w` makes `w` live longer; that is only safe when no op writes into
//!   `w`'s buffer (`w` is not the `ck.inplace` operand of any op), when no op
//!   writes into `v`'s buffer (it would then overwrite `w`, which other ops
//!   may still read), and when the function has no memplan placement yet
//!   (`ck.offset`, `ck.arena_bytes`), whose proof assumed the old lifetimes.
//!
//! Complexity: all O(ops + values).

use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_OFFSET};
use ckopt_ir::{Func, OpKind, ValueId};

/// Which values may replace others without breaking in-place or memplan
/// decisions already recorded in the IR.
#[derive(Clone, Debug)]
pub struct ReplaceGuard {
    planned: bool,
    clobbered: Vec<bool>,
}

impl ReplaceGuard {
    pub fn new(f: &Func) -> Self {
        let planned = f.attrs.contains_key(ATTR_ARENA_BYTES) || f.body.iter().any(|o| o.has_attr(ATTR_OFFSET));
        let mut clobbered = vec![false; f.values.len()];
        for op in &f.body {
            let target = op
                .int_attr(ATTR_INPLACE)
                .and_then(|n| usize::try_from(n).ok())
                .and_then(|n| op.operands.get(n));
            if let Some(c) = target.and_then(|v| clobbered.get_mut(v.index())) {
                *c = true;
            }
        }
        ReplaceGuard { planned, clobbered }
    }
    /// Whether `w` may get more uses (extending its life).
    pub fn may_extend(&self, w: ValueId) -> bool {
        !self.planned && !self.is_clobbered(w)
    }
    /// Whether the uses of `v` may be redirected to `w`.
    pub fn may_replace(&self, v: ValueId, w: ValueId) -> bool {
        self.may_extend(w) && !self.is_clobbered(v)
    }
    fn is_clobbered(&self, v: ValueId) -> bool {
        self.clobbered.get(v.index()).copied().unwrap_or(true)
    }
}

/// A substitution of values, resolved transitively.
#[derive(Clone, Debug)]
pub struct Replacements {
    to: Vec<ValueId>,
}

impl Replacements {
    /// The identity substitution over `f`'s values.
    pub fn new(f: &Func) -> Self {
        Replacements { to: (0..f.values.len() as u32).map(ValueId).collect() }
    }
    /// Replaces every later use of `from` with `to` (`to` must be defined before
    /// the uses; it normally is, being an operand of the op that defined `from`).
    pub fn replace(&mut self, from: ValueId, to: ValueId) {
        let to = self.get(to);
        if let Some(slot) = self.to.get_mut(from.index()) {
            *slot = to;
        }
    }
    /// The value that now stands for `v`.
    pub fn get(&self, mut v: ValueId) -> ValueId {
        // Every replacement target was resolved when it was recorded, so one
        // step suffices; the loop guards against hand-built cycles anyway.
        for _ in 0..self.to.len() {
            match self.to.get(v.index()) {
                Some(&w) if w != v => v = w,
                _ => break,
            }
        }
        v
    }
    /// Rewrites operands in place.
    pub fn apply(&self, operands: &mut [ValueId]) {
        for o in operands {
            *o = self.get(*o);
        }
    }
    /// Grows the table after new values were created in the arena.
    pub fn grow(&mut self, f: &Func) {
        let n = self.to.len() as u32;
        self.to.extend((n..f.values.len() as u32).map(ValueId));
    }
}

/// Removes ops whose result is never read by a kept op; `ck.return` is kept.
/// Returns the number of ops removed. Every ck op is pure (dropout's mask is a
/// function of its seed), so removing an unread op never changes a result.
pub fn remove_dead_ops(f: &mut Func) -> usize {
    let mut used = vec![false; f.values.len()];
    let mut keep = vec![false; f.body.len()];
    for (i, op) in f.body.iter().enumerate().rev() {
        let live = op.kind == OpKind::Return || op.result.is_some_and(|r| used.get(r.index()).copied().unwrap_or(true));
        if live {
            keep[i] = true;
            for o in &op.operands {
                if let Some(u) = used.get_mut(o.index()) {
                    *u = true;
                }
            }
        }
    }
    let before = f.body.len();
    let mut i = 0;
    f.body.retain(|_| {
        i += 1;
        keep[i - 1]
    });
    before - f.body.len()
}

/// Drops values nothing refers to and renumbers the rest, keeping their order.
pub fn compact_values(f: &mut Func) {
    let n = f.values.len();
    let mut referenced = vec![false; n];
    let mut mark = |v: ValueId| {
        if let Some(r) = referenced.get_mut(v.index()) {
            *r = true;
        }
    };
    for p in &f.params {
        mark(p.value);
    }
    for op in &f.body {
        op.operands.iter().copied().for_each(&mut mark);
        if let Some(r) = op.result {
            mark(r);
        }
    }
    if referenced.iter().all(|&r| r) {
        return;
    }
    let mut new_id = vec![None; n];
    let mut values = Vec::with_capacity(n);
    for (i, v) in std::mem::take(&mut f.values).into_iter().enumerate() {
        if referenced[i] {
            new_id[i] = Some(ValueId(values.len() as u32));
            values.push(v);
        }
    }
    f.values = values;
    // Every id below was marked referenced, so the lookup always succeeds;
    // out-of-range ids (hand-built invalid IR) are left for the verifier.
    let map = |v: ValueId| new_id.get(v.index()).copied().flatten().unwrap_or(v);
    for p in &mut f.params {
        p.value = map(p.value);
    }
    for op in &mut f.body {
        for o in &mut op.operands {
            *o = map(*o);
        }
        op.result = op.result.map(map);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Attrs, Loc, TensorType};

    /// Dead ops go, their operands die with them transitively, return stays.
    #[test]
    fn dead_chains_are_removed_transitively() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![4]), false);
        let a = f.push(OpKind::Neg, &[x], Attrs::new(), None, "a", Loc::unknown()).unwrap();
        let _b = f.push(OpKind::Exp, &[a], Attrs::new(), None, "b", Loc::unknown()).unwrap();
        let c = f.push(OpKind::Relu, &[x], Attrs::new(), None, "c", Loc::unknown()).unwrap();
        f.push_return(&[c], Loc::unknown());
        assert_eq!(remove_dead_ops(&mut f), 2);
        assert_eq!(f.body.len(), 2);
        compact_values(&mut f);
        assert_eq!(f.values.len(), 2);
        assert_eq!(f.name_of(f.body[0].result.unwrap()), "c");
        assert!(ckopt_ir::verify_module(&ckopt_ir::Module { funcs: vec![f] }).is_ok());
    }

    /// Replacement chains resolve to the first value.
    #[test]
    fn replacements_resolve_chains() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![4]), false);
        let a = f.push(OpKind::Neg, &[x], Attrs::new(), None, "a", Loc::unknown()).unwrap();
        let b = f.push(OpKind::Neg, &[a], Attrs::new(), None, "b", Loc::unknown()).unwrap();
        let mut r = Replacements::new(&f);
        r.replace(a, x);
        r.replace(b, a);
        assert_eq!(r.get(b), x);
    }
}
