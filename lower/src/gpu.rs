//! The NVPTX backend: one `gpu.func` kernel per ck op (one thread per result
//! element, the same per-element code as the CPU backend), compiled by MLIR's
//! NVVM pipeline into one PTX module, plus the launch table the runtime
//! follows.
//!
//! Emitted form (`gpu_mlir`): `module attributes {gpu.container_module}`
//! holding `gpu.module @ck_kernels` with kernels named `SYM_kJ_OP` (J = the
//! op's index in the body). Kernel parameters are flat `memref<Nxf32>`
//! (bare pointers in PTX: `use-bare-ptr-memref-call-conv`): the distinct
//! operands first, the result last. Each kernel guards `i < N`.
//!
//! Launch table: for every op with a non-empty result, in schedule order:
//! kernel name, grid `[ceil(N/block), 1, 1]`, block `[block, 1, 1]`, and for
//! each parameter the buffer (arena or argument i) and byte offset to pass.
//! The runtime launches them in order on one stream, which is exactly the
//! schedule, so memplan's reuse of arena bytes is safe.
//!
//! Errors: an op whose result overlaps an operand it reads at other
//! positions cannot run as one element-parallel kernel (named error); math
//! functions (exp, log, tanh, sigmoid, sqrt, rsqrt) need libdevice
//! (`PtxOptions::libdevice`, else `$CKOPT_LIBDEVICE`), else a named error.

use crate::cpu::{mlir_loc, symbol_name};
use crate::emit::{self, Em, Mem};
use crate::mlir::Mlir;
use ckopt_kernels::{Buf, Layout, Place, layout};
use ckopt_ir::{Diag, Func, OpKind};
use melior::ir::attribute::{ArrayAttribute, Attribute, AttributeLike};
use melior::ir::operation::OperationLike;
use melior::ir::BlockLike;
use serde_json::{Value as Json, json};
use std::fmt::Write;
use std::path::PathBuf;

/// Options of the NVPTX backend.
#[derive(Clone, Debug)]
pub struct PtxOptions {
    /// Target compute capability (`90` = sm_90).
    pub sm: u32,
    /// libdevice.10.bc; `None` = `$CKOPT_LIBDEVICE`.
    pub libdevice: Option<PathBuf>,
    /// Threads per block (1-D).
    pub block: u32,
}

impl Default for PtxOptions {
    fn default() -> Self {
        PtxOptions { sm: 90, libdevice: None, block: 256 }
    }
}

/// One kernel parameter: a pointer into a buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    pub buf: Buf,
    pub offset: u64,
    pub bytes: u64,
}

/// One launch of the table.
#[derive(Clone, Debug)]
pub struct Kernel {
    pub name: String,
    /// `ck.OP` and its source location, for errors.
    pub op: String,
    pub loc: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub args: Vec<Arg>,
}

/// Compiled PTX with its launch table and layout.
#[derive(Clone, Debug)]
pub struct PtxProgram {
    pub ptx: String,
    pub kernels: Vec<Kernel>,
    pub layout: Layout,
    pub sm: u32,
}

fn byte_range(f: &Func, v: ckopt_ir::ValueId, p: Place) -> (Buf, u64, u64) {
    (p.buf, p.offset, p.offset + f.ty(v).bytes())
}

/// Whether the result of `op` shares memory with an operand in a way that an
/// element-by-element kernel cannot handle.
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

fn uses_math(k: OpKind) -> bool {
    use OpKind::*;
    matches!(k, Exp | Log | Tanh | Sigmoid | Sqrt | Rsqrt | Erf)
}

/// The kernels of `f` in the gpu dialect, and their launch table.
pub fn gpu_mlir(f: &Func, opts: &PtxOptions) -> Result<(String, Vec<Kernel>), Diag> {
    let l = layout(f)?;
    gpu_mlir_with(f, &l, opts)
}

fn gpu_mlir_with(f: &Func, l: &Layout, opts: &PtxOptions) -> Result<(String, Vec<Kernel>), Diag> {
    let (body, kernels) = gpu_kernels_text(f, l, opts)?;
    Ok((wrap_gpu_module(&body), kernels))
}

fn wrap_gpu_module(body: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "module attributes {{gpu.container_module}} {{");
    let _ = writeln!(s, "  gpu.module @ck_kernels {{");
    s.push_str(body);
    let _ = writeln!(s, "  }}");
    let _ = writeln!(s, "}}");
    s
}

fn gpu_kernels_text(f: &Func, l: &Layout, opts: &PtxOptions) -> Result<(String, Vec<Kernel>), Diag> {
    let sym = symbol_name(&f.name);
    let block = opts.block.max(1);
    let mut s = String::new();
    let mut kernels = Vec::new();
    let _ = writeln!(s, "    // ckopt: @{} for the cuda backend: one kernel per op, arena of {} bytes", f.name, l.arena_bytes);
    for (j, op) in f.body.iter().enumerate() {
        let Some(r) = op.result else { continue };
        let ty = f.ty(r);
        let n = ty.elems();
        if n == 0 {
            continue;
        }
        if needs_temp(f, l, op) {
            return Err(Diag::error(
                op.loc.clone(),
                format!(
                    "'{}' op writes its result over an operand it reads at other positions; \
                     the cuda backend runs each op as one element-parallel kernel and cannot do that",
                    op.kind.full_name()
                ),
            ));
        }
        let name = format!("{sym}_k{j}_{}", op.kind.name());
        // Distinct operands in order, then the result.
        let mut vals: Vec<ckopt_ir::ValueId> = Vec::new();
        for &o in &op.operands {
            if !vals.contains(&o) {
                vals.push(o);
            }
        }
        let mut params = Vec::new();
        let mut args = Vec::new();
        let mut ins = Vec::new();
        for (k, &v) in vals.iter().enumerate() {
            let p = l.place_of(v).ok_or_else(|| {
                Diag::error(op.loc.clone(), format!("'{}' op reads %{} which has no storage", op.kind.full_name(), f.name_of(v)))
            })?;
            let m = Mem { name: format!("%p{k}"), n: f.ty(v).elems() };
            params.push(format!("{}: {}", m.name, m.ty()));
            args.push(Arg { buf: p.buf, offset: p.offset, bytes: f.ty(v).bytes() });
            ins.push((v, m));
        }
        let y = Mem { name: "%y".into(), n };
        params.push(format!("%y: {}", y.ty()));
        let rp = l.place_of(r).ok_or_else(|| Diag::error(op.loc.clone(), "result has no storage"))?;
        args.push(Arg { buf: rp.buf, offset: rp.offset, bytes: ty.bytes() });
        let operand_mems: Vec<Mem> = op
            .operands
            .iter()
            .map(|o| ins.iter().find(|(v, _)| v == o).map(|(_, m)| m.clone()).unwrap_or(Mem { name: String::new(), n: 0 }))
            .collect();
        let mut em = Em::new("e", 4);
        let v = emit::element(&mut em, f, op, &operand_mems, "%i")?;
        let _ = writeln!(s, "    // {}", emit::describe(f, op));
        let _ = writeln!(s, "    gpu.func @{name}({}) kernel {{", params.join(", "));
        let _ = writeln!(s, "      %bid = gpu.block_id x");
        let _ = writeln!(s, "      %bdim = gpu.block_dim x");
        let _ = writeln!(s, "      %tid = gpu.thread_id x");
        let _ = writeln!(s, "      %base = arith.muli %bid, %bdim : index");
        let _ = writeln!(s, "      %i = arith.addi %base, %tid : index");
        let _ = writeln!(s, "      %n = arith.constant {n} : index");
        let _ = writeln!(s, "      %inb = arith.cmpi ult, %i, %n : index");
        let _ = writeln!(s, "      scf.if %inb {{");
        s.push_str(&em.out);
        let _ = writeln!(s, "        memref.store {v}, %y[%i] : {}", y.ty());
        let _ = writeln!(s, "      }}");
        let _ = writeln!(s, "      gpu.return");
        let _ = writeln!(s, "    }} {}", mlir_loc(op));
        let grid = n.div_ceil(block as u64);
        let grid = u32::try_from(grid).map_err(|_| {
            Diag::error(op.loc.clone(), format!("'{}' op: {n} elements need more than 2^32 blocks", op.kind.full_name()))
        })?;
        kernels.push(Kernel {
            name,
            op: op.kind.full_name(),
            loc: op.loc.to_string(),
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            args,
        });
    }
    Ok((s, kernels))
}

fn resolve_libdevice(opts: &PtxOptions) -> Option<PathBuf> {
    opts.libdevice
        .clone()
        .or_else(|| std::env::var_os("CKOPT_LIBDEVICE").map(PathBuf::from))
        .filter(|p| p.is_file())
}

/// The NVVM pipeline string for `opts` (libdevice linked when given).
pub fn nvvm_pipeline(sm: u32, libdevice: Option<&std::path::Path>) -> String {
    let ptx = if sm >= 100 { "+ptx86" } else { "+ptx80" };
    let link = libdevice.map(|p| format!(" l={}", p.display())).unwrap_or_default();
    format!(
        "builtin.module(nvvm-attach-target{{chip=sm_{sm} features={ptx} O=3{link}}},\
gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{{use-bare-ptr-memref-call-conv=1}},canonicalize,cse,reconcile-unrealized-casts),\
gpu-module-to-binary{{format=isa}})"
    )
}

/// Compiles `f` to PTX for `opts.sm` with its launch table.
pub fn compile_ptx(f: &Func, opts: &PtxOptions) -> Result<PtxProgram, Diag> {
    let mut v = compile_ptx_funcs(std::slice::from_ref(f), opts)?;
    v.pop().ok_or_else(|| Diag::error(f.loc.clone(), "no program"))
}

/// Every function of the module in the gpu dialect (one `gpu.module`).
pub fn gpu_mlir_module(m: &ckopt_ir::Module, opts: &PtxOptions) -> Result<String, Diag> {
    let mut body = String::new();
    for f in &m.funcs {
        let l = layout(f)?;
        body.push_str(&gpu_kernels_text(f, &l, opts)?.0);
    }
    Ok(wrap_gpu_module(&body))
}

/// Compiles every function to one PTX module; one program (sharing that
/// PTX) per function, in order.
pub fn compile_ptx_funcs(funcs: &[Func], opts: &PtxOptions) -> Result<Vec<PtxProgram>, Diag> {
    let mut body = String::new();
    let mut parts = Vec::new();
    for f in funcs {
        let l = layout(f)?;
        let (b, k) = gpu_kernels_text(f, &l, opts)?;
        body.push_str(&b);
        parts.push((l, k));
    }
    let text = wrap_gpu_module(&body);
    let any_kernel = parts.iter().any(|(_, k)| !k.is_empty());
    let Some(f) = funcs.first() else { return Ok(Vec::new()) };
    let libdevice = resolve_libdevice(opts);
    if libdevice.is_none()
        && let Some(op) = funcs.iter().flat_map(|f| f.body.iter()).find(|o| uses_math(o.kind))
    {
        return Err(Diag::error(
            op.loc.clone(),
            format!(
                "'{}' op needs libdevice for the cuda backend: pass --libdevice=PATH or set CKOPT_LIBDEVICE to \
                 libdevice.10.bc (from the PyPI wheel nvidia-cuda-nvcc-cu12: nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc)",
                op.kind.full_name()
            ),
        ));
    }
    let internal = |m: String| Diag::error(f.loc.clone(), format!("lowering @{} to PTX failed: {m}", f.name));
    let ptx = if !any_kernel {
        // Nothing to launch: an empty, valid PTX module.
        format!(".version 8.0\n.target sm_{}\n.address_size 64\n", opts.sm)
    } else {
        let m = Mlir::new();
        let mut module = m.parse(&text).map_err(internal)?;
        m.run(&mut module, &nvvm_pipeline(opts.sm, libdevice.as_deref())).map_err(internal)?;
        extract_ptx(&module).map_err(internal)?
    };
    if ptx.contains(".extern .func __nv_") {
        return Err(internal("the PTX still calls libdevice functions (libdevice was not linked)".into()));
    }
    Ok(parts.into_iter().map(|(layout, kernels)| PtxProgram { ptx: ptx.clone(), kernels, layout, sm: opts.sm }).collect())
}

fn extract_ptx(module: &melior::ir::Module) -> Result<String, String> {
    let mut cur = module.body().first_operation();
    while let Some(op) = cur {
        if op.name().as_string_ref().as_str().ok() == Some("gpu.binary") {
            let objs = op.attribute("objects").map_err(|e| format!("gpu.binary without objects: {e}"))?;
            let objs = ArrayAttribute::try_from(objs).map_err(|e| format!("gpu.binary objects: {e}"))?;
            let obj: Attribute = objs.element(0).map_err(|e| format!("gpu.binary has no object: {e}"))?;
            // SAFETY: the attribute is checked to be a GPU object attribute
            // before its string is read; the string is copied while the
            // module (which owns it) is alive.
            let ptx = unsafe {
                if !mlir_sys::mlirAttributeIsAGPUObjectAttr(obj.to_raw()) {
                    return Err("gpu.binary object is not a #gpu.object".into());
                }
                let s = mlir_sys::mlirGPUObjectAttrGetObject(obj.to_raw());
                String::from_utf8_lossy(std::slice::from_raw_parts(s.data as *const u8, s.length)).into_owned()
            };
            return Ok(ptx);
        }
        cur = op.next_in_block();
    }
    Err("no gpu.binary in the lowered module".into())
}

fn buf_json(b: Buf) -> Json {
    match b {
        Buf::Arena => json!("arena"),
        Buf::Input(i) => json!(format!("arg{i}")),
    }
}

impl PtxProgram {
    /// The launch table as JSON (function, arena_bytes, inputs, outputs, kernels).
    pub fn launch_table(&self) -> Json {
        let l = &self.layout;
        json!({
            "function": l.func,
            "arena_bytes": l.arena_bytes,
            "inputs": l.inputs.iter().map(|t| json!({"shape": t.shape, "bytes": t.bytes()})).collect::<Vec<_>>(),
            "outputs": l.outputs.iter().map(|(t, p)| json!({"shape": t.shape, "buffer": buf_json(p.buf), "offset": p.offset})).collect::<Vec<_>>(),
            "kernels": self.kernels.iter().map(|k| json!({
                "kernel": k.name,
                "op": k.op,
                "loc": k.loc,
                "grid": k.grid,
                "block": k.block,
                "args": k.args.iter().map(|a| json!({"buffer": buf_json(a.buf), "offset": a.offset, "bytes": a.bytes})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        })
    }

    /// PTX preceded by the launch table as `//` comment lines (one JSON object),
    /// still a valid PTX file.
    pub fn annotated(&self) -> String {
        annotated(std::slice::from_ref(self))
    }
}

/// The launch tables of programs that share one PTX module:
/// `{"sm": N, "functions": [launch_table, ...]}`.
pub fn launch_tables(progs: &[PtxProgram]) -> Json {
    json!({
        "sm": progs.first().map(|p| p.sm),
        "functions": progs.iter().map(|p| p.launch_table()).collect::<Vec<_>>(),
    })
}

/// The shared PTX preceded by `launch_tables` as `//` comment lines (still a
/// valid PTX file for ptxas).
pub fn annotated(progs: &[PtxProgram]) -> String {
    // One kernel per line; the comment bodies joined form the JSON of `launch_tables`.
    let mut s = String::from("// ckopt launch table (JSON):\n");
    let c = |v: &Json| serde_json::to_string(v).unwrap_or_default();
    let _ = writeln!(s, "// {{\"sm\": {}, \"functions\": [", progs.first().map(|p| p.sm).unwrap_or(0));
    for (i, p) in progs.iter().enumerate() {
        let t = p.launch_table();
        let _ = writeln!(
            s,
            "//  {{\"function\": {}, \"arena_bytes\": {}, \"inputs\": {}, \"outputs\": {}, \"kernels\": [",
            c(&t["function"]),
            c(&t["arena_bytes"]),
            c(&t["inputs"]),
            c(&t["outputs"])
        );
        let ks = t["kernels"].as_array().cloned().unwrap_or_default();
        for (j, k) in ks.iter().enumerate() {
            let _ = writeln!(s, "//   {}{}", c(k), if j + 1 < ks.len() { "," } else { "" });
        }
        let _ = writeln!(s, "//  ]}}{}", if i + 1 < progs.len() { "," } else { "" });
    }
    s.push_str("// ]}\n");
    if let Some(p) = progs.first() {
        s.push_str(&p.ptx);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
    use ckopt_ir::{Attr, Attrs, Loc, TensorType};

    fn planned(kind: OpKind) -> Func {
        let mut f = Func::new("g", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![4, 300]), false);
        let ops = if kind.is_binary_elementwise() { vec![x, x] } else { vec![x] };
        let y = f.push(kind, &ops, Attrs::new(), None, "y", Loc::unknown()).unwrap();
        f.push_return(&[y], Loc::unknown());
        f.body[0].attrs.insert(ATTR_OFFSET.into(), Attr::Int(64));
        f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(64 + 4 * 1200));
        f
    }

    #[test]
    fn add_kernel_has_an_entry_with_pointer_params_and_a_launch_table() {
        let f = planned(OpKind::Add);
        let p = compile_ptx(&f, &PtxOptions::default()).unwrap();
        assert!(p.ptx.contains(".visible .entry g_k0_add("), "{}", p.ptx);
        assert_eq!(p.ptx.matches(".param .u64").count(), 2, "x once (deduplicated) and y");
        let k = &p.kernels[0];
        assert_eq!((k.grid, k.block), ([5, 1, 1], [256, 1, 1]));
        assert_eq!(k.args[0], Arg { buf: Buf::Input(0), offset: 0, bytes: 4800 });
        assert_eq!(k.args[1], Arg { buf: Buf::Arena, offset: 64, bytes: 4800 });
        let text = p.annotated();
        assert!(text.starts_with("// ckopt launch table (JSON):\n"));
        let mut json: String = text.lines().skip(1).take_while(|l| *l != "// ]}").map(|l| &l[2..]).collect();
        json.push_str("]}");
        let v: Json = serde_json::from_str(&json).unwrap();
        assert_eq!(v, launch_tables(std::slice::from_ref(&p)));
    }

    #[test]
    fn math_without_libdevice_is_an_error_naming_the_op() {
        let f = planned(OpKind::Exp);
        let opts = PtxOptions { libdevice: Some(PathBuf::from("/nonexistent/libdevice.10.bc")), ..Default::default() };
        // SAFETY of the test: only reads the environment variable.
        if std::env::var_os("CKOPT_LIBDEVICE").is_none() {
            let e = compile_ptx(&f, &opts).unwrap_err();
            assert!(e.message.contains("'ck.exp' op needs libdevice"), "{}", e.message);
        }
    }
}
