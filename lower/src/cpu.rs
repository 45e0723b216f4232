//! The CPU backend: every distinct kernel of a module (`ckopt_kernels::
//! KernelCache`) as one MLIR function, all in one module, lowered to LLVM
//! and JIT-compiled once by MLIR's ExecutionEngine at -O3.
//!
//! Kernel ABI: `void kN(T0 *p0, ..., TK *pK, int64 lo, int64 hi)`:
//! the kernel's inputs, outputs and (if it has one) workspace as bare
//! pointers (`memref<N x E>`, `E` the storage type of the value's element
//! type, `emit::mem_elem`; the workspace f32; the bare-pointer calling
//! convention), then
//! the range `[lo, hi)` of its splittable outermost loop
//! (`Kernel::split`), so the runtime can hand ranges to several threads.
//! A kernel knows nothing of offsets: the step program passes pointers.
//!
//! Loop structure (`vemit` computes the values):
//! - loop kernels: flat (`[lo, hi)` over the elements) or over the shape
//!   (outer dims scalar loops, dim 0 from `lo` to `hi`); the innermost
//!   dimension runs `w` lanes at a time (`w` = 16 with AVX-512, else 8),
//!   then a scalar tail. Outputs are stored after the values they need are
//!   loaded, chunk by chunk, so an output may overwrite an input it reads
//!   only at the same element (in-place aliasing).
//! - row reductions (reduced dims innermost): per result element, lane-wise
//!   partial results in a vector register plus a scalar tail accumulator,
//!   combined in a fixed order (`vector.reduction` from the tail value);
//!   prologue outputs are stored as the row is read, the epilogue runs on
//!   the result (scalar).
//! - other reductions: results accumulate in memory (the reduction's own
//!   output, else the workspace) in row-major order of the input, then the
//!   epilogue runs over the result shape.
//! - single ops (pools, concat, ...): `emit::element` per result element;
//!   the row ops (`emit::row_op`: cross_entropy_grad, the f32 gather and
//!   take_along gradients) a row at a time (`emit::rows`).
//!
//! The accumulation order of a reduction depends only on its input shape,
//! its dims and `w`, never on what it was fused with, so a recomputed
//! reduction (remat) gives the same bits as the original.

use crate::emit::{self, Em, Mem};
use crate::error::LowerError;
use crate::mlir::{Mlir, to_llvm_ir};
use crate::vemit::{Comp, VEm};
use ckopt_ir::ops::attr_ints;
use ckopt_ir::{DType, Diag, Func, Loc, OpKind, ValueId};
use ckopt_kernels::{Kernel, KernelCache, KernelKind};
use melior::ExecutionEngine;
use std::collections::HashSet;
use std::fmt::Write;

/// MLIR pipeline from the kernels module to the LLVM dialect.
pub const CPU_PIPELINE: &str = "builtin.module(arith-expand{include-bf16=true},convert-scf-to-cf,convert-math-to-llvm,convert-math-to-libm,convert-vector-to-llvm,\
expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,\
convert-cf-to-llvm,convert-func-to-llvm{use-bare-ptr-memref-call-conv=1},reconcile-unrealized-casts)";

/// The most pointer arguments a cpu kernel may take.
pub const MAX_KERNEL_PTRS: usize = 32;

/// Lanes of the vectorized loops on this machine: 16 with AVX-512, else 8.
pub fn lanes() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 16;
        }
    }
    8
}

/// The symbol name used for a ck function in MLIR/LLVM (non-identifier
/// characters become `_`).
pub fn symbol_name(name: &str) -> String {
    let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "ck_");
    }
    s
}

/// An MLIR `loc(...)` for an op's ck source location.
pub fn mlir_loc(op: &ckopt_ir::Op) -> String {
    if !op.loc.is_known() {
        return format!("loc(\"{}\")", op.kind.full_name());
    }
    let file: String = op.loc.file.chars().map(|c| if c == '"' || c == '\\' || c.is_control() { '_' } else { c }).collect();
    format!("loc(\"{file}\":{}:{})", op.loc.line, op.loc.col)
}

/// Name of kernel `i` of a cache.
pub fn kernel_symbol(i: usize) -> String {
    format!("ck_k{i}")
}

fn memref(n: u64) -> String {
    emit::memref_ty(n)
}

/// The body of one `scf.for`: (emitter, induction variable, carried values)
/// -> the next carried values.
type ForBody<'a> = dyn FnMut(&mut Em, &str, &[String]) -> Result<Vec<String>, Diag> + 'a;
/// The body of one iteration of a loop nest: (emitter, lanes, index).
type IterBody<'a> = dyn FnMut(&mut Em, usize, &[Comp]) -> Result<(), Diag> + 'a;
/// The body run once per kept index of a row reduction.
type KeptBody<'a> = dyn FnMut(&mut Em, &[Comp]) -> Result<(), Diag> + 'a;

/// `scf.for %iv = lo to hi step st` over `index` ([`emit::for_loop`]).
fn for_loop(em: &mut Em, lo: &str, hi: &str, step: &str, inits: &[(String, String)], body: &mut ForBody<'_>) -> Result<Vec<String>, Diag> {
    let inits: Vec<(String, &str)> = inits.iter().map(|(v, t)| (v.clone(), t.as_str())).collect();
    emit::for_loop(em, lo, hi, step, "index", &inits, body)
}

/// The pieces of one kernel function being emitted.
struct KFn<'a> {
    k: &'a Kernel,
    w: usize,
    /// Memref names of the kernel's inputs (parameters of `k.func`).
    ins: Vec<String>,
    /// Memref names and element counts of its outputs.
    outs: Vec<(String, u64)>,
    /// Element type of each output.
    out_dt: Vec<DType>,
    ws: Option<(String, u64)>,
}

impl KFn<'_> {
    fn out_values(&self) -> Vec<ValueId> {
        self.k.func.returned().to_vec()
    }
}

/// Loops over `shape`: dim 0 from `lo` to `hi` (or over the flat range when
/// `flat`), the innermost dim `w` lanes at a time then a scalar tail.
/// `body(em, lanes, idx)` emits one iteration.
fn shaped_loops(em: &mut Em, shape: &[u64], flat: bool, w: usize, lo: &str, hi: &str, body: &mut IterBody<'_>) -> Result<(), Diag> {
    let one = em.op("arith.constant 1 : index");
    if shape.is_empty() {
        return body(em, 1, &[]);
    }
    if (flat || shape.len() == 1) && w == 1 {
        for_loop(em, lo, hi, &one, &[], &mut |em, iv, _| {
            body(em, 1, &[Comp::S(iv.to_string())])?;
            Ok(vec![])
        })?;
        return Ok(());
    }
    if flat || shape.len() == 1 {
        // One dynamic range: vector part then tail.
        let wc = em.op(&format!("arith.constant {w} : index"));
        let span = em.op(&format!("arith.subi {hi}, {lo} : index"));
        let nv = em.op(&format!("arith.divui {span}, {wc} : index"));
        let nvw = em.op(&format!("arith.muli {nv}, {wc} : index"));
        let vend = em.op(&format!("arith.addi {lo}, {nvw} : index"));
        for_loop(em, lo, &vend, &wc, &[], &mut |em, iv, _| {
            body(em, w, &[Comp::L(iv.to_string(), 1)])?;
            Ok(vec![])
        })?;
        for_loop(em, &vend, hi, &one, &[], &mut |em, iv, _| {
            body(em, 1, &[Comp::S(iv.to_string())])?;
            Ok(vec![])
        })?;
        return Ok(());
    }
    Nest { shape, w, lo, hi, one: &one }.emit(em, 0, &mut Vec::new(), body)
}

/// A loop nest over a static shape: dim 0 over `[lo, hi)`, the innermost
/// dim vectorized (`w` lanes) then a scalar tail.
struct Nest<'a> {
    shape: &'a [u64],
    w: usize,
    lo: &'a str,
    hi: &'a str,
    one: &'a str,
}

impl Nest<'_> {
    fn emit(&self, em: &mut Em, d: usize, idx: &mut Vec<Comp>, body: &mut IterBody<'_>) -> Result<(), Diag> {
        let (w, one) = (self.w, self.one);
        if d + 1 == self.shape.len() {
            let n = self.shape[d];
            let nv = if w > 1 { n / w as u64 * w as u64 } else { 0 };
            let c0 = em.op("arith.constant 0 : index");
            let cv = em.op(&format!("arith.constant {nv} : index"));
            let cn = em.op(&format!("arith.constant {n} : index"));
            let wc = em.op(&format!("arith.constant {w} : index"));
            if nv > 0 {
                for_loop(em, &c0, &cv, &wc, &[], &mut |em, iv, _| {
                    let mut full = idx.clone();
                    full.push(Comp::L(iv.to_string(), 1));
                    body(em, w, &full)?;
                    Ok(vec![])
                })?;
            }
            if nv < n {
                for_loop(em, &cv, &cn, one, &[], &mut |em, iv, _| {
                    let mut full = idx.clone();
                    full.push(Comp::S(iv.to_string()));
                    body(em, 1, &full)?;
                    Ok(vec![])
                })?;
            }
            return Ok(());
        }
        let (a, b) = if d == 0 {
            (self.lo.to_string(), self.hi.to_string())
        } else {
            (em.op("arith.constant 0 : index"), em.op(&format!("arith.constant {} : index", self.shape[d])))
        };
        for_loop(em, &a, &b, one, &[], &mut |em, iv, _| {
            idx.push(Comp::S(iv.to_string()));
            self.emit(em, d + 1, idx, body)?;
            idx.pop();
            Ok(vec![])
        })?;
        Ok(())
    }
}

/// Emits the body of a loop kernel.
fn loop_kernel(em: &mut Em, kf: &KFn, shape: &[u64], flat: bool) -> Result<(), Diag> {
    let outs = kf.out_values();
    let func = &kf.k.func;
    shaped_loops(em, shape, flat, kf.w, "%lo", "%hi", &mut |em, lanes, idx| {
        let mut v = VEm::new(em, func, lanes, &kf.ins);
        v.flat = flat;
        let mut vals = Vec::with_capacity(outs.len());
        for &o in &outs {
            vals.push(v.value(o, idx)?);
        }
        let at = if flat && idx.len() == 1 { idx[0].clone() } else { v.linearize(idx, shape) };
        for (j, val) in vals.iter().enumerate() {
            let (m, n) = &kf.outs[j];
            v.store_typed(m, *n, kf.out_dt[j], &at, val)?;
        }
        Ok(())
    })
}

/// Values of the kernel that depend on value `r` (r included).
fn dependents(func: &Func, r: ValueId) -> HashSet<ValueId> {
    let mut dep: HashSet<ValueId> = [r].into_iter().collect();
    for op in &func.body {
        if let Some(res) = op.result
            && op.operands.iter().any(|o| dep.contains(o))
        {
            dep.insert(res);
        }
    }
    dep
}

/// Emits the body of a reduction kernel.
fn reduce_kernel(em: &mut Em, kf: &KFn, reduce: usize, rows: bool) -> Result<(), Diag> {
    let func = &kf.k.func;
    let rop = &func.body[reduce];
    let r = rop.result.ok_or_else(|| Diag::error(Loc::unknown(), "reduction without result"))?;
    let xin = rop.operands[0];
    let s_shape = func.ty(xin).shape.clone();
    let r_shape = func.ty(r).shape.clone();
    let dims: Vec<usize> = attr_ints(&rop.attrs, "dims", &[]).iter().map(|&d| d as usize).collect();
    let sum = rop.kind == OpKind::ReduceSum;
    let (comb, init) = if sum { ("addf", -0.0f32) } else { ("maxnumf", f32::NEG_INFINITY) };
    let dep = dependents(func, r);
    let outs = kf.out_values();
    // Outputs of the result shape (the epilogue, r included) and of the input shape (prologue).
    let epi: Vec<usize> = (0..outs.len()).filter(|&j| dep.contains(&outs[j])).collect();
    let pro: Vec<usize> = (0..outs.len()).filter(|&j| !dep.contains(&outs[j])).collect();
    let kept: Vec<usize> = (0..s_shape.len()).filter(|d| !dims.contains(d)).collect();
    let rank = s_shape.len();
    let w = kf.w;
    // Stores the prologue outputs at input index `idx`.
    let store_pro = |v: &mut VEm, idx: &[Comp]| -> Result<(), Diag> {
        if pro.is_empty() {
            return Ok(());
        }
        let at = v.linearize(idx, &s_shape);
        for &j in &pro {
            let val = v.value(outs[j], idx)?;
            let (m, n) = &kf.outs[j];
            v.store_typed(m, *n, kf.out_dt[j], &at, &val)?;
        }
        Ok(())
    };
    if rows {
        // Kept dims are a prefix: loop over them, reduce the suffix in registers.
        let nk = kept.len();
        let vt = format!("vector<{w}xf32>");
        let one = em.op("arith.constant 1 : index");
        let mut kept_idx: Vec<Comp> = Vec::new();
        fn kept_loops(
            em: &mut Em,
            shape: &[u64],
            nk: usize,
            d: usize,
            one: &str,
            idx: &mut Vec<Comp>,
            inner: &mut KeptBody<'_>,
        ) -> Result<(), Diag> {
            if d == nk {
                return inner(em, idx);
            }
            let (a, b) = if d == 0 {
                ("%lo".to_string(), "%hi".to_string())
            } else {
                (em.op("arith.constant 0 : index"), em.op(&format!("arith.constant {} : index", shape[d])))
            };
            for_loop(em, &a, &b, one, &[], &mut |em, iv, _| {
                idx.push(Comp::S(iv.to_string()));
                kept_loops(em, shape, nk, d + 1, one, idx, inner)?;
                idx.pop();
                Ok(vec![])
            })?;
            Ok(())
        }
        kept_loops(em, &s_shape, nk, 0, &one, &mut kept_idx, &mut |em, kidx| {
            let initv = em.op(&format!("arith.constant dense<{}> : {vt}", ckopt_ir::attr::format_f32(init)));
            let inits = em.op(&format!("arith.constant {} : f32", ckopt_ir::attr::format_f32(init)));
            // Loops over the reduced dims (all but the innermost scalar), carrying (vector acc, tail acc).
            #[allow(clippy::type_complexity)]
            fn red_loops(
                em: &mut Em,
                s_shape: &[u64],
                d: usize,
                vt: &str,
                idx: &mut Vec<Comp>,
                accs: (String, String),
                leaf: &mut dyn FnMut(&mut Em, &[Comp], (String, String)) -> Result<(String, String), Diag>,
            ) -> Result<(String, String), Diag> {
                if d + 1 == s_shape.len() {
                    return leaf(em, idx, accs);
                }
                let c0 = em.op("arith.constant 0 : index");
                let cn = em.op(&format!("arith.constant {} : index", s_shape[d]));
                let c1 = em.op("arith.constant 1 : index");
                let carried = [(accs.0.clone(), vt.to_string()), (accs.1.clone(), "f32".to_string())];
                let res = for_loop(em, &c0, &cn, &c1, &carried, &mut |em, iv, a| {
                    idx.push(Comp::S(iv.to_string()));
                    let (x, y) = red_loops(em, s_shape, d + 1, vt, idx, (a[0].clone(), a[1].clone()), leaf)?;
                    idx.pop();
                    Ok(vec![x, y])
                })?;
                Ok((res[0].clone(), res[1].clone()))
            }
            let mut idx: Vec<Comp> = kidx.to_vec();
            let n = s_shape[rank - 1];
            let nv = n / w as u64 * w as u64;
            let (accv, accs) = red_loops(em, &s_shape, nk, &vt, &mut idx, (initv, inits), &mut |em, idx, (av, as_)| {
                let c0 = em.op("arith.constant 0 : index");
                let cv = em.op(&format!("arith.constant {nv} : index"));
                let cn = em.op(&format!("arith.constant {n} : index"));
                let wc = em.op(&format!("arith.constant {w} : index"));
                let c1 = em.op("arith.constant 1 : index");
                let av2 = if nv > 0 {
                    for_loop(em, &c0, &cv, &wc, &[(av.clone(), format!("vector<{w}xf32>"))], &mut |em, iv, a| {
                        let mut full = idx.to_vec();
                        full.push(Comp::L(iv.to_string(), 1));
                        let mut v = VEm::new(em, func, w, &kf.ins);
                        let val = v.value(xin, &full)?;
                        store_pro(&mut v, &full)?;
                        Ok(vec![v.em.op(&format!("arith.{comb} {}, {val} : vector<{w}xf32>", a[0]))])
                    })?[0]
                        .clone()
                } else {
                    av.clone()
                };
                let as2 = if nv < n {
                    for_loop(em, &cv, &cn, &c1, &[(as_.clone(), "f32".into())], &mut |em, iv, a| {
                        let mut full = idx.to_vec();
                        full.push(Comp::S(iv.to_string()));
                        let mut v = VEm::new(em, func, 1, &kf.ins);
                        let val = v.value(xin, &full)?;
                        store_pro(&mut v, &full)?;
                        Ok(vec![v.em.op(&format!("arith.{comb} {}, {val} : f32", a[0]))])
                    })?[0]
                        .clone()
                } else {
                    as_.clone()
                };
                Ok((av2, as2))
            })?;
            let kind = if sum { "add" } else { "maxnumf" };
            let total = em.op(&format!("vector.reduction <{kind}>, {accv}, {accs} : vector<{w}xf32> into f32"));
            // Epilogue at the result index (scalar).
            let total = emit::round_reg(em, &total, func.ty(r).dtype, 1);
            let mut v = VEm::new(em, func, 1, &kf.ins);
            v.given.insert(r, total);
            let at = v.linearize(kidx, &r_shape);
            for &j in &epi {
                let val = v.value(outs[j], kidx)?;
                let (m, nn) = &kf.outs[j];
                v.store_typed(m, *nn, kf.out_dt[j], &at, &val)?;
            }
            Ok(())
        })
    } else {
        // Accumulate in memory: r's own output, else the workspace.
        let rn: u64 = r_shape.iter().product();
        // (an f32 accumulator: a low-precision result accumulates in the workspace)
        let own = outs.iter().position(|&o| o == r).filter(|_| func.ty(r).dtype == DType::F32);
        let acc_mem = match own {
            Some(j) => kf.outs[j].0.clone(),
            None => {
                kf.ws.as_ref().map(|(m, _)| m.clone()).ok_or_else(|| Diag::error(Loc::unknown(), "column reduction without workspace"))?
            }
        };
        // 1. init
        let c0 = em.op("arith.constant 0 : index");
        let crn = em.op(&format!("arith.constant {rn} : index"));
        shaped_loops(em, &[rn], true, w, &c0, &crn, &mut |em, lanes, idx| {
            let mut v = VEm::new(em, func, lanes, &kf.ins);
            let c = v.cf(init);
            v.store(&acc_mem, rn, &idx[0], &c)
        })?;
        // 2. accumulate in row-major order of the input (lanes only on a kept innermost dim)
        let lanes = if rank > 0 && kept.contains(&(rank - 1)) { w } else { 1 };
        let full = s_shape.first().copied().unwrap_or(1);
        let lo = em.op("arith.constant 0 : index");
        let hi = em.op(&format!("arith.constant {full} : index"));
        shaped_loops(em, &s_shape, false, lanes, &lo, &hi, &mut |em, l, idx| {
            let mut v = VEm::new(em, func, l, &kf.ins);
            let val = v.value(xin, idx)?;
            store_pro(&mut v, idx)?;
            let kidx: Vec<Comp> = kept.iter().map(|&d| idx[d].clone()).collect();
            let at = v.linearize(&kidx, &r_shape);
            let old = v.load_mem(&acc_mem, rn, &at);
            let t = v.vt();
            let new = v.em.op(&format!("arith.{comb} {old}, {val} : {t}"));
            v.store(&acc_mem, rn, &at, &new)
        })?;
        // 3. epilogue over the result shape
        let others: Vec<usize> = epi.iter().copied().filter(|&j| Some(j) != own).collect();
        if !others.is_empty() {
            let lo = em.op("arith.constant 0 : index");
            let hi = em.op(&format!("arith.constant {} : index", r_shape.first().copied().unwrap_or(1)));
            shaped_loops(em, &r_shape, false, w, &lo, &hi, &mut |em, l, idx| {
                let mut v = VEm::new(em, func, l, &kf.ins);
                let at = v.linearize(idx, &r_shape);
                let acc = v.load_mem(&acc_mem, rn, &at);
                let acc = emit::round_reg(v.em, &acc, func.ty(r).dtype, l);
                v.given.insert(r, acc);
                for &j in &others {
                    let val = v.value(outs[j], idx)?;
                    let (m, n) = &kf.outs[j];
                    v.store_typed(m, *n, kf.out_dt[j], &at, &val)?;
                }
                Ok(())
            })?;
        }
        Ok(())
    }
}

/// Emits the body of a single-op kernel: `emit::element` per result element.
fn single_kernel(em: &mut Em, kf: &KFn) -> Result<(), Diag> {
    let func = &kf.k.func;
    let op = &func.body[0];
    let ins: Vec<Mem> = op
        .operands
        .iter()
        .map(|o| {
            let p = func.params.iter().position(|p| p.value == *o).unwrap_or(0);
            Mem { name: kf.ins[p].clone(), n: func.ty(*o).elems(), dt: func.ty(*o).dtype }
        })
        .collect();
    let (m, n) = kf.outs[0].clone();
    let out = Mem { name: m, n, dt: kf.out_dt[0] };
    if emit::row_op(func, op) {
        // Ops computed a row at a time (the split loop runs over rows).
        return emit::rows(em, func, op, &ins, &out, "%lo", "%hi", kf.w);
    }
    let one = em.op("arith.constant 1 : index");
    for_loop(em, "%lo", "%hi", &one, &[], &mut |em, iv, _| {
        let v = emit::element(em, func, op, &ins, iv)?;
        em.store(&out, iv, &v);
        Ok(vec![])
    })?;
    Ok(())
}

/// One kernel as an MLIR `func.func @name(ptrs..., %lo: index, %hi: index)`.
pub fn kernel_mlir(name: &str, k: &Kernel, w: usize) -> Result<String, Diag> {
    let func = &k.func;
    let ins: Vec<String> = (0..func.params.len()).map(|i| format!("%in{i}")).collect();
    let outs: Vec<(String, u64)> = func.result_types.iter().enumerate().map(|(j, t)| (format!("%out{j}"), t.elems())).collect();
    let out_dt: Vec<DType> = func.result_types.iter().map(|t| t.dtype).collect();
    let ws = (k.workspace > 0).then(|| ("%ws".to_string(), k.workspace / 4));
    let mut params: Vec<String> = func
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}: {}", ins[i], emit::memref_of(func.ty(p.value).elems(), func.ty(p.value).dtype)))
        .collect();
    params.extend(outs.iter().zip(&out_dt).map(|((m, n), dt)| format!("{m}: {}", emit::memref_of(*n, *dt))));
    if let Some((m, n)) = &ws {
        params.push(format!("{m}: {}", memref(*n)));
    }
    params.push("%lo: index".into());
    params.push("%hi: index".into());
    let kf = KFn { k, w, ins, outs, out_dt, ws };
    let mut em = Em::new("t", 2);
    match &k.kind {
        KernelKind::Loop { shape, flat } => loop_kernel(&mut em, &kf, shape, *flat)?,
        KernelKind::Reduce { reduce, rows } => reduce_kernel(&mut em, &kf, *reduce, *rows)?,
        KernelKind::Single => single_kernel(&mut em, &kf)?,
    }
    let mut s = String::new();
    for line in k.key.lines().filter(|l| l.contains("ck.") || l.starts_with("//")) {
        let _ = writeln!(s, "  // {}", line.trim().trim_start_matches("// "));
    }
    let _ = writeln!(s, "  func.func @{name}({}) {{", params.join(", "));
    s.push_str(&em.out);
    let _ = writeln!(s, "    return");
    let _ = writeln!(s, "  }}");
    Ok(s)
}

/// Every kernel of `cache` as one upstream MLIR module.
pub fn kernels_mlir(cache: &KernelCache, w: usize) -> Result<String, Diag> {
    let mut s = String::from("module {\n");
    for (i, k) in cache.kernels.iter().enumerate() {
        if k.num_ptrs() > MAX_KERNEL_PTRS {
            let op = k.func.body.first().map(|o| o.kind.full_name()).unwrap_or_default();
            return Err(Diag::error(
                Loc::unknown(),
                format!(
                    "a '{op}' kernel takes {} buffers; the cpu backend supports at most {MAX_KERNEL_PTRS} (split the op, e.g. a concat of fewer operands)",
                    k.num_ptrs()
                ),
            ));
        }
        s.push_str(&kernel_mlir(&kernel_symbol(i), k, w)?);
    }
    s.push_str("}\n");
    Ok(s)
}

/// The kernels lowered to LLVM IR text.
pub fn kernels_llvm_ir(cache: &KernelCache, w: usize) -> Result<String, Diag> {
    let text = kernels_mlir(cache, w)?;
    let ml = Mlir::new();
    let bad = |e: LowerError| Diag::error(Loc::unknown(), format!("lowering the kernels for the cpu backend failed: {e}"));
    let mut module = ml.parse(&text).map_err(bad)?;
    ml.run(&mut module, CPU_PIPELINE).map_err(bad)?;
    to_llvm_ir(&ml, &module).map_err(bad)
}

/// The compiled kernels of a module: one function pointer per cache entry.
pub struct CpuKernels {
    // Field order matters: the engine is dropped before the context.
    engine: ExecutionEngine,
    _mlir: Mlir,
    ptrs: Vec<(*mut (), usize)>,
    /// The MLIR that was compiled.
    pub mlir: String,
    pub lanes: usize,
}

// SAFETY: the JIT code and the engine are immutable after compilation; the
// kernels are pure functions of the buffers they are given.
unsafe impl Send for CpuKernels {}
unsafe impl Sync for CpuKernels {}

/// JIT-compiles every kernel of `cache` (LLVM -O`opt`).
pub fn compile_kernels(cache: &KernelCache, opt: usize) -> Result<CpuKernels, Diag> {
    let w = lanes();
    let text = kernels_mlir(cache, w)?;
    let m = Mlir::new();
    let bad = |e: String| Diag::error(Loc::unknown(), format!("compiling the kernels for the cpu backend failed: {e}"));
    let bad_mlir = |e: LowerError| bad(e.to_string());
    let engine = {
        let mut module = m.parse(&text).map_err(bad_mlir)?;
        m.run(&mut module, CPU_PIPELINE).map_err(bad_mlir)?;
        ExecutionEngine::new(&module, opt.min(3), &[], false, false)
    };
    let mut ptrs = Vec::with_capacity(cache.len());
    for (i, k) in cache.kernels.iter().enumerate() {
        let p = engine.lookup(&kernel_symbol(i));
        if p.is_null() {
            return Err(bad(format!("the JIT has no symbol for kernel {} {}", kernel_symbol(i), m.take_diags())));
        }
        ptrs.push((p, k.num_ptrs()));
    }
    Ok(CpuKernels { engine, _mlir: m, ptrs, mlir: text, lanes: w })
}

macro_rules! call_arity {
    ($f:expr, $p:expr, $lo:expr, $hi:expr, $($i:tt)*) => {{
        let f: extern "C" fn($(call_arity!(@ty $i),)* i64, i64) = std::mem::transmute($f);
        f($($p[$i],)* $lo, $hi)
    }};
    (@ty $i:tt) => { *mut f32 };
}

impl CpuKernels {
    pub fn len(&self) -> usize {
        self.ptrs.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ptrs.is_empty()
    }
    /// Calls kernel `k` on `ptrs` over `[lo, hi)` of its split loop.
    ///
    /// # Safety
    /// `ptrs` must point to buffers of the sizes the kernel was compiled
    /// for (its inputs, outputs, workspace), valid for the call; ranges
    /// given to concurrent calls must not overlap.
    pub unsafe fn call(&self, k: usize, ptrs: &[*mut f32], lo: i64, hi: i64) -> Result<(), LowerError> {
        let Some(&(f, n)) = self.ptrs.get(k) else {
            return Err(LowerError::NoKernel(k));
        };
        if ptrs.len() != n {
            return Err(LowerError::Arity { kernel: k, takes: n, given: ptrs.len() });
        }
        let _ = &self.engine;
        // SAFETY: `f` is the JIT's function for kernel k, whose C signature
        // is `n` float pointers then two i64 (see the module doc).
        unsafe {
            match n {
                1 => call_arity!(f, ptrs, lo, hi, 0),
                2 => call_arity!(f, ptrs, lo, hi, 0 1),
                3 => call_arity!(f, ptrs, lo, hi, 0 1 2),
                4 => call_arity!(f, ptrs, lo, hi, 0 1 2 3),
                5 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4),
                6 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5),
                7 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6),
                8 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7),
                9 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8),
                10 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9),
                11 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10),
                12 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11),
                13 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12),
                14 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
                15 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
                16 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
                17 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
                18 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
                19 => call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18),
                20 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19)
                }
                21 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20)
                }
                22 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21)
                }
                23 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22)
                }
                24 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23)
                }
                25 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24)
                }
                26 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25)
                }
                27 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26)
                }
                28 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27)
                }
                29 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28)
                }
                30 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29)
                }
                31 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30)
                }
                32 => {
                    call_arity!(f, ptrs, lo, hi, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
                }
                _ => {
                    return Err(LowerError::TooManyPointers { kernel: k, takes: n, max: MAX_KERNEL_PTRS });
                }
            }
        }
        Ok(())
    }
}

/// Every function of a planned module for the cpu backend: the step
/// programs (as `//` comments, one line per step) and the distinct kernels
/// as one upstream MLIR module.
pub fn cpu_module_mlir(m: &ckopt_ir::Module) -> Result<String, Diag> {
    let (programs, cache) = module_programs(m)?;
    let mut s = String::new();
    for p in &programs {
        for line in p.describe(kernel_symbol).lines() {
            let _ = writeln!(s, "// {line}");
        }
    }
    s.push_str(&kernels_mlir(&cache, lanes())?);
    Ok(s)
}

/// The kernels of a planned module as LLVM IR, after the step programs as `;` comments.
pub fn cpu_module_llvm_ir(m: &ckopt_ir::Module) -> Result<String, Diag> {
    let (programs, cache) = module_programs(m)?;
    let mut s = String::new();
    for p in &programs {
        for line in p.describe(kernel_symbol).lines() {
            let _ = writeln!(s, "; {line}");
        }
    }
    s.push_str(&kernels_llvm_ir(&cache, lanes())?);
    Ok(s)
}

/// The step programs of every function of `m` and their shared kernels.
pub fn module_programs(m: &ckopt_ir::Module) -> Result<(Vec<ckopt_kernels::StepProgram>, KernelCache), Diag> {
    let mut cache = KernelCache::new();
    let programs = m.funcs.iter().map(|f| ckopt_kernels::build_program(f, &mut cache)).collect::<Result<Vec<_>, _>>()?;
    Ok((programs, cache))
}
