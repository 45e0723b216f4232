//! Verifier: structural and type rules of a module.
//!
//! Checks, accumulating every error it finds (one per op at most):
//! unique function names; every operand defined before use (arguments or an
//! earlier op) and every value defined once; the op table's arity, attribute
//! and type rules (`ops::infer_type`) against the declared result type; the
//! body ends with exactly one `ck.return` whose operand types match the
//! function's result types; sizes fit in u64; argument attributes
//! (`ck.param`, `ck.donate`, `ck.step`, `ck.opt_state` are unit, `ck.name`
//! a string; other undotted or `ck.*` names are unknown); `ck.fusion` groups
//! are contiguous and emittable (`fusion::verify_fusion`, checked once the
//! rest is clean); and
//! function attributes (`ck.arena_bytes` is a non-negative i64; other
//! undotted or `ck.*` names are unknown). Dotted names of other dialects
//! are left alone, as MLIR's discardable attributes.

use crate::attr::{Attr, Attrs};
use crate::diag::{Diag, Diags, Loc};
use crate::func::{Func, Module};
use crate::ops::{ARG_ATTRS, ATTR_ARENA_BYTES, ATTR_HYPER, ATTR_HYPER_DEFAULT, ATTR_NAME, OpKind, infer_type};
use crate::types::TensorType;
use std::collections::HashSet;

/// A problem with a function's or an argument's attribute dictionary
/// (`what` is "function" or "argument"); displayed as the verifier reports it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
enum FuncAttrError {
    #[error("{what} attribute '{key}' must be unit, got {got}")]
    NotUnit { what: &'static str, key: String, got: &'static str },
    #[error("{what} attribute '{key}' must be a non-negative i64 byte count")]
    NotBytes { what: &'static str, key: String },
    #[error("{what} attribute '{key}' must be a string, got {got}")]
    NotString { what: &'static str, key: String, got: &'static str },
    #[error("{what} attribute '{key}' must be an f32 float, got {got}")]
    NotF32 { what: &'static str, key: String, got: &'static str },
    #[error("unknown {what} attribute '{key}' (known: {})", known.join(", "))]
    Unknown { what: &'static str, key: String, known: Vec<&'static str> },
}

/// Checks a dictionary of function (`what` = "function") or argument
/// attributes: the known `ck.*` names with their kinds, no unknown `ck.*` or
/// undotted names. Returns the first problem.
fn check_func_attrs(attrs: &Attrs, known: &[(&'static str, &str)], what: &'static str) -> Result<(), FuncAttrError> {
    for (k, a) in attrs {
        let key = || k.to_string();
        match known.iter().find(|(n, _)| n == k) {
            Some((_, "unit")) if !matches!(a, Attr::Unit) => {
                return Err(FuncAttrError::NotUnit { what, key: key(), got: a.kind_name() });
            }
            Some((_, "bytes")) if !matches!(a, Attr::Int(v) if *v >= 0) => {
                return Err(FuncAttrError::NotBytes { what, key: key() });
            }
            Some((_, "string")) if !matches!(a, Attr::Str(_)) => {
                return Err(FuncAttrError::NotString { what, key: key(), got: a.kind_name() });
            }
            Some((_, "f32")) if !matches!(a, Attr::F32(_)) => {
                return Err(FuncAttrError::NotF32 { what, key: key(), got: a.kind_name() });
            }
            Some(_) => {}
            None if !k.contains('.') || k.starts_with("ck.") => {
                return Err(FuncAttrError::Unknown { what, key: key(), known: known.iter().map(|(n, _)| *n).collect() });
            }
            None => {}
        }
    }
    Ok(())
}

pub fn verify_func(f: &Func, diags: &mut Diags) {
    let errors_before = diags.0.len();
    let mut defined = vec![false; f.values.len()];
    let at = |loc: &Loc, m: String| Diag::error(loc.clone(), m);
    if let Err(m) = check_func_attrs(&f.attrs, &[(ATTR_ARENA_BYTES, "bytes")], "function") {
        diags.push(at(&f.loc, format!("@{}: {m}", f.name)));
    }
    for (i, p) in f.params.iter().enumerate() {
        let known: Vec<(&'static str, &str)> = ARG_ATTRS.iter().map(|&a| (a, "unit")).chain([(ATTR_NAME, "string"), (ATTR_HYPER, "string"), (ATTR_HYPER_DEFAULT, "f32")]).collect();
        if let Err(m) = check_func_attrs(&p.attrs, &known, "argument") {
            diags.push(at(&f.loc, format!("@{} argument #{i}: {m}", f.name)));
        }
    }
    for p in &f.params {
        if p.value.index() >= f.values.len() || defined[p.value.index()] {
            diags.push(Diag::error(f.loc.clone(), format!("argument of @{} is defined twice", f.name)));
            return;
        }
        defined[p.value.index()] = true;
        if f.ty(p.value).byte_size().is_none() {
            diags.push(Diag::error(f.loc.clone(), format!("argument type {} has a size that overflows", f.ty(p.value))));
        }
    }
    match f.body.last() {
        Some(op) if op.kind == OpKind::Return => {}
        _ => diags.push(Diag::error(f.loc.clone(), format!("function @{} must end with 'ck.return'", f.name))),
    }
    for (i, op) in f.body.iter().enumerate() {
        let err = |m: String| Diag::error(op.loc.clone(), format!("'ck.{}' op {m}", op.kind.name()));
        if op.kind == OpKind::Return && i + 1 != f.body.len() {
            diags.push(err("must be the last op of the function".into()));
            continue;
        }
        let mut ok = true;
        for &o in &op.operands {
            if o.index() >= f.values.len() || !defined[o.index()] {
                let name = f.values.get(o.index()).map(|v| v.name.as_str()).unwrap_or("?");
                diags.push(err(format!("uses value %{name} before it is defined")));
                ok = false;
                break;
            }
        }
        if !ok {
            continue;
        }
        if op.kind.has_result() != op.result.is_some() {
            diags.push(err("has the wrong number of results".into()));
            continue;
        }
        let tys: Vec<&TensorType> = op.operands.iter().map(|&v| f.ty(v)).collect();
        let declared = op.result.map(|r| f.ty(r));
        if let Err(d) = infer_type(op.kind, &op.attrs, &tys, declared) {
            diags.push(err(d.message));
        }
        if op.kind == OpKind::Return {
            let got: Vec<&TensorType> = tys;
            if got.len() != f.result_types.len() || got.iter().zip(&f.result_types).any(|(a, b)| *a != b) {
                let want: Vec<String> = f.result_types.iter().map(|t| t.to_string()).collect();
                let have: Vec<String> = got.iter().map(|t| t.to_string()).collect();
                diags.push(err(format!(
                    "returns ({}) but @{} is declared to return ({})",
                    have.join(", "),
                    f.name,
                    want.join(", ")
                )));
            }
        }
        if let Some(r) = op.result {
            if r.index() >= f.values.len() || defined[r.index()] {
                diags.push(err("redefines a value".into()));
            } else {
                defined[r.index()] = true;
            }
        }
    }
    if diags.0.len() == errors_before {
        for (i, m) in crate::fusion::verify_fusion(f) {
            let op = &f.body[i];
            diags.push(Diag::error(op.loc.clone(), format!("'ck.{}' op {m}", op.kind.name())));
        }
    }
}

/// Verifies every function; `Err` holds all errors found.
pub fn verify_module(m: &Module) -> Result<(), Diags> {
    let mut diags = Diags::new();
    let mut names = HashSet::new();
    for f in &m.funcs {
        if !names.insert(f.name.as_str()) {
            diags.push(Diag::error(f.loc.clone(), format!("redefinition of function @{}", f.name)));
        }
        verify_func(f, &mut diags);
    }
    diags.into_result()
}
