//! ckopt-ir: the `ck` tensor IR.
//!
//! Types, attributes, the op table with its type rules, modules/functions,
//! diagnostics, and (in `parser`, `printer`, `verify`) the textual form in
//! MLIR's generic syntax. No LLVM, no egg: everything else depends on this.

pub mod attr;
pub mod diag;
pub mod expect;
pub mod func;
pub mod math;
pub mod mixed;
pub mod ops;
pub mod parser;
pub mod printer;
pub mod random;
pub mod fusion;
pub mod split;
pub mod verify;
pub mod types;
#[cfg(feature = "testgen")]
pub mod testgen;

pub use attr::{Attr, Attrs};
pub use diag::{Diag, Diags, Loc, Severity};
pub use func::{Func, Module, Op, Param, ValueData, ValueId, attrs};
pub use ops::{Arity, AttrKind, OpKind, infer_type};
pub use types::{DType, TensorType};
pub use printer::print_module;
pub use verify::verify_module;
pub use parser::{parse_module, parse_module_at, parse_module_bytes};

/// Parses `text` (named `file` in diagnostics) and verifies the module.
/// Parse errors are returned without running the verifier.
pub fn parse_and_verify(text: &str, file: &str) -> Result<Module, Diags> {
    let m = parser::parse_module(text, file)?;
    verify::verify_module(&m)?;
    Ok(m)
}
