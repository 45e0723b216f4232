//! CUDA code of the kernels of a module (`ckopt_kernels::KernelCache`) as
//! MLIR gpu-dialect functions, with their launch configurations; and the
//! library kernels (im2col, col2im, a shared-memory tiled GEMM).
//!
//! Each distinct kernel becomes `gpu.func @ck_kN` (plus `@ck_kN_s2` for the
//! second stage of a two-stage reduction) whose parameters are bare
//! pointers: the kernel's inputs, outputs and workspace (as the step
//! program passes them), then the scratch buffer when it has two stages.
//! The values are computed by the same elemental emitter as the cpu
//! backend (`vemit::VEm`, one lane), so the arithmetic of every element is
//! the interpreter's; what differs is how the work is spread over threads:
//!
//! - **loop** kernels: one thread per element, grid-stride over the
//!   elements (`BLOCK` threads per block, at most `MAX_GRID` blocks).
//! - **row reductions** (the reduced dims innermost, `KernelKind::Reduce {
//!   rows: true }`): one block per result element ("row"); each thread
//!   accumulates the elements `tid, tid + B, ...` of its row in order, then
//!   the block combines the B partial results in shared memory in a fixed
//!   tree order (halving strides). When there are few rows and they are
//!   long (a full reduction is one row) the rows are cut into `G` chunks:
//!   stage 1 reduces each chunk into the scratch buffer, stage 2 (one block
//!   per row) combines the chunks by the same tree. Prologue outputs are
//!   stored as the elements are read; the epilogue runs once per row.
//! - **other reductions** ("column" reductions such as a bias gradient):
//!   one thread per (result element, chunk of the reduced index range),
//!   accumulating its chunk in row-major order of the reduced dims; when
//!   there are several chunks, stage 2 adds each element's chunks in chunk
//!   order.
//! - **single** ops (pools, concat): one thread per result element running
//!   `emit::element`.
//!
//! Determinism: how work is split depends only on the shapes, never on
//! timing, and no atomics are used, so every run gives the same bits (and
//! a recomputed reduction the same bits as the original).
//!
//! Index arithmetic: 32-bit (`i32`) in loop and reduction kernels when every
//! index stays below 2^31 (including the grid-stride overshoot), else
//! 64-bit; addresses are formed in 64 bits. Single ops and the library
//! kernels use 64-bit indices.

use crate::emit::{self, Em, Mem, for_loop};
use crate::vemit::{Comp, VEm};
use ckopt_ir::ops::attr_ints;
use ckopt_ir::{DType, Diag, Func, Loc, OpKind, ValueId};
use ckopt_kernels::bundle::{GEMM_TILE, LIB_BLOCK, LIB_COL2IM, LIB_IM2COL, MAX_GRID, lib_gemm_entry};
use ckopt_kernels::{CudaKernel, Kernel, KernelKind, Launch};
use std::collections::HashSet;
use std::fmt::Write;

/// Threads per block of loop, column-reduction and single-op kernels.
pub const BLOCK: u32 = 256;
/// Rows at least this many run one block each, in one stage.
const ROWS_ONE_STAGE: u64 = 264;
/// Elements per block and chunk aimed at when long rows are split.
const ROW_CHUNK: u64 = 4096;
/// Result elements at least this many make a column reduction one stage.
const COLS_ONE_STAGE: u64 = 32768;
/// Element type of the library kernels' buffers (the size is nominal:
/// the bare-pointer convention passes only the pointer).
const BIG: &str = "memref<1099511627776xf32>";

/// Name of kernel `i`'s first (or only) entry.
pub fn entry_name(i: usize) -> String {
    format!("ck_k{i}")
}

/// One kernel's gpu-dialect functions and launches.
pub struct KernelCode {
    pub text: String,
    pub cuda: CudaKernel,
}

fn err(m: impl Into<String>) -> Diag {
    Diag::error(Loc::unknown(), m.into())
}

fn memref(n: u64) -> String {
    format!("memref<{n}xf32>")
}

fn wg(n: u64) -> String {
    format!("memref<{n}xf32, #gpu.address_space<workgroup>>")
}

fn grid_for(items: u64, per_block: u64) -> u32 {
    items.div_ceil(per_block.max(1)).min(MAX_GRID as u64) as u32
}

fn launch(entry: String, grid: u32, block: u32) -> Launch {
    Launch { entry, grid: [grid, 1, 1], block: [block, 1, 1] }
}

/// `scf.if cond -> f32 { then } else { els }`.
fn if_f32(
    em: &mut Em,
    cond: &str,
    then: &mut dyn FnMut(&mut Em) -> Result<String, Diag>,
    els: &mut dyn FnMut(&mut Em) -> Result<String, Diag>,
) -> Result<String, Diag> {
    let r = em.fresh();
    em.line(&format!("{r} = scf.if {cond} -> (f32) {{"));
    em.indent += 1;
    let a = then(em)?;
    em.line(&format!("scf.yield {a} : f32"));
    em.indent -= 1;
    em.line("} else {");
    em.indent += 1;
    let b = els(em)?;
    em.line(&format!("scf.yield {b} : f32"));
    em.indent -= 1;
    em.line("}");
    Ok(r)
}

fn c_int(em: &mut Em, v: u64, ity: &str) -> String {
    em.op(&format!("arith.constant {v} : {ity}"))
}

fn ibin(em: &mut Em, op: &str, a: &str, b: &str, ity: &str) -> String {
    em.op(&format!("arith.{op} {a}, {b} : {ity}"))
}

/// Block id, block size, thread id, grid size (x), as `ity`; and the thread
/// id as an `index` (for shared-memory accesses).
struct Ids {
    bid: String,
    bdim: String,
    tid: String,
    gdim: String,
    tid_index: String,
}

fn ids(em: &mut Em, ity: &str) -> Ids {
    let mut get = |what: &str| {
        let v = em.op(&format!("gpu.{what} x"));
        if ity == "index" { (v.clone(), v) } else { (em.op(&format!("arith.index_castui {v} : index to {ity}")), v) }
    };
    let (bid, _) = get("block_id");
    let (bdim, _) = get("block_dim");
    let (tid, tid_index) = get("thread_id");
    let (gdim, _) = get("grid_dim");
    Ids { bid, bdim, tid, gdim, tid_index }
}

/// The kernel's parameters: pointer names and their element counts (and
/// the outputs' element types). Inputs and outputs are `memref<N x E>`, `E`
/// the storage type of the value's element type (`emit::mem_elem`); the
/// workspace and the scratch buffer are f32.
struct Params {
    ins: Vec<String>,
    outs: Vec<(String, u64)>,
    out_dt: Vec<DType>,
    scratch: Option<(String, u64)>,
    decls: Vec<String>,
}

fn params(k: &Kernel, scratch_floats: u64) -> Params {
    let func = &k.func;
    let ins: Vec<String> = (0..func.params.len()).map(|i| format!("%in{i}")).collect();
    let outs: Vec<(String, u64)> = func.result_types.iter().enumerate().map(|(j, t)| (format!("%out{j}"), t.elems())).collect();
    let out_dt: Vec<DType> = func.result_types.iter().map(|t| t.dtype).collect();
    let mut decls: Vec<String> = func
        .params
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{}: {}", ins[i], emit::memref_of(func.ty(p.value).elems(), func.ty(p.value).dtype)))
        .collect();
    decls.extend(outs.iter().zip(&out_dt).map(|((m, n), dt)| format!("{m}: {}", emit::memref_of(*n, *dt))));
    if k.workspace > 0 {
        decls.push(format!("%ws: {}", memref(k.workspace / 4)));
    }
    let scratch = (scratch_floats > 0).then(|| ("%scr".to_string(), scratch_floats));
    if let Some((m, n)) = &scratch {
        decls.push(format!("{m}: {}", memref(*n)));
    }
    Params { ins, outs, out_dt, scratch, decls }
}

/// `gpu.func @name(params) [workgroup(...)] kernel {...}`.
fn gpu_func(name: &str, p: &Params, shared: Option<u64>, block: u32, body: &str) -> String {
    let mut s = String::new();
    let wgs = shared.map(|n| format!(" workgroup(%sh : {})", wg(n))).unwrap_or_default();
    let _ = writeln!(
        s,
        "    gpu.func @{name}({}){wgs} kernel attributes {{known_block_size = array<i32: {block}, 1, 1>}} {{",
        p.decls.join(", ")
    );
    s.push_str(body);
    let _ = writeln!(s, "      gpu.return");
    let _ = writeln!(s, "    }}");
    s
}

/// Whether every index a kernel computes fits in 32 bits (with the
/// grid-stride overshoot of `MAX_GRID` blocks of 1024 threads).
fn fits_i32(k: &Kernel, extra: &[u64]) -> bool {
    let limit = (i32::MAX as u64).saturating_sub(MAX_GRID as u64 * 1024);
    let func = &k.func;
    let mut most = k.workspace / 4;
    for p in &func.params {
        most = most.max(func.ty(p.value).elems());
    }
    for op in &func.body {
        if let Some(r) = op.result {
            most = most.max(func.ty(r).elems());
        }
    }
    for &e in extra {
        most = most.max(e);
    }
    most < limit
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

/// Whether every op the value `x` depends on reads its operands at the same
/// flat index (so the prologue of a reduction needs no multi-index).
fn flat_prologue(func: &Func, x: ValueId) -> bool {
    let mut need: HashSet<ValueId> = [x].into_iter().collect();
    for op in func.body.iter().rev() {
        let Some(r) = op.result else { continue };
        if !need.contains(&r) {
            continue;
        }
        let ok = match op.kind {
            OpKind::Broadcast => op.operands.first().is_some_and(|&a| func.ty(a).rank() == 0),
            OpKind::Dropout | OpKind::Reshape | OpKind::Fill => true,
            k => k.is_elementwise(),
        };
        if !ok {
            return false;
        }
        need.extend(op.operands.iter().copied());
    }
    true
}

/// The code of kernel `i` of the cache.
pub fn kernel_code(i: usize, k: &Kernel) -> Result<KernelCode, Diag> {
    match &k.kind {
        KernelKind::Loop { shape, flat } => loop_kernel(i, k, shape, *flat),
        KernelKind::Reduce { reduce, rows: true } => row_reduce(i, k, *reduce),
        KernelKind::Reduce { reduce, rows: false } => col_reduce(i, k, *reduce),
        KernelKind::Single => single_kernel(i, k),
    }
}

fn loop_kernel(i: usize, k: &Kernel, shape: &[u64], flat: bool) -> Result<KernelCode, Diag> {
    let n: u64 = shape.iter().product();
    let ity = if fits_i32(k, &[n]) { "i32" } else { "index" };
    let p = params(k, 0);
    let func = &k.func;
    let outs = func.returned().to_vec();
    let mut em = Em::nvptx("t", 3);
    let id = ids(&mut em, ity);
    let base = ibin(&mut em, "muli", &id.bid, &id.bdim, ity);
    let start = ibin(&mut em, "addi", &base, &id.tid, ity);
    let stride = ibin(&mut em, "muli", &id.gdim, &id.bdim, ity);
    let hi = c_int(&mut em, n, ity);
    for_loop(&mut em, &start, &hi, &stride, ity, &[], &mut |em, iv, _| {
        let mut v = VEm::new(em, func, 1, &p.ins);
        v.ity = ity;
        v.flat = flat;
        let at = Comp::S(iv.to_string());
        let idx = if shape.is_empty() {
            Vec::new()
        } else if flat || shape.len() == 1 {
            vec![at.clone()]
        } else {
            v.delinearize(&at, shape)
        };
        let mut vals = Vec::with_capacity(outs.len());
        for &o in &outs {
            vals.push(v.value(o, &idx)?);
        }
        // Stores after every value is computed: an output may overwrite an
        // input it reads at this element only.
        for (j, val) in vals.iter().enumerate() {
            let (m, nn) = &p.outs[j];
            v.store_typed(m, *nn, p.out_dt[j], &at, val)?;
        }
        Ok(vec![])
    })?;
    let name = entry_name(i);
    let text = gpu_func(&name, &p, None, BLOCK, &em.out);
    let what = format!("loop over {n} elements{}", if ity == "i32" { " (32-bit indices)" } else { "" });
    Ok(KernelCode { text, cuda: CudaKernel { launches: vec![launch(name, grid_for(n, BLOCK as u64), BLOCK)], scratch_bytes: 0, what } })
}

/// What a reduction kernel needs to know about its reduction.
struct Red<'a> {
    func: &'a Func,
    r: ValueId,
    xin: ValueId,
    s_shape: Vec<u64>,
    r_shape: Vec<u64>,
    dims: Vec<usize>,
    comb: &'static str,
    init: f32,
    /// Outputs (by position) of the result shape (the epilogue, r included) and of the input shape.
    epi: Vec<usize>,
    pro: Vec<usize>,
    outs: Vec<ValueId>,
}

fn red<'a>(k: &'a Kernel, reduce: usize) -> Result<Red<'a>, Diag> {
    let func = &k.func;
    let rop = &func.body[reduce];
    let r = rop.result.ok_or_else(|| err("reduction without result"))?;
    let xin = rop.operands[0];
    let dims: Vec<usize> = attr_ints(&rop.attrs, "dims", &[]).iter().map(|&d| d as usize).collect();
    let sum = rop.kind == OpKind::ReduceSum;
    let dep = dependents(func, r);
    let outs = func.returned().to_vec();
    let epi: Vec<usize> = (0..outs.len()).filter(|&j| dep.contains(&outs[j])).collect();
    let pro: Vec<usize> = (0..outs.len()).filter(|&j| !dep.contains(&outs[j])).collect();
    Ok(Red {
        func,
        r,
        xin,
        s_shape: func.ty(xin).shape.clone(),
        r_shape: func.ty(r).shape.clone(),
        dims,
        comb: if sum { "addf" } else { "maxnumf" },
        init: if sum { -0.0 } else { f32::NEG_INFINITY },
        epi,
        pro,
        outs,
    })
}

fn f32_const(em: &mut Em, v: f32) -> String {
    em.op(&format!("arith.constant {} : f32", ckopt_ir::attr::format_f32(v)))
}

/// Stores the prologue outputs at input index `idx` (flat `at`).
fn store_prologue(v: &mut VEm, rd: &Red, p: &Params, idx: &[Comp], at: &Comp) -> Result<(), Diag> {
    for &j in &rd.pro {
        let val = v.value(rd.outs[j], idx)?;
        let (m, n) = &p.outs[j];
        v.store_typed(m, *n, p.out_dt[j], at, &val)?;
    }
    Ok(())
}

/// The epilogue at result element `at` (flat, `ity`) given the reduction's
/// value `total` (the f32 accumulator, rounded here to the reduction's
/// element type as the interpreter rounds its result).
fn epilogue(em: &mut Em, rd: &Red, p: &Params, ins: &[String], ity: &'static str, at: &str, total: &str) -> Result<(), Diag> {
    let total = emit::round_reg(em, total, rd.func.ty(rd.r).dtype, 1);
    let mut v = VEm::new(em, rd.func, 1, ins);
    v.ity = ity;
    v.given.insert(rd.r, total);
    let at = Comp::S(at.to_string());
    let ridx = if rd.r_shape.is_empty() { Vec::new() } else { v.delinearize(&at, &rd.r_shape) };
    let mut vals = Vec::with_capacity(rd.epi.len());
    for &j in &rd.epi {
        vals.push(v.value(rd.outs[j], &ridx)?);
    }
    for (&j, val) in rd.epi.iter().zip(&vals) {
        let (m, n) = &p.outs[j];
        v.store_typed(m, *n, p.out_dt[j], &at, val)?;
    }
    Ok(())
}

/// The fixed-order tree combination of `b` partial results in `%sh`; the
/// result is in `%sh[0]` after the last barrier.
fn tree(em: &mut Em, id: &Ids, b: u32, comb: &str, ity: &str) -> Result<(), Diag> {
    let sh = wg(b as u64);
    let mut s = b / 2;
    while s >= 1 {
        let sc = c_int(em, s as u64, ity);
        let cond = em.op(&format!("arith.cmpi ult, {}, {sc} : {ity}", id.tid));
        let tidx = id.tid_index.clone();
        em.if_then(&cond, &mut |em| {
            let si = em.op(&format!("arith.constant {s} : index"));
            let other = em.op(&format!("arith.addi {tidx}, {si} : index"));
            let a = em.op(&format!("memref.load %sh[{tidx}] : {sh}"));
            let bb = em.op(&format!("memref.load %sh[{other}] : {sh}"));
            let c = em.op(&format!("arith.{comb} {a}, {bb} : f32"));
            em.line(&format!("memref.store {c}, %sh[{tidx}] : {sh}"));
            Ok(())
        })?;
        em.line("gpu.barrier");
        s /= 2;
    }
    Ok(())
}

fn block_for(len: u64) -> u32 {
    if len >= 256 { 256 } else { (len.max(1).next_power_of_two() as u32).max(32) }
}

fn row_reduce(i: usize, k: &Kernel, reduce: usize) -> Result<KernelCode, Diag> {
    let rd = red(k, reduce)?;
    let rows: u64 = rd.r_shape.iter().product();
    let len: u64 = rd.dims.iter().map(|&d| rd.s_shape[d]).product();
    let g = if rows >= ROWS_ONE_STAGE || len <= ROW_CHUNK {
        1
    } else {
        len.div_ceil(ROW_CHUNK).min(256).min(1024u64.div_ceil(rows)).max(1)
    };
    let chunk = len.div_ceil(g).max(1);
    let b = block_for(chunk);
    let items = rows * g;
    let ity = if fits_i32(k, &[items, rows * len]) { "i32" } else { "index" };
    let scratch = if g > 1 { items } else { 0 };
    let p = params(k, scratch);
    let func = rd.func;
    let pflat = flat_prologue(func, rd.xin);
    let sh = wg(b as u64);
    // Stage 1.
    let mut em = Em::nvptx("t", 3);
    let id = ids(&mut em, ity);
    let hi_items = c_int(&mut em, items, ity);
    let bconst = c_int(&mut em, b as u64, ity);
    for_loop(&mut em, &id.bid, &hi_items, &id.gdim, ity, &[], &mut |em, it, _| {
        let (row, lo, hi) = if g == 1 {
            let z = c_int(em, 0, ity);
            let l = c_int(em, len, ity);
            (it.to_string(), z, l)
        } else {
            let gc = c_int(em, g, ity);
            let row = ibin(em, "divui", it, &gc, ity);
            let gi = ibin(em, "remui", it, &gc, ity);
            let cc = c_int(em, chunk, ity);
            let lo = ibin(em, "muli", &gi, &cc, ity);
            let end = ibin(em, "addi", &lo, &cc, ity);
            let l = c_int(em, len, ity);
            let hi = ibin(em, "minui", &end, &l, ity);
            (row, lo, hi)
        };
        let lc = c_int(em, len, ity);
        let row_base = ibin(em, "muli", &row, &lc, ity);
        let start = ibin(em, "addi", &lo, &id.tid, ity);
        let init = f32_const(em, rd.init);
        let acc = for_loop(em, &start, &hi, &bconst, ity, &[(init, "f32")], &mut |em, j, a| {
            let mut v = VEm::new(em, func, 1, &p.ins);
            v.ity = ity;
            v.flat = pflat;
            let flat = v.em.op(&format!("arith.addi {row_base}, {j} : {ity}"));
            let at = Comp::S(flat);
            let idx = if rd.s_shape.is_empty() {
                Vec::new()
            } else if pflat || rd.s_shape.len() == 1 {
                vec![at.clone()]
            } else {
                v.delinearize(&at, &rd.s_shape)
            };
            let val = v.value(rd.xin, &idx)?;
            store_prologue(&mut v, &rd, &p, &idx, &at)?;
            Ok(vec![v.em.op(&format!("arith.{} {}, {val} : f32", rd.comb, a[0]))])
        })?;
        em.line(&format!("memref.store {}, %sh[{}] : {sh}", acc[0], id.tid_index));
        em.line("gpu.barrier");
        tree(em, &id, b, rd.comb, ity)?;
        let z = c_int(em, 0, ity);
        let first = em.op(&format!("arith.cmpi eq, {}, {z} : {ity}", id.tid));
        em.if_then(&first, &mut |em| {
            let c0 = em.op("arith.constant 0 : index");
            let total = em.op(&format!("memref.load %sh[{c0}] : {sh}"));
            if g == 1 {
                epilogue(em, &rd, &p, &p.ins, ity, &row, &total)
            } else {
                let (m, n) = p.scratch.clone().unwrap_or_default();
                let at = if ity == "index" { it.to_string() } else { em.op(&format!("arith.index_castui {it} : {ity} to index")) };
                em.line(&format!("memref.store {total}, {m}[{at}] : {}", memref(n)));
                Ok(())
            }
        })?;
        // The next row reuses %sh.
        em.line("gpu.barrier");
        Ok(vec![])
    })?;
    let name = entry_name(i);
    let mut text = gpu_func(&name, &p, Some(b as u64), b, &em.out);
    let mut launches = vec![launch(name.clone(), grid_for(items, 1), b)];
    // Stage 2: one block per row combines the row's g chunk results.
    if g > 1 {
        let b2 = block_for(g);
        let sh2 = wg(b2 as u64);
        let mut em = Em::nvptx("u", 3);
        let id = ids(&mut em, ity);
        let hi_rows = c_int(&mut em, rows, ity);
        for_loop(&mut em, &id.bid, &hi_rows, &id.gdim, ity, &[], &mut |em, row, _| {
            let gc = c_int(em, g, ity);
            let has = em.op(&format!("arith.cmpi ult, {}, {gc} : {ity}", id.tid));
            let (m, n) = p.scratch.clone().unwrap_or_default();
            let tid = id.tid.clone();
            let row_s = row.to_string();
            let val = if_f32(
                em,
                &has,
                &mut |em| {
                    let base = ibin(em, "muli", &row_s, &gc, ity);
                    let at = ibin(em, "addi", &base, &tid, ity);
                    let at = if ity == "index" { at } else { em.op(&format!("arith.index_castui {at} : {ity} to index")) };
                    Ok(em.op(&format!("memref.load {m}[{at}] : {}", memref(n))))
                },
                &mut |em| Ok(f32_const(em, rd.init)),
            )?;
            em.line(&format!("memref.store {val}, %sh[{}] : {sh2}", id.tid_index));
            em.line("gpu.barrier");
            tree(em, &id, b2, rd.comb, ity)?;
            let z = c_int(em, 0, ity);
            let first = em.op(&format!("arith.cmpi eq, {}, {z} : {ity}", id.tid));
            em.if_then(&first, &mut |em| {
                let c0 = em.op("arith.constant 0 : index");
                let total = em.op(&format!("memref.load %sh[{c0}] : {sh2}"));
                epilogue(em, &rd, &p, &p.ins, ity, row, &total)
            })?;
            em.line("gpu.barrier");
            Ok(vec![])
        })?;
        let name2 = format!("{name}_s2");
        text.push_str(&gpu_func(&name2, &p, Some(b2 as u64), b2, &em.out));
        launches.push(launch(name2, grid_for(rows, 1), b2));
    }
    let what = format!(
        "row reduction: {rows} rows of {len}, {b} threads per row{}{}",
        if g > 1 { format!(", {g} chunks per row in two stages") } else { String::new() },
        if ity == "i32" { " (32-bit indices)" } else { "" }
    );
    Ok(KernelCode { text, cuda: CudaKernel { launches, scratch_bytes: scratch * 4, what } })
}

fn col_reduce(i: usize, k: &Kernel, reduce: usize) -> Result<KernelCode, Diag> {
    let rd = red(k, reduce)?;
    let m: u64 = rd.r_shape.iter().product();
    let kept: Vec<usize> = (0..rd.s_shape.len()).filter(|d| !rd.dims.contains(d)).collect();
    let red_shape: Vec<u64> = rd.dims.iter().map(|&d| rd.s_shape[d]).collect();
    let kk: u64 = red_shape.iter().product();
    let g = if m >= COLS_ONE_STAGE || kk < 64 { 1 } else { ((kk as f64).sqrt().ceil() as u64).clamp(1, 256).min(kk / 4).max(1) };
    let chunk = kk.div_ceil(g).max(1);
    let items = m * g;
    let ity = if fits_i32(k, &[items, m * kk]) { "i32" } else { "index" };
    let scratch = if g > 1 { items } else { 0 };
    let p = params(k, scratch);
    let func = rd.func;
    let mut em = Em::nvptx("t", 3);
    let id = ids(&mut em, ity);
    let base = ibin(&mut em, "muli", &id.bid, &id.bdim, ity);
    let start = ibin(&mut em, "addi", &base, &id.tid, ity);
    let stride = ibin(&mut em, "muli", &id.gdim, &id.bdim, ity);
    let hi_items = c_int(&mut em, items, ity);
    for_loop(&mut em, &start, &hi_items, &stride, ity, &[], &mut |em, it, _| {
        let (o, lo, hi) = if g == 1 {
            let z = c_int(em, 0, ity);
            let kc = c_int(em, kk, ity);
            (it.to_string(), z, kc)
        } else {
            let mc = c_int(em, m, ity);
            let o = ibin(em, "remui", it, &mc, ity);
            let gi = ibin(em, "divui", it, &mc, ity);
            let cc = c_int(em, chunk, ity);
            let lo = ibin(em, "muli", &gi, &cc, ity);
            let end = ibin(em, "addi", &lo, &cc, ity);
            let kc = c_int(em, kk, ity);
            let hi = ibin(em, "minui", &end, &kc, ity);
            (o, lo, hi)
        };
        let kidx = {
            let mut v = VEm::new(em, func, 1, &p.ins);
            v.ity = ity;
            if rd.r_shape.is_empty() { Vec::new() } else { v.delinearize(&Comp::S(o.clone()), &rd.r_shape) }
        };
        let one = c_int(em, 1, ity);
        let init = f32_const(em, rd.init);
        let acc = for_loop(em, &lo, &hi, &one, ity, &[(init, "f32")], &mut |em, j, a| {
            let mut v = VEm::new(em, func, 1, &p.ins);
            v.ity = ity;
            let ridx = if red_shape.is_empty() { Vec::new() } else { v.delinearize(&Comp::S(j.to_string()), &red_shape) };
            let mut full = vec![Comp::S(String::new()); rd.s_shape.len()];
            for (q, &d) in kept.iter().enumerate() {
                full[d] = kidx[q].clone();
            }
            for (q, &d) in rd.dims.iter().enumerate() {
                full[d] = ridx[q].clone();
            }
            let val = v.value(rd.xin, &full)?;
            if !rd.pro.is_empty() {
                let at = v.linearize(&full, &rd.s_shape);
                store_prologue(&mut v, &rd, &p, &full, &at)?;
            }
            Ok(vec![v.em.op(&format!("arith.{} {}, {val} : f32", rd.comb, a[0]))])
        })?;
        if g == 1 {
            epilogue(em, &rd, &p, &p.ins, ity, &o, &acc[0])
        } else {
            let (sm, sn) = p.scratch.clone().unwrap_or_default();
            let at = if ity == "index" { it.to_string() } else { em.op(&format!("arith.index_castui {it} : {ity} to index")) };
            em.line(&format!("memref.store {}, {sm}[{at}] : {}", acc[0], memref(sn)));
            Ok(())
        }?;
        Ok(vec![])
    })?;
    let name = entry_name(i);
    let mut text = gpu_func(&name, &p, None, BLOCK, &em.out);
    let mut launches = vec![launch(name.clone(), grid_for(items, BLOCK as u64), BLOCK)];
    if g > 1 {
        let mut em = Em::nvptx("u", 3);
        let id = ids(&mut em, ity);
        let base = ibin(&mut em, "muli", &id.bid, &id.bdim, ity);
        let start = ibin(&mut em, "addi", &base, &id.tid, ity);
        let stride = ibin(&mut em, "muli", &id.gdim, &id.bdim, ity);
        let hi = c_int(&mut em, m, ity);
        for_loop(&mut em, &start, &hi, &stride, ity, &[], &mut |em, o, _| {
            let z = c_int(em, 0, ity);
            let gc = c_int(em, g, ity);
            let one = c_int(em, 1, ity);
            let init = f32_const(em, rd.init);
            let (sm, sn) = p.scratch.clone().unwrap_or_default();
            let mc = c_int(em, m, ity);
            let acc = for_loop(em, &z, &gc, &one, ity, &[(init, "f32")], &mut |em, gi, a| {
                let base = ibin(em, "muli", gi, &mc, ity);
                let at = ibin(em, "addi", &base, o, ity);
                let at = if ity == "index" { at } else { em.op(&format!("arith.index_castui {at} : {ity} to index")) };
                let x = em.op(&format!("memref.load {sm}[{at}] : {}", memref(sn)));
                Ok(vec![em.op(&format!("arith.{} {}, {x} : f32", rd.comb, a[0]))])
            })?;
            epilogue(em, &rd, &p, &p.ins, ity, o, &acc[0])?;
            Ok(vec![])
        })?;
        let name2 = format!("{name}_s2");
        text.push_str(&gpu_func(&name2, &p, None, BLOCK, &em.out));
        launches.push(launch(name2, grid_for(m, BLOCK as u64), BLOCK));
    }
    let what = format!(
        "column reduction: {m} results of {kk} elements{}{}",
        if g > 1 { format!(", {g} chunks in two stages") } else { String::new() },
        if ity == "i32" { " (32-bit indices)" } else { "" }
    );
    Ok(KernelCode { text, cuda: CudaKernel { launches, scratch_bytes: scratch * 4, what } })
}

fn single_kernel(i: usize, k: &Kernel) -> Result<KernelCode, Diag> {
    let func = &k.func;
    let op = &func.body[0];
    let p = params(k, 0);
    let ins: Vec<Mem> = op
        .operands
        .iter()
        .map(|o| {
            let q = func.params.iter().position(|pp| pp.value == *o).unwrap_or(0);
            Mem { name: p.ins[q].clone(), n: func.ty(*o).elems(), dt: func.ty(*o).dtype }
        })
        .collect();
    let (m, n) = p.outs.first().cloned().ok_or_else(|| err(format!("'{}' kernel without output", op.kind.full_name())))?;
    let out = Mem { name: m, n, dt: p.out_dt[0] };
    // Ops computed a row at a time (`cross_entropy_grad`): one thread per row.
    // The scatter-add gradients stay one thread per result element here (the
    // cpu backend's row form walks every index per row range).
    let row_op = matches!(op.kind, OpKind::CrossEntropyGrad);
    let items = if row_op { func.ty(op.operands[0]).shape.first().copied().unwrap_or(1) } else { n };
    let mut em = Em::nvptx("t", 3);
    let id = ids(&mut em, "index");
    let base = ibin(&mut em, "muli", &id.bid, &id.bdim, "index");
    let start = ibin(&mut em, "addi", &base, &id.tid, "index");
    let stride = ibin(&mut em, "muli", &id.gdim, &id.bdim, "index");
    let hi = c_int(&mut em, items, "index");
    for_loop(&mut em, &start, &hi, &stride, "index", &[], &mut |em, iv, _| {
        if row_op {
            let one = c_int(em, 1, "index");
            let next = ibin(em, "addi", iv, &one, "index");
            emit::rows(em, func, op, &ins, &out, iv, &next, 1)?;
        } else {
            let v = emit::element(em, func, op, &ins, iv)?;
            em.store(&out, iv, &v);
        }
        Ok(vec![])
    })?;
    let name = entry_name(i);
    let text = gpu_func(&name, &p, None, BLOCK, &em.out);
    let what = if row_op {
        format!("{} per row ({items} rows)", op.kind.full_name())
    } else {
        format!("{} per element ({n})", op.kind.full_name())
    };
    Ok(KernelCode {
        text,
        cuda: CudaKernel { launches: vec![launch(name, grid_for(items, BLOCK as u64), BLOCK)], scratch_bytes: 0, what },
    })
}

// ---- library kernels ----

/// Grid-stride prologue in `index`: (start, stride).
fn gs_index(em: &mut Em) -> (String, String) {
    let id = ids(em, "index");
    let base = ibin(em, "muli", &id.bid, &id.bdim, "index");
    let start = ibin(em, "addi", &base, &id.tid, "index");
    let stride = ibin(em, "muli", &id.gdim, &id.bdim, "index");
    (start, stride)
}

const CONV_PARAMS: [&str; 11] = ["%C", "%H", "%W", "%KH", "%KW", "%OH", "%OW", "%sh", "%sw", "%ph", "%pw"];

fn lib_func(name: &str, params: &[String], shared: &[(String, u64)], block: u32, body: &str) -> String {
    let mut s = String::new();
    let wgs = if shared.is_empty() {
        String::new()
    } else {
        let v: Vec<String> = shared.iter().map(|(n, c)| format!("{n} : {}", wg(*c))).collect();
        format!(" workgroup({})", v.join(", "))
    };
    let _ = writeln!(
        s,
        "    gpu.func @{name}({}){wgs} kernel attributes {{known_block_size = array<i32: {block}, 1, 1>}} {{",
        params.join(", ")
    );
    s.push_str(body);
    let _ = writeln!(s, "      gpu.return");
    let _ = writeln!(s, "    }}");
    s
}

/// `ck_lib_im2col(x, cols, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw)`: one
/// image's columns, `cols[(c·KH + i)·KW + j][oh·OW + ow] = x[c, oh·sh + i −
/// ph, ow·sw + j − pw]` (0 outside the image); one thread per column entry.
fn im2col_text() -> String {
    let mut params = vec![format!("%x: {BIG}"), format!("%cols: {BIG}")];
    params.extend(CONV_PARAMS.iter().map(|p| format!("{p}: index")));
    let mut em = Em::nvptx("t", 3);
    let (start, stride) = gs_index(&mut em);
    let a = em.op("arith.muli %C, %KH : index");
    let b = em.op(&format!("arith.muli {a}, %KW : index"));
    let c = em.op(&format!("arith.muli {b}, %OH : index"));
    let total = em.op(&format!("arith.muli {c}, %OW : index"));
    let _ = for_loop(&mut em, &start, &total, &stride, "index", &[], &mut |em, e, _| {
        let ow = em.op(&format!("arith.remui {e}, %OW : index"));
        let t1 = em.op(&format!("arith.divui {e}, %OW : index"));
        let oh = em.op(&format!("arith.remui {t1}, %OH : index"));
        let t2 = em.op(&format!("arith.divui {t1}, %OH : index"));
        let j = em.op(&format!("arith.remui {t2}, %KW : index"));
        let t3 = em.op(&format!("arith.divui {t2}, %KW : index"));
        let i = em.op(&format!("arith.remui {t3}, %KH : index"));
        let ch = em.op(&format!("arith.divui {t3}, %KH : index"));
        let hs = em.op(&format!("arith.muli {oh}, %sh : index"));
        let hs2 = em.op(&format!("arith.addi {hs}, {i} : index"));
        let hy = em.op(&format!("arith.subi {hs2}, %ph : index"));
        let ws = em.op(&format!("arith.muli {ow}, %sw : index"));
        let ws2 = em.op(&format!("arith.addi {ws}, {j} : index"));
        let wx = em.op(&format!("arith.subi {ws2}, %pw : index"));
        let z = em.op("arith.constant 0 : index");
        let c1 = em.op(&format!("arith.cmpi sge, {hy}, {z} : index"));
        let c2 = em.op(&format!("arith.cmpi slt, {hy}, %H : index"));
        let c3 = em.op(&format!("arith.cmpi sge, {wx}, {z} : index"));
        let c4 = em.op(&format!("arith.cmpi slt, {wx}, %W : index"));
        let a1 = em.op(&format!("arith.andi {c1}, {c2} : i1"));
        let a2 = em.op(&format!("arith.andi {c3}, {c4} : i1"));
        let inb = em.op(&format!("arith.andi {a1}, {a2} : i1"));
        let (ch2, hy2, wx2) = (ch.clone(), hy.clone(), wx.clone());
        let v = if_f32(
            em,
            &inb,
            &mut |em| {
                let r = em.op(&format!("arith.muli {ch2}, %H : index"));
                let r2 = em.op(&format!("arith.addi {r}, {hy2} : index"));
                let r3 = em.op(&format!("arith.muli {r2}, %W : index"));
                let at = em.op(&format!("arith.addi {r3}, {wx2} : index"));
                Ok(em.op(&format!("memref.load %x[{at}] : {BIG}")))
            },
            &mut |em| Ok(f32_const(em, 0.0)),
        )?;
        em.line(&format!("memref.store {v}, %cols[{e}] : {BIG}"));
        Ok(vec![])
    });
    lib_func(LIB_IM2COL, &params, &[], LIB_BLOCK, &em.out)
}

/// `ck_lib_col2im(cols, dx, C, H, W, KH, KW, OH, OW, sh, sw, ph, pw)`: one
/// image's input gradient from its columns, one thread per `dx` element
/// gathering its column entries in (i, j) order (the cpu backend's order);
/// every element is written.
fn col2im_text() -> String {
    let mut params = vec![format!("%cols: {BIG}"), format!("%dx: {BIG}")];
    params.extend(CONV_PARAMS.iter().map(|p| format!("{p}: index")));
    let mut em = Em::nvptx("t", 3);
    let (start, stride) = gs_index(&mut em);
    let a = em.op("arith.muli %C, %H : index");
    let total = em.op(&format!("arith.muli {a}, %W : index"));
    let ohw = em.op("arith.muli %OH, %OW : index");
    let _ = for_loop(&mut em, &start, &total, &stride, "index", &[], &mut |em, e, _| {
        let w = em.op(&format!("arith.remui {e}, %W : index"));
        let t1 = em.op(&format!("arith.divui {e}, %W : index"));
        let h = em.op(&format!("arith.remui {t1}, %H : index"));
        let ch = em.op(&format!("arith.divui {t1}, %H : index"));
        let z = em.op("arith.constant 0 : index");
        let one = em.op("arith.constant 1 : index");
        let init = f32_const(em, 0.0);
        let (h2, w2, ch2, ohw2) = (h.clone(), w.clone(), ch.clone(), ohw.clone());
        let acc = for_loop(em, &z, "%KH", &one, "index", &[(init, "f32")], &mut |em, i, a| {
            let z = em.op("arith.constant 0 : index");
            let one = em.op("arith.constant 1 : index");
            let (h3, w3, ch3, ohw3, i3) = (h2.clone(), w2.clone(), ch2.clone(), ohw2.clone(), i.to_string());
            for_loop(em, &z, "%KW", &one, "index", &[(a[0].clone(), "f32")], &mut |em, j, b| {
                let hp = em.op(&format!("arith.addi {h3}, %ph : index"));
                let th = em.op(&format!("arith.subi {hp}, {i3} : index"));
                let wp = em.op(&format!("arith.addi {w3}, %pw : index"));
                let tw = em.op(&format!("arith.subi {wp}, {j} : index"));
                let z = em.op("arith.constant 0 : index");
                let c1 = em.op(&format!("arith.cmpi sge, {th}, {z} : index"));
                let c2 = em.op(&format!("arith.cmpi sge, {tw}, {z} : index"));
                let rh = em.op(&format!("arith.remsi {th}, %sh : index"));
                let rw = em.op(&format!("arith.remsi {tw}, %sw : index"));
                let c3 = em.op(&format!("arith.cmpi eq, {rh}, {z} : index"));
                let c4 = em.op(&format!("arith.cmpi eq, {rw}, {z} : index"));
                let oh = em.op(&format!("arith.divsi {th}, %sh : index"));
                let ow = em.op(&format!("arith.divsi {tw}, %sw : index"));
                let c5 = em.op(&format!("arith.cmpi slt, {oh}, %OH : index"));
                let c6 = em.op(&format!("arith.cmpi slt, {ow}, %OW : index"));
                let mut ok = em.op(&format!("arith.andi {c1}, {c2} : i1"));
                for c in [c3, c4, c5, c6] {
                    ok = em.op(&format!("arith.andi {ok}, {c} : i1"));
                }
                let (ch4, ohw4, i4, j4, acc) = (ch3.clone(), ohw3.clone(), i3.clone(), j.to_string(), b[0].clone());
                let acc2 = acc.clone();
                let r = if_f32(
                    em,
                    &ok,
                    &mut |em| {
                        let r0 = em.op(&format!("arith.muli {ch4}, %KH : index"));
                        let r1 = em.op(&format!("arith.addi {r0}, {i4} : index"));
                        let r2 = em.op(&format!("arith.muli {r1}, %KW : index"));
                        let r3 = em.op(&format!("arith.addi {r2}, {j4} : index"));
                        let r4 = em.op(&format!("arith.muli {r3}, {ohw4} : index"));
                        let r5 = em.op(&format!("arith.muli {oh}, %OW : index"));
                        let r6 = em.op(&format!("arith.addi {r4}, {r5} : index"));
                        let at = em.op(&format!("arith.addi {r6}, {ow} : index"));
                        let v = em.op(&format!("memref.load %cols[{at}] : {BIG}"));
                        Ok(em.op(&format!("arith.addf {acc}, {v} : f32")))
                    },
                    &mut |_| Ok(acc2.clone()),
                )?;
                Ok(vec![r])
            })
        })?;
        em.line(&format!("memref.store {}, %dx[{e}] : {BIG}", acc[0]));
        Ok(vec![])
    });
    lib_func(LIB_COL2IM, &params, &[], LIB_BLOCK, &em.out)
}

/// `ck_lib_gemm(A, B, C, M, N, K, ta, tb, sa, sb, sc, batch, beta)`: the
/// fallback when cuBLAS cannot be loaded. Row-major `C[b] = op(A[b]) ·
/// op(B[b]) + beta · C[b]` (C is not read when beta = 0), `GEMM_TILE`²
/// threads per block, one output element per thread, `GEMM_TILE`-wide
/// slices of A and B staged in shared memory; grid-stride over the
/// (batch, row tile, column tile) triples. The k sum runs in increasing k.
/// For bf16/f16 (`ck_lib_gemm_bf16`, `lib_gemm_entry`) A, B and C are of
/// that type: the elements are widened to f32 as they are staged, summed
/// in f32, and the sum is rounded to the type (nearest even) when stored.
fn gemm_text(dt: DType) -> String {
    let t = GEMM_TILE as u64;
    let tt = t * t;
    let big = emit::memref_of(1 << 40, dt);
    let params: Vec<String> = vec![
        format!("%A: {big}"),
        format!("%B: {big}"),
        format!("%C: {big}"),
        "%M: index".into(),
        "%N: index".into(),
        "%K: index".into(),
        "%ta: i32".into(),
        "%tb: i32".into(),
        "%sa: index".into(),
        "%sb: index".into(),
        "%sc: index".into(),
        "%batch: index".into(),
        "%beta: f32".into(),
    ];
    let (sa, sb) = (wg(tt), wg(tt));
    let mut em = Em::nvptx("t", 3);
    let id = ids(&mut em, "index");
    let tc = em.op(&format!("arith.constant {t} : index"));
    let tx = em.op(&format!("arith.remui {}, {tc} : index", id.tid));
    let ty = em.op(&format!("arith.divui {}, {tc} : index", id.tid));
    let tm0 = em.op(&format!("arith.ceildivui %M, {tc} : index"));
    let tn0 = em.op(&format!("arith.ceildivui %N, {tc} : index"));
    let per = em.op(&format!("arith.muli {tm0}, {tn0} : index"));
    let tiles = em.op(&format!("arith.muli {per}, %batch : index"));
    let z32 = em.op("arith.constant 0 : i32");
    let tra = em.op(&format!("arith.cmpi ne, %ta, {z32} : i32"));
    let trb = em.op(&format!("arith.cmpi ne, %tb, {z32} : i32"));
    let zf = f32_const(&mut em, 0.0);
    let has_beta = em.op(&format!("arith.cmpf une, %beta, {zf} : f32"));
    let _ = for_loop(&mut em, &id.bid, &tiles, &id.gdim, "index", &[], &mut |em, tile, _| {
        let b = em.op(&format!("arith.divui {tile}, {per} : index"));
        let r = em.op(&format!("arith.remui {tile}, {per} : index"));
        let tmi = em.op(&format!("arith.divui {r}, {tn0} : index"));
        let tni = em.op(&format!("arith.remui {r}, {tn0} : index"));
        let rb = em.op(&format!("arith.muli {tmi}, {tc} : index"));
        let row = em.op(&format!("arith.addi {rb}, {ty} : index"));
        let cb = em.op(&format!("arith.muli {tni}, {tc} : index"));
        let col = em.op(&format!("arith.addi {cb}, {tx} : index"));
        let aoff = em.op(&format!("arith.muli {b}, %sa : index"));
        let boff = em.op(&format!("arith.muli {b}, %sb : index"));
        let coff = em.op(&format!("arith.muli {b}, %sc : index"));
        let z = em.op("arith.constant 0 : index");
        let init = f32_const(em, 0.0);
        let sidx = {
            let m = em.op(&format!("arith.muli {ty}, {tc} : index"));
            em.op(&format!("arith.addi {m}, {tx} : index"))
        };
        let (row2, col2, tx2, ty2, aoff2, boff2, sidx2) =
            (row.clone(), col.clone(), tx.clone(), ty.clone(), aoff.clone(), boff.clone(), sidx.clone());
        let (tra2, trb2, tc2) = (tra.clone(), trb.clone(), tc.clone());
        let acc = for_loop(em, &z, "%K", &tc, "index", &[(init, "f32")], &mut |em, k0, a| {
            // A[row, k0 + tx] -> As[ty][tx]
            let ka = em.op(&format!("arith.addi {k0}, {tx2} : index"));
            let c1 = em.op(&format!("arith.cmpi ult, {row2}, %M : index"));
            let c2 = em.op(&format!("arith.cmpi ult, {ka}, %K : index"));
            let in_a = em.op(&format!("arith.andi {c1}, {c2} : i1"));
            let (row3, ka3, aoff3, tra3) = (row2.clone(), ka.clone(), aoff2.clone(), tra2.clone());
            let av = if_f32(
                em,
                &in_a,
                &mut |em| {
                    let i1 = em.op(&format!("arith.muli {ka3}, %M : index"));
                    let i1 = em.op(&format!("arith.addi {i1}, {row3} : index"));
                    let i2 = em.op(&format!("arith.muli {row3}, %K : index"));
                    let i2 = em.op(&format!("arith.addi {i2}, {ka3} : index"));
                    let i = em.op(&format!("arith.select {tra3}, {i1}, {i2} : index"));
                    let at = em.op(&format!("arith.addi {aoff3}, {i} : index"));
                    let a = Mem { name: "%A".into(), n: 1 << 40, dt };
                    Ok(em.load(&a, &at))
                },
                &mut |em| Ok(f32_const(em, 0.0)),
            )?;
            em.line(&format!("memref.store {av}, %As[{sidx2}] : {sa}"));
            // B[k0 + ty, col] -> Bs[ty][tx]
            let kb = em.op(&format!("arith.addi {k0}, {ty2} : index"));
            let c3 = em.op(&format!("arith.cmpi ult, {kb}, %K : index"));
            let c4 = em.op(&format!("arith.cmpi ult, {col2}, %N : index"));
            let in_b = em.op(&format!("arith.andi {c3}, {c4} : i1"));
            let (col3, kb3, boff3, trb3) = (col2.clone(), kb.clone(), boff2.clone(), trb2.clone());
            let bv = if_f32(
                em,
                &in_b,
                &mut |em| {
                    let i1 = em.op(&format!("arith.muli {col3}, %K : index"));
                    let i1 = em.op(&format!("arith.addi {i1}, {kb3} : index"));
                    let i2 = em.op(&format!("arith.muli {kb3}, %N : index"));
                    let i2 = em.op(&format!("arith.addi {i2}, {col3} : index"));
                    let i = em.op(&format!("arith.select {trb3}, {i1}, {i2} : index"));
                    let at = em.op(&format!("arith.addi {boff3}, {i} : index"));
                    let b = Mem { name: "%B".into(), n: 1 << 40, dt };
                    Ok(em.load(&b, &at))
                },
                &mut |em| Ok(f32_const(em, 0.0)),
            )?;
            em.line(&format!("memref.store {bv}, %Bs[{sidx2}] : {sb}"));
            em.line("gpu.barrier");
            let mut acc = a[0].clone();
            let arow = em.op(&format!("arith.muli {ty2}, {tc2} : index"));
            for q in 0..t {
                let qa = em.op(&format!("arith.constant {q} : index"));
                let ai = em.op(&format!("arith.addi {arow}, {qa} : index"));
                let qb = em.op(&format!("arith.constant {} : index", q * t));
                let bi = em.op(&format!("arith.addi {qb}, {tx2} : index"));
                let x = em.op(&format!("memref.load %As[{ai}] : {sa}"));
                let y = em.op(&format!("memref.load %Bs[{bi}] : {sb}"));
                let p = em.op(&format!("arith.mulf {x}, {y} : f32"));
                acc = em.op(&format!("arith.addf {acc}, {p} : f32"));
            }
            em.line("gpu.barrier");
            Ok(vec![acc])
        })?;
        let c1 = em.op(&format!("arith.cmpi ult, {row}, %M : index"));
        let c2 = em.op(&format!("arith.cmpi ult, {col}, %N : index"));
        let inside = em.op(&format!("arith.andi {c1}, {c2} : i1"));
        let (acc0, hb) = (acc[0].clone(), has_beta.clone());
        em.if_then(&inside, &mut |em| {
            let i = em.op(&format!("arith.muli {row}, %N : index"));
            let i = em.op(&format!("arith.addi {i}, {col} : index"));
            let at = em.op(&format!("arith.addi {coff}, {i} : index"));
            let (acc1, at1) = (acc0.clone(), at.clone());
            let acc2 = acc0.clone();
            let v = if_f32(
                em,
                &hb,
                &mut |em| {
                    let old = em.load(&Mem { name: "%C".into(), n: 1 << 40, dt }, &at1);
                    let s = em.op(&format!("arith.mulf %beta, {old} : f32"));
                    Ok(em.op(&format!("arith.addf {acc1}, {s} : f32")))
                },
                &mut |_| Ok(acc2.clone()),
            )?;
            em.store(&Mem { name: "%C".into(), n: 1 << 40, dt }, &at, &v);
            Ok(())
        })?;
        Ok(vec![])
    });
    lib_func(&lib_gemm_entry(dt), &params, &[("%As".into(), tt), ("%Bs".into(), tt)], GEMM_TILE * GEMM_TILE, &em.out)
}

/// The library kernels a module needs: the GEMM fallback of each element
/// type of its GEMMs (`gemm`; f32 when it has convolutions),
/// im2col/col2im when it has convolutions.
pub fn library_text(gemm: &[DType], conv: bool) -> String {
    let mut s = String::new();
    for dt in [DType::F32, DType::BF16, DType::F16] {
        if gemm.contains(&dt) || (conv && dt == DType::F32) {
            s.push_str(&gemm_text(dt));
        }
    }
    if conv {
        s.push_str(&im2col_text());
        s.push_str(&col2im_text());
    }
    s
}
