//! The native module `ckopt._ckopt` of the Python package `ckopt`: thin
//! PyO3 bindings of the embedding API (crate `ckopt`, `api/`). The logic
//! lives in the Rust crates; here arguments are extracted to owned values,
//! the GIL is released while ckopt works (`errors::detached`), arrays are
//! converted in one module (`convert`), and errors are mapped in one
//! function (`errors::to_py`).
//!
//! - `module`: `Module`, `parse`, `load`, `gen`, `import_onnx`.
//! - `compiled`: `Compiled` (`Module.compile`), `run` on arrays.
//! - `trainer`: `Trainer`, a step per call on a new batch.
//! - `errors`: the exception classes and `Diagnostic`.

mod compiled;
mod convert;
mod errors;
mod module;
mod trainer;

use pyo3::prelude::*;

/// A JSON text (one of ckopt's serializers' output) as Python objects.
pub(crate) fn json_value<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// Panics inside the guard every call runs under (the tests check that a
/// panic becomes `ckopt.InternalError`, never a `PanicException`).
#[pyfunction]
fn _panic_for_tests(py: Python<'_>) -> PyResult<()> {
    errors::detached(py, || -> Result<(), errors::Failure> { panic!("the test hook panicked") })
}

#[pymodule(gil_used = false)]
fn _ckopt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    errors::register(m)?;
    m.add_class::<module::Module>()?;
    m.add_class::<compiled::Compiled>()?;
    m.add_class::<trainer::Trainer>()?;
    m.add_function(wrap_pyfunction!(module::parse, m)?)?;
    m.add_function(wrap_pyfunction!(module::load, m)?)?;
    m.add_function(wrap_pyfunction!(module::gen_model, m)?)?;
    m.add_function(wrap_pyfunction!(module::import_onnx, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_tests, m)?)?;
    Ok(())
}
