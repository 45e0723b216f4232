//! The cuda backend's compiler: a planned module to one PTX module and a
//! cuda bundle (`ckopt_kernels::Bundle`).
//!
//! The functions' step programs (`ckopt_kernels::build_program`, the same
//! the cpu backend runs) share one `KernelCache`, so a kernel is compiled
//! once however many layers use it. Every distinct kernel becomes gpu-dialect
//! code (`cuda::kernel_code`), the library kernels are added when a GEMM or
//! a convolution needs them, and the whole `gpu.module` goes through MLIR's
//! NVVM pipeline (`nvvm_pipeline`) into ONE PTX module. Math functions
//! (exp, log, tanh, sigmoid, erf) are linked from libdevice; sqrt and
//! rsqrt are the correctly rounded `sqrt.rn.f32` (`emit::elementwise::sqrt`)
//! (`CudaOptions::libdevice`, else `$CKOPT_LIBDEVICE`); without it they are
//! a located error naming the op. GEMMs and convolutions are not kernels of
//! the module: the runtime calls cuBLAS (or the fallback `ck_lib_gemm`).
//!
//! Every element type is compiled (f32, bf16, f16, i64, i32, i1 stored as a
//! byte; docs/cuda.md "Element types"), as on the cpu backend: the kernels
//! come from the same elemental emitter; GEMMs of bf16/f16 go to cuBLAS's
//! `cublasGemmStridedBatchedEx` (or the fallback `ck_lib_gemm_bf16`/`_f16`).
//!
//! Errors (located `Diag`s): an unplanned function, a plan the kernels
//! cannot execute (from `build_program`: a convolution on another element
//! type than f32, ...), math without libdevice, an MLIR failure (with MLIR's
//! diagnostics).

use crate::cuda::{kernel_code, library_text};
use crate::error::LowerError;
use crate::mlir::Mlir;
use ckopt_ir::{Diag, Func, Module, OpKind};
use ckopt_kernels::{Bundle, CudaKernel, KernelCache, Step, StepProgram, build_program};
use melior::ir::BlockLike;
use melior::ir::attribute::{ArrayAttribute, Attribute, AttributeLike};
use melior::ir::operation::OperationLike;
use std::fmt::Write;
use std::path::PathBuf;

/// Options of the cuda backend: compiling (sm, libdevice) and running
/// (tf32, used by the runtime).
#[derive(Clone, Debug)]
pub struct CudaOptions {
    /// Target compute capability (`90` = sm_90).
    pub sm: u32,
    /// libdevice.10.bc; `None` = `$CKOPT_LIBDEVICE`.
    pub libdevice: Option<PathBuf>,
    /// GEMMs on TF32 tensor cores (cuBLAS); fp32 otherwise.
    pub tf32: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        CudaOptions { sm: 90, libdevice: None, tf32: false }
    }
}

/// The former name of `CudaOptions`.
pub type PtxOptions = CudaOptions;

/// Ops whose cuda kernels call libdevice (`math.log`); exp, tanh, erf and
/// sigmoid are `ckopt_ir::math`'s arithmetic.
fn uses_math(k: OpKind) -> bool {
    use OpKind::*;
    matches!(k, Log | CrossEntropy)
}

fn resolve_libdevice(opts: &CudaOptions) -> Option<PathBuf> {
    opts.libdevice.clone().or_else(|| std::env::var_os("CKOPT_LIBDEVICE").map(PathBuf::from)).filter(|p| p.is_file())
}

/// The NVVM pipeline for compute capability `sm` (libdevice linked when given).
pub fn nvvm_pipeline(sm: u32, libdevice: Option<&std::path::Path>) -> String {
    let ptx = if sm >= 100 { "+ptx86" } else { "+ptx80" };
    let link = libdevice.map(|p| format!(" l={}", p.display())).unwrap_or_default();
    format!(
        "builtin.module(nvvm-attach-target{{chip=sm_{sm} features={ptx} O=3{link}}},\
gpu.module(convert-scf-to-cf,convert-gpu-to-nvvm{{use-bare-ptr-memref-call-conv=1}},canonicalize,cse,reconcile-unrealized-casts),\
gpu-module-to-binary{{format=isa}})"
    )
}

/// The step programs of `funcs` and the kernels they share.
pub fn programs_of(funcs: &[&Func]) -> Result<(Vec<StepProgram>, KernelCache), Diag> {
    // The cpu backend widens bf16/f16 convolutions around its f32 library
    // call; the cuda runtime's im2col + GEMM convolutions are f32 only.
    for f in funcs {
        for op in &f.body {
            let conv = matches!(op.kind, ckopt_ir::OpKind::Conv2d | ckopt_ir::OpKind::Conv2dGradInput | ckopt_ir::OpKind::Conv2dGradFilter);
            let lowp = op.operands.iter().copied().chain(op.result).any(|v| f.ty(v).dtype != ckopt_ir::DType::F32);
            if conv && lowp {
                return Err(Diag::error(
                    op.loc.clone(),
                    format!("'{}' op is not supported by the cuda lowering on non-f32 values (convolutions are f32 on cuda; run it on the cpu backend or the interpreter)", op.kind.full_name()),
                ));
            }
        }
    }
    let mut cache = KernelCache::new();
    let programs = funcs
        .iter()
        .map(|f| build_program(f, &mut cache))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((programs, cache))
}

/// The gpu-dialect module of `cache`'s kernels (plus the library kernels
/// the programs need) and each kernel's launches.
pub fn cuda_kernels_mlir(cache: &KernelCache, programs: &[StepProgram]) -> Result<(String, Vec<CudaKernel>), Diag> {
    let mut body = String::new();
    let mut kernels = Vec::with_capacity(cache.len());
    for (i, k) in cache.kernels.iter().enumerate() {
        let code = kernel_code(i, k)?;
        for line in k.key.lines().filter(|l| l.contains("ck.") || l.starts_with("//")) {
            let _ = writeln!(body, "    // {}", line.trim().trim_start_matches("// "));
        }
        let _ = writeln!(body, "    // {}", code.cuda.what);
        body.push_str(&code.text);
        kernels.push(code.cuda);
    }
    let steps = || programs.iter().flat_map(|p| p.steps.iter());
    let gemm: Vec<ckopt_ir::DType> = steps()
        .filter_map(|s| match s {
            Step::Gemm { gemm, .. } => Some(gemm.dtypes[2]),
            _ => None,
        })
        .collect();
    let conv = steps().any(|s| matches!(s, Step::Conv { .. }));
    body.push_str(&library_text(&gemm, conv));
    let mut s = String::new();
    let _ = writeln!(s, "module attributes {{gpu.container_module}} {{");
    let _ = writeln!(s, "  gpu.module @ck_kernels {{");
    s.push_str(&body);
    let _ = writeln!(s, "  }}");
    let _ = writeln!(s, "}}");
    Ok((s, kernels))
}

/// Compiles `funcs` (planned) into one bundle for `opts.sm` (without
/// training signatures: the caller adds them).
pub fn compile_bundle(funcs: &[&Func], opts: &CudaOptions) -> Result<Bundle, Diag> {
    let Some(first) = funcs.first() else {
        return Err(Diag::error(Default::default(), "no function to compile for cuda"));
    };
    let (programs, cache) = programs_of(funcs)?;
    let (text, kernels) =
        cuda_kernels_mlir(&cache, &programs).map_err(|d| if d.loc.is_known() { d } else { Diag::error(first.loc.clone(), d.message) })?;
    let libdevice = resolve_libdevice(opts);
    let math = cache.kernels.iter().any(|k| k.func.body.iter().any(|o| uses_math(o.kind)));
    if libdevice.is_none() && math {
        let op = funcs.iter().flat_map(|f| f.body.iter()).find(|o| uses_math(o.kind));
        let (loc, name) = op.map(|o| (o.loc.clone(), o.kind.full_name())).unwrap_or((first.loc.clone(), "a math".into()));
        return Err(Diag::error(
            loc,
            format!(
                "'{name}' op needs libdevice for the cuda backend: pass --libdevice=PATH or set CKOPT_LIBDEVICE to \
                 libdevice.10.bc (from the PyPI wheel nvidia-cuda-nvcc-cu12: nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc)"
            ),
        ));
    }
    let names: Vec<&str> = funcs.iter().map(|f| f.name.as_str()).collect();
    let internal = |m: LowerError| Diag::error(first.loc.clone(), format!("lowering @{} to PTX failed: {m}", names.join(", @")));
    let ptx = if kernels.is_empty() && !text.contains("gpu.func") {
        format!(".version 8.0\n.target sm_{}\n.address_size 64\n", opts.sm)
    } else {
        let m = Mlir::new();
        let mut module = m.parse(&text).map_err(internal)?;
        m.run(&mut module, &nvvm_pipeline(opts.sm, libdevice.as_deref())).map_err(internal)?;
        extract_ptx(&module).map_err(internal)?
    };
    if ptx.contains(".extern .func __nv_") {
        return Err(internal(LowerError::Ptx("the PTX still calls libdevice functions (libdevice was not linked)".into())));
    }
    Ok(Bundle {
        sm: opts.sm,
        producer: format!("ckopt {}", env!("CARGO_PKG_VERSION")),
        ptx,
        kernels,
        op_counts: funcs.iter().map(|f| f.body.iter().filter(|o| o.kind != OpKind::Return).count()).collect(),
        programs,
        trains: Vec::new(),
    })
}

/// Every function of `m` as one bundle.
pub fn compile_module_bundle(m: &Module, opts: &CudaOptions) -> Result<Bundle, Diag> {
    let funcs: Vec<&Func> = m.funcs.iter().collect();
    compile_bundle(&funcs, opts)
}

/// The gpu-dialect MLIR of every function of `m` (`--to=mlir --target=cuda`).
pub fn cuda_module_mlir(m: &Module) -> Result<String, Diag> {
    let funcs: Vec<&Func> = m.funcs.iter().collect();
    let (programs, cache) = programs_of(&funcs)?;
    let mut s = describe_programs(&programs, "//");
    s.push_str(&cuda_kernels_mlir(&cache, &programs)?.0);
    Ok(s)
}

fn describe_programs(programs: &[StepProgram], c: &str) -> String {
    let mut s = String::new();
    for p in programs {
        for line in p.describe(crate::cuda::entry_name).lines() {
            let _ = writeln!(s, "{c} {line}");
        }
    }
    s
}

/// A bundle as text: its kernels' launches and the step programs as `//`
/// comments, then the PTX (still a valid PTX file for ptxas).
pub fn bundle_ptx_text(b: &Bundle) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "// ckopt cuda module for sm_{}: {} kernels", b.sm, b.kernels.len());
    for (i, k) in b.kernels.iter().enumerate() {
        let l: Vec<String> = k.launches.iter().map(|l| format!("{} grid {:?} block {:?}", l.entry, l.grid, l.block)).collect();
        let scratch = if k.scratch_bytes > 0 { format!(", scratch {} bytes", k.scratch_bytes) } else { String::new() };
        let _ = writeln!(s, "// kernel {i}: {}{scratch}: {}", k.what, l.join(", then "));
    }
    s.push_str(&describe_programs(&b.programs, "//"));
    s.push_str(&b.ptx);
    s
}

fn extract_ptx(module: &melior::ir::Module) -> Result<String, LowerError> {
    let mut cur = module.body().first_operation();
    while let Some(op) = cur {
        if op.name().as_string_ref().as_str().ok() == Some("gpu.binary") {
            let objs = op.attribute("objects").map_err(|e| LowerError::Ptx(format!("gpu.binary without objects: {e}")))?;
            let objs = ArrayAttribute::try_from(objs).map_err(|e| LowerError::Ptx(format!("gpu.binary objects: {e}")))?;
            let obj: Attribute = objs.element(0).map_err(|e| LowerError::Ptx(format!("gpu.binary has no object: {e}")))?;
            // SAFETY: the attribute is checked to be a GPU object attribute
            // before its string is read; the string is copied while the
            // module (which owns it) is alive.
            let ptx = unsafe {
                if !mlir_sys::mlirAttributeIsAGPUObjectAttr(obj.to_raw()) {
                    return Err(LowerError::Ptx("gpu.binary object is not a #gpu.object".into()));
                }
                let s = mlir_sys::mlirGPUObjectAttrGetObject(obj.to_raw());
                String::from_utf8_lossy(std::slice::from_raw_parts(s.data as *const u8, s.length)).into_owned()
            };
            return Ok(ptx);
        }
        cur = op.next_in_block();
    }
    Err(LowerError::Ptx("no gpu.binary in the lowered module".into()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testcases::naive_plan;
    use ckopt_ir::{Attrs, Loc, TensorType};

    fn planned(kind: OpKind) -> Func {
        let mut f = Func::new("g", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![4, 300]), false);
        let ops = if kind.is_binary_elementwise() { vec![x, x] } else { vec![x] };
        let y = f.push(kind, &ops, Attrs::new(), None, "y", Loc::unknown()).unwrap();
        f.push_return(&[y], Loc::unknown());
        naive_plan(&mut f);
        f
    }

    #[test]
    fn add_kernel_is_one_loop_entry_with_bare_pointer_params() {
        let f = planned(OpKind::Add);
        let b = compile_bundle(&[&f], &CudaOptions::default()).unwrap();
        assert!(b.ptx.contains(".visible .entry ck_k0("), "{}", b.ptx);
        assert_eq!(b.ptx.matches(".param .u64").count(), 2, "x once (deduplicated) and y");
        assert_eq!(b.kernels[0].launches[0].block, [256, 1, 1]);
        assert_eq!(b.kernels[0].launches[0].grid, [5, 1, 1]);
        assert!(b.kernels[0].what.contains("32-bit"), "{}", b.kernels[0].what);
        let text = bundle_ptx_text(&b);
        assert!(text.contains("// step program of @g"), "{text}");
    }

    #[test]
    fn math_without_libdevice_is_an_error_naming_the_op() {
        let f = planned(OpKind::Log);
        let opts = CudaOptions { libdevice: Some(PathBuf::from("/nonexistent/libdevice.10.bc")), ..Default::default() };
        // An explicit path that is not a file wins over $CKOPT_LIBDEVICE.
        let e = compile_bundle(&[&f], &opts).unwrap_err();
        assert!(e.message.contains("'ck.log' op needs libdevice"), "{}", e.message);
        // exp, tanh, erf and sigmoid are ckopt_ir::math's arithmetic: no libdevice.
        for k in [OpKind::Exp, OpKind::Tanh, OpKind::Erf, OpKind::Sigmoid] {
            let b = compile_bundle(&[&planned(k)], &opts).unwrap_or_else(|e| panic!("{}: {}", k.full_name(), e.message));
            assert!(!b.ptx.contains("__nv_"), "{} calls libdevice", k.full_name());
        }
    }
}
