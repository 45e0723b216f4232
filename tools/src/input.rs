//! Reading tool inputs: a file (or `-` for stdin) into bytes, a ck module
//! parsed and verified from it, and errors rendered as located diagnostics.
//!
//! Contract: nothing here panics on any input; every failure is a
//! `ToolError` whose `render()` is what the tool prints on stderr
//! (`FILE:LINE:COL: error: MSG` + source line + caret when located).

use ckopt_ir::{Diag, Diags, Module};
use std::io::Read;

/// A tool failure: located diagnostics with their source text, or a plain message.
#[derive(Debug)]
pub enum ToolError {
    /// Diagnostics and the text of the file they point into (when known).
    Diags { diags: Diags, source: Option<String> },
    /// A message without a location (`cannot read 'x': ...`).
    Message(String),
}

impl ToolError {
    pub fn msg(m: impl Into<String>) -> Self {
        ToolError::Message(m.into())
    }
    pub fn diag(d: Diag, source: Option<&str>) -> Self {
        ToolError::Diags { diags: Diags::from(d), source: source.map(str::to_string) }
    }
    /// The text to print on stderr; `tool` prefixes plain messages.
    pub fn render(&self, tool: &str) -> String {
        match self {
            ToolError::Diags { diags, source } => diags.render(source.as_deref()),
            ToolError::Message(m) => format!("{tool}: error: {m}\n"),
        }
    }
}

/// Reads `path` (`-` means stdin) as bytes.
pub fn read_bytes(path: &str) -> Result<Vec<u8>, ToolError> {
    let mut buf = Vec::new();
    if path == "-" {
        std::io::stdin().read_to_end(&mut buf).map_err(|e| ToolError::msg(format!("cannot read stdin: {e}")))?;
    } else {
        buf = std::fs::read(path).map_err(|e| ToolError::msg(format!("cannot read '{path}': {e}")))?;
    }
    Ok(buf)
}

/// The name diagnostics use for `path` (`<stdin>` for `-`).
pub fn display_name(path: &str) -> &str {
    if path == "-" { "<stdin>" } else { path }
}

/// A parsed and verified module with the text it came from.
#[derive(Debug)]
pub struct Loaded {
    pub module: Module,
    pub source: String,
    pub name: String,
}

/// Reads, parses and verifies a ck file (`-` = stdin). Invalid UTF-8,
/// syntax and verifier errors come back rendered against the source.
pub fn load_module(path: &str) -> Result<Loaded, ToolError> {
    let bytes = read_bytes(path)?;
    let name = display_name(path).to_string();
    let module = ckopt_ir::parse_module_bytes(&bytes, &name)
        .and_then(|m| ckopt_ir::verify_module(&m).map(|()| m))
        .map_err(|diags| ToolError::Diags { diags, source: Some(String::from_utf8_lossy(&bytes).into_owned()) })?;
    Ok(Loaded { module, source: String::from_utf8_lossy(&bytes).into_owned(), name })
}

/// Writes `text` to `path`, or to stdout when `path` is `-`.
pub fn write_text(path: &str, text: &str) -> Result<(), ToolError> {
    use std::io::Write;
    if path == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| ToolError::msg(format!("cannot write to stdout: {e}")))
    } else {
        std::fs::write(path, text).map_err(|e| ToolError::msg(format!("cannot write '{path}': {e}")))
    }
}
