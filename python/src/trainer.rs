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
/// the `sgd` pass when the module has none; an existing one keeps its own
/// learning rate). `target`: `"cpu"` (default), `"interp"` or `"cuda"`.
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
    #[pyo3(signature = (module, func, target="cpu", optimizer="sgd", lr=0.01, params=None))]
    fn new(
        py: Python<'_>,
        module: &Module,
        func: &str,
        target: &str,
        optimizer: &str,
        lr: f32,
        params: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Trainer> {
        let t = parse_target(target)?;
        if optimizer != "sgd" {
            return Err(PyValueError::new_err(format!("optimizer must be 'sgd' (the one ckopt has), got {optimizer:?}")));
        }
        if !lr.is_finite() || lr <= 0.0 {
            return Err(PyValueError::new_err(format!("lr must be a positive number, got {lr}")));
        }
        let src = module.src();
        let mut tr = detached(py, || ckopt::Trainer::new(&module.m, func, t, lr).map_err(api(src)))?;
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
