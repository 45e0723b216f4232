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
//!
//! Depends only on `ckopt-ir` (no LLVM, no CUDA): the lowering (`lower`)
//! generates code for the kernels, the runtimes run the programs.

pub mod kernel;
pub mod layout;
pub mod program;

pub use kernel::{Kernel, KernelCache, KernelKind};
pub use layout::{Buf, Layout, Place, is_planned, layout};
pub use program::{ArgInfo, BufId, Conv, ConvKind, Gemm, OpRef, ResultInfo, Slot, Step, StepProgram, build_program};
