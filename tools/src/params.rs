//! `ckopt-run --params FILE.safetensors` / `--params-out FILE.safetensors`:
//! the `{ck.param}` arguments of a function by name (`ck.name`, else the
//! value name) in a safetensors file (`ckopt_onnx::weights`). Reading is
//! strict: every `{ck.param}` argument must be in the file with its exact
//! shape and dtype F32, and every tensor in the file must be one of them.

use crate::input::{ToolError, read_bytes};
use ckopt_interp::Tensor;
use ckopt_ir::Func;
use ckopt_onnx::NamedTensor;
use ckopt_onnx::weights::{arg_name, bind, read_safetensors, write_safetensors};

/// The `{ck.param}` arguments of `f` from the safetensors file at `path`:
/// (argument index, tensor), in argument order.
pub fn load_params(path: &str, f: &Func) -> Result<Vec<(usize, Tensor)>, ToolError> {
    let bytes = read_bytes(path)?;
    let tensors = read_safetensors(&bytes, path).map_err(|d| ToolError::diag(d, None))?;
    let bound = bind(f, tensors, path).map_err(|d| ToolError::diag(d, None))?;
    bound
        .into_iter()
        .map(|(i, t)| {
            let shape = t.shape.iter().map(|&d| d as usize).collect();
            Tensor::new(shape, t.data).map(|x| (i, x)).map_err(|m| ToolError::msg(format!("{path}: tensor '{}': {m}", t.name)))
        })
        .collect()
}

/// Writes the `{ck.param}` arguments of `f` (values from `args`, one per argument) to `path`.
pub fn save_params(path: &str, f: &Func, args: &[Tensor]) -> Result<usize, ToolError> {
    let mut out = Vec::new();
    for (i, t) in args.iter().enumerate() {
        if f.is_trainable(i) {
            out.push(NamedTensor { name: arg_name(f, i), shape: t.shape.iter().map(|&d| d as u64).collect(), data: t.data.clone() });
        }
    }
    if out.is_empty() {
        return Err(ToolError::msg(format!("--params-out: @{} has no {{ck.param}} arguments to write", f.name)));
    }
    let bytes = write_safetensors(&out).map_err(|e| ToolError::msg(e.to_string()))?;
    std::fs::write(path, bytes).map_err(|e| ToolError::msg(format!("cannot write '{path}': {e}")))?;
    Ok(out.len())
}
