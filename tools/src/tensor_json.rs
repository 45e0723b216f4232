//! Tensor JSON (docs/tools.md): `{"inputs": [{"shape": [2, 3], "data": [...]}, ...]}`
//! and `{"outputs": [...]}` in the same form, row-major, rank 0 as
//! `"shape": []`.
//!
//! Reading is strict: unknown keys, a missing key, non-numbers, and a
//! `data` length that differs from the product of `shape` are errors,
//! located (FILE:LINE:COL) where serde_json knows the position.
//! Writing prints one tensor per line; floats use the shortest text that
//! reads back to the same f32 (`1.0`, `0.1`), and non-finite values
//! (which JSON cannot spell) print as `null`.

use ckopt_interp::Tensor;
use ckopt_interp::tensor::{MAX_TENSOR_BYTES, num_elements};
use ckopt_ir::{Diag, Loc};
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorJson {
    shape: Vec<u64>,
    data: Vec<f32>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct InputsFile {
    inputs: Vec<TensorJson>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OutputsFile {
    outputs: Vec<TensorJson>,
}

fn json_error(file: &str, e: &serde_json::Error) -> Diag {
    let loc = Loc::new(Arc::from(file), e.line() as u32, e.column() as u32);
    // serde_json appends " at line L column C" to its messages; the location says it already.
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    Diag::error(loc, format!("invalid tensor JSON: {msg}"))
}

fn to_tensors(file: &str, key: &str, ts: Vec<TensorJson>) -> Result<Vec<Tensor>, Diag> {
    let file_loc = Loc::new(Arc::from(file), 0, 0);
    ts.into_iter()
        .enumerate()
        .map(|(i, t)| {
            let shape: Option<Vec<usize>> = t.shape.iter().map(|&d| usize::try_from(d).ok()).collect();
            let n = shape.as_deref().and_then(num_elements);
            match (shape, n) {
                (Some(shape), Some(n)) if n == t.data.len() && (n as u64).saturating_mul(4) <= MAX_TENSOR_BYTES => {
                    Ok(Tensor { shape, data: t.data })
                }
                (_, Some(n)) => Err(Diag::error(
                    file_loc.clone(),
                    format!("{key}[{i}]: shape {:?} has {n} elements but \"data\" has {} values", t.shape, t.data.len()),
                )),
                _ => Err(Diag::error(file_loc.clone(), format!("{key}[{i}]: shape {:?} is too large", t.shape))),
            }
        })
        .collect()
}

/// Parses `{"inputs": [...]}` (the text of `file`).
pub fn parse_inputs(text: &str, file: &str) -> Result<Vec<Tensor>, Diag> {
    let f: InputsFile = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    to_tensors(file, "inputs", f.inputs)
}

/// Parses `{"outputs": [...]}` (the text of `file`), e.g. to compare runs.
pub fn parse_outputs(text: &str, file: &str) -> Result<Vec<Tensor>, Diag> {
    let f: OutputsFile = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    to_tensors(file, "outputs", f.outputs)
}

/// One float as JSON: shortest round-trip text, `null` when not finite.
pub fn json_f32(v: f32) -> String {
    if v.is_finite() { serde_json::to_string(&v).unwrap_or_else(|_| "null".into()) } else { "null".into() }
}

/// `{"shape": [..], "data": [..]}` on one line.
pub fn tensor_to_json(t: &Tensor) -> String {
    let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    let data: Vec<String> = t.data.iter().map(|&v| json_f32(v)).collect();
    format!("{{\"shape\": [{}], \"data\": [{}]}}", shape.join(", "), data.join(", "))
}

/// `{"KEY": [...]}` with one tensor per line, ending in a newline.
pub fn tensors_to_json(key: &str, ts: &[Tensor]) -> String {
    if ts.is_empty() {
        return format!("{{\"{key}\": []}}\n");
    }
    let body: Vec<String> = ts.iter().map(|t| format!("  {}", tensor_to_json(t))).collect();
    format!("{{\"{key}\": [\n{}\n]}}\n", body.join(",\n"))
}

/// Human-readable text of a tensor: nested brackets for up to
/// `READABLE_MAX` elements, else the first 8 values and min/max/mean.
pub fn readable(t: &Tensor) -> String {
    let ty = format!(
        "tensor<{}f32>",
        t.shape.iter().map(|d| format!("{d}x")).collect::<String>()
    );
    if t.data.len() <= READABLE_MAX {
        return format!("{ty} = {}", nested(&t.shape, &t.data));
    }
    let head: Vec<String> = t.data.iter().take(8).map(|v| format!("{v:?}")).collect();
    let min = t.data.iter().copied().fold(f32::INFINITY, f32::min);
    let max = t.data.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mean = t.data.iter().map(|&v| v as f64).sum::<f64>() / t.data.len() as f64;
    format!(
        "{ty} = [{}, ...] ({} values, min {min:?}, max {max:?}, mean {:?})",
        head.join(", "),
        t.data.len(),
        mean as f32
    )
}

/// Tensors with at most this many elements print in full.
pub const READABLE_MAX: usize = 64;

fn nested(shape: &[usize], data: &[f32]) -> String {
    match shape.split_first() {
        None => data.first().map(|v| format!("{v:?}")).unwrap_or_default(),
        Some((&n, rest)) => {
            let step = rest.iter().product::<usize>();
            let parts: Vec<String> = (0..n).map(|i| nested(rest, &data[i * step..(i + 1) * step])).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_rank0() {
        let ts = vec![Tensor::scalar(1.5), Tensor { shape: vec![2, 1], data: vec![0.1, -3.0] }];
        let text = tensors_to_json("inputs", &ts);
        assert_eq!(text, "{\"inputs\": [\n  {\"shape\": [], \"data\": [1.5]},\n  {\"shape\": [2, 1], \"data\": [0.1, -3.0]}\n]}\n");
        assert_eq!(parse_inputs(&text, "a.json").ok(), Some(ts));
    }

    #[test]
    fn errors_are_located_and_specific() {
        let e = parse_inputs("{\"inputs\": [{\"shape\": [2], \"data\": [1.0]}]}", "a.json").err().map(|d| d.message);
        assert_eq!(e.as_deref(), Some("inputs[0]: shape [2] has 2 elements but \"data\" has 1 values"));
        let e = parse_inputs("{\"inputs\": [\n  {\"shape\": [1], \"data\": [true]}]}", "a.json").err();
        let e = e.map(|d| (d.loc.line, d.message.contains("invalid type: boolean")));
        assert_eq!(e, Some((2, true)));
        assert!(parse_inputs("{\"input\": []}", "a.json").is_err());
        assert!(parse_inputs("{\"inputs\": [{\"shape\": [18446744073709551615, 4], \"data\": []}]}", "a.json").is_err());
    }

    #[test]
    fn readable_nests_small_and_summarizes_large() {
        let t = Tensor { shape: vec![2, 2], data: vec![4.0, 1.0, 0.0, 1.0] };
        assert_eq!(readable(&t), "tensor<2x2xf32> = [[4.0, 1.0], [0.0, 1.0]]");
        assert_eq!(readable(&Tensor::scalar(18.0)), "tensor<f32> = 18.0");
        let big = Tensor { shape: vec![100], data: (0..100).map(|v| v as f32).collect() };
        assert!(readable(&big).ends_with("(100 values, min 0.0, max 99.0, mean 49.5)"), "{}", readable(&big));
    }

    #[test]
    fn non_finite_values_print_as_null() {
        assert_eq!(json_f32(f32::NAN), "null");
        assert_eq!(json_f32(f32::INFINITY), "null");
        assert_eq!(json_f32(2.0), "2.0");
    }
}
