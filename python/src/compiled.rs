//! `ckopt.Compiled`: one function compiled for a target, run with arrays.

use crate::convert::{ArgInfo, arg_infos, raw_array, raw_bytes, tensor_to_py, tensors_from_args};
use crate::errors::{Failure, attached, detached};
use crate::json_value;
use crate::module::api;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::sync::{Arc, Mutex, MutexGuard};

/// `"interp"`, `"cpu"` or `"cuda"`.
pub fn parse_target(t: &str) -> PyResult<ckopt::Target> {
    match t {
        "interp" => Ok(ckopt::Target::Interp),
        "cpu" => Ok(ckopt::Target::Cpu),
        "cuda" => Ok(ckopt::Target::Cuda),
        _ => Err(PyValueError::new_err(format!("target must be 'interp', 'cpu' or 'cuda', got {t:?}"))),
    }
}

/// The lock, also after a panic in another call (the state is then as
/// that call left it; the panic itself became `InternalError`).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A function compiled for a target (`Module.compile`): `run(*arrays)`
/// runs one step on numpy arrays (or anything with `__array__` /
/// `__dlpack__`), one per argument, and returns one new array per result.
/// Calls from several threads take turns; the GIL is released while a
/// step runs.
#[pyclass(frozen, module = "ckopt")]
pub struct Compiled {
    inner: Mutex<ckopt::Compiled>,
    args: Vec<ArgInfo>,
    results: usize,
    result_types: Vec<ckopt::TensorType>,
    func: String,
    target: String,
    source: Option<Arc<String>>,
}

impl Compiled {
    pub fn new(c: ckopt::Compiled, target: &str, source: Option<Arc<String>>) -> Compiled {
        let f = c.func();
        let args = arg_infos(f, 0..f.params.len());
        let results = f.result_types.len();
        let result_types = f.result_types.clone();
        let func = f.name.clone();
        Compiled { inner: Mutex::new(c), args, results, result_types, func, target: target.to_string(), source }
    }
}

#[pymethods]
impl Compiled {
    /// Runs one step: one array per argument of the function (in order),
    /// returns a list with one new float32 array per result. Wrong count →
    /// `TypeError`, wrong kind → `TypeError`, wrong shape → `ValueError`,
    /// each naming the argument and its IR type; a failing step raises
    /// `RunError`.
    #[pyo3(signature = (*arrays))]
    fn run<'py>(&self, py: Python<'py>, arrays: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyList>> {
        let inputs = tensors_from_args(arrays, &self.args, &format!("@{}", self.func))?;
        let src = self.source.as_deref().map(|s| s.as_str());
        let outputs = detached(py, || lock(&self.inner).run(&inputs).map_err(api(src)))?;
        let arrays: Vec<Bound<'py, PyAny>> = outputs.iter().map(|t| tensor_to_py(py, t)).collect::<PyResult<_>>()?;
        PyList::new(py, arrays)
    }

    /// Runs one step on the arrays' own memory: `inputs` one numpy array
    /// per argument, `outputs` one writable numpy array per result, each
    /// C-contiguous with exactly the IR shape and an element type of the
    /// IR type's size (bf16 as 2-byte words). On the cpu target the inputs
    /// are read in place (nothing is copied into the executor) and each
    /// result is written once into its output; other targets convert. A
    /// CPU torch tensor `t` gives such an array as `t.numpy()` (bf16:
    /// `t.view(torch.int16).numpy()`), sharing its memory. Outputs may not
    /// overlap each other or an input. `arena` (cpu): a writable 1-d uint8
    /// array of at least `arena_bytes` bytes, 64-byte aligned, that holds
    /// the step's values instead of the executor's own arena (so functions
    /// that never run at once can share one buffer); it may not overlap an
    /// input or output.
    #[pyo3(signature = (inputs, outputs, arena=None))]
    fn run_into(&self, py: Python<'_>, inputs: &Bound<'_, PyAny>, outputs: &Bound<'_, PyAny>, arena: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let ins: Vec<Bound<'_, PyAny>> = inputs.try_iter()?.collect::<PyResult<_>>()?;
        let outs: Vec<Bound<'_, PyAny>> = outputs.try_iter()?.collect::<PyResult<_>>()?;
        let call = format!("@{}", self.func);
        if ins.len() != self.args.len() || outs.len() != self.results {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "{call}.run_into takes {} inputs and {} outputs, got {} and {}",
                self.args.len(),
                self.results,
                ins.len(),
                outs.len()
            )));
        }
        let a: Vec<(usize, usize)> = ins
            .iter()
            .zip(&self.args)
            .map(|(o, info)| raw_array(o, &info.ty, &format!("argument {} (%{}) of {call}", info.pos, info.name), false))
            .collect::<PyResult<_>>()?;
        let r: Vec<(usize, usize)> = outs
            .iter()
            .zip(&self.result_types)
            .enumerate()
            .map(|(j, (o, ty))| raw_array(o, ty, &format!("result {j} of {call}"), true))
            .collect::<PyResult<_>>()?;
        let overlaps = |x: (usize, usize), y: (usize, usize)| x.1 > 0 && y.1 > 0 && x.0 < y.0 + y.1 && y.0 < x.0 + x.1;
        for (j, &o) in r.iter().enumerate() {
            if r.iter().enumerate().any(|(k, &p)| k != j && overlaps(o, p)) || a.iter().any(|&p| overlaps(o, p)) {
                return Err(PyValueError::new_err(format!("result {j} of {call}: its output array overlaps another output or an input")));
            }
        }
        let ar = match arena {
            None => None,
            Some(obj) => {
                let ab = raw_bytes(obj, &format!("the arena of {call}"))?;
                if r.iter().chain(&a).any(|&p| overlaps(ab, p)) {
                    return Err(PyValueError::new_err(format!("the arena of {call} overlaps an input or an output")));
                }
                Some(ab)
            }
        };
        let src = self.source.as_deref().map(|s| s.as_str());
        detached(py, || {
            // SAFETY: each (address, length) is the memory of a live ndarray held by
            // `inputs`/`outputs` for this call; outputs are writable and overlap nothing.
            let args: Vec<&[u8]> = a.iter().map(|&(p, n)| if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(p as *const u8, n) } }).collect();
            let mut res: Vec<&mut [u8]> =
                r.iter().map(|&(p, n)| if n == 0 { &mut [][..] } else { unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) } }).collect();
            // SAFETY: as above, for the arena (checked writable and disjoint).
            let arena = ar.map(|(p, n)| unsafe { std::slice::from_raw_parts_mut(p as *mut u8, n) });
            lock(&self.inner).run_borrowed(&args, &mut res, arena).map_err(api(src))
        })?;
        Ok(())
    }

    /// What the last `run` measured, as a dict with the keys of
    /// `ckopt-run --report` for the backend (`backend`, `function`,
    /// `step_ms`, `compile_ms`, `arena_bytes`, `arena_allocated_bytes`,
    /// `input_bytes`, `kernels`, ...); `None` before the first run.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let rep = lock(&self.inner).report();
        match rep {
            None => Ok(None),
            Some(r) => json_value(py, &r.to_json().to_string()).map(Some),
        }
    }

    /// The memory report (dict, the `ckopt-opt --memory-report` keys) of
    /// the function as compiled (planned for cpu/cuda).
    fn memory_report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let r = lock(&self.inner).memory_report();
        json_value(py, &ckopt::reports_json(&[r]))?.get_item(0)
    }

    /// Deterministic arguments (`ckopt-run --seed`): uniform in [-1, 1),
    /// `{ck.param}` arguments scaled by 1/sqrt(fan_in).
    #[pyo3(signature = (seed=0))]
    fn random_inputs<'py>(&self, py: Python<'py>, seed: u64) -> PyResult<Bound<'py, PyList>> {
        let ts = attached(py, || lock(&self.inner).random_inputs(seed).map_err(Failure::from))?;
        let arrays: Vec<Bound<'py, PyAny>> = ts.iter().map(|t| tensor_to_py(py, t)).collect::<PyResult<_>>()?;
        PyList::new(py, arrays)
    }

    /// The arguments as `(name, shape, dtype)` tuples (`("x", (32, 64),
    /// "f32")`), in order.
    #[getter]
    fn arguments(&self) -> Vec<(String, Vec<u64>, &'static str)> {
        self.args.iter().map(|a| (a.name.clone(), a.ty.shape.clone(), a.ty.dtype.name())).collect()
    }

    /// Bytes of the arena the function was planned into (the `arena` of
    /// `run_into` needs at least this many; 0 on the interpreter).
    #[getter]
    fn arena_bytes(&self) -> u64 {
        lock(&self.inner).arena_bytes()
    }

    /// The results as `(shape, dtype)` tuples (`((32, 64), "f32")`), in order.
    #[getter]
    fn results(&self) -> Vec<(Vec<u64>, &'static str)> {
        self.result_types.iter().map(|t| (t.shape.clone(), t.dtype.name())).collect()
    }

    /// The function's name.
    #[getter]
    fn function(&self) -> String {
        self.func.clone()
    }

    /// `"interp"`, `"cpu"` or `"cuda"`.
    #[getter]
    fn target(&self) -> String {
        self.target.clone()
    }

    fn __repr__(&self) -> String {
        format!("<ckopt.Compiled @{} for {}: {} arguments, {} results>", self.func, self.target, self.args.len(), self.results)
    }
}
