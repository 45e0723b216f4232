//! The training job: steps of `@NAME_step` on any executor, each on the
//! next batch of a dataset (or on fixed inputs), with the learning rate of
//! a schedule, evaluation every N steps and at the end, checkpoints every N
//! steps and on an interrupt, exact resume.
//!
//! Exactness: the batch of global step `s` is a function of `(shuffle seed,
//! s)`, the learning rate and the bias corrections of `s`, the dropout key
//! of `s`; parameters and optimizer state come back from a checkpoint bit
//! for bit. So `--resume` after `N` steps then `M` more gives the losses of
//! `N + M` uninterrupted steps, bit for bit (`tests/resume.rs`).

use crate::checkpoint::{self, Checkpoint, Entry};
use crate::data::{Dataset, Prefetch};
use crate::eval::{EvalResult, Evaluator};
use crate::schedule::Schedule;
use ckopt_interp::{StepExec, Tensor};
use ckopt_ir::Func;
use ckopt_passes::train::{Hyper, StepSig, step_once};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What to run.
#[derive(Clone, Debug)]
pub struct JobSpec {
    /// Steps to run now (after the resumed ones).
    pub steps: usize,
    pub shuffle: Option<u64>,
    /// User-given hyperparameters (the schedule sets `lr` each step).
    pub hyper: Hyper,
    /// `None`: the step's own `lr` default, constant.
    pub schedule: Option<Schedule>,
    pub eval_every: Option<usize>,
    pub save_dir: Option<PathBuf>,
    pub save_every: Option<usize>,
    pub resume: Option<PathBuf>,
    /// Written into checkpoints (free-form: backend, optimizer, data file).
    pub info: Value,
}

/// Told what happens, as it happens.
pub trait Observer {
    fn start(&mut self, _first_step: usize, _last_step: usize) {}
    fn step(&mut self, _step: usize, _last_step: usize, _loss: f32, _lr: f32) {}
    fn eval(&mut self, _r: &EvalResult) {}
    fn saved(&mut self, _step: usize, _path: &std::path::Path) {}
    fn finish(&mut self) {}
}

/// Does nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// What a job did.
#[derive(Clone, Debug, Default)]
pub struct JobResult {
    /// The step the run started from (0, or the checkpoint's).
    pub start_step: usize,
    /// The losses of this run's steps (step `start_step + 1` first).
    pub losses: Vec<f32>,
    /// The learning rate each step used.
    pub lrs: Vec<f32>,
    pub eval: Vec<EvalResult>,
    pub step_times_ms: Vec<f64>,
    /// Mean wall time of a whole step including waiting for its batch, ms.
    pub wall_step_ms: f64,
    pub peak_bytes: u64,
    /// Whether an interrupt stopped it early.
    pub interrupted: bool,
    /// Checkpoints written (step, path).
    pub saved: Vec<(usize, PathBuf)>,
}

/// The tensors of a checkpoint: the step function's parameters then its state.
pub fn checkpoint_entries(step_fn: &Func, sig: &StepSig) -> Vec<(usize, Entry)> {
    let shape = |i: usize| step_fn.ty(step_fn.params[i].value).shape.iter().map(|&d| d as usize).collect::<Vec<_>>();
    let mut out = Vec::new();
    for &i in &sig.params {
        out.push((i, Entry { name: format!("param/{}", crate::data::arg_name(step_fn, i)), shape: shape(i) }));
    }
    for &i in &sig.state {
        out.push((i, Entry { name: format!("state/{}", step_fn.name_of(step_fn.params[i].value)), shape: shape(i) }));
    }
    out
}

/// Writes the checkpoint of `exec`'s current state at step `step` into `dir`.
pub fn save_checkpoint(
    dir: &std::path::Path,
    exec: &dyn StepExec,
    step_fn: &Func,
    sig: &StepSig,
    spec: &JobSpec,
    data: Option<&Dataset>,
    step: usize,
) -> Result<PathBuf, String> {
    let entries = checkpoint_entries(step_fn, sig);
    let meta = json!({
        "format": checkpoint::FORMAT,
        "version": 1,
        "function": sig.loss_func,
        "step_function": sig.step_func,
        "step": step,
        "rng_key": step,
        "shuffle_seed": spec.shuffle,
        "data": data.map(|d| json!({"path": d.path(), "examples": d.examples(), "batch": d.batch_size(),
            "epoch": step / d.batches_per_epoch(), "batch_in_epoch": step % d.batches_per_epoch()})),
        "schedule": spec.schedule.map(|s| json!({"kind": s.kind.name(), "lr": s.lr, "warmup": s.warmup, "total": s.total})),
        "hyper": spec.hyper.0,
        "info": spec.info,
        "tensors": entries.iter().map(|(_, e)| json!({"name": e.name, "shape": e.shape})).collect::<Vec<_>>(),
    });
    let list: Vec<Entry> = entries.iter().map(|(_, e)| Entry { name: e.name.clone(), shape: e.shape.clone() }).collect();
    checkpoint::save(dir, &meta, &list, |k| exec.arg(entries[k].0)).map_err(|e| e.0)
}

/// Opens the checkpoint of `spec.resume` for this step function and loads it
/// into `exec`: returns the step it reached and its JSON.
pub fn resume_into(exec: &mut dyn StepExec, step_fn: &Func, sig: &StepSig, dir: &std::path::Path) -> Result<(usize, Value), String> {
    let entries = checkpoint_entries(step_fn, sig);
    let list: Vec<Entry> = entries.iter().map(|(_, e)| Entry { name: e.name.clone(), shape: e.shape.clone() }).collect();
    let ck = Checkpoint::open(dir, &sig.loss_func, &list).map_err(|e| e.0)?;
    for (k, (i, e)) in entries.iter().enumerate() {
        let t = ck.tensor(k).ok_or_else(|| format!("--resume: cannot read '{}'", e.name))?;
        exec.set_arg(*i, &t).map_err(|d| d.message)?;
    }
    Ok((ck.step(), ck.meta.clone()))
}

/// Runs the job on `exec` (arguments set: parameters initialized, fixed
/// inputs in place when there is no dataset). `start_step` is where a
/// resumed run begins (0 otherwise). `stop` is polled after each step (an
/// interrupt: a last checkpoint is written when saving).
#[allow(clippy::too_many_arguments)]
pub fn run(
    exec: &mut dyn StepExec,
    sig: &StepSig,
    step_fn: &Func,
    data: Option<Arc<Dataset>>,
    mut eval: Option<&mut Evaluator>,
    spec: &JobSpec,
    start_step: usize,
    stop: &AtomicBool,
    obs: &mut dyn Observer,
) -> Result<JobResult, String> {
    spec.hyper.check(sig).map_err(|d| d.message)?;
    let mut r = JobResult { start_step, ..Default::default() };
    let last = start_step + spec.steps;
    let mut prefetch = data.as_ref().map(|d| Prefetch::new(d.clone(), spec.shuffle, start_step, spec.steps));
    let mut hyper = spec.hyper.clone();
    obs.start(start_step, last);
    let t_all = Instant::now();
    let mut saved_at = None;
    for step in start_step + 1..=last {
        if let Some(p) = prefetch.as_mut() {
            let batch = p.next_batch().ok_or("the data thread stopped")?;
            for (i, t) in &batch {
                exec.set_arg(*i, t).map_err(|d| d.message)?;
            }
        }
        if let Some(s) = &spec.schedule {
            hyper.set("lr", s.lr_at(step));
        }
        let lr = hyper.values(sig, step).iter().find(|h| h.1 == "lr").map(|h| h.2).unwrap_or(0.0);
        let t = Instant::now();
        let loss = step_once(exec, sig, step, &hyper).map_err(|d| d.message)?;
        r.step_times_ms.push(t.elapsed().as_secs_f64() * 1e3);
        r.peak_bytes = r.peak_bytes.max(exec.peak_bytes());
        r.losses.push(loss);
        r.lrs.push(lr);
        obs.step(step, last, loss, lr);
        let interrupted = stop.load(Ordering::SeqCst);
        if let (Some(ev), Some(every)) = (eval.as_deref_mut(), spec.eval_every)
            && every > 0
            && step % every == 0
            && step != last
        {
            let e = ev.run(&mut *exec, step)?;
            obs.eval(&e);
            r.eval.push(e);
        }
        let due = spec.save_every.is_some_and(|n| n > 0 && step % n == 0) || step == last || interrupted;
        if let (Some(dir), true) = (&spec.save_dir, due) {
            let p = save_checkpoint(dir, exec, step_fn, sig, spec, data.as_deref(), step)?;
            obs.saved(step, &p);
            r.saved.push((step, p));
            saved_at = Some(step);
        }
        if interrupted {
            r.interrupted = true;
            break;
        }
    }
    let _ = saved_at;
    drop(prefetch.take());
    let n = r.losses.len().max(1) as f64;
    r.wall_step_ms = t_all.elapsed().as_secs_f64() * 1e3 / n;
    if let Some(ev) = eval.as_deref_mut() {
        let e = ev.run(&mut *exec, start_step + r.losses.len())?;
        obs.eval(&e);
        r.eval.push(e);
    }
    obs.finish();
    Ok(r)
}

/// Sets the step function's initial arguments on `exec` one at a time:
/// `input(i)` gives the loss function's argument `i` (generated or read
/// right then); each host tensor is dropped once the backend has it, so no
/// second copy of the parameters is ever held on the host.
pub fn set_initial_args(
    exec: &mut dyn StepExec,
    step_fn: &Func,
    sig: &StepSig,
    n_inputs: usize,
    mut input: impl FnMut(usize) -> Result<Tensor, String>,
) -> Result<(), String> {
    for i in 0..step_fn.params.len() {
        let given = if i < n_inputs && !sig.state.contains(&i) && sig.step_key != Some(i) { Some(input(i)?) } else { None };
        let t = match given {
            Some(t) => t,
            None => ckopt_passes::train::initial_arg(step_fn, sig, None, i),
        };
        exec.set_arg(i, &t).map_err(|d| d.message)?;
    }
    Ok(())
}
