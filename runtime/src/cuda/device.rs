//! What the cuda executor needs from a device: memory, copies, the loaded
//! kernels, launches, a GEMM library, and a timer around a step.
//!
//! Two implementations: the CUDA driver (`driver::CudaDevice`, feature
//! `cuda`) and the CPU emulation of the kernels (`emu::EmuDevice`, feature
//! `lower`, for tests without a GPU). Device pointers are `u64`. Errors are
//! `RuntimeError`s; the executor adds which op or buffer they concern.

use crate::error::RuntimeError;

/// A kernel argument as the launch passes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KArg {
    /// A device pointer.
    Ptr(u64),
    /// A 64-bit integer (`index` parameters of the library kernels).
    Index(u64),
    I32(i32),
    F32(f32),
}

/// A row-major strided-batched GEMM on device pointers:
/// `C[b] = op(A[b]) · op(B[b]) + beta · C[b]` for b in 0..batch
/// (see `ckopt_kernels::Gemm` for the layouts); A, B and C are of element
/// type `dtype` (f32, bf16 or f16), the products summed in f32.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmCall {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub batch: u64,
    pub stride_a: u64,
    pub stride_b: u64,
    pub stride_c: u64,
    pub beta: f32,
    pub dtype: ckopt_ir::DType,
}

pub trait Device: Send + Sync {
    /// `NVIDIA H200 (sm_90, driver 13.0)`, for reports.
    fn describe(&self) -> String;
    /// Compute capability (`90`).
    fn sm(&self) -> u32;
    /// (free, total) device memory in bytes.
    fn mem_info(&self) -> Result<(u64, u64), RuntimeError>;
    fn alloc(&self, bytes: u64) -> Result<u64, RuntimeError>;
    fn free(&self, ptr: u64);
    fn htod(&self, dst: u64, src: &[u8]) -> Result<(), RuntimeError>;
    fn dtoh(&self, src: u64, dst: &mut [u8]) -> Result<(), RuntimeError>;
    fn zero(&self, dst: u64, bytes: u64) -> Result<(), RuntimeError>;
    /// The handle of a kernel entry of the loaded module.
    fn function(&self, entry: &str) -> Result<usize, RuntimeError>;
    /// Launches a loaded kernel (1-D grid and block).
    fn launch(&self, f: usize, grid: [u32; 3], block: [u32; 3], args: &[KArg]) -> Result<(), RuntimeError>;
    /// Runs the GEMM with the device's library; `Ok(false)` when there is
    /// none (the executor then launches the fallback kernel).
    fn gemm(&self, g: &GemmCall) -> Result<bool, RuntimeError>;
    /// Which GEMM library runs the GEMMs (or why the fallback kernel does).
    fn gemm_library(&self) -> String;
    /// Why the GEMM library was wanted but could not be loaded (the tools
    /// print it as a note; `None` when it loaded or was turned off).
    fn gemm_load_error(&self) -> Option<String> {
        None
    }
    /// Marks the start of a step (a CUDA event).
    fn start_timer(&self) -> Result<(), RuntimeError>;
    /// Marks its end, waits for it, and returns the milliseconds between the marks.
    fn stop_timer(&self) -> Result<f64, RuntimeError>;
    /// Waits for all launched work.
    fn synchronize(&self) -> Result<(), RuntimeError>;
}
