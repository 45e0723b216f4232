//! The CUDA executor: PTX and launch table from ckopt-lower, run through
//! cudarc (driver API, libcuda opened at run time).
//!
//! One device arena of exactly `ck.arena_bytes` plus one buffer per
//! argument; each step copies the inputs in, launches the kernels in
//! schedule order on one stream (CUDA events around them give the step
//! time), and copies the results back. Device memory is measured with the
//! driver: free memory before the allocations minus free memory after the
//! step.
//!
//! Never panics for a missing driver or GPU: `cuda_status` checks
//! `is_culib_present()` before any other cudarc call, and every driver error
//! becomes a `Diag` (a launch failure names the kernel and its ck op).

use crate::report::Report;
use ckopt_interp::{Tensor, check_inputs};
use ckopt_ir::{Diag, Func};
use ckopt_lower::{Buf, PtxOptions, PtxProgram, compile_ptx};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use std::time::Instant;

/// Whether a CUDA driver and a device are usable: `Ok(device name)` or the
/// reason why not.
pub fn cuda_status() -> Result<String, String> {
    // SAFETY: only probes for the shared library; no CUDA call is made.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err("no CUDA driver: libcuda.so could not be loaded (install the NVIDIA driver or add its lib dir to LD_LIBRARY_PATH)".into());
    }
    let ctx = CudaContext::new(0).map_err(|e| format!("no usable CUDA device: {e}"))?;
    ctx.name().map_err(|e| format!("CUDA device query failed: {e}"))
}

pub struct CudaExecutor {
    func: Func,
    prog: PtxProgram,
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    _module: Arc<CudaModule>,
    kernels: Vec<CudaFunction>,
    arena: Option<CudaSlice<u8>>,
    inputs: Vec<Option<CudaSlice<f32>>>,
    free_before: usize,
    report: Report,
}

fn err(f: &Func, m: String) -> Diag {
    Diag::error(f.loc.clone(), m)
}

impl CudaExecutor {
    /// Compiles `func` to PTX for device 0's compute capability (`opts.sm`
    /// only when the device does not report one), loads it and allocates the
    /// arena and argument buffers.
    pub fn new(func: &Func, opts: &PtxOptions) -> Result<CudaExecutor, Diag> {
        // The driver first: on a machine without one that is the error to report.
        let device = cuda_status().map_err(|m| err(func, format!("cuda backend: {m}")))?;
        let ctx = CudaContext::new(0).map_err(|e| err(func, format!("cuda backend: creating a context failed: {e}")))?;
        // PTX for the device's own compute capability (PTX for a newer sm
        // does not load on an older device).
        use cudarc::driver::sys::CUdevice_attribute::{
            CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR as MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR as MINOR,
        };
        let sm = match (ctx.attribute(MAJOR), ctx.attribute(MINOR)) {
            (Ok(a), Ok(b)) if a > 0 => (a * 10 + b) as u32,
            _ => opts.sm,
        };
        let opts = PtxOptions { sm, ..opts.clone() };
        let t = Instant::now();
        let prog = compile_ptx(func, &opts)?;
        let stream = ctx.default_stream();
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(prog.ptx.clone()))
            .map_err(|e| err(func, format!("cuda backend: loading the PTX of @{} failed: {e}", func.name)))?;
        let mut kernels = Vec::with_capacity(prog.kernels.len());
        for k in &prog.kernels {
            kernels.push(module.load_function(&k.name).map_err(|e| {
                err(func, format!("cuda backend: kernel {} ({} at {}) not found in the PTX: {e}", k.name, k.op, k.loc))
            })?);
        }
        let compile_ms = t.elapsed().as_secs_f64() * 1e3;
        stream.synchronize().map_err(|e| err(func, format!("cuda backend: {e}")))?;
        let (free_before, _) = ctx.mem_get_info().map_err(|e| err(func, format!("cuda backend: cuMemGetInfo: {e}")))?;
        let l = &prog.layout;
        let arena = if l.arena_bytes > 0 {
            Some(stream.alloc_zeros::<u8>(l.arena_bytes as usize).map_err(|e| {
                err(func, format!("cuda backend: allocating the arena of {} bytes failed: {e}", l.arena_bytes))
            })?)
        } else {
            None
        };
        let mut inputs = Vec::with_capacity(l.inputs.len());
        for (i, t) in l.inputs.iter().enumerate() {
            let n = t.elems() as usize;
            inputs.push(if n > 0 {
                Some(stream.alloc_zeros::<f32>(n).map_err(|e| err(func, format!("cuda backend: allocating argument {i}: {e}")))?)
            } else {
                None
            });
        }
        let report = Report {
            backend: "cuda".into(),
            function: func.name.clone(),
            arena_bytes: l.arena_bytes,
            arena_allocated_bytes: arena.as_ref().map(|a| a.len() as u64).unwrap_or(0),
            input_bytes: l.inputs.iter().map(|t| t.bytes()).sum(),
            compile_ms,
            device: Some(device),
            kernels: Some(prog.kernels.len()),
            ..Default::default()
        };
        Ok(CudaExecutor { func: func.clone(), prog, ctx, stream, _module: module, kernels, arena, inputs, free_before, report })
    }

    fn ptr_of(&self, buf: Buf, offset: u64) -> u64 {
        let base = match buf {
            Buf::Arena => self.arena.as_ref().map(|a| a.device_ptr(&self.stream).0),
            Buf::Input(i) => self.inputs.get(i).and_then(|s| s.as_ref()).map(|s| s.device_ptr(&self.stream).0),
        };
        base.unwrap_or(0) + offset
    }

    /// Runs one step.
    pub fn step(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Diag> {
        check_inputs(&self.func, inputs)?;
        let f = self.func.clone();
        for (i, t) in inputs.iter().enumerate() {
            if let Some(Some(d)) = self.inputs.get_mut(i) {
                self.stream.memcpy_htod(&t.data, d).map_err(|e| err(&f, format!("cuda backend: copying argument {i}: {e}")))?;
            }
        }
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.ctx.new_event(timing).map_err(|e| err(&f, format!("cuda backend: {e}")))?;
        let end = self.ctx.new_event(timing).map_err(|e| err(&f, format!("cuda backend: {e}")))?;
        start.record(&self.stream).map_err(|e| err(&f, format!("cuda backend: {e}")))?;
        for (k, kf) in self.prog.kernels.iter().zip(&self.kernels) {
            let ptrs: Vec<u64> = k.args.iter().map(|a| self.ptr_of(a.buf, a.offset)).collect();
            let cfg = LaunchConfig { grid_dim: (k.grid[0], k.grid[1], k.grid[2]), block_dim: (k.block[0], k.block[1], k.block[2]), shared_mem_bytes: 0 };
            let mut b = self.stream.launch_builder(kf);
            for p in &ptrs {
                b.arg(p);
            }
            // SAFETY: the kernel was compiled with one pointer parameter per
            // entry of `k.args`, each pointing inside a live allocation of at
            // least `bytes` bytes (layout checked by ckopt-lower).
            unsafe { b.launch(cfg) }
                .map_err(|e| err(&f, format!("cuda backend: launching kernel {} ({} at {}) failed: {e}", k.name, k.op, k.loc)))?;
        }
        end.record(&self.stream).map_err(|e| err(&f, format!("cuda backend: {e}")))?;
        self.stream.synchronize().map_err(|e| err(&f, format!("cuda backend: a kernel of @{} failed: {e}", f.name)))?;
        let ms = start.elapsed_ms(&end).map_err(|e| err(&f, format!("cuda backend: {e}")))?;
        let (free_after, _) = self.ctx.mem_get_info().map_err(|e| err(&f, format!("cuda backend: cuMemGetInfo: {e}")))?;
        self.report.step_ms = ms as f64;
        self.report.steps += 1;
        self.report.device_memory_bytes = Some(self.free_before.saturating_sub(free_after) as u64);
        let mut outs = Vec::with_capacity(self.prog.layout.outputs.len());
        for (ty, p) in &self.prog.layout.outputs {
            let shape: Vec<usize> = ty.shape.iter().map(|&d| d as usize).collect();
            let n = ty.elems() as usize;
            let data = match p.buf {
                Buf::Input(i) => inputs[i].data.clone(),
                Buf::Arena if n == 0 => Vec::new(),
                Buf::Arena => {
                    let a = self.arena.as_ref().ok_or_else(|| err(&f, "cuda backend: no arena".into()))?;
                    let o = p.offset as usize;
                    let bytes = self
                        .stream
                        .clone_dtoh(&a.slice(o..o + 4 * n))
                        .map_err(|e| err(&f, format!("cuda backend: copying a result back: {e}")))?;
                    bytes.chunks_exact(4).map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]])).collect()
                }
            };
            outs.push(Tensor { shape, data });
        }
        Ok(outs)
    }

    pub fn report(&self) -> Report {
        self.report.clone()
    }

    /// The compiled program (PTX and launch table).
    pub fn program(&self) -> &PtxProgram {
        &self.prog
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without a driver this is an error value; with one, a
    /// device name. Either way no panic.
    #[test]
    fn cuda_status_is_a_value_never_a_panic() {
        match cuda_status() {
            Ok(name) => assert!(!name.is_empty()),
            Err(m) => assert!(m.contains("CUDA"), "{m}"),
        }
    }
}
