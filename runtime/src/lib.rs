//! ckopt-runtime: runs a planned ck function on the `cpu` backend (the JIT
//! of ckopt-lower, in one host arena of exactly `ck.arena_bytes`) or the
//! `cuda` backend (PTX from ckopt-lower launched through cudarc, in one
//! device arena of exactly `ck.arena_bytes`), and reports what it measured.
//!
//! The only crate that links cudarc (dynamic loading: it builds and runs
//! without CUDA; a machine without a driver or GPU gets an error value, never
//! a panic). Inputs and outputs are `ckopt_interp::Tensor`s so results
//! compare directly with the interpreter.

pub mod arena;
pub mod cpu;
pub mod cuda;
pub mod report;

pub use cpu::{CpuExecutor, CpuModule};
pub use cuda::{CudaExecutor, cuda_status};
pub use report::Report;

use ckopt_interp::Tensor;
use ckopt_ir::{Diag, Func};

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
    Cpu(Box<CpuExecutor>),
    /// The cuda executor with host copies of the arguments and last results.
    Cuda(Box<CudaExecutor>, Vec<Tensor>, Vec<Tensor>),
}

impl Executor {
    /// Compiles a planned function for `backend` (`libdevice`: see
    /// `ckopt_lower::PtxOptions`).
    pub fn new(func: &Func, backend: Backend, ptx: &ckopt_lower::PtxOptions) -> Result<Executor, Diag> {
        match backend {
            Backend::Cpu => Ok(Executor::Cpu(Box::new(CpuExecutor::new(func)?))),
            Backend::Cuda => {
                let args = func.params.iter().map(|p| Tensor::zeros(&func.ty(p.value).shape.iter().map(|&d| d as usize).collect::<Vec<_>>())).collect();
                Ok(Executor::Cuda(Box::new(CudaExecutor::new(func, ptx)?), args, Vec::new()))
            }
        }
    }
    /// Runs one step; returns the results and updates the report.
    pub fn step(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Diag> {
        match self {
            Executor::Cpu(e) => e.step(inputs),
            Executor::Cuda(e, _, _) => e.step(inputs),
        }
    }
    /// What was measured so far (the last step's time, allocations, memory).
    pub fn report(&self) -> Report {
        match self {
            Executor::Cpu(e) => e.report(),
            Executor::Cuda(e, _, _) => e.report(),
        }
    }
}

impl ckopt_interp::StepExec for Executor {
    fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), Diag> {
        match self {
            Executor::Cpu(e) => e.set_arg(i, t),
            Executor::Cuda(_, args, _) => match args.get_mut(i) {
                Some(a) if a.shape == t.shape => {
                    *a = t.clone();
                    Ok(())
                }
                _ => Err(Diag::error(Default::default(), format!("cuda backend: bad argument {i}"))),
            },
        }
    }
    fn run(&mut self) -> Result<(), Diag> {
        match self {
            Executor::Cpu(e) => e.run(),
            Executor::Cuda(e, args, out) => {
                *out = e.step(args)?;
                Ok(())
            }
        }
    }
    fn result(&self, j: usize) -> Option<Tensor> {
        match self {
            Executor::Cpu(e) => e.result(j),
            Executor::Cuda(_, _, out) => out.get(j).cloned(),
        }
    }
    fn arg(&self, i: usize) -> Option<Tensor> {
        match self {
            Executor::Cpu(e) => e.arg(i),
            Executor::Cuda(_, args, _) => args.get(i).cloned(),
        }
    }
    fn result_in_arg(&self, j: usize) -> Option<usize> {
        match self {
            Executor::Cpu(e) => ckopt_interp::StepExec::result_in_arg(e.as_ref(), j),
            Executor::Cuda(..) => None,
        }
    }
    fn peak_bytes(&self) -> u64 {
        let r = self.report();
        match self {
            Executor::Cpu(_) => r.arena_allocated_bytes,
            Executor::Cuda(..) => r.device_memory_bytes.unwrap_or(0).saturating_sub(r.input_bytes),
        }
    }
}

/// Compiles `func` for `backend` without allocating or running anything:
/// the report's `compile_ms`, `arena_bytes`, `workspace_bytes` and kernel
/// counts (`ckopt-run --compile-only`). cpu: the step program and the JIT of
/// its distinct kernels; cuda: the PTX (no device needed).
pub fn compile_report(func: &Func, backend: Backend, ptx: &ckopt_lower::PtxOptions) -> Result<Report, Diag> {
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
                kernels: Some(p.steps.iter().filter(|s| matches!(s, ckopt_kernels::Step::Kernel { .. })).count()),
                distinct_kernels: Some(m.cache.len()),
                ..Default::default()
            })
        }
        Backend::Cuda => {
            let t = std::time::Instant::now();
            let p = ckopt_lower::compile_ptx(func, ptx)?;
            Ok(Report {
                backend: "cuda".into(),
                function: func.name.clone(),
                arena_bytes: p.layout.arena_bytes,
                compile_ms: t.elapsed().as_secs_f64() * 1e3,
                kernels: Some(p.kernels.len()),
                ..Default::default()
            })
        }
    }
}

/// Compiles and runs one step (the `ckopt-run --backend cpu|cuda` path).
pub fn run_once(func: &Func, backend: Backend, inputs: &[Tensor], ptx: &ckopt_lower::PtxOptions) -> Result<(Vec<Tensor>, Report), Diag> {
    let (out, rep, _) = run_repeated(func, backend, inputs, ptx, 1)?;
    Ok((out, rep))
}

/// Compiles once and runs `repeat` (>= 1) steps on the same inputs; returns
/// the last results, the report (its `step_ms` the median step) and every
/// step's time in ms.
pub fn run_repeated(
    func: &Func,
    backend: Backend,
    inputs: &[Tensor],
    ptx: &ckopt_lower::PtxOptions,
    repeat: usize,
) -> Result<(Vec<Tensor>, Report, Vec<f64>), Diag> {
    let mut e = Executor::new(func, backend, ptx)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
    use ckopt_ir::{Attr, Attrs, Loc, OpKind, TensorType};

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
        let x = Tensor::zeros(&[2, 3]);
        let r = run_once(&f, Backend::Cuda, &[x.clone(), x], &Default::default());
        match cuda_status() {
            Err(_) => {
                let e = r.err().map(|d| d.message).unwrap_or_default();
                assert!(e.contains("cuda backend") && e.contains("CUDA"), "{e}");
            }
            Ok(_) => assert_eq!(r.map(|(o, _)| o[0].data.clone()).ok(), Some(vec![0.0; 6])),
        }
    }
}
