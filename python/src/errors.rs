//! The exceptions of `ckopt` and the one place where Rust errors become them.
//!
//! `ckopt.Error` is the base of every error ckopt raises itself. Errors
//! that carry diagnostics are `ckopt.DiagnosticError`s (one subclass per
//! `ckopt::ErrorKind`), whose `str()` is the text the command-line tools
//! print (`FILE:LINE:COL: error: MESSAGE`, the source line and a caret)
//! and whose `.diagnostics` lists them as `ckopt.Diagnostic`s. A file that
//! cannot be read is Python's own `OSError` (`FileNotFoundError`, ...), as
//! `open()` raises it. A Rust panic never unwinds into Python: `guard`
//! turns it into `ckopt.InternalError` (a bug to report, not an input
//! error; the tests accept none).

use ckopt::{Diag, ErrorKind};
use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::PyList;

create_exception!(ckopt, Error, PyException, "Base class of the errors ckopt raises.");
create_exception!(
    ckopt,
    DiagnosticError,
    Error,
    "An error with located diagnostics: `str(e)` is the tools' rendered text, `e.diagnostics` the list of `Diagnostic`s."
);
create_exception!(ckopt, ParseError, DiagnosticError, "ck IR text that does not parse or verify.");
create_exception!(
    ckopt,
    PassError,
    DiagnosticError,
    "A pass pipeline that does not parse, a pass that fails (an infeasible remat budget, ...), or a pass whose output does not verify."
);
create_exception!(ckopt, CompileError, DiagnosticError, "Planning or compiling a function for a target failed, or there is no such function.");
create_exception!(ckopt, RunError, DiagnosticError, "Running a step failed: a backend error, a non-finite training loss.");
create_exception!(ckopt, ArgumentError, DiagnosticError, "Arguments that do not match the function, found by the Rust side.");
create_exception!(ckopt, OnnxError, DiagnosticError, "An ONNX model or a safetensors file that cannot be imported or read.");
create_exception!(ckopt, GenError, DiagnosticError, "A model or size option that `ckopt-gen` does not have.");
create_exception!(ckopt, InternalError, Error, "A bug in ckopt (a Rust panic, caught): please report it with the input that caused it.");

/// One diagnostic: severity (`"error"`, `"warning"`, `"note"`,
/// `"remark"`), file, 1-based line and column (`None` when unknown),
/// message, and the notes attached to it.
#[pyclass(frozen, eq, module = "ckopt")]
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    /// `"error"`, `"warning"`, `"note"` or `"remark"`.
    #[pyo3(get)]
    severity: String,
    /// The file the diagnostic points into (`None` when unknown).
    #[pyo3(get)]
    file: Option<String>,
    /// 1-based line (`None` when unknown).
    #[pyo3(get)]
    line: Option<u32>,
    /// 1-based column, in bytes as MLIR counts them (`None` when unknown).
    #[pyo3(get)]
    column: Option<u32>,
    /// The message, without location or severity.
    #[pyo3(get)]
    message: String,
    /// Notes attached to it (`Diagnostic`s of severity `"note"`).
    #[pyo3(get)]
    notes: Vec<Diagnostic>,
}

#[pymethods]
impl Diagnostic {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let s = |v: &str| -> PyResult<String> { Ok(pyo3::types::PyString::new(py, v).repr()?.to_string()) };
        let opt = |v: &Option<String>| -> PyResult<String> { v.as_deref().map_or(Ok("None".to_string()), s) };
        let num = |v: Option<u32>| v.map_or("None".to_string(), |n| n.to_string());
        Ok(format!(
            "Diagnostic(severity={}, file={}, line={}, column={}, message={})",
            s(&self.severity)?,
            opt(&self.file)?,
            num(self.line),
            num(self.column),
            s(&self.message)?
        ))
    }
    /// `FILE:LINE:COL: SEVERITY: MESSAGE`, as the first line the tools print.
    fn __str__(&self) -> String {
        let at = match (&self.file, self.line, self.column) {
            (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}"),
            (Some(f), _, _) => f.clone(),
            _ => "<unknown>".into(),
        };
        format!("{at}: {}: {}", self.severity, self.message)
    }
}

impl Diagnostic {
    fn from_diag(d: &Diag) -> Diagnostic {
        let known = d.loc.is_known();
        let file = d.loc.file.to_string();
        Diagnostic {
            severity: d.severity.name().to_string(),
            file: (file != "<unknown>").then_some(file),
            line: known.then_some(d.loc.line),
            column: known.then_some(d.loc.col),
            message: d.message.clone(),
            notes: d.notes.iter().map(Diagnostic::from_diag).collect(),
        }
    }
}

/// What a guarded call can fail with.
pub enum Failure {
    Api(ckopt::Error),
    /// An exception raised while the call ran (Ctrl-C seen between passes).
    Py(PyErr),
    /// A caught panic's message.
    Panic(String),
}

impl From<ckopt::Error> for Failure {
    fn from(e: ckopt::Error) -> Failure {
        Failure::Api(e)
    }
}

/// Runs `f`, catching a panic (the last line of defence: panics on user
/// input are bugs fixed in the Rust crates).
pub fn guard<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let m = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Err(Failure::Panic(m))
        }
    }
}

/// The one mapping from a failure to the Python exception.
pub fn to_py(py: Python<'_>, f: Failure) -> PyErr {
    match f {
        Failure::Py(e) => e,
        Failure::Panic(m) => InternalError::new_err(format!("internal error in ckopt (please report it): {m}")),
        Failure::Api(e) => {
            // An unlocated diagnostic renders as `<unknown>: error: ...`;
            // the tools prefix those with their name, Python with nothing.
            let text = e.render().trim_end().lines().map(|l| l.strip_prefix("<unknown>: ").unwrap_or(l)).collect::<Vec<_>>().join("\n");
            let err = match e.kind {
                ErrorKind::Parse => ParseError::new_err(text),
                ErrorKind::Pipeline | ErrorKind::Pass => PassError::new_err(text),
                ErrorKind::Compile => CompileError::new_err(text),
                ErrorKind::Run => RunError::new_err(text),
                ErrorKind::Input => ArgumentError::new_err(text),
                ErrorKind::Import => OnnxError::new_err(text),
                ErrorKind::Gen => GenError::new_err(text),
                ErrorKind::Io => return pyo3::exceptions::PyOSError::new_err(text),
                ErrorKind::Interrupted => return PyKeyboardInterrupt::new_err(text),
            };
            let diags: Vec<Diagnostic> = e.diags.0.iter().map(Diagnostic::from_diag).collect();
            if let Ok(list) = PyList::new(py, diags) {
                let _ = err.value(py).setattr("diagnostics", list);
            }
            err
        }
    }
}

/// `guard` with the GIL released, then `to_py`: how every long call runs.
pub fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure> + Send) -> PyResult<T> {
    py.detach(|| guard(f)).map_err(|e| to_py(py, e))
}

/// `guard` and `to_py` for a short call that keeps the GIL.
pub fn attached<T>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure>) -> PyResult<T> {
    guard(f).map_err(|e| to_py(py, e))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<Diagnostic>()?;
    m.add("Error", py.get_type::<Error>())?;
    m.add("DiagnosticError", py.get_type::<DiagnosticError>())?;
    m.add("ParseError", py.get_type::<ParseError>())?;
    m.add("PassError", py.get_type::<PassError>())?;
    m.add("CompileError", py.get_type::<CompileError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add("ArgumentError", py.get_type::<ArgumentError>())?;
    m.add("OnnxError", py.get_type::<OnnxError>())?;
    m.add("GenError", py.get_type::<GenError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    Ok(())
}
