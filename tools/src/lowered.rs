//! Helpers of the tools that use the lowering (`lower` feature): planning a
//! function when it has not been planned yet, and running or training it on
//! a backend.
//!
//! Decision (documented in docs/api.md): `ckopt-run --backend cpu|cuda` on a
//! function without memplan's attributes plans it first, as users of a
//! runner expect a plain file to run: `fuse,memplan` for one evaluation,
//! `inplace,fuse,memplan` for a step function built in-process by
//! `--train`; the memplan checker proves the plan before it runs.
//! `ckopt-translate` does not plan (like mlir-translate, it translates what
//! it is given) and names the unplanned function instead.

use ckopt_interp::{StepExec, Tensor};
use ckopt_ir::{Diags, Module};
use ckopt_runtime::{Backend, Executor, Report};

pub use ckopt_passes::train::plan_if_needed;

/// Runs `func` `repeat` times on `backend` (cpu or cuda), planning it first
/// if needed; `CKOPT_LIBDEVICE` supplies libdevice for cuda. Returns the
/// last results, the report (median step) and each step's time.
pub fn run_lowered(module: &Module, func: &str, backend: Backend, inputs: &[Tensor], repeat: usize) -> Result<(Vec<Tensor>, Report, Vec<f64>), Diags> {
    let mut m = module.clone();
    plan_if_needed(&mut m, func, "fuse,memplan")?;
    let f = ckopt_interp::find_func(&m, func)?;
    ckopt_runtime::run_repeated(f, backend, inputs, &Default::default(), repeat).map_err(Diags::from)
}

/// Trains `name` on `backend`: the step function (built in-process when the
/// module has none, see `train::prepared`) is planned if needed, compiled
/// once, and run step after step on resident arguments.
pub fn train_lowered(
    module: &Module,
    name: &str,
    backend: Backend,
    inputs: Vec<Tensor>,
    steps: usize,
    lr: f32,
    on_step: impl FnMut(usize, usize, f32),
) -> Result<(crate::train::TrainResult, Report, bool), Diags> {
    let (mut m, sig) = crate::train::prepared(module, name, lr)?;
    let planned = plan_if_needed(&mut m, &sig.step_func, "inplace,fuse,memplan")?;
    let s = ckopt_interp::find_func(&m, &sig.step_func)?;
    let mut exec = Executor::new(s, backend, &Default::default())?;
    let n = inputs.len();
    for (i, t) in ckopt_passes::train::initial_args(s, &sig, &inputs).iter().enumerate() {
        exec.set_arg(i, t)?;
    }
    let r = crate::train::run_steps(&mut exec, &sig, n, steps, lr, on_step)?;
    Ok((r, exec.report(), planned))
}

/// `ckopt-run --compile-only`: plans `func` if needed (for `train`, the step
/// function, built in-process when missing) and compiles it for `backend`;
/// returns the report and whether it planned.
pub fn compile_only(module: &Module, func: &str, backend: Backend, train: Option<f32>) -> Result<(Report, bool), Diags> {
    let (mut m, name, pipeline) = match train {
        Some(lr) => {
            let (m, sig) = crate::train::prepared(module, func, lr)?;
            (m, sig.step_func, "inplace,fuse,memplan")
        }
        None => (module.clone(), func.to_string(), "fuse,memplan"),
    };
    let planned = plan_if_needed(&mut m, &name, pipeline)?;
    let f = ckopt_interp::find_func(&m, &name)?;
    Ok((ckopt_runtime::compile_report(f, backend, &Default::default())?, planned))
}
