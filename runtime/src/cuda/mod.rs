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

use crate::error::RuntimeError;
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
pub fn cuda_status() -> Result<String, RuntimeError> {
    #[cfg(feature = "cuda")]
    {
        driver::cuda_status()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err(RuntimeError::NoDevice("this build has no CUDA driver support (ckopt-runtime without its `cuda` feature)".into()))
    }
}

/// Opens device 0 (see `driver::CudaDevice::open`).
#[cfg(feature = "cuda")]
pub fn open_device() -> Result<driver::CudaDevice, RuntimeError> {
    driver::CudaDevice::open()
}

/// The error when a bundle's compute capability is not the device's.
pub fn check_sm(bundle_sm: u32, device_sm: u32, device: &str) -> Result<(), RuntimeError> {
    if bundle_sm == device_sm {
        return Ok(());
    }
    Err(RuntimeError::SmMismatch { bundle_sm, device_sm, device: device.to_string() })
}

/// Loads `bundle` on the opened device: its compute capability must be
/// the device's; the PTX is loaded (a failure carries the JIT log), every
/// kernel entry resolved, cuBLAS loaded unless `opts.cublas` is off.
#[cfg(feature = "cuda")]
pub fn load_bundle(mut dev: driver::CudaDevice, bundle: Bundle, opts: &RunOptions) -> Result<Arc<CudaModule>, RuntimeError> {
    use device::Device;
    check_sm(bundle.sm, dev.sm(), &dev.describe())?;
    dev.load_ptx(&bundle.ptx)?;
    let mut entries: Vec<String> = bundle.kernels.iter().flat_map(|k| k.launches.iter().map(|l| l.entry.clone())).collect();
    entries.extend([ckopt_kernels::bundle::LIB_GEMM, ckopt_kernels::bundle::LIB_IM2COL, ckopt_kernels::bundle::LIB_COL2IM].map(String::from));
    dev.resolve(&entries)?;
    if opts.cublas {
        dev.load_blas(opts.tf32);
    }
    CudaModule::new(Arc::new(dev), bundle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_for_another_sm_is_refused_with_the_fix() {
        assert!(check_sm(90, 90, "x").is_ok());
        let e = check_sm(90, 80, "NVIDIA A100 (sm_80, driver 12.4)").unwrap_err().to_string();
        assert!(e.contains("compiled for sm_90 but the device is NVIDIA A100 (sm_80"), "{e}");
        assert!(e.contains("--sm=80"), "{e}");
        assert_eq!(
            e,
            "the bundle is compiled for sm_90 but the device is NVIDIA A100 (sm_80, driver 12.4); re-create it with \
             `ckopt-translate --to=cuda-bundle --sm=80`"
        );
    }
}
