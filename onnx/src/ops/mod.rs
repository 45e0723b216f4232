//! ONNX node -> ck ops, split by op family as autodiff and lowering are:
//! `elementwise.rs` (arithmetic, unary math, activations, Dropout, Cast,
//! comparisons, logic, Where, Trilu),
//! `nn.rs` (Softmax, Gemm, MatMul, the normalizations), `conv.rs`
//! (Conv and pooling), `reduce.rs` (ReduceMean/Sum/Max) and `movement.rs`
//! (shapes, reshapes, slicing, concatenation, Gather, GatherElements,
//! Constant). Each family
//! declares `OPS`, the op types it converts; [`convert`] dispatches on them.
//!
//! Every conversion states its ONNX semantics in terms of existing ck ops;
//! the only ck ops added for ONNX are `erf` and `constant`. Attribute values
//! outside what is converted exactly (grouped or dilated convolutions,
//! ceil-mode pooling, Slice steps other than 1, Pow exponents other than
//! 1, 2 and 0.5, ...) are errors naming the attribute, never an
//! approximation. Static shapes are known for every value, so all shape
//! arithmetic happens here at import time.

mod conv;
mod elementwise;
mod movement;
mod nn;
mod reduce;

pub use nn::log_softmax;

use crate::fold::{self, axis, broadcast_shapes};
use crate::import::{Importer, NodeAttrs, Val, ck_dtype};
use crate::tensor::{CTensor, DataDir, dtype};
use ckopt_ir::{Attr, Attrs, DType, Diag, OpKind, TensorType, ValueId, attrs};

type R<T> = Result<T, Diag>;

fn ints(v: &[u64]) -> Attr {
    Attr::IntArray(v.iter().map(|&d| d as i64).collect())
}

/// The op families, in dispatch order: (its op types, its converter).
type Convert = fn(&mut Importer<'_>, &str, &NodeAttrs<'_>, &[Option<Val>], usize) -> R<Vec<Val>>;
const FAMILIES: &[(&[&str], Convert)] = &[
    (elementwise::OPS, elementwise::convert),
    (nn::OPS, nn::convert),
    (conv::OPS, conv::convert),
    (reduce::OPS, reduce::convert),
    (movement::OPS, movement::convert),
];

/// Converts one node (at least one input is not a constant, or the op is
/// not foldable). Returns one `Val` per output it produces.
pub fn convert(imp: &mut Importer<'_>, op: &str, a: &NodeAttrs<'_>, ins: &[Option<Val>], n_out: usize) -> R<Vec<Val>> {
    if let Some((_, f)) = FAMILIES.iter().find(|(ops, _)| ops.contains(&op)) {
        return f(imp, op, a, ins, n_out);
    }
    Err(not_here(imp, op))
}

/// The error for an op no family converts.
fn not_here(imp: &Importer<'_>, op: &str) -> Diag {
    if fold::foldable(op) {
        imp.err(format!("{op} on a computed (non-constant) tensor is not supported; ckopt only evaluates it on constants"))
    } else {
        imp.err(format!("unsupported ONNX op '{op}' (ckopt imports: {})", crate::SUPPORTED_OPS.join(", ")))
    }
}

/// Input `i` of the node, which must be present.
fn inp(imp: &Importer<'_>, ins: &[Option<Val>], i: usize) -> R<Val> {
    ins.get(i).cloned().flatten().ok_or_else(|| imp.err(format!("input {i} is required")))
}

/// `ck.slice` (no-op when it is the whole tensor).
fn slice(imp: &mut Importer<'_>, v: ValueId, offs: &[u64], size: &[u64]) -> R<ValueId> {
    if size.contains(&0) {
        return Err(imp.err(format!("an empty slice (size {size:?}) is not supported")));
    }
    if imp.ty(v) == size {
        return Ok(v);
    }
    let ty = imp.f.ty(v).with_shape(size.to_vec());
    imp.push(OpKind::Slice, &[v], attrs([("offsets", ints(offs))]), Some(ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SUPPORTED_OPS is exactly the op types some family converts or `fold` evaluates.
    #[test]
    fn supported_ops_are_the_families_and_the_folded_ops() {
        let mut converted: Vec<&str> = FAMILIES.iter().flat_map(|(ops, _)| ops.iter().copied()).collect();
        let n = converted.len();
        converted.sort_unstable();
        converted.dedup();
        assert_eq!(converted.len(), n, "an op type is in two families");
        for op in crate::SUPPORTED_OPS {
            assert!(converted.contains(op) || fold::foldable(op), "{op} is listed as supported but neither converted nor folded");
        }
        for op in &converted {
            assert!(crate::SUPPORTED_OPS.contains(op), "{op} is converted but missing from SUPPORTED_OPS");
        }
    }
}
