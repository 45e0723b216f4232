//! Parser for ck IR written in MLIR's generic op syntax (docs/ir.md).
//!
//! Accepted input: either one `module [@name] [attributes {..}] { func.func ... }`
//! or a sequence of bare `func.func`s; `//` comments; functions
//! `func.func @f(%x: tensor<2x3xf32>, %w: tensor<3x3xf32> {ck.param}) -> T | (T, ..)
//! [attributes {..}] { ... }`; ops `[%r =] "ck.op"(%a, %b) [{attrs}] : (T, T) -> T | ()`,
//! one per line. Attribute values: `unit`, `true`/`false`, integers (`5 : i64`
//! or untyped `5`), floats with a `.` (`0.5 : f32`, `1.0e-5 : f32`, untyped
//! `0.5`, or `: f64` narrowed to f32), hexadecimal bit patterns
//! (`0x7F800000 : f32`), integer arrays `[0, 1]` and strings. A module's
//! name and attributes are accepted and dropped (`Module` has no slot for them).
//!
//! Output invariants: every op carries its `file:line:col` (the column of its
//! result name, or of its op name when it has none); values are resolved
//! (no undefined or redefined names survive); the operand types written in
//! an op's signature equal the types of its operand values; tensor types have
//! a byte size that fits in u64. Op-level type rules are NOT checked here:
//! that is `verify::verify_module` (see `crate::parse_and_verify`).
//!
//! Errors are `Diag`s. Inside a function body the parser recovers at the
//! next line after an error (ops are one per line), so one run reports
//! several errors (at most `MAX_ERRORS`); errors in a signature or at module
//! level stop the parse. Never panics; recursion (nested attribute arrays) is
//! bounded by `MAX_NESTING`; no allocation is sized by a number read from the
//! input. Time and memory are linear in the input length (hash lookups for
//! names).

use crate::attr::{Attr, Attrs};
use crate::diag::{Diag, Diags, Loc};
use crate::func::{Func, Module, Op, Param, ValueId};
use crate::ops::OpKind;
use crate::types::{DType, TensorType};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Deepest nesting of attribute arrays accepted before an error.
pub const MAX_NESTING: u32 = 64;
/// A parse stops after this many errors.
pub const MAX_ERRORS: usize = 100;

/// Parses `text` (the contents of `file`) into a module.
pub fn parse_module(text: &str, file: &str) -> Result<Module, Diags> {
    parse_module_at(text, file, 1)
}

/// Like `parse_module` for a chunk of a larger file that starts at line
/// `first_line` (1-based), so locations are those of the whole file.
pub fn parse_module_at(text: &str, file: &str, first_line: u32) -> Result<Module, Diags> {
    let mut p = Parser::new(text, file, first_line.max(1));
    let m = p.parse_top();
    if p.diags.is_empty() {
        m.ok_or_else(|| Diags::from(Diag::error(Loc::new(p.file.clone(), 1, 1), "parse failed")))
    } else {
        Err(p.diags)
    }
}

/// Parses raw bytes: invalid UTF-8 is a located error.
pub fn parse_module_bytes(bytes: &[u8], file: &str) -> Result<Module, Diags> {
    parse_module_bytes_at(bytes, file, 1)
}

/// `parse_module_bytes` with a line offset (see `parse_module_at`).
pub fn parse_module_bytes_at(bytes: &[u8], file: &str, first_line: u32) -> Result<Module, Diags> {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_module_at(text, file, first_line),
        Err(_) => Err(Diags::from(decode_utf8(bytes.to_vec(), file, first_line).err().map(|(d, _)| d).unwrap_or_else(|| Diag::error(Loc::new(Arc::from(file), 1, 1), "invalid UTF-8")))),
    }
}

/// Decodes a file's bytes as UTF-8 text. Invalid UTF-8 is an error at the
/// line (counted from `first_line`) and byte column of the first bad byte,
/// returned with the valid prefix (the source to render it against):
/// never a lossy decode. The tools and the API read files through it.
pub fn decode_utf8(bytes: Vec<u8>, file: &str, first_line: u32) -> Result<String, (Diag, String)> {
    match String::from_utf8(bytes) {
        Ok(s) => Ok(s),
        Err(e) => {
            let bytes = e.as_bytes();
            let bad = e.utf8_error().valid_up_to();
            let good = &bytes[..bad];
            let nl = good.iter().filter(|&&b| b == b'\n').count();
            let line = first_line.max(1).saturating_add(u32::try_from(nl).unwrap_or(u32::MAX));
            let line_start = good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let col = u32::try_from(bad - line_start + 1).unwrap_or(u32::MAX);
            let d = Diag::error(Loc::new(Arc::from(file), line, col), format!("invalid UTF-8 (byte 0x{:02X})", bytes[bad]));
            Err((d, String::from_utf8_lossy(good).into_owned()))
        }
    }
}

// ---------------------------------------------------------------- lexer

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum K {
    /// `%name` (span includes `%`).
    Value,
    /// `@name` or `@"name"` (span includes `@`).
    Symbol,
    /// `"..."` (span includes quotes; escapes validated).
    Str,
    /// Decimal integer, optionally negative.
    Int,
    /// `0x...` integer.
    Hex,
    /// Float literal with a `.`.
    Float,
    /// Bare identifier (`func.func`, `true`, `f32`, ...).
    Ident,
    /// `tensor<...>` up to the closing `>` on the same line.
    Tensor,
    Punct(u8),
    Arrow,
    Eof,
    /// A lexical error; the message is in `Lexer::bad`.
    Bad,
}

#[derive(Clone, Copy, Debug)]
struct Tok {
    k: K,
    start: usize,
    end: usize,
    line: u32,
    col: u32,
}

struct Lexer<'a> {
    text: &'a str,
    b: &'a [u8],
    pos: usize,
    line: u32,
    line_start: usize,
    bad: String,
    /// Line and column just after the last token, where end of file is reported.
    last_end: (u32, u32),
}

fn is_id_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}
fn is_id_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.')
}
fn is_suffix_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.' | b'-')
}

impl<'a> Lexer<'a> {
    fn at(&self, i: usize) -> u8 {
        self.b.get(i).copied().unwrap_or(0)
    }

    fn skip_trivia(&mut self) {
        while self.pos < self.b.len() {
            match self.b[self.pos] {
                b' ' | b'\t' | b'\r' => self.pos += 1,
                b'\n' => {
                    self.pos += 1;
                    self.line = self.line.saturating_add(1);
                    self.line_start = self.pos;
                }
                b'/' if self.at(self.pos + 1) == b'/' => {
                    while self.pos < self.b.len() && self.b[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                _ => break,
            }
        }
    }

    /// Records a lexical error; the bad token spans at least one byte.
    fn bad(&mut self, start: usize, end: usize, msg: String) -> (K, usize) {
        self.bad = msg;
        (K::Bad, end.max(start + 1).min(self.b.len()))
    }

    /// Scans a string literal starting at the `"` at `start`; returns its end.
    fn scan_string(&mut self, start: usize) -> Result<usize, (usize, String)> {
        let mut i = start + 1;
        loop {
            match self.at(i) {
                b'"' => return Ok(i + 1),
                0 if i >= self.b.len() => return Err((i, "unterminated string literal".into())),
                b'\n' => return Err((i, "unterminated string literal (strings end on their line)".into())),
                b'\\' => {
                    let c = self.at(i + 1);
                    if matches!(c, b'"' | b'\\' | b'n' | b't') {
                        i += 2;
                    } else if c.is_ascii_hexdigit() && self.at(i + 2).is_ascii_hexdigit() {
                        i += 3;
                    } else {
                        return Err((i + 1, "unknown escape in string literal (use \\\\, \\\", \\n, \\t or \\XX)".into()));
                    }
                }
                _ => i += 1,
            }
        }
    }

    fn next(&mut self) -> Tok {
        self.skip_trivia();
        let start = self.pos;
        let line = self.line;
        let col = (start - self.line_start + 1).min(u32::MAX as usize) as u32;
        let (k, end) = self.lex_at(start);
        if k == K::Eof {
            let (line, col) = self.last_end;
            return Tok { k, start, end: start, line, col };
        }
        self.pos = end.max(if k == K::Eof { start } else { start + 1 }).min(self.b.len());
        // A token that swallowed a character we cannot resume inside of
        // (multi-byte UTF-8) moves on to the next char boundary.
        while self.pos < self.b.len() && !self.text.is_char_boundary(self.pos) {
            self.pos += 1;
        }
        // Tokens never span lines (strings and tensor types end on their line).
        self.last_end = (line, col.saturating_add((self.pos - start).min(u32::MAX as usize) as u32));
        Tok { k, start, end: self.pos, line, col }
    }

    fn lex_at(&mut self, s: usize) -> (K, usize) {
        if s >= self.b.len() {
            return (K::Eof, s);
        }
        let c = self.b[s];
        match c {
            b'%' => {
                let mut i = s + 1;
                if self.at(i).is_ascii_digit() {
                    while self.at(i).is_ascii_digit() {
                        i += 1;
                    }
                } else if self.at(i).is_ascii_alphabetic() || matches!(self.at(i), b'_' | b'$' | b'.' | b'-') {
                    while is_suffix_char(self.at(i)) {
                        i += 1;
                    }
                } else {
                    return self.bad(s, s + 1, "expected a value name after '%'".into());
                }
                (K::Value, i)
            }
            b'@' => {
                if self.at(s + 1) == b'"' {
                    match self.scan_string(s + 1) {
                        Ok(e) => (K::Symbol, e),
                        Err((e, m)) => self.bad(s, e, m),
                    }
                } else if is_id_start(self.at(s + 1)) {
                    let mut i = s + 2;
                    while is_id_char(self.at(i)) {
                        i += 1;
                    }
                    (K::Symbol, i)
                } else {
                    self.bad(s, s + 1, "expected a symbol name after '@'".into())
                }
            }
            b'"' => match self.scan_string(s) {
                Ok(e) => (K::Str, e),
                Err((e, m)) => self.bad(s, e, m),
            },
            b'-' if self.at(s + 1) == b'>' => (K::Arrow, s + 2),
            b'-' if self.at(s + 1).is_ascii_digit() => self.lex_number(s, s + 1),
            b'0'..=b'9' => self.lex_number(s, s),
            _ if is_id_start(c) => {
                let mut i = s + 1;
                while is_id_char(self.at(i)) {
                    i += 1;
                }
                if &self.b[s..i] == b"tensor" && self.at(i) == b'<' {
                    let mut j = i + 1;
                    loop {
                        match self.at(j) {
                            b'>' => return (K::Tensor, j + 1),
                            b'\n' => return self.bad(s, j, "unterminated tensor type (missing '>')".into()),
                            0 if j >= self.b.len() => {
                                return self.bad(s, j, "unterminated tensor type (missing '>')".into());
                            }
                            _ => j += 1,
                        }
                    }
                }
                (K::Ident, i)
            }
            b'(' | b')' | b'{' | b'}' | b'<' | b'>' | b'[' | b']' | b',' | b':' | b'=' => (K::Punct(c), s + 1),
            _ => {
                let ch = self.text[s..].chars().next().unwrap_or('?');
                self.bad(s, s + ch.len_utf8(), format!("unexpected character '{}'", ch.escape_debug()))
            }
        }
    }

    /// `digits_at` is the first digit (after an optional `-` at `s`).
    fn lex_number(&mut self, s: usize, digits_at: usize) -> (K, usize) {
        let mut i = digits_at;
        if self.at(i) == b'0' && self.at(i + 1) == b'x' {
            i += 2;
            let h = i;
            while self.at(i).is_ascii_hexdigit() {
                i += 1;
            }
            if i == h {
                return self.bad(s, i, "expected hexadecimal digits after '0x'".into());
            }
            return (K::Hex, i);
        }
        while self.at(i).is_ascii_digit() {
            i += 1;
        }
        if self.at(i) != b'.' {
            return (K::Int, i);
        }
        i += 1;
        while self.at(i).is_ascii_digit() {
            i += 1;
        }
        if matches!(self.at(i), b'e' | b'E') {
            let mut j = i + 1;
            if matches!(self.at(j), b'+' | b'-') {
                j += 1;
            }
            if self.at(j).is_ascii_digit() {
                while self.at(j).is_ascii_digit() {
                    j += 1;
                }
                i = j;
            }
        }
        (K::Float, i)
    }
}

/// Why a string literal could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
enum StrLitError {
    #[error("bad escape in string literal")]
    BadEscape,
    #[error("string literal is not valid UTF-8 after unescaping")]
    NotUtf8,
}

/// Decodes a validated string literal span (with quotes).
fn decode_string(span: &str) -> Result<String, StrLitError> {
    if !span.contains('\\') {
        return Ok(span.get(1..span.len().saturating_sub(1).max(1)).unwrap_or("").to_string());
    }
    let b = span.as_bytes();
    let inner = &b[1..b.len().saturating_sub(1).max(1)];
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] == b'\\' && i + 1 < inner.len() {
            match inner[i + 1] {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'"' => out.push(b'"'),
                b'\\' => out.push(b'\\'),
                _ => {
                    let hex = std::str::from_utf8(inner.get(i + 1..i + 3).unwrap_or(b"")).unwrap_or("");
                    let v = u8::from_str_radix(hex, 16).map_err(|_| StrLitError::BadEscape)?;
                    out.push(v);
                    i += 3;
                    continue;
                }
            }
            i += 2;
        } else {
            out.push(inner[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| StrLitError::NotUtf8)
}

// ---------------------------------------------------------------- parser

type PResult<T> = Result<T, ()>;

/// An operand as parsed: its token and its value (`None`: a poisoned name).
type Operand = (Tok, Option<ValueId>);

/// Names visible in one function body.
struct Scope<'a> {
    names: HashMap<&'a str, (ValueId, u32)>,
    /// Names whose definition failed to parse: uses of them are not reported again.
    poisoned: HashSet<&'a str>,
    /// The text of the type each value was declared with, indexed by
    /// `ValueId`: an operand type spelled the same way needs no parsing.
    ty_span: Vec<&'a str>,
}

struct Parser<'a> {
    text: &'a str,
    lx: Lexer<'a>,
    tok: Tok,
    file: Arc<str>,
    diags: Diags,
    /// Text of the last tensor type parsed.
    last_type_span: &'a str,
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The hint for an unknown `ck.` op name: the closest op, or the list.
pub fn unknown_op_hint(name: &str) -> String {
    // Long names are never close to an op name; skip the quadratic distance.
    let best = if name.len() > 40 { None } else { Some(()) };
    let best = best.and_then(|()| OpKind::ALL
        .iter()
        .map(|k| (edit_distance(name, k.name()), *k))
        .min_by_key(|(d, _)| *d));
    match best {
        Some((d, k)) if d <= (name.len() / 3).max(1) => format!("; did you mean 'ck.{}'?", k.name()),
        _ => {
            let names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
            format!(" (ops: {})", names.join(", "))
        }
    }
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, file: &str, first_line: u32) -> Self {
        let mut lx = Lexer { text, b: text.as_bytes(), pos: 0, line: first_line, line_start: 0, bad: String::new(), last_end: (first_line, 1) };
        let tok = lx.next();
        Parser { text, lx, tok, file: Arc::from(file), diags: Diags::new(), last_type_span: "" }
    }

    fn bump(&mut self) -> Tok {
        let t = self.tok;
        self.tok = self.lx.next();
        t
    }

    fn loc(&self, t: Tok) -> Loc {
        Loc::new(self.file.clone(), t.line, t.col)
    }

    fn span(&self, t: Tok) -> &'a str {
        let text: &'a str = self.text;
        text.get(t.start..t.end).unwrap_or("")
    }

    fn err<T>(&mut self, t: Tok, msg: impl Into<String>) -> PResult<T> {
        self.diags.push(Diag::error(self.loc(t), msg));
        Err(())
    }

    fn describe(&self, t: Tok) -> String {
        match t.k {
            K::Eof => "end of file".into(),
            _ => {
                let s = self.span(t);
                let short: String = s.chars().take(24).collect();
                if short.len() < s.len() { format!("'{short}...'") } else { format!("'{short}'") }
            }
        }
    }

    /// Reports "expected WHAT" at the current token (or its lexical error).
    fn expected<T>(&mut self, what: &str) -> PResult<T> {
        let t = self.tok;
        if t.k == K::Bad {
            let m = std::mem::take(&mut self.lx.bad);
            return self.err(t, m);
        }
        let found = self.describe(t);
        self.err(t, format!("expected {what}, found {found}"))
    }

    fn is_punct(&self, c: u8) -> bool {
        self.tok.k == K::Punct(c)
    }

    fn is_ident(&self, s: &str) -> bool {
        self.tok.k == K::Ident && self.span(self.tok) == s
    }

    fn expect_punct(&mut self, c: u8, ctx: &str) -> PResult<Tok> {
        if self.is_punct(c) {
            Ok(self.bump())
        } else {
            self.expected(&format!("'{}' {ctx}", c as char))
        }
    }

    // ------------------------------------------------------------ top level

    fn parse_top(&mut self) -> Option<Module> {
        let mut m = Module::default();
        if self.is_ident("module") {
            self.bump();
            if self.tok.k == K::Symbol {
                self.bump();
            }
            if self.is_ident("attributes") {
                self.bump();
                self.parse_dict(0).ok()?;
            }
            self.expect_punct(b'{', "to open the module body").ok()?;
            loop {
                if self.is_punct(b'}') {
                    self.bump();
                    break;
                }
                if self.is_ident("func.func") {
                    let f = self.parse_func()?;
                    m.funcs.push(f);
                } else if self.is_ident("module") {
                    let t = self.tok;
                    let _: PResult<()> = self.err(t, "nested modules are not supported");
                    return None;
                } else if self.tok.k == K::Eof {
                    let _: PResult<()> = self.expected("'}' to close the module");
                    return None;
                } else {
                    let _: PResult<()> = self.expected("'func.func' or '}'");
                    return None;
                }
            }
            if self.tok.k != K::Eof {
                let _: PResult<()> = self.expected("end of file after the module");
                return None;
            }
        } else {
            loop {
                if self.tok.k == K::Eof {
                    break;
                }
                if self.is_ident("func.func") {
                    let f = self.parse_func()?;
                    m.funcs.push(f);
                } else if self.is_ident("module") {
                    let t = self.tok;
                    let _: PResult<()> = self.err(t, "'module' must be the only top-level op (found after a function)");
                    return None;
                } else {
                    let _: PResult<()> = self.expected("'module' or 'func.func'");
                    return None;
                }
            }
        }
        Some(m)
    }

    fn parse_type(&mut self) -> PResult<TensorType> {
        if self.tok.k == K::Tensor {
            let t = self.bump();
            self.last_type_span = self.span(t);
            return self.tensor_type(t);
        }
        if self.tok.k == K::Ident {
            let s = self.span(self.tok);
            if DType::from_name(s).is_some() || s.starts_with('i') || s.starts_with('f') || s == "index" {
                let t = self.tok;
                return self.err(t, format!("expected a tensor type, found '{s}' (ck values are tensors: write tensor<{s}>)"));
            }
        }
        self.expected("a tensor type")
    }

    /// Parses the inside of a `tensor<...>` token.
    fn tensor_type(&mut self, t: Tok) -> PResult<TensorType> {
        let span = self.span(t);
        let inner = &span.as_bytes()[7..span.len() - 1];
        let base = 7u32;
        let at = |i: usize| inner.get(i).copied().unwrap_or(0);
        let col_of = |i: usize| Tok { col: t.col.saturating_add(base + i as u32), ..t };
        let mut shape = Vec::new();
        let mut i = 0;
        loop {
            while at(i) == b' ' || at(i) == b'\t' {
                i += 1;
            }
            let c = at(i);
            if c.is_ascii_digit() {
                let s = i;
                let mut v: u64 = 0;
                while at(i).is_ascii_digit() {
                    match v.checked_mul(10).and_then(|v| v.checked_add(u64::from(at(i) - b'0'))) {
                        Some(n) => v = n,
                        None => return self.err(col_of(s), "tensor dimension does not fit in u64"),
                    }
                    i += 1;
                }
                if at(i) != b'x' {
                    return self.err(col_of(i), "expected 'x' after a tensor dimension");
                }
                i += 1;
                shape.push(v);
            } else if c == b'?' {
                return self.err(col_of(i), "dynamic dimensions ('?') are not supported: ck shapes are static");
            } else if c == b'*' {
                return self.err(col_of(i), "unranked tensors are not supported: ck shapes are static");
            } else {
                let s = i;
                while at(i).is_ascii_alphanumeric() || at(i) == b'_' {
                    i += 1;
                }
                let name = std::str::from_utf8(&inner[s..i]).unwrap_or("");
                let rest_blank = inner[i..].iter().all(|&b| b == b' ' || b == b'\t');
                if name.is_empty() {
                    return self.err(col_of(s), "expected a dimension or an element type in tensor type");
                }
                let Some(dt) = DType::from_name(name) else {
                    return self.err(col_of(s), format!("unsupported element type '{name}' (ck supports {})", DType::all_names()));
                };
                if !rest_blank {
                    return self.err(col_of(i), "expected '>' after the element type");
                }
                let ty = TensorType::new(shape, dt);
                if ty.byte_size().is_none() {
                    return self.err(t, format!("size of {ty} overflows u64 bytes"));
                }
                return Ok(ty);
            }
        }
    }

    /// `(T, T)` or `()`.
    fn parse_type_list(&mut self, ctx: &str) -> PResult<Vec<TensorType>> {
        self.expect_punct(b'(', ctx)?;
        let mut v = Vec::new();
        if self.is_punct(b')') {
            self.bump();
            return Ok(v);
        }
        loop {
            v.push(self.parse_type()?);
            if self.is_punct(b',') {
                self.bump();
            } else {
                self.expect_punct(b')', "to close the type list")?;
                return Ok(v);
            }
        }
    }

    /// An op's operand type list `(T, ...)`. An entry is `None` when the
    /// type is spelled exactly like the declaration of the operand in the
    /// same position (so it is that type), else the parsed type.
    fn parse_operand_types(
        &mut self,
        operands: &[(Tok, Option<ValueId>)],
        scope: &Scope<'a>,
    ) -> PResult<Vec<Option<TensorType>>> {
        self.expect_punct(b'(', "to open the operand types")?;
        let mut v = Vec::new();
        if self.is_punct(b')') {
            self.bump();
            return Ok(v);
        }
        loop {
            let same = self.tok.k == K::Tensor
                && operands
                    .get(v.len())
                    .and_then(|(_, id)| *id)
                    .and_then(|id| scope.ty_span.get(id.index()))
                    .is_some_and(|&s| s == self.span(self.tok));
            if same {
                let t = self.bump();
                self.last_type_span = self.span(t);
                v.push(None);
            } else {
                v.push(Some(self.parse_type()?));
            }
            if self.is_punct(b',') {
                self.bump();
            } else {
                self.expect_punct(b')', "to close the type list")?;
                return Ok(v);
            }
        }
    }

    /// `T` or `(T, ...)` after `->`.
    fn parse_result_types(&mut self) -> PResult<Vec<TensorType>> {
        if self.is_punct(b'(') { self.parse_type_list("") } else { Ok(vec![self.parse_type()?]) }
    }

    // ------------------------------------------------------------ attributes

    fn parse_dict(&mut self, depth: u32) -> PResult<Attrs> {
        self.expect_punct(b'{', "to open an attribute dictionary")?;
        let mut attrs = Attrs::new();
        if self.is_punct(b'}') {
            self.bump();
            return Ok(attrs);
        }
        loop {
            let kt = self.tok;
            let key = match kt.k {
                K::Ident => self.span(kt).to_string(),
                K::Str => match decode_string(self.span(kt)) {
                    Ok(s) => s,
                    Err(e) => return self.err(kt, e.to_string()),
                },
                _ => return self.expected("an attribute name"),
            };
            self.bump();
            let val = if self.is_punct(b'=') {
                self.bump();
                self.parse_attr_value(depth + 1)?
            } else {
                Attr::Unit
            };
            if attrs.insert(key.clone(), val).is_some() {
                return self.err(kt, format!("duplicate key '{key}' in dictionary attribute"));
            }
            if self.is_punct(b',') {
                self.bump();
            } else {
                self.expect_punct(b'}', "or ',' in attribute dictionary")?;
                return Ok(attrs);
            }
        }
    }

    fn parse_attr_value(&mut self, depth: u32) -> PResult<Attr> {
        let t = self.tok;
        if depth > MAX_NESTING {
            return self.err(t, format!("attribute nesting is deeper than {MAX_NESTING} levels"));
        }
        match t.k {
            K::Ident => {
                let s = self.span(t);
                let a = match s {
                    "dense" => return self.parse_dense(depth),
                    "unit" => Attr::Unit,
                    "true" => Attr::Bool(true),
                    "false" => Attr::Bool(false),
                    _ => return self.err(t, format!("unsupported attribute value '{s}'")),
                };
                self.bump();
                Ok(a)
            }
            K::Str => {
                self.bump();
                match decode_string(self.span(t)) {
                    Ok(s) => Ok(Attr::Str(s)),
                    Err(e) => self.err(t, e.to_string()),
                }
            }
            K::Int | K::Hex | K::Float => self.parse_number_attr(),
            K::Punct(b'[') => {
                self.bump();
                let mut v = Vec::new();
                if self.is_punct(b']') {
                    self.bump();
                    return Ok(Attr::IntArray(v));
                }
                loop {
                    let et = self.tok;
                    match self.parse_attr_value(depth + 1)? {
                        Attr::Int(x) => v.push(x),
                        other => {
                            return self.err(
                                et,
                                format!("array attributes must hold integers, found {}", other.kind_name()),
                            );
                        }
                    }
                    if self.is_punct(b',') {
                        self.bump();
                    } else {
                        self.expect_punct(b']', "or ',' in array attribute")?;
                        return Ok(Attr::IntArray(v));
                    }
                }
            }
            K::Punct(b'{') => self.err(t, "dictionary attribute values are not supported"),
            _ => self.expected("an attribute value"),
        }
    }

    /// `dense<LITERAL> : tensor<SHAPExf32>`: LITERAL nested by the shape
    /// (`[[1.0, 2.0], [3.0, 4.0]]`), a bare number for rank 0. Elements are
    /// floats with a `.` or hexadecimal f32 bit patterns, as MLIR prints them.
    /// A splat (`dense<1.0> : tensor<4xf32>`) is rejected: ck spells that
    /// `ck.fill`, and no allocation is sized by a number read from the input.
    fn parse_dense(&mut self, depth: u32) -> PResult<Attr> {
        let kw = self.bump();
        self.expect_punct(b'<', "after 'dense'")?;
        let mut data = Vec::new();
        let shape = self.parse_dense_literal(depth + 1, &mut data)?;
        self.expect_punct(b'>', "to close the dense literal")?;
        self.expect_punct(b':', "and the type of the dense literal")?;
        let ty = self.parse_type()?;
        if ty.dtype != DType::F32 {
            return self.err(kw, format!("dense elements of {ty} are not supported (ck constants are f32)"));
        }
        if shape != ty.shape {
            if shape.is_empty() {
                return self.err(kw, format!("splat dense literal for {ty} is not supported (use ck.fill)"));
            }
            return self.err(kw, format!("dense literal of shape {shape:?} does not match its type {ty}"));
        }
        Ok(Attr::Dense { shape, data })
    }

    /// One (nested) element list; returns its shape and appends its elements.
    fn parse_dense_literal(&mut self, depth: u32, data: &mut Vec<f32>) -> PResult<Vec<u64>> {
        let t = self.tok;
        if depth > MAX_NESTING {
            return self.err(t, format!("dense literal nesting is deeper than {MAX_NESTING} levels"));
        }
        if !self.is_punct(b'[') {
            let s = self.span(t);
            let v = match t.k {
                K::Float => match s.parse::<f32>() {
                    Ok(v) if v.is_finite() => v,
                    _ => return self.err(t, format!("float {s} is out of range for f32 (use a hexadecimal bit pattern for inf/nan)")),
                },
                K::Hex if !s.starts_with('-') => match u32::from_str_radix(&s[2..], 16) {
                    Ok(bits) => f32::from_bits(bits),
                    Err(_) => return self.err(t, format!("hexadecimal float {s} does not fit in 32 bits")),
                },
                K::Int => {
                    return self.err(
                        t,
                        "unexpected decimal integer literal for a floating point value (add a trailing '.0' to make it a float)",
                    );
                }
                _ => return self.expected("a float or '[' in a dense literal"),
            };
            self.bump();
            data.push(v);
            return Ok(Vec::new());
        }
        self.bump();
        let mut count: u64 = 0;
        let mut inner: Option<Vec<u64>> = None;
        if self.is_punct(b']') {
            self.bump();
            return Ok(vec![0]);
        }
        loop {
            let et = self.tok;
            let sub = self.parse_dense_literal(depth + 1, data)?;
            match &inner {
                Some(prev) if *prev != sub => {
                    return self.err(et, format!("dense literal rows differ in shape: {prev:?} and {sub:?}"));
                }
                Some(_) => {}
                None => inner = Some(sub),
            }
            count += 1;
            if self.is_punct(b',') {
                self.bump();
            } else {
                self.expect_punct(b']', "or ',' in a dense literal")?;
                let mut shape = vec![count];
                shape.extend(inner.unwrap_or_default());
                return Ok(shape);
            }
        }
    }

    fn parse_number_attr(&mut self) -> PResult<Attr> {
        let t = self.bump();
        let s = self.span(t);
        let mut ty: Option<(Tok, &str)> = None;
        if self.is_punct(b':') {
            self.bump();
            if self.tok.k != K::Ident {
                return self.expected("an attribute type (i64 or f32)");
            }
            let tt = self.bump();
            ty = Some((tt, self.span(tt)));
        }
        let tyname = ty.map(|(_, n)| n);
        if let Some((tt, n)) = ty
            && !matches!(n, "i64" | "f32" | "f64")
        {
            return self.err(tt, format!("unsupported attribute type '{n}' (ck uses i64 integers and f32 floats)"));
        }
        match (t.k, tyname) {
            (K::Int, None | Some("i64")) => match s.parse::<i64>() {
                Ok(v) => Ok(Attr::Int(v)),
                Err(_) => self.err(t, format!("integer {s} does not fit in i64")),
            },
            (K::Int, _) => self.err(
                t,
                "unexpected decimal integer literal for a floating point value (add a trailing '.0' to make it a float)",
            ),
            (K::Hex, _) if s.starts_with('-') => self.err(t, "hexadecimal literals cannot be negative"),
            (K::Hex, None | Some("i64")) => match u64::from_str_radix(&s[2..], 16).ok().and_then(|v| i64::try_from(v).ok()) {
                Some(v) => Ok(Attr::Int(v)),
                None => self.err(t, format!("integer {s} does not fit in i64")),
            },
            (K::Hex, Some("f32")) => match u32::from_str_radix(&s[2..], 16) {
                Ok(bits) => Ok(Attr::F32(f32::from_bits(bits))),
                Err(_) => self.err(t, format!("hexadecimal float {s} does not fit in 32 bits")),
            },
            (K::Hex, _) => match u64::from_str_radix(&s[2..], 16) {
                Ok(bits) => Ok(Attr::F32(f64::from_bits(bits) as f32)),
                Err(_) => self.err(t, format!("hexadecimal float {s} does not fit in 64 bits")),
            },
            (_, Some("i64")) => self.err(t, "floating point literal for an i64 attribute"),
            (_, Some("f64")) => match s.parse::<f64>() {
                Ok(v) if (v as f32).is_finite() => Ok(Attr::F32(v as f32)),
                _ => self.err(t, format!("float {s} is out of range for f32")),
            },
            _ => match s.parse::<f32>() {
                Ok(v) if v.is_finite() => Ok(Attr::F32(v)),
                _ => self.err(t, format!("float {s} is out of range for f32 (use a hexadecimal bit pattern for inf/nan)")),
            },
        }
    }

    // ------------------------------------------------------------ functions

    fn parse_func(&mut self) -> Option<Func> {
        let ft = self.bump(); // func.func
        let name_tok = self.tok;
        if name_tok.k != K::Symbol {
            let _: PResult<()> = self.expected("a function name '@name'");
            return None;
        }
        self.bump();
        let raw = self.span(name_tok);
        let name = if raw.as_bytes().get(1) == Some(&b'"') {
            match decode_string(&raw[1..]) {
                Ok(s) => s,
                Err(e) => {
                    let _: PResult<()> = self.err(name_tok, e.to_string());
                    return None;
                }
            }
        } else {
            raw[1..].to_string()
        };
        let mut f = Func::new(name, self.loc(ft));
        let mut scope = Scope { names: HashMap::new(), poisoned: HashSet::new(), ty_span: Vec::new() };
        self.parse_signature(&mut f, &mut scope).ok()?;
        // Body.
        self.expect_punct(b'{', "to open the function body").ok()?;
        loop {
            match self.tok.k {
                K::Punct(b'}') => {
                    self.bump();
                    break;
                }
                K::Eof => {
                    let msg = format!("unexpected end of file in the body of @{} (missing '}}')", f.name);
                    let t = self.tok;
                    let _: PResult<()> = self.err(t, msg);
                    return None;
                }
                _ => {
                    let start_line = self.tok.line;
                    if self.parse_op(&mut f, &mut scope).is_err() {
                        if self.diags.0.len() >= MAX_ERRORS {
                            return None;
                        }
                        while self.tok.k != K::Eof && self.tok.line <= start_line {
                            self.bump();
                        }
                    }
                }
            }
        }
        Some(f)
    }

    fn parse_signature(&mut self, f: &mut Func, scope: &mut Scope<'a>) -> PResult<()> {
        self.expect_punct(b'(', "to open the argument list")?;
        if self.is_punct(b')') {
            self.bump();
        } else {
            loop {
                let vt = self.tok;
                if vt.k != K::Value {
                    return self.expected("an argument '%name: type'");
                }
                self.bump();
                let name = &self.span(vt)[1..];
                self.expect_punct(b':', "after the argument name")?;
                let ty = self.parse_type()?;
                let attrs = if self.is_punct(b'{') { self.parse_dict(0)? } else { Attrs::new() };
                if let Some(&(_, line)) = scope.names.get(name) {
                    return self.err(vt, format!("redefinition of value '%{name}' (previously defined at line {line})"));
                }
                let v = f.new_value(name, ty);
                scope.ty_span.push(self.last_type_span);
                scope.names.insert(name, (v, vt.line));
                f.params.push(Param { value: v, attrs });
                if self.is_punct(b',') {
                    self.bump();
                } else {
                    self.expect_punct(b')', "or ',' in the argument list")?;
                    break;
                }
            }
        }
        if self.tok.k == K::Arrow {
            self.bump();
            f.result_types = self.parse_result_types()?;
        }
        if self.is_ident("attributes") {
            self.bump();
            f.attrs = self.parse_dict(0)?;
        }
        Ok(())
    }

    /// One op; on error the caller skips to the next line.
    fn parse_op(&mut self, f: &mut Func, scope: &mut Scope<'a>) -> PResult<()> {
        let mut result_tok = None;
        if self.tok.k == K::Value {
            let rt = self.bump();
            result_tok = Some(rt);
            if let Err(()) = self.expect_punct(b'=', "after the result name") {
                scope.poisoned.insert(&self.span(rt)[1..]);
                return Err(());
            }
        }
        let r = self.parse_op_rest(f, scope, result_tok);
        if r.is_err()
            && let Some(rt) = result_tok
        {
            let n = &self.span(rt)[1..];
            if !scope.names.contains_key(n) {
                scope.poisoned.insert(n);
            }
        }
        r
    }

    /// The op after its optional `%result =`, in phases: name, operands,
    /// attributes, type, the checks of the type against the operands and the
    /// result, the binding of the result; then the op is appended.
    fn parse_op_rest(&mut self, f: &mut Func, scope: &mut Scope<'a>, result_tok: Option<Tok>) -> PResult<()> {
        let (nt, kind) = self.parse_op_name(result_tok)?;
        let (operands, poisoned) = self.parse_operand_list(scope)?;
        let attrs = self.parse_op_attrs()?;
        let (in_tys, out_tys) = self.parse_op_type(&operands, scope)?;
        if poisoned {
            // The error that poisoned an operand was reported already; the
            // result is poisoned in turn so its uses are not reported either.
            if let Some(rt) = result_tok {
                scope.poisoned.insert(&self.span(rt)[1..]);
            }
            return Ok(());
        }
        let ids = self.check_operand_types(f, &operands, &in_tys)?;
        if out_tys.len() > 1 {
            return self.err(nt, format!("ck ops have at most one result, the type lists {}", out_tys.len()));
        }
        if result_tok.is_some() && out_tys.is_empty() {
            return self.err(nt, "operation defines 0 results but was provided 1 to bind");
        }
        let loc = self.loc(result_tok.unwrap_or(nt));
        let result = match out_tys.into_iter().next() {
            Some(ty) => Some(self.bind_result(f, scope, result_tok, ty)?),
            None => None,
        };
        f.body.push(Op { kind, operands: ids, result, attrs, loc });
        Ok(())
    }

    /// The op name `"ck.name"` (a string token) and its kind; its token is
    /// where later errors about the whole op point.
    fn parse_op_name(&mut self, result_tok: Option<Tok>) -> PResult<(Tok, OpKind)> {
        let nt = self.tok;
        if nt.k == K::Ident {
            let s = self.span(nt);
            let hint = if s == "return" || s == "func.return" {
                " (write the return as \"ck.return\"(%v) : (type) -> ())"
            } else {
                ""
            };
            return self.err(nt, format!("expected an op in generic form \"ck.name\"(...), found '{s}'{hint}"));
        }
        if nt.k != K::Str {
            return self.expected(if result_tok.is_some() { "an op name \"ck.name\"" } else { "an op or '}'" });
        }
        self.bump();
        let span = self.span(nt);
        let opname: std::borrow::Cow<'a, str> = if span.contains('\\') {
            match decode_string(span) {
                Ok(s) => s.into(),
                Err(e) => return self.err(nt, e.to_string()),
            }
        } else {
            span.get(1..span.len().saturating_sub(1).max(1)).unwrap_or("").into()
        };
        match opname.strip_prefix("ck.") {
            Some(short) => match OpKind::from_name(short) {
                Some(k) => Ok((nt, k)),
                None => {
                    let hint = unknown_op_hint(short);
                    self.err(nt, format!("'{opname}' is not an op of the ck dialect{hint}"))
                }
            },
            None => self.err(
                nt,
                format!("'{opname}' is not a ck op: function bodies may only contain ops of the ck dialect"),
            ),
        }
    }

    /// The operand list `(%a, %b)`: each operand's token and value (`None`
    /// for a poisoned name), and whether any operand is poisoned.
    fn parse_operand_list(&mut self, scope: &Scope<'a>) -> PResult<(Vec<Operand>, bool)> {
        self.expect_punct(b'(', "to open the operand list")?;
        let mut operands: Vec<Operand> = Vec::new();
        let mut poisoned = false;
        if self.is_punct(b')') {
            self.bump();
            return Ok((operands, poisoned));
        }
        loop {
            let vt = self.tok;
            if vt.k != K::Value {
                return self.expected("an operand '%name'");
            }
            self.bump();
            let name = &self.span(vt)[1..];
            match scope.names.get(name) {
                Some(&(v, _)) => operands.push((vt, Some(v))),
                None if scope.poisoned.contains(name) => {
                    poisoned = true;
                    operands.push((vt, None));
                }
                None => return self.err(vt, format!("use of undefined value '%{name}'")),
            }
            if self.is_punct(b',') {
                self.bump();
            } else {
                self.expect_punct(b')', "or ',' in the operand list")?;
                break;
            }
        }
        Ok((operands, poisoned))
    }

    /// The optional attribute dictionary (properties `<{...}>` are refused).
    fn parse_op_attrs(&mut self) -> PResult<Attrs> {
        if self.is_punct(b'<') {
            let t = self.tok;
            return self.err(t, "op properties '<{...}>' are not supported (ck ops use an attribute dictionary)");
        }
        if self.is_punct(b'{') { self.parse_dict(0) } else { Ok(Attrs::new()) }
    }

    /// The op's type `: (operand types) -> result types`, with as many
    /// operand types as operands.
    fn parse_op_type(
        &mut self,
        operands: &[Operand],
        scope: &Scope<'a>,
    ) -> PResult<(Vec<Option<TensorType>>, Vec<TensorType>)> {
        self.expect_punct(b':', "before the op's type")?;
        let tl = self.tok;
        let in_tys = self.parse_operand_types(operands, scope)?;
        if self.tok.k != K::Arrow {
            return self.expected("'->' in the op's type");
        }
        self.bump();
        let out_tys = self.parse_result_types()?;
        if in_tys.len() != operands.len() {
            return self.err(
                tl,
                format!("the type lists {} operand type(s) but the op has {} operand(s)", in_tys.len(), operands.len()),
            );
        }
        Ok((in_tys, out_tys))
    }

    /// Each operand's listed type must be its value's type; returns the
    /// operand values.
    fn check_operand_types(
        &mut self,
        f: &Func,
        operands: &[Operand],
        in_tys: &[Option<TensorType>],
    ) -> PResult<Vec<ValueId>> {
        let mut ids = Vec::with_capacity(operands.len());
        for ((vt, v), ty) in operands.iter().zip(in_tys) {
            let Some(v) = *v else { continue };
            let Some(ty) = ty else {
                ids.push(v); // spelled exactly as declared
                continue;
            };
            if f.ty(v) != ty {
                let msg = format!(
                    "use of value '{}' expects different type than prior uses: '{}' vs '{}'",
                    self.span(*vt),
                    ty,
                    f.ty(v)
                );
                return self.err(*vt, msg);
            }
            ids.push(v);
        }
        Ok(ids)
    }

    /// Creates the result value of type `ty` and binds its name (a
    /// redefinition is an error).
    fn bind_result(
        &mut self,
        f: &mut Func,
        scope: &mut Scope<'a>,
        result_tok: Option<Tok>,
        ty: TensorType,
    ) -> PResult<ValueId> {
        let name = result_tok.map(|rt| &self.span(rt)[1..]).unwrap_or("");
        if let Some(rt) = result_tok
            && let Some(&(_, line)) = scope.names.get(name)
        {
            return self.err(rt, format!("redefinition of value '%{name}' (previously defined at line {line})"));
        }
        let v = f.new_value(name, ty);
        scope.ty_span.push(self.last_type_span);
        if let Some(rt) = result_tok {
            scope.names.insert(name, (v, rt.line));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::printer::print_module;
    use crate::func::Func;

    const MLP: &str = r#"module {
  func.func @mlp(%x: tensor<32x64xf32>, %w: tensor<64x64xf32> {ck.param}, %t: tensor<32x64xf32>) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %a = "ck.relu"(%h) : (tensor<32x64xf32>) -> tensor<32x64xf32>
    %d = "ck.sub"(%a, %t) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %s = "ck.mul"(%d, %d) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<32x64xf32>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}
"#;

    fn errs(text: &str) -> Vec<String> {
        match crate::parse_and_verify(text, "t.ck") {
            Ok(_) => vec![],
            Err(d) => d.0.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn parses_spec_example_and_round_trips() {
        let m = parse_module(MLP, "t.ck").expect("parses");
        crate::verify_module(&m).expect("verifies");
        let f = &m.funcs[0];
        assert_eq!(f.body.len(), 6);
        assert_eq!(f.trainable_indices(), vec![1]);
        assert_eq!(f.body[0].loc.line, 3);
        assert_eq!(f.body[0].loc.col, 5);
        assert_eq!(f.body[5].loc.col, 5);
        let p = print_module(&m);
        assert_eq!(p, MLP);
        let m2 = parse_module(&p, "p.ck").expect("reparses");
        assert_eq!(print_module(&m2), p);
    }

    #[test]
    fn bare_funcs_comments_numeric_names_and_attrs() {
        let text = r#"// a comment
func.func @f(%0: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<f32>) attributes {ck.arena_bytes = 64 : i64} {
  %1 = "ck.scale"(%0) {value = 0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32> // trailing
  %2 = "ck.scale"(%1) {value = 1.0e-5 : f32, ck.mirror, "user.note" = "a \"q\"\n"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = "ck.scale"(%2) {value = 0x7F800000 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %4 = "ck.dropout"(%3) {rate = 0.25, seed = 7} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %5 = "ck.reduce_sum"(%4) {dims = [0, 1]} : (tensor<2x3xf32>) -> tensor<f32>
  "ck.return"(%4, %5) : (tensor<2x3xf32>, tensor<f32>) -> ()
}
func.func @g() -> tensor<f32> {
  %z = "ck.fill"() {value = -2.0 : f32} : () -> tensor<f32>
  "ck.return"(%z) : (tensor<f32>) -> ()
}
"#;
        let m = crate::parse_and_verify(text, "t.ck").expect("ok");
        assert_eq!(m.funcs.len(), 2);
        let f = &m.funcs[0];
        assert_eq!(f.attrs.get("ck.arena_bytes"), Some(&Attr::Int(64)));
        assert_eq!(f.body[0].f32_attr("value"), Some(0.5));
        assert_eq!(f.body[2].f32_attr("value"), Some(f32::INFINITY));
        assert_eq!(f.body[1].attrs.get("user.note"), Some(&Attr::Str("a \"q\"\n".into())));
        assert_eq!(f.body[3].int_attr("seed"), Some(7));
        assert_eq!(f.result_types.len(), 2);
        let p = print_module(&m);
        let m2 = parse_module(&p, "p").expect("reparse");
        assert_eq!(print_module(&m2), p);
    }

    #[test]
    fn error_locations_and_messages() {
        let text = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = \"ck.relux\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n  \"ck.return\"(%x) : (tensor<2xf32>) -> ()\n}\n";
        let e = errs(text);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("t.ck:2:8: error: 'ck.relux' is not an op of the ck dialect; did you mean 'ck.relu'?"), "{e:?}");
    }

    #[test]
    fn several_errors_in_one_body() {
        let text = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = \"ck.foo\"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %b = \"ck.relu\"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %c = \"ck.relu\"(%nope) : (tensor<2xf32>) -> tensor<2xf32>
  %x = \"ck.relu\"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %d = \"ck.relu\"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  \"ck.return\"(%b) : (tensor<2xf32>) -> ()
}
";
        let e = errs(text);
        assert_eq!(e.len(), 4, "{e:?}");
        assert!(e[0].contains(":2:8:"), "{e:?}");
        assert!(e[1].contains(":4:18: error: use of undefined value '%nope'"), "{e:?}");
        assert!(e[2].contains(":5:3: error: redefinition of value '%x'"), "{e:?}");
        assert!(e[3].contains(":6:18: error: use of value '%x' expects different type"), "{e:?}");
    }

    #[test]
    fn verifier_errors_accumulate() {
        let text = "func.func @f(%x: tensor<2xf32>, %y: tensor<3xf32>) -> tensor<2xf32> {
  %a = \"ck.add\"(%x, %y) : (tensor<2xf32>, tensor<3xf32>) -> tensor<2xf32>
  %b = \"ck.relu\"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  \"ck.return\"(%y) : (tensor<3xf32>) -> ()
}
";
        let e = errs(text);
        assert_eq!(e.len(), 3, "{e:?}");
        assert!(e[0].contains("t.ck:2:3: error: 'ck.add' op operand shapes must be equal"), "{e:?}");
        assert!(e[1].contains("t.ck:3:3: error: 'ck.relu' op expects 1 operand, got 2"), "{e:?}");
        assert!(e[2].contains("t.ck:4:3: error: 'ck.return' op returns (tensor<3xf32>)"), "{e:?}");
    }

    #[test]
    fn overflow_bad_utf8_truncation_and_nesting_are_errors() {
        let ovf = "func.func @f(%x: tensor<4611686018427387904x2xf32>) {\n\"ck.return\"() : () -> ()\n}\n";
        assert!(errs(ovf)[0].contains("overflows u64"), "{:?}", errs(ovf));
        let big = "func.func @f(%x: tensor<99999999999999999999999xf32>) {\n}\n";
        assert!(errs(big)[0].contains("does not fit in u64"));
        let bad = b"func.func @f() {\n  \xff\n}\n";
        let e = parse_module_bytes(bad, "b.ck").expect_err("invalid UTF-8");
        assert!(e.0[0].to_string().starts_with("b.ck:2:3: error: invalid UTF-8 (byte 0x"), "{}", e.0[0]);
        for cut in 0..MLP.len() {
            if MLP.is_char_boundary(cut) {
                let _ = crate::parse_and_verify(&MLP[..cut], "t");
            }
        }
        assert!(errs(&MLP[..MLP.len() - 3])[0].contains("end of file"));
        let deep = format!(
            "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {{\n %y = \"ck.relu\"(%x) {{a = {}1{}}} : (tensor<2xf32>) -> tensor<2xf32>\n\"ck.return\"(%y) : (tensor<2xf32>) -> ()\n}}\n",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let e = errs(&deep);
        assert!(e[0].contains("nesting is deeper than 64"), "{e:?}");
    }

    #[test]
    fn non_ck_ops_and_custom_return_are_rejected() {
        let text = "func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = \"arith.addf\"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>\n  return %x : tensor<2xf32>\n}\n";
        let e = errs(text);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].contains("'arith.addf' is not a ck op"));
        assert!(e[1].contains("\"ck.return\""));
    }

    /// Every single-byte mutation of a valid file (with bytes that matter to
    /// the grammar) parses or fails with located errors; never panics; what
    /// parses round-trips through the printer.
    #[test]
    fn single_byte_mutations_never_panic_and_round_trip() {
        let base = MLP.as_bytes();
        let mut ok = 0;
        let mut failed = 0;
        for i in 0..base.len() {
            for &b in b"\"%{}[]<>()x0-9.:=,\n@\\\xff" {
                let mut v = base.to_vec();
                v[i] = b;
                match parse_module_bytes(&v, "m.ck") {
                    Ok(m) => {
                        ok += 1;
                        let _ = crate::verify_module(&m).map_err(|d| d.render(std::str::from_utf8(&v).ok()));
                        let p = print_module(&m);
                        let m2 = parse_module(&p, "p").expect("printed text re-parses");
                        assert_eq!(print_module(&m2), p);
                    }
                    Err(d) => {
                        failed += 1;
                        assert!(d.0.iter().all(|d| d.loc.is_known()), "{d}");
                        let _ = d.render(std::str::from_utf8(&v).ok());
                    }
                }
            }
        }
        assert!(ok > 0 && failed > 0);
    }

    #[test]
    fn untyped_and_f64_numbers_and_mlir_opt_spellings() {
        let text = "func.func @f(%arg0: tensor<2xf32>) -> tensor<2xf32> {\n  %0 = \"ck.scale\"(%arg0) {value = 9.99999974E-6 : f32, user.a = 5, user.b = 0x10, user.c = 2.5 : f64, user.d = \"\\22\"} : (tensor<2xf32>) -> tensor<2xf32>\n  \"ck.return\"(%0) : (tensor<2xf32>) -> ()\n}\n";
        let m = crate::parse_and_verify(text, "t").expect("ok");
        let op = &m.funcs[0].body[0];
        assert_eq!(op.f32_attr("value"), Some(1.0e-5));
        assert_eq!(op.int_attr("user.a"), Some(5));
        assert_eq!(op.int_attr("user.b"), Some(16));
        assert_eq!(op.f32_attr("user.c"), Some(2.5));
        assert_eq!(op.attrs.get("user.d"), Some(&Attr::Str("\"".into())));
    }

    #[test]
    fn printer_uniquifies_clashing_and_numeric_names() {
        let mut f = Func::new("f", Loc::unknown());
        let x = f.add_param("5", TensorType::f32(vec![2]), false);
        let a = f.push(OpKind::Relu, &[x], Attrs::new(), None, "5", Loc::unknown()).expect("relu");
        let b = f.push(OpKind::Neg, &[a], Attrs::new(), None, "a b", Loc::unknown()).expect("neg");
        let c = f.push(OpKind::Neg, &[b], Attrs::new(), None, "a_b", Loc::unknown()).expect("neg");
        let d = f.push(OpKind::Neg, &[c], Attrs::new(), None, "", Loc::unknown()).expect("neg");
        f.push_return(&[d], Loc::unknown());
        let m = Module { funcs: vec![f] };
        let p = print_module(&m);
        assert!(p.contains("%5: tensor<2xf32>"), "{p}");
        assert!(p.contains("%v5_1 = \"ck.relu\"(%5)"), "{p}");
        assert!(p.contains("%a_b = \"ck.neg\"(%v5_1)"), "{p}");
        assert!(p.contains("%a_b_1 = \"ck.neg\"(%a_b)"), "{p}");
        assert!(p.contains("%v = \"ck.neg\"(%a_b_1)"), "{p}");
        let m2 = crate::parse_and_verify(&p, "p").expect("valid");
        assert_eq!(print_module(&m2), p);
    }

    #[test]
    fn dense_constants_and_named_arguments_round_trip() {
        let text = "func.func @f(%w: tensor<2xf32> {ck.name = \"fc1.weight\", ck.param}) -> tensor<2x2xf32> {\n  %c = \"ck.constant\"() {value = dense<[[1.0, -2.5], [0x7F800000, 1.0e-5]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>\n  %e = \"ck.erf\"(%c) : (tensor<2x2xf32>) -> tensor<2x2xf32>\n  \"ck.return\"(%e) : (tensor<2x2xf32>) -> ()\n}\n";
        let m = crate::parse_and_verify(text, "t").expect("ok");
        let f = &m.funcs[0];
        assert_eq!(f.params[0].attrs.get(crate::ops::ATTR_NAME).and_then(Attr::as_str), Some("fc1.weight"));
        let (shape, data) = f.body[0].attrs.get("value").and_then(Attr::as_dense).expect("dense");
        assert_eq!(shape, &[2, 2]);
        assert_eq!(data[2], f32::INFINITY);
        let p = print_module(&m);
        assert_eq!(print_module(&crate::parse_and_verify(&p, "p").expect("reparse")), p);
        let scalar = "func.func @f() -> tensor<f32> {\n  %c = \"ck.constant\"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>\n  \"ck.return\"(%c) : (tensor<f32>) -> ()\n}\n";
        assert!(crate::parse_and_verify(scalar, "s").is_ok());
    }

    #[test]
    fn malformed_dense_literals_are_located_errors() {
        let case = |lit: &str| {
            let text = format!("func.func @f() {{\n  %c = \"ck.constant\"() {{value = {lit}}} : () -> tensor<2xf32>\n  \"ck.return\"() : () -> ()\n}}\n");
            errs(&text).join("\n")
        };
        assert!(case("dense<[1.0, 2.0, 3.0]> : tensor<2xf32>").contains("does not match its type"));
        assert!(case("dense<[[1.0], [2.0, 3.0]]> : tensor<2x1xf32>").contains("rows differ"));
        assert!(case("dense<[1, 2]> : tensor<2xf32>").contains("decimal integer"));
        assert!(case("dense<1.0> : tensor<2xf32>").contains("splat"));
        assert!(case("dense<[1.0, 2.0]> : tensor<2xf16>").contains("are f32"));
        assert!(case("dense<[1.0, 2.0] : tensor<2xf32>").contains("expected '>'"));
        let bad_name = "func.func @f(%w: tensor<2xf32> {ck.name = 3}) {\n  \"ck.return\"() : () -> ()\n}\n";
        assert!(errs(bad_name)[0].contains("'ck.name' must be a string"), "{:?}", errs(bad_name));
    }

    #[test]
    fn parse_at_offsets_lines() {
        let text = "func.func @f() {\n  \"ck.nope\"() : () -> ()\n}\n";
        let e = parse_module_at(text, "s.ck", 10).expect_err("unknown op");
        assert_eq!(e.0[0].loc.line, 11);
    }
}
