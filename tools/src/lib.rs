//! Shared helpers of the ckopt command-line tools.
//!
//! - `input`: reading files/stdin, loading a verified module, `ToolError`
//!   (located diagnostics rendered against their source).
//! - `tensor_json`: the tensor JSON of SPEC §2 (`--inputs`, `--outputs`)
//!   and a readable text form.

pub mod input;
pub mod tensor_json;
