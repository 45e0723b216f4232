//! `Tensor`: a dense row-major f32 array with a shape.
//!
//! Invariant (kept by every constructor): `data.len()` equals the product of
//! `shape` (1 for rank 0). The fields are public for easy reading by tests
//! and backends; code that builds a `Tensor` by hand must keep the invariant
//! (`Tensor::new` checks it).
//!
//! Allocation guard: tensors built from IR types (`zeros_of`) refuse types
//! above `MAX_TENSOR_BYTES`, so unverified or absurd inputs give an error,
//! never an allocation failure.

use ckopt_ir::{Diag, TensorType};

/// The largest tensor the interpreter will allocate (4 GiB).
pub const MAX_TENSOR_BYTES: u64 = 4 << 30;

/// A dense f32 tensor in row-major order.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: Vec<f32>,
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

/// Why `Tensor::new` rejects a shape and its data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ShapeError {
    #[error("shape {shape:?} has {elements} elements but {values} values were given")]
    Mismatch { shape: Vec<usize>, elements: usize, values: usize },
    #[error("shape {0:?} has too many elements")]
    TooLarge(Vec<usize>),
}

impl Tensor {
    /// A tensor from a shape and row-major data; errors when the lengths disagree.
    pub fn new(shape: Vec<usize>, data: Vec<f32>) -> Result<Tensor, ShapeError> {
        match num_elements(&shape) {
            Some(n) if n == data.len() => Ok(Tensor { shape, data }),
            Some(n) => Err(ShapeError::Mismatch { shape, elements: n, values: data.len() }),
            None => Err(ShapeError::TooLarge(shape)),
        }
    }
    /// All zeros. The caller guarantees the size is reasonable (see `zeros_of`).
    pub fn zeros(shape: &[usize]) -> Tensor {
        Tensor::full(shape, 0.0)
    }
    /// Every element `value`.
    pub fn full(shape: &[usize], value: f32) -> Tensor {
        let n = num_elements(shape).unwrap_or(0);
        Tensor { shape: shape.to_vec(), data: vec![value; n] }
    }
    /// A rank-0 tensor.
    pub fn scalar(value: f32) -> Tensor {
        Tensor { shape: Vec::new(), data: vec![value] }
    }
    /// A rank-1 tensor.
    pub fn vector(data: Vec<f32>) -> Tensor {
        Tensor { shape: vec![data.len()], data }
    }
    /// Zeros with the shape of an IR type, refusing types larger than
    /// `MAX_TENSOR_BYTES` (or whose size overflows).
    pub fn zeros_of(ty: &TensorType) -> Result<Tensor, Diag> {
        let shape = shape_of(ty)?;
        Ok(Tensor::zeros(&shape))
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    pub fn num_elements(&self) -> usize {
        self.data.len()
    }
    /// Bytes this tensor holds (4 per element).
    pub fn bytes(&self) -> u64 {
        self.data.len() as u64 * 4
    }
    /// The value of a rank-0 (or one-element) tensor.
    pub fn item(&self) -> Option<f32> {
        if self.data.len() == 1 { Some(self.data[0]) } else { None }
    }
    /// Element at a multi-index; `None` when the index is out of range.
    pub fn get(&self, idx: &[usize]) -> Option<f32> {
        if idx.len() != self.shape.len() || idx.iter().zip(&self.shape).any(|(i, d)| i >= d) {
            return None;
        }
        let flat: usize = idx.iter().zip(strides(&self.shape)).map(|(i, s)| i * s).sum();
        self.data.get(flat).copied()
    }
    /// Whether this tensor has the shape of an IR type (element type is not checked:
    /// the interpreter computes everything in f32).
    pub fn matches_type(&self, ty: &TensorType) -> bool {
        self.shape.len() == ty.shape.len() && self.shape.iter().zip(&ty.shape).all(|(&a, &b)| a as u64 == b)
    }
    /// Whether every element is finite.
    pub fn all_finite(&self) -> bool {
        self.data.iter().all(|v| v.is_finite())
    }
    /// Largest absolute elementwise difference; `None` when shapes differ.
    pub fn max_abs_diff(&self, other: &Tensor) -> Option<f32> {
        if self.shape != other.shape {
            return None;
        }
        Some(self.data.iter().zip(&other.data).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max))
    }
    /// `|a - b| <= atol + rtol * |b|` elementwise, with equal shapes.
    pub fn allclose(&self, other: &Tensor, rtol: f32, atol: f32) -> bool {
        self.shape == other.shape
            && self.data.iter().zip(&other.data).all(|(a, b)| (a - b).abs() <= atol + rtol * b.abs())
    }
}

/// The shape of an IR type as `usize`s, refusing types larger than
/// `MAX_TENSOR_BYTES` or whose size overflows.
pub fn shape_of(ty: &TensorType) -> Result<Vec<usize>, Diag> {
    let elems = ty.num_elements().ok_or_else(|| Diag::unlocated(format!("type {ty} has a size that overflows")))?;
    match elems.checked_mul(4) {
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
    fn huge_types_are_refused() {
        let t = TensorType::f32(vec![1 << 20, 1 << 20]);
        assert!(Tensor::zeros_of(&t).is_err());
        assert!(Tensor::zeros_of(&TensorType::f32(vec![u64::MAX, 2])).is_err());
    }
}
