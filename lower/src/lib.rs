//! ckopt-lower: a planned ck function to upstream MLIR, LLVM IR, native CPU
//! code (JIT) and NVPTX.
//!
//! The only crate that links MLIR/LLVM (melior, mlir-sys). Input: a verified
//! function that memplan has planned (`ck.offset` on every op result,
//! `ck.arena_bytes` on the function). Every value lives in one arena at its
//! offset (arguments are separate buffers); the function becomes a step
//! program (`ckopt_kernels`) whose distinct kernels are compiled once per
//! module: vectorized loops JIT-compiled for the CPU, or `gpu.func` kernels
//! in one PTX module for cuda, both computing every element with the same
//! elemental emitter. Errors are `Diag`s naming the function or the op.
//!
//! Modules: `emit` (per-element code of every op), `vemit` (the elemental
//! emitter of fused kernels), `cpu` (MLIR text, pipeline, JIT), `cuda` (the
//! gpu-dialect code of kernels and the library kernels), `gpu` (one PTX
//! module and the cuda bundle of a module), `emu` (a CPU emulation of the
//! cuda kernels, for tests without a GPU), `mlir` (context, pipelines,
//! diagnostics).

pub mod cpu;
pub mod cuda;
pub mod emu;
pub mod error;
pub mod emit;
pub mod gpu;
pub mod mlir;
pub mod testcases;
pub mod vemit;

#[cfg(test)]
mod tests;

pub use error::LowerError;
pub use cpu::{CpuKernels, compile_kernels, cpu_module_llvm_ir, cpu_module_mlir, kernels_llvm_ir, kernels_mlir, lanes, module_programs};
pub use gpu::{CudaOptions, PtxOptions, bundle_ptx_text, compile_bundle, compile_module_bundle, cuda_kernels_mlir, cuda_module_mlir, programs_of};
pub use ckopt_kernels::{Buf, Layout, Place, is_planned, layout};
