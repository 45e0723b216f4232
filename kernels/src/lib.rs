//! ckopt-kernels: what the backends execute, independent of how it is
//! compiled.
//!
//! - `layout`: where every value of a planned function lives (arena offset
//!   or argument buffer).
//! - `kernel`: a kernel signature (a fusion group or one op cut out as a
//!   small ck function, with its iteration kind and in-place aliasing) and
//!   the per-module `KernelCache` that makes each distinct kernel compile once.
//! - `program`: the step program (kernel calls with buffer slots, GEMM and
//!   convolution library calls) that the cpu and cuda runtimes both run.
//! - `bundle`: a compiled cuda module in one file (PTX, launches, step
//!   programs, training signatures), written by `ckopt-translate
//!   --to=cuda-bundle` and read by the LLVM-free `ckopt-exec`.
//!
//! Depends only on `ckopt-ir` (no LLVM, no CUDA): the lowering (`lower`)
//! generates code for the kernels, the runtimes run the programs.

pub mod bundle;
pub mod kernel;
pub mod layout;
pub mod program;

pub use bundle::{Bundle, BundleError, CudaKernel, Launch, TrainSig};
pub use kernel::{Kernel, KernelCache, KernelKind};
pub use layout::{Buf, Layout, Place, check_f32_only, is_planned, layout};
pub use program::{ArgInfo, BufId, Conv, ConvKind, Gemm, OpRef, ResultInfo, Slot, Step, StepProgram, build_program};
