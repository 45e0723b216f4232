//! `ckopt.Module` and the calls that make one: `parse`, `load`, `gen`,
//! `import_onnx`. A module is immutable from Python: `optimize` returns a
//! new one. It keeps the text it was parsed from (shared by the modules
//! derived from it), so errors of later calls render the source line.

use crate::compiled::{Compiled, parse_target};
use crate::convert::named_to_py;
use crate::errors::{Failure, attached, detached};
use crate::json_value;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyTuple};
use std::path::PathBuf;
use std::sync::Arc;

/// A ck IR module: functions of tensor ops (the text form is MLIR's
/// generic syntax). Make one with `ckopt.parse`, `ckopt.load`, `ckopt.gen`
/// or `ckopt.import_onnx`; `optimize` returns a new module.
#[pyclass(frozen, module = "ckopt")]
pub struct Module {
    pub(crate) m: ckopt::Module,
    pub(crate) source: Option<Arc<String>>,
}

impl Module {
    pub(crate) fn src(&self) -> Option<&str> {
        self.source.as_deref().map(|s| s.as_str())
    }
}

/// `Failure::Api` rendered against `source`.
pub(crate) fn api(source: Option<&str>) -> impl Fn(ckopt::Error) -> Failure + '_ {
    move |e| Failure::Api(e.with_source(source))
}

#[pymethods]
impl Module {
    /// The module as ck IR text (what `ckopt-opt` prints).
    #[getter]
    fn text(&self) -> String {
        ckopt::print(&self.m)
    }

    fn __str__(&self) -> String {
        ckopt::print(&self.m)
    }

    fn __repr__(&self) -> String {
        let ops: usize = self.m.funcs.iter().map(|f| f.body.iter().filter(|o| o.kind != ckopt::OpKind::Return).count()).sum();
        let n = self.m.funcs.len();
        format!("<ckopt.Module {n} function{}, {ops} ops>", if n == 1 { "" } else { "s" })
    }

    /// The names of the module's functions, in order.
    #[getter]
    fn functions(&self) -> Vec<String> {
        self.m.funcs.iter().map(|f| f.name.clone()).collect()
    }

    /// Writes the module's text to `path`.
    fn save(&self, path: PathBuf) -> PyResult<()> {
        std::fs::write(&path, ckopt::print(&self.m)).map_err(PyErr::from)
    }

    /// Runs a pass pipeline (`ckopt-opt --pass-pipeline` text, e.g.
    /// `"autodiff,inplace,remat{mode=sqrt},memplan"`) on a copy of the
    /// module, verifying after each pass, and returns the copy. The GIL is
    /// released while the passes run; Ctrl-C is checked between passes
    /// (`KeyboardInterrupt`). Raises `PassError`.
    fn optimize(&self, py: Python<'_>, pipeline: &str) -> PyResult<Module> {
        let src = self.src();
        let m = detached(py, || {
            let mut m = self.m.clone();
            let mut interrupt: Option<PyErr> = None;
            let r = ckopt::optimize_interruptible(&mut m, pipeline, || match Python::attach(|py| py.check_signals()) {
                Ok(()) => false,
                Err(e) => {
                    interrupt = Some(e);
                    true
                }
            });
            match (r, interrupt) {
                (_, Some(e)) => Err(Failure::Py(e)),
                (Err(e), None) => Err(api(src)(e)),
                (Ok(()), None) => Ok(m),
            }
        })?;
        Ok(Module { m, source: self.source.clone() })
    }

    /// The memory report of every function (`func=None`: a list, exactly
    /// the JSON array of `ckopt-opt --memory-report=-`) or of one (a dict).
    #[pyo3(signature = (func=None))]
    fn memory_report<'py>(&self, py: Python<'py>, func: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let text = attached(py, || {
            let reps = match func {
                None => ckopt::memory_report(&self.m),
                Some(f) => vec![ckopt::memory_report_of(&self.m, f).map_err(api(self.src()))?],
            };
            Ok(ckopt::reports_json(&reps))
        })?;
        let v = json_value(py, &text)?;
        if func.is_some() { v.get_item(0) } else { Ok(v) }
    }

    /// The memory/recompute curve of every gradient function (`func=None`:
    /// a list, exactly the JSON of `ckopt-opt --memory-curve=-`) or of one
    /// (a dict: `function`, `min_feasible_bytes`, `points` of `peak_bytes`,
    /// `recompute_flops`, `plan`). Take it before `remat`
    /// (after `autodiff,inplace`). The GIL is released while plans are
    /// measured. Raises `CompileError` for a function without a curve.
    #[pyo3(signature = (func=None))]
    fn memory_curve<'py>(&self, py: Python<'py>, func: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        let src = self.src();
        let text = detached(py, || {
            let curves = match func {
                None => ckopt::memory_curves(&self.m),
                Some(f) => vec![ckopt::memory_curve(&self.m, f).map_err(api(src))?],
            };
            Ok(ckopt::curves_json(&curves))
        })?;
        let v = json_value(py, &text)?;
        if func.is_some() { v.get_item(0) } else { Ok(v) }
    }

    /// The structure of function `func`, for a frontend that generates
    /// code from it (ckopt.torch's aten executor): a dict with `args`
    /// (one dict per argument: `value`, `name`, `shape`, `dtype`, `attrs`),
    /// `ops` (schedule order, without the return: `kind` without `ck.`,
    /// `operands` and `result` as value numbers, the result's `shape` and
    /// `dtype`, `attrs` by name: unit attributes are `True`, arrays lists,
    /// dense elements `{"shape", "data"}`) and `results` (value numbers).
    /// Value numbers are unique within the function. Raises `CompileError`
    /// (no such function).
    fn ops<'py>(&self, py: Python<'py>, func: &str) -> PyResult<Bound<'py, PyDict>> {
        let f = attached(py, || self.m.func(func).cloned().ok_or_else(|| {
            let names: Vec<String> = self.m.funcs.iter().map(|f| format!("@{}", f.name)).collect();
            Failure::Api(ckopt::Error::new(
                ckopt::ErrorKind::Compile,
                ckopt::Diag::error(ckopt::Loc::unknown(), format!("no function @{func} in the module (functions: {})", names.join(", "))),
                None,
            ))
        }))?;
        func_to_py(py, &f)
    }

    /// Splits the planned gradient function `grad` of the loss function
    /// `func` at its seed (`ckopt::split_gradient`): a dict with `module`
    /// (a Module of the two halves), `forward` and `backward` (their
    /// names), `n_aux` (results of `func` after the loss; the forward
    /// returns the loss, those, then the kept values), `n_kept`,
    /// `backward_args` (indices of `grad`'s arguments the backward takes,
    /// before the kept values and the loss's gradient `dy`) and `wrt` (the
    /// argument index of each gradient the backward returns). Raises
    /// `CompileError`.
    fn split_gradient<'py>(&self, py: Python<'py>, func: &str, grad: &str) -> PyResult<Bound<'py, PyDict>> {
        let s = attached(py, || ckopt::split_gradient(&self.m, func, grad).map_err(api(self.src())))?;
        let d = PyDict::new(py);
        d.set_item("module", Module { m: s.module(), source: None })?;
        d.set_item("forward", &s.forward.name)?;
        d.set_item("backward", &s.backward.name)?;
        d.set_item("n_aux", s.n_aux)?;
        d.set_item("n_kept", s.n_kept)?;
        d.set_item("backward_args", &s.backward_args)?;
        d.set_item("wrt", &s.wrt)?;
        Ok(d)
    }

    /// Compiles `func` for `target` (`"interp"`, `"cpu"` or `"cuda"`); cpu
    /// and cuda plan an unplanned function with `fuse,memplan` first. The
    /// GIL is released while it compiles. Raises `CompileError`.
    #[pyo3(signature = (func, target="cpu"))]
    fn compile(&self, py: Python<'_>, func: &str, target: &str) -> PyResult<Compiled> {
        let t = parse_target(target)?;
        let src = self.src();
        let c = detached(py, || ckopt::compile(&self.m, func, t).map_err(api(src)))?;
        Ok(Compiled::new(c, target, self.source.clone()))
    }
}

fn attr_to_py<'py>(py: Python<'py>, a: &ckopt::Attr) -> PyResult<Bound<'py, PyAny>> {
    use ckopt::Attr;
    Ok(match a {
        Attr::Unit => true.into_pyobject(py)?.to_owned().into_any(),
        Attr::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        Attr::Int(i) => i.into_pyobject(py)?.into_any(),
        Attr::F32(x) => (*x as f64).into_pyobject(py)?.into_any(),
        Attr::IntArray(v) => PyList::new(py, v)?.into_any(),
        Attr::Str(t) => t.into_pyobject(py)?.into_any(),
        Attr::Dense { shape, data } => {
            let d = PyDict::new(py);
            d.set_item("shape", shape)?;
            d.set_item("data", data)?;
            d.into_any()
        }
    })
}

fn attrs_to_py<'py>(py: Python<'py>, attrs: &ckopt::Attrs) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in attrs {
        d.set_item(k, attr_to_py(py, v)?)?;
    }
    Ok(d)
}

fn type_items(d: &Bound<'_, PyDict>, t: &ckopt::TensorType) -> PyResult<()> {
    d.set_item("shape", PyTuple::new(d.py(), &t.shape)?)?;
    d.set_item("dtype", t.dtype.name())
}

/// `Module.ops`'s dict of one function.
fn func_to_py<'py>(py: Python<'py>, f: &ckopt::Func) -> PyResult<Bound<'py, PyDict>> {
    let args = PyList::empty(py);
    for p in &f.params {
        let a = PyDict::new(py);
        a.set_item("value", p.value.0)?;
        a.set_item("name", f.name_of(p.value))?;
        type_items(&a, f.ty(p.value))?;
        a.set_item("attrs", attrs_to_py(py, &p.attrs)?)?;
        args.append(a)?;
    }
    let ops = PyList::empty(py);
    for op in f.body.iter().filter(|o| o.kind != ckopt::OpKind::Return) {
        let o = PyDict::new(py);
        o.set_item("kind", op.kind.name())?;
        o.set_item("operands", op.operands.iter().map(|v| v.0).collect::<Vec<_>>())?;
        o.set_item("result", op.result.map(|v| v.0))?;
        if let Some(r) = op.result {
            type_items(&o, f.ty(r))?;
        }
        o.set_item("attrs", attrs_to_py(py, &op.attrs)?)?;
        ops.append(o)?;
    }
    let d = PyDict::new(py);
    d.set_item("name", &f.name)?;
    d.set_item("args", args)?;
    d.set_item("ops", ops)?;
    d.set_item("results", f.returned().iter().map(|v| v.0).collect::<Vec<_>>())?;
    Ok(d)
}

/// Parses and verifies ck IR text; `filename` names it in diagnostics.
/// Raises `ParseError` (its `str()` is what `ckopt-opt` prints).
#[pyfunction]
#[pyo3(signature = (text, filename="<string>"))]
pub fn parse(py: Python<'_>, text: &str, filename: &str) -> PyResult<Module> {
    let m = detached(py, || ckopt::parse(text, filename).map_err(Failure::from))?;
    Ok(Module { m, source: Some(Arc::new(text.to_string())) })
}

/// Reads and parses a ck IR file (diagnostics name it as `path` is
/// written). Raises `OSError` (`FileNotFoundError`, ...) or `ParseError`.
#[pyfunction]
pub fn load(py: Python<'_>, path: PathBuf) -> PyResult<Module> {
    let bytes = std::fs::read(&path)?;
    let file = path.display().to_string();
    let (m, text) = detached(py, || ckopt::parse_bytes(bytes, &file).map_err(Failure::from))?;
    Ok(Module { m, source: Some(Arc::new(text)) })
}

/// A benchmark model of `ckopt-gen`: `"mlp"`, `"resmlp"`, `"lstm"`,
/// `"resnet"`, `"transformer"` or `"gpt"`; the sizes are its flags
/// (`depth=`, `width=`, `batch=`, `seq=`, `heads=`, `channels=`, `image=`,
/// `classes=`, `vocab=`), defaults as `ckopt-gen --help` says. Raises `GenError`.
#[pyfunction]
#[pyo3(signature = (model, **sizes))]
#[pyo3(name = "gen")]
pub fn gen_model(py: Python<'_>, model: &str, sizes: Option<&Bound<'_, PyDict>>) -> PyResult<Module> {
    let mut given: Vec<(String, u64)> = Vec::new();
    if let Some(d) = sizes {
        for (k, v) in d.iter() {
            let k: String = k.extract()?;
            let n: u64 = v.extract().map_err(|_| {
                PyValueError::new_err(format!("size {k}= must be a non-negative integer, got {}", v.repr().map(|r| r.to_string()).unwrap_or_default()))
            })?;
            given.push((k, n));
        }
    }
    let m = detached(py, || {
        let pairs: Vec<(&str, u64)> = given.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        ckopt::gen_model(model, &pairs).map_err(Failure::from)
    })?;
    Ok(Module { m, source: None })
}

/// Imports an ONNX model (a path, or the serialized model as `bytes`):
/// returns the module (one function: graph inputs, loss inputs, then one
/// `{ck.param}` argument per initializer) and the parameters by name
/// (`dict[str, numpy.ndarray]`, in argument order). `loss`: `"none"`,
/// `"mse"`, `"cross-entropy"` (one-hot labels) or `"cross-entropy-index"`
/// (int64 class-index labels, ignore_index -100); `batch` fixes symbolic batch dims.
/// Raises `OnnxError` (`OSError` for an unreadable file).
#[pyfunction]
#[pyo3(signature = (path_or_bytes, loss="none", batch=None))]
pub fn import_onnx<'py>(
    py: Python<'py>,
    path_or_bytes: &Bound<'py, PyAny>,
    loss: &str,
    batch: Option<u64>,
) -> PyResult<(Module, Bound<'py, PyDict>)> {
    let loss = ckopt::Loss::from_name(loss)
        .ok_or_else(|| PyValueError::new_err(format!("loss must be 'none', 'mse', 'cross-entropy' or 'cross-entropy-index', got {loss:?}")))?;
    let opts = ckopt::ImportOptions { loss, batch, name: None };
    let (bytes, file, dir) = if let Ok(b) = path_or_bytes.cast::<PyBytes>() {
        (b.as_bytes().to_vec(), "<bytes>".to_string(), None)
    } else {
        let path: PathBuf = path_or_bytes
            .extract()
            .map_err(|_| PyTypeError::new_err("import_onnx takes a path (str or os.PathLike) or the model as bytes"))?;
        (std::fs::read(&path)?, path.display().to_string(), path.parent().map(|p| p.to_path_buf()))
    };
    let (m, params) = detached(py, || ckopt::import_onnx_bytes(&bytes, &file, dir.as_deref(), opts).map_err(Failure::from))?;
    let d = PyDict::new(py);
    for p in &params {
        d.set_item(&p.name, named_to_py(py, p)?)?;
    }
    Ok((Module { m, source: None }, d))
}
