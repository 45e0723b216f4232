//! The cuda runtime: runs cuda bundles (`ckopt_kernels::Bundle`).
//!
//! - `device`: what the executor needs from a device (`Device`).
//! - `exec`: `CudaModule` (a bundle loaded on a device) and `CudaExecutor`
//!   (one program on resident device buffers; `ckopt_interp::StepExec`).
//! - `driver` (feature `cuda`): the CUDA driver through cudarc, dynamically
//!   loaded; `cublas` (feature `cuda`): cuBLAS through libloading.
//! - `emu` (feature `lower`): the CPU emulation of the kernels, for tests.
//!
//! Nothing here links LLVM/MLIR: with only the `cuda` feature this is what
//! `ckopt-exec` runs bundles with.

pub mod device;
pub mod exec;

#[cfg(feature = "cuda")]
pub mod cublas;
#[cfg(feature = "cuda")]
pub mod driver;
#[cfg(feature = "lower")]
pub mod emu;

pub use device::{Device, GemmCall, KArg};
pub use exec::{CudaExecutor, CudaModule};

use ckopt_kernels::Bundle;
use std::sync::Arc;

/// How the cuda runtime runs GEMMs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// TF32 tensor cores in cuBLAS (`--tf32`); fp32 otherwise.
    pub tf32: bool,
    /// Use cuBLAS when it loads (`CKOPT_NO_CUBLAS=1` turns it off: the
    /// fallback kernel runs every GEMM).
    pub cublas: bool,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { tf32: false, cublas: std::env::var_os("CKOPT_NO_CUBLAS").is_none_or(|v| v == "0") }
    }
}

/// Whether a CUDA driver and a device are usable: `Ok(device name)` or the
/// reason why not. Never panics.
pub fn cuda_status() -> Result<String, String> {
    #[cfg(feature = "cuda")]
    {
        driver::cuda_status()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err("this build has no CUDA driver support (ckopt-runtime without its `cuda` feature)".into())
    }
}

/// Opens device 0 (see `driver::CudaDevice::open`).
#[cfg(feature = "cuda")]
pub fn open_device() -> Result<driver::CudaDevice, String> {
    driver::CudaDevice::open()
}

/// Loads `bundle` on the opened device: its compute capability must be
/// the device's; the PTX is loaded (a failure carries the JIT log), every
/// kernel entry resolved, cuBLAS loaded unless `opts.cublas` is off.
#[cfg(feature = "cuda")]
pub fn load_bundle(mut dev: driver::CudaDevice, bundle: Bundle, opts: &RunOptions) -> Result<Arc<CudaModule>, String> {
    use device::Device;
    if bundle.sm != dev.sm() {
        return Err(format!(
            "the bundle is compiled for sm_{} but the device is {}; re-create it with `ckopt-translate --to=cuda-bundle --sm={}`",
            bundle.sm,
            dev.describe(),
            dev.sm()
        ));
    }
    dev.load_ptx(&bundle.ptx)?;
    let mut entries: Vec<String> = bundle.kernels.iter().flat_map(|k| k.launches.iter().map(|l| l.entry.clone())).collect();
    entries.extend([ckopt_kernels::bundle::LIB_GEMM, ckopt_kernels::bundle::LIB_IM2COL, ckopt_kernels::bundle::LIB_COL2IM].map(String::from));
    dev.resolve(&entries)?;
    if opts.cublas {
        dev.load_blas(opts.tf32);
    }
    CudaModule::new(Arc::new(dev), bundle)
}
