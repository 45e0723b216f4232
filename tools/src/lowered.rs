//! Helpers of the tools that use the lowering (`lower` feature): planning a
//! function when it has not been planned yet, and running it on a backend.
//!
//! Decision (documented in docs/api.md): `ckopt-run --backend cpu|cuda` on a
//! function without `ck.offset`/`ck.arena_bytes` runs `memplan` (default
//! options) on it first, as users of a runner expect a plain file to run;
//! `ckopt-translate` does not plan (like mlir-translate, it translates what
//! it is given) and names the unplanned function instead.

use ckopt_interp::Tensor;
use ckopt_ir::{Diags, Func, Module};
use ckopt_runtime::{Backend, Report};

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
