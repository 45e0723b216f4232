//! Static flop counts (docs/memory.md): matmul 2·M·N·K, conv 2·N·F·(C/G)·KH·KW·OH·OW
//! (G = `groups`: each filter reads C/G channels, the filter's second dim),
//! everything else one per result element (reductions: one per input element;
//! cross_entropy and its gradient: 4 per logit; gather_grad and
//! take_along_grad: one add per dy element).
//! Data movement ops (reshape, transpose, slice, concat, broadcast, fill) count
//! one per result element as well, so no op is free. Saturating arithmetic.

use ckopt_ir::{Func, Op, OpKind, ops::attr_bool};

pub fn op_flops(f: &Func, op: &Op) -> u64 {
    let Some(r) = op.result else { return 0 };
    let out = f.ty(r);
    let ins: Vec<_> = op.operands.iter().map(|&v| f.ty(v)).collect();
    match op.kind {
        OpKind::Matmul => {
            let a = ins[0];
            let rk = a.rank();
            let k = if attr_bool(&op.attrs, "transpose_a") { a.shape[rk - 2] } else { a.shape[rk - 1] };
            out.elems().saturating_mul(k).saturating_mul(2)
        }
        OpKind::Conv2d => {
            // out = [N, F, OH, OW], filter [F, C/groups, KH, KW]: C/groups
            // multiply-adds per tap, so grouped convs count 1/groups of the dense ones
            let w = ins[1];
            out.elems().saturating_mul(w.shape[1] * w.shape[2] * w.shape[3]).saturating_mul(2)
        }
        OpKind::Conv2dGradInput => {
            // same multiply-adds as the forward conv: dy elems * (C/groups)*KH*KW
            let (dy, w) = (ins[0], ins[1]);
            dy.elems().saturating_mul(w.shape[1] * w.shape[2] * w.shape[3]).saturating_mul(2)
        }
        OpKind::Conv2dGradFilter => {
            let dy = ins[1];
            let dw = out;
            dy.elems().saturating_mul(dw.shape[1] * dw.shape[2] * dw.shape[3]).saturating_mul(2)
        }
        OpKind::ReduceSum | OpKind::ReduceMax => ins[0].elems(),
        OpKind::MaxPool2d | OpKind::AvgPool2d => {
            let (w, _) = ckopt_ir::ops::pool_params(&op.attrs).unwrap_or(([1, 1], [1, 1]));
            out.elems().saturating_mul(w[0] * w[1])
        }
        OpKind::MaxPool2dGrad | OpKind::AvgPool2dGrad => {
            let (w, _) = ckopt_ir::ops::pool_params(&op.attrs).unwrap_or(([1, 1], [1, 1]));
            ins[ins.len() - 1].elems().saturating_mul(w[0] * w[1])
        }
        // Per logit: max, exp of the difference, sum (and the gradient's divide and subtract).
        OpKind::CrossEntropy | OpKind::CrossEntropyGrad => ins[0].elems().saturating_mul(4),
        // One add per dy element.
        OpKind::GatherGrad | OpKind::TakeAlongGrad => ins[1].elems(),
        _ => out.elems(),
    }
}
