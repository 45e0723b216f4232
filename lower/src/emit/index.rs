//! Indexing ops and the integer-label loss, per result element (single-op
//! kernels): `gather`, `take_along`, their gradients, `cross_entropy`, and
//! `cross_entropy_grad` a row at a time (`rows`).
//!
//! Semantics and summation orders are the interpreter's
//! (`ckopt_interp` mixed ops, docs/ir.md):
//! - `gather_grad` / `take_along_grad` are scatter-adds computed as gathers:
//!   each result element loops over the index operand in increasing flat
//!   position and adds the matching `dy` elements, from +0.0. That is the
//!   interpreter's order for every element, so the bits are the
//!   interpreter's and do not depend on how the result range is split
//!   across threads (deterministic by construction, no atomics).
//! - `cross_entropy`: rows in increasing order, `m` = max from -inf
//!   (`maxnumf`, as `f32::max`), `s` = sum of `exp(x - m)` from -0.0,
//!   `(m + ln s) - x[label]` summed from -0.0 over kept rows, divided by the
//!   kept count. On the cpu the exps of a row are computed 16 lanes at a
//!   time and added to `s` lane by lane, in the same order.
//!
//! Out-of-range indices: the runtime checks every stored index operand
//! before the kernel runs and reports the interpreter's error (op, index,
//! position, bound); the kernels themselves clamp an out-of-range index to
//! 0 (gather, take_along) or never match it (the gradients), so they never
//! read outside their operands whatever they are given.
//! Complexity per result element: gather/take_along O(rank);
//! gather_grad O(indices); take_along_grad O(extent of the axis);
//! cross_entropy O(N·C) once; cross_entropy_grad O(C) per row element.
//!
//! Row kernels (`rows`, the cpu backend): `cross_entropy_grad`, and the
//! gradients with an f32 result as scatter-adds over result rows that
//! keep the same order (each element: +0.0, then its matches in increasing
//! index position): `gather_grad` O(result + P·K·(1 + Q matched)) per call
//! instead of O(result · K), `take_along_grad` O(result + indices).

use super::elementwise::{Lanes, MathEm};
use super::{Ctx, Em, Mem, from_mem, lanes_of, mem_elem, reg_elem};
use ckopt_ir::mixed::ignore_index;
use ckopt_ir::{DType, Diag, Func, Op, OpKind};

/// `(product of dims before a, dim a, product of dims after a)`.
fn split(shape: &[u64], a: usize) -> (u64, u64, u64) {
    (shape[..a].iter().product(), shape[a], shape[a + 1..].iter().product())
}

fn axis(c: &Ctx, name: &str) -> Result<usize, Diag> {
    Ok(c.int_attr(name)?.max(0) as usize)
}

/// Index element `at` of `m` (i64 or i32) as i64.
fn index_i64(em: &mut Em, m: &Mem, at: &str) -> String {
    let v = em.load(m, at);
    if m.dt == DType::I32 { em.op(&format!("arith.extsi {v} : i32 to i64")) } else { v }
}

/// `v` (i64) as an `index` when `0 <= v < n`, else 0.
fn clamp_index(em: &mut Em, v: &str, n: u64) -> String {
    checked_index(em, v, n).0
}

/// An `index` value as i64.
fn as_i64(em: &mut Em, i: &str) -> String {
    em.op(&format!("arith.index_cast {i} : index to i64"))
}

/// `y[p, j, q] = x[p, idx[j], q]`.
pub(super) fn gather(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let a = axis(c, "axis")?;
    let (_, n, inner) = split(&c.xs(0), a);
    let k = c.ins[1].n;
    let kin = em.ci(k * inner);
    let p = em.op(&format!("arith.divui {}, {kin} : index", c.idx));
    let rest = em.op(&format!("arith.remui {}, {kin} : index", c.idx));
    let inn = em.ci(inner);
    let j = em.op(&format!("arith.divui {rest}, {inn} : index"));
    let q = em.op(&format!("arith.remui {rest}, {inn} : index"));
    let v = index_i64(em, &c.ins[1], &j);
    let i = clamp_index(em, &v, n);
    let pn = em.imul_c(&p, n);
    let row = em.iadd(&pn, &i);
    let ri = em.imul_c(&row, inner);
    let src = em.iadd(&ri, &q);
    Ok(em.load(&c.ins[0], &src))
}

/// `dx[p, i, q] = sum over j (increasing) with idx[j] == i of dy[p, j, q]`, from +0.0.
pub(super) fn gather_grad(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let a = axis(c, "axis")?;
    let (_, n, inner) = split(&c.ys, a);
    let k = c.ins[0].n;
    let nin = em.ci(n * inner);
    let p = em.op(&format!("arith.divui {}, {nin} : index", c.idx));
    let rest = em.op(&format!("arith.remui {}, {nin} : index", c.idx));
    let inn = em.ci(inner);
    let i = em.op(&format!("arith.divui {rest}, {inn} : index"));
    let q = em.op(&format!("arith.remui {rest}, {inn} : index"));
    let i64v = as_i64(em, &i);
    let pk = em.imul_c(&p, k);
    let zero = em.cf(0.0);
    let nz = em.cf(-0.0);
    let (idx_m, dy_m) = (c.ins[0].clone(), c.ins[1].clone());
    let r = em.for_iter(k, &[(zero, "f32")], &mut |em, j, acc| {
        let v = index_i64(em, &idx_m, j);
        let hit = em.op(&format!("arith.cmpi eq, {v}, {i64v} : i64"));
        let row = em.iadd(&pk, j);
        let ri = em.imul_c(&row, inner);
        let at = em.iadd(&ri, &q);
        let d = em.load(&dy_m, &at);
        let add = em.op(&format!("arith.select {hit}, {d}, {nz} : f32"));
        vec![em.fbin("addf", &acc[0], &add)]
    });
    Ok(r[0].clone())
}

/// `y[i] = x[i with i[axis] = idx[i]]`.
pub(super) fn take_along(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let a = axis(c, "axis")?;
    let xs = c.xs(0);
    let is = c.xs(1);
    let v = index_i64(em, &c.ins[1], c.idx);
    let i = clamp_index(em, &v, xs[a]);
    let mut mi = em.delin(c.idx, &is);
    mi[a] = i;
    let src = em.lin(&mi, &xs);
    Ok(em.load(&c.ins[0], &src))
}

/// `dx[i] = sum over t (increasing) with idx[i with i[axis] = t] == i[axis]
/// of dy[i with i[axis] = t]`, from +0.0.
pub(super) fn take_along_grad(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let a = axis(c, "axis")?;
    let is = c.xs(0);
    let m = is[a];
    let ys = c.ys.clone();
    let mi = em.delin(c.idx, &ys);
    let target = as_i64(em, &mi[a]);
    let zero = em.cf(0.0);
    let nz = em.cf(-0.0);
    let (idx_m, dy_m) = (c.ins[0].clone(), c.ins[1].clone());
    let r = em.for_iter(m, &[(zero, "f32")], &mut |em, t, acc| {
        let mut pos = mi.clone();
        pos[a] = t.to_string();
        let at = em.lin(&pos, &is);
        let v = index_i64(em, &idx_m, &at);
        let hit = em.op(&format!("arith.cmpi eq, {v}, {target} : i64"));
        let d = em.load(&dy_m, &at);
        let add = em.op(&format!("arith.select {hit}, {d}, {nz} : f32"));
        vec![em.fbin("addf", &acc[0], &add)]
    });
    Ok(r[0].clone())
}

/// Row `n` of the logits: `(m, s)` = (max from -inf, sum of exp(x - m) from -0.0).
fn row_stats(em: &mut Em, x: &Mem, n: &str, cols: u64) -> Result<(String, String), Diag> {
    let base = em.imul_c(n, cols);
    let ninf = em.cf(f32::NEG_INFINITY);
    let m = em.for_iter(cols, &[(ninf, "f32")], &mut |em, j, acc| {
        let at = em.iadd(&base, j);
        let v = em.load(x, &at);
        vec![em.fbin("maxnumf", &acc[0], &v)]
    })[0]
        .clone();
    // The sum of exp(x - m) in increasing column order from -0.0. On the cpu
    // the exps are computed EXP_LANES at a time (each lane the same f32
    // operations as a scalar exp, `ckopt_ir::math`) and added to the one
    // scalar sum lane by lane, so the order, and the bits, are the scalar
    // loop's; then the columns left over one at a time.
    let w = if em.nvptx { 1 } else { EXP_LANES };
    let nv = if w > 1 { cols / w as u64 * w as u64 } else { 0 };
    let nz = em.cf(-0.0);
    let mut s = nz;
    if nv > 0 {
        let (c0, cv, cw) = (em.ci(0), em.ci(nv), em.ci(w as u64));
        let vt = lanes_of(w, "f32");
        let mv = em.op(&format!("vector.broadcast {m} : f32 to {vt}"));
        let init = [(s.clone(), "f32")];
        s = super::for_loop(em, &c0, &cv, &cw, "index", &init, &mut |em, j, acc| {
            let at = em.iadd(&base, j);
            let raw = em.op(&format!("vector.load {}[{at}] : {}, {}", x.name, x.ty(), lanes_of(w, mem_elem(x.dt))));
            let v = from_mem(em, &raw, x.dt, w);
            let d = em.op(&format!("arith.subf {v}, {mv} : {vt}"));
            let e = ckopt_ir::math::exp(&mut MathEm(&mut Vector { em, w }), &d);
            let mut a = acc[0].clone();
            for l in 0..w {
                let el = em.op(&format!("vector.extract {e}[{l}] : f32 from {vt}"));
                a = em.fbin("addf", &a, &el);
            }
            Ok(vec![a])
        })?[0]
            .clone();
    }
    let (cv, cn, c1) = (em.ci(nv), em.ci(cols), em.ci(1));
    let init = [(s.clone(), "f32")];
    let s = super::for_loop(em, &cv, &cn, &c1, "index", &init, &mut |em, j, acc| {
        let at = em.iadd(&base, j);
        let v = em.load(x, &at);
        let d = em.fbin("subf", &v, &m);
        let e = ckopt_ir::math::exp(&mut MathEm(em), &d);
        Ok(vec![em.fbin("addf", &acc[0], &e)])
    })?[0]
        .clone();
    Ok((m, s))
}

/// Lanes of the vectorized exps in `row_stats` (one AVX-512 register).
const EXP_LANES: usize = 16;

/// `w`-lane vector values for `ckopt_ir::math` (`MathEm`) in a scalar emitter.
struct Vector<'a> {
    em: &'a mut Em,
    w: usize,
}

impl Lanes for Vector<'_> {
    fn em(&mut self) -> &mut Em {
        self.em
    }
    fn lanes(&self) -> usize {
        self.w
    }
    fn cf(&mut self, v: f32) -> String {
        let t = lanes_of(self.w, "f32");
        self.em.op(&format!("arith.constant dense<{}> : {t}", ckopt_ir::attr::format_f32(v)))
    }
    fn ci64(&mut self, v: u64) -> String {
        let t = lanes_of(self.w, "i64");
        self.em.op(&format!("arith.constant dense<{}> : {t}", v as i64))
    }
}

/// Label `n` as i64 and whether it is kept (`!= ignore_index`).
fn label(em: &mut Em, labels: &Mem, n: &str, ign: i64) -> (String, String) {
    let l = index_i64(em, labels, n);
    let ig = em.op(&format!("arith.constant {ign} : i64"));
    let kept = em.op(&format!("arith.cmpi ne, {l}, {ig} : i64"));
    (l, kept)
}

/// The number of kept labels, as f32 (counted in increasing row order).
fn kept_count(em: &mut Em, labels: &Mem, rows: u64, ign: i64) -> String {
    let z = em.cf(0.0);
    let one = em.cf(1.0);
    em.for_iter(rows, &[(z, "f32")], &mut |em, n, acc| {
        let (_, kept) = label(em, labels, n, ign);
        let inc = em.fbin("addf", &acc[0], &one);
        vec![em.op(&format!("arith.select {kept}, {inc}, {} : f32", acc[0]))]
    })[0]
        .clone()
}

/// The mean loss over kept rows (the result's only element).
pub(super) fn cross_entropy(em: &mut Em, c: &Ctx) -> Result<String, Diag> {
    let xs = c.xs(0);
    let (rows, cols) = (xs[0], xs[1]);
    let ign = ignore_index(&c.op.attrs);
    let (x, labels) = (c.ins[0].clone(), c.ins[1].clone());
    let nz = em.cf(-0.0);
    let (c0, cr, c1) = (em.ci(0), em.ci(rows), em.ci(1));
    let total = super::for_loop(em, &c0, &cr, &c1, "index", &[(nz, "f32")], &mut |em, n, acc| {
        let (l, kept) = label(em, &labels, n, ign);
        let li = clamp_index(em, &l, cols);
        let (m, s) = row_stats(em, &x, n, cols)?;
        let ls = em.op(&format!("math.log {s} : f32"));
        let lse = em.fbin("addf", &m, &ls);
        let base = em.imul_c(n, cols);
        let at = em.iadd(&base, &li);
        let xl = em.load(&x, &at);
        let loss = em.fbin("subf", &lse, &xl);
        let sum = em.fbin("addf", &acc[0], &loss);
        Ok(vec![em.op(&format!("arith.select {kept}, {sum}, {} : f32", acc[0]))])
    })?[0]
        .clone();
    let count = kept_count(em, &labels, rows, ign);
    Ok(em.fbin("divf", &total, &count))
}

/// Whether `op` is computed a row at a time by `rows` (its kernel's split
/// loop runs over rows, `ckopt_kernels::kernel::row_extent`):
/// `cross_entropy_grad`, and `gather_grad`/`take_along_grad` with f32 results.
pub fn row_op(f: &Func, op: &Op) -> bool {
    ckopt_kernels::kernel::row_extent(f, op).is_some()
}

/// `dst[d + q] = dst[d + q] + src[s + q]` for `q` in `[0, n)` (f32 memrefs),
/// `w` lanes at a time, then a scalar tail.
fn add_run(em: &mut Em, dst: &Mem, d: &str, src: &Mem, s: &str, n: u64, w: usize) -> Result<(), Diag> {
    let nv = if w > 1 { n / w as u64 * w as u64 } else { 0 };
    let (c0, cv, cn, cw, c1) = (em.ci(0), em.ci(nv), em.ci(n), em.ci(w as u64), em.ci(1));
    let (dt, st) = (dst.ty(), src.ty());
    if nv > 0 {
        super::for_loop(em, &c0, &cv, &cw, "index", &[], &mut |em, q, _| {
            let (di, si) = (em.iadd(d, q), em.iadd(s, q));
            let a = em.op(&format!("vector.load {}[{di}] : {dt}, vector<{w}xf32>", dst.name));
            let b = em.op(&format!("vector.load {}[{si}] : {st}, vector<{w}xf32>", src.name));
            let c = em.op(&format!("arith.addf {a}, {b} : vector<{w}xf32>"));
            em.line(&format!("vector.store {c}, {}[{di}] : {dt}, vector<{w}xf32>", dst.name));
            Ok(vec![])
        })?;
    }
    if nv < n {
        super::for_loop(em, &cv, &cn, &c1, "index", &[], &mut |em, q, _| {
            let (di, si) = (em.iadd(d, q), em.iadd(s, q));
            let a = em.load(dst, &di);
            let b = em.load(src, &si);
            let c = em.fbin("addf", &a, &b);
            em.store(dst, &di, &c);
            Ok(vec![])
        })?;
    }
    Ok(())
}

/// `(v as index, 0 <= v < n)` for an index element `v` (i64); the index is 0 when out of range.
fn checked_index(em: &mut Em, v: &str, n: u64) -> (String, String) {
    let z = em.op("arith.constant 0 : i64");
    let hi = em.op(&format!("arith.constant {n} : i64"));
    let a = em.op(&format!("arith.cmpi sge, {v}, {z} : i64"));
    let b = em.op(&format!("arith.cmpi slt, {v}, {hi} : i64"));
    let ok = em.op(&format!("arith.andi {a}, {b} : i1"));
    let c = em.op(&format!("arith.select {ok}, {v}, {z} : i64"));
    (em.op(&format!("arith.index_cast {c} : i64 to index")), ok)
}

/// Rows `[lo, hi)` (`[P·N]`) of `gather_grad(idx, dy)` (f32) into `dx` `[P, N, Q]`:
/// each row zeroed, then for every `p` of the range and every index
/// position `j` in increasing order, `dx[p, idx[j]] += dy[p, j]` when that
/// row is in the range. Each element is `+0.0 + dy[p, j1, q] + dy[p, j2, q]
/// + ...` over its matches in increasing `j` (the interpreter's sum), so the
/// split does not change a bit. O((hi - lo)·Q + P_range·K·(1 + matched Q)).
fn gather_grad_rows(em: &mut Em, f: &Func, op: &Op, ins: &[Mem], out: &Mem, lo: &str, hi: &str, w: usize) -> Result<(), Diag> {
    let ys = &f.ty(op.result.unwrap_or(op.operands[0])).shape;
    let a = op.int_attr("axis").unwrap_or(0).max(0) as usize;
    let (_, n, inner) = split(ys, a);
    let (idx, dy) = (&ins[0], &ins[1]);
    let k = idx.n;
    let z = em.cf(0.0);
    let (c1, cin) = (em.ci(1), em.ci(inner));
    let (zlo, zhi) = (em.imul(lo, &cin), em.imul(hi, &cin));
    super::for_loop(em, &zlo, &zhi, &c1, "index", &[], &mut |em, e, _| {
        em.store(out, e, &z);
        Ok(vec![])
    })?;
    let (cn, cn1) = (em.ci(n.max(1)), em.ci(n.max(1) - 1));
    let plo = em.op(&format!("arith.divui {lo}, {cn} : index"));
    let hn = em.iadd(hi, &cn1);
    let phi = em.op(&format!("arith.divui {hn}, {cn} : index"));
    let (c0, ck) = (em.ci(0), em.ci(k));
    super::for_loop(em, &plo, &phi, &c1, "index", &[], &mut |em, p, _| {
        let pn = em.imul_c(p, n);
        let pk = em.imul_c(p, k);
        super::for_loop(em, &c0, &ck, &c1, "index", &[], &mut |em, j, _| {
            let v = index_i64(em, idx, j);
            let (i, ok) = checked_index(em, &v, n);
            let r = em.iadd(&pn, &i);
            let ge = em.op(&format!("arith.cmpi uge, {r}, {lo} : index"));
            let lt = em.op(&format!("arith.cmpi ult, {r}, {hi} : index"));
            let inr = em.op(&format!("arith.andi {ge}, {lt} : i1"));
            let hit = em.op(&format!("arith.andi {inr}, {ok} : i1"));
            em.if_then(&hit, &mut |em| {
                let d = em.imul_c(&r, inner);
                let row = em.iadd(&pk, j);
                let s = em.imul_c(&row, inner);
                add_run(em, out, &d, dy, &s, inner, w)
            })?;
            Ok(vec![])
        })?;
        Ok(vec![])
    })?;
    Ok(())
}

/// Fibres `[lo, hi)` (`[P·Q]`) of `take_along_grad(idx, dy)` (f32) into `dx`
/// `[P, N, Q]` (`idx`, `dy`: `[P, M, Q]`): fibre `(p, q)` zeroed, then for
/// `t` in increasing order `dx[p, idx[p, t, q], q] += dy[p, t, q]`: each
/// element sums its matches in increasing `t` from +0.0 (the interpreter's
/// order). O((hi - lo)·(N + M)).
fn take_along_grad_rows(em: &mut Em, f: &Func, op: &Op, ins: &[Mem], out: &Mem, lo: &str, hi: &str) -> Result<(), Diag> {
    let ys = &f.ty(op.result.unwrap_or(op.operands[0])).shape;
    let a = op.int_attr("axis").unwrap_or(0).max(0) as usize;
    let (_, n, inner) = split(ys, a);
    let m = f.ty(op.operands[0]).shape.get(a).copied().unwrap_or(0);
    let (idx, dy) = (&ins[0], &ins[1]);
    let z = em.cf(0.0);
    let (c0, c1, cn, cm) = (em.ci(0), em.ci(1), em.ci(n), em.ci(m));
    super::for_loop(em, lo, hi, &c1, "index", &[], &mut |em, fi, _| {
        let cq = em.ci(inner);
        let p = em.op(&format!("arith.divui {fi}, {cq} : index"));
        let q = em.op(&format!("arith.remui {fi}, {cq} : index"));
        let pn = em.imul_c(&p, n * inner);
        let bx = em.iadd(&pn, &q);
        let pm = em.imul_c(&p, m * inner);
        let bi = em.iadd(&pm, &q);
        super::for_loop(em, &c0, &cn, &c1, "index", &[], &mut |em, i, _| {
            let o = em.imul_c(i, inner);
            let at = em.iadd(&bx, &o);
            em.store(out, &at, &z);
            Ok(vec![])
        })?;
        super::for_loop(em, &c0, &cm, &c1, "index", &[], &mut |em, t, _| {
            let o = em.imul_c(t, inner);
            let at = em.iadd(&bi, &o);
            let v = index_i64(em, idx, &at);
            let (i, ok) = checked_index(em, &v, n);
            em.if_then(&ok, &mut |em| {
                let o = em.imul_c(&i, inner);
                let d = em.iadd(&bx, &o);
                let old = em.load(out, &d);
                let g = em.load(dy, &at);
                let s = em.fbin("addf", &old, &g);
                em.store(out, &d, &s);
                Ok(())
            })?;
            Ok(vec![])
        })?;
        Ok(vec![])
    })?;
    Ok(())
}

/// Rows `[lo, hi)` of a row op (`row_op`) into `out`, `w` lanes where the
/// rows are contiguous: `gather_grad`, `take_along_grad` (above) and
/// `cross_entropy_grad(logits, labels, dy)`:
/// kept rows `(exp(x - m) / s - [c == label]) * (dy / count)`, ignored rows 0
/// (`count`, the kept labels, counted once per call).
#[allow(clippy::too_many_arguments)]
pub fn rows(em: &mut Em, f: &Func, op: &Op, ins: &[Mem], out: &Mem, lo: &str, hi: &str, w: usize) -> Result<(), Diag> {
    let bad = |m: &str| Diag::error(op.loc.clone(), format!("'{}' op: {m}", op.kind.full_name()));
    if !row_op(f, op) {
        return Err(bad("is not a row op"));
    }
    match op.kind {
        OpKind::GatherGrad if ins.len() == 2 => return gather_grad_rows(em, f, op, ins, out, lo, hi, w),
        OpKind::TakeAlongGrad if ins.len() == 2 => return take_along_grad_rows(em, f, op, ins, out, lo, hi),
        OpKind::CrossEntropyGrad if ins.len() == 3 => {}
        _ => return Err(bad("is not a row op")),
    }
    let xs = &f.ty(op.operands[0]).shape;
    let (rows, cols) = (xs[0], xs[1]);
    let ign = ignore_index(&op.attrs);
    let (x, labels, dy) = (&ins[0], &ins[1], &ins[2]);
    if reg_elem(dy.dt) != "f32" {
        return Err(bad("dy must be a float"));
    }
    let count = kept_count(em, labels, rows, ign);
    let c0 = em.ci(0);
    let d = em.load(dy, &c0);
    let g = em.fbin("divf", &d, &count);
    let one = em.ci(1);
    super::for_loop(em, lo, hi, &one, "index", &[], &mut |em, n, _| {
        let (l, kept) = label(em, labels, n, ign);
        let (m, s) = row_stats(em, x, n, cols)?;
        let base = em.imul_c(n, cols);
        let z = em.cf(0.0);
        let onef = em.cf(1.0);
        let (c0, cn, c1) = (em.ci(0), em.ci(cols), em.ci(1));
        super::for_loop(em, &c0, &cn, &c1, "index", &[], &mut |em, j, _| {
            let at = em.iadd(&base, j);
            let v = em.load(x, &at);
            let dd = em.fbin("subf", &v, &m);
            let e = ckopt_ir::math::exp(&mut MathEm(em), &dd);
            let p = em.fbin("divf", &e, &s);
            let ji = as_i64(em, j);
            let is_l = em.op(&format!("arith.cmpi eq, {ji}, {l} : i64"));
            let t = em.op(&format!("arith.select {is_l}, {onef}, {z} : f32"));
            let pt = em.fbin("subf", &p, &t);
            let r = em.fbin("mulf", &pt, &g);
            let y = em.op(&format!("arith.select {kept}, {r}, {z} : f32"));
            em.store(out, &at, &y);
            Ok(vec![])
        })?;
        Ok(vec![])
    })?;
    Ok(())
}
