//! NVPTX backend (placeholder, filled next).
pub struct PtxOptions;
pub struct PtxProgram;
pub struct Kernel;
pub struct Arg;
pub fn compile_ptx() {}
pub fn gpu_mlir() {}
