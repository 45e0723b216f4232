//! Parameters in safetensors files (the `safetensors` crate): written by
//! `ckopt-translate --from=onnx --params-out`, read by `ckopt-run --params`,
//! written back by `ckopt-run --train --params-out`.
//!
//! A function's parameter names: each `{ck.param}` argument's `ck.name`
//! attribute, or its value name when it has none. `bind` matches a file to
//! a function strictly: every `{ck.param}` argument must be in the file
//! with its exact shape and dtype F32, and every tensor in the file must be
//! one of them; anything else is a diagnostic naming the tensor (and the
//! file), never a silent partial load. The reader is the crate's validating
//! deserializer (header length, JSON, offsets), so truncated or corrupt
//! files are errors, not panics.

use crate::NamedTensor;
use ckopt_ir::ops::ATTR_NAME;
use ckopt_ir::{Attr, DType, Diag, Func, Loc};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use std::collections::HashMap;
use std::sync::Arc;

fn at(file: &str) -> Loc {
    Loc::new(Arc::from(file), 0, 0)
}

/// Why `write_safetensors` failed (the safetensors crate's error).
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("tensor '{name}': {source}")]
    Tensor { name: String, source: safetensors::SafeTensorError },
    #[error("cannot serialize the parameters: {0}")]
    Serialize(safetensors::SafeTensorError),
}

/// The ck element type of a safetensors dtype (`F32`, `BF16`, `F16`, `I64`,
/// `I32`, `BOOL`); `None` for the others. One table for every reader and
/// writer of safetensors files (parameters, datasets, checkpoints).
pub fn ck_dtype(d: Dtype) -> Option<DType> {
    Some(match d {
        Dtype::F32 => DType::F32,
        Dtype::BF16 => DType::BF16,
        Dtype::F16 => DType::F16,
        Dtype::I64 => DType::I64,
        Dtype::I32 => DType::I32,
        Dtype::BOOL => DType::I1,
        _ => return None,
    })
}

/// The safetensors dtype of a ck element type (the inverse of `ck_dtype`;
/// `i1` is `BOOL`, one byte per element, as ck stores it).
pub fn safetensors_dtype(d: DType) -> Dtype {
    match d {
        DType::F32 => Dtype::F32,
        DType::BF16 => Dtype::BF16,
        DType::F16 => Dtype::F16,
        DType::I64 => Dtype::I64,
        DType::I32 => Dtype::I32,
        DType::I1 => Dtype::BOOL,
    }
}

/// Serializes `tensors` (f32, little-endian) as one safetensors file.
pub fn write_safetensors(tensors: &[NamedTensor]) -> Result<Vec<u8>, WriteError> {
    let bytes: Vec<Vec<u8>> = tensors.iter().map(|t| t.data.iter().flat_map(|v| v.to_le_bytes()).collect()).collect();
    let mut views = Vec::with_capacity(tensors.len());
    for (t, b) in tensors.iter().zip(&bytes) {
        let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
        let v = TensorView::new(Dtype::F32, shape, b).map_err(|source| WriteError::Tensor { name: t.name.clone(), source })?;
        views.push((t.name.clone(), v));
    }
    safetensors::tensor::serialize(views, None).map_err(WriteError::Serialize)
}

/// Reads every tensor of a safetensors file (`file` names it in errors);
/// only F32 tensors are accepted.
pub fn read_safetensors(bytes: &[u8], file: &str) -> Result<Vec<NamedTensor>, Diag> {
    let st = SafeTensors::deserialize(bytes)
        .map_err(|e| Diag::error(at(file), format!("not a valid safetensors file: {e}")))?;
    let mut out = Vec::new();
    let mut names: Vec<String> = st.names().into_iter().map(str::to_string).collect();
    names.sort();
    for name in names {
        let v = st.tensor(&name).map_err(|e| Diag::error(at(file), format!("tensor '{name}': {e}")))?;
        if v.dtype() != Dtype::F32 {
            return Err(Diag::error(at(file), format!("tensor '{name}' has dtype {:?}; ckopt parameters are F32", v.dtype())));
        }
        let data: Vec<f32> = v.data().chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        out.push(NamedTensor { name, shape: v.shape().iter().map(|&d| d as u64).collect(), data });
    }
    Ok(out)
}

/// The weights-file name of argument `i` of `f`: its `ck.name`, else its value name.
pub fn arg_name(f: &Func, i: usize) -> String {
    match f.params.get(i) {
        Some(p) => p.attrs.get(ATTR_NAME).and_then(Attr::as_str).map_or_else(|| f.name_of(p.value).to_string(), str::to_string),
        None => String::new(),
    }
}

/// Matches `tensors` (read from `file`) to the `{ck.param}` arguments of
/// `f` by name: returns (argument index, tensor) for each of them, in
/// argument order.
pub fn bind(f: &Func, tensors: Vec<NamedTensor>, file: &str) -> Result<Vec<(usize, NamedTensor)>, Diag> {
    let mut by_name: HashMap<String, NamedTensor> = tensors.into_iter().map(|t| (t.name.clone(), t)).collect();
    let mut out = Vec::new();
    let mut missing = Vec::new();
    for i in 0..f.params.len() {
        if !f.is_trainable(i) {
            continue;
        }
        let name = arg_name(f, i);
        let ty = f.ty(f.params[i].value);
        match by_name.remove(&name) {
            Some(t) => {
                if t.shape != ty.shape {
                    return Err(Diag::error(
                        at(file),
                        format!("tensor '{name}' has shape {:?}, but argument #{i} of @{} is {ty}", t.shape, f.name),
                    )
                    .with_note(Diag::note(f.loc.clone(), format!("@{} is defined here", f.name))));
                }
                if ty.dtype != ckopt_ir::DType::F32 {
                    return Err(Diag::error(at(file), format!("argument '{name}' of @{} is {ty}; parameters must be f32", f.name)));
                }
                out.push((i, t));
            }
            None => missing.push(name),
        }
    }
    if !missing.is_empty() {
        return Err(Diag::error(
            at(file),
            format!("no tensor for {{ck.param}} argument{} {} of @{}", if missing.len() > 1 { "s" } else { "" }, quote(&missing), f.name),
        ));
    }
    if !by_name.is_empty() {
        let mut extra: Vec<String> = by_name.into_keys().collect();
        extra.sort();
        return Err(Diag::error(
            at(file),
            format!("tensor{} {} match{} no {{ck.param}} argument of @{}", if extra.len() > 1 { "s" } else { "" }, quote(&extra), if extra.len() > 1 { "" } else { "es" }, f.name),
        ));
    }
    Ok(out)
}

fn quote(names: &[String]) -> String {
    let shown: Vec<String> = names.iter().take(8).map(|n| format!("'{n}'")).collect();
    let more = if names.len() > 8 { format!(" and {} more", names.len() - 8) } else { String::new() };
    format!("{}{more}", shown.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::TensorType;

    fn nt(name: &str, shape: &[u64], data: &[f32]) -> NamedTensor {
        NamedTensor { name: name.into(), shape: shape.to_vec(), data: data.to_vec() }
    }

    #[test]
    fn dtype_table_is_a_bijection_on_cks_types() {
        for &d in DType::ALL {
            assert_eq!(ck_dtype(safetensors_dtype(d)), Some(d));
            assert_eq!(safetensors_dtype(d).bitsize() as u64 / 8, d.bytes(), "{d:?}");
        }
        assert_eq!(ck_dtype(Dtype::U8), None);
    }

    #[test]
    fn round_trip_keeps_names_shapes_and_bits() {
        let ts = vec![nt("fc1.weight", &[2, 2], &[1.0, -0.5, f32::MIN_POSITIVE, 3.0]), nt("b", &[], &[7.0])];
        let bytes = write_safetensors(&ts).expect("write");
        let back = read_safetensors(&bytes, "p.safetensors").expect("read");
        assert_eq!(back, vec![ts[1].clone(), ts[0].clone()], "sorted by name");
    }

    #[test]
    fn truncated_and_garbage_files_are_errors() {
        let bytes = write_safetensors(&[nt("w", &[3], &[1.0, 2.0, 3.0])]).expect("write");
        for cut in 0..bytes.len() {
            assert!(read_safetensors(&bytes[..cut], "t").is_err(), "cut at {cut}");
        }
        assert!(read_safetensors(b"\xff\xff\xff\xff\xff\xff\xff\xffjunk", "g").is_err());
    }

    #[test]
    fn bind_names_missing_extra_and_misshapen_tensors() {
        let mut f = Func::new("f", Loc::unknown());
        f.add_param("x", TensorType::f32(vec![2]), false);
        f.add_param("w", TensorType::f32(vec![2, 2]), true);
        f.params[1].attrs.insert(ATTR_NAME.into(), Attr::Str("fc.weight".into()));
        let ok = bind(&f, vec![nt("fc.weight", &[2, 2], &[0.0; 4])], "p").expect("bind");
        assert_eq!(ok[0].0, 1);
        let e = bind(&f, vec![], "p").expect_err("missing").to_string();
        assert!(e.contains("no tensor for {ck.param} argument 'fc.weight' of @f"), "{e}");
        let e = bind(&f, vec![nt("fc.weight", &[4], &[0.0; 4])], "p").expect_err("shape").to_string();
        assert!(e.contains("tensor 'fc.weight' has shape [4], but argument #1 of @f is tensor<2x2xf32>"), "{e}");
        let e = bind(&f, vec![nt("fc.weight", &[2, 2], &[0.0; 4]), nt("zz", &[1], &[0.0])], "p").expect_err("extra").to_string();
        assert!(e.contains("tensor 'zz' matches no {ck.param} argument of @f"), "{e}");
    }
}
