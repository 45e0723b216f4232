//! ckopt-lower: a planned ck function to upstream MLIR, LLVM IR, native CPU
//! code (JIT) and NVPTX.
//!
//! The only crate that links MLIR/LLVM (melior, mlir-sys). Input: a verified
//! function that memplan has planned (`ck.offset` on every op result,
//! `ck.arena_bytes` on the function). Every value is a view of one arena at
//! its offset (arguments are separate buffers); each op becomes one
//! element-parallel loop (`linalg.generic` on CPU, a `gpu.func` kernel for
//! NVPTX) whose body is shared (`emit`). Errors are `Diag`s naming the
//! function or the op.
//!
//! Modules: `plan` (layout and checks), `emit` (per-element code of every
//! op), `cpu` (MLIR text, pipeline, JIT), `gpu` (kernels, PTX, launch table),
//! `mlir` (context, pipelines, diagnostics).

pub mod cpu;
pub mod emit;
pub mod gpu;
pub mod mlir;
pub mod testcases;
pub mod vemit;

#[cfg(test)]
mod tests;

pub use cpu::{CpuKernels, compile_kernels, cpu_module_llvm_ir, cpu_module_mlir, kernels_llvm_ir, kernels_mlir, lanes, module_programs};
pub use gpu::{Arg, Kernel, PtxOptions, PtxProgram, annotated, compile_ptx, compile_ptx_funcs, gpu_mlir, gpu_mlir_module, launch_tables};
pub use ckopt_kernels::{Buf, Layout, Place, is_planned, layout};
