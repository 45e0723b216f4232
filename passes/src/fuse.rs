//! `fuse`: groups ops into kernels (XLA's loop and input fusion).
//!
//! What: marks runs of consecutive ops with `ck.fusion = G` so each run
//! executes as ONE kernel whose internal values are never materialized
//! (`ckopt_ir::fusion` defines groups, what a kernel can be and which
//! values are internal). Chains of elemental ops (elementwise, scale, fill,
//! broadcast, reshape, transpose, slice, dropout) become one loop; a
//! reduction absorbs the elemental ops that feed it (its prologue, evaluated
//! as it reads its input) and the elemental ops on its result (its
//! epilogue). LayerNorm (12 ops) becomes 3 kernels, softmax (7 ops) 3.
//!
//! How: one walk over the schedule. An op joins the open group when it is
//! fusible and reads a value the group defines, or when it is a cheap
//! producer (`fill`, or a broadcast of a value from outside) that a later
//! member may read; anything else closes the group and may open the next.
//! A closed group is shrunk from its end until `fusion::check_group`
//! accepts it and it is profitable (no broadcast of an internal value other
//! than a fill or broadcast, which would recompute a producer once per
//! output element). Groups of one op get no mark. The schedule is not
//! changed: groups are runs of the existing order, so fusing never moves a
//! computation and only makes the ops of one run share a step of the
//! liveness timeline.
//!
//! In-place marks that a group makes unsafe (the kernel would read an
//! element it has already overwritten: `inplace::operand_is_overwritable`)
//! are removed afterwards. Existing `ck.fusion` marks are replaced (the pass
//! is idempotent). Other passes that restructure a fused function (remat,
//! inplace, cse, ...) are run by the pass manager on the unfused function
//! and the result is fused again (`manager::PassManager`).
//!
//! Invariants in: a verified module. Out: the same ops, order, values and
//! results; every group passes the verifier; interp(f) == interp(fuse(f))
//! bit for bit (fusion is only marks; the interpreter ignores them).
//! Complexity: O(ops · group length) for the shrinking checks.

use crate::inplace::strip_illegal_inplace;
use crate::manager::{Pass, PassOptions, Statistics};
use ckopt_ir::fusion::{Group, analyze, check_group_with, is_elemental, is_fusible, strip_fusion};
use ckopt_ir::ops::ATTR_FUSION;
use ckopt_ir::{Attr, Diags, Func, Module, OpKind, ValueId};

/// What fusing one function did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FuseStats {
    /// Kernels before (one per op that computes a value) and after.
    pub kernels_before: usize,
    pub kernels_after: usize,
    pub groups: usize,
    /// Values and bytes no longer materialized.
    pub internal_values: usize,
    pub internal_bytes: u64,
    pub inplace_dropped: usize,
}

/// Whether a group is worth one kernel: every broadcast reading a value
/// computed inside the group reads a fill or another broadcast (a cheap
/// value); otherwise its producer would be recomputed per output element.
fn profitable(f: &Func, g: &Group) -> bool {
    let defined_in = |v: ValueId| f.body[g.start..=g.end].iter().position(|o| o.result == Some(v)).map(|p| p + g.start);
    f.body[g.start..=g.end].iter().all(|op| {
        op.kind != OpKind::Broadcast
            || defined_in(op.operands[0]).is_none_or(|d| matches!(f.body[d].kind, OpKind::Fill | OpKind::Broadcast))
    })
}

/// Per value: the last op index that reads it (`ck.return` included), for
/// deciding which values a trial group would keep internal.
struct Uses {
    last: Vec<Option<usize>>,
}

impl Uses {
    fn of(f: &Func) -> Uses {
        let mut last = vec![None; f.values.len()];
        for (i, op) in f.body.iter().enumerate() {
            for &o in &op.operands {
                last[o.index()] = Some(i);
            }
        }
        Uses { last }
    }
    /// A value defined in `[start, end]` is stored iff something after the
    /// group reads it (the return is after every group).
    fn stored(&self, v: ValueId, end: usize) -> bool {
        self.last[v.index()].is_some_and(|u| u > end)
    }
}

/// Whether the trial group `g` is a kernel ckopt can emit and worth one.
fn acceptable(f: &Func, g: &Group, uses: &Uses) -> bool {
    g.start == g.end || (check_group_with(f, g, &|v| uses.stored(v, g.end)).is_ok() && profitable(f, g))
}

/// Closes the trial group `[start, end]`: shrinks it from its end until it
/// is acceptable, marks it when it has 2+ ops; returns the first op index
/// not taken.
fn close(f: &mut Func, uses: &Uses, start: usize, end: usize, id: &mut i64, stats: &mut FuseStats) -> usize {
    let mut e = end;
    while e > start && !acceptable(f, &Group { id: *id, start, end: e }, uses) {
        e -= 1;
    }
    if e > start {
        for i in start..=e {
            f.body[i].attrs.insert(ATTR_FUSION.into(), Attr::Int(*id));
        }
        *id += 1;
        stats.groups += 1;
    }
    e + 1
}

/// Whether op `i` may start or join a group without reading one of its
/// values: a fill, an iota, or a broadcast of a value from outside the group.
fn cheap_producer(f: &Func, i: usize) -> bool {
    matches!(f.body[i].kind, OpKind::Fill | OpKind::Iota | OpKind::Broadcast)
}

/// Fuses one function (replacing any previous marks).
pub fn fuse_func(f: &mut Func) -> FuseStats {
    strip_fusion(f);
    let mut stats = FuseStats {
        kernels_before: f.body.iter().filter(|o| o.result.is_some()).count(),
        ..Default::default()
    };
    let n = f.body.len();
    let uses = Uses::of(f);
    let mut id = 0i64;
    let mut i = 0;
    while i < n {
        if !is_fusible(f.body[i].kind) {
            i += 1;
            continue;
        }
        // Grow a trial group from i.
        let start = i;
        let mut defined: Vec<ValueId> = f.body[i].result.into_iter().collect();
        let mut end = i;
        let mut j = i + 1;
        while j < n {
            let op = &f.body[j];
            if !is_fusible(op.kind) {
                break;
            }
            let reads_group = op.operands.iter().any(|o| defined.contains(o));
            let joins = reads_group || (cheap_producer(f, j) && is_elemental(op.kind));
            if !joins {
                break;
            }
            defined.extend(op.result);
            end = j;
            j += 1;
        }
        i = close(f, &uses, start, end, &mut id, &mut stats);
    }
    stats.inplace_dropped = strip_illegal_inplace(f);
    let fusion = analyze(f);
    stats.kernels_after = stats.kernels_before
        - fusion.groups.iter().map(|g| f.body[g.start..=g.end].iter().filter(|o| o.result.is_some()).count() - 1).sum::<usize>();
    for (v, &int) in fusion.internal.iter().enumerate() {
        if int {
            stats.internal_values += 1;
            stats.internal_bytes += f.ty(ValueId(v as u32)).bytes();
        }
    }
    stats
}

/// Fuses every function of the module.
pub fn fuse_module(m: &mut Module) -> Vec<(String, FuseStats)> {
    m.funcs.iter_mut().map(|f| (f.name.clone(), fuse_func(f))).collect()
}

struct Fuse;

impl Pass for Fuse {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        for (name, s) in fuse_module(module) {
            stats.add_func(&name, "kernels-before", s.kernels_before);
            stats.add_func(&name, "kernels-after", s.kernels_after);
            stats.add_func(&name, "fusion-groups", s.groups);
            stats.add_func(&name, "values-not-materialized", s.internal_values);
            stats.add_func(&name, "bytes-not-materialized", s.internal_bytes);
            stats.add_func(&name, "inplace-marks-dropped", s.inplace_dropped);
        }
        Ok(())
    }
}

/// Registry constructor (no options).
pub fn build(_: &PassOptions) -> Result<Box<dyn Pass>, crate::manager::OptionError> {
    Ok(Box::new(Fuse))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::parse_and_verify;

    fn kernels(text: &str) -> (Func, FuseStats) {
        let mut m = parse_and_verify(text, "t.ck").expect("parses");
        let s = fuse_func(&mut m.funcs[0]);
        ckopt_ir::verify_module(&m).expect("fused module verifies");
        (m.funcs.remove(0), s)
    }

    /// Bias add and relu after a matmul: one loop; the broadcast is internal.
    #[test]
    fn bias_relu_is_one_loop_and_the_broadcast_is_not_stored() {
        let (f, s) = kernels(
            r#"module {
  func.func @f(%x: tensor<2x4xf32>, %w: tensor<4x4xf32>, %b: tensor<4xf32>) -> tensor<2x4xf32> {
    %mm = "ck.matmul"(%x, %w) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bb = "ck.broadcast"(%b) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z = "ck.add"(%mm, %bb) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h = "ck.relu"(%z) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "ck.return"(%h) : (tensor<2x4xf32>) -> ()
  }
}"#,
        );
        assert_eq!((s.kernels_before, s.kernels_after, s.groups, s.internal_values), (4, 2, 1, 2));
        let marked: Vec<bool> = f.body.iter().map(|o| o.has_attr(ATTR_FUSION)).collect();
        assert_eq!(marked, vec![false, true, true, true, false]);
    }
}
