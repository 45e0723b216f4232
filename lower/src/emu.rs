//! A CPU emulation of the cuda kernels: the test harness that runs the
//! generated kernels without a GPU.
//!
//! The gpu-dialect module (`gpu::cuda_kernels_mlir`) is rewritten into
//! plain functions and JIT-compiled for the host: each `gpu.func` becomes a
//! `func.func` taking its parameters, then its shared-memory buffers, then
//! the block id, thread id, block size and grid size (x); `gpu.barrier`
//! becomes a call to `ckemu_barrier`. A launch runs every block of the grid
//! in order; a kernel with barriers runs its block's threads as real OS
//! threads meeting at a `std::sync::Barrier` (so shared-memory trees behave
//! as on a GPU), a kernel without barriers runs its threads one after the
//! other. What this checks: the kernels' index arithmetic, reductions,
//! chunking, tiling and library kernels against the interpreter. What it
//! does not: the NVVM lowering and PTX (ptxas checks those).
//!
//! Pointers are host addresses (the emulated device memory is host memory).

use crate::cpu::CPU_PIPELINE;
use crate::error::LowerError;
use crate::mlir::Mlir;
use melior::ExecutionEngine;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, Barrier};

/// `%r = llvm.call_intrinsic "llvm.nvvm.sqrt.rn.f"(%x) : (f32) -> f32` (the
/// cuda kernels' correctly rounded sqrt) as the host's `math.sqrt`, the
/// same correctly rounded operation.
fn host_sqrt(line: &str) -> String {
    let call = format!("llvm.call_intrinsic \"{}\"(", crate::emit::elementwise::NVVM_SQRT_RN);
    match line.split_once(&call).and_then(|(head, rest)| rest.strip_suffix(") : (f32) -> f32").map(|x| (head, x))) {
        Some((head, x)) => format!("{head}math.sqrt {x} : f32"),
        None => line.to_string(),
    }
}

/// A kernel argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EmuArg {
    Ptr(u64),
    Index(u64),
    I32(i32),
    F32(f32),
}

thread_local! {
    static BLOCK_BARRIER: RefCell<Option<Arc<Barrier>>> = const { RefCell::new(None) };
}

extern "C" fn ckemu_barrier() {
    BLOCK_BARRIER.with(|b| {
        if let Some(b) = b.borrow().as_ref() {
            b.wait();
        }
    });
}

struct Entry {
    /// Floats of each shared-memory buffer.
    shared: Vec<u64>,
    barriers: bool,
    /// The JIT's packed wrapper `_mlir_NAME(void **args)`.
    packed: usize,
}

/// The JIT-compiled emulation of one gpu-dialect module.
pub struct EmuModule {
    engine: ExecutionEngine,
    _mlir: Mlir,
    entries: HashMap<String, Entry>,
}

// SAFETY: the JIT code is immutable after compilation; launches only call it.
unsafe impl Send for EmuModule {}
unsafe impl Sync for EmuModule {}

/// Rewrites the gpu-dialect module into host functions (see the module doc).
fn host_text(gpu: &str) -> Result<(String, HashMap<String, Entry>), LowerError> {
    let mut out = String::from("module {\n  func.func private @ckemu_barrier()\n");
    let mut entries = HashMap::new();
    let mut cur: Option<String> = None;
    for line in gpu.lines() {
        let t = line.trim_start();
        if t.starts_with("module attributes {gpu.container_module}") || t.starts_with("gpu.module @") {
            continue;
        }
        if let Some(rest) = t.strip_prefix("gpu.func @") {
            let name = rest.split('(').next().unwrap_or_default().to_string();
            let open = rest.find('(').ok_or(LowerError::NoParameters)?;
            let close = rest.find(')').ok_or(LowerError::NoParameters)?;
            let params = &rest[open + 1..close];
            let mut shared = Vec::new();
            let mut extra = Vec::new();
            if let Some(w) = rest.find(" workgroup(") {
                let body = &rest[w + " workgroup(".len()..];
                let end = body.find(") kernel").ok_or(LowerError::UnterminatedWorkgroup)?;
                for part in body[..end].split("%").skip(1) {
                    let nm = part.split_whitespace().next().unwrap_or_default();
                    let n: u64 = part
                        .split("memref<")
                        .nth(1)
                        .and_then(|x| x.split('x').next())
                        .and_then(|x| x.parse().ok())
                        .ok_or_else(|| LowerError::WorkgroupBuffer(name.clone()))?;
                    shared.push(n);
                    extra.push(format!("%{nm}: memref<{n}xf32>"));
                }
            }
            extra.extend(["%ck_bid: index", "%ck_tid: index", "%ck_bdim: index", "%ck_gdim: index"].map(String::from));
            let all = if params.is_empty() { extra.join(", ") } else { format!("{params}, {}", extra.join(", ")) };
            out.push_str(&format!("  func.func @{name}({all}) {{\n"));
            out.push_str("    %ck_zero = arith.constant 0 : index\n");
            entries.insert(name.clone(), Entry { shared, barriers: false, packed: 0 });
            cur = Some(name);
            continue;
        }
        let mut l = line.replace(", #gpu.address_space<workgroup>", "");
        for (what, var) in [("block_id", "bid"), ("thread_id", "tid"), ("block_dim", "bdim"), ("grid_dim", "gdim")] {
            l = l.replace(&format!("gpu.{what} x"), &format!("arith.addi %ck_{var}, %ck_zero : index"));
        }
        if l.trim() == "gpu.barrier" {
            l = l.replace("gpu.barrier", "func.call @ckemu_barrier() : () -> ()");
            if let Some(e) = cur.as_ref().and_then(|c| entries.get_mut(c)) {
                e.barriers = true;
            }
        }
        l = l.replace("gpu.return", "return");
        l = host_sqrt(&l);
        out.push_str(&l);
        out.push('\n');
    }
    // The two wrappers' closing braces became one too many: drop the last "}".
    let trimmed = out.trim_end();
    let out = match trimmed.strip_suffix('}') {
        Some(s) => format!("{s}\n"),
        None => return Err(LowerError::UnexpectedEnd),
    };
    Ok((out, entries))
}

impl EmuModule {
    /// Compiles the gpu-dialect module for the host.
    pub fn compile(gpu_mlir: &str) -> Result<EmuModule, LowerError> {
        let (text, entries) = host_text(gpu_mlir)?;
        let m = Mlir::new();
        let engine = {
            let emulation = |e: LowerError| LowerError::Emulation(Box::new(e));
            let mut module = m.parse(&text).map_err(emulation)?;
            m.run(&mut module, CPU_PIPELINE).map_err(emulation)?;
            ExecutionEngine::new(&module, 1, &[], false, false)
        };
        // SAFETY: registers a plain extern "C" function for the JIT's calls.
        unsafe { engine.register_symbol("ckemu_barrier", ckemu_barrier as *mut ()) };
        let mut entries = entries;
        for (name, e) in entries.iter_mut() {
            // The ExecutionEngine wraps every function as `_mlir_NAME(void **args)`.
            let p = engine.lookup(&format!("_mlir_{name}"));
            if p.is_null() {
                return Err(LowerError::EmulationNoFunction(name.clone()));
            }
            e.packed = p as usize;
        }
        Ok(EmuModule { engine, _mlir: m, entries })
    }

    /// Whether the module has kernel `entry`.
    pub fn has(&self, entry: &str) -> bool {
        let _ = &self.engine;
        self.entries.contains_key(entry)
    }

    /// Runs `entry` over a `grid` x `block` launch (1-D) with `args`.
    ///
    /// # Safety
    /// Pointer arguments must point to host buffers as large as the kernel
    /// reads and writes.
    pub unsafe fn launch(&self, entry: &str, grid: u32, block: u32, args: &[EmuArg]) -> Result<(), LowerError> {
        let e = self.entries.get(entry).ok_or_else(|| LowerError::EmulationNoKernel(entry.to_string()))?;
        let mut shared: Vec<Vec<f32>> = e.shared.iter().map(|&n| vec![0.0f32; n as usize]).collect();
        let shared_ptrs: Vec<u64> = shared.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
        let packed = e.packed;
        // One thread's call; values are copied into the packed argument array.
        let call = |bid: u64, tid: u64| -> Result<(), LowerError> {
            #[derive(Clone, Copy)]
            #[repr(C)]
            union Slot {
                u: u64,
                i: i32,
                f: f32,
            }
            let mut vals: Vec<Slot> = args
                .iter()
                .map(|a| match *a {
                    EmuArg::Ptr(p) | EmuArg::Index(p) => Slot { u: p },
                    EmuArg::I32(i) => Slot { i },
                    EmuArg::F32(f) => Slot { f },
                })
                .collect();
            vals.extend(shared_ptrs.iter().map(|&p| Slot { u: p }));
            vals.extend([bid, tid, block as u64, grid as u64].map(|u| Slot { u }));
            let mut ptrs: Vec<*mut ()> = vals.iter_mut().map(|v| v as *mut Slot as *mut ()).collect();
            // SAFETY: `packed` is the JIT's `void _mlir_NAME(void **)`, which
            // reads one value per parameter from these pointers; the caller
            // guarantees the buffers.
            unsafe {
                let f: extern "C" fn(*mut *mut ()) = std::mem::transmute(packed);
                f(ptrs.as_mut_ptr());
            }
            Ok(())
        };
        if !e.barriers {
            for b in 0..grid as u64 {
                for t in 0..block as u64 {
                    call(b, t)?;
                }
            }
            return Ok(());
        }
        let barrier = Arc::new(Barrier::new(block as usize));
        let errs: std::sync::Mutex<Vec<LowerError>> = std::sync::Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for t in 0..block as u64 {
                let barrier = barrier.clone();
                let call = &call;
                let errs = &errs;
                s.spawn(move || {
                    BLOCK_BARRIER.with(|bb| *bb.borrow_mut() = Some(barrier.clone()));
                    for b in 0..grid as u64 {
                        if let Err(e) = call(b, t)
                            && let Ok(mut v) = errs.lock()
                        {
                            v.push(e);
                        }
                        // The next block starts when every thread is done with this one.
                        barrier.wait();
                    }
                    BLOCK_BARRIER.with(|bb| *bb.borrow_mut() = None);
                });
            }
        });
        drop(shared);
        match errs.into_inner().unwrap_or_default().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

