//! Helpers of the tools that use the lowering (`lower` feature): planning a
//! function when it has not been planned yet, and running it on a backend.
//!
//! Decision (documented in docs/api.md): `ckopt-run --backend cpu|cuda` on a
//! function without `ck.offset`/`ck.arena_bytes` runs `memplan` (default
//! options) on it first, as users of a runner expect a plain file to run;
//! `ckopt-translate` does not plan (like mlir-translate, it translates what
//! it is given) and names the unplanned function instead.

use ckopt_interp::Tensor;
use ckopt_ir::{Diag, Diags, Func, Module};
use ckopt_runtime::{Backend, Executor, Report};

/// Plans `func` in `module` with `memplan` when it lacks memplan's
/// attributes; returns whether it did.
pub fn plan_if_needed(module: &mut Module, func: &str) -> Result<bool, Diags> {
    let Some(f) = module.func_mut(func) else { return Ok(false) };
    if ckopt_lower::is_planned(f) {
        return Ok(false);
    }
    ckopt_passes::memplan::memplan_func(f, ckopt_passes::memplan::DEFAULT_ALIGN)?;
    Ok(true)
}

/// Runs one step of `func` on `backend` (cpu or cuda), planning it first if
/// needed; `CKOPT_LIBDEVICE` supplies libdevice for cuda.
pub fn run_lowered(module: &Module, func: &str, backend: Backend, inputs: &[Tensor]) -> Result<(Vec<Tensor>, Report), Diags> {
    let mut m = module.clone();
    plan_if_needed(&mut m, func)?;
    let f: &Func = ckopt_interp::find_func(&m, func)?;
    ckopt_runtime::run_once(f, backend, inputs, &Default::default()).map_err(Diags::from)
}

/// Runs a gradient function step after step on cpu/cuda for
/// `train::train_with`: compiles it (planning a copy with memplan if needed)
/// on the first call and reuses the executor and its arena afterwards.
pub struct GradRunner {
    backend: Backend,
    exec: Option<(String, Executor)>,
    /// Whether memplan was run here on the gradient function.
    pub planned_here: bool,
}

impl GradRunner {
    pub fn new(backend: Backend) -> GradRunner {
        GradRunner { backend, exec: None, planned_here: false }
    }

    /// One evaluation: (results, arena bytes allocated or device memory used).
    pub fn eval(&mut self, m: &Module, func: &str, args: &[Tensor]) -> Result<(Vec<Tensor>, u64), Diag> {
        if self.exec.as_ref().is_none_or(|(name, _)| name != func) {
            let mut f = ckopt_interp::find_func(m, func)?.clone();
            if !ckopt_lower::is_planned(&f) {
                ckopt_passes::memplan::memplan_func(&mut f, ckopt_passes::memplan::DEFAULT_ALIGN)
                    .map_err(|ds| ds.0.into_iter().next().unwrap_or_else(|| Diag::error(f.loc.clone(), "memplan failed")))?;
                self.planned_here = true;
            }
            let e = Executor::new(&f, self.backend, &Default::default())?;
            self.exec = Some((func.to_string(), e));
        }
        let Some((_, e)) = self.exec.as_mut() else { return Err(Diag::error(Default::default(), "no executor")) };
        let out = e.step(args)?;
        let r = e.report();
        let peak = match self.backend {
            Backend::Cuda => r.device_memory_bytes.unwrap_or(0).saturating_sub(r.input_bytes),
            Backend::Cpu => r.arena_allocated_bytes,
        };
        Ok((out, peak))
    }

    /// The last report (compile time, step time, arena).
    pub fn report(&self) -> Option<Report> {
        self.exec.as_ref().map(|(_, e)| e.report())
    }
}
