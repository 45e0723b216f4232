//! docs/ir.md is checked against the op table (`ir/src/ops.rs`), so the
//! reference cannot drift from the code:
//! - its op table lists exactly the ops of `OpKind::ALL`, each once, with the
//!   operand count of `arity`, the attributes of `attr_specs` (name, kind,
//!   required or optional), the result-type rule (`needs_declared_type`) and
//!   the `summary` string;
//! - every op has a `### ` semantics heading naming it;
//! - the table of pass attributes lists `DISCARDABLE_ATTRS` with their kinds,
//!   plus `ck.arena_bytes` and `ck.param`, and no other `ck.*` name;
//! - every `mlir` code block parses and verifies.

use ckopt_ir::ops::{ARG_ATTRS, ATTR_ARENA_BYTES, ATTR_NAME, AttrKind, DISCARDABLE_ATTRS};
use ckopt_ir::{Arity, OpKind, parse_and_verify};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn ir_md() -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/ir.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

/// The cells of a Markdown table row, trimmed (`| a | b |` -> ["a", "b"]).
fn cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let inner = t.strip_prefix('|').and_then(|s| s.strip_suffix('|')).unwrap_or("");
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// Table rows whose first cell is a backquoted `ck.*` name and that have `n` cells.
fn ck_rows(doc: &str, n: usize) -> Vec<Vec<String>> {
    doc.lines()
        .filter(|l| l.trim_start().starts_with("| `ck."))
        .map(cells)
        .filter(|c| c.len() == n)
        .collect()
}

fn kind_text(k: AttrKind) -> &'static str {
    match k {
        AttrKind::F32 => "f32",
        AttrKind::I64 => "i64",
        AttrKind::Bool => "bool",
        AttrKind::Ints => "[i64]",
        AttrKind::Unit => "unit",
        AttrKind::Dense => "dense",
    }
}

fn arity_text(a: Arity) -> String {
    match a {
        Arity::Exactly(k) => k.to_string(),
        Arity::Between(lo, hi) => format!("{lo}-{hi}"),
        Arity::AtLeast(k) => format!(">= {k}"),
        Arity::Any => "any".into(),
    }
}

fn attrs_text(k: OpKind) -> String {
    let specs = k.attr_specs();
    if specs.is_empty() {
        return "—".into();
    }
    let parts: Vec<String> = specs
        .iter()
        .map(|s| format!("`{}{}: {}`", s.name, if s.required { "" } else { "?" }, kind_text(s.kind)))
        .collect();
    parts.join(", ")
}

fn result_text(k: OpKind) -> &'static str {
    if !k.has_result() {
        "none"
    } else if k.needs_declared_type() {
        "declared"
    } else {
        "inferred"
    }
}

/// Every op is documented once, with the table's arity, attributes, result
/// rule and summary; the doc names no op the table lacks.
#[test]
fn op_table_in_docs_matches_the_op_table() {
    let doc = ir_md();
    let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in ck_rows(&doc, 5) {
        let name = r[0].trim_matches('`').to_string();
        assert!(rows.insert(name.clone(), r).is_none(), "docs/ir.md lists {name} twice");
    }
    let mut problems = Vec::new();
    for &k in OpKind::ALL {
        let name = k.full_name();
        let Some(r) = rows.remove(&name) else {
            problems.push(format!("{name}: missing from the op table of docs/ir.md"));
            continue;
        };
        let want = [arity_text(k.arity()), attrs_text(k), result_text(k).to_string(), k.summary().to_string()];
        for (col, (got, want)) in ["operands", "attributes", "result type", "summary"].iter().zip(r[1..].iter().zip(&want)) {
            if got != want {
                problems.push(format!("{name}: column '{col}' is '{got}', the op table says '{want}'"));
            }
        }
    }
    for name in rows.keys() {
        problems.push(format!("{name}: documented in docs/ir.md but not an op of OpKind::ALL"));
    }
    assert!(problems.is_empty(), "docs/ir.md is out of date:\n{}", problems.join("\n"));
}

/// Every op has a semantics section: a `### ` heading naming `ck.NAME`.
#[test]
fn every_op_has_a_semantics_section() {
    let doc = ir_md();
    let headings: Vec<&str> = doc.lines().filter(|l| l.starts_with("### ")).collect();
    let missing: Vec<String> = OpKind::ALL
        .iter()
        .map(|k| format!("`{}`", k.full_name()))
        .filter(|n| !headings.iter().any(|h| h.contains(n.as_str())))
        .collect();
    assert!(missing.is_empty(), "ops without a '### ' section in docs/ir.md: {}", missing.join(", "));
}

/// The attributes passes read and write are documented with their kinds, and
/// nothing else under the `ck.` prefix.
#[test]
fn pass_attributes_in_docs_match_the_table() {
    let doc = ir_md();
    let mut rows: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in ck_rows(&doc, 4) {
        rows.insert(r[0].trim_matches('`').to_string(), r);
    }
    let mut want: Vec<(&str, &str, &str)> =
        DISCARDABLE_ATTRS.iter().map(|s| (s.name, kind_text(s.kind), "op")).collect();
    want.push((ATTR_ARENA_BYTES, "i64", "function"));
    for &a in ARG_ATTRS {
        want.push((a, "unit", "argument"));
    }
    want.push((ATTR_NAME, "string", "argument"));
    want.push((ckopt_ir::ops::ATTR_HYPER, "string", "argument"));
    want.push((ckopt_ir::ops::ATTR_HYPER_DEFAULT, "f32", "argument"));
    let mut problems = Vec::new();
    for (name, kind, place) in want {
        match rows.remove(name) {
            None => problems.push(format!("{name}: missing from the attribute table")),
            Some(r) if r[1] != kind || r[2] != place => {
                problems.push(format!("{name}: documented as ({}, {}), the code says ({kind}, {place})", r[1], r[2]))
            }
            Some(_) => {}
        }
    }
    for name in rows.keys() {
        problems.push(format!("{name}: documented as a ck attribute but unknown to the code"));
    }
    assert!(problems.is_empty(), "docs/ir.md attribute table is out of date:\n{}", problems.join("\n"));
}

/// The examples are real: every ```mlir block parses and verifies.
#[test]
fn mlir_examples_parse_and_verify() {
    let doc = ir_md();
    let mut blocks = Vec::new();
    let mut cur: Option<String> = None;
    for line in doc.lines() {
        match (&mut cur, line.trim()) {
            (None, "```mlir") => cur = Some(String::new()),
            (Some(b), "```") => {
                blocks.push(std::mem::take(b));
                cur = None;
            }
            (Some(b), _) => {
                b.push_str(line);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    assert!(!blocks.is_empty(), "docs/ir.md has no mlir example");
    for (i, b) in blocks.iter().enumerate() {
        if let Err(d) = parse_and_verify(b, "docs/ir.md") {
            panic!("mlir block {i} of docs/ir.md does not verify:\n{}", d.render(Some(b)));
        }
    }
}
