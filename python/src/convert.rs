//! Arrays in and out: the one module where Python objects become
//! `ckopt::Tensor`s and back, so element types are added here only.
//!
//! In: a `numpy.ndarray`, or anything numpy can take without guessing: an
//! object with `__dlpack__` (a CPU torch tensor, a JAX array; read through
//! `numpy.from_dlpack`, no copy) or `__array__`, a list, tuple or Python
//! number. Element types: a float32 C-contiguous array is read in place
//! (its buffer is copied once, into the tensor the backend takes); other
//! float dtypes (float16, float64, ...) and non-contiguous arrays are
//! converted with `numpy.ascontiguousarray(..., dtype=float32)` first.
//! Integer, bool, complex and object arrays are a `TypeError`; a wrong
//! shape is a `ValueError`; a wrong count a `TypeError` (as Python says for
//! a call with the wrong number of arguments). Every message names the
//! argument (position and IR name) and the type the function expects.
//!
//! Out: new C-contiguous float32 arrays allocated by numpy (they own their
//! memory: `base is None`), one per result, shaped as the IR type (a
//! rank-0 result is a 0-d array). f16/bf16 values are held as f32 by the
//! interpreter and the runtimes, so they come back as float32.

use ckopt::{Func, NamedTensor, Tensor, TensorType};
use numpy::{IxDyn, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyFloat, PyInt, PyList, PyTuple};

/// What an argument must be, for conversions and their messages.
#[derive(Clone, Debug)]
pub struct ArgInfo {
    /// Position in the function's arguments.
    pub pos: usize,
    /// The IR name without `%`.
    pub name: String,
    pub ty: TensorType,
    pub func: String,
}

impl ArgInfo {
    fn what(&self) -> String {
        format!("argument {} (%{}) of @{}", self.pos, self.name, self.func)
    }
    fn shape(&self) -> Vec<usize> {
        self.ty.shape.iter().map(|&d| d as usize).collect()
    }
}

/// The arguments `indices` of `f`.
pub fn arg_infos(f: &Func, indices: impl IntoIterator<Item = usize>) -> Vec<ArgInfo> {
    indices
        .into_iter()
        .filter_map(|i| {
            let p = f.params.get(i)?;
            Some(ArgInfo { pos: i, name: f.name_of(p.value).to_string(), ty: f.ty(p.value).clone(), func: f.name.clone() })
        })
        .collect()
}

/// `(shape)` as Python writes a tuple.
fn py_shape(s: &[usize]) -> String {
    match s {
        [d] => format!("({d},)"),
        _ => format!("({})", s.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

/// The positional arguments of a call, one per `infos` entry.
pub fn tensors_from_args(args: &Bound<'_, PyTuple>, infos: &[ArgInfo], call: &str) -> PyResult<Vec<Tensor>> {
    if args.len() != infos.len() {
        let names: Vec<String> = infos.iter().map(|a| format!("%{}: {}", a.name, a.ty)).collect();
        return Err(PyTypeError::new_err(format!(
            "{call} takes {} array{} ({}), {} given",
            infos.len(),
            if infos.len() == 1 { "" } else { "s" },
            names.join(", "),
            args.len()
        )));
    }
    args.iter().zip(infos).map(|(a, info)| tensor_from_py(&a, info)).collect()
}

/// One argument as a tensor of `info`'s type.
pub fn tensor_from_py(obj: &Bound<'_, PyAny>, info: &ArgInfo) -> PyResult<Tensor> {
    let py = obj.py();
    let arr = as_ndarray(obj, info)?;
    let dt = arr.dtype();
    let kind = dt.kind();
    if kind != b'f' {
        let got = dt.str().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        return Err(PyTypeError::new_err(format!(
            "{} must be a float array for {}, got dtype {got}",
            info.what(),
            info.ty
        )));
    }
    let want = info.shape();
    if arr.shape() != want.as_slice() {
        return Err(PyValueError::new_err(format!(
            "{} must have shape {} ({}), got {}",
            info.what(),
            py_shape(&want),
            info.ty,
            py_shape(arr.shape())
        )));
    }
    let f32s: Bound<'_, PyArrayDyn<f32>> = match arr.cast::<PyArrayDyn<f32>>() {
        Ok(a) if a.is_c_contiguous() => a.clone(),
        _ => {
            let np = py.import("numpy")?;
            let f32 = np.getattr("float32")?;
            let kw = pyo3::types::PyDict::new(py);
            kw.set_item("dtype", f32)?;
            np.call_method("ascontiguousarray", (arr,), Some(&kw))?.cast_into::<PyArrayDyn<f32>>().map_err(PyErr::from)?
        }
    };
    let ro = f32s.try_readonly().map_err(|e| PyValueError::new_err(format!("{}: {e}", info.what())))?;
    let data = ro.as_slice().map_err(|e| PyValueError::new_err(format!("{}: {e}", info.what())))?.to_vec();
    Ok(Tensor { shape: want, data })
}

/// The object as a numpy array (no copy for arrays and DLPack producers).
fn as_ndarray<'py>(obj: &Bound<'py, PyAny>, info: &ArgInfo) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let py = obj.py();
    let np = py.import("numpy")?;
    let type_name = obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
    let fail = |e: PyErr| {
        let t = PyTypeError::new_err(format!("{} ({}): cannot read a {type_name} as an array: {e}", info.what(), info.ty));
        t.set_cause(py, Some(e));
        t
    };
    let converted = if obj.hasattr("__dlpack__")? {
        match np.call_method1("from_dlpack", (obj,)) {
            Ok(a) => Ok(a),
            Err(e) if obj.hasattr("__array__")? => np.call_method1("asarray", (obj,)).map_err(|_| e),
            Err(e) => Err(e),
        }
    } else if obj.hasattr("__array__")?
        || obj.is_instance_of::<PyList>()
        || obj.is_instance_of::<PyTuple>()
        || obj.is_instance_of::<PyFloat>()
        || obj.is_instance_of::<PyInt>()
    {
        np.call_method1("asarray", (obj,))
    } else {
        return Err(PyTypeError::new_err(format!(
            "{} must be an array (numpy.ndarray, or anything with __array__ or __dlpack__) for {}, got {type_name}",
            info.what(),
            info.ty
        )));
    };
    let a = converted.map_err(fail)?;
    a.cast_into::<PyUntypedArray>().map_err(|e| fail(PyErr::from(e)))
}

/// A result as a new numpy array that owns its memory.
pub fn tensor_to_py<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyAny>> {
    array_f32(py, &t.shape, &t.data)
}

/// A named parameter (ONNX import, safetensors) as a numpy array.
pub fn named_to_py<'py>(py: Python<'py>, t: &NamedTensor) -> PyResult<Bound<'py, PyAny>> {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    array_f32(py, &shape, &t.data)
}

fn array_f32<'py>(py: Python<'py>, shape: &[usize], data: &[f32]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the array is fully written below before anything reads it.
    let arr = unsafe { PyArrayDyn::<f32>::new(py, IxDyn(shape), false) };
    {
        let mut rw = arr.try_readwrite().map_err(|e| PyValueError::new_err(e.to_string()))?;
        let dst = rw.as_slice_mut().map_err(|e| PyValueError::new_err(e.to_string()))?;
        if dst.len() != data.len() {
            return Err(PyValueError::new_err(format!("a result of shape {shape:?} has {} values", data.len())));
        }
        dst.copy_from_slice(data);
    }
    Ok(arr.into_any())
}
