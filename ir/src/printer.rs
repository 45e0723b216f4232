//! Printer: MLIR generic op syntax, one op per line, types spelled out.
//!
//! Invariant: `print(parse(print(m))) == print(m)`, and upstream
//! `mlir-opt --allow-unregistered-dialect` accepts the output. Value names
//! are the stored ones, made unique (a repeated name gets a `_N` suffix) and
//! valid MLIR identifiers, so passes may create values with any hint.

use crate::attr::{Attr, format_dict, is_bare_key};
use crate::func::{Func, Module};
use std::collections::HashSet;
use std::fmt::Write;

fn sanitize(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$' | '-') { c } else { '_' })
        .collect();
    if s.is_empty() {
        s.push('v');
    }
    // Names that start with a digit must be all digits in MLIR (`%0`).
    if s.starts_with(|c: char| c.is_ascii_digit()) && !s.chars().all(|c| c.is_ascii_digit()) {
        s.insert(0, 'v');
    }
    s
}

/// Unique printable names for every value of `f`, indexed by `ValueId`.
pub fn value_names(f: &Func) -> Vec<String> {
    let mut used = HashSet::with_capacity(f.values.len());
    let mut names = Vec::with_capacity(f.values.len());
    for v in &f.values {
        let base = sanitize(&v.name);
        let mut name = base.clone();
        let mut n = 1;
        // A suffixed all-digit name (`5_1`) would not be an MLIR identifier.
        let stem = if base.bytes().all(|c| c.is_ascii_digit()) { format!("v{base}") } else { base.clone() };
        while !used.insert(name.clone()) {
            name = format!("{stem}_{n}");
            n += 1;
        }
        names.push(name);
    }
    names
}

pub fn print_func(f: &Func, out: &mut String) {
    let names = value_names(f);
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
            let _ = write!(out, "%{} = ", names[r.index()]);
        }
        let _ = write!(out, "\"ck.{}\"(", op.kind.name());
        for (i, o) in op.operands.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "%{}", names[o.index()]);
        }
        out.push(')');
        out.push_str(&format_dict(&op.attrs));
        out.push_str(" : (");
        for (i, o) in op.operands.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            let _ = write!(out, "{}", f.ty(*o));
        }
        out.push_str(") -> ");
        match op.result {
            Some(r) => {
                let _ = write!(out, "{}", f.ty(r));
            }
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

