//! Reductions and matmul: result element `idx` accumulates from 0 (or -inf
//! for a max) over the reduced indices in row-major order, as the
//! interpreter does.

use super::{Ctx, Em};
use ckopt_ir::ops::attr_bool;
use ckopt_ir::{Diag, OpKind};

/// `reduce_sum` / `reduce_max` over `dims`.
pub(super) fn reduce(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let x = c.xs(0);
    let dims: Vec<usize> = c.ints("dims").iter().map(|&d| d as usize).collect();
    let yi = em.delin(c.idx, &c.ys);
    let kept: Vec<usize> = (0..x.len()).filter(|i| !dims.contains(i)).collect();
    let bounds: Vec<u64> = dims.iter().map(|&d| x[d]).collect();
    let sum = c.op.kind == OpKind::ReduceSum;
    let init = if sum { em.cf(0.0) } else { em.cf(f32::NEG_INFINITY) };
    let m = c.ins[0].clone();
    Ok(em.loops_acc(&bounds, &init, &mut |em, ivs, acc| {
        let mut xi = vec![String::new(); x.len()];
        for (k, &d) in kept.iter().enumerate() {
            xi[d] = yi[k].clone();
        }
        for (k, &d) in dims.iter().enumerate() {
            xi[d] = ivs[k].clone();
        }
        let v = em.load_at(&m, &xi, &x);
        em.fbin(if sum { "addf" } else { "maxnumf" }, acc, &v)
    }))
}

/// `y[..., i, j] = sum_k a[..., i, k] * b[..., k, j]` (operands transposed
/// in their last two dims per `transpose_a` / `transpose_b`).
pub(super) fn matmul(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let (a, b) = (c.xs(0), c.xs(1));
    let r = c.ys.len();
    let (ta, tb) = (attr_bool(&c.op.attrs, "transpose_a"), attr_bool(&c.op.attrs, "transpose_b"));
    let kdim = if ta { a[r - 2] } else { a[r - 1] };
    let yi = em.delin(c.idx, &c.ys);
    let (ma, mb) = (c.ins[0].clone(), c.ins[1].clone());
    let zero = em.cf(0.0);
    Ok(em.loops_acc(&[kdim], &zero, &mut |em, ivs, acc| {
        let k = &ivs[0];
        let mut ai = yi[..r - 2].to_vec();
        let mut bi = yi[..r - 2].to_vec();
        if ta {
            ai.extend([k.clone(), yi[r - 2].clone()]);
        } else {
            ai.extend([yi[r - 2].clone(), k.clone()]);
        }
        if tb {
            bi.extend([yi[r - 1].clone(), k.clone()]);
        } else {
            bi.extend([k.clone(), yi[r - 1].clone()]);
        }
        let av = em.load_at(&ma, &ai, &a);
        let bv = em.load_at(&mb, &bi, &b);
        let p = em.fbin("mulf", &av, &bv);
        em.fbin("addf", acc, &p)
    }))
}
