//! Every op of `OpKind::ALL` is present in every place docs/adding-an-op.md
//! says a test checks: docs/ir.md's op reference, the autodiff `RULES` and
//! docs/autodiff.md's generated rule table, the interpreter (a tiny instance
//! evaluates to finite values), the random graph generator (restricted to
//! the op, it emits it), the hand-computed interpreter cases and the backend
//! op cases (read as text, so the LLVM crates are not built). A failure
//! names the op and the place. LLVM-free.

#![allow(clippy::unwrap_used)]

use ckopt_interp::{Tensor, eval_kind};
use ckopt_ir::testgen::{GenConfig, gen_module};
use ckopt_ir::{Attr, Attrs, DType, OpKind, TensorType, attrs, infer_type};
use ckopt_passes::autodiff::{RULES_BEGIN, RULES_END, rule_doc};
use std::path::PathBuf;

fn read(rel: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join(rel);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()))
}

fn ints(v: &[i64]) -> Attr {
    Attr::IntArray(v.to_vec())
}

/// A tiny well-typed instance of `k`: operand types, attributes, declared
/// result type. Exhaustive, so a new op does not compile until it has one.
fn tiny(k: OpKind) -> Option<(Vec<TensorType>, Attrs, Option<TensorType>)> {
    use OpKind::*;
    let t = |s: &[u64]| TensorType::f32(s.to_vec());
    let typed = |(shapes, a, d): (Vec<Vec<u64>>, Attrs, Option<TensorType>)| (shapes.into_iter().map(TensorType::f32).collect(), a, d);
    let win = || attrs([("window", ints(&[2, 2]))]);
    let axis = |v| attrs([("axis", Attr::Int(v))]);
    let i64t = |s: &[u64]| TensorType::new(s.to_vec(), DType::I64);
    let i1t = |s: &[u64]| TensorType::new(s.to_vec(), DType::I1);
    let mixed = match k {
        Gather => Some((vec![t(&[3, 2]), i64t(&[4])], axis(0), None)),
        GatherGrad => Some((vec![i64t(&[4]), t(&[4, 2])], axis(0), Some(t(&[3, 2])))),
        TakeAlong => Some((vec![t(&[3, 2]), i64t(&[3, 1])], axis(1), None)),
        TakeAlongGrad => Some((vec![i64t(&[3, 1]), t(&[3, 1])], axis(1), Some(t(&[3, 2])))),
        Eq | Ne | Lt | Le | Gt | Ge => Some((vec![t(&[2, 3]), t(&[2, 3])], Attrs::new(), None)),
        And | Or => Some((vec![i1t(&[2, 3]), i1t(&[2, 3])], Attrs::new(), None)),
        Not => Some((vec![i1t(&[2, 3])], Attrs::new(), None)),
        Select => Some((vec![i1t(&[2, 3]), t(&[2, 3]), t(&[2, 3])], Attrs::new(), None)),
        Cast => Some((vec![t(&[2, 3])], Attrs::new(), Some(i64t(&[2, 3])))),
        Iota => Some((vec![], attrs([("dim", Attr::Int(1))]), Some(i64t(&[2, 3])))),
        CrossEntropy => Some((vec![t(&[3, 2]), i64t(&[3])], Attrs::new(), None)),
        CrossEntropyGrad => Some((vec![t(&[3, 2]), i64t(&[3]), t(&[])], Attrs::new(), None)),
        _ => None,
    };
    if mixed.is_some() {
        return mixed;
    }
    Some(typed(match k {
        Neg | Exp | Log | Tanh | Sigmoid | Relu | Sqrt | Rsqrt | Erf => (vec![vec![2, 3]], Attrs::new(), None),
        Add | Sub | Mul | Div | Max | ReluGrad => (vec![vec![2, 3], vec![2, 3]], Attrs::new(), None),
        Scale => (vec![vec![2, 3]], attrs([("value", Attr::F32(-2.0))]), None),
        Fill => (vec![], attrs([("value", Attr::F32(1.5))]), Some(t(&[2, 3]))),
        Constant => (vec![], attrs([("value", Attr::Dense { shape: vec![2], data: vec![1.0, -2.0] })]), None),
        Broadcast => (vec![vec![3]], attrs([("dims", ints(&[1]))]), Some(t(&[2, 3]))),
        ReduceSum | ReduceMax => (vec![vec![2, 3]], attrs([("dims", ints(&[1]))]), None),
        Transpose => (vec![vec![2, 3]], attrs([("perm", ints(&[1, 0]))]), None),
        Reshape => (vec![vec![2, 3]], Attrs::new(), Some(t(&[3, 2]))),
        Slice => (vec![vec![2, 3]], attrs([("offsets", ints(&[0, 1]))]), Some(t(&[2, 2]))),
        Concat => (vec![vec![2, 3], vec![2, 1]], attrs([("dim", Attr::Int(1))]), None),
        Matmul => (vec![vec![2, 3], vec![3, 4]], Attrs::new(), None),
        Conv2d => (vec![vec![1, 1, 4, 4], vec![2, 1, 3, 3]], Attrs::new(), None),
        Conv2dGradInput => (vec![vec![1, 2, 2, 2], vec![2, 1, 3, 3]], Attrs::new(), Some(t(&[1, 1, 4, 4]))),
        Conv2dGradFilter => (vec![vec![1, 1, 4, 4], vec![1, 2, 2, 2]], Attrs::new(), Some(t(&[2, 1, 3, 3]))),
        MaxPool2d | AvgPool2d => (vec![vec![1, 1, 4, 4]], win(), None),
        MaxPool2dGrad => (vec![vec![1, 1, 4, 4], vec![1, 1, 2, 2]], win(), None),
        AvgPool2dGrad => (vec![vec![1, 1, 2, 2]], win(), Some(t(&[1, 1, 4, 4]))),
        Dropout => (vec![vec![2, 3]], attrs([("rate", Attr::F32(0.5)), ("seed", Attr::Int(7))]), None),
        Gather | GatherGrad | TakeAlong | TakeAlongGrad | Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select | Cast | Iota
        | CrossEntropy | CrossEntropyGrad => return None,
        Return => return None,
    }))
}

/// Evaluates the tiny instance of `k` (positive inputs, so log/sqrt/rsqrt/div are finite).
fn eval_tiny(k: OpKind) -> Result<(), String> {
    let Some((types, a, declared)) = tiny(k) else { return Ok(()) };
    let refs: Vec<&TensorType> = types.iter().collect();
    let ty = infer_type(k, &a, &refs, declared.as_ref())
        .map_err(|e| format!("type rule (ir/src/ops.rs infer_type): {}", e.message))?
        .ok_or("type rule gives no result")?;
    let inputs: Vec<Tensor> = types
        .iter()
        .map(|ty| {
            let n: u64 = ty.shape.iter().product();
            let shape = ty.shape.iter().map(|&d| d as usize).collect();
            if ty.dtype.is_float() {
                Tensor::new(shape, (0..n).map(|i| 0.5 + 0.125 * (i % 7) as f32).collect()).unwrap()
            } else {
                // Indices and labels 0, 1, 0, 1, ... (in range of every tiny instance); masks alike.
                Tensor::from_ints(shape, ty.dtype, (0..n).map(|i| (i % 2) as i64).collect()).unwrap()
            }
        })
        .collect();
    let inrefs: Vec<&Tensor> = inputs.iter().collect();
    let out = eval_kind(k, &a, &inrefs, &ty).map_err(|e| format!("interpreter (interp/src/eval.rs eval_kind): {}", e.message))?;
    if out.data.iter().any(|v| !v.is_finite()) {
        return Err(format!("interpreter (interp/src/eval.rs eval_kind): non-finite result {:?}", out.data));
    }
    Ok(())
}

/// Whether the random graph generator, allowed only `k`, emits `k`.
fn generated(k: OpKind) -> bool {
    let mut cfg = GenConfig { min_ops: 3, max_ops: 3, ..GenConfig::default().with_int_ops() };
    cfg.exclude = OpKind::ALL.iter().copied().filter(|&o| o != k).collect();
    (0..8u64).any(|seed| gen_module(&cfg, seed).funcs.iter().any(|f| f.body.iter().any(|o| o.kind == k)))
}

/// The rows of docs/autodiff.md's generated table (between the markers).
fn autodiff_table(doc: &str) -> &str {
    let b = doc.find(RULES_BEGIN).map(|i| i + RULES_BEGIN.len()).unwrap_or(0);
    let e = doc[b..].find(RULES_END).map(|i| b + i).unwrap_or(b);
    &doc[b..e]
}

#[test]
fn every_op_is_in_every_checked_place() {
    let ir_md = read("docs/ir.md");
    let ad_md = read("docs/autodiff.md");
    let ad_table = autodiff_table(&ad_md);
    let interp_cases = read("interp/tests/ops.rs");
    let backend_cases = read("lower/src/testcases.rs");
    let adding = read("docs/adding-an-op.md");
    let mut problems = Vec::new();
    for &k in OpKind::ALL {
        let full = format!("ck.{}", k.name());
        let row = format!("| `{full}` |");
        let variant = format!("OpKind::{k:?}");
        let mut miss = |place: &str, what: &str| problems.push(format!("{full}: {place}: {what}"));
        if !ir_md.lines().any(|l| l.trim_start().starts_with(&row)) {
            miss("docs/ir.md", "no row in the op table (The op set)");
        }
        if !ir_md.lines().any(|l| l.starts_with("### ") && l.contains(&format!("`{full}`"))) {
            miss("docs/ir.md", "no ### section naming it");
        }
        if rule_doc(k).is_none() {
            miss("passes/src/autodiff/*.rs", "no entry in a family's RULES (and no rule documented)");
        }
        if !ad_table.lines().any(|l| l.starts_with(&row)) {
            miss("docs/autodiff.md", "no row in the rule table (CKOPT_BLESS=1 cargo test -p ckopt-passes autodiff_doc)");
        }
        if k == OpKind::Return {
            continue;
        }
        if let Err(e) = eval_tiny(k) {
            miss("interpreter", &e);
        }
        if !generated(k) {
            miss("ir/src/testgen.rs", "the generator never emits it (STEP_OPS, Gen::emit)");
        }
        if !interp_cases.contains(&variant) {
            miss("interp/tests/ops.rs", &format!("no hand-computed case (no {variant})"));
        }
        if !backend_cases.contains(&variant) {
            miss("lower/src/testcases.rs", &format!("no backend op case (no {variant})"));
        }
    }
    if !adding.contains("op_coverage.rs") {
        problems.push("docs/adding-an-op.md does not point to passes/tests/op_coverage.rs".into());
    }
    assert!(problems.is_empty(), "ops missing from places docs/adding-an-op.md lists:\n{}", problems.join("\n"));
}

#[test]
fn tiny_instances_cover_every_op_but_return() {
    for &k in OpKind::ALL {
        assert_eq!(tiny(k).is_some(), k != OpKind::Return, "ck.{}", k.name());
    }
}
