//! Tensor JSON (docs/tools.md): `{"inputs": [{"shape": [2, 3], "data": [...]}, ...]}`
//! and `{"outputs": [...]}` in the same form, row-major, rank 0 as
//! `"shape": []`, with an optional `"dtype"` (`f32`, `bf16`, `f16`, `i64`,
//! `i32`, `i1`; default: the element type the reader expects there, e.g. the
//! argument's).
//!
//! Reading is strict: unknown keys, a missing key, a `data` length that
//! differs from the product of `shape`, non-numbers for a float type,
//! non-integers (or integers out of range) for an integer type, and anything
//! but `true`/`false`/0/1 for `i1` are errors, located (FILE:LINE:COL) where
//! serde_json knows the position.
//! Writing prints one tensor per line; floats use the shortest text that
//! reads back to the same f32 (`1.0`, `0.1`), and non-finite values
//! (which JSON cannot spell) print as `null`; integers print as integers,
//! `i1` as `true`/`false`; `"dtype"` is written for every type but f32.

use ckopt_interp::Tensor;
use ckopt_interp::tensor::{MAX_TENSOR_BYTES, num_elements};
use ckopt_ir::{DType, Diag, Loc};
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TensorJson {
    shape: Vec<u64>,
    #[serde(default)]
    dtype: Option<String>,
    data: Vec<Elem>,
}

/// One element as written: a JSON integer, other number, or boolean
/// (anything else is a located syntax-level error from serde_json).
#[derive(Clone, Copy, Debug)]
enum Elem {
    Int(i64),
    Float(f64),
    Bool(bool),
}

impl<'de> Deserialize<'de> for Elem {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Elem, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Elem;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number or a boolean")
            }
            fn visit_bool<E>(self, v: bool) -> Result<Elem, E> {
                Ok(Elem::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Elem, E> {
                Ok(Elem::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Elem, E> {
                Ok(i64::try_from(v).map_or(Elem::Float(v as f64), Elem::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Elem, E> {
                Ok(Elem::Float(v))
            }
        }
        d.deserialize_any(V)
    }
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

/// An element as it was written, for messages.
fn kind(v: &Elem) -> String {
    match v {
        Elem::Int(i) => i.to_string(),
        Elem::Float(x) => format!("{x:?}"),
        Elem::Bool(b) => b.to_string(),
    }
}

/// One tensor's elements read as `dt`; the error names the element.
fn elements(dt: DType, data: &[Elem]) -> Result<(Vec<f32>, Vec<i64>), String> {
    let bad = |j: usize, v: &Elem, want: &str| format!("\"data\"[{j}] is {}, but {} data must be {want}", kind(v), dt.name());
    if dt.is_float() {
        let vals = data
            .iter()
            .enumerate()
            .map(|(j, v)| match v {
                Elem::Int(i) => Ok(*i as f32),
                Elem::Float(x) => Ok(*x as f32),
                Elem::Bool(_) => Err(bad(j, v, "numbers")),
            })
            .collect::<Result<_, _>>()?;
        return Ok((vals, Vec::new()));
    }
    let ints = data
        .iter()
        .enumerate()
        .map(|(j, v)| {
            let i = match (dt, v) {
                (DType::I1, Elem::Bool(b)) => Some(i64::from(*b)),
                (_, Elem::Int(i)) => Some(*i),
                _ => None,
            };
            let ok = i.filter(|&i| match dt {
                DType::I1 => i == 0 || i == 1,
                DType::I32 => i32::try_from(i).is_ok(),
                _ => true,
            });
            ok.ok_or_else(|| {
                bad(j, v, match dt {
                    DType::I1 => "true, false, 0 or 1",
                    DType::I32 => "integers in i32's range",
                    _ => "integers",
                })
            })
        })
        .collect::<Result<_, _>>()?;
    Ok((Vec::new(), ints))
}

fn to_tensors(file: &str, key: &str, ts: Vec<TensorJson>, expected: &[DType]) -> Result<Vec<Tensor>, Diag> {
    let file_loc = Loc::new(Arc::from(file), 0, 0);
    let err = |m: String| Diag::error(file_loc.clone(), m);
    ts.into_iter()
        .enumerate()
        .map(|(i, t)| {
            let dt = match &t.dtype {
                None => expected.get(i).copied().unwrap_or(DType::F32),
                Some(name) => DType::from_name(name).ok_or_else(|| {
                    err(format!("{key}[{i}]: unknown \"dtype\" '{name}' (one of {})", DType::all_names()))
                })?,
            };
            let shape: Option<Vec<usize>> = t.shape.iter().map(|&d| usize::try_from(d).ok()).collect();
            let n = shape.as_deref().and_then(num_elements);
            match (shape, n) {
                (Some(shape), Some(n)) if n == t.data.len() && (n as u64).saturating_mul(8) <= MAX_TENSOR_BYTES => {
                    let (floats, ints) = elements(dt, &t.data).map_err(|m| err(format!("{key}[{i}]: {m}")))?;
                    let made = if dt.is_float() { Tensor::from_floats(shape, dt, floats) } else { Tensor::from_ints(shape, dt, ints) };
                    made.map_err(|e| err(format!("{key}[{i}]: {e}")))
                }
                (_, Some(n)) => Err(err(format!(
                    "{key}[{i}]: shape {:?} has {n} elements but \"data\" has {} values",
                    t.shape,
                    t.data.len()
                ))),
                _ => Err(err(format!("{key}[{i}]: shape {:?} is too large", t.shape))),
            }
        })
        .collect()
}

/// Parses `{"inputs": [...]}` (the text of `file`); entry i without a
/// `"dtype"` has element type `expected[i]` (f32 past its end).
pub fn parse_inputs(text: &str, file: &str, expected: &[DType]) -> Result<Vec<Tensor>, Diag> {
    let f: InputsFile = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    to_tensors(file, "inputs", f.inputs, expected)
}

/// Parses `{"outputs": [...]}` (the text of `file`), e.g. to compare runs;
/// entries without a `"dtype"` are f32.
pub fn parse_outputs(text: &str, file: &str) -> Result<Vec<Tensor>, Diag> {
    let f: OutputsFile = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    to_tensors(file, "outputs", f.outputs, &[])
}

/// One float as JSON: shortest round-trip text, `null` when not finite.
pub fn json_f32(v: f32) -> String {
    if v.is_finite() { serde_json::to_string(&v).unwrap_or_else(|_| "null".into()) } else { "null".into() }
}

/// `{"shape": [..], "data": [..]}` on one line (`"dtype"` after the shape
/// for every element type but f32).
pub fn tensor_to_json(t: &Tensor) -> String {
    let shape: Vec<String> = t.shape.iter().map(|d| d.to_string()).collect();
    let dtype = if t.dtype == DType::F32 { String::new() } else { format!(", \"dtype\": \"{}\"", t.dtype.name()) };
    format!("{{\"shape\": [{}]{dtype}, \"data\": [{}]}}", shape.join(", "), element_texts(t).join(", "))
}

/// Each element as JSON text (floats as `json_f32`, integers, `i1` as booleans).
fn element_texts(t: &Tensor) -> Vec<String> {
    match t.dtype {
        d if d.is_float() => t.data.iter().map(|&v| json_f32(v)).collect(),
        DType::I1 => t.ints.iter().map(|&v| (v != 0).to_string()).collect(),
        _ => t.ints.iter().map(|v| v.to_string()).collect(),
    }
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
    let ty = format!("tensor<{}{}>", t.shape.iter().map(|d| format!("{d}x")).collect::<String>(), t.dtype.name());
    let texts: Vec<String> = if t.dtype.is_float() {
        t.data.iter().map(|v| format!("{v:?}")).collect()
    } else {
        element_texts(t)
    };
    if texts.len() <= READABLE_MAX {
        return format!("{ty} = {}", nested(&t.shape, &texts));
    }
    let vals: Vec<f64> = (0..t.num_elements()).filter_map(|j| t.get_f64(j)).collect();
    let min = vals.iter().copied().fold(f64::INFINITY, f64::min);
    let max = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mean = vals.iter().sum::<f64>() / vals.len() as f64;
    let (min, max) = if t.dtype.is_float() {
        (format!("{:?}", min as f32), format!("{:?}", max as f32))
    } else {
        (format!("{min}"), format!("{max}"))
    };
    format!("{ty} = [{}, ...] ({} values, min {min}, max {max}, mean {:?})", texts[..8].join(", "), vals.len(), mean as f32)
}

/// Tensors with at most this many elements print in full.
pub const READABLE_MAX: usize = 64;

fn nested(shape: &[usize], data: &[String]) -> String {
    match shape.split_first() {
        None => data.first().cloned().unwrap_or_default(),
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
        let ts = vec![Tensor::scalar(1.5), Tensor::vector(vec![0.1, -3.0]).reshaped(vec![2, 1])];
        let text = tensors_to_json("inputs", &ts);
        assert_eq!(text, "{\"inputs\": [\n  {\"shape\": [], \"data\": [1.5]},\n  {\"shape\": [2, 1], \"data\": [0.1, -3.0]}\n]}\n");
        assert_eq!(parse_inputs(&text, "a.json", &[]).ok(), Some(ts));
    }

    #[test]
    fn errors_are_located_and_specific() {
        let e = parse_inputs("{\"inputs\": [{\"shape\": [2], \"data\": [1.0]}]}", "a.json", &[]).err().map(|d| d.message);
        assert_eq!(e.as_deref(), Some("inputs[0]: shape [2] has 2 elements but \"data\" has 1 values"));
        let e = parse_inputs("{\"inputs\": [\n  {\"shape\": [1], \"data\": [true]}]}", "a.json", &[]).err().map(|d| d.message);
        assert_eq!(e.as_deref(), Some("inputs[0]: \"data\"[0] is true, but f32 data must be numbers"));
        let e = parse_inputs("{\"inputs\": [\n  {\"shape\": [1], \"data\": [\"a\"]}]}", "a.json", &[]).err();
        let e = e.map(|d| (d.loc.line, d.message));
        assert_eq!(e, Some((2, "invalid tensor JSON: invalid type: string \"a\", expected a number or a boolean".to_string())));
        assert!(parse_inputs("{\"input\": []}", "a.json", &[]).is_err());
        assert!(parse_inputs("{\"inputs\": [{\"shape\": [18446744073709551615, 4], \"data\": []}]}", "a.json", &[]).is_err());
        assert!(parse_inputs("{\"inputs\": [{\"shape\": [1], \"data\": [1], \"dtype\": \"i8\"}]}", "a.json", &[]).is_err());
    }

    #[test]
    fn readable_nests_small_and_summarizes_large() {
        let t = Tensor::vector(vec![4.0, 1.0, 0.0, 1.0]).reshaped(vec![2, 2]);
        assert_eq!(readable(&t), "tensor<2x2xf32> = [[4.0, 1.0], [0.0, 1.0]]");
        assert_eq!(readable(&Tensor::scalar(18.0)), "tensor<f32> = 18.0");
        let m = Tensor::from_ints(vec![2], DType::I1, vec![1, 0]).expect("i1");
        assert_eq!(readable(&m), "tensor<2xi1> = [true, false]");
        let big = Tensor::vector((0..100).map(|v| v as f32).collect());
        assert!(readable(&big).ends_with("(100 values, min 0.0, max 99.0, mean 49.5)"), "{}", readable(&big));
    }

    #[test]
    fn integer_and_bool_tensors_round_trip_with_their_dtype() {
        let ts = vec![
            Tensor::from_ints(vec![2], DType::I64, vec![-100, 7]).expect("i64"),
            Tensor::from_ints(vec![3], DType::I1, vec![1, 0, 1]).expect("i1"),
        ];
        let text = tensors_to_json("inputs", &ts);
        assert!(text.contains("{\"shape\": [2], \"dtype\": \"i64\", \"data\": [-100, 7]}"), "{text}");
        assert!(text.contains("\"data\": [true, false, true]"), "{text}");
        assert_eq!(parse_inputs(&text, "a.json", &[]).ok(), Some(ts.clone()));
        // Without "dtype", the expected types apply; i1 also reads 0/1.
        let plain = "{\"inputs\": [{\"shape\": [2], \"data\": [-100, 7]}, {\"shape\": [3], \"data\": [1, 0, true]}]}";
        assert_eq!(parse_inputs(plain, "a.json", &[DType::I64, DType::I1]).ok(), Some(ts));
        let e = parse_inputs("{\"inputs\": [{\"shape\": [1], \"data\": [1.5]}]}", "a.json", &[DType::I64]).err().map(|d| d.message);
        assert_eq!(e.as_deref(), Some("inputs[0]: \"data\"[0] is 1.5, but i64 data must be integers"));
        let e = parse_inputs("{\"inputs\": [{\"shape\": [1], \"data\": [2]}]}", "a.json", &[DType::I1]).err().map(|d| d.message);
        assert_eq!(e.as_deref(), Some("inputs[0]: \"data\"[0] is 2, but i1 data must be true, false, 0 or 1"));
        let e = parse_inputs("{\"inputs\": [{\"shape\": [1], \"data\": [4294967296]}]}", "a.json", &[DType::I32]).err();
        assert!(e.is_some_and(|d| d.message.contains("i32's range")));
    }

    #[test]
    fn non_finite_values_print_as_null() {
        assert_eq!(json_f32(f32::NAN), "null");
        assert_eq!(json_f32(f32::INFINITY), "null");
        assert_eq!(json_f32(2.0), "2.0");
    }
}
