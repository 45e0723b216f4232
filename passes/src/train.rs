//! Training through the step function: the one training driver of ckopt
//! (`ckopt-run --train` and the `ckopt` API both use it).
//!
//! `prepare` makes sure the module has `@NAME_step` (the `sgd` pass's
//! function: loss and updated parameters in donated buffers), building it
//! in-process from `@NAME_grad` (itself built by `autodiff` when missing)
//! and checking its signature. `train_loop` then runs it on any executor
//! (`ckopt_interp::StepExec`: the interpreter, or a cpu/cuda runtime whose
//! argument buffers stay resident): per step it sets the dropout step key
//! (`{ck.step}`, the step number's bits), runs, reads the loss, and copies an
//! updated parameter or momentum back into its argument only where the step
//! did not already write it in place. A non-finite loss is an error that
//! suggests a smaller learning rate.
//! Complexity: `steps` runs of the step function.

use crate::autodiff::{AutodiffOptions, GRAD_SUFFIX, Wrt, autodiff, grad_name};
use crate::sgd::{STEP_SUFFIX, StepRule, build_step_rule, check_grad_signature, step_name};
use ckopt_interp::{StepExec, Tensor};
use ckopt_ir::ops::{ATTR_HYPER, ATTR_HYPER_DEFAULT, ATTR_OPT_STATE, ATTR_STEP};
use ckopt_ir::{Attr, Diag, Func, Module};
use std::collections::BTreeMap;
use std::time::Instant;

/// Hyperparameter values a user gives (`--lr`, a schedule's value, ...), by
/// `ck.hyper` name; a name not set takes the step's `ck.hyper_default`.
/// `bias_correction1`/`bias_correction2` are never set: they follow from the
/// step number `t` as `1 - beta^t` (computed in f64, as PyTorch does).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hyper(pub BTreeMap<String, f32>);

impl Hyper {
    /// Only a learning rate.
    pub fn lr(lr: f32) -> Hyper {
        let mut h = Hyper::default();
        h.set("lr", lr);
        h
    }
    pub fn set(&mut self, name: &str, v: f32) {
        self.0.insert(name.to_string(), v);
    }
    pub fn get(&self, name: &str) -> Option<f32> {
        self.0.get(name).copied()
    }
    /// The value of every hyper argument of `sig` at step `step` (from 1):
    /// `(argument index, name, value)`.
    pub fn values(&self, sig: &StepSig, step: usize) -> Vec<(usize, String, f32)> {
        let base = |name: &str| -> f32 {
            self.get(name).or_else(|| sig.hypers.iter().find(|h| h.1 == name).map(|h| h.2)).unwrap_or(0.0)
        };
        let corr = |beta: &str| (1.0 - (base(beta) as f64).powi(step.min(i32::MAX as usize) as i32)) as f32;
        sig.hypers
            .iter()
            .map(|(i, name, _)| {
                let v = match name.as_str() {
                    "bias_correction1" => corr("beta1"),
                    "bias_correction2" => corr("beta2"),
                    n => base(n),
                };
                (*i, name.clone(), v)
            })
            .collect()
    }
    /// A value given for a hyperparameter the step does not take is an error
    /// naming it and the ones it takes.
    pub fn check(&self, sig: &StepSig) -> Result<(), Diag> {
        for name in self.0.keys() {
            if !sig.hypers.iter().any(|h| &h.1 == name) {
                let have: Vec<&str> = sig.hypers.iter().map(|h| h.1.as_str()).filter(|n| !n.starts_with("bias_correction")).collect();
                return Err(located(
                    None,
                    format!(
                        "@{} takes no hyperparameter '{name}' (it takes {}); rebuild the step with the optimizer that has it",
                        sig.step_func,
                        have.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// What a step function takes and returns.
#[derive(Clone, Debug, PartialEq)]
pub struct StepSig {
    pub loss_func: String,
    pub grad_func: String,
    pub step_func: String,
    /// Argument indices of the trained parameters (result `1 + k` is parameter k's new value).
    pub params: Vec<usize>,
    /// Argument indices of the optimizer state (result `1 + params + k`).
    pub state: Vec<usize>,
    /// The `{ck.step}` argument, if the step has dropout.
    pub step_key: Option<usize>,
    /// The `{ck.hyper}` arguments: (index, name, default).
    pub hypers: Vec<(usize, String, f32)>,
    /// Whether `prepare` built the step function (and the gradient).
    pub built_step: bool,
    pub built_grad: bool,
}

/// Plans `func` of `module` with `pipeline` (then proves the plan with the
/// memplan checker) when memplan has not planned it yet; returns whether it
/// did. What `ckopt-run` and the API do before running on cpu/cuda.
pub fn plan_if_needed(module: &mut Module, func: &str, pipeline: &str) -> Result<bool, ckopt_ir::Diags> {
    let Some(f) = module.func(func) else { return Ok(false) };
    if f.is_planned() {
        return Ok(false);
    }
    let mut one = Module { funcs: vec![f.clone()] };
    let mut pm = crate::PassManager::parse(pipeline).map_err(|m| ckopt_ir::Diags::from(Diag::error(f.loc.clone(), m.to_string())))?;
    pm.run(&mut one)?;
    crate::memplan_check::check_func(&one.funcs[0], crate::memplan::default_align())?;
    if let (Some(slot), Some(planned)) = (module.func_mut(func), one.funcs.pop()) {
        *slot = planned;
    }
    Ok(true)
}

/// `@X` for `X`, `X_grad` or `X_step` when `@X` exists.
pub fn loss_func_name(module: &Module, name: &str) -> String {
    for suffix in [GRAD_SUFFIX, STEP_SUFFIX] {
        if let Some(base) = name.strip_suffix(suffix)
            && module.func(base).is_some()
        {
            return base.to_string();
        }
    }
    name.to_string()
}

fn located(f: Option<&Func>, m: String) -> Diag {
    Diag::error(f.map(|f| f.loc.clone()).unwrap_or_default(), m)
}

/// Makes sure `module` has the step function of loss `name` (see the module doc).
pub fn prepare(module: &mut Module, name: &str, rule: &StepRule) -> Result<StepSig, Diag> {
    let fname = loss_func_name(module, name);
    let f = module.func(&fname).ok_or_else(|| located(module.funcs.first(), format!("no function @{fname} to train")))?;
    if !crate::autodiff::has_scalar_loss(f) {
        return Err(located(Some(f), format!("@{fname} cannot be trained: its first result must be a rank-0 loss")));
    }
    let (gname, sname) = (grad_name(&fname), step_name(&fname));
    let mut built_grad = false;
    let mut built_step = false;
    if module.func(&sname).is_none() {
        if module.func(&gname).is_none() {
            let ad = AutodiffOptions { wrt: Wrt::All, func: Some(fname.clone()), ..Default::default() };
            autodiff(module, &ad).map_err(|ds| ds.0.into_iter().next().unwrap_or_else(|| located(None, "autodiff failed".into())))?;
            built_grad = true;
        }
        let (Some(f), Some(g)) = (module.func(&fname), module.func(&gname)) else {
            return Err(located(None, format!("no @{gname}")));
        };
        let step = build_step_rule(f, g, rule)?;
        module.funcs.push(step);
        built_step = true;
    }
    let (Some(f), Some(s)) = (module.func(&fname), module.func(&sname)) else {
        return Err(located(None, format!("no @{sname}")));
    };
    if let Some(g) = module.func(&gname) {
        check_grad_signature(f, g)?;
    }
    let params = f.trainable_indices();
    let state: Vec<usize> = (0..s.params.len()).filter(|&i| s.params[i].attrs.contains_key(ATTR_OPT_STATE)).collect();
    let step_key = (0..s.params.len()).find(|&i| s.params[i].attrs.contains_key(ATTR_STEP));
    let hypers = hyper_args(s);
    let mut ok = s.result_types.len() == 1 + params.len() + state.len()
        && s.result_types.first().is_some_and(|t| t.rank() == 0)
        && s.params.len() >= f.params.len();
    if ok {
        for (k, &i) in params.iter().chain(&state).enumerate() {
            ok &= s.result_types[1 + k] == *s.ty(s.params[i].value);
        }
    }
    if !ok {
        return Err(located(
            Some(s),
            format!(
                "@{sname} does not return (loss, the new value of each {{ck.param}} argument of @{fname}, then of each {{ck.opt_state}} argument); remove it or regenerate it with the sgd pass"
            ),
        ));
    }
    Ok(StepSig { loss_func: fname, grad_func: gname, step_func: sname, params, state, step_key, hypers, built_step, built_grad })
}

/// The `{ck.hyper}` arguments of a step function: (index, name, default).
pub fn hyper_args(s: &Func) -> Vec<(usize, String, f32)> {
    (0..s.params.len())
        .filter_map(|i| {
            let a = &s.params[i].attrs;
            let Some(Attr::Str(name)) = a.get(ATTR_HYPER) else { return None };
            let d = match a.get(ATTR_HYPER_DEFAULT) {
                Some(Attr::F32(x)) => *x,
                _ => 0.0,
            };
            Some((i, name.clone(), d))
        })
        .collect()
}

/// The step function's arguments for the loss function's `inputs`: the
/// inputs, zero optimizer state, a step key and hyperparameters (their
/// defaults; `step_once` sets them before each step).
pub fn initial_args(s: &Func, sig: &StepSig, inputs: &[Tensor]) -> Vec<Tensor> {
    (0..s.params.len()).map(|i| initial_arg(s, sig, inputs.get(i), i)).collect()
}

/// Argument `i` of the step function (see `initial_args`); `input` is the
/// loss function's argument `i`, if it has one.
pub fn initial_arg(s: &Func, sig: &StepSig, input: Option<&Tensor>, i: usize) -> Tensor {
    match input {
        Some(t) if !sig.state.contains(&i) && sig.step_key != Some(i) => t.clone(),
        _ => {
            if let Some(h) = sig.hypers.iter().find(|h| h.0 == i) {
                return Tensor::scalar(h.2);
            }
            let shape: Vec<usize> = s.ty(s.params[i].value).shape.iter().map(|&d| d as usize).collect();
            Tensor::zeros(&shape)
        }
    }
}

/// What a training run did.
#[derive(Clone, Debug, PartialEq)]
pub struct TrainResult {
    /// The loss of each step (computed before its update), step 1 first.
    pub losses: Vec<f32>,
    /// The step function's arguments after the last step.
    pub args: Vec<Tensor>,
    /// Mean time of one step (the executor's run), ms.
    pub step_time_ms: f64,
    /// Each step's time, ms.
    pub step_times_ms: Vec<f64>,
    /// Largest measured bytes of a step (`StepExec::peak_bytes`).
    pub peak_bytes: u64,
}

/// One training step (number `step`, from 1) on `exec`: sets the step key,
/// runs, and writes the updated parameters and state back into their
/// arguments where the step did not already write them in place. Returns
/// the loss, or an error when it is not finite.
pub fn step_once(exec: &mut dyn StepExec, sig: &StepSig, step: usize, hyper: &Hyper) -> Result<f32, Diag> {
    let mut lr_hint = 0.0;
    for (i, name, v) in hyper.values(sig, step) {
        if name == "lr" {
            lr_hint = v;
        }
        exec.set_arg(i, &Tensor::scalar(v))?;
    }
    if let Some(k) = sig.step_key {
        // The step number's bits: a distinct key each step.
        exec.set_arg(k, &Tensor::scalar(f32::from_bits(step as u32)))?;
    }
    exec.run()?;
    let loss = exec.result(0).and_then(|t| t.item()).unwrap_or(f32::NAN);
    if !loss.is_finite() {
        return Err(located(
            None,
            format!("training @{}: the loss is {loss} at step {step}; try a smaller learning rate (was {lr_hint})", sig.loss_func),
        ));
    }
    for (k, &i) in sig.params.iter().chain(&sig.state).enumerate() {
        if exec.result_in_arg(1 + k) != Some(i) {
            let t = exec.result(1 + k).ok_or_else(|| located(None, format!("@{} has no result {}", sig.step_func, 1 + k)))?;
            exec.set_arg(i, &t)?;
        }
    }
    Ok(loss)
}

/// Runs `steps` training steps on `exec` (whose arguments are set).
pub fn train_loop(
    exec: &mut dyn StepExec,
    sig: &StepSig,
    steps: usize,
    hyper: &Hyper,
    mut on_step: impl FnMut(usize, usize, f32),
) -> Result<TrainResult, Diag> {
    hyper.check(sig)?;
    let mut losses = Vec::with_capacity(steps);
    let mut peak = 0u64;
    let mut times = Vec::with_capacity(steps);
    for step in 1..=steps {
        let t = Instant::now();
        let loss = step_once(exec, sig, step, hyper)?;
        times.push(t.elapsed().as_secs_f64() * 1e3);
        peak = peak.max(exec.peak_bytes());
        losses.push(loss);
        on_step(step, steps, loss);
    }
    let mut args = Vec::new();
    let mut i = 0;
    while let Some(t) = exec.arg(i) {
        args.push(t);
        i += 1;
    }
    let step_time_ms = if steps > 0 { times.iter().sum::<f64>() / steps as f64 } else { 0.0 };
    Ok(TrainResult { losses, args, step_time_ms, step_times_ms: times, peak_bytes: peak })
}
