//! Type rules of the ops whose operands and result do not share one element
//! type (`ElemClass::Mixed`): indexing (`gather`, `take_along` and their
//! gradients), comparisons and logic (i1 results), `select`, `cast`, `iota`
//! and the integer-label `cross_entropy` with its gradient.
//!
//! Each rule checks the element type of every operand by its role (index
//! operands are `i64` or `i32`, masks are `i1`, ...) and the shapes (no
//! implicit broadcasting, as every `ck` op), and returns the result type.
//! Errors are unlocated diagnostics naming the operand.

use crate::attr::{Attr, Attrs};
use crate::diag::Diag;
use crate::ops::{OpKind, need_declared};
use crate::types::{DType, TensorType};

/// The default `ignore_index` of `cross_entropy` (PyTorch's).
pub const DEFAULT_IGNORE_INDEX: i64 = -100;

/// `cross_entropy`'s `ignore_index` attribute (default -100).
pub fn ignore_index(attrs: &Attrs) -> i64 {
    attrs.get("ignore_index").and_then(Attr::as_int).unwrap_or(DEFAULT_IGNORE_INDEX)
}

fn bad(m: String) -> Diag {
    Diag::unlocated(m)
}

/// An index operand: i64 or i32.
fn need_index(what: &str, t: &TensorType) -> Result<(), Diag> {
    if t.dtype.is_integer() {
        Ok(())
    } else {
        Err(bad(format!("{what} must have an integer element type (i64 or i32), got {t}")))
    }
}

fn need_float(what: &str, t: &TensorType) -> Result<(), Diag> {
    if t.dtype.is_float() {
        Ok(())
    } else {
        Err(bad(format!("{what} must have a float element type (f32, bf16, f16), got {t}")))
    }
}

fn need_bool(what: &str, t: &TensorType) -> Result<(), Diag> {
    if t.dtype.is_bool() { Ok(()) } else { Err(bad(format!("{what} must have element type i1, got {t}"))) }
}

/// The `axis` (or `dim`) attribute, checked against `rank`.
fn axis_attr(attrs: &Attrs, name: &str, rank: usize) -> Result<usize, Diag> {
    let a = attrs.get(name).and_then(Attr::as_int).ok_or_else(|| bad(format!("requires attribute '{name}' (i64 integer)")))?;
    if a < 0 || a as u64 >= rank as u64 {
        return Err(bad(format!("'{name}' = {a} is out of range for rank {rank}")));
    }
    Ok(a as usize)
}

fn same_shape(what: &str, a: &TensorType, b: &TensorType) -> Result<(), Diag> {
    if a.shape != b.shape {
        return Err(bad(format!("{what} shapes must be equal (no implicit broadcasting), got {a} and {b}")));
    }
    Ok(())
}

/// `x.shape[:axis] ++ idx.shape ++ x.shape[axis+1:]`.
pub fn gather_shape(x: &[u64], idx: &[u64], axis: usize) -> Vec<u64> {
    let mut s = x[..axis].to_vec();
    s.extend_from_slice(idx);
    s.extend_from_slice(&x[axis + 1..]);
    s
}

/// The type rule of every mixed op (see the module doc).
pub fn infer_mixed(
    kind: OpKind,
    attrs: &Attrs,
    operands: &[&TensorType],
    declared: Option<&TensorType>,
) -> Result<TensorType, Diag> {
    use OpKind::*;
    match kind {
        Gather => {
            let (x, idx) = (operands[0], operands[1]);
            need_index("the index operand", idx)?;
            let axis = axis_attr(attrs, "axis", x.rank())?;
            Ok(x.with_shape(gather_shape(&x.shape, &idx.shape, axis)))
        }
        GatherGrad => {
            let (idx, dy) = (operands[0], operands[1]);
            need_index("the index operand", idx)?;
            need_float("dy", dy)?;
            let dx = need_declared(declared)?;
            let axis = axis_attr(attrs, "axis", dx.rank())?;
            let want = gather_shape(&dx.shape, &idx.shape, axis);
            if dy.shape != want || dx.dtype != dy.dtype {
                return Err(bad(format!(
                    "gather of {dx} at indices {idx} along axis {axis} gives {}, not the type of dy {dy}",
                    dx.with_shape(want)
                )));
            }
            Ok(dx)
        }
        TakeAlong => {
            let (x, idx) = (operands[0], operands[1]);
            need_index("the index operand", idx)?;
            let axis = axis_attr(attrs, "axis", x.rank())?;
            check_along(x, idx, axis)?;
            Ok(x.with_shape(idx.shape.clone()))
        }
        TakeAlongGrad => {
            let (idx, dy) = (operands[0], operands[1]);
            need_index("the index operand", idx)?;
            need_float("dy", dy)?;
            let dx = need_declared(declared)?;
            let axis = axis_attr(attrs, "axis", dx.rank())?;
            check_along(&dx, idx, axis)?;
            if dy.shape != idx.shape || dx.dtype != dy.dtype {
                return Err(bad(format!("dy {dy} must have the index operand's shape {idx} and the result's element type")));
            }
            Ok(dx)
        }
        Eq | Ne | Lt | Le | Gt | Ge => {
            let (a, b) = (operands[0], operands[1]);
            if a.dtype != b.dtype {
                return Err(bad(format!("operand element types differ: {a} and {b}")));
            }
            if a.dtype.is_bool() && !matches!(kind, Eq | Ne) {
                return Err(bad(format!("ordered comparisons need a float or integer element type (not i1), got {a}")));
            }
            same_shape("operand", a, b)?;
            Ok(TensorType::new(a.shape.clone(), DType::I1))
        }
        And | Or | Not => {
            for (i, o) in operands.iter().enumerate() {
                need_bool(&format!("operand {i}"), o)?;
            }
            if kind != Not {
                same_shape("operand", operands[0], operands[1])?;
            }
            Ok(operands[0].clone())
        }
        Select => {
            let (c, a, b) = (operands[0], operands[1], operands[2]);
            need_bool("the condition (operand 0)", c)?;
            if a.dtype != b.dtype {
                return Err(bad(format!("the selected operands' element types differ: {a} and {b}")));
            }
            same_shape("operand", c, a)?;
            same_shape("operand", a, b)?;
            Ok(a.clone())
        }
        Cast => {
            let y = need_declared(declared)?;
            same_shape("operand and result", operands[0], &y)?;
            Ok(y)
        }
        Iota => {
            let y = need_declared(declared)?;
            if y.dtype.is_bool() {
                return Err(bad(format!("iota needs a float or integer element type (not i1), got {y}")));
            }
            let dim = axis_attr(attrs, "dim", y.rank())?;
            // Every index must be representable exactly.
            let limit: u64 = match y.dtype {
                DType::I32 => i32::MAX as u64 + 1,
                DType::F32 => 1 << 24,
                DType::BF16 => 1 << 8,
                DType::F16 => 1 << 11,
                _ => u64::MAX,
            };
            if y.shape[dim] > limit {
                return Err(bad(format!("iota along dim {dim} of {y}: index {} is not exact in {}", y.shape[dim] - 1, y.dtype.name())));
            }
            Ok(y)
        }
        CrossEntropy | CrossEntropyGrad => {
            let (logits, labels) = (operands[0], operands[1]);
            need_float("the logits (operand 0)", logits)?;
            need_index("the labels (operand 1)", labels)?;
            if logits.rank() != 2 || labels.rank() != 1 || labels.shape[0] != logits.shape[0] {
                return Err(bad(format!("cross_entropy needs logits [N, C] and labels [N], got {logits} and {labels}")));
            }
            if logits.shape[1] == 0 {
                return Err(bad(format!("cross_entropy needs at least one class, got {logits}")));
            }
            if kind == CrossEntropy {
                return Ok(TensorType::new(Vec::<u64>::new(), DType::F32));
            }
            let dy = operands[2];
            if dy.rank() != 0 || dy.dtype != DType::F32 {
                return Err(bad(format!("dy of cross_entropy_grad must be tensor<f32>, got {dy}")));
            }
            Ok(logits.clone())
        }
        _ => Err(bad(format!("no type rule for 'ck.{}'", kind.name()))),
    }
}

/// `take_along`: `idx` has `x`'s rank and fits inside `x` outside `axis`.
fn check_along(x: &TensorType, idx: &TensorType, axis: usize) -> Result<(), Diag> {
    if idx.rank() != x.rank() {
        return Err(bad(format!("the index operand {idx} must have the rank of {x}")));
    }
    for d in 0..x.rank() {
        if d != axis && idx.shape[d] > x.shape[d] {
            return Err(bad(format!("index dim {d} ({}) is larger than dim {d} of {x}", idx.shape[d])));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::Attr;
    use crate::ops::infer_type;

    fn ty(s: &[u64], d: DType) -> TensorType {
        TensorType::new(s.to_vec(), d)
    }
    fn axis(a: i64) -> Attrs {
        let mut m = Attrs::new();
        m.insert("axis".into(), Attr::Int(a));
        m
    }

    #[test]
    fn gather_shape_splices_the_index_shape() {
        let r = infer_type(OpKind::Gather, &axis(0), &[&ty(&[10, 4], DType::F32), &ty(&[2, 3], DType::I64)], None);
        assert_eq!(r, Ok(Some(ty(&[2, 3, 4], DType::F32))));
        let r = infer_type(OpKind::Gather, &axis(1), &[&ty(&[10, 4], DType::F32), &ty(&[3], DType::I32)], None);
        assert_eq!(r, Ok(Some(ty(&[10, 3], DType::F32))));
        let e = infer_type(OpKind::Gather, &axis(0), &[&ty(&[10, 4], DType::F32), &ty(&[3], DType::F32)], None);
        assert!(e.unwrap_err().message.contains("integer element type"));
        assert!(infer_type(OpKind::Gather, &axis(2), &[&ty(&[10, 4], DType::F32), &ty(&[3], DType::I64)], None).is_err());
    }

    #[test]
    fn comparisons_give_i1_and_select_needs_i1() {
        let f = ty(&[2, 3], DType::F32);
        assert_eq!(infer_type(OpKind::Lt, &Attrs::new(), &[&f, &f], None), Ok(Some(ty(&[2, 3], DType::I1))));
        let c = ty(&[2, 3], DType::I1);
        assert_eq!(infer_type(OpKind::Select, &Attrs::new(), &[&c, &f, &f], None), Ok(Some(f.clone())));
        assert!(infer_type(OpKind::Select, &Attrs::new(), &[&f, &f, &f], None).is_err());
        assert!(infer_type(OpKind::Lt, &Attrs::new(), &[&c, &c], None).is_err());
        assert!(infer_type(OpKind::Eq, &Attrs::new(), &[&c, &c], None).is_ok());
        assert!(infer_type(OpKind::And, &Attrs::new(), &[&f, &f], None).is_err());
    }

    #[test]
    fn cross_entropy_types() {
        let l = ty(&[4, 7], DType::F32);
        let y = ty(&[4], DType::I64);
        let s = ty(&[], DType::F32);
        assert_eq!(infer_type(OpKind::CrossEntropy, &Attrs::new(), &[&l, &y], None), Ok(Some(s.clone())));
        assert_eq!(infer_type(OpKind::CrossEntropyGrad, &Attrs::new(), &[&l, &y, &s], None), Ok(Some(l.clone())));
        assert!(infer_type(OpKind::CrossEntropy, &Attrs::new(), &[&l, &ty(&[3], DType::I64)], None).is_err());
        assert!(infer_type(OpKind::CrossEntropy, &Attrs::new(), &[&l, &ty(&[4], DType::F32)], None).is_err());
    }

    #[test]
    fn iota_refuses_inexact_indices() {
        let mut a = Attrs::new();
        a.insert("dim".into(), Attr::Int(0));
        assert!(infer_type(OpKind::Iota, &a, &[], Some(&ty(&[300], DType::BF16))).is_err());
        assert!(infer_type(OpKind::Iota, &a, &[], Some(&ty(&[300], DType::I32))).is_ok());
        assert!(infer_type(OpKind::Iota, &a, &[], Some(&ty(&[3], DType::I1))).is_err());
    }
}
