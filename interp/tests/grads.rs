//! The *_grad ops are the derivatives of their forward ops: checked by
//! central finite differences of `L = sum(forward(..) * dy)` on random data,
//! over several geometries (stride, padding, overlapping windows, shapes
//! that the stride does not divide).

use ckopt_interp::random::SplitMix64;
use ckopt_interp::{Tensor, eval_kind};
use ckopt_ir::{Attr, Attrs, OpKind, TensorType, attrs};

fn rand(shape: &[usize], rng: &mut SplitMix64) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::new(shape.to_vec(), (0..n).map(|_| 2.0 * rng.next_unit() - 1.0).collect()).expect("shape")
}

fn ev(kind: OpKind, a: &Attrs, inputs: &[&Tensor], out: &[usize]) -> Tensor {
    let ty = TensorType::f32(out.iter().map(|&d| d as u64).collect::<Vec<_>>());
    eval_kind(kind, a, inputs, &ty).unwrap_or_else(|e| panic!("ck.{}: {}", kind.name(), e.message))
}

/// `sum(a * b)` in f64.
fn dot(a: &Tensor, b: &Tensor) -> f64 {
    a.data.iter().zip(&b.data).map(|(&x, &y)| x as f64 * y as f64).sum()
}

/// Checks `grad` against central differences of `loss` at `x`.
#[track_caller]
fn check_fd(x: &Tensor, grad: &Tensor, eps: f32, tol: f64, loss: impl Fn(&Tensor) -> f64) {
    assert_eq!(grad.shape, x.shape);
    for i in 0..x.data.len() {
        let mut p = x.clone();
        p.data[i] += eps;
        let mut m = x.clone();
        m.data[i] -= eps;
        let fd = (loss(&p) - loss(&m)) / (2.0 * eps as f64);
        let g = grad.data[i] as f64;
        assert!((fd - g).abs() <= tol * (1.0 + g.abs()), "element {i}: analytic {g}, finite difference {fd}");
    }
}

/// A conv geometry: (x shape, filter shape, stride, padding, groups).
type ConvCase = ([usize; 4], [usize; 4], [i64; 2], [i64; 2], i64);
const CONV_CASES: &[ConvCase] = &[
    ([1, 1, 4, 4], [1, 1, 3, 3], [1, 1], [0, 0], 1),
    ([2, 3, 5, 4], [4, 3, 3, 2], [1, 1], [1, 1], 1),
    ([1, 2, 7, 6], [3, 2, 3, 3], [2, 2], [1, 0], 1),
    ([2, 1, 6, 7], [2, 1, 2, 3], [3, 2], [0, 1], 1),
    // grouped, depthwise, depthwise with channel multiplier 2
    ([2, 4, 5, 4], [6, 2, 3, 2], [1, 1], [1, 1], 2),
    ([1, 3, 7, 6], [3, 1, 3, 3], [2, 2], [1, 1], 3),
    ([2, 2, 5, 5], [4, 1, 3, 3], [2, 1], [1, 0], 2),
];

fn conv_out(x: [usize; 4], w: [usize; 4], s: [i64; 2], p: [i64; 2]) -> [usize; 4] {
    let o = |i: usize, k: usize, s: i64, p: i64| (i + 2 * p as usize - k) / s as usize + 1;
    [x[0], w[0], o(x[2], w[2], s[0], p[0]), o(x[3], w[3], s[1], p[1])]
}

#[test]
fn conv2d_grads_match_finite_differences() {
    let mut rng = SplitMix64::new(1);
    for &(xs, ws, s, p, g) in CONV_CASES {
        let a = attrs([("stride", Attr::IntArray(s.to_vec())), ("padding", Attr::IntArray(p.to_vec())), ("groups", Attr::Int(g))]);
        let ys = conv_out(xs, ws, s, p);
        let (x, w, dy) = (rand(&xs, &mut rng), rand(&ws, &mut rng), rand(&ys, &mut rng));
        let loss_x = |x: &Tensor| dot(&ev(OpKind::Conv2d, &a, &[x, &w], &ys), &dy);
        let dx = ev(OpKind::Conv2dGradInput, &a, &[&dy, &w], &xs);
        check_fd(&x, &dx, 1e-2, 2e-3, loss_x);
        let loss_w = |w: &Tensor| dot(&ev(OpKind::Conv2d, &a, &[&x, w], &ys), &dy);
        let dw = ev(OpKind::Conv2dGradFilter, &a, &[&x, &dy], &ws);
        check_fd(&w, &dw, 1e-2, 2e-3, loss_w);
    }
}

/// (x shape, window, stride)
const POOL_CASES: &[([usize; 4], [i64; 2], [i64; 2])] = &[
    ([1, 1, 4, 4], [2, 2], [2, 2]),
    ([2, 3, 5, 5], [3, 3], [1, 1]),
    ([1, 2, 7, 6], [2, 3], [2, 1]),
    ([1, 1, 5, 3], [1, 2], [2, 1]),
];

#[test]
fn pool_grads_match_finite_differences() {
    let mut rng = SplitMix64::new(2);
    for &(xs, win, st) in POOL_CASES {
        let a = attrs([("window", Attr::IntArray(win.to_vec())), ("stride", Attr::IntArray(st.to_vec()))]);
        let o = |i: usize, k: i64, s: i64| (i - k as usize) / s as usize + 1;
        let ys = [xs[0], xs[1], o(xs[2], win[0], st[0]), o(xs[3], win[1], st[1])];
        // Distinct values spaced 0.01 apart so a 1e-3 step never changes a window's argmax.
        let n: usize = xs.iter().product();
        let mut vals: Vec<f32> = (0..n).map(|i| i as f32 * 0.01).collect();
        for i in (1..n).rev() {
            vals.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
        }
        let x = Tensor::new(xs.to_vec(), vals).expect("shape");
        let dy = rand(&ys, &mut rng);
        let dx = ev(OpKind::MaxPool2dGrad, &a, &[&x, &dy], &xs);
        check_fd(&x, &dx, 1e-3, 5e-3, |x| dot(&ev(OpKind::MaxPool2d, &a, &[x], &ys), &dy));
        let dx = ev(OpKind::AvgPool2dGrad, &a, &[&dy], &xs);
        check_fd(&x, &dx, 1e-2, 2e-3, |x| dot(&ev(OpKind::AvgPool2d, &a, &[x], &ys), &dy));
    }
}

#[test]
fn relu_grad_matches_finite_differences_away_from_zero() {
    let mut rng = SplitMix64::new(3);
    // Values at least 0.1 away from the kink at 0, so a 1e-3 step stays on one side.
    let mut x = rand(&[3, 5], &mut rng);
    for v in &mut x.data {
        *v = v.signum() * (0.1 + v.abs());
    }
    let dy = rand(&[3, 5], &mut rng);
    let none = Attrs::new();
    let dx = ev(OpKind::ReluGrad, &none, &[&x, &dy], &[3, 5]);
    check_fd(&x, &dx, 1e-3, 5e-3, |x| dot(&ev(OpKind::Relu, &none, &[x], &[3, 5]), &dy));
}
