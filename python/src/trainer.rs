//! `ckopt.Trainer`: training steps on a new batch each call, parameters
//! resident in the backend (`ckopt::Trainer`, the driver of
//! `ckopt-run --train`).

use crate::compiled::{lock, parse_target};
use crate::convert::{ArgInfo, arg_infos, tensor_from_py, tensor_to_py, tensors_from_args};
use crate::errors::{Failure, detached};
use crate::json_value;
use crate::module::{Module, api};
use pyo3::exceptions::{PyKeyError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMapping, PyTuple};
use std::sync::{Arc, Mutex};

/// Trains `func` of `module` (a function whose first result is a scalar
/// loss) through its step function `@FUNC_step` (built with autodiff and
/// the `sgd` or `adamw` pass when the module has none). `optimizer`:
/// `"sgd"` (with `momentum`) or `"adamw"` (with `betas`, `eps`,
/// `weight_decay`); `lr` and the others are inputs of the step given every
/// step, also to a module's own step function (`None`: the step's
/// default). `target`: `"cpu"` (default), `"interp"` or `"cuda"`.
/// `params`: the initial `{ck.param}` values by name (a dict of arrays,
/// e.g. what `import_onnx` returns); `None` draws them as `ckopt-run
/// --seed 0` does. `step(*batch)` runs one step on a new batch: the
/// function's other arguments, in order (`batch_arguments`).
#[pyclass(frozen, module = "ckopt")]
pub struct Trainer {
    inner: Mutex<ckopt::Trainer>,
    batch: Vec<ArgInfo>,
    /// (name, argument index) of the trained arguments.
    params: Vec<(String, usize)>,
    func: String,
    step_func: String,
    target: String,
    optimizer: String,
    lr: f32,
    source: Option<Arc<String>>,
}

#[pymethods]
impl Trainer {
    #[new]
    #[pyo3(signature = (module, func, target="cpu", optimizer="sgd", lr=None, params=None, momentum=None, betas=None, eps=None, weight_decay=None, clip_norm=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        module: &Module,
        func: &str,
        target: &str,
        optimizer: &str,
        lr: Option<f32>,
        params: Option<&Bound<'_, PyAny>>,
        momentum: Option<f32>,
        betas: Option<(f32, f32)>,
        eps: Option<f32>,
        weight_decay: Option<f32>,
        clip_norm: Option<f32>,
    ) -> PyResult<Trainer> {
        let t = parse_target(target)?;
        if let Some(lr) = lr
            && (!lr.is_finite() || lr <= 0.0)
        {
            return Err(PyValueError::new_err(format!("lr must be a positive number, got {lr}")));
        }
        let mut hyper = ckopt::Hyper::default();
        for (name, v) in [("lr", lr), ("momentum", momentum), ("beta1", betas.map(|b| b.0)), ("beta2", betas.map(|b| b.1)), ("eps", eps), ("weight_decay", weight_decay), ("clip_norm", clip_norm)] {
            if let Some(x) = v {
                hyper.set(name, x);
            }
        }
        let rule = match optimizer {
            "sgd" => {
                if betas.is_some() || eps.is_some() || weight_decay.is_some() {
                    return Err(PyValueError::new_err("betas, eps and weight_decay are AdamW's: optimizer=\"adamw\""));
                }
                let mut o = ckopt::SgdOptions::default();
                o.lr = lr.unwrap_or(o.lr);
                o.momentum = momentum.unwrap_or(0.0);
                o.clip_norm = clip_norm.unwrap_or(0.0);
                ckopt::StepRule::Sgd(o)
            }
            "adamw" => {
                if momentum.is_some() {
                    return Err(PyValueError::new_err("momentum is SGD's; AdamW takes betas"));
                }
                let mut o = ckopt::AdamWOptions::default();
                o.lr = lr.unwrap_or(o.lr);
                if let Some((b1, b2)) = betas {
                    (o.beta1, o.beta2) = (b1, b2);
                }
                o.eps = eps.unwrap_or(o.eps);
                o.weight_decay = weight_decay.unwrap_or(o.weight_decay);
                o.clip_norm = clip_norm.unwrap_or(0.0);
                ckopt::StepRule::AdamW(o)
            }
            other => return Err(PyValueError::new_err(format!("optimizer must be 'sgd' or 'adamw', got {other:?}"))),
        };
        let src = module.src();
        let mut tr = detached(py, || ckopt::Trainer::with_rule(&module.m, func, t, &rule, hyper).map_err(api(src)))?;
        let lr = tr.hyperparameters().iter().find(|h| h.0 == "lr").map(|h| h.1).unwrap_or(0.0);
        let f = tr.loss_function().clone();
        let params_idx = tr.param_indices();
        let names: Vec<(String, usize)> = params_idx.iter().map(|&i| (ckopt::arg_name(&f, i), i)).collect();
        let batch = arg_infos(&f, tr.batch_indices());
        let mut args = crate::errors::attached(py, || tr.random_inputs(0).map_err(Failure::from))?;
        if let Some(p) = params {
            let map = p.cast::<PyMapping>().map_err(|_| {
                PyTypeError::new_err(format!("params must be a dict of arrays by parameter name, got {}", p.get_type().name().map(|n| n.to_string()).unwrap_or_default()))
            })?;
            let infos = arg_infos(&f, params_idx.iter().copied());
            let mut missing = Vec::new();
            for ((name, i), info) in names.iter().zip(&infos) {
                match map.get_item(name.as_str()) {
                    Ok(v) => args[*i] = tensor_from_py(&v, info)?,
                    Err(e) if e.is_instance_of::<PyKeyError>(py) => missing.push(name.clone()),
                    Err(e) => return Err(e),
                }
            }
            if !missing.is_empty() {
                return Err(PyKeyError::new_err(format!("params has no value for {} of @{}", quote(&missing), f.name)));
            }
            let known: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
            let mut extra = Vec::new();
            for k in map.keys()?.iter() {
                let k: String = k.str()?.to_string();
                if !known.contains(&k.as_str()) {
                    extra.push(k);
                }
            }
            if !extra.is_empty() {
                return Err(PyKeyError::new_err(format!(
                    "params has {} that @{} does not train (its parameters: {})",
                    quote(&extra),
                    f.name,
                    known.join(", ")
                )));
            }
        }
        detached(py, || tr.load(&args).map_err(api(src)))?;
        let step_func = tr.step_function().name.clone();
        Ok(Trainer {
            inner: Mutex::new(tr),
            batch,
            params: names,
            func: f.name.clone(),
            step_func,
            target: target.to_string(),
            optimizer: optimizer.to_string(),
            lr,
            source: module.source.clone(),
        })
    }

    /// One training step on `batch` (the function's non-parameter
    /// arguments, in order: `batch_arguments`), which replaces the previous
    /// batch in the backend; returns the loss at the parameters before the
    /// update, as a float. The GIL is released while the step runs; a
    /// pending Ctrl-C raises `KeyboardInterrupt` before a step starts.
    /// Raises `RunError` (e.g. a non-finite loss), `TypeError`/`ValueError`
    /// for a batch that does not match.
    #[pyo3(signature = (*batch))]
    fn step(&self, py: Python<'_>, batch: &Bound<'_, PyTuple>) -> PyResult<f64> {
        py.check_signals()?;
        let ts = tensors_from_args(batch, &self.batch, "Trainer.step")?;
        let src = self.source.as_deref().map(|s| s.as_str());
        let loss = detached(py, || lock(&self.inner).step_with(&ts).map_err(api(src)))?;
        Ok(f64::from(loss))
    }

    /// The trained parameters now, by name (a new dict of new arrays, read
    /// back from the backend).
    #[getter]
    fn params<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let args = detached(py, || Ok(lock(&self.inner).args()))?;
        let d = PyDict::new(py);
        for (name, i) in &self.params {
            if let Some(t) = args.get(*i) {
                d.set_item(name, tensor_to_py(py, t)?)?;
            }
        }
        Ok(d)
    }

    /// The names of the arguments `step` takes, in order.
    #[getter]
    fn batch_arguments(&self) -> Vec<String> {
        self.batch.iter().map(|a| a.name.clone()).collect()
    }

    /// Steps run so far.
    #[getter]
    fn steps(&self) -> usize {
        lock(&self.inner).steps()
    }

    /// The step function's name (`"mlp_step"`).
    #[getter]
    fn step_function(&self) -> String {
        self.step_func.clone()
    }

    /// What the last step measured (dict: `function`, `step_ms`, `steps`,
    /// `arena_allocated_bytes`, ...), `None` before the first step.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match lock(&self.inner).report() {
            None => Ok(None),
            Some(r) => json_value(py, &r.to_json().to_string()).map(Some),
        }
    }

    /// Trains on a safetensors dataset (one array per batch argument, named
    /// as it, examples along axis 0; checked before any step): `steps`
    /// steps, or `epochs` passes, batches shuffled per epoch by
    /// `shuffle_seed`; `eval_data` evaluated every `eval_every` steps and at
    /// the end; checkpoints into `save` every `save_every` steps and at the
    /// end; `schedule`: `"constant"` or `"cosine"` (decaying to 0 at the
    /// last step) after `warmup` steps. Returns a dict: `losses`, `lrs`,
    /// `eval` (`[{"step", "loss", "accuracy"?}]`), `start_step`.
    #[pyo3(signature = (data, steps=None, epochs=None, shuffle_seed=0, eval_data=None, eval_every=None, schedule=None, warmup=0, save=None, save_every=None))]
    #[allow(clippy::too_many_arguments)]
    fn fit<'py>(
        &self,
        py: Python<'py>,
        data: &str,
        steps: Option<usize>,
        epochs: Option<usize>,
        shuffle_seed: Option<u64>,
        eval_data: Option<&str>,
        eval_every: Option<usize>,
        schedule: Option<&str>,
        warmup: usize,
        save: Option<&str>,
        save_every: Option<usize>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let src = self.source.as_deref().map(|s| s.as_str());
        let r = detached(py, || {
            let mut tr = lock(&self.inner);
            let n = match (steps, epochs) {
                (Some(s), _) => s,
                (None, Some(e)) => {
                    let f = tr.loss_function().clone();
                    let d = ckopt::Dataset::open(data, &f, &tr.param_indices()).map_err(|e| Failure::from(ckopt::Error::input(e.to_string())))?;
                    e * d.batches_per_epoch()
                }
                (None, None) => 10,
            };
            let kind = match schedule {
                None => None,
                Some(k) => Some(k.parse::<ckopt::ScheduleKind>().map_err(|m| Failure::from(ckopt::Error::input(m)))?),
            };
            if kind.is_some() || warmup > 0 {
                let lr = tr.hyperparameters().iter().find(|h| h.0 == "lr").map(|h| h.1).unwrap_or(0.0);
                let start = tr.steps();
                tr.set_schedule(Some(ckopt::Schedule { kind: kind.unwrap_or(ckopt::ScheduleKind::Constant), lr, warmup, total: start + n }));
            }
            let r = tr.fit(data, n, shuffle_seed, eval_data, eval_every, save.map(|s| (s, save_every))).map_err(api(src));
            tr.set_schedule(None);
            r
        })?;
        let d = PyDict::new(py);
        d.set_item("losses", r.losses.iter().map(|&x| f64::from(x)).collect::<Vec<_>>())?;
        d.set_item("lrs", r.lrs.iter().map(|&x| f64::from(x)).collect::<Vec<_>>())?;
        d.set_item("start_step", r.start_step)?;
        let ev = pyo3::types::PyList::empty(py);
        for e in &r.eval {
            let x = PyDict::new(py);
            x.set_item("step", e.step)?;
            x.set_item("loss", e.loss)?;
            if let Some(a) = e.accuracy {
                x.set_item("accuracy", a)?;
            }
            x.set_item("examples", e.examples)?;
            ev.append(x)?;
        }
        d.set_item("eval", ev)?;
        Ok(d)
    }

    /// Writes a checkpoint (parameters, optimizer state, step) into the
    /// directory `path`, atomically.
    fn save(&self, py: Python<'_>, path: &str) -> PyResult<()> {
        let src = self.source.as_deref().map(|s| s.as_str());
        detached(py, || lock(&self.inner).save(path).map_err(api(src)))
    }

    /// Loads the checkpoint in the directory `path` (refused whole when it
    /// is not one of this model); the following steps continue exactly.
    /// Returns the step it reached.
    fn resume(&self, py: Python<'_>, path: &str) -> PyResult<usize> {
        let src = self.source.as_deref().map(|s| s.as_str());
        detached(py, || lock(&self.inner).resume(path).map_err(api(src)))
    }

    /// The value each hyperparameter input of the step gets at the next
    /// step (dict: `lr`, ...).
    #[getter]
    fn hyperparameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (n, v) in lock(&self.inner).hyperparameters() {
            d.set_item(n, f64::from(v))?;
        }
        Ok(d)
    }

    /// The learning rate of the next step (settable: the following steps use the new one).
    #[getter]
    fn lr(&self) -> f64 {
        lock(&self.inner).hyperparameters().iter().find(|h| h.0 == "lr").map(|h| f64::from(h.1)).unwrap_or(0.0)
    }

    #[setter]
    fn set_lr(&self, lr: f32) -> PyResult<()> {
        lock(&self.inner).set_hyper("lr", lr).map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// The memory report (dict) of the step function as compiled.
    fn memory_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = lock(&self.inner).memory_report();
        json_value(py, &ckopt::reports_json(&[r]))?.get_item(0)
    }

    fn __repr__(&self) -> String {
        format!(
            "<ckopt.Trainer @{} on {}: {} lr={}, {} parameters, batch ({}), {} steps>",
            self.func,
            self.target,
            self.optimizer,
            self.lr,
            self.params.len(),
            self.batch.iter().map(|a| format!("%{}", a.name)).collect::<Vec<_>>().join(", "),
            lock(&self.inner).steps()
        )
    }
}

fn quote(names: &[String]) -> String {
    names.iter().map(|n| format!("'{n}'")).collect::<Vec<_>>().join(", ")
}
