//! ckopt-runtime: runs planned ck functions and cuda bundles, and reports
//! what it measured.
//!
//! - `cpu` (feature `lower`): the cpu backend, the step program with
//!   kernels JIT-compiled by ckopt-lower, in one host arena of exactly
//!   `ck.arena_bytes`.
//! - `cuda`: the cuda backend, the step programs of a cuda bundle
//!   (`ckopt_kernels::Bundle`) on the device through the CUDA driver and
//!   cuBLAS (feature `cuda`: cudarc and libloading, both dynamic, so it
//!   builds and runs without CUDA; a machine without a driver or GPU gets
//!   an error value, never a panic), in one device arena of exactly
//!   `ck.arena_bytes`. With the `lower` feature a ck function is compiled
//!   into a bundle in memory first (`ckopt-run --backend cuda`); without
//!   it (`ckopt-exec`) bundles come from files and nothing links LLVM.
//!
//! Inputs and outputs are `ckopt_interp::Tensor`s so results compare
//! directly with the interpreter. Features: `lower` and `cuda` (both by
//! default).

pub mod arena;
#[cfg(feature = "lower")]
pub mod cpu;
pub mod cuda;
pub mod error;
#[cfg(feature = "lower")]
pub mod lowp;
pub mod report;

#[cfg(feature = "lower")]
pub use cpu::{CpuExecutor, CpuModule};
pub use cuda::{CudaExecutor, CudaModule, RunOptions, cuda_status};
pub use error::RuntimeError;
pub use report::Report;

use ckopt_interp::Tensor;

/// A backend that runs lowered code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Cpu,
    Cuda,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        }
    }
}

/// A compiled function ready to run steps on one backend.
pub enum Executor {
    #[cfg(feature = "lower")]
    Cpu(Box<CpuExecutor>),
    Cuda(Box<CudaExecutor>),
}

#[cfg(feature = "lower")]
mod compile {
    use super::*;
    use ckopt_ir::{Diag, Func};
    use ckopt_lower::CudaOptions;
    use std::sync::Arc;

    fn err(f: &Func, m: String) -> Diag {
        Diag::error(f.loc.clone(), m)
    }

    impl Executor {
        /// Compiles a planned function for `backend`. cuda: the driver is
        /// opened first (on a machine without one that is the error to
        /// report), then the function is compiled into a bundle for the
        /// device's own compute capability (`opts.sm` is ignored) and loaded.
        pub fn new(func: &Func, backend: Backend, opts: &CudaOptions) -> Result<Executor, Diag> {
            match backend {
                Backend::Cpu => Ok(Executor::Cpu(Box::new(CpuExecutor::new(func)?))),
                Backend::Cuda => new_cuda(func, opts),
            }
        }
    }

    #[cfg(feature = "cuda")]
    fn new_cuda(func: &Func, opts: &CudaOptions) -> Result<Executor, Diag> {
        use cuda::device::Device;
        let dev = cuda::open_device().map_err(|m| err(func, format!("cuda backend: {m}")))?;
        let t = std::time::Instant::now();
        let bundle = ckopt_lower::compile_bundle(&[func], &CudaOptions { sm: dev.sm(), ..opts.clone() })?;
        let compile_ms = t.elapsed().as_secs_f64() * 1e3;
        let run = RunOptions { tf32: opts.tf32, ..Default::default() };
        let module = cuda::load_bundle(dev, bundle, &run).map_err(|m| err(func, format!("cuda backend: {m}")))?;
        if let Some(e) = module.dev.gemm_load_error() {
            eprintln!("note: cuda backend: {e}; GEMMs run on the fallback kernel ck_lib_gemm");
        }
        let mut e = CudaExecutor::new(module, &func.name).map_err(|m| err(func, format!("cuda backend: {m}")))?;
        e.set_compile_ms(compile_ms);
        Ok(Executor::Cuda(Box::new(e)))
    }

    #[cfg(not(feature = "cuda"))]
    fn new_cuda(func: &Func, _: &CudaOptions) -> Result<Executor, Diag> {
        Err(err(func, format!("cuda backend: {}", cuda_status().err().map(|e| e.to_string()).unwrap_or_default())))
    }

    /// The functions compiled for the CPU emulation of the cuda kernels
    /// (tests without a GPU): the same programs and kernels as a bundle,
    /// the kernels JIT-compiled for the host (`cuda::emu`).
    pub fn emulated_module(funcs: &[&Func]) -> Result<Arc<CudaModule>, Diag> {
        let loc = funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
        let (programs, cache) = ckopt_lower::programs_of(funcs)?;
        let (text, kernels) = ckopt_lower::cuda_kernels_mlir(&cache, &programs)?;
        let op_counts = funcs.iter().map(|f| f.body.len().saturating_sub(1)).collect();
        let bundle =
            ckopt_kernels::Bundle { sm: 90, producer: "emulation".into(), ptx: String::new(), kernels, programs, op_counts, trains: Vec::new() };
        let dev = cuda::emu::EmuDevice::new(&text, &bundle).map_err(|m| Diag::error(loc.clone(), m))?;
        CudaModule::new(Arc::new(dev), bundle).map_err(|m| Diag::error(loc, m))
    }

    /// Compiles `func` for `backend` without allocating or running anything:
    /// the report's `compile_ms`, `arena_bytes`, `workspace_bytes` and kernel
    /// counts (`ckopt-run --compile-only`). cpu: the step program and the JIT
    /// of its distinct kernels; cuda: the bundle with its PTX (no device
    /// needed; for `opts.sm`).
    pub fn compile_report(func: &Func, backend: Backend, opts: &CudaOptions) -> Result<Report, Diag> {
        let kernel_steps = |p: &ckopt_kernels::StepProgram| p.steps.iter().filter(|s| matches!(s, ckopt_kernels::Step::Kernel { .. })).count();
        match backend {
            Backend::Cpu => {
                let m = CpuModule::compile(&[func])?;
                let p = m.programs.first().ok_or_else(|| Diag::error(func.loc.clone(), "no program"))?;
                Ok(Report {
                    backend: "cpu".into(),
                    function: func.name.clone(),
                    arena_bytes: p.arena_bytes,
                    workspace_bytes: p.workspace_bytes,
                    compile_ms: m.compile_ms,
                    kernels: Some(kernel_steps(p)),
                    distinct_kernels: Some(m.cache.len()),
                    ..Default::default()
                })
            }
            Backend::Cuda => {
                let t = std::time::Instant::now();
                let b = ckopt_lower::compile_bundle(&[func], opts)?;
                let p = b.programs.first().ok_or_else(|| Diag::error(func.loc.clone(), "no program"))?;
                Ok(Report {
                    backend: "cuda".into(),
                    function: func.name.clone(),
                    arena_bytes: p.arena_bytes,
                    workspace_bytes: p.workspace_bytes + b.kernels.iter().map(|k| k.scratch_bytes).max().unwrap_or(0),
                    compile_ms: t.elapsed().as_secs_f64() * 1e3,
                    kernels: Some(kernel_steps(p)),
                    distinct_kernels: Some(b.kernels.len()),
                    ..Default::default()
                })
            }
        }
    }

    /// Compiles and runs one step (the `ckopt-run --backend cpu|cuda` path).
    pub fn run_once(func: &Func, backend: Backend, inputs: &[Tensor], opts: &CudaOptions) -> Result<(Vec<Tensor>, Report), Diag> {
        let (out, rep, _) = run_repeated(func, backend, inputs, opts, 1)?;
        Ok((out, rep))
    }

    /// Compiles once and runs `repeat` (>= 1) steps on the same inputs;
    /// returns the last results, the report (its `step_ms` the median step)
    /// and every step's time in ms.
    pub fn run_repeated(
        func: &Func,
        backend: Backend,
        inputs: &[Tensor],
        opts: &CudaOptions,
        repeat: usize,
    ) -> Result<(Vec<Tensor>, Report, Vec<f64>), Diag> {
        let mut e = Executor::new(func, backend, opts)?;
        ckopt_interp::check_inputs(func, inputs)?;
        let mut out = Vec::new();
        let mut times = Vec::with_capacity(repeat);
        for _ in 0..repeat.max(1) {
            out = e.step(inputs)?;
            times.push(e.report().step_ms);
        }
        let mut rep = e.report();
        rep.step_ms = median(&times);
        Ok((out, rep, times))
    }
}

#[cfg(feature = "lower")]
pub use compile::{compile_report, emulated_module, run_once, run_repeated};

fn diag(e: RuntimeError) -> ckopt_ir::Diag {
    ckopt_ir::Diag::error(Default::default(), e.to_string())
}

impl Executor {
    /// Runs one step on `inputs` (one per argument); returns the results.
    pub fn step(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, ckopt_ir::Diag> {
        match self {
            #[cfg(feature = "lower")]
            Executor::Cpu(e) => e.step(inputs),
            Executor::Cuda(e) => {
                for (i, t) in inputs.iter().enumerate() {
                    e.set_arg(i, t).map_err(diag)?;
                }
                e.run().map_err(diag)?;
                (0..e.program().results.len()).map(|j| e.result(j).map_err(diag)).collect()
            }
        }
    }
    /// What was measured so far (the last step's time, allocations, memory).
    pub fn report(&self) -> Report {
        match self {
            #[cfg(feature = "lower")]
            Executor::Cpu(e) => e.report(),
            Executor::Cuda(e) => e.report(),
        }
    }
    fn exec(&self) -> &dyn ckopt_interp::StepExec {
        match self {
            #[cfg(feature = "lower")]
            Executor::Cpu(e) => e.as_ref(),
            Executor::Cuda(e) => e.as_ref(),
        }
    }
    fn exec_mut(&mut self) -> &mut dyn ckopt_interp::StepExec {
        match self {
            #[cfg(feature = "lower")]
            Executor::Cpu(e) => e.as_mut(),
            Executor::Cuda(e) => e.as_mut(),
        }
    }
}

impl ckopt_interp::StepExec for Executor {
    fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), ckopt_ir::Diag> {
        self.exec_mut().set_arg(i, t)
    }
    fn run(&mut self) -> Result<(), ckopt_ir::Diag> {
        self.exec_mut().run()
    }
    fn result(&self, j: usize) -> Option<Tensor> {
        self.exec().result(j)
    }
    fn arg(&self, i: usize) -> Option<Tensor> {
        self.exec().arg(i)
    }
    fn result_in_arg(&self, j: usize) -> Option<usize> {
        self.exec().result_in_arg(j)
    }
    fn peak_bytes(&self) -> u64 {
        self.exec().peak_bytes()
    }
    fn take_arg(&mut self, i: usize) -> Option<ckopt_interp::ArgBuf> {
        self.exec_mut().take_arg(i)
    }
    fn put_arg(&mut self, i: usize, b: ckopt_interp::ArgBuf) -> Result<(), ckopt_interp::ArgBuf> {
        self.exec_mut().put_arg(i, b)
    }
}

/// The median of a list of times (0 when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

#[cfg(all(test, feature = "lower"))]
mod tests {
    use super::*;
    use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
    use ckopt_ir::{Attr, Attrs, Func, Loc, OpKind, TensorType};

    fn planned_add() -> Func {
        let mut f = Func::new("addf", Loc::unknown());
        let x = f.add_param("x", TensorType::f32(vec![2, 3]), false);
        let y = f.add_param("y", TensorType::f32(vec![2, 3]), false);
        let s = f.push(OpKind::Add, &[x, y], Attrs::new(), None, "s", Loc::unknown()).unwrap();
        f.push_return(&[s], Loc::unknown());
        f.body[0].attrs.insert(ATTR_OFFSET.into(), Attr::Int(0));
        f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(24));
        f
    }

    #[test]
    fn cpu_executor_allocates_exactly_arena_bytes_and_computes() {
        let f = planned_add();
        let x = Tensor::new(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let y = Tensor::new(vec![2, 3], vec![0.5; 6]).unwrap();
        let (out, rep) = run_once(&f, Backend::Cpu, &[x, y], &Default::default()).unwrap();
        assert_eq!(out[0].data, vec![1.5, 2.5, 3.5, 4.5, 5.5, 6.5]);
        assert_eq!((rep.arena_bytes, rep.arena_allocated_bytes, rep.backend.as_str()), (24, 24, "cpu"));
    }

    #[test]
    fn cuda_without_a_driver_is_an_error_not_a_panic() {
        let f = planned_add();
        let x = Tensor::new(vec![2, 3], vec![1., 2., 3., 4., 5., 6.]).unwrap();
        let r = run_once(&f, Backend::Cuda, &[x.clone(), x], &Default::default());
        match cuda_status() {
            Err(_) => {
                let e = r.err().map(|d| d.message).unwrap_or_default();
                assert!(e.contains("cuda backend") && e.contains("CUDA"), "{e}");
            }
            Ok(_) => assert_eq!(r.map(|(o, _)| o[0].data.clone()).ok(), Some(vec![2., 4., 6., 8., 10., 12.])),
        }
    }
}
