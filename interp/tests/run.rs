//! `run_func` runs a function in schedule order, checks its inputs with
//! located errors, and measures the peak bytes it holds.

use ckopt_interp::{Tensor, random_inputs, run_func, run_func_with_stats};
use ckopt_ir::{Attr, Attrs, Func, Loc, Module, OpKind, TensorType, attrs};
use std::sync::Arc;

fn loc(line: u32) -> Loc {
    Loc::new(Arc::from("m.ck"), line, 3)
}

/// `@mlp(x: 2x3, w: 3x2 {ck.param}) -> (sum(relu(x w)^2), relu(x w))`.
fn mlp() -> Module {
    let mut f = Func::new("mlp", loc(1));
    let x = f.add_param("x", TensorType::f32(vec![2, 3]), false);
    let w = f.add_param("w", TensorType::f32(vec![3, 2]), true);
    let h = f.push(OpKind::Matmul, &[x, w], Attrs::new(), None, "h", loc(2)).expect("matmul");
    let a = f.push(OpKind::Relu, &[h], Attrs::new(), None, "a", loc(3)).expect("relu");
    let s = f.push(OpKind::Mul, &[a, a], Attrs::new(), None, "s", loc(4)).expect("mul");
    let l = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "l", loc(5)).expect("sum");
    f.push_return(&[l, a], loc(6));
    Module { funcs: vec![f] }
}

fn t(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::new(shape.to_vec(), data.to_vec()).expect("test tensor")
}

#[test]
fn run_func_computes_a_small_mlp_by_hand() {
    let m = mlp();
    let x = t(&[2, 3], &[1.0, 2.0, 3.0, -1.0, 0.0, 1.0]);
    let w = t(&[3, 2], &[1.0, -1.0, 0.0, 1.0, 1.0, 0.0]);
    // x w = [[4, 1], [0, 1]]; relu same; squares sum = 16 + 1 + 0 + 1 = 18.
    let out = run_func(&m, "mlp", &[x, w]).expect("runs");
    assert_eq!(out.len(), 2);
    assert_eq!(out[0], Tensor::scalar(18.0));
    assert_eq!(out[1], t(&[2, 2], &[4.0, 1.0, 0.0, 1.0]));
}

#[test]
fn peak_bytes_counts_live_op_results_only() {
    let m = mlp();
    let inputs = random_inputs(&m.funcs[0], 0);
    let (_, st) = run_func_with_stats(&m, "mlp", &inputs).expect("runs");
    // h (16 B) live with a (16 B) during relu; then a + s (32 B) at mul;
    // at reduce_sum: a (returned, 16) + s (16) + l (4) = 36.
    assert_eq!(st.peak_bytes, 36);
    assert_eq!(st.arg_bytes, 24 + 24);
    assert_eq!(st.peak_bytes_with_args, 36 + 48);
    assert_eq!(st.ops, 4);
}

#[test]
fn bad_calls_give_located_errors() {
    let m = mlp();
    let e = run_func(&m, "nope", &[]).expect_err("unknown function");
    assert!(e.message.contains("no function @nope") && e.message.contains("@mlp"), "{}", e.message);
    assert_eq!(&*e.loc.file, "m.ck");
    let e = run_func(&m, "mlp", &[Tensor::scalar(1.0)]).expect_err("count");
    assert!(e.message.contains("takes 2 argument(s) but 1"), "{}", e.message);
    assert_eq!(e.loc, loc(1));
    let bad = vec![Tensor::zeros(&[3, 2]), Tensor::zeros(&[3, 2])];
    let e = run_func(&m, "mlp", &bad).expect_err("shape");
    assert!(e.message.contains("input 0 (%x)") && e.message.contains("tensor<2x3xf32>"), "{}", e.message);
    let inconsistent = vec![Tensor { data: vec![0.0; 5], ..Tensor::zeros(&[2, 3]) }, Tensor::zeros(&[3, 2])];
    assert!(run_func(&m, "mlp", &inconsistent).is_err());
}

#[test]
fn unverified_modules_are_rejected_not_run() {
    let mut m = mlp();
    m.funcs[0].body.pop(); // no ck.return
    let e = run_func(&m, "mlp", &random_inputs(&m.funcs[0], 0)).expect_err("no return");
    assert!(e.message.contains("ck.return"), "{}", e.message);
}
