//! Fusion groups: which ops run as one kernel, and which values are never
//! materialized.
//!
//! The `fuse` pass marks ops with `ck.fusion = G`. A group is a maximal run of
//! consecutive ops (in schedule order) carrying the same `G`; the verifier
//! requires the ops of one `G` to be contiguous. A group runs as ONE kernel at
//! its position in the schedule: it reads its inputs (values defined outside
//! the group), and writes its outputs (values defined inside that are read
//! after the group or returned). Its other values are *internal*: computed
//! element by element inside the kernel, never stored, given no arena bytes.
//! Ops without `ck.fusion` are one-op kernels as before.
//!
//! A group is one of two shapes (`check_group`, used by the verifier, the
//! `fuse` pass and the kernel builder — one definition of what a kernel can
//! do):
//! - **loop** over an iteration shape S: elemental ops only (elementwise,
//!   scale, fill, broadcast, reshape, transpose, slice, dropout); every output
//!   has shape S. An internal value is evaluated at the index each consumer
//!   needs (XLA's loop fusion).
//! - **reduce**: exactly one `reduce_sum`/`reduce_max` r over input shape S
//!   with result shape R. Ops r depends on are its *prologue* (evaluated at
//!   S-indices; outputs among them have shape S and are stored as the
//!   reduction visits them); ops depending on r are its *epilogue* (shape R,
//!   evaluated once per result element; XLA's input fusion plus a small
//!   output fusion). Any other op in the group is internal and feeds only one
//!   side. This is how LayerNorm and softmax become 2-3 kernels.
//!
//! Liveness (`passes::analysis::liveness`) treats a group as one step: every
//! input is read at the group's last op, every output is defined at its
//! first op. Complexity: O(ops + values).

use crate::func::{Func, Op, ValueId};
use crate::ops::{ATTR_FUSION, OpKind};

/// One group: ops `start..=end` of the body, all with `ck.fusion = id`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    pub id: i64,
    pub start: usize,
    pub end: usize,
}

impl Group {
    pub fn ops(&self) -> std::ops::RangeInclusive<usize> {
        self.start..=self.end
    }
    pub fn len(&self) -> usize {
        self.end + 1 - self.start
    }
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// What kernel a group is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GroupShape {
    /// Elemental ops over one iteration shape (the shape of every output).
    Loop { shape: Vec<u64> },
    /// One reduction (op index `reduce`) with prologue and epilogue.
    Reduce { reduce: usize },
}

/// The fusion structure of a function.
#[derive(Clone, Debug, Default)]
pub struct Fusion {
    pub groups: Vec<Group>,
    /// Group index of each op (None when unfused).
    pub group_of: Vec<Option<usize>>,
    /// Per value: defined in a group, read only inside it, not returned.
    pub internal: Vec<bool>,
}

impl Fusion {
    /// The first and last op index of the kernel op `i` belongs to.
    pub fn span(&self, i: usize) -> (usize, usize) {
        match self.group_of.get(i).copied().flatten() {
            Some(g) => (self.groups[g].start, self.groups[g].end),
            None => (i, i),
        }
    }
    /// Whether value `v` is stored (not internal to a group).
    pub fn materialized(&self, v: ValueId) -> bool {
        !self.internal.get(v.index()).copied().unwrap_or(false)
    }
    pub fn is_fused(&self) -> bool {
        !self.groups.is_empty()
    }
}

fn fusion_id(op: &Op) -> Option<i64> {
    op.int_attr(ATTR_FUSION)
}

/// The groups of `f`: maximal runs of consecutive ops with the same `ck.fusion`.
pub fn groups(f: &Func) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for (i, op) in f.body.iter().enumerate() {
        let Some(id) = fusion_id(op) else { continue };
        match out.last_mut() {
            Some(g) if g.id == id && g.end + 1 == i => g.end = i,
            _ => out.push(Group { id, start: i, end: i }),
        }
    }
    out
}

/// Groups, the group of each op, and the internal values.
pub fn analyze(f: &Func) -> Fusion {
    let groups = groups(f);
    let mut group_of = vec![None; f.body.len()];
    if groups.is_empty() {
        // Unfused: every op its own kernel, every value stored.
        return Fusion { groups, group_of, internal: vec![false; f.values.len()] };
    }
    for (gi, g) in groups.iter().enumerate() {
        for i in g.ops() {
            group_of[i] = Some(gi);
        }
    }
    let mut internal = vec![false; f.values.len()];
    let mut def_group: Vec<Option<usize>> = vec![None; f.values.len()];
    for (i, op) in f.body.iter().enumerate() {
        if let (Some(r), Some(g)) = (op.result, group_of[i]) {
            internal[r.index()] = true;
            def_group[r.index()] = Some(g);
        }
    }
    for (i, op) in f.body.iter().enumerate() {
        for &o in &op.operands {
            if let Some(g) = def_group[o.index()]
                && (op.kind == OpKind::Return || group_of[i] != Some(g))
            {
                internal[o.index()] = false;
            }
        }
    }
    Fusion { groups, group_of, internal }
}

/// Op kinds that can be evaluated element by element inside a kernel.
pub fn is_elemental(k: OpKind) -> bool {
    use OpKind::*;
    k.is_elementwise() || matches!(k, Fill | Iota | Broadcast | Reshape | Transpose | Slice)
}

/// Op kinds a group may contain.
pub fn is_fusible(k: OpKind) -> bool {
    is_elemental(k) || matches!(k, OpKind::ReduceSum | OpKind::ReduceMax)
}

/// Checks that ops `g` of `f` form a kernel ckopt can emit (see the module
/// doc); the error names the offending op index and why. `fusion` says
/// which values are stored (`Fusion::materialized`).
pub fn check_group(f: &Func, g: &Group, fusion: &Fusion) -> Result<GroupShape, (usize, String)> {
    check_group_with(f, g, &|v| fusion.materialized(v))
}

/// `check_group` with the stored values given by `materialized`.
pub fn check_group_with(f: &Func, g: &Group, materialized: &dyn Fn(ValueId) -> bool) -> Result<GroupShape, (usize, String)> {
    let ops = &f.body[g.start..=g.end];
    let in_group = |v: ValueId| -> Option<usize> {
        ops.iter().position(|o| o.result == Some(v)).map(|p| p + g.start)
    };
    let mut reduce = None;
    for (k, op) in ops.iter().enumerate() {
        let i = g.start + k;
        if !is_fusible(op.kind) {
            return Err((i, format!("'{}' cannot be fused (only elemental ops and reductions can)", op.kind.full_name())));
        }
        if matches!(op.kind, OpKind::ReduceSum | OpKind::ReduceMax) {
            if reduce.is_some() {
                return Err((i, "a fusion group holds at most one reduction".into()));
            }
            reduce = Some(i);
        }
    }
    let outputs: Vec<ValueId> = ops.iter().filter_map(|o| o.result).filter(|&r| materialized(r)).collect();
    let Some(r) = reduce else {
        let Some(&first) = outputs.first() else {
            return Ok(GroupShape::Loop { shape: f.ty(ops[ops.len() - 1].result.unwrap_or(ValueId(0))).shape.clone() });
        };
        let shape = f.ty(first).shape.clone();
        for &o in &outputs {
            if f.ty(o).shape != shape {
                let i = in_group(o).unwrap_or(g.start);
                return Err((
                    i,
                    format!("loop fusion outputs must share one shape: {} and {}", f.ty(first), f.ty(o)),
                ));
            }
        }
        return Ok(GroupShape::Loop { shape });
    };
    // Reduce group: classify ops as prologue (r depends on them) or epilogue (they depend on r).
    let n = ops.len();
    let local = |v: ValueId| in_group(v).map(|i| i - g.start);
    let mut feeds = vec![false; n];
    feeds[r - g.start] = true;
    for k in (0..n).rev() {
        if !feeds[k] {
            continue;
        }
        for &o in &ops[k].operands {
            if let Some(j) = local(o) {
                feeds[j] = true;
            }
        }
    }
    let mut after = vec![false; n];
    after[r - g.start] = true;
    for k in 0..n {
        if ops[k].operands.iter().any(|&o| local(o).is_some_and(|j| after[j])) {
            after[k] = true;
        }
    }
    let s_shape = f.ty(ops[r - g.start].operands[0]).shape.clone();
    let r_shape = ops[r - g.start].result.map(|v| f.ty(v).shape.clone()).unwrap_or_default();
    // Which side each op is evaluated on: prologue (S), epilogue (R) or free (internal helper).
    for k in 0..n {
        let i = g.start + k;
        let Some(v) = ops[k].result else { continue };
        let out = materialized(v);
        if k == r - g.start {
            continue;
        }
        if feeds[k] && after[k] {
            return Err((i, "depends on the group's reduction and feeds it".into()));
        }
        if feeds[k] {
            if out && f.ty(v).shape != s_shape {
                return Err((i, format!("a prologue output of a reduce fusion must have the reduced input's shape {:?}", s_shape)));
            }
        } else if after[k] {
            if f.ty(v).shape != r_shape {
                return Err((i, format!("an epilogue op of a reduce fusion must have the reduction's result shape {r_shape:?}")));
            }
        } else if out {
            return Err((i, "an op that neither feeds nor follows the group's reduction must be internal".into()));
        }
    }
    // A free internal helper feeds one side only; epilogue ops read no prologue values.
    let rl = r - g.start;
    let epilogue = |k: usize| after[k] && k != rl;
    for k in 0..n {
        let i = g.start + k;
        for &o in &ops[k].operands {
            let Some(j) = local(o) else { continue };
            if epilogue(k) && feeds[j] && j != rl {
                return Err((i, "an epilogue op cannot read a prologue value".into()));
            }
            if !feeds[j] && !after[j] {
                // free helper j: all its consumers on one side
                let sides: Vec<bool> = ops
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.operands.contains(&o))
                    .map(|(kk, _)| epilogue(kk))
                    .collect();
                if sides.iter().any(|&s| s != sides[0]) {
                    return Err((g.start + j, "a helper value feeds both the prologue and the epilogue".into()));
                }
            }
        }
    }
    Ok(GroupShape::Reduce { reduce: r })
}

/// Verifier rules for fusion marks: ids contiguous, groups emittable.
pub fn verify_fusion(f: &Func) -> Vec<(usize, String)> {
    let fusion = analyze(f);
    let mut errs = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for g in &fusion.groups {
        if !seen.insert(g.id) {
            errs.push((g.start, format!("ck.fusion group {} is not contiguous in the schedule", g.id)));
            continue;
        }
        if let Err(e) = check_group(f, g, &fusion) {
            errs.push(e);
        }
    }
    errs
}

/// Removes every `ck.fusion` mark (every op its own kernel again); returns
/// whether there were any.
pub fn strip_fusion(f: &mut Func) -> bool {
    let mut any = false;
    for op in &mut f.body {
        any |= op.attrs.remove(ATTR_FUSION).is_some();
    }
    any
}

/// The operand an op writes its result into (`ck.inplace = N`), when that is
/// honoured: operand N exists, has the result's byte size, and is defined by
/// an op or is a `{ck.donate}` argument. Otherwise the result gets a buffer
/// of its own (over- rather than under-estimating memory).
pub fn inplace_source(f: &Func, op: &Op, is_arg: &[bool]) -> Option<ValueId> {
    inplace_source_of(op.int_attr(crate::ops::ATTR_INPLACE), &op.operands, op.result, &|v| f.ty(v).byte_size(), is_arg, &f.params)
}

/// [`inplace_source`] from the parts of an op: its `ck.inplace` mark,
/// operands and result, the byte size of a value, which values are
/// arguments, and the function's parameters (for `{ck.donate}`).
pub fn inplace_source_of(
    mark: Option<i64>,
    operands: &[ValueId],
    result: Option<ValueId>,
    byte_size: &dyn Fn(ValueId) -> Option<u64>,
    is_arg: &[bool],
    params: &[crate::func::Param],
) -> Option<ValueId> {
    let v = *operands.get(usize::try_from(mark?).ok()?)?;
    let r = result?;
    if byte_size(v)? != byte_size(r)? {
        return None;
    }
    if is_arg[v.index()] && !params.iter().any(|p| p.value == v && p.attrs.contains_key(crate::ops::ATTR_DONATE)) {
        return None;
    }
    Some(v)
}

/// Per value: whether it is a function argument.
pub fn arg_mask(f: &Func) -> Vec<bool> {
    let mut m = vec![false; f.values.len()];
    for p in &f.params {
        if let Some(x) = m.get_mut(p.value.index()) {
            *x = true;
        }
    }
    m
}

/// The buffer each value lives in, named by its root value: itself, or (for
/// an in-place result) the root of the operand it writes into. A root that
/// is an argument means the value lives in that (donated) argument's buffer.
pub fn buffer_roots(f: &Func) -> Vec<ValueId> {
    let is_arg = arg_mask(f);
    let mut root: Vec<ValueId> = (0..f.values.len() as u32).map(ValueId).collect();
    for op in &f.body {
        if let (Some(r), Some(src)) = (op.result, inplace_source(f, op, &is_arg)) {
            root[r.index()] = root[src.index()];
        }
    }
    root
}
