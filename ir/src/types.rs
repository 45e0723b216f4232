//! Tensor types: static shapes and an element type.
//!
//! Invariant: a `TensorType` that came out of the parser or a builder has a
//! byte size that fits in `u64` (checked arithmetic; overflow is a parse error),
//! so `byte_size()` returning `None` means "built by hand without checking".

use std::fmt;

/// Element type of a tensor.
///
/// Float types (`f32`, `bf16`, `f16`) are differentiable; integer types
/// (`i64`, `i32`) and `i1` (booleans, one byte per element as in numpy and
/// PyTorch) are never differentiated but are ordinary values everywhere else:
/// placed, counted and recomputed at their real size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    BF16,
    I64,
    I32,
    I1,
}

impl DType {
    /// Every element type, in the order docs list them.
    pub const ALL: &'static [DType] = &[DType::F32, DType::BF16, DType::F16, DType::I64, DType::I32, DType::I1];
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I1 => "i1",
        }
    }
    pub fn from_name(s: &str) -> Option<DType> {
        DType::ALL.iter().copied().find(|d| d.name() == s)
    }
    /// Bytes of one element (`i1`: one byte).
    pub fn bytes(self) -> u64 {
        match self {
            DType::I64 => 8,
            DType::F32 | DType::I32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::I1 => 1,
        }
    }
    /// `f32`, `bf16`, `f16`: the types autodiff differentiates.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }
    /// `i64`, `i32` (not `i1`).
    pub fn is_integer(self) -> bool {
        matches!(self, DType::I64 | DType::I32)
    }
    /// `i1`.
    pub fn is_bool(self) -> bool {
        self == DType::I1
    }
    /// The names of every element type, for messages (`f32, bf16, f16, i64, i32, i1`).
    pub fn all_names() -> String {
        DType::ALL.iter().map(|d| d.name()).collect::<Vec<_>>().join(", ")
    }
}

/// `tensor<AxBx...xT>`; rank 0 is `tensor<T>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorType {
    pub shape: Vec<u64>,
    pub dtype: DType,
}

impl TensorType {
    pub fn new(shape: impl Into<Vec<u64>>, dtype: DType) -> Self {
        TensorType { shape: shape.into(), dtype }
    }
    /// f32 tensor of the given shape.
    pub fn f32(shape: impl Into<Vec<u64>>) -> Self {
        Self::new(shape, DType::F32)
    }
    /// Rank-0 f32 tensor.
    pub fn scalar() -> Self {
        Self::f32(Vec::new())
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
    /// Number of elements, `None` on overflow.
    pub fn num_elements(&self) -> Option<u64> {
        self.shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
    }
    /// Size in bytes, `None` on overflow.
    pub fn byte_size(&self) -> Option<u64> {
        self.num_elements()?.checked_mul(self.dtype.bytes())
    }
    /// Byte size for a type already known to be valid (saturating, never panics).
    pub fn bytes(&self) -> u64 {
        self.byte_size().unwrap_or(u64::MAX)
    }
    /// Element count for a type already known to be valid (saturating).
    pub fn elems(&self) -> u64 {
        self.num_elements().unwrap_or(u64::MAX)
    }
    /// Same dtype, other shape.
    pub fn with_shape(&self, shape: Vec<u64>) -> TensorType {
        TensorType { shape, dtype: self.dtype }
    }
    /// Same shape, other element type.
    pub fn with_dtype(&self, dtype: DType) -> TensorType {
        TensorType { shape: self.shape.clone(), dtype }
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("tensor<")?;
        for d in &self.shape {
            write!(f, "{d}x")?;
        }
        write!(f, "{}>", self.dtype.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn display_and_size_of_rank0_and_rank2() {
        assert_eq!(TensorType::scalar().to_string(), "tensor<f32>");
        let t = TensorType::f32(vec![32, 64]);
        assert_eq!(t.to_string(), "tensor<32x64xf32>");
        assert_eq!(t.byte_size(), Some(32 * 64 * 4));
    }
    #[test]
    fn every_dtype_round_trips_by_name_with_its_size() {
        for &d in DType::ALL {
            assert_eq!(DType::from_name(d.name()), Some(d));
        }
        let sizes: Vec<u64> = DType::ALL.iter().map(|d| d.bytes()).collect();
        assert_eq!(sizes, vec![4, 2, 2, 8, 4, 1]);
        assert_eq!(TensorType::new(vec![8, 128], DType::I64).to_string(), "tensor<8x128xi64>");
        assert_eq!(TensorType::new(vec![3], DType::I1).bytes(), 3);
        assert!(DType::BF16.is_float() && !DType::I32.is_float() && DType::I1.is_bool() && !DType::I1.is_integer());
    }
    #[test]
    fn overflowing_size_is_none() {
        let t = TensorType::f32(vec![u64::MAX / 2, 3]);
        assert_eq!(t.byte_size(), None);
    }
}
