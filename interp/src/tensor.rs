//! `Tensor`: a dense row-major array with a shape and an element type.
//!
//! Storage: float types (`f32`, `bf16`, `f16`) keep their elements in
//! `data` as f32 (a bf16/f16 element is stored as the f32 of the same value);
//! integer and bool types (`i64`, `i32`, `i1`) keep theirs in `ints` as i64
//! (an `i32` element lies in i32's range, an `i1` element is 0 or 1).
//!
//! Invariant (kept by every constructor): the storage of the tensor's class
//! holds exactly the product of `shape` elements (1 for rank 0) and the
//! other storage is empty. The fields are public for easy reading by tests
//! and backends; code that builds a `Tensor` by hand must keep the invariant
//! (`Tensor::new`, `Tensor::from_ints` and `Tensor::from_le_bytes` check it,
//! `Tensor::check` re-checks it).
//!
//! Bytes: `to_le_bytes`/`from_le_bytes` are the one encoding of elements in
//! memory (little-endian, `DType::bytes` per element: f32, bf16 and f16 bit
//! patterns, i64, i32, and one byte 0/1 per `i1`), used by the arena
//! interpreter and the backends' buffers.
//!
//! Allocation guard: tensors built from IR types (`zeros_of`) refuse types
//! above `MAX_TENSOR_BYTES`, so unverified or absurd inputs give an error,
//! never an allocation failure.

use ckopt_ir::{DType, Diag, TensorType};

/// The largest tensor the interpreter will allocate (4 GiB).
pub const MAX_TENSOR_BYTES: u64 = 4 << 30;

/// A dense tensor in row-major order (see the module doc for the storage).
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// Elements of a float tensor (empty for integer and bool tensors).
    pub data: Vec<f32>,
    /// Elements of an integer or bool tensor (empty for float tensors).
    pub ints: Vec<i64>,
}

/// Number of elements of a shape (1 for rank 0); `None` on overflow.
pub fn num_elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d))
}

/// Row-major strides of a shape (in elements).
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Calls `f(flat, index)` for every multi-index of `shape` in row-major order.
pub fn for_each_index(shape: &[usize], mut f: impl FnMut(usize, &[usize])) {
    let n = num_elements(shape).unwrap_or(0);
    let mut idx = vec![0usize; shape.len()];
    for flat in 0..n {
        f(flat, &idx);
        // Increment the multi-index (last dim fastest).
        for d in (0..shape.len()).rev() {
            idx[d] += 1;
            if idx[d] < shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
}

/// Why a constructor rejects a shape and its elements.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("shape {shape:?} has {elements} elements but {values} values were given")]
    Mismatch { shape: Vec<usize>, elements: usize, values: usize },
    #[error("shape {0:?} has too many elements")]
    TooLarge(Vec<usize>),
    #[error("{dtype} elements are {kind}: {detail}")]
    Kind { dtype: &'static str, kind: &'static str, detail: String },
    #[error("element {index} = {value} is out of range for {dtype}")]
    Range { index: usize, value: i64, dtype: &'static str },
}

/// The value `v` rounded to the float type `dt` (round to nearest even for
/// bf16/f16; f32 and non-float types: `v` itself).
pub fn round_to(dt: DType, v: f32) -> f32 {
    match dt {
        DType::BF16 => half::bf16::from_f32(v).to_f32(),
        DType::F16 => half::f16::from_f32(v).to_f32(),
        _ => v,
    }
}

/// `v` wrapped into the integer type `dt` (two's complement, as numpy and
/// PyTorch): i32 keeps the low 32 bits, i1 keeps `v != 0`.
pub fn wrap_to(dt: DType, v: i64) -> i64 {
    match dt {
        DType::I32 => i64::from(v as i32),
        DType::I1 => i64::from(v != 0),
        _ => v,
    }
}

/// Whether `v` is a valid stored element of the integer or bool type `dt`.
fn int_in_range(dt: DType, v: i64) -> bool {
    match dt {
        DType::I32 => i32::try_from(v).is_ok(),
        DType::I1 => v == 0 || v == 1,
        _ => true,
    }
}

impl Tensor {
    /// An f32 tensor from a shape and row-major data; errors when the lengths disagree.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Tensor, ShapeError> {
        Tensor::from_floats(shape, DType::F32, data)
    }
    /// A float tensor (`f32`, `bf16`, `f16`); each value is rounded to `dtype`.
    pub fn from_floats(shape: Vec<usize>, dtype: DType, data: Vec<f32>) -> Result<Tensor, ShapeError> {
        if !dtype.is_float() {
            return Err(ShapeError::Kind { dtype: dtype.name(), kind: "integers", detail: "float values were given".into() });
        }
        check_count(&shape, data.len())?;
        let data = if dtype == DType::F32 { data } else { data.into_iter().map(|v| round_to(dtype, v)).collect() };
        Ok(Tensor { shape, dtype, data, ints: Vec::new() })
    }
    /// An integer or bool tensor (`i64`, `i32`, `i1`); values must lie in the
    /// type's range (`i1`: 0 or 1).
    pub fn from_ints(shape: Vec<usize>, dtype: DType, ints: Vec<i64>) -> Result<Tensor, ShapeError> {
        if dtype.is_float() {
            return Err(ShapeError::Kind { dtype: dtype.name(), kind: "floats", detail: "integer values were given".into() });
        }
        check_count(&shape, ints.len())?;
        if let Some((index, &value)) = ints.iter().enumerate().find(|&(_, &v)| !int_in_range(dtype, v)) {
            return Err(ShapeError::Range { index, value, dtype: dtype.name() });
        }
        Ok(Tensor { shape, dtype, data: Vec::new(), ints })
    }
    /// All zeros (f32). The caller guarantees the size is reasonable (see `zeros_of`).
    pub fn zeros(shape: &[usize]) -> Tensor {
        Tensor::full(shape, 0.0)
    }
    /// Every element `value` (f32).
    pub fn full(shape: &[usize], value: f32) -> Tensor {
        let n = num_elements(shape).unwrap_or(0);
        Tensor { shape: shape.to_vec(), dtype: DType::F32, data: vec![value; n], ints: Vec::new() }
    }
    /// Every element `value`, of element type `dtype` (a float value is
    /// rounded to a float type; an integer type takes `value as i64`, wrapped).
    pub fn full_of(shape: &[usize], dtype: DType, value: f64) -> Tensor {
        let n = num_elements(shape).unwrap_or(0);
        if dtype.is_float() {
            Tensor { shape: shape.to_vec(), dtype, data: vec![round_to(dtype, value as f32); n], ints: Vec::new() }
        } else {
            Tensor { shape: shape.to_vec(), dtype, data: Vec::new(), ints: vec![wrap_to(dtype, value as i64); n] }
        }
    }
    /// A rank-0 f32 tensor.
    pub fn scalar(value: f32) -> Tensor {
        Tensor { shape: Vec::new(), dtype: DType::F32, data: vec![value], ints: Vec::new() }
    }
    /// A rank-1 f32 tensor.
    pub fn vector(data: Vec<f32>) -> Tensor {
        Tensor { shape: vec![data.len()], dtype: DType::F32, data, ints: Vec::new() }
    }
    /// Zeros of an IR type (its shape and element type), refusing types
    /// larger than `MAX_TENSOR_BYTES` (or whose size overflows).
    pub fn zeros_of(ty: &TensorType) -> Result<Tensor, Diag> {
        let shape = shape_of(ty)?;
        Ok(Tensor::full_of(&shape, ty.dtype, 0.0))
    }
    /// The same elements under another shape of equal element count (reshape).
    pub fn reshaped(&self, shape: Vec<usize>) -> Tensor {
        Tensor { shape, ..self.clone() }
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements the storage holds.
    pub fn num_elements(&self) -> usize {
        if self.dtype.is_float() { self.data.len() } else { self.ints.len() }
    }
    /// Bytes this tensor's elements take at their element type's size.
    pub fn bytes(&self) -> u64 {
        self.num_elements() as u64 * self.dtype.bytes()
    }
    /// Re-checks the invariant: the storage of the tensor's class holds the
    /// shape's element count, the other is empty, integer values in range.
    pub fn check(&self) -> Result<(), ShapeError> {
        let (held, other) = if self.dtype.is_float() { (self.data.len(), self.ints.len()) } else { (self.ints.len(), self.data.len()) };
        check_count(&self.shape, held)?;
        if other != 0 {
            return Err(ShapeError::Kind {
                dtype: self.dtype.name(),
                kind: if self.dtype.is_float() { "floats" } else { "integers" },
                detail: format!("{other} elements of the other kind are stored too"),
            });
        }
        if let Some((index, &value)) = self.ints.iter().enumerate().find(|&(_, &v)| !int_in_range(self.dtype, v)) {
            return Err(ShapeError::Range { index, value, dtype: self.dtype.name() });
        }
        Ok(())
    }
    /// The value of a rank-0 (or one-element) tensor, as f32 (integers converted).
    pub fn item(&self) -> Option<f32> {
        if self.num_elements() != 1 {
            return None;
        }
        if self.dtype.is_float() { self.data.first().copied() } else { self.ints.first().map(|&v| v as f32) }
    }
    /// Element at a multi-index as f32 (integers converted); `None` when the
    /// index is out of range.
    pub fn get(&self, idx: &[usize]) -> Option<f32> {
        if idx.len() != self.shape.len() || idx.iter().zip(&self.shape).any(|(i, d)| i >= d) {
            return None;
        }
        let flat: usize = idx.iter().zip(strides(&self.shape)).map(|(i, s)| i * s).sum();
        if self.dtype.is_float() { self.data.get(flat).copied() } else { self.ints.get(flat).map(|&v| v as f32) }
    }
    /// Element `flat` as f64 (exact for every element type but huge i64s).
    pub fn get_f64(&self, flat: usize) -> Option<f64> {
        if self.dtype.is_float() { self.data.get(flat).map(|&v| f64::from(v)) } else { self.ints.get(flat).map(|&v| v as f64) }
    }
    /// The elements at the given flat indices of `self`, as a tensor of
    /// `shape` and the same element type (`src.len()` elements; every index
    /// must be in range: the callers compute them from verified shapes).
    pub fn take(&self, shape: Vec<usize>, src: &[usize]) -> Tensor {
        let data = if self.dtype.is_float() { src.iter().map(|&i| self.data[i]).collect() } else { Vec::new() };
        let ints = if self.dtype.is_float() { Vec::new() } else { src.iter().map(|&i| self.ints[i]).collect() };
        Tensor { shape, dtype: self.dtype, data, ints }
    }
    /// Whether this tensor has the shape and element type of an IR type.
    pub fn matches_type(&self, ty: &TensorType) -> bool {
        self.dtype == ty.dtype
            && self.shape.len() == ty.shape.len()
            && self.shape.iter().zip(&ty.shape).all(|(&a, &b)| a as u64 == b)
    }
    /// Whether every element is finite (integers always are).
    pub fn all_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
    /// Largest absolute elementwise difference (as f32); `None` when shapes
    /// or element types differ.
    pub fn max_abs_diff(&self, other: &Tensor) -> Option<f32> {
        if self.shape != other.shape || self.dtype != other.dtype {
            return None;
        }
        if !self.dtype.is_float() {
            return Some(self.ints.iter().zip(&other.ints).map(|(a, b)| a.abs_diff(*b) as f32).fold(0.0, f32::max));
        }
        Some(self.data.iter().zip(&other.data).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max))
    }
    /// `|a - b| <= atol + rtol * |b|` elementwise, with equal shapes and
    /// element types (integers: equal).
    pub fn allclose(&self, other: &Tensor, rtol: f32, atol: f32) -> bool {
        if self.shape != other.shape || self.dtype != other.dtype {
            return false;
        }
        if !self.dtype.is_float() {
            return self.ints == other.ints;
        }
        self.data.iter().zip(&other.data).all(|(a, b)| (a - b).abs() <= atol + rtol * b.abs())
    }
    /// The elements in memory: little-endian, `dtype.bytes()` each (see the module doc).
    pub fn to_le_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes() as usize);
        match self.dtype {
            DType::F32 => self.data.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            DType::BF16 => self.data.iter().for_each(|&v| out.extend_from_slice(&half::bf16::from_f32(v).to_le_bytes())),
            DType::F16 => self.data.iter().for_each(|&v| out.extend_from_slice(&half::f16::from_f32(v).to_le_bytes())),
            DType::I64 => self.ints.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
            DType::I32 => self.ints.iter().for_each(|&v| out.extend_from_slice(&(v as i32).to_le_bytes())),
            DType::I1 => self.ints.iter().for_each(|&v| out.push(u8::from(v != 0))),
        }
        out
    }
    /// A tensor of `shape` and `dtype` from its bytes in memory (the inverse
    /// of `to_le_bytes`; an `i1` byte other than 0 reads as 1).
    pub fn from_le_bytes(shape: Vec<usize>, dtype: DType, bytes: &[u8]) -> Result<Tensor, ShapeError> {
        let w = dtype.bytes() as usize;
        if bytes.len() % w != 0 {
            return Err(ShapeError::Kind { dtype: dtype.name(), kind: "whole elements", detail: format!("{} bytes given", bytes.len()) });
        }
        let chunks = bytes.chunks_exact(w);
        let arr = |c: &[u8]| -> [u8; 8] {
            let mut a = [0u8; 8];
            a[..c.len()].copy_from_slice(c);
            a
        };
        match dtype {
            DType::F32 => Tensor::new(shape, chunks.map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            DType::BF16 => Tensor::from_floats(shape, dtype, chunks.map(|c| half::bf16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
            DType::F16 => Tensor::from_floats(shape, dtype, chunks.map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32()).collect()),
            DType::I64 => Tensor::from_ints(shape, dtype, chunks.map(|c| i64::from_le_bytes(arr(c))).collect()),
            DType::I32 => Tensor::from_ints(shape, dtype, chunks.map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect()),
            DType::I1 => Tensor::from_ints(shape, dtype, bytes.iter().map(|&b| i64::from(b != 0)).collect()),
        }
    }
}

fn check_count(shape: &[usize], values: usize) -> Result<(), ShapeError> {
    match num_elements(shape) {
        Some(n) if n == values => Ok(()),
        Some(n) => Err(ShapeError::Mismatch { shape: shape.to_vec(), elements: n, values }),
        None => Err(ShapeError::TooLarge(shape.to_vec())),
    }
}

/// The shape of an IR type as `usize`s, refusing types larger than
/// `MAX_TENSOR_BYTES` or whose size overflows.
pub fn shape_of(ty: &TensorType) -> Result<Vec<usize>, Diag> {
    let elems = ty.num_elements().ok_or_else(|| Diag::unlocated(format!("type {ty} has a size that overflows")))?;
    // The interpreter holds floats as f32 and integers as i64.
    let held = if ty.dtype.is_float() { 4 } else { 8 };
    match elems.checked_mul(held) {
        Some(b) if b <= MAX_TENSOR_BYTES => {}
        _ => {
            return Err(Diag::unlocated(format!(
                "type {ty} is too large for the interpreter (limit {MAX_TENSOR_BYTES} bytes)"
            )));
        }
    }
    Ok(ty.shape.iter().map(|&d| d as usize).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checks_length_and_rank0_has_one_element() {
        assert!(Tensor::new(vec![2, 3], vec![0.0; 6]).is_ok());
        assert!(Tensor::new(vec![2, 3], vec![0.0; 5]).is_err());
        assert_eq!(Tensor::new(vec![], vec![7.0]).ok().and_then(|t| t.item()), Some(7.0));
    }

    #[test]
    fn strides_and_index_order_are_row_major() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        let mut seen = Vec::new();
        for_each_index(&[2, 2], |f, i| seen.push((f, i.to_vec())));
        assert_eq!(seen, vec![(0, vec![0, 0]), (1, vec![0, 1]), (2, vec![1, 0]), (3, vec![1, 1])]);
        let t = Tensor::new(vec![2, 3], (0..6).map(|v| v as f32).collect()).expect("valid");
        assert_eq!(t.get(&[1, 2]), Some(5.0));
        assert_eq!(t.get(&[2, 0]), None);
    }

    #[test]
    fn every_dtype_round_trips_through_its_bytes() {
        let cases = [
            Tensor::new(vec![3], vec![1.5, -0.0, f32::INFINITY]).expect("f32"),
            Tensor::from_floats(vec![2], DType::BF16, vec![1.0, -2.5]).expect("bf16"),
            Tensor::from_floats(vec![2], DType::F16, vec![0.5, 65504.0]).expect("f16"),
            Tensor::from_ints(vec![2, 2], DType::I64, vec![i64::MIN, -1, 0, i64::MAX]).expect("i64"),
            Tensor::from_ints(vec![2], DType::I32, vec![-100, i64::from(i32::MAX)]).expect("i32"),
            Tensor::from_ints(vec![3], DType::I1, vec![1, 0, 1]).expect("i1"),
        ];
        for t in &cases {
            let b = t.to_le_bytes();
            assert_eq!(b.len() as u64, t.bytes(), "{:?}", t.dtype);
            assert_eq!(&Tensor::from_le_bytes(t.shape.clone(), t.dtype, &b).expect("decodes"), t);
            assert!(t.check().is_ok());
        }
        assert_eq!(cases[3].to_le_bytes()[8..16], (-1i64).to_le_bytes());
        assert_eq!(cases[5].to_le_bytes(), vec![1, 0, 1]);
    }

    #[test]
    fn constructors_refuse_the_wrong_kind_and_out_of_range_ints() {
        assert!(Tensor::from_ints(vec![1], DType::F32, vec![1]).is_err());
        assert!(Tensor::from_floats(vec![1], DType::I64, vec![1.0]).is_err());
        assert!(Tensor::from_ints(vec![1], DType::I1, vec![2]).is_err());
        assert!(Tensor::from_ints(vec![1], DType::I32, vec![1 << 40]).is_err());
        assert_eq!(Tensor::from_floats(vec![1], DType::BF16, vec![1.00390625]).expect("bf16").data, vec![1.0], "ties to even");
        let mut t = Tensor::from_ints(vec![2], DType::I64, vec![1, 2]).expect("i64");
        t.data.push(0.0);
        assert!(t.check().is_err(), "both storages populated");
        assert_eq!(wrap_to(DType::I32, 1 << 32), 0);
        assert!(Tensor::zeros_of(&TensorType::new(vec![2], DType::I1)).expect("fits").ints == vec![0, 0]);
    }

    #[test]
    fn huge_types_are_refused() {
        let t = TensorType::f32(vec![1 << 20, 1 << 20]);
        assert!(Tensor::zeros_of(&t).is_err());
        assert!(Tensor::zeros_of(&TensorType::f32(vec![u64::MAX, 2])).is_err());
    }
}
