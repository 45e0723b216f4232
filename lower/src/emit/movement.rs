//! Data movement: result element `idx` is one operand element (reshape,
//! broadcast, transpose, slice, concat) or one element of a constant.
//! Invariant: every load is inside its operand (concat picks the operand
//! whose range holds the coordinate).

use super::{Ctx, Em, Mem};
use ckopt_ir::{Attr, Diag};

/// The elements as one constant vector, read at the flat index.
pub(super) fn constant(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let (_, data) = c.op.attrs.get("value").and_then(Attr::as_dense).ok_or_else(|| c.bad("needs a dense 'value'"))?;
    if data.is_empty() {
        return Err(c.bad("has no elements"));
    }
    let elems: Vec<String> = data.iter().map(|&v| ckopt_ir::attr::format_f32(v)).collect();
    let n = data.len();
    let v = em.op(&format!("arith.constant dense<[{}]> : vector<{n}xf32>", elems.join(", ")));
    Ok(em.op(&format!("vector.extract {v}[{}] : f32 from vector<{n}xf32>", c.idx)))
}

/// The operand element at the same flat index.
pub(super) fn reshape(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    Ok(em.load(&c.ins[0], c.idx))
}

/// `x[y[dims[0]], y[dims[1]], ...]`.
pub(super) fn broadcast(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let dims = c.ints("dims");
    let yi = em.delin(c.idx, &c.ys);
    let xi: Vec<String> = dims.iter().map(|&d| yi[d as usize].clone()).collect();
    Ok(em.load_at(&c.ins[0], &xi, &c.xs(0)))
}

/// `y[i] = x[j]` with `j[perm[k]] = i[k]`.
pub(super) fn transpose(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let perm = c.ints("perm");
    let yi = em.delin(c.idx, &c.ys);
    let mut xi = vec![String::new(); perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        xi[p as usize] = yi[i].clone();
    }
    Ok(em.load_at(&c.ins[0], &xi, &c.xs(0)))
}

/// `y[i] = x[i + offsets]`.
pub(super) fn slice(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let offs = c.ints("offsets");
    let yi = em.delin(c.idx, &c.ys);
    let xi: Vec<String> = yi.iter().zip(&offs).map(|(y, &o)| em.iadd_c(y, o as u64)).collect();
    Ok(em.load_at(&c.ins[0], &xi, &c.xs(0)))
}

/// The operand whose range along `dim` holds the coordinate, at the
/// coordinate minus the operand's start.
pub(super) fn concat(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let d = c.int_attr("dim")? as usize;
    let yi = em.delin(c.idx, &c.ys);
    let shapes: Vec<Vec<u64>> = (0..c.ins.len()).map(|i| c.xs(i)).collect();
    Ok(concat_pick(em, c.ins, &shapes, &yi, d, 0, 0))
}

fn concat_pick(em: &mut Em, ins: &[Mem], shapes: &[Vec<u64>], yi: &[String], d: usize, k: usize, start: u64) -> String {
    let load = |em: &mut Em| {
        let mut xi = yi.to_vec();
        xi[d] = em.isub_c(&yi[d], start);
        em.load_at(&ins[k], &xi, &shapes[k])
    };
    if k + 1 == ins.len() {
        return load(em);
    }
    let end = start + shapes[k][d];
    let cond = em.icmp_c("ult", &yi[d], end);
    em.if_vals(&cond, &["f32"], &mut |em| vec![load(em)], &mut |em| {
        vec![concat_pick(em, ins, shapes, yi, d, k + 1, end)]
    })[0]
        .clone()
}
