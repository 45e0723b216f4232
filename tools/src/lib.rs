//! Shared helpers of the ckopt command-line tools.
//!
//! - `input`: reading files/stdin, loading a verified module, `ToolError`
//!   (located diagnostics rendered against their source).
//! - `tensor_json`: the tensor JSON of docs/tools.md (`--inputs`, `--outputs`)
//!   and a readable text form.
//! - `opt`: the `ckopt-opt` driver (split, parse, verify, pipeline, print,
//!   `--verify-diagnostics`, reports), kept out of the binary to be testable.
//! - `lowered` (feature `lower`): planning and running on the cpu/cuda backends.
//! - `params`: `{ck.param}` arguments by name from/to safetensors files
//!   (`ckopt-run --params`, `--params-out`).
//! - `train`: SGD on the `{ck.param}` arguments through `@NAME_grad`
//!   (autodiff in-process when the file has none), for `ckopt-run --train`.
//!
//! Only this crate uses `anyhow`; the libraries return `Diag`s.

pub mod cli;
pub mod input;
pub mod opt;
pub mod params;
pub mod tensor_json;
#[cfg(feature = "lower")]
pub mod lowered;
pub mod train;
