//! Reading tool inputs: a file (or `-` for stdin) into bytes, a ck module
//! parsed and verified from it, and errors rendered as located diagnostics.
//!
//! Contract: nothing here panics on any input; every failure is a
//! `ToolError` whose `render()` is what the tool prints on stderr
//! (`FILE:LINE:COL: error: MSG` + source line + caret when located).

use ckopt_ir::{Diag, Diags, Module};
use std::io::Read;
use std::sync::Arc;

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

/// An input file as text: its display name (`<stdin>` for `-`) and contents.
#[derive(Clone, Debug)]
pub struct Source {
    pub name: Arc<str>,
    pub text: String,
}

/// Reads `path` (`-` = stdin) as UTF-8 text; invalid UTF-8 is a diagnostic
/// at the line and column of the first bad byte (rendered with the valid
/// prefix as source), never a lossy decode.
pub fn read_source(path: &str) -> Result<Source, ToolError> {
    let bytes = read_bytes(path)?;
    let name: Arc<str> = Arc::from(display_name(path));
    let text = decode_utf8(bytes, &name)?;
    Ok(Source { name, text })
}

/// Decodes UTF-8, locating the first invalid byte (1-based line, byte
/// column; `ckopt_ir::parser::decode_utf8`).
pub fn decode_utf8(bytes: Vec<u8>, name: &Arc<str>) -> Result<String, ToolError> {
    ckopt_ir::parser::decode_utf8(bytes, name, 1).map_err(|(d, good)| ToolError::diag(d, Some(&good)))
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

/// Writes `text` to stdout. A reader that closed the pipe early
/// (`ckopt-gen ... | head`) is not an error: like other Unix filters, the
/// tool stops writing and succeeds.
pub fn write_stdout(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// Writes `text` to `path`, or to stdout when `path` is `-`.
pub fn write_text(path: &str, text: &str) -> Result<(), ToolError> {
    if path == "-" {
        write_stdout(text).map_err(|e| ToolError::msg(format!("cannot write to stdout: {e}")))
    } else {
        std::fs::write(path, text).map_err(|e| ToolError::msg(format!("cannot write '{path}': {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first bad byte is located by line and column; the message names it.
    #[test]
    fn invalid_utf8_is_located() {
        let name: Arc<str> = Arc::from("f.ck");
        let err = decode_utf8(b"module {\n  ab\xFFc\n".to_vec(), &name).unwrap_err();
        let r = err.render("t");
        assert!(r.starts_with("f.ck:2:5: error: invalid UTF-8 (byte 0xFF)\n  ab\n    ^\n"), "{r}");
        assert_eq!(decode_utf8(b"ok".to_vec(), &name).ok().as_deref(), Some("ok"));
    }
}
