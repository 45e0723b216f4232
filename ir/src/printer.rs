//! Printer: MLIR generic op syntax, one op per line, types spelled out.
//!
//! Invariant: `print(parse(print(m))) == print(m)`, and upstream
//! `mlir-opt --allow-unregistered-dialect` accepts the output. Value names
//! are the stored ones, made unique (a repeated name gets a `_N` suffix) and
//! valid MLIR identifiers, so passes may create values with any hint.

use crate::attr::{Attr, format_dict, is_bare_key, write_dict};
use crate::func::{Func, Module};
use crate::types::TensorType;
use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::fmt::Write;

/// A valid MLIR value name for `name`: borrowed when it already is one.
fn sanitize(name: &str) -> Cow<'_, str> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-');
    let starts_digit = name.starts_with(|c: char| c.is_ascii_digit());
    // Names that start with a digit must be all digits in MLIR (`%0`).
    let valid = !name.is_empty()
        && name.chars().all(ok_char)
        && (!starts_digit || name.bytes().all(|c| c.is_ascii_digit()));
    if valid {
        return Cow::Borrowed(name);
    }
    let mut s: String = name.chars().map(|c| if ok_char(c) { c } else { '_' }).collect();
    if s.is_empty() {
        s.push('v');
    }
    if s.starts_with(|c: char| c.is_ascii_digit()) && !s.chars().all(|c| c.is_ascii_digit()) {
        s.insert(0, 'v');
    }
    Cow::Owned(s)
}

/// Unique printable names for every value of `f`, indexed by `ValueId`.
/// Linear time: each stem remembers the next suffix to try, so many values
/// with the same hint do not make the search quadratic.
pub fn value_names(f: &Func) -> Vec<String> {
    unique_names(f).into_iter().map(Cow::into_owned).collect()
}

/// FxHash (rustc's): names are hashed once or twice per value printed,
/// where SipHash was a visible part of printing a 1M-op function.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0xf135_7aea_2e62_a9c5;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
            self.0 = (self.0.rotate_left(5) ^ w).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }
    fn write_u8(&mut self, b: u8) {
        self.write(&[b]);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

type Fx = BuildHasherDefault<FxHasher>;

fn unique_names(f: &Func) -> Vec<Cow<'_, str>> {
    let mut used: HashSet<Cow<'_, str>, Fx> = HashSet::with_capacity_and_hasher(f.values.len(), Fx::default());
    let mut next: HashMap<String, usize, Fx> = HashMap::default();
    let mut names = Vec::with_capacity(f.values.len());
    for v in &f.values {
        let base = sanitize(&v.name);
        if used.insert(base.clone()) {
            names.push(base);
            continue;
        }
        // A suffixed all-digit name (`5_1`) would not be an MLIR identifier.
        let stem = if base.bytes().all(|c| c.is_ascii_digit()) { format!("v{base}") } else { base.into_owned() };
        let n = next.entry(stem.clone()).or_insert(1);
        loop {
            let cand = format!("{stem}_{n}");
            *n += 1;
            if !used.contains(cand.as_str()) {
                used.insert(Cow::Owned(cand.clone()));
                names.push(Cow::Owned(cand));
                break;
            }
        }
    }
    names
}

pub fn print_func(f: &Func, out: &mut String) {
    let names = unique_names(f);
    // Each distinct type is formatted once.
    let mut uniq: Vec<String> = Vec::new();
    let mut index: HashMap<&TensorType, usize> = HashMap::new();
    let ty_ix: Vec<usize> = f
        .values
        .iter()
        .map(|v| {
            *index.entry(&v.ty).or_insert_with(|| {
                uniq.push(v.ty.to_string());
                uniq.len() - 1
            })
        })
        .collect();
    let tys: Vec<&str> = ty_ix.iter().map(|&i| uniq[i].as_str()).collect();
    if is_bare_key(&f.name) {
        let _ = write!(out, "  func.func @{}(", f.name);
    } else {
        let _ = write!(out, "  func.func @{}(", Attr::Str(f.name.clone()));
    }
    for (i, p) in f.params.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "%{}: {}{}", names[p.value.index()], f.ty(p.value), format_dict(&p.attrs));
    }
    out.push(')');
    match f.result_types.len() {
        0 => {}
        1 => {
            let _ = write!(out, " -> {}", f.result_types[0]);
        }
        _ => {
            out.push_str(" -> (");
            for (i, t) in f.result_types.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{t}");
            }
            out.push(')');
        }
    }
    if !f.attrs.is_empty() {
        let _ = write!(out, " attributes{}", format_dict(&f.attrs));
    }
    out.push_str(" {\n");
    for op in &f.body {
        out.push_str("    ");
        if let Some(r) = op.result {
            out.push('%');
            out.push_str(&names[r.index()]);
            out.push_str(" = ");
        }
        out.push_str("\"ck.");
        out.push_str(op.kind.name());
        out.push_str("\"(");
        for (i, o) in op.operands.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push('%');
            out.push_str(&names[o.index()]);
        }
        out.push(')');
        write_dict(out, &op.attrs);
        out.push_str(" : (");
        for (i, o) in op.operands.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(tys[o.index()]);
        }
        out.push_str(") -> ");
        match op.result {
            Some(r) => out.push_str(tys[r.index()]),
            None => out.push_str("()"),
        }
        out.push('\n');
    }
    out.push_str("  }\n");
}

/// Prints a whole module.
pub fn print_module(m: &Module) -> String {
    let mut out = String::from("module {\n");
    for f in &m.funcs {
        print_func(f, &mut out);
    }
    out.push_str("}\n");
    out
}

