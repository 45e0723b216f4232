//! Finite-difference checks of the autodiff pass through the interpreter.
//!
//! Property pinned: for every op of the `ck` table, the gradient that
//! `@NAME_grad` computes equals the central difference of the loss
//! `L(x) = sum(op(x) * r)` (r a fixed random weight tensor, so every output
//! element matters with a different weight) in every coordinate of every
//! differentiated operand.
//!
//! Tolerance (documented, f32 throughout): central differences with
//! `eps = 1e-2`, accepted when `|g - fd| <= ATOL + RTOL * max(|g|, |fd|)` with
//! `ATOL = 1e-2`, `RTOL = 5e-2`. Truncation error is O(eps^2) ~ 1e-4 for the
//! smooth ops on inputs in [-1, 1]; rounding of an f32 sum of ~100 terms is
//! ~1e-5 / eps ~ 1e-3 in the difference quotient. Piecewise-linear ops
//! (relu, max, reduce_max, pools, relu_grad) get inputs whose kinks and ties
//! are at least 0.05 away, so the difference never straddles a kink.

#![allow(clippy::unwrap_used)]

use ckopt_interp::{Tensor, run_func};
use ckopt_ir::{Attr, Attrs, DType, Func, Loc, Module, OpKind, TensorType, ValueId, attrs, verify_module};
use ckopt_passes::autodiff::{AutodiffOptions, Wrt, autodiff};

const EPS: f32 = 1e-2;
const ATOL: f32 = 1e-2;
const RTOL: f32 = 5e-2;

fn t(s: &[u64]) -> TensorType {
    TensorType::f32(s.to_vec())
}
fn l() -> Loc {
    Loc::unknown()
}

/// A tiny deterministic generator (the tests must not depend on the interp's stream).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / ((1u64 << 24) as f32)
    }
    /// Uniform in [lo, hi).
    fn uniform(&mut self, shape: &[u64], lo: f32, hi: f32) -> Tensor {
        let n: u64 = shape.iter().product();
        let data = (0..n).map(|_| lo + (hi - lo) * self.next()).collect();
        Tensor::new(shape.iter().map(|&d| d as usize).collect(), data).expect("shape")
    }
    /// Distinct values at least `gap` apart (shuffled grid), centred on 0: no ties for max ops.
    fn distinct(&mut self, shape: &[u64], gap: f32) -> Tensor {
        let n: u64 = shape.iter().product();
        let mut v: Vec<f32> = (0..n).map(|i| (i as f32 - n as f32 / 2.0) * gap).collect();
        for i in (1..v.len()).rev() {
            let j = (self.next() * (i + 1) as f32) as usize % (i + 1);
            v.swap(i, j);
        }
        Tensor::new(shape.iter().map(|&d| d as usize).collect(), v).expect("shape")
    }
    /// Uniform magnitude in [0.1, 1) with a random sign: at least 0.1 from relu's kink.
    fn away_from_zero(&mut self, shape: &[u64]) -> Tensor {
        let mut x = self.uniform(shape, 0.1, 1.0);
        for v in &mut x.data {
            if self.next() < 0.5 {
                *v = -*v;
            }
        }
        x
    }
}

/// Builds `@f(args..., %r) -> sum(op(args) * r)`; every arg in `params` is `{ck.param}`.
fn case(shapes: &[&[u64]], params: &[bool], build: impl Fn(&mut Func, &[ValueId]) -> ValueId) -> Module {
    let mut f = Func::new("f", l());
    let args: Vec<ValueId> = shapes.iter().zip(params).enumerate().map(|(i, (s, &p))| f.add_param(format!("a{i}"), t(s), p)).collect();
    let y = build(&mut f, &args);
    let yt = f.ty(y).clone();
    let r = f.add_param("r", yt.clone(), false);
    let m = f.push(OpKind::Mul, &[y, r], Attrs::new(), None, "m", l()).expect("mul");
    let dims: Vec<i64> = (0..yt.rank() as i64).collect();
    let loss = f.push(OpKind::ReduceSum, &[m], attrs([("dims", Attr::IntArray(dims))]), None, "loss", l()).expect("sum");
    f.push_return(&[loss], l());
    Module { funcs: vec![f] }
}

fn loss_of(m: &Module, name: &str, inputs: &[Tensor]) -> f32 {
    let out = run_func(m, name, inputs).unwrap_or_else(|d| panic!("run @{name}: {d}"));
    out[0].item().expect("scalar loss")
}

/// Runs autodiff (with `opts`) and compares every coordinate (or `max_coords`
/// evenly spread ones) of every returned gradient to central differences.
fn check_with(mut m: Module, inputs: &[Tensor], opts: &AutodiffOptions, max_coords: usize) {
    let fname = m.funcs[0].name.clone();
    autodiff(&mut m, opts).unwrap_or_else(|d| panic!("autodiff: {d}"));
    verify_module(&m).unwrap_or_else(|d| panic!("grad does not verify: {d}\n{}", ckopt_ir::print_module(&m)));
    let gname = format!("{fname}_grad");
    let out = run_func(&m, &gname, inputs).unwrap_or_else(|d| panic!("run grad: {d}"));
    let f = m.func(&fname).expect("f");
    let wrt: Vec<usize> = match &opts.wrt {
        Wrt::All => f.trainable_indices(),
        Wrt::Indices(v) => {
            let mut v = v.clone();
            v.sort_unstable();
            v.dedup();
            v
        }
    };
    assert_eq!(out.len(), 1 + wrt.len());
    let l0 = loss_of(&m, &fname, inputs);
    assert!((out[0].item().expect("loss") - l0).abs() <= 1e-5 * (1.0 + l0.abs()), "grad's loss equals the forward loss");
    for (k, &ai) in wrt.iter().enumerate() {
        let g = &out[k + 1];
        assert_eq!(g.shape, inputs[ai].shape, "gradient shape of argument {ai}");
        let n = g.data.len();
        let step = n.div_ceil(max_coords.max(1)).max(1);
        for j in (0..n).step_by(step) {
            let mut plus = inputs.to_vec();
            plus[ai].data[j] += EPS;
            let mut minus = inputs.to_vec();
            minus[ai].data[j] -= EPS;
            let fd = (loss_of(&m, &fname, &plus) - loss_of(&m, &fname, &minus)) / (2.0 * EPS);
            let a = g.data[j];
            assert!(
                (a - fd).abs() <= ATOL + RTOL * a.abs().max(fd.abs()),
                "d loss / d arg{ai}[{j}]: autodiff {a}, finite difference {fd}\n{}",
                ckopt_ir::print_module(&m)
            );
        }
    }
}

fn check(m: Module, inputs: &[Tensor]) {
    check_with(m, inputs, &AutodiffOptions::default(), usize::MAX)
}

/// Appends the weight tensor `r` for the loss (shape of the op's result).
fn with_r(m: &Module, mut inputs: Vec<Tensor>, rng: &mut Rng) -> Vec<Tensor> {
    let f = &m.funcs[0];
    let rt = f.ty(f.params.last().expect("r").value).shape.clone();
    inputs.push(rng.uniform(&rt, -1.0, 1.0));
    inputs
}

fn unary(kind: OpKind, x: Tensor, seed: u64) {
    let shape: Vec<u64> = x.shape.iter().map(|&d| d as u64).collect();
    let m = case(&[&shape], &[true], |f, a| f.push(kind, &[a[0]], Attrs::new(), None, "y", l()).expect("op"));
    let mut rng = Rng(seed);
    let inputs = with_r(&m, vec![x], &mut rng);
    check(m, &inputs);
}

fn binary(kind: OpKind, a: Tensor, b: Tensor, seed: u64) {
    let shape: Vec<u64> = a.shape.iter().map(|&d| d as u64).collect();
    let m = case(&[&shape, &shape], &[true, true], |f, v| f.push(kind, &[v[0], v[1]], Attrs::new(), None, "y", l()).expect("op"));
    let mut rng = Rng(seed);
    let inputs = with_r(&m, vec![a, b], &mut rng);
    check(m, &inputs);
}

/// One op with attributes and a declared type; every operand differentiated.
fn general(shapes: &[&[u64]], kind: OpKind, at: Attrs, declared: Option<TensorType>, inputs: Vec<Tensor>, seed: u64) {
    let params = vec![true; shapes.len()];
    let m = case(shapes, &params, |f, v| f.push(kind, v, at.clone(), declared.clone(), "y", l()).expect("op"));
    let mut rng = Rng(seed);
    let inputs = with_r(&m, inputs, &mut rng);
    check(m, &inputs);
}

#[test]
fn fd_unary_elementwise_ops() {
    let mut rng = Rng(1);
    let s = [2u64, 3];
    unary(OpKind::Neg, rng.uniform(&s, -1.0, 1.0), 11);
    unary(OpKind::Exp, rng.uniform(&s, -1.0, 1.0), 12);
    unary(OpKind::Log, rng.uniform(&s, 0.5, 2.0), 13);
    unary(OpKind::Tanh, rng.uniform(&s, -1.0, 1.0), 14);
    unary(OpKind::Sigmoid, rng.uniform(&s, -1.0, 1.0), 15);
    unary(OpKind::Relu, rng.away_from_zero(&s), 16);
    unary(OpKind::Sqrt, rng.uniform(&s, 0.5, 2.0), 17);
    unary(OpKind::Rsqrt, rng.uniform(&s, 0.5, 2.0), 18);
    unary(OpKind::Erf, rng.uniform(&s, -2.0, 2.0), 19);
}

#[test]
fn fd_binary_elementwise_ops() {
    let mut rng = Rng(2);
    let s = [3u64, 2];
    binary(OpKind::Add, rng.uniform(&s, -1.0, 1.0), rng.uniform(&s, -1.0, 1.0), 21);
    binary(OpKind::Sub, rng.uniform(&s, -1.0, 1.0), rng.uniform(&s, -1.0, 1.0), 22);
    binary(OpKind::Mul, rng.uniform(&s, -1.0, 1.0), rng.uniform(&s, -1.0, 1.0), 23);
    binary(OpKind::Div, rng.uniform(&s, -1.0, 1.0), rng.uniform(&s, 0.5, 2.0), 24);
    // max: |a - b| >= 0.1 everywhere.
    let a = rng.uniform(&s, -1.0, 1.0);
    let mut b = a.clone();
    for v in &mut b.data {
        *v += if rng.next() < 0.5 { 0.1 + 0.5 * rng.next() } else { -0.1 - 0.5 * rng.next() };
    }
    binary(OpKind::Max, a, b, 25);
}

#[test]
fn fd_same_operand_twice() {
    // add(x, x), mul(x, x), sub(x, x) and max(x, x): one argument feeding both operands.
    let mut rng = Rng(3);
    for kind in [OpKind::Add, OpKind::Mul, OpKind::Sub, OpKind::Max, OpKind::Div] {
        let m = case(&[&[4]], &[true], |f, a| f.push(kind, &[a[0], a[0]], Attrs::new(), None, "y", l()).expect("op"));
        let x = rng.uniform(&[4], 0.5, 1.5);
        let inputs = with_r(&m, vec![x], &mut rng);
        check(m, &inputs);
    }
}

#[test]
fn fd_scale_fill_constant_relu_grad_dropout() {
    let mut rng = Rng(4);
    general(&[&[2, 3]], OpKind::Scale, attrs([("value", Attr::F32(-1.5))]), None, vec![rng.uniform(&[2, 3], -1.0, 1.0)], 41);
    // fill feeding an add: the fill has no operands and no gradient.
    let m = case(&[&[2, 2]], &[true], |f, a| {
        let c = f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(0.5))]), Some(t(&[2, 2])), "c", l()).expect("fill");
        f.push(OpKind::Mul, &[a[0], c], Attrs::new(), None, "y", l()).expect("mul")
    });
    let inputs = with_r(&m, vec![rng.uniform(&[2, 2], -1.0, 1.0)], &mut rng);
    check(m, &inputs);
    // constant feeding a mul: no operands, no gradient; the other operand gets dy * value.
    let m = case(&[&[2, 2]], &[true], |f, a| {
        let v = Attr::Dense { shape: vec![2, 2], data: vec![0.5, -1.0, 2.0, 0.25] };
        let c = f.push(OpKind::Constant, &[], attrs([("value", v)]), None, "c", l()).expect("constant");
        f.push(OpKind::Mul, &[a[0], c], Attrs::new(), None, "y", l()).expect("mul")
    });
    let inputs = with_r(&m, vec![rng.uniform(&[2, 2], -1.0, 1.0)], &mut rng);
    check(m, &inputs);
    // relu_grad(x, g): linear in g, zero gradient in x (x away from 0).
    general(&[&[2, 3], &[2, 3]], OpKind::ReluGrad, Attrs::new(), None, vec![rng.away_from_zero(&[2, 3]), rng.uniform(&[2, 3], -1.0, 1.0)], 42);
    general(&[&[4, 5]], OpKind::Dropout, attrs([("rate", Attr::F32(0.3)), ("seed", Attr::Int(7))]), None, vec![rng.uniform(&[4, 5], -1.0, 1.0)], 43);
}

#[test]
fn fd_broadcast_and_reductions() {
    let mut rng = Rng(5);
    general(&[&[3]], OpKind::Broadcast, attrs([("dims", Attr::IntArray(vec![1]))]), Some(t(&[2, 3, 2])), vec![rng.uniform(&[3], -1.0, 1.0)], 51);
    general(&[&[]], OpKind::Broadcast, attrs([("dims", Attr::IntArray(vec![]))]), Some(t(&[2, 2])), vec![rng.uniform(&[], -1.0, 1.0)], 52);
    general(&[&[2, 3, 4]], OpKind::ReduceSum, attrs([("dims", Attr::IntArray(vec![0, 2]))]), None, vec![rng.uniform(&[2, 3, 4], -1.0, 1.0)], 53);
    general(&[&[2, 3]], OpKind::ReduceSum, attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, vec![rng.uniform(&[2, 3], -1.0, 1.0)], 54);
    general(&[&[2, 3, 4]], OpKind::ReduceMax, attrs([("dims", Attr::IntArray(vec![1]))]), None, vec![rng.distinct(&[2, 3, 4], 0.05)], 55);
    general(&[&[3, 4]], OpKind::ReduceMax, attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, vec![rng.distinct(&[3, 4], 0.1)], 56);
}

#[test]
fn reduce_max_ties_share_the_gradient_evenly() {
    // x = [1, 3, 3]: d max / dx = [0, 0.5, 0.5] (a subgradient; sums to 1).
    let mut m = case(&[&[3]], &[true], |f, a| {
        f.push(OpKind::ReduceMax, &[a[0]], attrs([("dims", Attr::IntArray(vec![0]))]), None, "y", l()).expect("op")
    });
    autodiff(&mut m, &AutodiffOptions::default()).expect("autodiff");
    let out = run_func(&m, "f_grad", &[Tensor::vector(vec![1.0, 3.0, 3.0]), Tensor::scalar(1.0)]).expect("run");
    assert_eq!(out[1].data, vec![0.0, 0.5, 0.5]);
}

#[test]
fn max_tie_goes_to_the_second_operand() {
    let mut m = case(&[&[2], &[2]], &[true, true], |f, a| f.push(OpKind::Max, &[a[0], a[1]], Attrs::new(), None, "y", l()).expect("op"));
    autodiff(&mut m, &AutodiffOptions::default()).expect("autodiff");
    let out = run_func(&m, "f_grad", &[Tensor::vector(vec![1.0, 2.0]), Tensor::vector(vec![1.0, 1.0]), Tensor::vector(vec![1.0, 1.0])]).expect("run");
    assert_eq!(out[1].data, vec![0.0, 1.0]);
    assert_eq!(out[2].data, vec![1.0, 0.0]);
}

#[test]
fn fd_data_movement_ops() {
    let mut rng = Rng(6);
    general(&[&[2, 3, 4]], OpKind::Transpose, attrs([("perm", Attr::IntArray(vec![2, 0, 1]))]), None, vec![rng.uniform(&[2, 3, 4], -1.0, 1.0)], 61);
    general(&[&[2, 3, 4]], OpKind::Reshape, Attrs::new(), Some(t(&[6, 4])), vec![rng.uniform(&[2, 3, 4], -1.0, 1.0)], 62);
    general(&[&[4, 5]], OpKind::Slice, attrs([("offsets", Attr::IntArray(vec![1, 2]))]), Some(t(&[2, 2])), vec![rng.uniform(&[4, 5], -1.0, 1.0)], 63);
    general(&[&[4, 5]], OpKind::Slice, attrs([("offsets", Attr::IntArray(vec![0, 1]))]), Some(t(&[4, 3])), vec![rng.uniform(&[4, 5], -1.0, 1.0)], 64);
    general(&[&[2, 3], &[2, 2], &[2, 1]], OpKind::Concat, attrs([("dim", Attr::Int(1))]), None,
        vec![rng.uniform(&[2, 3], -1.0, 1.0), rng.uniform(&[2, 2], -1.0, 1.0), rng.uniform(&[2, 1], -1.0, 1.0)], 65);
}

#[test]
fn fd_slices_tiling_with_gaps_and_overlaps() {
    // Three slices of one value: two tile dim 1 with a gap, plus one overlapping 2-d window.
    let mut rng = Rng(7);
    let m = case(&[&[3, 6]], &[true], |f, a| {
        let s1 = f.push(OpKind::Slice, &[a[0]], attrs([("offsets", Attr::IntArray(vec![0, 0]))]), Some(t(&[3, 2])), "s1", l()).expect("s");
        let s2 = f.push(OpKind::Slice, &[a[0]], attrs([("offsets", Attr::IntArray(vec![0, 3]))]), Some(t(&[3, 2])), "s2", l()).expect("s");
        let s3 = f.push(OpKind::Slice, &[a[0]], attrs([("offsets", Attr::IntArray(vec![1, 1]))]), Some(t(&[2, 2])), "s3", l()).expect("s");
        let p = f.push(OpKind::Mul, &[s1, s2], Attrs::new(), None, "p", l()).expect("m");
        let e = f.push(OpKind::Exp, &[s3], Attrs::new(), None, "e", l()).expect("e");
        let ps = f.push(OpKind::Slice, &[p], attrs([("offsets", Attr::IntArray(vec![1, 0]))]), Some(t(&[2, 2])), "ps", l()).expect("s");
        f.push(OpKind::Add, &[ps, e], Attrs::new(), None, "y", l()).expect("a")
    });
    let inputs = with_r(&m, vec![rng.uniform(&[3, 6], -1.0, 1.0)], &mut rng);
    check(m, &inputs);
}

#[test]
fn fd_matmul_all_transpose_flags_and_batch() {
    let mut rng = Rng(8);
    for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
        let sa: Vec<u64> = if ta { vec![4, 3] } else { vec![3, 4] };
        let sb: Vec<u64> = if tb { vec![5, 4] } else { vec![4, 5] };
        let at = attrs([("transpose_a", Attr::Bool(ta)), ("transpose_b", Attr::Bool(tb))]);
        general(&[&sa, &sb], OpKind::Matmul, at, None, vec![rng.uniform(&sa, -1.0, 1.0), rng.uniform(&sb, -1.0, 1.0)], 80);
    }
    let at = attrs([("transpose_b", Attr::Bool(true))]);
    general(&[&[2, 3, 4], &[2, 5, 4]], OpKind::Matmul, at, None, vec![rng.uniform(&[2, 3, 4], -1.0, 1.0), rng.uniform(&[2, 5, 4], -1.0, 1.0)], 81);
}

#[test]
fn fd_conv_and_its_gradients() {
    let mut rng = Rng(9);
    // (stride, padding, image): the last leaves the input's last row and column uncovered.
    for (stride, pad, img) in [(1i64, 0i64, 5u64), (2, 1, 5), (2, 0, 6)] {
        let at = attrs([("stride", Attr::IntArray(vec![stride, stride])), ("padding", Attr::IntArray(vec![pad, pad]))]);
        let xs = [1u64, 2, img, img];
        let ws = [3u64, 2, 3, 3];
        general(&[&xs, &ws], OpKind::Conv2d, at.clone(), None, vec![rng.uniform(&xs, -1.0, 1.0), rng.uniform(&ws, -1.0, 1.0)], 90);
        let o = (img + 2 * pad as u64 - 3) / stride as u64 + 1;
        let ys = [1u64, 3, o, o];
        // conv2d_grad_input(dy, w) -> x-shaped; conv2d_grad_filter(x, dy) -> w-shaped.
        general(&[&ys, &ws], OpKind::Conv2dGradInput, at.clone(), Some(t(&xs)), vec![rng.uniform(&ys, -1.0, 1.0), rng.uniform(&ws, -1.0, 1.0)], 91);
        general(&[&xs, &ys], OpKind::Conv2dGradFilter, at, Some(t(&ws)), vec![rng.uniform(&xs, -1.0, 1.0), rng.uniform(&ys, -1.0, 1.0)], 92);
    }
}

/// Grouped (groups = 2: C = 4, F = 6) and depthwise (groups = C = F = 3,
/// stride 2, padding 1; and channel multiplier 2) convolutions: autodiff
/// passes `groups` to both gradient ops, and the gradient ops differentiate
/// through each other with it.
#[test]
fn fd_grouped_and_depthwise_conv_and_their_gradients() {
    let mut rng = Rng(19);
    // (x shape, filter shape, stride, padding, groups)
    let cases: [([u64; 4], [u64; 4], i64, i64, i64); 3] =
        [([1, 4, 5, 5], [6, 2, 3, 3], 1, 1, 2), ([2, 3, 6, 6], [3, 1, 3, 3], 2, 1, 3), ([1, 2, 5, 5], [4, 1, 3, 3], 2, 0, 2)];
    for (k, (xs, ws, stride, pad, groups)) in cases.into_iter().enumerate() {
        let at = attrs([
            ("stride", Attr::IntArray(vec![stride, stride])),
            ("padding", Attr::IntArray(vec![pad, pad])),
            ("groups", Attr::Int(groups)),
        ]);
        let o = (xs[2] + 2 * pad as u64 - ws[2]) / stride as u64 + 1;
        let ys = [xs[0], ws[0], o, o];
        let seed = 110 + 3 * k as u64;
        general(&[&xs, &ws], OpKind::Conv2d, at.clone(), None, vec![rng.uniform(&xs, -1.0, 1.0), rng.uniform(&ws, -1.0, 1.0)], seed);
        general(&[&ys, &ws], OpKind::Conv2dGradInput, at.clone(), Some(t(&xs)), vec![rng.uniform(&ys, -1.0, 1.0), rng.uniform(&ws, -1.0, 1.0)], seed + 1);
        general(&[&xs, &ys], OpKind::Conv2dGradFilter, at, Some(t(&ws)), vec![rng.uniform(&xs, -1.0, 1.0), rng.uniform(&ys, -1.0, 1.0)], seed + 2);
    }
}

/// The gradient ops autodiff emits for a grouped conv carry its `groups`.
#[test]
fn grouped_conv_gradients_carry_groups() {
    let at = attrs([("padding", Attr::IntArray(vec![1, 1])), ("groups", Attr::Int(3))]);
    let mut m = case(&[&[1, 3, 4, 4], &[6, 1, 3, 3]], &[true, true], |f, a| {
        f.push(OpKind::Conv2d, &[a[0], a[1]], at.clone(), None, "y", l()).expect("op")
    });
    autodiff(&mut m, &AutodiffOptions::default()).expect("autodiff");
    let g = m.func("f_grad").expect("gradient function");
    let grads: Vec<_> = g.body.iter().filter(|o| matches!(o.kind, OpKind::Conv2dGradInput | OpKind::Conv2dGradFilter)).collect();
    assert_eq!(grads.len(), 2, "one gradient op per operand");
    for o in grads {
        assert_eq!(o.attrs.get("groups"), Some(&Attr::Int(3)), "ck.{} lost groups", o.kind.name());
    }
}

#[test]
fn fd_pools_and_their_gradients() {
    let mut rng = Rng(10);
    let xs = [1u64, 2, 4, 4];
    let p22 = attrs([("window", Attr::IntArray(vec![2, 2])), ("stride", Attr::IntArray(vec![2, 2]))]);
    let p31 = attrs([("window", Attr::IntArray(vec![3, 3])), ("stride", Attr::IntArray(vec![1, 1]))]);
    general(&[&xs], OpKind::MaxPool2d, p22.clone(), None, vec![rng.distinct(&xs, 0.05)], 101);
    general(&[&xs], OpKind::MaxPool2d, p31.clone(), None, vec![rng.distinct(&xs, 0.05)], 102);
    general(&[&xs], OpKind::AvgPool2d, p22.clone(), None, vec![rng.uniform(&xs, -1.0, 1.0)], 103);
    general(&[&xs], OpKind::AvgPool2d, p31.clone(), None, vec![rng.uniform(&xs, -1.0, 1.0)], 104);
    let gs = [1u64, 2, 2, 2];
    general(&[&xs, &gs], OpKind::MaxPool2dGrad, p22.clone(), None, vec![rng.distinct(&xs, 0.05), rng.uniform(&gs, -1.0, 1.0)], 105);
    general(&[&gs], OpKind::AvgPool2dGrad, p22, Some(t(&xs)), vec![rng.uniform(&gs, -1.0, 1.0)], 106);
    general(&[&gs], OpKind::AvgPool2dGrad, p31, Some(t(&xs)), vec![rng.uniform(&gs, -1.0, 1.0)], 107);
}

#[test]
fn every_op_is_covered_by_a_finite_difference_test() {
    // The cases above, by op; `return` is the seed (covered by every case).
    let covered = [
        OpKind::Neg, OpKind::Exp, OpKind::Log, OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Sqrt,
        OpKind::Rsqrt, OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::Scale,
        OpKind::Fill, OpKind::ReluGrad, OpKind::Broadcast, OpKind::ReduceSum, OpKind::ReduceMax,
        OpKind::Transpose, OpKind::Reshape, OpKind::Slice, OpKind::Concat, OpKind::Matmul, OpKind::Conv2d,
        OpKind::Conv2dGradInput, OpKind::Conv2dGradFilter, OpKind::MaxPool2d, OpKind::AvgPool2d,
        OpKind::MaxPool2dGrad, OpKind::AvgPool2dGrad, OpKind::Dropout, OpKind::Erf, OpKind::Constant,
        OpKind::Return,
        // fd_gather_take_along_and_their_gradients, fd_select_and_masks (integer/bool
        // results: constants, their consumers checked), fd_cast, fd_cross_entropy.
        OpKind::Gather, OpKind::GatherGrad, OpKind::TakeAlong, OpKind::TakeAlongGrad, OpKind::Eq, OpKind::Ne,
        OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge, OpKind::And, OpKind::Or, OpKind::Not, OpKind::Select,
        OpKind::Cast, OpKind::Iota, OpKind::CrossEntropy, OpKind::CrossEntropyGrad,
    ];
    for k in OpKind::ALL {
        assert!(covered.contains(k), "no finite-difference case for ck.{}", k.name());
    }
}

#[test]
fn fd_wrt_a_non_param_input() {
    // wrt=0 differentiates the plain input x of a small MLP.
    let mut rng = Rng(11);
    let mut f = Func::new("m", l());
    let x = f.add_param("x", t(&[2, 3]), false);
    let w = f.add_param("w", t(&[3, 3]), true);
    let h = f.push(OpKind::Matmul, &[x, w], Attrs::new(), None, "h", l()).expect("mm");
    let a = f.push(OpKind::Tanh, &[h], Attrs::new(), None, "a", l()).expect("tanh");
    let loss = f.push(OpKind::ReduceSum, &[a], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "l", l()).expect("sum");
    f.push_return(&[loss], l());
    let m = Module { funcs: vec![f] };
    let inputs = vec![rng.uniform(&[2, 3], -1.0, 1.0), rng.uniform(&[3, 3], -1.0, 1.0)];
    check_with(m, &inputs, &AutodiffOptions { wrt: Wrt::Indices(vec![0, 1]), func: None, ..Default::default() }, usize::MAX);
}

// ---- issue 19: integer indices, masks, casts, cross_entropy ----

fn ity(s: &[u64], dt: DType) -> TensorType {
    TensorType::new(s.to_vec(), dt)
}

fn ints(shape: &[u64], dt: DType, v: &[i64]) -> Tensor {
    Tensor::from_ints(shape.iter().map(|&d| d as usize).collect(), dt, v.to_vec()).expect("ints")
}

/// `case` with typed arguments: float arguments flagged in `params` are
/// `{ck.param}`; integer and bool arguments are constants.
fn typed_case(types: &[TensorType], params: &[bool], build: impl Fn(&mut Func, &[ValueId]) -> ValueId) -> Module {
    let mut f = Func::new("f", l());
    let args: Vec<ValueId> =
        types.iter().zip(params).enumerate().map(|(i, (ty, &p))| f.add_param(format!("a{i}"), ty.clone(), p)).collect();
    let y = build(&mut f, &args);
    let yt = f.ty(y).clone();
    let r = f.add_param("r", yt.clone(), false);
    let m = f.push(OpKind::Mul, &[y, r], Attrs::new(), None, "m", l()).expect("mul");
    let dims: Vec<i64> = (0..yt.rank() as i64).collect();
    let loss = f.push(OpKind::ReduceSum, &[m], attrs([("dims", Attr::IntArray(dims))]), None, "loss", l()).expect("sum");
    f.push_return(&[loss], l());
    Module { funcs: vec![f] }
}

fn typed_check(m: Module, inputs: Vec<Tensor>, seed: u64) {
    let mut rng = Rng(seed);
    let inputs = with_r(&m, inputs, &mut rng);
    check(m, &inputs);
}

fn one_op(types: &[TensorType], params: &[bool], kind: OpKind, at: Attrs, declared: Option<TensorType>) -> Module {
    typed_case(types, params, |f, v| f.push(kind, v, at.clone(), declared.clone(), "y", l()).expect("op"))
}

#[test]
fn fd_gather_take_along_and_their_gradients() {
    let mut rng = Rng(21);
    let axis = |a| attrs([("axis", Attr::Int(a))]);
    // Embedding lookup with repeated ids: the repeated rows' gradients add up.
    let ids = ints(&[2, 3], DType::I64, &[3, 0, 3, 1, 3, 0]);
    let m = one_op(&[t(&[4, 3]), ity(&[2, 3], DType::I64)], &[true, false], OpKind::Gather, axis(0), None);
    typed_check(m, vec![rng.uniform(&[4, 3], -1.0, 1.0), ids], 211);
    // Along axis 1 with an i32 index.
    let idx = ints(&[3], DType::I32, &[2, 2, 0]);
    let m = one_op(&[t(&[2, 4]), ity(&[3], DType::I32)], &[true, false], OpKind::Gather, axis(1), None);
    typed_check(m, vec![rng.uniform(&[2, 4], -1.0, 1.0), idx], 212);
    // gather_grad is linear in dy.
    let idx = ints(&[3], DType::I64, &[1, 1, 2]);
    let m = one_op(&[ity(&[3], DType::I64), t(&[3, 2])], &[false, true], OpKind::GatherGrad, axis(0), Some(t(&[4, 2])));
    typed_check(m, vec![idx, rng.uniform(&[3, 2], -1.0, 1.0)], 213);
    // take_along (torch.gather) and its gradient.
    let idx = ints(&[3, 2], DType::I64, &[0, 0, 3, 1, 2, 2]);
    let m = one_op(&[t(&[3, 4]), ity(&[3, 2], DType::I64)], &[true, false], OpKind::TakeAlong, axis(1), None);
    typed_check(m, vec![rng.uniform(&[3, 4], -1.0, 1.0), idx.clone()], 214);
    let m = one_op(&[ity(&[3, 2], DType::I64), t(&[3, 2])], &[false, true], OpKind::TakeAlongGrad, axis(1), Some(t(&[3, 4])));
    typed_check(m, vec![idx, rng.uniform(&[3, 2], -1.0, 1.0)], 215);
}

#[test]
fn fd_select_and_masks() {
    let mut rng = Rng(22);
    let s = [2u64, 3];
    // select(c, a, b) with a constant mask.
    let c = ints(&s, DType::I1, &[1, 0, 0, 1, 1, 0]);
    let m = one_op(&[ity(&s, DType::I1), t(&s), t(&s)], &[false, true, true], OpKind::Select, Attrs::new(), None);
    typed_check(m, vec![c, rng.uniform(&s, -1.0, 1.0), rng.uniform(&s, -1.0, 1.0)], 221);
    // A mask computed from the differentiated values themselves, through every
    // comparison and logic op: c = (a <= b and a != b) or not (a >= b or a == b),
    // i.e. a < b; y = select(c, a * iota, b). Inputs distinct by >= 0.05.
    let m = typed_case(&[t(&s), t(&s)], &[true, true], |f, v| {
        let (a, b) = (v[0], v[1]);
        let p = |f: &mut Func, k: OpKind, o: &[ValueId]| f.push(k, o, Attrs::new(), None, "c", l()).expect("op");
        let le = p(f, OpKind::Le, &[a, b]);
        let ne = p(f, OpKind::Ne, &[a, b]);
        let ge = p(f, OpKind::Ge, &[a, b]);
        let eq = p(f, OpKind::Eq, &[a, b]);
        let gt = p(f, OpKind::Gt, &[b, a]);
        let lt = p(f, OpKind::Lt, &[a, b]);
        let x1 = p(f, OpKind::And, &[le, ne]);
        let x2 = p(f, OpKind::Or, &[ge, eq]);
        let x3 = p(f, OpKind::Not, &[x2]);
        let x4 = p(f, OpKind::Or, &[x1, x3]);
        let x5 = p(f, OpKind::And, &[gt, lt]);
        let c = p(f, OpKind::And, &[x4, x5]);
        let io = f.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(t(&s)), "io", l()).expect("iota");
        let ai = p(f, OpKind::Mul, &[a, io]);
        f.push(OpKind::Select, &[c, ai, b], Attrs::new(), None, "y", l()).expect("select")
    });
    let ab = rng.distinct(&[2, 2, 3], 0.05);
    let a = Tensor::new(vec![2, 3], ab.data[..6].to_vec()).expect("a");
    let b = Tensor::new(vec![2, 3], ab.data[6..].to_vec()).expect("b");
    typed_check(m, vec![a, b], 222);
}

#[test]
fn fd_cast() {
    let mut rng = Rng(23);
    let s = [2u64, 3];
    // Through bf16 and f16 and back: the gradient is cast back. Small inputs
    // keep the rounding far below the difference (bf16 spacing at 0.05 is 2^-13).
    for dt in [DType::BF16, DType::F16] {
        let m = typed_case(&[t(&s)], &[true], |f, v| {
            let h = f.push(OpKind::Cast, &[v[0]], Attrs::new(), Some(ity(&s, dt)), "h", l()).expect("cast");
            f.push(OpKind::Cast, &[h], Attrs::new(), Some(t(&s)), "y", l()).expect("cast")
        });
        typed_check(m, vec![rng.uniform(&s, -0.05, 0.05)], 231);
    }
    // Through an integer type: piecewise constant, no gradient; y = cast(cast(x, i32)) + x.
    let m = typed_case(&[t(&s)], &[true], |f, v| {
        let i = f.push(OpKind::Cast, &[v[0]], Attrs::new(), Some(ity(&s, DType::I32)), "i", l()).expect("cast");
        let b = f.push(OpKind::Cast, &[i], Attrs::new(), Some(t(&s)), "b", l()).expect("cast");
        f.push(OpKind::Add, &[b, v[0]], Attrs::new(), None, "y", l()).expect("add")
    });
    typed_check(m, vec![rng.uniform(&s, 1.1, 1.9)], 232);
}

#[test]
fn fd_cross_entropy() {
    let mut rng = Rng(24);
    // Row 2 ignored (-100); labels i64, then i32 with ignore_index 1.
    let y = ints(&[4], DType::I64, &[2, 0, -100, 4]);
    let m = one_op(&[t(&[4, 5]), ity(&[4], DType::I64)], &[true, false], OpKind::CrossEntropy, Attrs::new(), None);
    typed_check(m, vec![rng.uniform(&[4, 5], -2.0, 2.0), y], 241);
    let y = ints(&[4], DType::I32, &[1, 0, 3, 1]);
    let at = attrs([("ignore_index", Attr::Int(1))]);
    let m = one_op(&[t(&[4, 5]), ity(&[4], DType::I32)], &[true, false], OpKind::CrossEntropy, at.clone(), None);
    typed_check(m, vec![rng.uniform(&[4, 5], -2.0, 2.0), y.clone()], 242);
    // cross_entropy_grad is linear in its dy (the logits are constants here).
    let m = one_op(&[t(&[4, 5]), ity(&[4], DType::I32), t(&[])], &[false, false, true], OpKind::CrossEntropyGrad, at, None);
    typed_check(m, vec![rng.uniform(&[4, 5], -2.0, 2.0), y, rng.uniform(&[], -1.0, 1.0)], 243);
}

#[test]
fn cross_entropy_grad_wrt_its_logits_is_a_located_error() {
    let y = TensorType::new(vec![4], DType::I64);
    let mut m = one_op(&[t(&[4, 5]), y, t(&[])], &[true, false, false], OpKind::CrossEntropyGrad, Attrs::new(), None);
    let e = autodiff(&mut m, &AutodiffOptions::default()).expect_err("no second derivative rule");
    let text = format!("{e}");
    assert!(text.contains("'ck.cross_entropy_grad'") && text.contains("logits"), "{text}");
}
