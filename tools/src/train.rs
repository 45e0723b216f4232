//! SGD training: what `ckopt-run --train` runs (on the interpreter, or on
//! cpu/cuda through `train_with` and `lowered::GradRunner`).
//!
//! Given a module and the name of a loss function `@NAME` (first result a
//! rank-0 loss), training uses `@NAME_grad` when the module has it (it must
//! return the loss and one gradient per `{ck.param}` argument, as the
//! `autodiff` pass writes it), else runs `autodiff{func=NAME}` in-process on
//! a copy. Each step evaluates `@NAME_grad` on the current arguments,
//! reports the loss, then updates every `{ck.param}` argument (every
//! argument when none is marked): `p -= lr * dp`. Non-trainable arguments
//! (`%x`, `%target`) stay fixed.
//!
//! Errors (located, never panics): the function is missing or is not a
//! scalar loss, an existing `@NAME_grad` has the wrong results, the loss
//! becomes non-finite (the message suggests a smaller `--lr`).
//! Complexity: `steps` evaluations of the gradient function.

use ckopt_interp::{Tensor, run_func_with_stats};
use ckopt_ir::{Diag, Func, Module};
use ckopt_passes::autodiff::{AutodiffOptions, GRAD_SUFFIX, Wrt, autodiff, grad_name};
use std::time::Instant;

/// What a training run did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainResult {
    /// The loss at the start of each step (before its update), step 1 first.
    pub losses: Vec<f32>,
    /// The arguments after the last update (trainable ones changed).
    pub args: Vec<Tensor>,
    /// Indices of the trained arguments.
    pub trained: Vec<usize>,
    /// Mean wall time of one step (gradient evaluation + update), ms.
    pub step_time_ms: f64,
    /// Largest measured interpreter peak over the steps (arguments excluded).
    pub peak_bytes: u64,
    /// The gradient function that ran, and whether autodiff built it here.
    pub grad_func: String,
    pub built_grad: bool,
}

/// The loss function to train for `name`: `@X` when `name` is `X_grad` of an `@X` in the module.
pub fn loss_func_name(module: &Module, name: &str) -> String {
    match name.strip_suffix(GRAD_SUFFIX) {
        Some(base) if module.func(base).is_some() => base.to_string(),
        _ => name.to_string(),
    }
}

/// Checks that `g` returns (loss, one gradient per trainable argument of `f`).
fn check_grad_func(f: &Func, g: &Func) -> Result<(), Diag> {
    let trained = f.trainable_indices();
    let ok = g.result_types.len() == 1 + trained.len()
        && g.result_types[0].rank() == 0
        && trained.iter().enumerate().all(|(k, &i)| g.result_types[1 + k] == *f.ty(f.params[i].value))
        && g.params.len() == f.params.len();
    if ok {
        Ok(())
    } else {
        Err(Diag::error(
            g.loc.clone(),
            format!(
                "@{} does not return (loss, gradient of each {{ck.param}} argument of @{}): it returns {} values; remove it or regenerate it with autodiff",
                g.name,
                f.name,
                g.result_types.len()
            ),
        ))
    }
}

/// Evaluates the gradient function once: (module, its name, arguments) ->
/// (results, measured peak bytes of the step).
pub type StepEval<'a> = dyn FnMut(&Module, &str, &[Tensor]) -> Result<(Vec<Tensor>, u64), Diag> + 'a;

/// Runs `steps` SGD steps with learning rate `lr` from `inputs` (all arguments of `@name`).
/// `on_step(step, steps, loss)` is called after each step's loss is known.
pub fn train(
    module: &Module,
    name: &str,
    inputs: Vec<Tensor>,
    steps: usize,
    lr: f32,
    on_step: impl FnMut(usize, usize, f32),
) -> Result<TrainResult, Diag> {
    train_with(module, name, inputs, steps, lr, on_step, &mut |m, g, a| {
        run_func_with_stats(m, g, a).map(|(out, stats)| (out, stats.peak_bytes))
    })
}

/// `train` with another evaluator of the gradient function (the cpu/cuda
/// backends of `ckopt-run --train`).
pub fn train_with(
    module: &Module,
    name: &str,
    inputs: Vec<Tensor>,
    steps: usize,
    lr: f32,
    mut on_step: impl FnMut(usize, usize, f32),
    eval: &mut StepEval<'_>,
) -> Result<TrainResult, Diag> {
    let fname = loss_func_name(module, name);
    let gname = grad_name(&fname);
    let owned: Module;
    let (m, built) = if module.func(&gname).is_some() {
        (module, false)
    } else {
        let mut copy = module.clone();
        let opts = AutodiffOptions { wrt: Wrt::All, func: Some(fname.clone()) };
        autodiff(&mut copy, &opts).map_err(|ds| ds.0.into_iter().next().unwrap_or_else(|| Diag::error(Default::default(), "autodiff failed")))?;
        owned = copy;
        (&owned, true)
    };
    let f = m.func(&fname).ok_or_else(|| Diag::error(Default::default(), format!("no function @{fname}")))?;
    let g = m.func(&gname).ok_or_else(|| Diag::error(f.loc.clone(), format!("no function @{gname}")))?;
    check_grad_func(f, g)?;
    let trained = f.trainable_indices();
    let mut args = inputs;
    let mut losses = Vec::with_capacity(steps);
    let mut peak = 0u64;
    let start = Instant::now();
    for step in 1..=steps {
        let (out, step_peak) = eval(m, &gname, &args)?;
        peak = peak.max(step_peak);
        let loss = out.first().and_then(Tensor::item).unwrap_or(f32::NAN);
        if !loss.is_finite() {
            return Err(Diag::error(
                f.loc.clone(),
                format!("training @{fname}: the loss is {loss} at step {step}/{steps}; try a smaller --lr (was {lr})"),
            ));
        }
        losses.push(loss);
        on_step(step, steps, loss);
        for (k, &i) in trained.iter().enumerate() {
            let grad = &out[1 + k];
            for (p, d) in args[i].data.iter_mut().zip(&grad.data) {
                *p -= lr * d;
            }
        }
    }
    let step_time_ms = if steps > 0 { start.elapsed().as_secs_f64() * 1e3 / steps as f64 } else { 0.0 };
    Ok(TrainResult { losses, args, trained, step_time_ms, peak_bytes: peak, grad_func: gname, built_grad: built })
}
