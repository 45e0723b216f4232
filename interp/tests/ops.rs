//! Hand-computed cases for every `ck` op: each expected number is written out
//! (worked by hand in the comments where not obvious), so the oracle is
//! checked against arithmetic, not against itself.

use ckopt_interp::random::dropout_keep;
use ckopt_interp::{Tensor, eval_kind};
use ckopt_ir::{Attr, Attrs, DType, OpKind, TensorType, attrs};

fn t(shape: &[usize], data: &[f32]) -> Tensor {
    Tensor::new(shape.to_vec(), data.to_vec()).expect("test tensor")
}

fn ev(kind: OpKind, a: Attrs, inputs: &[&Tensor], out: &[u64]) -> Tensor {
    match eval_kind(kind, &a, inputs, &TensorType::f32(out.to_vec())) {
        Ok(t) => t,
        Err(e) => panic!("ck.{} failed: {e}", kind.name()),
    }
}

fn ints(v: &[i64]) -> Attr {
    Attr::IntArray(v.to_vec())
}

#[track_caller]
fn close(got: &Tensor, shape: &[usize], want: &[f32]) {
    assert_eq!(got.shape, shape, "shape");
    assert_eq!(got.data.len(), want.len());
    for (i, (g, w)) in got.data.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-6 + 1e-6 * w.abs(), "element {i}: got {g}, want {w} (all: {:?})", got.data);
    }
}

#[test]
fn unary_elementwise_ops_match_hand_values() {
    let x = t(&[3], &[-1.0, 0.0, 2.0]);
    close(&ev(OpKind::Neg, Attrs::new(), &[&x], &[3]), &[3], &[1.0, 0.0, -2.0]);
    close(&ev(OpKind::Exp, Attrs::new(), &[&x], &[3]), &[3], &[0.367_879_45, 1.0, 7.389_056]);
    close(&ev(OpKind::Tanh, Attrs::new(), &[&x], &[3]), &[3], &[-0.761_594_2, 0.0, 0.964_027_6]);
    close(&ev(OpKind::Sigmoid, Attrs::new(), &[&x], &[3]), &[3], &[0.268_941_43, 0.5, 0.880_797_1]);
    close(&ev(OpKind::Relu, Attrs::new(), &[&x], &[3]), &[3], &[0.0, 0.0, 2.0]);
    let p = t(&[3], &[1.0, 4.0, 0.25]);
    close(&ev(OpKind::Log, Attrs::new(), &[&p], &[3]), &[3], &[0.0, 1.386_294_4, -1.386_294_4]);
    close(&ev(OpKind::Sqrt, Attrs::new(), &[&p], &[3]), &[3], &[1.0, 2.0, 0.5]);
    close(&ev(OpKind::Rsqrt, Attrs::new(), &[&p], &[3]), &[3], &[1.0, 0.5, 2.0]);
    let a = attrs([("value", Attr::F32(2.5))]);
    close(&ev(OpKind::Scale, a, &[&x], &[3]), &[3], &[-2.5, 0.0, 5.0]);
    // erf(1) = 0.842700792949..., erf(2) = 0.995322265018...; erf is odd.
    close(&ev(OpKind::Erf, Attrs::new(), &[&x], &[3]), &[3], &[-0.842_700_8, 0.0, 0.995_322_3]);
}

#[test]
fn binary_elementwise_ops_match_hand_values() {
    let a = t(&[2, 2], &[1.0, 2.0, 3.0, -4.0]);
    let b = t(&[2, 2], &[4.0, -5.0, 0.5, 2.0]);
    close(&ev(OpKind::Add, Attrs::new(), &[&a, &b], &[2, 2]), &[2, 2], &[5.0, -3.0, 3.5, -2.0]);
    close(&ev(OpKind::Sub, Attrs::new(), &[&a, &b], &[2, 2]), &[2, 2], &[-3.0, 7.0, 2.5, -6.0]);
    close(&ev(OpKind::Mul, Attrs::new(), &[&a, &b], &[2, 2]), &[2, 2], &[4.0, -10.0, 1.5, -8.0]);
    close(&ev(OpKind::Div, Attrs::new(), &[&a, &b], &[2, 2]), &[2, 2], &[0.25, -0.4, 6.0, -2.0]);
    close(&ev(OpKind::Max, Attrs::new(), &[&a, &b], &[2, 2]), &[2, 2], &[4.0, 2.0, 3.0, 2.0]);
    // relu_grad(x, dy): dy where x > 0 (x = 0 gives 0).
    let x = t(&[4], &[-1.0, 0.0, 2.0, 0.5]);
    let dy = t(&[4], &[5.0, 6.0, 7.0, 8.0]);
    close(&ev(OpKind::ReluGrad, Attrs::new(), &[&x, &dy], &[4]), &[4], &[0.0, 0.0, 7.0, 8.0]);
}

#[test]
fn fill_makes_a_constant_of_the_result_type() {
    let a = attrs([("value", Attr::F32(3.0))]);
    close(&ev(OpKind::Fill, a.clone(), &[], &[2, 2]), &[2, 2], &[3.0; 4]);
    close(&ev(OpKind::Fill, a, &[], &[]), &[], &[3.0]);
}

#[test]
fn broadcast_maps_input_dims_to_result_dims() {
    let x = t(&[3], &[1.0, 2.0, 3.0]);
    // dims [1]: x runs along the columns, rows repeat.
    let y = ev(OpKind::Broadcast, attrs([("dims", ints(&[1]))]), &[&x], &[2, 3]);
    close(&y, &[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    // dims [0]: x runs down the rows, columns repeat.
    let y = ev(OpKind::Broadcast, attrs([("dims", ints(&[0]))]), &[&x], &[3, 2]);
    close(&y, &[3, 2], &[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]);
    // Scalar to a matrix.
    let s = Tensor::scalar(7.0);
    close(&ev(OpKind::Broadcast, attrs([("dims", ints(&[]))]), &[&s], &[2, 2]), &[2, 2], &[7.0; 4]);
    // [2, 1] with dims [0, 2] into [2, 2, 1]: y[i, j, 0] = x[i, 0].
    let m = t(&[2, 1], &[5.0, 6.0]);
    let y = ev(OpKind::Broadcast, attrs([("dims", ints(&[0, 2]))]), &[&m], &[2, 2, 1]);
    close(&y, &[2, 2, 1], &[5.0, 5.0, 6.0, 6.0]);
}

#[test]
fn reductions_remove_the_reduced_dims() {
    let x = t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let d = |v: &[i64]| attrs([("dims", ints(v))]);
    close(&ev(OpKind::ReduceSum, d(&[1]), &[&x], &[2]), &[2], &[6.0, 15.0]);
    close(&ev(OpKind::ReduceSum, d(&[0]), &[&x], &[3]), &[3], &[5.0, 7.0, 9.0]);
    close(&ev(OpKind::ReduceSum, d(&[0, 1]), &[&x], &[]), &[], &[21.0]);
    close(&ev(OpKind::ReduceSum, d(&[]), &[&x], &[2, 3]), &[2, 3], &x.data);
    let z = t(&[2, 3], &[-1.0, 5.0, 2.0, -7.0, -3.0, -4.0]);
    close(&ev(OpKind::ReduceMax, d(&[1]), &[&z], &[2]), &[2], &[5.0, -3.0]);
    close(&ev(OpKind::ReduceMax, d(&[0]), &[&z], &[3]), &[3], &[-1.0, 5.0, 2.0]);
    close(&ev(OpKind::ReduceMax, d(&[0, 1]), &[&z], &[]), &[], &[5.0]);
    // Middle dim of a [2, 2, 2]: y[i, k] = x[i, 0, k] + x[i, 1, k].
    let c = t(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    close(&ev(OpKind::ReduceSum, d(&[1]), &[&c], &[2, 2]), &[2, 2], &[4.0, 6.0, 12.0, 14.0]);
}

#[test]
fn transpose_follows_numpy_perm() {
    let x = t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let y = ev(OpKind::Transpose, attrs([("perm", ints(&[1, 0]))]), &[&x], &[3, 2]);
    close(&y, &[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // x[a, b, c] of shape [2, 1, 3], perm [2, 0, 1]: y[c, a, b] shape [3, 2, 1].
    let x3 = t(&[2, 1, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let y = ev(OpKind::Transpose, attrs([("perm", ints(&[2, 0, 1]))]), &[&x3], &[3, 2, 1]);
    close(&y, &[3, 2, 1], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    // perm [1, 2, 0] on [2, 2, 2]: y[b, c, a] = x[a, b, c].
    let c = t(&[2, 2, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
    let y = ev(OpKind::Transpose, attrs([("perm", ints(&[1, 2, 0]))]), &[&c], &[2, 2, 2]);
    close(&y, &[2, 2, 2], &[0.0, 4.0, 1.0, 5.0, 2.0, 6.0, 3.0, 7.0]);
}

#[test]
fn reshape_keeps_row_major_order() {
    let x = t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    close(&ev(OpKind::Reshape, Attrs::new(), &[&x], &[3, 2]), &[3, 2], &x.data);
    close(&ev(OpKind::Reshape, Attrs::new(), &[&x], &[6]), &[6], &x.data);
}

#[test]
fn slice_takes_a_static_window() {
    let x = t(&[3, 4], &(0..12).map(|v| v as f32).collect::<Vec<_>>());
    let y = ev(OpKind::Slice, attrs([("offsets", ints(&[1, 1]))]), &[&x], &[2, 2]);
    close(&y, &[2, 2], &[5.0, 6.0, 9.0, 10.0]);
    let y = ev(OpKind::Slice, attrs([("offsets", ints(&[0, 3]))]), &[&x], &[3, 1]);
    close(&y, &[3, 1], &[3.0, 7.0, 11.0]);
}

#[test]
fn concat_joins_along_dim() {
    let a = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let b = t(&[1, 2], &[5.0, 6.0]);
    let y = ev(OpKind::Concat, attrs([("dim", Attr::Int(0))]), &[&a, &b], &[3, 2]);
    close(&y, &[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let c = t(&[2, 1], &[7.0, 8.0]);
    let y = ev(OpKind::Concat, attrs([("dim", Attr::Int(1))]), &[&a, &c, &a], &[2, 5]);
    close(&y, &[2, 5], &[1.0, 2.0, 7.0, 1.0, 2.0, 3.0, 4.0, 8.0, 3.0, 4.0]);
}

#[test]
fn matmul_with_flags_and_batch() {
    // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
    let a = t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let b = t(&[3, 2], &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0]);
    let want = [58.0, 64.0, 139.0, 154.0];
    close(&ev(OpKind::Matmul, Attrs::new(), &[&a, &b], &[2, 2]), &[2, 2], &want);
    let at = t(&[3, 2], &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let bt = t(&[2, 3], &[7.0, 9.0, 11.0, 8.0, 10.0, 12.0]);
    let ta = attrs([("transpose_a", Attr::Bool(true))]);
    close(&ev(OpKind::Matmul, ta, &[&at, &b], &[2, 2]), &[2, 2], &want);
    let tb = attrs([("transpose_b", Attr::Bool(true))]);
    close(&ev(OpKind::Matmul, tb, &[&a, &bt], &[2, 2]), &[2, 2], &want);
    let both = attrs([("transpose_a", Attr::Bool(true)), ("transpose_b", Attr::Bool(true))]);
    close(&ev(OpKind::Matmul, both, &[&at, &bt], &[2, 2]), &[2, 2], &want);
    // Batch of 2: second batch is identity x [[1,2],[3,4]].
    let ba = t(&[2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 1.0, 0.0, 0.0, 1.0]);
    let bb = t(&[2, 2, 2], &[5.0, 6.0, 7.0, 8.0, 1.0, 2.0, 3.0, 4.0]);
    // [[1,2],[3,4]] x [[5,6],[7,8]] = [[19,22],[43,50]].
    close(
        &ev(OpKind::Matmul, Attrs::new(), &[&ba, &bb], &[2, 2, 2]),
        &[2, 2, 2],
        &[19.0, 22.0, 43.0, 50.0, 1.0, 2.0, 3.0, 4.0],
    );
}

#[test]
fn conv2d_is_cross_correlation_with_stride_and_padding() {
    let x = t(&[1, 1, 3, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    let w = t(&[1, 1, 2, 2], &[1.0, 0.0, 0.0, -1.0]);
    // y[i, j] = x[i, j] - x[i+1, j+1] = -4 everywhere (not flipped: convolution would give +4).
    close(&ev(OpKind::Conv2d, Attrs::new(), &[&x, &w], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[-4.0; 4]);
    // stride 2, padding 1: windows start at (-1,-1), (-1,1), (1,-1), (1,1):
    // y = [0 - x00, 0 - x02, 0 - x20... ] worked: [-1, -3, -7, 5 - 9].
    let a = attrs([("stride", ints(&[2, 2])), ("padding", ints(&[1, 1]))]);
    close(&ev(OpKind::Conv2d, a, &[&x, &w], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[-1.0, -3.0, -7.0, -4.0]);
    // 1x1 filters mix channels: f0 = c0 + c1, f1 = 2*c0 - c1.
    let x2 = t(&[1, 2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let w2 = t(&[2, 2, 1, 1], &[1.0, 1.0, 2.0, -1.0]);
    close(
        &ev(OpKind::Conv2d, Attrs::new(), &[&x2, &w2], &[1, 2, 2, 2]),
        &[1, 2, 2, 2],
        &[6.0, 8.0, 10.0, 12.0, -3.0, -2.0, -1.0, 0.0],
    );
    // Batch of 2 keeps images apart.
    let xb = t(&[2, 1, 1, 1], &[3.0, -2.0]);
    let wb = t(&[1, 1, 1, 1], &[4.0]);
    close(&ev(OpKind::Conv2d, Attrs::new(), &[&xb, &wb], &[2, 1, 1, 1]), &[2, 1, 1, 1], &[12.0, -8.0]);
}

#[test]
fn conv2d_grad_input_scatters_dy_through_the_filter() {
    // dx[h, w] = dy[h, w] * w00 + dy[h-1, w-1] * w11 with w = [[1, 0], [0, -1]].
    let dy = t(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let w = t(&[1, 1, 2, 2], &[1.0, 0.0, 0.0, -1.0]);
    close(
        &ev(OpKind::Conv2dGradInput, Attrs::new(), &[&dy, &w], &[1, 1, 3, 3]),
        &[1, 1, 3, 3],
        &[1.0, 2.0, 0.0, 3.0, 3.0, -2.0, 0.0, -3.0, -4.0],
    );
    // stride 2, no padding, 1x1 filter of 2 on a 3x3 input: only even positions get dy.
    let dy = t(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let w = t(&[1, 1, 1, 1], &[2.0]);
    let a = attrs([("stride", ints(&[2, 2]))]);
    close(
        &ev(OpKind::Conv2dGradInput, a, &[&dy, &w], &[1, 1, 3, 3]),
        &[1, 1, 3, 3],
        &[2.0, 0.0, 4.0, 0.0, 0.0, 0.0, 6.0, 0.0, 8.0],
    );
}

#[test]
fn conv2d_grad_filter_correlates_x_with_dy() {
    let x = t(&[1, 1, 3, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    // dy = e00: dw[p, q] = x[p, q].
    let dy = t(&[1, 1, 2, 2], &[1.0, 0.0, 0.0, 0.0]);
    close(&ev(OpKind::Conv2dGradFilter, Attrs::new(), &[&x, &dy], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[1.0, 2.0, 4.0, 5.0]);
    // dy = ones: dw[p, q] = sum of the 2x2 block of x starting at (p, q).
    let ones = t(&[1, 1, 2, 2], &[1.0; 4]);
    close(
        &ev(OpKind::Conv2dGradFilter, Attrs::new(), &[&x, &ones], &[1, 1, 2, 2]),
        &[1, 1, 2, 2],
        &[12.0, 16.0, 24.0, 28.0],
    );
    // padding 1, 1x1 dy of a 2x2 filter on a 1x1 input... x = [5], dy[0,0] at
    // window origin (-1,-1): only tap (1,1) reads x: dw = [0, 0, 0, 5].
    let x1 = t(&[1, 1, 1, 1], &[5.0]);
    let dy1 = t(&[1, 1, 1, 1], &[1.0]);
    let a = attrs([("padding", ints(&[1, 1])), ("stride", ints(&[2, 2]))]);
    close(&ev(OpKind::Conv2dGradFilter, a, &[&x1, &dy1], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[0.0, 0.0, 0.0, 5.0]);
}

/// Grouped and depthwise convolutions (`groups`): filter f of group
/// g = f / (F/G) reads only input channels g·(C/G) .. (g+1)·(C/G) - 1.
#[test]
fn grouped_and_depthwise_conv2d_and_gradients_match_hand_values() {
    // groups = 2, C = F = 4, 1x1 filters [4, 2, 1, 1]; channels c0 = [1, 2],
    // c1 = [3, 4], c2 = [5, 6], c3 = [7, 8].
    let x = t(&[1, 4, 1, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
    let w = t(&[4, 2, 1, 1], &[1.0, 1.0, 1.0, -1.0, 2.0, 0.0, 0.0, 1.0]);
    let g2 = || attrs([("groups", Attr::Int(2))]);
    // f0 = c0 + c1, f1 = c0 - c1 (group 0); f2 = 2·c2, f3 = c3 (group 1).
    close(&ev(OpKind::Conv2d, g2(), &[&x, &w], &[1, 4, 1, 2]), &[1, 4, 1, 2], &[4.0, 6.0, -2.0, -2.0, 10.0, 12.0, 7.0, 8.0]);
    // dy: f0 = [1, 0], f1 = [0, 1], f2 = [1, 1], f3 = [2, -1].
    let dy = t(&[1, 4, 1, 2], &[1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, -1.0]);
    // dx c0 = dy0·1 + dy1·1 = [1, 1]; c1 = dy0·1 + dy1·(-1) = [1, -1];
    // c2 = dy2·2 + dy3·0 = [2, 2]; c3 = dy2·0 + dy3·1 = [2, -1].
    close(&ev(OpKind::Conv2dGradInput, g2(), &[&dy, &w], &[1, 4, 1, 2]), &[1, 4, 1, 2], &[1.0, 1.0, 1.0, -1.0, 2.0, 2.0, 2.0, -1.0]);
    // dw[f, c] = sum_j dy[f, j]·x[group(f)·2 + c, j]: f0: [1, 3]; f1: [2, 4];
    // f2: [5 + 6, 7 + 8] = [11, 15]; f3: [10 - 6, 14 - 8] = [4, 6].
    close(&ev(OpKind::Conv2dGradFilter, g2(), &[&x, &dy], &[4, 2, 1, 1]), &[4, 2, 1, 1], &[1.0, 3.0, 2.0, 4.0, 11.0, 15.0, 4.0, 6.0]);

    // Depthwise (groups = C = F = 2), 2x2 filters, stride 2, padding 1 on 3x3
    // images: x0 = 1..9, x1 = ones; w0 = [[1, 0], [0, -1]], w1 = ones.
    // Windows start at (-1,-1), (-1,1), (1,-1), (1,1).
    let mut xd: Vec<f32> = (1..=9).map(|v| v as f32).collect();
    xd.extend([1.0; 9]);
    let xd = t(&[1, 2, 3, 3], &xd);
    let wd = t(&[2, 1, 2, 2], &[1.0, 0.0, 0.0, -1.0, 1.0, 1.0, 1.0, 1.0]);
    let dw = || attrs([("groups", Attr::Int(2)), ("stride", ints(&[2, 2])), ("padding", ints(&[1, 1]))]);
    // y0[i, j] = x0[2i-1, 2j-1] - x0[2i, 2j]: [0 - 1, 0 - 3, 0 - 7, 5 - 9];
    // y1 = in-bounds taps of each window on ones: [1, 2, 2, 4].
    close(
        &ev(OpKind::Conv2d, dw(), &[&xd, &wd], &[1, 2, 2, 2]),
        &[1, 2, 2, 2],
        &[-1.0, -3.0, -7.0, -4.0, 1.0, 2.0, 2.0, 4.0],
    );
    // dy0 = dy1 = [[1, 2], [3, 4]]. dx0: tap (0,0) (w 1) puts dy[1,1] = 4 at
    // (1,1); tap (1,1) (w -1) puts -dy[i,j] at (2i, 2j). dx1: each window adds
    // its dy to its in-bounds taps.
    let dyd = t(&[1, 2, 2, 2], &[1.0, 2.0, 3.0, 4.0, 1.0, 2.0, 3.0, 4.0]);
    close(
        &ev(OpKind::Conv2dGradInput, dw(), &[&dyd, &wd], &[1, 2, 3, 3]),
        &[1, 2, 3, 3],
        &[-1.0, 0.0, -2.0, 0.0, 4.0, 0.0, -3.0, 0.0, -4.0, 1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 3.0, 4.0, 4.0],
    );
    // dy0 = e00: dw0[p, q] = x0[p-1, q-1] = [0, 0, 0, 1]; dy1 = ones on x1 =
    // ones: dw1[p, q] = windows where tap (p, q) is in bounds = [1, 2, 2, 4].
    let dyf = t(&[1, 2, 2, 2], &[1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    close(&ev(OpKind::Conv2dGradFilter, dw(), &[&xd, &dyf], &[2, 1, 2, 2]), &[2, 1, 2, 2], &[0.0, 0.0, 0.0, 1.0, 1.0, 2.0, 2.0, 4.0]);

    // Depthwise with channel multiplier 2 (groups = C = 2, F = 4): filters
    // f0, f1 read c0, f2, f3 read c1; 1x1 filters [1, 2, 3, 4] on c0 = [1],
    // c1 = [10]: y = [1, 2, 30, 40].
    let xm = t(&[1, 2, 1, 1], &[1.0, 10.0]);
    let wm = t(&[4, 1, 1, 1], &[1.0, 2.0, 3.0, 4.0]);
    close(&ev(OpKind::Conv2d, g2(), &[&xm, &wm], &[1, 4, 1, 1]), &[1, 4, 1, 1], &[1.0, 2.0, 30.0, 40.0]);
}

#[test]
fn pools_over_windows_with_default_stride() {
    let x = t(&[1, 1, 4, 4], &(1..=16).map(|v| v as f32).collect::<Vec<_>>());
    let w2 = attrs([("window", ints(&[2, 2]))]);
    close(&ev(OpKind::MaxPool2d, w2.clone(), &[&x], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[6.0, 8.0, 14.0, 16.0]);
    // Means: (1+2+5+6)/4 = 3.5, (3+4+7+8)/4 = 5.5, (9+10+13+14)/4 = 11.5, 13.5.
    close(&ev(OpKind::AvgPool2d, w2, &[&x], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[3.5, 5.5, 11.5, 13.5]);
    // Overlapping windows: window 3, stride 1 on 4x4 gives 2x2.
    let w3 = attrs([("window", ints(&[3, 3])), ("stride", ints(&[1, 1]))]);
    close(&ev(OpKind::MaxPool2d, w3, &[&x], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[11.0, 12.0, 15.0, 16.0]);
}

#[test]
fn max_pool2d_grad_routes_to_the_first_maximum_and_accumulates() {
    // Tie between (0,1) and (1,0): the first in row-major order, (0,1), wins.
    let x = t(&[1, 1, 2, 2], &[1.0, 3.0, 3.0, 0.0]);
    let dy = t(&[1, 1, 1, 1], &[5.0]);
    let a = attrs([("window", ints(&[2, 2]))]);
    close(&ev(OpKind::MaxPool2dGrad, a, &[&x, &dy], &[1, 1, 2, 2]), &[1, 1, 2, 2], &[0.0, 5.0, 0.0, 0.0]);
    // Overlapping 1x2 windows at stride 1 over [1, 2, 1]: both pick the middle.
    let x = t(&[1, 1, 1, 3], &[1.0, 2.0, 1.0]);
    let dy = t(&[1, 1, 1, 2], &[1.0, 10.0]);
    let a = attrs([("window", ints(&[1, 2])), ("stride", ints(&[1, 1]))]);
    close(&ev(OpKind::MaxPool2dGrad, a, &[&x, &dy], &[1, 1, 1, 3]), &[1, 1, 1, 3], &[0.0, 11.0, 0.0]);
}

#[test]
fn avg_pool2d_grad_spreads_evenly_and_accumulates() {
    let dy = t(&[1, 1, 1, 2], &[4.0, 8.0]);
    let a = attrs([("window", ints(&[2, 2]))]);
    close(
        &ev(OpKind::AvgPool2dGrad, a, &[&dy], &[1, 1, 2, 4]),
        &[1, 1, 2, 4],
        &[1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 2.0, 2.0],
    );
    let dy = t(&[1, 1, 1, 2], &[2.0, 4.0]);
    let a = attrs([("window", ints(&[1, 2])), ("stride", ints(&[1, 1]))]);
    close(&ev(OpKind::AvgPool2dGrad, a, &[&dy], &[1, 1, 1, 3]), &[1, 1, 1, 3], &[1.0, 3.0, 2.0]);
}

#[test]
fn dropout_zeroes_masked_elements_and_scales_the_rest() {
    let x = t(&[4, 8], &(0..32).map(|v| v as f32 + 1.0).collect::<Vec<_>>());
    let a = attrs([("rate", Attr::F32(0.5)), ("seed", Attr::Int(9))]);
    let y = ev(OpKind::Dropout, a.clone(), &[&x], &[4, 8]);
    let mut kept = 0;
    for (i, (&xv, &yv)) in x.data.iter().zip(&y.data).enumerate() {
        if dropout_keep(9, i as u64, 0.5) {
            assert_eq!(yv, xv * 2.0);
            kept += 1;
        } else {
            assert_eq!(yv, 0.0);
        }
    }
    assert!(kept > 4 && kept < 28, "kept {kept}");
    assert_eq!(y, ev(OpKind::Dropout, a, &[&x], &[4, 8]), "recomputation gives the same mask");
    let none = attrs([("rate", Attr::F32(0.0)), ("seed", Attr::Int(9))]);
    assert_eq!(ev(OpKind::Dropout, none, &[&x], &[4, 8]), x);
}

#[test]
fn ill_typed_calls_are_errors_not_panics() {
    let a = t(&[2, 3], &[0.0; 6]);
    let b = t(&[3, 2], &[0.0; 6]);
    let out = TensorType::f32(vec![2, 3]);
    assert!(eval_kind(OpKind::Add, &Attrs::new(), &[&a, &b], &out).is_err());
    assert!(eval_kind(OpKind::Add, &Attrs::new(), &[&a], &out).is_err());
    assert!(eval_kind(OpKind::Relu, &Attrs::new(), &[&a], &TensorType::f32(vec![3, 2])).is_err());
    assert!(eval_kind(OpKind::Return, &Attrs::new(), &[&a], &out).is_err());
    let broken = Tensor { data: vec![0.0; 2], ..Tensor::zeros(&[2, 3]) };
    assert!(eval_kind(OpKind::Relu, &Attrs::new(), &[&broken], &out).is_err());
    let huge = TensorType::f32(vec![1 << 30, 1 << 30]);
    assert!(eval_kind(OpKind::Fill, &attrs([("value", Attr::F32(1.0))]), &[], &huge).is_err());
}

#[test]
fn constant_returns_its_elements_in_row_major_order() {
    let v = Attr::Dense { shape: vec![2, 2], data: vec![1.0, -2.0, 0.5, 3.0] };
    close(&ev(OpKind::Constant, attrs([("value", v)]), &[], &[2, 2]), &[2, 2], &[1.0, -2.0, 0.5, 3.0]);
}

fn it(dt: DType, shape: &[usize], v: &[i64]) -> Tensor {
    Tensor::from_ints(shape.to_vec(), dt, v.to_vec()).expect("test tensor")
}

fn ev_ty(kind: OpKind, a: Attrs, inputs: &[&Tensor], out: TensorType) -> Tensor {
    match eval_kind(kind, &a, inputs, &out) {
        Ok(t) => t,
        Err(e) => panic!("ck.{} failed: {e}", kind.name()),
    }
}

#[test]
fn integer_arithmetic_wraps_as_twos_complement() {
    let ty = |dt| TensorType::new(vec![3], dt);
    let a = it(DType::I64, &[3], &[i64::MAX, -5, 7]);
    let b = it(DType::I64, &[3], &[1, 3, -2]);
    assert_eq!(ev_ty(OpKind::Add, Attrs::new(), &[&a, &b], ty(DType::I64)).ints, vec![i64::MIN, -2, 5]);
    assert_eq!(ev_ty(OpKind::Mul, Attrs::new(), &[&a, &b], ty(DType::I64)).ints, vec![i64::MAX, -15, -14]);
    assert_eq!(ev_ty(OpKind::Max, Attrs::new(), &[&a, &b], ty(DType::I64)).ints, vec![i64::MAX, 3, 7]);
    let a = it(DType::I32, &[3], &[i64::from(i32::MAX), -100, 0]);
    let b = it(DType::I32, &[3], &[1, -1, 0]);
    let s = ev_ty(OpKind::Add, Attrs::new(), &[&a, &b], ty(DType::I32));
    assert_eq!((s.dtype, s.ints), (DType::I32, vec![i64::from(i32::MIN), -101, 0]));
    assert_eq!(ev_ty(OpKind::Neg, Attrs::new(), &[&b], ty(DType::I32)).ints, vec![-1, 1, 0]);
}

#[test]
fn data_movement_and_fill_keep_integer_and_bool_elements() {
    // [[0, 1, 2], [3, 4, 5]] as i64; transpose -> [[0, 3], [1, 4], [2, 5]].
    let x = it(DType::I64, &[2, 3], &[0, 1, 2, 3, 4, 5]);
    let tt = ev_ty(OpKind::Transpose, attrs([("perm", ints(&[1, 0]))]), &[&x], TensorType::new(vec![3, 2], DType::I64));
    assert_eq!(tt.ints, vec![0, 3, 1, 4, 2, 5]);
    let sl = ev_ty(OpKind::Slice, attrs([("offsets", ints(&[1, 1]))]), &[&x], TensorType::new(vec![1, 2], DType::I64));
    assert_eq!(sl.ints, vec![4, 5]);
    let m = it(DType::I1, &[2], &[1, 0]);
    let br = ev_ty(OpKind::Broadcast, attrs([("dims", ints(&[1]))]), &[&m], TensorType::new(vec![2, 2], DType::I1));
    assert_eq!((br.dtype, br.ints), (DType::I1, vec![1, 0, 1, 0]));
    let cat = ev_ty(OpKind::Concat, attrs([("dim", Attr::Int(0))]), &[&m, &m], TensorType::new(vec![4], DType::I1));
    assert_eq!(cat.ints, vec![1, 0, 1, 0]);
    let r = ev_ty(OpKind::Reshape, Attrs::new(), &[&x], TensorType::new(vec![6], DType::I64));
    assert_eq!(r.ints, x.ints);
    let f = ev_ty(OpKind::Fill, attrs([("value", Attr::F32(-100.0))]), &[], TensorType::new(vec![2], DType::I32));
    assert_eq!((f.dtype, f.ints), (DType::I32, vec![-100, -100]));
}

#[test]
fn float_ops_on_integers_are_errors() {
    let x = it(DType::I64, &[2], &[1, 2]);
    let err = eval_kind(OpKind::Exp, &Attrs::new(), &[&x], &TensorType::new(vec![2], DType::I64)).expect_err("exp of i64");
    assert!(err.message.contains("float element type"), "{}", err.message);
    let m = it(DType::I1, &[2], &[1, 0]);
    assert!(eval_kind(OpKind::Add, &Attrs::new(), &[&m, &m], &TensorType::new(vec![2], DType::I1)).is_err(), "no i1 arithmetic");
    let f = t(&[2], &[1.0, 2.0]);
    assert!(eval_kind(OpKind::Add, &Attrs::new(), &[&f, &x], &TensorType::new(vec![2], DType::I64)).is_err(), "mixed types");
    assert!(eval_kind(OpKind::Fill, &attrs([("value", Attr::F32(0.5))]), &[], &TensorType::new(vec![2], DType::I64)).is_err());
}

#[test]
fn bf16_results_are_rounded_to_nearest_even() {
    // 1 + 2^-8 is halfway between bf16 neighbours 1 and 1 + 2^-7: ties to even (1).
    let a = Tensor::from_floats(vec![2], DType::BF16, vec![1.0, 1.0]).expect("bf16");
    let b = Tensor::from_floats(vec![2], DType::BF16, vec![0.00390625, 0.01171875]).expect("bf16");
    let s = ev_ty(OpKind::Add, Attrs::new(), &[&a, &b], TensorType::new(vec![2], DType::BF16));
    assert_eq!((s.dtype, s.data), (DType::BF16, vec![1.0, 1.015625]));
}

// ---- issue 19: indexing, comparisons, logic, select, cast, iota, cross_entropy ----

fn axis(a: i64) -> Attrs {
    attrs([("axis", Attr::Int(a))])
}

fn ev_err(kind: OpKind, a: Attrs, inputs: &[&Tensor], out: TensorType) -> String {
    match eval_kind(kind, &a, inputs, &out) {
        Ok(t) => panic!("ck.{} should fail, gave {t:?}", kind.name()),
        Err(e) => e.message,
    }
}

#[test]
fn gather_picks_rows_and_columns() {
    // x = [[0, 1, 2], [10, 11, 12]]
    let x = t(&[2, 3], &[0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
    // Embedding lookup (axis 0) with a [2, 2] index: rows 1, 0, 1, 1.
    let idx = it(DType::I64, &[2, 2], &[1, 0, 1, 1]);
    let y = ev(OpKind::Gather, axis(0), &[&x, &idx], &[2, 2, 3]);
    close(&y, &[2, 2, 3], &[10.0, 11.0, 12.0, 0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 10.0, 11.0, 12.0]);
    // Columns (axis 1) with an i32 index [2, 2, 0].
    let idx = it(DType::I32, &[3], &[2, 2, 0]);
    close(&ev(OpKind::Gather, axis(1), &[&x, &idx], &[2, 3]), &[2, 3], &[2.0, 2.0, 0.0, 12.0, 12.0, 10.0]);
    // Integer data gathers too.
    let xi = it(DType::I64, &[3], &[7, 8, 9]);
    let y = ev_ty(OpKind::Gather, axis(0), &[&xi, &it(DType::I64, &[2], &[2, 0])], TensorType::new(vec![2], DType::I64));
    assert_eq!(y.ints, vec![9, 7]);
}

#[test]
fn gather_out_of_range_names_the_index_and_the_bound() {
    let x = t(&[2, 3], &[0.0; 6]);
    let m = ev_err(OpKind::Gather, axis(0), &[&x, &it(DType::I64, &[3], &[0, 2, 1])], TensorType::f32(vec![3, 3]));
    assert!(m.contains("index 2") && m.contains("[1]") && m.contains("[0, 2)"), "{m}");
    let m = ev_err(OpKind::Gather, axis(0), &[&x, &it(DType::I64, &[1], &[-1])], TensorType::f32(vec![1, 3]));
    assert!(m.contains("index -1") && m.contains("[0, 2)"), "{m}");
}

#[test]
fn gather_grad_adds_repeated_indices_in_order() {
    // dx [3, 2] = zeros; idx [0, 2, 0]: row 0 gets dy rows 0 and 2, row 2 gets dy row 1.
    let idx = it(DType::I64, &[3], &[0, 2, 0]);
    let dy = t(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let dx = ev(OpKind::GatherGrad, axis(0), &[&idx, &dy], &[3, 2]);
    close(&dx, &[3, 2], &[6.0, 8.0, 0.0, 0.0, 3.0, 4.0]);
    // Along axis 1 of a [2, 2] dx: dx[:, 1] += dy[:, 0] + dy[:, 1].
    let idx = it(DType::I32, &[2], &[1, 1]);
    let dy = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    close(&ev(OpKind::GatherGrad, axis(1), &[&idx, &dy], &[2, 2]), &[2, 2], &[0.0, 3.0, 0.0, 7.0]);
    // Fixed order: 1e8 + 1 - 1e8 in f32 is 0 when added left to right (1e8 + 1 rounds to 1e8).
    let idx = it(DType::I64, &[3], &[0, 0, 0]);
    let dy = t(&[3], &[1e8, 1.0, -1e8]);
    assert_eq!(ev(OpKind::GatherGrad, axis(0), &[&idx, &dy], &[1]).data, vec![0.0]);
    let m = ev_err(OpKind::GatherGrad, axis(0), &[&it(DType::I64, &[1], &[5]), &t(&[1], &[1.0])], TensorType::f32(vec![2]));
    assert!(m.contains("index 5") && m.contains("[0, 2)"), "{m}");
}

#[test]
fn take_along_and_its_gradient() {
    // x = [[1, 2], [3, 4]], idx = [[0, 0], [1, 0]] along axis 1 (torch.gather):
    // y = [[1, 1], [4, 3]].
    let x = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let idx = it(DType::I64, &[2, 2], &[0, 0, 1, 0]);
    close(&ev(OpKind::TakeAlong, axis(1), &[&x, &idx], &[2, 2]), &[2, 2], &[1.0, 1.0, 4.0, 3.0]);
    // Along axis 0 with a smaller index [1, 2]: y[0, j] = x[idx[0, j], j] = [x[1,0], x[0,1]] = [3, 2].
    let idx = it(DType::I32, &[1, 2], &[1, 0]);
    close(&ev(OpKind::TakeAlong, axis(0), &[&x, &idx], &[1, 2]), &[1, 2], &[3.0, 2.0]);
    // Gradient of the first case with dy = [[1, 2], [3, 4]]: dx[0,0] = 1+2, dx[1,1] = 3, dx[1,0] = 4.
    let idx = it(DType::I64, &[2, 2], &[0, 0, 1, 0]);
    let dy = t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]);
    close(&ev(OpKind::TakeAlongGrad, axis(1), &[&idx, &dy], &[2, 2]), &[2, 2], &[3.0, 0.0, 4.0, 3.0]);
    let m = ev_err(OpKind::TakeAlong, axis(1), &[&x, &it(DType::I64, &[2, 1], &[0, 2])], TensorType::f32(vec![2, 1]));
    assert!(m.contains("index 2") && m.contains("[1, 0]") && m.contains("[0, 2)"), "{m}");
}

#[test]
fn comparisons_give_i1_and_treat_nan_as_unordered() {
    let a = t(&[4], &[1.0, 2.0, 3.0, f32::NAN]);
    let b = t(&[4], &[2.0, 2.0, 1.0, f32::NAN]);
    let i1 = TensorType::new(vec![4], DType::I1);
    let c = |k| ev_ty(k, Attrs::new(), &[&a, &b], i1.clone()).ints;
    assert_eq!(c(OpKind::Eq), vec![0, 1, 0, 0]);
    assert_eq!(c(OpKind::Ne), vec![1, 0, 1, 1]);
    assert_eq!(c(OpKind::Lt), vec![1, 0, 0, 0]);
    assert_eq!(c(OpKind::Le), vec![1, 1, 0, 0]);
    assert_eq!(c(OpKind::Gt), vec![0, 0, 1, 0]);
    assert_eq!(c(OpKind::Ge), vec![0, 1, 1, 0]);
    let ai = it(DType::I64, &[3], &[-5, 0, 7]);
    let bi = it(DType::I64, &[3], &[-100, 0, 8]);
    let i13 = TensorType::new(vec![3], DType::I1);
    assert_eq!(ev_ty(OpKind::Ne, Attrs::new(), &[&ai, &bi], i13.clone()).ints, vec![1, 0, 1]);
    assert_eq!(ev_ty(OpKind::Ge, Attrs::new(), &[&ai, &bi], i13).ints, vec![1, 1, 0]);
}

#[test]
fn logic_and_select() {
    let p = it(DType::I1, &[4], &[0, 0, 1, 1]);
    let q = it(DType::I1, &[4], &[0, 1, 0, 1]);
    let i1 = TensorType::new(vec![4], DType::I1);
    assert_eq!(ev_ty(OpKind::And, Attrs::new(), &[&p, &q], i1.clone()).ints, vec![0, 0, 0, 1]);
    assert_eq!(ev_ty(OpKind::Or, Attrs::new(), &[&p, &q], i1.clone()).ints, vec![0, 1, 1, 1]);
    assert_eq!(ev_ty(OpKind::Not, Attrs::new(), &[&p], i1).ints, vec![1, 1, 0, 0]);
    // A causal mask: select(c, x, -inf).
    let x = t(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let ninf = t(&[4], &[f32::NEG_INFINITY; 4]);
    let y = ev(OpKind::Select, Attrs::new(), &[&q, &x, &ninf], &[4]);
    assert_eq!(y.data, vec![f32::NEG_INFINITY, 2.0, f32::NEG_INFINITY, 4.0]);
    let a = it(DType::I64, &[4], &[1, 2, 3, 4]);
    let b = it(DType::I64, &[4], &[-1, -2, -3, -4]);
    assert_eq!(ev_ty(OpKind::Select, Attrs::new(), &[&p, &a, &b], TensorType::new(vec![4], DType::I64)).ints, vec![-1, -2, 3, 4]);
}

#[test]
fn cast_truncates_wraps_and_rounds() {
    let x = t(&[6], &[2.7, -2.7, 0.0, f32::NAN, 3e9, -0.5]);
    let to = |dt| TensorType::new(vec![6], dt);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&x], to(DType::I64)).ints, vec![2, -2, 0, 0, 3_000_000_000, 0]);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&x], to(DType::I32)).ints, vec![2, -2, 0, 0, i64::from(i32::MAX), 0]);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&x], to(DType::I1)).ints, vec![1, 1, 0, 1, 1, 1]);
    // i64 -> i32 keeps the low 32 bits; -> i1 is v != 0; -> f32 exact.
    let i = it(DType::I64, &[3], &[1 << 32 | 5, 0, -3]);
    let to3 = |dt| TensorType::new(vec![3], dt);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&i], to3(DType::I32)).ints, vec![5, 0, -3]);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&i], to3(DType::I1)).ints, vec![1, 0, 1]);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&i], to3(DType::F32)).data, vec![4_294_967_301.0, 0.0, -3.0]);
    // f32 -> bf16: 1 + 2^-8 is a tie, rounds to even (1.0); 1 + 3*2^-8 rounds up to 1 + 2^-6.
    let f = t(&[2], &[1.003_906_25, 1.011_718_75]);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&f], TensorType::new(vec![2], DType::BF16)).data, vec![1.0, 1.015_625]);
    // i1 -> f32 is 0/1.
    let b = it(DType::I1, &[2], &[1, 0]);
    assert_eq!(ev_ty(OpKind::Cast, Attrs::new(), &[&b], TensorType::f32(vec![2])).data, vec![1.0, 0.0]);
}

#[test]
fn iota_counts_along_its_dim() {
    let d = |v| attrs([("dim", Attr::Int(v))]);
    assert_eq!(ev_ty(OpKind::Iota, d(1), &[], TensorType::new(vec![2, 3], DType::I64)).ints, vec![0, 1, 2, 0, 1, 2]);
    assert_eq!(ev(OpKind::Iota, d(0), &[], &[2, 3]).data, vec![0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
}

#[test]
fn cross_entropy_matches_hand_values_and_ignores_labels() {
    // Row 0: logits [0, 0] -> -log(1/2) = ln 2 = 0.693147. Row 1: [ln 3, 0], label 0:
    // softmax = [3/4, 1/4] -> -log(3/4) = 0.287682. Row 2 ignored (-100).
    let x = t(&[3, 2], &[0.0, 0.0, 3f32.ln(), 0.0, 5.0, -5.0]);
    let y = it(DType::I64, &[3], &[1, 0, -100]);
    let scalar = TensorType::f32(Vec::<u64>::new());
    let l = ev_ty(OpKind::CrossEntropy, Attrs::new(), &[&x, &y], scalar.clone());
    close(&l, &[], &[(0.693_147_2 + 0.287_682_1) / 2.0]);
    // Gradient with dy = 2: (softmax - onehot) * 2 / 2; row 2 zero.
    let dy = t(&[], &[2.0]);
    let g = ev(OpKind::CrossEntropyGrad, Attrs::new(), &[&x, &y, &dy], &[3, 2]);
    close(&g, &[3, 2], &[0.5, -0.5, -0.25, 0.25, 0.0, 0.0]);
    // ignore_index 1 drops row 0 instead: loss = (0.287682 + 0.000045398...) / 2 (row 2 label -100 is now
    // out of range and kept -> an error); labels [1, 0, 0]: row 2 = -log(softmax(5, -5)[0]) = ln(1 + e^-10).
    let y2 = it(DType::I32, &[3], &[1, 0, 0]);
    let a = attrs([("ignore_index", Attr::Int(1))]);
    let l = ev_ty(OpKind::CrossEntropy, a.clone(), &[&x, &y2], scalar.clone());
    close(&l, &[], &[(0.287_682_1 + 4.539_89e-5) / 2.0]);
    let m = ev_err(OpKind::CrossEntropy, a, &[&x, &y], scalar.clone());
    assert!(m.contains("label -100") && m.contains("[2]") && m.contains("[0, 2)"), "{m}");
    // Every label ignored: 0/0 = NaN (as PyTorch).
    let all = it(DType::I64, &[3], &[-100, -100, -100]);
    assert!(ev_ty(OpKind::CrossEntropy, Attrs::new(), &[&x, &all], scalar).data[0].is_nan());
}

#[test]
fn mixed_ops_refuse_wrong_element_types() {
    let x = t(&[2], &[0.0, 1.0]);
    // A float index.
    let m = ev_err(OpKind::Gather, axis(0), &[&x, &x], TensorType::f32(vec![2]));
    assert!(m.contains("integer element type"), "{m}");
    // Select with a float condition.
    let m = ev_err(OpKind::Select, Attrs::new(), &[&x, &x, &x], TensorType::f32(vec![2]));
    assert!(m.contains("i1"), "{m}");
    // Float labels.
    let m = ev_err(OpKind::CrossEntropy, Attrs::new(), &[&t(&[1, 2], &[0.0, 1.0]), &t(&[1], &[0.0])], TensorType::f32(Vec::<u64>::new()));
    assert!(m.contains("labels"), "{m}");
}
