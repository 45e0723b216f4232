//! Arrays in and out: the one module where Python objects become
//! `ckopt::Tensor`s and back, so element types are added here only.
//!
//! In: a `numpy.ndarray`, or anything numpy can take without guessing: an
//! object with `__dlpack__` (a CPU torch tensor, a JAX array; read through
//! `numpy.from_dlpack`, no copy) or `__array__`, a list, tuple or Python
//! number. By the argument's element type:
//!
//! | IR type | accepted dtypes | read as |
//! |---|---|---|
//! | `f32`, `bf16`, `f16` | any float (float16/32/64, big-endian) | float32 (bf16/f16 then rounded to nearest even) |
//! | `i64`, `i32` | signed or unsigned integers that fit int64 safely | int64 (an `i32` value outside its range is a `ValueError`) |
//! | `i1` | bool, or integers 0 and 1 | 0/1 |
//!
//! A float32 C-contiguous array for an `f32` argument is read in place (its
//! buffer is copied once, into the tensor the backend takes); other dtypes
//! and non-contiguous arrays are converted with
//! `numpy.ascontiguousarray(..., dtype=...)` first. Any other dtype kind
//! (float for an integer argument, integers for a float one, complex,
//! object, strings) is a `TypeError`; a wrong shape is a `ValueError`; a
//! wrong count a `TypeError` (as Python says for a call with the wrong
//! number of arguments). Every message names the argument (position and IR
//! name) and the type the function expects.
//!
//! Out: new C-contiguous arrays allocated by numpy (they own their memory:
//! `base is None`), one per result, shaped as the IR type (a rank-0 result
//! is a 0-d array): float32 for float types (bf16/f16 values are held as
//! f32), int64 for `i64`, int32 for `i32`, bool for `i1`.

use ckopt::{Func, NamedTensor, Tensor, TensorType};
use ckopt::DType;
use numpy::{Element, IxDyn, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods};
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
    let arr = as_ndarray(obj, info)?;
    let dt = arr.dtype();
    let kind = dt.kind();
    let want_dt = info.ty.dtype;
    let (ok, expected) = match want_dt {
        d if d.is_float() => (kind == b'f', "a float"),
        DType::I1 => (matches!(kind, b'b' | b'i' | b'u'), "a bool (or 0/1 integer)"),
        _ => (matches!(kind, b'i' | b'u'), "an integer"),
    };
    if !ok {
        let got = dt.str().map(|s| s.to_string()).unwrap_or_else(|_| "?".into());
        return Err(PyTypeError::new_err(format!("{} must be {expected} array for {}, got dtype {got}", info.what(), info.ty)));
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
    let bad = |e: ckopt::ShapeError| PyValueError::new_err(format!("{} ({}): {e}", info.what(), info.ty));
    if want_dt.is_float() {
        let data = contiguous::<f32>(&arr, "float32", info)?;
        Tensor::from_floats(want, want_dt, data).map_err(bad)
    } else {
        let ints = contiguous::<i64>(&arr, "int64", info)?;
        Tensor::from_ints(want, want_dt, ints).map_err(bad)
    }
}

/// The array's elements as `T` (numpy dtype `np_name`), row-major: read in
/// place when it already is a C-contiguous array of `T`, else converted
/// (`casting="same_kind"` for floats, `"safe"` to int64: a uint64 array is
/// refused rather than wrapped).
fn contiguous<T: Element + Copy>(arr: &Bound<'_, PyUntypedArray>, np_name: &str, info: &ArgInfo) -> PyResult<Vec<T>> {
    let py = arr.py();
    let typed: Bound<'_, PyArrayDyn<T>> = match arr.cast::<PyArrayDyn<T>>() {
        Ok(a) if a.is_c_contiguous() => a.clone(),
        _ => {
            let np = py.import("numpy")?;
            let kw = pyo3::types::PyDict::new(py);
            kw.set_item("dtype", np.getattr(np_name)?)?;
            let kind = arr.dtype().kind();
            let converted = if kind == b'f' || kind == b'b' {
                arr.call_method("astype", (np.getattr(np_name)?,), None)?
            } else {
                let ckw = pyo3::types::PyDict::new(py);
                ckw.set_item("casting", "safe")?;
                arr.call_method("astype", (np.getattr(np_name)?,), Some(&ckw)).map_err(|e| {
                    PyTypeError::new_err(format!("{} ({}): {}", info.what(), info.ty, e.value(py)))
                })?
            };
            np.call_method("ascontiguousarray", (converted,), Some(&kw))?.cast_into::<PyArrayDyn<T>>().map_err(PyErr::from)?
        }
    };
    let ro = typed.try_readonly().map_err(|e| PyValueError::new_err(format!("{}: {e}", info.what())))?;
    Ok(ro.as_slice().map_err(|e| PyValueError::new_err(format!("{}: {e}", info.what())))?.to_vec())
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
    match t.dtype {
        d if d.is_float() => new_array::<f32>(py, &t.shape, &t.data),
        DType::I64 => new_array::<i64>(py, &t.shape, &t.ints),
        DType::I32 => {
            let v: Vec<i32> = t.ints.iter().map(|&x| x as i32).collect();
            new_array::<i32>(py, &t.shape, &v)
        }
        _ => {
            let v: Vec<bool> = t.ints.iter().map(|&x| x != 0).collect();
            new_array::<bool>(py, &t.shape, &v)
        }
    }
}

/// A named parameter (ONNX import, safetensors) as a numpy array.
pub fn named_to_py<'py>(py: Python<'py>, t: &NamedTensor) -> PyResult<Bound<'py, PyAny>> {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    new_array::<f32>(py, &shape, &t.data)
}

fn new_array<'py, T: Element + Copy>(py: Python<'py>, shape: &[usize], data: &[T]) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: the array is fully written below before anything reads it.
    let arr = unsafe { PyArrayDyn::<T>::new(py, IxDyn(shape), false) };
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

/// The memory of a numpy array handed to `Compiled.run_into` for an
/// argument (`writable = false`) or a result (`true`) of IR type `ty`: its
/// address and byte length. The array must be a C-contiguous, aligned,
/// native-endian `numpy.ndarray` of exactly the IR shape and an element type
/// of the IR type's size and kind: float32 (`f32`), float16 (`f16`), any
/// 2-byte integer or `ml_dtypes.bfloat16` (`bf16`, its bits), int64,
/// int32, bool (`i1`); outputs writable. Nothing is converted or copied.
pub fn raw_array(obj: &Bound<'_, PyAny>, ty: &TensorType, what: &str, writable: bool) -> PyResult<(usize, usize)> {
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| {
        PyTypeError::new_err(format!("{what} must be a numpy.ndarray (run_into reads and writes arrays in place), got {}", type_name(obj)))
    })?;
    let dt = arr.dtype();
    let (kind, size) = (dt.kind(), dt.itemsize());
    let ok = match ty.dtype {
        DType::F32 => kind == b'f' && size == 4,
        DType::F16 => kind == b'f' && size == 2,
        DType::BF16 => size == 2 && kind != b'f',
        DType::I64 => matches!(kind, b'i' | b'u') && size == 8,
        DType::I32 => matches!(kind, b'i' | b'u') && size == 4,
        DType::I1 => kind == b'b' && size == 1,
    };
    if !ok {
        return Err(PyTypeError::new_err(format!("{what} is {ty}: got a numpy array of dtype {dt}")));
    }
    let shape: Vec<u64> = arr.shape().iter().map(|&d| d as u64).collect();
    if shape != ty.shape {
        return Err(PyValueError::new_err(format!("{what} is {ty}: got shape {}", py_shape(arr.shape()))));
    }
    if !arr.is_c_contiguous() || !arr.is_aligned() || dt.is_native_byteorder() == Some(false) {
        return Err(PyValueError::new_err(format!("{what} must be C-contiguous, aligned and native-endian")));
    }
    // SAFETY: a live ndarray (held by the caller for the call).
    let (data, flags) = unsafe { ((*arr.as_array_ptr()).fields.data as usize, (*arr.as_array_ptr()).fields.flags) };
    if writable && flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(PyValueError::new_err(format!("{what} must be writable")));
    }
    Ok((data, arr.len() * size))
}

/// The memory of a writable, C-contiguous 1-d uint8 numpy array (an arena
/// for `Compiled.run_into`): address and byte length.
pub fn raw_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<(usize, usize)> {
    let bad = || PyValueError::new_err(format!("{what} must be a writable, C-contiguous 1-d uint8 numpy array"));
    let arr = obj.cast::<PyUntypedArray>().map_err(|_| bad())?;
    let dt = arr.dtype();
    if dt.kind() != b'u' || dt.itemsize() != 1 || arr.ndim() != 1 || !arr.is_c_contiguous() {
        return Err(bad());
    }
    // SAFETY: a live ndarray (held by the caller for the call).
    let (data, flags) = unsafe { ((*arr.as_array_ptr()).fields.data as usize, (*arr.as_array_ptr()).fields.flags) };
    if flags & numpy::npyffi::NPY_ARRAY_WRITEABLE == 0 {
        return Err(bad());
    }
    Ok((data, PyUntypedArrayMethods::len(arr)))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an object".into())
}
