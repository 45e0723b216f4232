//! `eval_kind` never panics: arbitrary op kinds, operand shapes (including
//! zero-size dims), attributes (wrong kinds, negative or out-of-range
//! values) and result types either evaluate to a tensor of the declared
//! shape or return an error.

use ckopt_interp::{Tensor, eval_kind};
use ckopt_ir::{Attr, Attrs, OpKind, TensorType};
use proptest::prelude::*;

fn arb_shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0usize..4, 0..5)
}

fn arb_attr() -> impl Strategy<Value = Attr> {
    prop_oneof![
        prop::collection::vec(-2i64..5, 0..5).prop_map(Attr::IntArray),
        (-3i64..5).prop_map(Attr::Int),
        (-2.0f32..2.0).prop_map(Attr::F32),
        any::<bool>().prop_map(Attr::Bool),
        Just(Attr::Unit),
    ]
}

const NAMES: &[&str] =
    &["dims", "perm", "offsets", "dim", "value", "rate", "seed", "stride", "padding", "window", "transpose_a", "transpose_b"];

fn arb_attrs() -> impl Strategy<Value = Attrs> {
    prop::collection::vec((0..NAMES.len(), arb_attr()), 0..4)
        .prop_map(|v| v.into_iter().map(|(i, a)| (NAMES[i].to_string(), a)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]
    #[test]
    fn eval_kind_returns_a_value_or_an_error(
        k in 0..OpKind::ALL.len(),
        shapes in prop::collection::vec(arb_shape(), 0..4),
        out in arb_shape(),
        same in any::<bool>(),
        attrs in arb_attrs(),
    ) {
        let kind = OpKind::ALL[k];
        // Half the time the result shape is the first operand's (type-checks more often).
        let out = if same && !shapes.is_empty() { shapes[0].clone() } else { out };
        let inputs: Vec<Tensor> = shapes.iter().map(|s| Tensor::full(s, 0.5)).collect();
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let ty = TensorType::f32(out.iter().map(|&d| d as u64).collect::<Vec<_>>());
        if let Ok(y) = eval_kind(kind, &attrs, &refs, &ty) {
            prop_assert_eq!(&y.shape, &out);
            prop_assert_eq!(y.data.len(), out.iter().product::<usize>());
        }
    }
}
