//! The CPU backend: a planned ck function as one MLIR `func.func` over the
//! arena, lowered to the LLVM dialect and JIT-compiled by MLIR's
//! ExecutionEngine.
//!
//! Emitted form (`cpu_mlir`): `func.func @NAME(%arena: memref<Axi8>,
//! %in0: memref<B0xi8>, ...)` with `llvm.emit_c_interface`. Every argument is
//! viewed as a flat `memref<Nxf32>` (`memref.view` at offset 0) and every op
//! result as a `memref.view` of the arena at its `ck.offset`; the entry calls,
//! in schedule order, one private `noinline` function per op (its distinct
//! operands, then its result) holding one 1-D `linalg.generic` over the
//! result whose body is `emit::element` (small functions keep LLVM's
//! optimisation time linear in the op count). An in-place op writes straight
//! into its operand's view. If a result overlaps
//! an operand that is read at other positions (not an elementwise op), it is
//! computed into a `memref.alloc` temporary and copied (never produced by
//! memplan's contract; kept for safety).
//!
//! Invariants on exit: the JIT function touches only the arena and the input
//! buffers it is given; results are read from the arena (or an input buffer
//! for a returned argument) after the call. Compile cost is linear in ops.

use crate::emit::{self, Em, Mem};
use crate::mlir::{Mlir, to_llvm_ir};
use crate::plan::{Buf, Layout, Place, layout};
use ckopt_ir::{Diag, Func};
use melior::ExecutionEngine;
use std::fmt::Write;

/// MLIR pipeline from the emitted module to the LLVM dialect.
pub const CPU_PIPELINE: &str = "builtin.module(convert-linalg-to-loops,convert-scf-to-cf,convert-math-to-llvm,\
expand-strided-metadata,lower-affine,finalize-memref-to-llvm,convert-arith-to-llvm,convert-index-to-llvm,\
convert-cf-to-llvm,convert-func-to-llvm,reconcile-unrealized-casts)";

/// The symbol name used for a ck function in MLIR/LLVM (non-identifier
/// characters become `_`).
pub fn symbol_name(name: &str) -> String {
    let mut s: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert_str(0, "ck_");
    }
    s
}

fn byte_range(f: &Func, v: ckopt_ir::ValueId, p: Place) -> (Buf, u64, u64) {
    (p.buf, p.offset, p.offset + f.ty(v).bytes())
}

/// Whether the result of `op` shares memory with an operand in a way that an
/// element-by-element kernel cannot handle (see the module doc).
pub fn needs_temp(f: &Func, l: &Layout, op: &ckopt_ir::Op) -> bool {
    let Some(r) = op.result else { return false };
    let Some(rp) = l.place_of(r) else { return false };
    let (rb, r0, r1) = byte_range(f, r, rp);
    op.operands.iter().any(|&o| {
        let Some(op_) = l.place_of(o) else { return false };
        let (ob, o0, o1) = byte_range(f, o, op_);
        let overlap = ob == rb && o0 < r1 && r0 < o1;
        overlap && !(emit::inplace_safe(op) && o0 == r0)
    })
}

/// The planned function as upstream MLIR (linalg, memref, scf, arith, math, func).
pub fn cpu_mlir(f: &Func) -> Result<String, Diag> {
    let l = layout(f)?;
    cpu_mlir_with(f, &l)
}

fn cpu_mlir_with(f: &Func, l: &Layout) -> Result<String, Diag> {
    let mut s = String::new();
    let _ = writeln!(s, "#ck_id = affine_map<(d0) -> (d0)>");
    let _ = writeln!(s, "module {{");
    s.push_str(&cpu_func_text(f, l)?);
    let _ = writeln!(s, "}}");
    Ok(s)
}

/// Every function of the module, planned, as one upstream MLIR module.
pub fn cpu_mlir_module(m: &ckopt_ir::Module) -> Result<String, Diag> {
    let mut s = String::new();
    let _ = writeln!(s, "#ck_id = affine_map<(d0) -> (d0)>");
    let _ = writeln!(s, "module {{");
    for f in &m.funcs {
        let l = layout(f)?;
        s.push_str(&cpu_func_text(f, &l)?);
    }
    let _ = writeln!(s, "}}");
    Ok(s)
}

/// The module lowered to LLVM IR (every function).
pub fn cpu_llvm_ir_module(m: &ckopt_ir::Module) -> Result<String, Diag> {
    let text = cpu_mlir_module(m)?;
    let loc = m.funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
    let bad = |e: String| Diag::error(loc.clone(), format!("lowering the module for the cpu backend failed: {e}"));
    let ml = Mlir::new();
    let mut module = ml.parse(&text).map_err(bad)?;
    ml.run(&mut module, CPU_PIPELINE).map_err(bad)?;
    to_llvm_ir(&ml, &module).map_err(bad)
}

fn cpu_func_text(f: &Func, l: &Layout) -> Result<String, Diag> {
    let sym = symbol_name(&f.name);
    let arena_ty = format!("memref<{}xi8>", l.arena_bytes);
    let mut s = String::new();
    let mut kernels = String::new();
    let _ = writeln!(s, "  // ckopt: @{} for the cpu backend: arena of {} bytes (ck.arena_bytes)", f.name, l.arena_bytes);
    let mut params = vec![format!("%arena: {arena_ty}")];
    for (i, t) in l.inputs.iter().enumerate() {
        params.push(format!("%in{i}: memref<{}xi8>", t.bytes()));
    }
    let _ = writeln!(s, "  func.func @{sym}({}) attributes {{llvm.emit_c_interface}} {{", params.join(", "));
    let mut mems: Vec<Option<Mem>> = vec![None; f.values.len()];
    let _ = writeln!(s, "    %c0 = arith.constant 0 : index");
    for (i, p) in f.params.iter().enumerate() {
        let t = &l.inputs[i];
        let m = Mem { name: format!("%a{i}"), n: t.elems() };
        let _ = writeln!(s, "    {} = memref.view %in{i}[%c0][] : memref<{}xi8> to {}", m.name, t.bytes(), m.ty());
        mems[p.value.index()] = Some(m);
    }
    for (j, op) in f.body.iter().enumerate() {
        let Some(r) = op.result else { continue };
        let Some(p) = l.place_of(r) else { continue };
        let ty = f.ty(r);
        let m = Mem { name: format!("%r{j}"), n: ty.elems() };
        let _ = writeln!(s, "    // {}", emit::describe(f, op));
        let _ = writeln!(s, "    %o{j} = arith.constant {} : index", p.offset);
        let _ = writeln!(s, "    {} = memref.view %arena[%o{j}][] : {arena_ty} to {}", m.name, m.ty());
        // Distinct operands in order, then the result: the op function's parameters.
        let mut vals: Vec<ckopt_ir::ValueId> = Vec::new();
        for &o in &op.operands {
            if !vals.contains(&o) {
                vals.push(o);
            }
        }
        let mut outer = Vec::new();
        let mut inner = Vec::new();
        for (k, &v) in vals.iter().enumerate() {
            let om = mems[v.index()].clone().ok_or_else(|| {
                Diag::error(op.loc.clone(), format!("'{}' op reads %{} before it is defined", op.kind.full_name(), f.name_of(v)))
            })?;
            inner.push((v, Mem { name: format!("%p{k}"), n: om.n }));
            outer.push(om);
        }
        let ins: Vec<Mem> = op
            .operands
            .iter()
            .map(|o| inner.iter().find(|(v, _)| v == o).map(|(_, m)| m.clone()).unwrap_or(Mem { name: String::new(), n: 0 }))
            .collect();
        if m.n > 0 {
            // One noinline function per op keeps LLVM's work linear in the op count.
            let kname = format!("{sym}_k{j}_{}", op.kind.name());
            let y = Mem { name: "%y".into(), n: m.n };
            let mut kp: Vec<String> = inner.iter().map(|(_, im)| format!("{}: {}", im.name, im.ty())).collect();
            kp.push(format!("%y: {}", y.ty()));
            let _ = writeln!(kernels, "  // {}", emit::describe(f, op));
            let _ = writeln!(kernels, "  func.func private @{kname}({}) attributes {{passthrough = [\"noinline\"]}} {{", kp.join(", "));
            let temp = needs_temp(f, l, op);
            let dest = if temp {
                let _ = writeln!(kernels, "    %tmp = memref.alloc() {{alignment = 64 : i64}} : {}", y.ty());
                "%tmp".to_string()
            } else {
                y.name.clone()
            };
            let mut em = Em::new("k", 3);
            let v = emit::element(&mut em, f, op, &ins, "%i")?;
            let _ = writeln!(
                kernels,
                "    linalg.generic {{indexing_maps = [#ck_id], iterator_types = [\"parallel\"]}} outs({dest} : {}) {{",
                y.ty()
            );
            let _ = writeln!(kernels, "    ^bb0(%out: f32):");
            let _ = writeln!(kernels, "      %i = linalg.index 0 : index");
            kernels.push_str(&em.out);
            let _ = writeln!(kernels, "      linalg.yield {v} : f32");
            let _ = writeln!(kernels, "    }} {}", mlir_loc(op));
            if temp {
                let _ = writeln!(kernels, "    memref.copy %tmp, %y : {} to {}", y.ty(), y.ty());
                let _ = writeln!(kernels, "    memref.dealloc %tmp : {}", y.ty());
            }
            let _ = writeln!(kernels, "    return");
            let _ = writeln!(kernels, "  }}");
            let mut args: Vec<&str> = outer.iter().map(|om| om.name.as_str()).collect();
            args.push(&m.name);
            let mut tys: Vec<String> = outer.iter().map(|om| om.ty()).collect();
            tys.push(m.ty());
            let _ = writeln!(s, "    func.call @{kname}({}) : ({}) -> ()", args.join(", "), tys.join(", "));
        }
        mems[r.index()] = Some(m);
    }
    let _ = writeln!(s, "    return");
    let _ = writeln!(s, "  }}");
    s.push_str(&kernels);
    Ok(s)
}

/// An MLIR `loc(...)` for the op's ck source location.
pub fn mlir_loc(op: &ckopt_ir::Op) -> String {
    if !op.loc.is_known() {
        return format!("loc(\"{}\")", op.kind.full_name());
    }
    let file: String = op.loc.file.chars().map(|c| if c == '"' || c == '\\' || c.is_control() { '_' } else { c }).collect();
    format!("loc(\"{file}\":{}:{})", op.loc.line, op.loc.col)
}

fn internal(f: &Func, m: String) -> Diag {
    Diag::error(f.loc.clone(), format!("lowering @{} for the cpu backend failed: {m}", f.name))
}

/// The function lowered to the LLVM dialect (after `CPU_PIPELINE`), as text.
pub fn cpu_llvm_dialect(f: &Func) -> Result<String, Diag> {
    let text = cpu_mlir(f)?;
    let m = Mlir::new();
    let mut module = m.parse(&text).map_err(|e| internal(f, e))?;
    m.run(&mut module, CPU_PIPELINE).map_err(|e| internal(f, e))?;
    Ok(format!("{}", module.as_operation()))
}

/// The function as LLVM IR text (host code of the cpu backend).
pub fn cpu_llvm_ir(f: &Func) -> Result<String, Diag> {
    let text = cpu_mlir(f)?;
    let m = Mlir::new();
    let mut module = m.parse(&text).map_err(|e| internal(f, e))?;
    m.run(&mut module, CPU_PIPELINE).map_err(|e| internal(f, e))?;
    to_llvm_ir(&m, &module).map_err(|e| internal(f, e))
}

/// A JIT-compiled planned function.
pub struct CpuProgram {
    // Field order matters: the engine is dropped before the context.
    engine: ExecutionEngine,
    _mlir: Mlir,
    pub layout: Layout,
    entry: String,
    /// The MLIR text that was compiled (upstream dialects).
    pub mlir: String,
}

/// Compiles a planned function for the CPU (`opt_level` 0..=3, as LLVM's -O).
pub fn compile_cpu(f: &Func, opt_level: usize) -> Result<CpuProgram, Diag> {
    let l = layout(f)?;
    let text = cpu_mlir_with(f, &l)?;
    let m = Mlir::new();
    let engine = {
        let mut module = m.parse(&text).map_err(|e| internal(f, e))?;
        m.run(&mut module, CPU_PIPELINE).map_err(|e| internal(f, e))?;
        ExecutionEngine::new(&module, opt_level.min(3), &[], false, false)
    };
    let entry = symbol_name(&f.name);
    if engine.lookup(&format!("_mlir_ciface_{entry}")).is_null() {
        return Err(internal(f, format!("the JIT has no symbol for @{entry}: {}", m.take_diags())));
    }
    Ok(CpuProgram { engine, _mlir: m, layout: l, entry, mlir: text })
}

/// A 1-D memref descriptor: allocated and aligned pointers, offset, size, stride.
#[repr(C)]
struct Desc1 {
    alloc: *mut u8,
    align: *mut u8,
    offset: i64,
    size: i64,
    stride: i64,
}

impl CpuProgram {
    /// Runs the step: `arena` must be exactly `layout.arena_bytes` long and
    /// 4-byte aligned; `inputs[i]` has the element count of argument i.
    /// Inputs are only read (they are passed as mutable memrefs to the ABI but
    /// the code never stores to argument views).
    pub fn run(&self, arena: &mut [u8], inputs: &[&[f32]]) -> Result<(), String> {
        let l = &self.layout;
        if arena.len() as u64 != l.arena_bytes {
            return Err(format!("arena has {} bytes, @{} needs exactly {}", arena.len(), l.func, l.arena_bytes));
        }
        if !(arena.as_ptr() as usize).is_multiple_of(4) {
            return Err("arena is not 4-byte aligned".into());
        }
        if inputs.len() != l.inputs.len() {
            return Err(format!("@{} takes {} arguments, {} given", l.func, l.inputs.len(), inputs.len()));
        }
        for (i, (t, x)) in l.inputs.iter().zip(inputs).enumerate() {
            if x.len() as u64 != t.elems() {
                return Err(format!("argument {i} of @{} needs {} elements ({t}), got {}", l.func, t.elems(), x.len()));
            }
        }
        let mut descs: Vec<Desc1> = Vec::with_capacity(1 + inputs.len());
        let a = arena.as_mut_ptr();
        descs.push(Desc1 { alloc: a, align: a, offset: 0, size: arena.len() as i64, stride: 1 });
        for x in inputs {
            let p = x.as_ptr() as *mut u8;
            descs.push(Desc1 { alloc: p, align: p, offset: 0, size: (x.len() * 4) as i64, stride: 1 });
        }
        let mut ptrs: Vec<*mut Desc1> = descs.iter_mut().map(|d| d as *mut Desc1).collect();
        let mut args: Vec<*mut ()> = ptrs.iter_mut().map(|p| p as *mut *mut Desc1 as *mut ()).collect();
        // SAFETY: each argument points to a live descriptor of a buffer of the
        // size the compiled code was specialised to (checked above).
        unsafe { self.engine.invoke_packed(&self.entry, &mut args) }
            .map_err(|e| format!("calling the JIT-compiled @{} failed: {e}", l.func))
    }

    /// Reads the results after `run`, in order.
    pub fn outputs(&self, arena: &[u8], inputs: &[&[f32]]) -> Vec<Vec<f32>> {
        self.layout
            .outputs
            .iter()
            .map(|(t, p)| {
                let n = t.elems() as usize;
                match p.buf {
                    Buf::Input(i) => inputs.get(i).map(|x| x.to_vec()).unwrap_or_default(),
                    Buf::Arena => {
                        let o = p.offset as usize;
                        arena
                            .get(o..o + 4 * n)
                            .map(|b| b.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect())
                            .unwrap_or_default()
                    }
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
    use ckopt_ir::{Attr, Attrs, Loc, OpKind, TensorType, attrs};

    /// Plans a function naively: every op result gets its own slot.
    pub(crate) fn naive_plan(f: &mut Func) {
        let mut off = 0i64;
        let tys: Vec<u64> = f.body.iter().map(|o| o.result.map(|r| f.ty(r).bytes()).unwrap_or(0)).collect();
        for (op, b) in f.body.iter_mut().zip(tys) {
            if op.result.is_some() {
                op.attrs.insert(ATTR_OFFSET.into(), Attr::Int(off));
                off += (b as i64 + 63) / 64 * 64;
            }
        }
        f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(off));
    }

    #[test]
    fn matmul_relu_sum_matches_a_hand_reference() {
        let mut f = Func::new("mm", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![3, 4]), false);
        let w = f.add_param("w", TensorType::f32(vec![4, 5]), true);
        let h = f.push(OpKind::Matmul, &[x, w], Attrs::new(), None, "h", Loc::unknown()).unwrap();
        let a = f.push(OpKind::Relu, &[h], Attrs::new(), None, "a", Loc::unknown()).unwrap();
        let s = f
            .push(OpKind::ReduceSum, &[a], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "s", Loc::unknown())
            .unwrap();
        f.push_return(&[s, a], Loc::unknown());
        naive_plan(&mut f);
        let p = compile_cpu(&f, 2).unwrap();
        let xs: Vec<f32> = (0..12).map(|i| i as f32 * 0.25 - 1.0).collect();
        let ws: Vec<f32> = (0..20).map(|i| (i % 7) as f32 * 0.5 - 1.5).collect();
        let mut arena = vec![0u8; p.layout.arena_bytes as usize];
        p.run(&mut arena, &[&xs, &ws]).unwrap();
        let out = p.outputs(&arena, &[&xs, &ws]);
        let mut want = vec![0f32; 15];
        for i in 0..3 {
            for j in 0..5 {
                let mut acc = 0f32;
                for k in 0..4 {
                    acc += xs[i * 4 + k] * ws[k * 5 + j];
                }
                want[i * 5 + j] = acc.max(0.0);
            }
        }
        assert_eq!(out[1], want);
        assert!((out[0][0] - want.iter().sum::<f32>()).abs() < 1e-5);
    }
}
