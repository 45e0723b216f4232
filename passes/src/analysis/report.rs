//! The memory report of SPEC §4, one object per function.

use super::{Phase, liveness, op_flops, op_phases, peak};
use ckopt_ir::{Func, Module, OpKind, ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_RECOMPUTE}};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    pub function: String,
    /// Ops in the body, `ck.return` excluded.
    pub ops: usize,
    pub total_bytes: u64,
    pub peak_bytes: u64,
    pub temp_peak_bytes: u64,
    pub arena_bytes: Option<u64>,
    pub forward_flops: u64,
    pub backward_flops: u64,
    pub recompute_flops: u64,
    pub inplace_ops: usize,
    pub recomputed_ops: usize,
}

pub fn memory_report(f: &Func) -> MemoryReport {
    let live = liveness(f);
    let phases = op_phases(f);
    let (mut fw, mut bw, mut rc) = (0u64, 0u64, 0u64);
    let mut total = 0u64;
    for (op, ph) in f.body.iter().zip(&phases) {
        if let Some(r) = op.result {
            total = total.saturating_add(f.ty(r).bytes());
        }
        let fl = op_flops(f, op);
        match ph {
            Phase::Forward => fw = fw.saturating_add(fl),
            Phase::Backward => bw = bw.saturating_add(fl),
            Phase::Recompute => rc = rc.saturating_add(fl),
        }
    }
    MemoryReport {
        function: f.name.clone(),
        ops: f.body.iter().filter(|o| o.kind != OpKind::Return).count(),
        total_bytes: total,
        peak_bytes: peak(f, &live, true),
        temp_peak_bytes: peak(f, &live, false),
        arena_bytes: f.attrs.get(ATTR_ARENA_BYTES).and_then(|a| a.as_int()).map(|v| v.max(0) as u64),
        forward_flops: fw,
        backward_flops: bw,
        recompute_flops: rc,
        inplace_ops: f.body.iter().filter(|o| o.has_attr(ATTR_INPLACE)).count(),
        recomputed_ops: f.body.iter().filter(|o| o.has_attr(ATTR_RECOMPUTE)).count(),
    }
}

pub fn module_report(m: &Module) -> Vec<MemoryReport> {
    m.funcs.iter().map(memory_report).collect()
}
