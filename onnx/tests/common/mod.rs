//! Reading ONNX test fixtures (test/onnx/): the ONNX project's node test
//! cases (test/onnx/node/<case>/{model.onnx, input_N.pb, output_N.pb}) and
//! the PyTorch-exported models (test/onnx/models/). Shared by the
//! interpreter tests here and the cpu-backend tests of the `ckopt` crate.

#![allow(dead_code, clippy::unwrap_used)]

use ckopt_onnx::{NamedTensor, TypedTensor, read_tensor_file, read_typed_tensor_file};
use std::path::{Path, PathBuf};

/// test/onnx/ of the repository.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join("test").join("onnx")
}

/// The node test case folders, sorted by name.
pub fn node_cases() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(fixtures().join("node"))
        .expect("test/onnx/node exists (run test/onnx/gen_node_fixtures.py)")
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    v.sort();
    v
}

/// `prefix_0.pb`, `prefix_1.pb`, ... of a case folder.
pub fn tensors(dir: &Path, prefix: &str) -> Vec<NamedTensor> {
    (0..).map(|i| dir.join(format!("{prefix}_{i}.pb"))).take_while(|p| p.is_file()).map(|p| read_tensor_file(&p).unwrap()).collect()
}

/// `prefix_0.pb`, ... with their element types.
pub fn typed_tensors(dir: &Path, prefix: &str) -> Vec<TypedTensor> {
    (0..).map(|i| dir.join(format!("{prefix}_{i}.pb"))).take_while(|p| p.is_file()).map(|p| read_typed_tensor_file(&p).unwrap()).collect()
}

/// Compares one output with its expected value: same element type, then
/// integers and bools exactly, floats by `excess` (0 when within tolerance).
pub fn compare(dtype: ckopt_ir::DType, floats: &[f32], ints: &[i64], want: &TypedTensor, rtol: f32, atol: f32) -> Result<f32, String> {
    if dtype != want.dtype {
        return Err(format!("element type {}, expected {}", dtype.name(), want.dtype.name()));
    }
    if dtype.is_float() {
        return excess(floats, &want.floats, rtol, atol);
    }
    if ints.len() != want.ints.len() {
        return Err(format!("{} values, expected {}", ints.len(), want.ints.len()));
    }
    match ints.iter().zip(&want.ints).position(|(a, b)| a != b) {
        Some(i) => Err(format!("element {i}: {} vs {}", ints[i], want.ints[i])),
        None => Ok(0.0),
    }
}

/// Largest violation of `|got - want| <= rtol * |want| + atol` over all
/// elements (0 when within tolerance), or an error for a shape mismatch.
pub fn excess(got: &[f32], want: &[f32], rtol: f32, atol: f32) -> Result<f32, String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let mut worst = 0.0f32;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if g.is_nan() != w.is_nan() || (w.is_infinite() && g != w) {
            return Err(format!("element {i}: {g} vs {w}"));
        }
        if w.is_finite() {
            let e = (g - w).abs() - (rtol * w.abs() + atol);
            if e.is_nan() || e > 0.0 {
                worst = worst.max(e.max(f32::MIN_POSITIVE));
            }
        }
    }
    Ok(worst)
}
