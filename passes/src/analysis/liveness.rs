//! Liveness over the schedule (text order), at buffer granularity.
//!
//! A value defined by op `d` and last used by op `u` is live on `[d, u]`
//! (inclusive; a value with no use is live on `[d, d]`). A function result is
//! used by `ck.return`, the last op. Arguments are not op-defined and have no
//! interval here.
//!
//! In-place results (`ck.inplace = N`) reuse operand N's buffer, so a buffer
//! is the chain of values linked by in-place ops; its interval is the union of
//! theirs. Bytes are counted per buffer, which is what memory really holds.
//! Which in-place writes are honoured is `ckopt_ir::fusion::inplace_source`
//! (operand N op-defined or a donated argument, same byte size); otherwise
//! the result counts as a fresh buffer, which over- rather than
//! under-estimates. A buffer holds a function result if any of its values is
//! returned; for `temp_peak_bytes` such a buffer counts only while it still
//! holds temporaries (until the op that defines its first result value, as
//! when a gradient is accumulated in place into the returned sum).
//!
//! Fusion (`ckopt_ir::fusion`): values internal to a fusion group are never
//! stored and have no interval; a group counts as one step, so a value it
//! defines is live from the group's first op and a value it reads until the
//! group's last op. Donation: an in-place write into a `{ck.donate}`
//! argument is honoured; that buffer is the caller's, not the arena's, so it
//! has no interval either. `def`/`last_use` stay value-level (op indices):
//! in-place legality is judged on them.
//! Complexity: O(ops + values).

use ckopt_ir::fusion::{Fusion, inplace_source_of};
use ckopt_ir::ops::ATTR_INPLACE;
use ckopt_ir::{Func, OpKind, Param, TensorType, ValueId};

/// One buffer: a root value and the in-place values that share it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    /// The value whose definition allocates the buffer.
    pub root: ValueId,
    /// First op index at which the buffer is live.
    pub start: usize,
    /// Last op index at which the buffer is live (inclusive).
    pub end: usize,
    pub bytes: u64,
    /// Whether any value in the buffer is a function result.
    pub is_result: bool,
    /// Def index of the first value in the buffer that is a function result
    /// (None if none is). Before it the buffer holds temporaries only.
    pub result_from: Option<usize>,
}

#[derive(Clone, Debug)]
pub struct Liveness {
    /// Defining op index of each value (None for arguments and unused ids).
    pub def: Vec<Option<usize>>,
    /// Last op index that reads each value (None if never read).
    pub last_use: Vec<Option<usize>>,
    /// The buffer root of each op-defined value (itself unless in-place).
    pub buffer: Vec<ValueId>,
    /// One interval per buffer, in order of the root's definition.
    pub intervals: Vec<Interval>,
}

/// What liveness (and remat's in-place check) reads of a function: its ops
/// (operands, result, kind, `ck.inplace` mark), value types and parameters.
/// Implemented by `Func` and by remat's rewrites before they are built
/// (`remat::emit::Draft`), so a candidate plan is measured by this same code
/// without building its function.
pub trait Body {
    fn num_values(&self) -> usize;
    fn num_ops(&self) -> usize;
    fn operands(&self, i: usize) -> &[ValueId];
    fn result(&self, i: usize) -> Option<ValueId>;
    fn kind(&self, i: usize) -> OpKind;
    /// The `ck.inplace` mark of op `i`.
    fn inplace(&self, i: usize) -> Option<i64>;
    fn ty(&self, v: ValueId) -> &TensorType;
    fn params(&self) -> &[Param];
    /// The operands of the last op when it is `ck.return`.
    fn returned(&self) -> &[ValueId] {
        match self.num_ops().checked_sub(1) {
            Some(i) if self.kind(i) == OpKind::Return => self.operands(i),
            _ => &[],
        }
    }
}

impl Body for Func {
    fn num_values(&self) -> usize {
        self.values.len()
    }
    fn num_ops(&self) -> usize {
        self.body.len()
    }
    fn operands(&self, i: usize) -> &[ValueId] {
        &self.body[i].operands
    }
    fn result(&self, i: usize) -> Option<ValueId> {
        self.body[i].result
    }
    fn kind(&self, i: usize) -> OpKind {
        self.body[i].kind
    }
    fn inplace(&self, i: usize) -> Option<i64> {
        self.body[i].int_attr(ATTR_INPLACE)
    }
    fn ty(&self, v: ValueId) -> &TensorType {
        Func::ty(self, v)
    }
    fn params(&self) -> &[Param] {
        &self.params
    }
    fn returned(&self) -> &[ValueId] {
        Func::returned(self)
    }
}

pub fn liveness(f: &Func) -> Liveness {
    liveness_of(f, &ckopt_ir::fusion::analyze(f))
}

/// [`liveness`] of any [`Body`], with its fusion groups given.
pub fn liveness_of<B: Body + ?Sized>(f: &B, fusion: &Fusion) -> Liveness {
    let n = f.num_values();
    let mut def: Vec<Option<usize>> = vec![None; n];
    let mut last_use: Vec<Option<usize>> = vec![None; n];
    for i in 0..f.num_ops() {
        if let Some(r) = f.result(i) {
            def[r.index()] = Some(i);
        }
        for &o in f.operands(i) {
            last_use[o.index()] = Some(i);
        }
    }
    let mut is_arg = vec![false; n];
    for p in f.params() {
        if let Some(x) = is_arg.get_mut(p.value.index()) {
            *x = true;
        }
    }
    // The buffer each value lives in (`ckopt_ir::fusion::buffer_roots`).
    let mut buffer: Vec<ValueId> = (0..n as u32).map(ValueId).collect();
    let size = |v: ValueId| f.ty(v).byte_size();
    for i in 0..f.num_ops() {
        let r = f.result(i);
        if let (Some(r), Some(src)) = (r, inplace_source_of(f.inplace(i), f.operands(i), r, &size, &is_arg, f.params())) {
            buffer[r.index()] = buffer[src.index()];
        }
    }
    // Kernel-level times: a fusion group is one step that reads its inputs
    // at its last op and writes its outputs at its first op.
    let mut kernel_last: Vec<Option<usize>> = vec![None; n];
    for i in 0..f.num_ops() {
        let e = fusion.span(i).1;
        for &o in f.operands(i) {
            kernel_last[o.index()] = Some(kernel_last[o.index()].map_or(e, |x: usize| x.max(e)));
        }
    }
    let returned: Vec<bool> = {
        let mut v = vec![false; n];
        for &r in f.returned() {
            v[r.index()] = true;
        }
        v
    };
    let mut slot: Vec<Option<usize>> = vec![None; n];
    let mut intervals: Vec<Interval> = Vec::new();
    for i in 0..f.num_ops() {
        let Some(r) = f.result(i) else { continue };
        let Some(d) = def[r.index()] else { continue };
        let root = buffer[r.index()];
        // Internal values of a fusion group are never stored; values in a
        // donated argument's buffer are not in the arena.
        if !fusion.materialized(r) || is_arg[root.index()] {
            continue;
        }
        let (ks, ke) = fusion.span(d);
        let end = kernel_last[r.index()].unwrap_or(ke).max(ke);
        match slot[root.index()] {
            Some(k) => {
                let iv = &mut intervals[k];
                iv.end = iv.end.max(end);
                iv.is_result |= returned[r.index()];
                if returned[r.index()] {
                    iv.result_from = Some(iv.result_from.map_or(ks, |x| x.min(ks)));
                }
            }
            None => {
                slot[root.index()] = Some(intervals.len());
                intervals.push(Interval {
                    root,
                    start: ks,
                    end,
                    bytes: f.ty(r).bytes(),
                    is_result: returned[r.index()],
                    result_from: returned[r.index()].then_some(ks),
                });
            }
        }
    }
    Liveness { def, last_use, buffer, intervals }
}

/// Live bytes at each op index. With `include_results` false (temp_peak),
/// a buffer counts only while it holds temporaries: up to and including the
/// op defining its first result value (the in-place op that turns a
/// temporary into a result still reads the temporary there), and not at all
/// when its first value is a result.
pub fn live_bytes_timeline(f: &Func, live: &Liveness, include_results: bool) -> Vec<u64> {
    live_bytes_timeline_of(f, live, include_results)
}

/// [`live_bytes_timeline`] of any [`Body`].
pub fn live_bytes_timeline_of<B: Body + ?Sized>(f: &B, live: &Liveness, include_results: bool) -> Vec<u64> {
    let len = f.num_ops();
    let mut delta = vec![0i128; len + 1];
    for iv in &live.intervals {
        let end = match iv.result_from {
            Some(rf) if !include_results => {
                if rf <= iv.start {
                    continue;
                }
                rf.min(iv.end)
            }
            _ => iv.end,
        };
        if iv.start >= len || end >= len {
            continue;
        }
        delta[iv.start] += iv.bytes as i128;
        delta[end + 1] -= iv.bytes as i128;
    }
    let mut cur: i128 = 0;
    let mut out = Vec::with_capacity(len);
    for d in delta.iter().take(len) {
        cur += d;
        out.push(cur.max(0) as u64);
    }
    out
}

/// Maximum live bytes over the schedule.
pub fn peak(f: &Func, live: &Liveness, include_results: bool) -> u64 {
    peak_of(f, live, include_results)
}

/// [`peak`] of any [`Body`].
pub fn peak_of<B: Body + ?Sized>(f: &B, live: &Liveness, include_results: bool) -> u64 {
    live_bytes_timeline_of(f, live, include_results).into_iter().max().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Intervals are [def, last use]; an unused value lives only at its def;
    /// an in-place chain is one buffer spanning both values.
    #[test]
    fn intervals_and_timeline_by_hand() {
        let m = ckopt_ir::parse_and_verify(
            r#"module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %u = "ck.neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.relu"(%a) {ck.inplace = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = "ck.add"(%b, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%c) : (tensor<4xf32>) -> ()
  }
}"#,
            "t.ck",
        )
        .expect("parses");
        let f = &m.funcs[0];
        let l = liveness(f);
        let spans: Vec<(usize, usize, u64, bool)> =
            l.intervals.iter().map(|i| (i.start, i.end, i.bytes, i.is_result)).collect();
        // {a,b}: [0,3]; u: [1,1]; c: [3,4] returned
        assert_eq!(spans, vec![(0, 3, 16, false), (1, 1, 16, false), (3, 4, 16, true)]);
        assert_eq!(live_bytes_timeline(f, &l, true), vec![16, 32, 16, 32, 16]);
        assert_eq!(live_bytes_timeline(f, &l, false), vec![16, 32, 16, 16, 0]);
        assert_eq!(peak(f, &l, true), 32);
    }
}

#[cfg(test)]
mod temp_tests {
    use super::*;

    /// A temporary turned into a result by an in-place op counts as temp
    /// memory until (and at) that op, then as a result only.
    /// a [0,1] then b (result, in place on a) [1,3]; c [2,2] temp.
    #[test]
    fn inplace_into_a_result_counts_as_temp_before() {
        let m = ckopt_ir::parse_and_verify(
            r#"module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.neg"(%a) {ck.inplace = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    %c = "ck.tanh"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%b) : (tensor<4xf32>) -> ()
  }
}"#,
            "t.ck",
        )
        .expect("parses");
        let f = &m.funcs[0];
        let l = liveness(f);
        assert_eq!(l.intervals[0].result_from, Some(1));
        assert_eq!(live_bytes_timeline(f, &l, true), vec![16, 16, 32, 16]);
        assert_eq!(live_bytes_timeline(f, &l, false), vec![16, 16, 16, 0]);
    }
}
