//! The CPU emulation of the cuda kernels as a `Device` (feature `lower`):
//! the cuda executor, its step programs, the generated kernels and the
//! fallback GEMM run on the host, so tests check the whole cuda path
//! against the interpreter without a GPU (see `ckopt_lower::emu`).
//!
//! Memory is host memory (64-byte aligned, zeroed); `mem_info` counts what
//! is allocated against a nominal 1 TiB; there is no GEMM library (the
//! fallback kernel runs); the timer is wall time.

use super::device::{Device, GemmCall, KArg};
use crate::arena::Arena;
use crate::error::RuntimeError;
use ckopt_kernels::Bundle;
use ckopt_lower::emu::{EmuArg, EmuModule};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

const NOMINAL: u64 = 1 << 40;

pub struct EmuDevice {
    module: EmuModule,
    entries: Vec<String>,
    mem: Mutex<HashMap<u64, Arena>>,
    start: Mutex<Option<Instant>>,
}

impl EmuDevice {
    /// Compiles the gpu-dialect code of `bundle`'s module (`gpu_mlir`, from
    /// `ckopt_lower::cuda_kernels_mlir` of the same kernels) for the host.
    pub fn new(gpu_mlir: &str, bundle: &Bundle) -> Result<EmuDevice, RuntimeError> {
        let module = EmuModule::compile(gpu_mlir)?;
        let mut entries: Vec<String> = bundle.kernels.iter().flat_map(|k| k.launches.iter().map(|l| l.entry.clone())).collect();
        let gemms = [ckopt_ir::DType::F32, ckopt_ir::DType::BF16, ckopt_ir::DType::F16].map(ckopt_kernels::bundle::lib_gemm_entry);
        let libs = [ckopt_kernels::bundle::LIB_IM2COL.to_string(), ckopt_kernels::bundle::LIB_COL2IM.to_string()];
        for e in gemms.iter().chain(&libs) {
            if module.has(e) {
                entries.push(e.clone());
            }
        }
        Ok(EmuDevice { module, entries, mem: Mutex::new(HashMap::new()), start: Mutex::new(None) })
    }
}

fn lock_error() -> RuntimeError {
    RuntimeError::Other("lock".into())
}

fn slice_mut<'a>(p: u64, n: usize) -> &'a mut [u8] {
    // SAFETY: `p` is an address inside an allocation of this device with at
    // least `n` bytes from it (the executor's slots).
    unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) }
}

impl Device for EmuDevice {
    fn describe(&self) -> String {
        "CPU emulation of the cuda kernels".into()
    }
    fn sm(&self) -> u32 {
        90
    }
    fn mem_info(&self) -> Result<(u64, u64), RuntimeError> {
        let used: u64 = self.mem.lock().map_err(|_| lock_error())?.values().map(|a| a.len() as u64).sum();
        Ok((NOMINAL - used, NOMINAL))
    }
    fn alloc(&self, bytes: u64) -> Result<u64, RuntimeError> {
        let mut a = Arena::new(bytes)?;
        let p = a.as_mut_slice().as_mut_ptr() as u64;
        self.mem.lock().map_err(|_| lock_error())?.insert(p, a);
        Ok(p)
    }
    fn free(&self, ptr: u64) {
        if let Ok(mut m) = self.mem.lock() {
            m.remove(&ptr);
        }
    }
    fn htod(&self, dst: u64, src: &[u8]) -> Result<(), RuntimeError> {
        slice_mut(dst, src.len()).copy_from_slice(src);
        Ok(())
    }
    fn dtoh(&self, src: u64, dst: &mut [u8]) -> Result<(), RuntimeError> {
        dst.copy_from_slice(slice_mut(src, dst.len()));
        Ok(())
    }
    fn zero(&self, dst: u64, bytes: u64) -> Result<(), RuntimeError> {
        slice_mut(dst, bytes as usize).fill(0);
        Ok(())
    }
    fn function(&self, entry: &str) -> Result<usize, RuntimeError> {
        self.entries.iter().position(|e| e == entry).ok_or_else(|| RuntimeError::Bundle(format!("kernel {entry} is not in the emulated module")))
    }
    fn launch(&self, f: usize, grid: [u32; 3], block: [u32; 3], args: &[KArg]) -> Result<(), RuntimeError> {
        let entry = self.entries.get(f).ok_or_else(|| RuntimeError::Bundle(format!("no kernel {f}")))?;
        let a: Vec<EmuArg> = args
            .iter()
            .map(|a| match *a {
                KArg::Ptr(p) => EmuArg::Ptr(p),
                KArg::Index(i) => EmuArg::Index(i),
                KArg::I32(i) => EmuArg::I32(i),
                KArg::F32(x) => EmuArg::F32(x),
            })
            .collect();
        if grid[1] != 1 || grid[2] != 1 || block[1] != 1 || block[2] != 1 {
            return Err(RuntimeError::Other("the emulation runs 1-D launches only".into()));
        }
        // SAFETY: pointer arguments are slots of this device's allocations.
        Ok(unsafe { self.module.launch(entry, grid[0], block[0], &a) }?)
    }
    fn gemm(&self, _: &GemmCall) -> Result<bool, RuntimeError> {
        Ok(false)
    }
    fn gemm_library(&self) -> String {
        "fallback GEMM kernel (emulation)".into()
    }
    fn start_timer(&self) -> Result<(), RuntimeError> {
        *self.start.lock().map_err(|_| lock_error())? = Some(Instant::now());
        Ok(())
    }
    fn stop_timer(&self) -> Result<f64, RuntimeError> {
        let s = self.start.lock().map_err(|_| lock_error())?.take().ok_or_else(|| RuntimeError::Other("timer not started".into()))?;
        Ok(s.elapsed().as_secs_f64() * 1e3)
    }
    fn synchronize(&self) -> Result<(), RuntimeError> {
        Ok(())
    }
}
