//! Constant tensors read from ONNX: initializers, `Constant` nodes, test
//! data files (`TensorProto`), and the values that import-time folding
//! computes from them.
//!
//! Element types: every float type (float, double, float16, bfloat16)
//! becomes f32, every integer type and bool becomes i64 (shape arithmetic
//! needs no more). Strings, complex numbers and 8/4-bit floats are errors
//! naming the tensor. Data comes from the typed fields, from `raw_data`
//! (little-endian, its length must be exactly elements x element size) or
//! from an external file next to the model (`data_location = EXTERNAL`;
//! the path must be relative and stay inside the model's folder).
//! Nothing here allocates more than the bytes actually present in the
//! input, and nothing panics on a malformed tensor.

use crate::proto::TensorProto;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

/// Element data of a constant tensor, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum CData {
    F32(Vec<f32>),
    I64(Vec<i64>),
}

/// A constant tensor: static shape and row-major data.
#[derive(Clone, Debug, PartialEq)]
pub struct CTensor {
    pub shape: Vec<u64>,
    pub data: CData,
}

/// ONNX `TensorProto.DataType` codes used here.
pub mod dtype {
    pub const FLOAT: i32 = 1;
    pub const UINT8: i32 = 2;
    pub const INT8: i32 = 3;
    pub const UINT16: i32 = 4;
    pub const INT16: i32 = 5;
    pub const INT32: i32 = 6;
    pub const INT64: i32 = 7;
    pub const STRING: i32 = 8;
    pub const BOOL: i32 = 9;
    pub const FLOAT16: i32 = 10;
    pub const DOUBLE: i32 = 11;
    pub const UINT32: i32 = 12;
    pub const UINT64: i32 = 13;
    pub const BFLOAT16: i32 = 16;

    /// The ONNX name of a data type code.
    pub fn name(t: i32) -> String {
        match t {
            0 => "undefined".into(),
            FLOAT => "float".into(),
            UINT8 => "uint8".into(),
            INT8 => "int8".into(),
            UINT16 => "uint16".into(),
            INT16 => "int16".into(),
            INT32 => "int32".into(),
            INT64 => "int64".into(),
            STRING => "string".into(),
            BOOL => "bool".into(),
            FLOAT16 => "float16".into(),
            DOUBLE => "double".into(),
            UINT32 => "uint32".into(),
            UINT64 => "uint64".into(),
            14 => "complex64".into(),
            15 => "complex128".into(),
            BFLOAT16 => "bfloat16".into(),
            t => format!("data type {t}"),
        }
    }
    /// Whether the type is read as f32 (else as i64).
    pub fn is_float(t: i32) -> bool {
        matches!(t, FLOAT | FLOAT16 | DOUBLE | BFLOAT16)
    }
}

impl CTensor {
    pub fn f32(shape: Vec<u64>, data: Vec<f32>) -> CTensor {
        CTensor { shape, data: CData::F32(data) }
    }
    pub fn i64(shape: Vec<u64>, data: Vec<i64>) -> CTensor {
        CTensor { shape, data: CData::I64(data) }
    }
    pub fn len(&self) -> usize {
        match &self.data {
            CData::F32(v) => v.len(),
            CData::I64(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn is_float(&self) -> bool {
        matches!(self.data, CData::F32(_))
    }
    /// The elements as f32 (integers converted).
    pub fn as_f32(&self) -> Vec<f32> {
        match &self.data {
            CData::F32(v) => v.clone(),
            CData::I64(v) => v.iter().map(|&x| x as f32).collect(),
        }
    }
    /// The elements as i64 (floats truncated toward zero, as ONNX Cast does).
    pub fn as_i64(&self) -> Vec<i64> {
        match &self.data {
            CData::F32(v) => v.iter().map(|&x| x as i64).collect(),
            CData::I64(v) => v.clone(),
        }
    }
    /// The single value of a one-element tensor as f32.
    pub fn scalar_f32(&self) -> Option<f32> {
        (self.len() == 1).then(|| self.as_f32()[0])
    }
    /// Some(v) when every element equals v (and there is at least one).
    /// Whether every element is the same (integers compared exactly, not
    /// through f32 as `splat` does).
    pub fn splat_exact(&self) -> bool {
        match &self.data {
            CData::F32(v) => v.iter().all(|x| x.to_bits() == v[0].to_bits()),
            CData::I64(v) => v.iter().all(|x| *x == v[0]),
        }
    }
    pub fn splat(&self) -> Option<f32> {
        let v = self.as_f32();
        let first = *v.first()?;
        v.iter().all(|x| x.to_bits() == first.to_bits()).then_some(first)
    }
}

/// Number of elements of `dims` (ONNX dims are i64); an error for a
/// negative dim or an overflow.
pub fn numel(dims: &[u64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d))
}

fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = match (exp, man) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m * 2^-24.
            let v = m as f32 * f32::from_bits(0x3380_0000);
            return if sign != 0 { -v } else { v };
        }
        (0x1F, m) => sign | 0x7F80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// Where external tensor data is looked for: the model file's folder.
pub struct DataDir<'a>(pub Option<&'a Path>);

/// Why a `TensorProto` could not be read; `what` names the tensor
/// (`initializer 'w'`). I/O errors are kept as their text.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TensorError {
    #[error("{what} has a negative dimension {dim} in {dims:?}")]
    NegativeDim { what: String, dim: i64, dims: Vec<i64> },
    #[error("{what}: element count of {dims:?} overflows")]
    CountOverflow { what: String, dims: Vec<i64> },
    #[error("{what} has element type {dtype}, which ckopt does not import (float and integer types only)")]
    ElementType { what: String, dtype: String },
    #[error("{what}: {shape:?} needs {n} elements of {dtype}, the data holds {got}")]
    Count { what: String, shape: Vec<u64>, n: u64, dtype: String, got: u64 },
    #[error("{what}: byte size overflows")]
    ByteOverflow { what: String },
    #[error("{what}: {shape:?} of {dtype} needs {want} bytes of data, found {found}")]
    Bytes { what: String, shape: Vec<u64>, dtype: String, want: u64, found: usize },
    #[error("{what} is stored externally but names no 'location'")]
    NoLocation { what: String },
    #[error("{what}: external data '{key}' is not a number: '{value}'")]
    ExternalNumber { what: String, key: String, value: String },
    #[error("{what}: external data location '{location}' must be a relative path inside the model's folder")]
    ExternalPath { what: String, location: String },
    #[error("{what} is stored in external file '{location}', but the model was not read from a file")]
    NoModelFile { what: String, location: String },
    #[error("{what}: missing external data file '{path}': {error}")]
    MissingFile { what: String, path: String, error: String },
    #[error("{what}: external data [{offset}, {offset}+{len}) is past the end of '{path}' ({size} bytes)")]
    PastEnd { what: String, offset: u64, len: u64, path: String, size: u64 },
    #[error("{what}: cannot seek in '{path}': {error}")]
    Seek { what: String, path: String, error: String },
    #[error("{what}: cannot read '{path}': {error}")]
    Read { what: String, path: String, error: String },
    #[error("{what}: '{path}' ended early")]
    EndedEarly { what: String, path: String },
}

/// Reads a `TensorProto` into a constant tensor. `what` names it in errors.
pub fn from_proto(t: &TensorProto, dir: &DataDir<'_>, what: &str) -> Result<CTensor, TensorError> {
    let mut shape = Vec::with_capacity(t.dims.len());
    for &d in &t.dims {
        if d < 0 {
            return Err(TensorError::NegativeDim { what: what.into(), dim: d, dims: t.dims.clone() });
        }
        shape.push(d as u64);
    }
    let n = numel(&shape).ok_or_else(|| TensorError::CountOverflow { what: what.into(), dims: t.dims.clone() })?;
    let dt = t.data_type.unwrap_or(0);
    let elem_bytes: u64 = match dt {
        dtype::FLOAT | dtype::INT32 | dtype::UINT32 => 4,
        dtype::DOUBLE | dtype::INT64 | dtype::UINT64 => 8,
        dtype::FLOAT16 | dtype::BFLOAT16 | dtype::INT16 | dtype::UINT16 => 2,
        dtype::INT8 | dtype::UINT8 | dtype::BOOL => 1,
        _ => return Err(TensorError::ElementType { what: what.into(), dtype: dtype::name(dt).to_string() }),
    };
    let external = t.data_location == Some(1);
    let raw: Option<Vec<u8>> = if external {
        Some(read_external(t, dir, what)?)
    } else {
        t.raw_data.clone()
    };
    let count_err =
        |got: u64| TensorError::Count { what: what.into(), shape: shape.clone(), n, dtype: dtype::name(dt).to_string(), got };
    if let Some(raw) = raw {
        let want = n.checked_mul(elem_bytes).ok_or_else(|| TensorError::ByteOverflow { what: what.into() })?;
        if raw.len() as u64 != want {
            return Err(TensorError::Bytes { what: what.into(), shape, dtype: dtype::name(dt).to_string(), want, found: raw.len() });
        }
        let b = &raw;
        let data = match dt {
            dtype::FLOAT => CData::F32(b.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect()),
            dtype::DOUBLE => CData::F32(
                b.chunks_exact(8).map(|c| f64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]) as f32).collect(),
            ),
            dtype::FLOAT16 => CData::F32(b.chunks_exact(2).map(|c| f16_to_f32(u16::from_le_bytes([c[0], c[1]]))).collect()),
            dtype::BFLOAT16 => {
                CData::F32(b.chunks_exact(2).map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16)).collect())
            }
            dtype::INT64 => CData::I64(
                b.chunks_exact(8).map(|c| i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])).collect(),
            ),
            dtype::UINT64 => CData::I64(
                b.chunks_exact(8)
                    .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]).min(i64::MAX as u64) as i64)
                    .collect(),
            ),
            dtype::INT32 => CData::I64(b.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect()),
            dtype::UINT32 => CData::I64(b.chunks_exact(4).map(|c| i64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))).collect()),
            dtype::INT16 => CData::I64(b.chunks_exact(2).map(|c| i64::from(i16::from_le_bytes([c[0], c[1]]))).collect()),
            dtype::UINT16 => CData::I64(b.chunks_exact(2).map(|c| i64::from(u16::from_le_bytes([c[0], c[1]]))).collect()),
            dtype::INT8 => CData::I64(b.iter().map(|&x| i64::from(x as i8)).collect()),
            _ => CData::I64(b.iter().map(|&x| i64::from(x)).collect()),
        };
        return Ok(CTensor { shape, data });
    }
    // Typed fields.
    let data = match dt {
        dtype::FLOAT => {
            if t.float_data.len() as u64 != n {
                return Err(count_err(t.float_data.len() as u64));
            }
            CData::F32(t.float_data.clone())
        }
        dtype::DOUBLE => {
            if t.double_data.len() as u64 != n {
                return Err(count_err(t.double_data.len() as u64));
            }
            CData::F32(t.double_data.iter().map(|&x| x as f32).collect())
        }
        // float16/bfloat16 and the small integer types travel in int32_data.
        dtype::FLOAT16 | dtype::BFLOAT16 | dtype::INT32 | dtype::INT16 | dtype::INT8 | dtype::UINT16 | dtype::UINT8
        | dtype::BOOL => {
            if t.int32_data.len() as u64 != n {
                return Err(count_err(t.int32_data.len() as u64));
            }
            match dt {
                dtype::FLOAT16 => CData::F32(t.int32_data.iter().map(|&x| f16_to_f32(x as u16)).collect()),
                dtype::BFLOAT16 => CData::F32(t.int32_data.iter().map(|&x| f32::from_bits((x as u32 & 0xFFFF) << 16)).collect()),
                _ => CData::I64(t.int32_data.iter().map(|&x| i64::from(x)).collect()),
            }
        }
        dtype::INT64 => {
            if t.int64_data.len() as u64 != n {
                return Err(count_err(t.int64_data.len() as u64));
            }
            CData::I64(t.int64_data.clone())
        }
        _ => {
            if t.uint64_data.len() as u64 != n {
                return Err(count_err(t.uint64_data.len() as u64));
            }
            CData::I64(t.uint64_data.iter().map(|&x| x.min(i64::MAX as u64) as i64).collect())
        }
    };
    Ok(CTensor { shape, data })
}

/// The bytes of an external-data tensor: `location` (relative to the model's
/// folder, no `..`), `offset` and `length` from `external_data`.
fn read_external(t: &TensorProto, dir: &DataDir<'_>, what: &str) -> Result<Vec<u8>, TensorError> {
    let get = |k: &str| t.external_data.iter().find(|e| e.key.as_deref() == Some(k)).and_then(|e| e.value.clone());
    let location = get("location").ok_or_else(|| TensorError::NoLocation { what: what.into() })?;
    let num = |k: &str| -> Result<Option<u64>, TensorError> {
        get(k)
            .map(|v| {
                v.parse::<u64>().map_err(|_| TensorError::ExternalNumber { what: what.into(), key: k.into(), value: v.clone() })
            })
            .transpose()
    };
    let offset = num("offset")?.unwrap_or(0);
    let length = num("length")?;
    let rel = Path::new(&location);
    if rel.is_absolute() || rel.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        return Err(TensorError::ExternalPath { what: what.into(), location });
    }
    let Some(base) = dir.0 else {
        return Err(TensorError::NoModelFile { what: what.into(), location });
    };
    let path = base.join(rel);
    let shown = || path.display().to_string();
    let mut f = std::fs::File::open(&path)
        .map_err(|e| TensorError::MissingFile { what: what.into(), path: shown(), error: e.to_string() })?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    let len = length.unwrap_or(size.saturating_sub(offset));
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(TensorError::PastEnd { what: what.into(), offset, len, path: shown(), size });
    }
    f.seek(SeekFrom::Start(offset)).map_err(|e| TensorError::Seek { what: what.into(), path: shown(), error: e.to_string() })?;
    let mut buf = Vec::new();
    f.take(len).read_to_end(&mut buf).map_err(|e| TensorError::Read { what: what.into(), path: shown(), error: e.to_string() })?;
    if buf.len() as u64 != len {
        return Err(TensorError::EndedEarly { what: what.into(), path: shown() });
    }
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_precision_converts_exactly() {
        assert_eq!(f16_to_f32(0x3C00), 1.0);
        assert_eq!(f16_to_f32(0xC000), -2.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x7C00), f32::INFINITY);
    }

    #[test]
    fn raw_data_of_the_wrong_length_is_an_error() {
        let t = TensorProto { dims: vec![2], data_type: Some(dtype::FLOAT), raw_data: Some(vec![0; 7]), ..Default::default() };
        let e = from_proto(&t, &DataDir(None), "initializer 'w'").expect_err("7 bytes for 2 floats");
        let e = e.to_string();
        assert!(e.contains("initializer 'w'") && e.contains("needs 8 bytes"), "{e}");
        let ok = TensorProto { raw_data: Some([1f32.to_le_bytes(), 2f32.to_le_bytes()].concat()), ..t };
        assert_eq!(from_proto(&ok, &DataDir(None), "w"), Ok(CTensor::f32(vec![2], vec![1.0, 2.0])));
    }

    /// float16/bfloat16 in int32_data (onnx.helper.make_tensor with
    /// raw=False: one 16-bit pattern per int32, as onnx 1.23 writes for
    /// [1.0, 2.5, -3.0]) read the same as the same bits in raw_data.
    #[test]
    fn half_types_in_int32_data_match_raw_data() {
        for (dt, bits) in [(dtype::BFLOAT16, [16256, 16416, 49216]), (dtype::FLOAT16, [15360, 16640, 49664])] {
            let typed = TensorProto { dims: vec![3], data_type: Some(dt), int32_data: bits.to_vec(), ..Default::default() };
            let raw: Vec<u8> = bits.iter().flat_map(|&b| (b as u16).to_le_bytes()).collect();
            let raw = TensorProto { dims: vec![3], data_type: Some(dt), raw_data: Some(raw), ..Default::default() };
            let want = Ok(CTensor::f32(vec![3], vec![1.0, 2.5, -3.0]));
            assert_eq!(from_proto(&typed, &DataDir(None), "w"), want, "{}", dtype::name(dt));
            assert_eq!(from_proto(&raw, &DataDir(None), "w"), want, "{}", dtype::name(dt));
        }
    }

    #[test]
    fn strings_and_escaping_external_paths_are_rejected() {
        let s = TensorProto { dims: vec![1], data_type: Some(dtype::STRING), ..Default::default() };
        assert!(from_proto(&s, &DataDir(None), "t").expect_err("string").to_string().contains("string"));
        let ext = TensorProto {
            dims: vec![1],
            data_type: Some(dtype::FLOAT),
            data_location: Some(1),
            external_data: vec![crate::proto::StringStringEntryProto { key: Some("location".into()), value: Some("../x.bin".into()) }],
            ..Default::default()
        };
        let e = from_proto(&ext, &DataDir(Some(Path::new("."))), "t").expect_err("escapes").to_string();
        assert!(e.contains("relative path inside"), "{e}");
    }
}
