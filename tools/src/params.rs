//! `ckopt-run --params FILE.safetensors` / `--params-out FILE.safetensors`:
//! the `{ck.param}` arguments of a function by name (`ck.name`, else the
//! value name) in a safetensors file (`ckopt_onnx::weights`). Reading is
//! strict: every `{ck.param}` argument must be in the file with its exact
//! shape and dtype F32, and every tensor in the file must be one of them.
//!
//! Reading never holds the file, nor all of the parameters, in host memory:
//! `ParamsFile::open` memory-maps the file and checks its header against
//! the function (no tensor data is read), then `tensor(i)` copies one
//! tensor out of the mapping and tells the kernel to drop the mapped pages
//! it touched (`MADV_DONTNEED`, so they leave the resident set), and the
//! caller hands it to the backend and drops it. `ckopt-run --train` reads
//! `--params` that way, one tensor at a time straight into the backend's
//! buffers.

use crate::input::ToolError;
use ckopt_interp::Tensor;
use ckopt_ir::{Diag, Func, Loc};
use ckopt_onnx::NamedTensor;
use ckopt_onnx::weights::{arg_name, bind, write_safetensors};
use memmap2::Mmap;
use safetensors::{Dtype, SafeTensors};
use std::sync::Arc;

/// A `--params` file, mapped and checked against a function: its tensors
/// are read one at a time (`tensor`).
pub struct ParamsFile {
    path: String,
    map: Mmap,
    /// Per bound argument: (argument index, name, shape, byte range in the file).
    entries: Vec<(usize, String, Vec<usize>, std::ops::Range<usize>)>,
}

impl ParamsFile {
    /// Maps `path` and matches its tensors to the `{ck.param}` arguments of
    /// `f` (the same checks and messages as `ckopt_onnx::weights`): no
    /// tensor data is read.
    pub fn open(path: &str, f: &Func) -> Result<ParamsFile, ToolError> {
        let at = || Loc::new(Arc::from(path), 0, 0);
        let file = std::fs::File::open(path).map_err(|e| ToolError::msg(format!("cannot read '{path}': {e}")))?;
        // SAFETY: a read-only mapping; a file changed by another process
        // while it is read is the user's error, as for any mapped file.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| ToolError::msg(format!("cannot read '{path}': {e}")))?;
        let mut headers = Vec::new();
        let mut ranges = std::collections::HashMap::new();
        {
            let st = SafeTensors::deserialize(&map)
                .map_err(|e| ToolError::diag(Diag::error(at(), format!("not a valid safetensors file: {e}")), None))?;
            let base = map.as_ptr() as usize;
            let mut names: Vec<String> = st.names().into_iter().map(str::to_string).collect();
            names.sort();
            for name in names {
                let v = st.tensor(&name).map_err(|e| ToolError::diag(Diag::error(at(), format!("tensor '{name}': {e}")), None))?;
                if v.dtype() != Dtype::F32 {
                    let m = format!("tensor '{name}' has dtype {:?}; ckopt parameters are F32", v.dtype());
                    return Err(ToolError::diag(Diag::error(at(), m), None));
                }
                let start = v.data().as_ptr() as usize - base;
                ranges.insert(name.clone(), start..start + v.data().len());
                headers.push(NamedTensor { name, shape: v.shape().iter().map(|&d| d as u64).collect(), data: Vec::new() });
            }
        }
        let bound = bind(f, headers, path).map_err(|d| ToolError::diag(d, None))?;
        let entries = bound
            .into_iter()
            .map(|(i, t)| {
                let r = ranges.remove(&t.name).unwrap_or(0..0);
                (i, t.name, t.shape.iter().map(|&d| d as usize).collect(), r)
            })
            .collect();
        Ok(ParamsFile { path: path.to_string(), map, entries })
    }

    /// The argument indices the file gives, in argument order.
    pub fn args(&self) -> Vec<usize> {
        self.entries.iter().map(|e| e.0).collect()
    }

    /// Argument `i`'s tensor, copied out of the mapping (`None`: the file
    /// does not hold argument `i`). The mapped pages it touched are
    /// released afterwards.
    pub fn tensor(&self, i: usize) -> Option<Result<Tensor, ToolError>> {
        let (_, name, shape, r) = self.entries.iter().find(|e| e.0 == i)?;
        let bytes = self.map.get(r.clone())?;
        let data: Vec<f32> = bytes.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        self.release(r.clone());
        Some(Tensor::new(shape.clone(), data).map_err(|m| ToolError::msg(format!("{}: tensor '{name}': {m}", self.path))))
    }

    /// Drops the mapped pages of `r` from the resident set (they are read
    /// again from the file, or its page cache, if touched again).
    fn release(&self, r: std::ops::Range<usize>) {
        #[cfg(unix)]
        {
            // SAFETY: no reference into these pages is alive (the tensor
            // was copied out above); the mapping is read-only and private,
            // so the pages come back unchanged from the file when touched.
            let _ = unsafe { self.map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, r.start, r.len()) };
        }
        #[cfg(not(unix))]
        let _ = r;
    }
}

/// The `{ck.param}` arguments of `f` from the safetensors file at `path`:
/// (argument index, tensor), in argument order.
pub fn load_params(path: &str, f: &Func) -> Result<Vec<(usize, Tensor)>, ToolError> {
    let file = ParamsFile::open(path, f)?;
    file.args().into_iter().filter_map(|i| file.tensor(i).map(|t| t.map(|t| (i, t)))).collect()
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
