//! Tensor types: static shapes and an element type.
//!
//! Invariant: a `TensorType` that came out of the parser or a builder has a
//! byte size that fits in `u64` (checked arithmetic; overflow is a parse error),
//! so `byte_size()` returning `None` means "built by hand without checking".

use std::fmt;

/// Element type of a tensor. Everything computes in f32 today; f16/bf16 parse
/// and print so files that mention them round-trip.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    F32,
    F16,
    BF16,
}

impl DType {
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
        }
    }
    pub fn from_name(s: &str) -> Option<DType> {
        match s {
            "f32" => Some(DType::F32),
            "f16" => Some(DType::F16),
            "bf16" => Some(DType::BF16),
            _ => None,
        }
    }
    pub fn bytes(self) -> u64 {
        match self {
            DType::F32 => 4,
            DType::F16 | DType::BF16 => 2,
        }
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
    fn overflowing_size_is_none() {
        let t = TensorType::f32(vec![u64::MAX / 2, 3]);
        assert_eq!(t.byte_size(), None);
    }
}
