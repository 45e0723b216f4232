//! `ckopt-run --train`: the training driver (`ckopt_passes::train`) on a
//! backend.
//!
//! Given a module and a loss function `@NAME` (or `NAME_grad`/`NAME_step`),
//! training runs `@NAME_step` (the `sgd` pass's function: loss and updated
//! parameters in donated buffers) when the module has it, else builds it
//! in-process from `@NAME_grad` (built by `autodiff` when missing) with SGD
//! at `lr`. Each step the executor runs the step function on resident
//! arguments; the cpu and cuda backends keep parameters (and momentum) in
//! their own memory, and only the loss comes back. Non-trainable arguments
//! (`%x`, `%target`) stay fixed.
//!
//! Errors (located, never panics): the function is missing or is not a
//! scalar loss, an existing `@NAME_grad` or `@NAME_step` has the wrong
//! results, the loss becomes non-finite (the message suggests a smaller
//! `--lr`).

use ckopt_interp::{InterpExec, StepExec, Tensor};
use ckopt_ir::{Diag, Module};
use ckopt_passes::sgd::{SgdOptions, StepRule};
use ckopt_passes::train::{Hyper, StepSig, initial_args, prepare, train_loop};

pub use ckopt_passes::train::loss_func_name;

/// What a training run did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainResult {
    /// The loss of each step (before its update), step 1 first.
    pub losses: Vec<f32>,
    /// The loss function's arguments after the last update (trained ones changed).
    pub args: Vec<Tensor>,
    /// Indices of the trained arguments.
    pub trained: Vec<usize>,
    /// Mean time of one step (the backend's run), ms.
    pub step_time_ms: f64,
    /// Each step's time, ms.
    pub step_times_ms: Vec<f64>,
    /// Largest measured bytes of a step (interp: its peak, arguments excluded; cpu: the arena).
    pub peak_bytes: u64,
    pub grad_func: String,
    pub step_func: String,
    /// Whether autodiff / sgd built the gradient / step function here.
    pub built_grad: bool,
    pub built_step: bool,
}

/// The module with `@NAME_step` and its signature (see `ckopt_passes::train::prepare`).
pub fn prepared(module: &Module, name: &str, lr: f32) -> Result<(Module, StepSig), Diag> {
    let mut m = module.clone();
    let sig = prepare(&mut m, name, &StepRule::Sgd(SgdOptions { lr, ..Default::default() }))?;
    Ok((m, sig))
}

/// Runs `steps` steps on `exec`, whose arguments are the step function's
/// initial arguments, at learning rate `lr` (the step's `lr` input, whatever
/// the step was built with); `n_args` is the loss function's argument count.
pub fn run_steps(
    exec: &mut dyn StepExec,
    sig: &StepSig,
    n_args: usize,
    steps: usize,
    lr: f32,
    on_step: impl FnMut(usize, usize, f32),
) -> Result<TrainResult, Diag> {
    let r = train_loop(exec, sig, steps, &Hyper::lr(lr), on_step)?;
    Ok(TrainResult {
        losses: r.losses,
        args: r.args.into_iter().take(n_args).collect(),
        trained: sig.params.clone(),
        step_time_ms: r.step_time_ms,
        step_times_ms: r.step_times_ms,
        peak_bytes: r.peak_bytes,
        grad_func: sig.grad_func.clone(),
        step_func: sig.step_func.clone(),
        built_grad: sig.built_grad,
        built_step: sig.built_step,
    })
}

/// Trains on the interpreter: `steps` SGD steps with learning rate `lr`
/// from `inputs` (all arguments of `@name`). `on_step(step, steps, loss)` is
/// called after each step's loss is known.
pub fn train(
    module: &Module,
    name: &str,
    inputs: Vec<Tensor>,
    steps: usize,
    lr: f32,
    on_step: impl FnMut(usize, usize, f32),
) -> Result<TrainResult, Diag> {
    let (m, sig) = prepared(module, name, lr)?;
    let s = m.func(&sig.step_func).ok_or_else(|| Diag::error(Default::default(), "no step function"))?;
    let args = initial_args(s, &sig, &inputs);
    let n = inputs.len();
    let step_func = sig.step_func.clone();
    let mut exec = InterpExec::new(m, &step_func, args)?;
    run_steps(&mut exec, &sig, n, steps, lr, on_step)
}
