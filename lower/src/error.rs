//! The errors of the MLIR toolchain under the lowering (parsing, pass
//! pipelines, translation, PTX extraction), of calling JIT-compiled cpu
//! kernels and of the cuda emulation. Lowering errors about an op or a
//! function are `Diag`s (located); these have no location and end up in one
//! (`lowering @f to PTX failed: ...`) or in a runtime error. Each displays
//! as the message the lowering printed when its errors were strings.

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LowerError {
    /// `diags`: MLIR's diagnostics, one per line.
    #[error("MLIR could not parse the lowered module: {diags}")]
    Parse { diags: String },
    #[error("bad pass pipeline {pipeline}: {error} {diags}")]
    BadPipeline { pipeline: String, error: String, diags: String },
    #[error("MLIR pass pipeline failed: {diags}")]
    PipelineFailed { diags: String },
    #[error("lowered module does not verify: {diags}")]
    Verify { diags: String },
    #[error("translation to LLVM IR failed: {diags}")]
    Translate { diags: String },
    /// The PTX of a lowered gpu module could not be read: `why`.
    #[error("{0}")]
    Ptx(String),
    #[error("no kernel {0}")]
    NoKernel(usize),
    #[error("kernel {kernel} takes {takes} pointers, {given} given")]
    Arity { kernel: usize, takes: usize, given: usize },
    #[error("kernel {kernel} takes {takes} pointers; at most {max} are supported")]
    TooManyPointers { kernel: usize, takes: usize, max: usize },
    /// Compiling a gpu module for the cpu emulation failed.
    #[error("emulation: {0}")]
    Emulation(Box<LowerError>),
    #[error("emulation: the JIT has no function {0}")]
    EmulationNoFunction(String),
    #[error("emulation: no kernel {0}")]
    EmulationNoKernel(String),
    #[error("unexpected end of the gpu module")]
    UnexpectedEnd,
    #[error("gpu.func without parameters")]
    NoParameters,
    #[error("unterminated workgroup clause")]
    UnterminatedWorkgroup,
    #[error("bad workgroup buffer in @{0}")]
    WorkgroupBuffer(String),
}
