//! Diagnostics: errors are values with a location.
//!
//! Rendering follows MLIR/clang: `FILE:LINE:COL: error: MESSAGE`, then the
//! source line and a caret under the column, when the source is known.

use std::fmt;
use std::sync::Arc;

/// A source location. Lines and columns are 1-based; line 0 means unknown.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Loc {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
}

impl Loc {
    pub fn new(file: Arc<str>, line: u32, col: u32) -> Self {
        Loc { file, line, col }
    }
    pub fn unknown() -> Self {
        Loc { file: Arc::from("<unknown>"), line: 0, col: 0 }
    }
    pub fn is_known(&self) -> bool {
        self.line > 0
    }
}

impl Default for Loc {
    fn default() -> Self {
        Loc::unknown()
    }
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_known() {
            write!(f, "{}:{}:{}", self.file, self.line, self.col)
        } else {
            write!(f, "{}", self.file)
        }
    }
}

/// Source lines longer than this are shown as a window around the caret.
pub const MAX_SHOWN_LINE: usize = 160;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
    Note,
    Remark,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
            Severity::Remark => "remark",
        }
    }
}

/// One diagnostic, with optional attached notes (each with its own location).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{loc}: {}: {message}", severity.name())]
pub struct Diag {
    pub loc: Loc,
    pub severity: Severity,
    pub message: String,
    pub notes: Vec<Diag>,
}

impl Diag {
    pub fn error(loc: Loc, message: impl Into<String>) -> Self {
        Diag { loc, severity: Severity::Error, message: message.into(), notes: Vec::new() }
    }
    /// An error without a location (`Loc::unknown()`): what a library
    /// function that sees no source returns; the caller that knows the
    /// location reports the `message` there.
    pub fn unlocated(message: impl Into<String>) -> Self {
        Diag::error(Loc::unknown(), message)
    }
    pub fn note(loc: Loc, message: impl Into<String>) -> Self {
        Diag { loc, severity: Severity::Note, message: message.into(), notes: Vec::new() }
    }
    pub fn with_note(mut self, note: Diag) -> Self {
        self.notes.push(note);
        self
    }
    /// Renders the diagnostic (and its notes) with the source line and a caret
    /// when `source` is the text of the file the location points into.
    pub fn render(&self, source: Option<&str>) -> String {
        let mut out = format!("{self}\n");
        if let Some(src) = source
            && self.loc.is_known()
            && let Some(line) = src.lines().nth(self.loc.line as usize - 1)
        {
            // Columns count bytes (as MLIR's do); the caret is placed
            // under the character that starts at that byte.
            let mut col = ((self.loc.col.max(1) - 1) as usize).min(line.len());
            while !line.is_char_boundary(col) {
                col -= 1;
            }
            // Long lines (a 1000-argument signature) are shown as a
            // window around the caret, marked with "...".
            let (mut start, mut end) = (0, line.len());
            if line.len() > MAX_SHOWN_LINE {
                start = col.saturating_sub(MAX_SHOWN_LINE / 2);
                while !line.is_char_boundary(start) {
                    start -= 1;
                }
                end = (start + MAX_SHOWN_LINE).min(line.len());
                while !line.is_char_boundary(end) {
                    end -= 1;
                }
            }
            let prefix = if start > 0 { "..." } else { "" };
            let suffix = if end < line.len() { "..." } else { "" };
            out.push_str(prefix);
            out.push_str(&line[start..end]);
            out.push_str(suffix);
            out.push('\n');
            let pad: String = prefix
                .chars()
                .chain(line[start..col].chars())
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            out.push_str(&pad);
            out.push_str("^\n");
        }
        for n in &self.notes {
            out.push_str(&n.render(source));
        }
        out
    }
}

/// A list of diagnostics: what a parse or a verification returns on failure.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Diags(pub Vec<Diag>);

impl Diags {
    pub fn new() -> Self {
        Diags(Vec::new())
    }
    pub fn push(&mut self, d: Diag) {
        self.0.push(d);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(|d| d.severity == Severity::Error)
    }
    pub fn render(&self, source: Option<&str>) -> String {
        self.0.iter().map(|d| d.render(source)).collect()
    }
    /// `Ok(())` when empty, else `Err(self)`.
    pub fn into_result(self) -> Result<(), Diags> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }
}

impl From<Diag> for Diags {
    fn from(d: Diag) -> Self {
        Diags(vec![d])
    }
}

impl fmt::Display for Diags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diags {}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn long_lines_are_windowed_around_the_caret() {
        let line = format!("{}XY{}", "a".repeat(1000), "b".repeat(1000));
        let d = Diag::error(Loc::new(Arc::from("a.ck"), 1, 1001), "here");
        let r = d.render(Some(&line));
        let lines: Vec<&str> = r.lines().collect();
        assert!(lines[1].len() <= MAX_SHOWN_LINE + 6, "window too long: {}", lines[1].len());
        assert!(lines[1].starts_with("...") && lines[1].ends_with("..."));
        let caret = lines[2].find('^').expect("caret");
        assert_eq!(&lines[1][caret..caret + 2], "XY");
    }
    #[test]
    fn render_puts_caret_under_column() {
        let d = Diag::error(Loc::new(Arc::from("a.ck"), 2, 5), "bad");
        let r = d.render(Some("line one\n    %x = foo\n"));
        assert_eq!(r, "a.ck:2:5: error: bad\n    %x = foo\n    ^\n");
    }
    #[test]
    fn caret_column_counts_bytes() {
        // "é" is two bytes: byte column 5 is the 'x' after "é, ".
        let d = Diag::error(Loc::new(Arc::from("a.ck"), 1, 5), "bad");
        assert_eq!(d.render(Some("é, x\n")), "a.ck:1:5: error: bad\né, x\n   ^\n");
        let far = Diag::error(Loc::new(Arc::from("a.ck"), 1, 99), "bad");
        assert!(far.render(Some("ab\n")).ends_with("ab\n  ^\n"));
    }
}
