//! Unit tests of the autodiff pass wiring (schedule, options, errors, complexity).
//! Per-op gradients are checked numerically in `passes/tests/autodiff_fd.rs`.

#![allow(clippy::unwrap_used)]

use super::*;
use ckopt_ir::{Attr, Attrs, DType, TensorType, attrs, verify_module};

fn t(s: &[u64]) -> TensorType {
    TensorType::f32(s.to_vec())
}
fn l() -> Loc {
    Loc::unknown()
}

/// `@mlp(x, w1 {ck.param}, w2 {ck.param}, t)`: loss = sum((relu(x w1) w2 - t)^2).
fn mlp() -> Module {
    let mut f = Func::new("mlp", l());
    let x = f.add_param("x", t(&[4, 8]), false);
    let w1 = f.add_param("w1", t(&[8, 8]), true);
    let w2 = f.add_param("w2", t(&[8, 3]), true);
    let tg = f.add_param("t", t(&[4, 3]), false);
    let h = f.push(OpKind::Matmul, &[x, w1], Attrs::new(), None, "h", l()).unwrap();
    let a = f.push(OpKind::Relu, &[h], Attrs::new(), None, "a", l()).unwrap();
    let o = f.push(OpKind::Matmul, &[a, w2], Attrs::new(), None, "o", l()).unwrap();
    let d = f.push(OpKind::Sub, &[o, tg], Attrs::new(), None, "d", l()).unwrap();
    let s = f.push(OpKind::Mul, &[d, d], Attrs::new(), None, "s", l()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l()).unwrap();
    f.push_return(&[loss], l());
    Module { funcs: vec![f] }
}

fn count(f: &Func, k: OpKind) -> usize {
    f.body.iter().filter(|o| o.kind == k).count()
}

#[test]
fn mlp_grad_returns_loss_and_param_grads_and_verifies() {
    let mut m = mlp();
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("mlp_grad").unwrap();
    assert_eq!(g.result_types, vec![t(&[]), t(&[8, 8]), t(&[8, 3])]);
    assert!(g.is_trainable(1) && g.is_trainable(2) && !g.is_trainable(0));
    // 6 forward ops; backward: seed, broadcast (reduce_sum), mul+scale (d*d), [sub: alias],
    // 2 matmuls for o, relu_grad, 1 matmul for w1 (no gradient for x or t) = 8.
    assert_eq!(g.body.len() - 1, 6 + 8, "{:#?}", g.body.iter().map(|o| o.kind).collect::<Vec<_>>());
    assert_eq!(count(g, OpKind::Neg), 0, "no gradient for the target");
    assert_eq!(count(g, OpKind::Add), 0, "no fan-out, no accumulation");
}

#[test]
fn relu_backward_reads_the_output_not_the_input() {
    let mut m = mlp();
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    let g = m.func("mlp_grad").unwrap();
    let relu = g.body.iter().find(|o| o.kind == OpKind::Relu).unwrap();
    let rg = g.body.iter().find(|o| o.kind == OpKind::ReluGrad).unwrap();
    assert_eq!(rg.operands[0], relu.result.unwrap());
    assert!(!g.body.iter().skip_while(|o| o.kind != OpKind::Fill).any(|o| o.operands.contains(&relu.operands[0])),
        "the relu input must not be read by the backward");
}

#[test]
fn backward_order_is_reverse_of_forward() {
    let mut m = mlp();
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    let g = m.func("mlp_grad").unwrap();
    let kinds: Vec<OpKind> = g.body.iter().map(|o| o.kind).collect();
    let seed = kinds.iter().position(|&k| k == OpKind::Fill).unwrap();
    assert_eq!(seed, 6, "forward ops first, then the seed");
    let rg = kinds.iter().position(|&k| k == OpKind::ReluGrad).unwrap();
    let scale = kinds.iter().position(|&k| k == OpKind::Scale).unwrap();
    assert!(scale < rg, "the loss's adjoint comes before relu's");
}

#[test]
fn wrt_indices_select_arguments_in_argument_order() {
    let mut m = mlp();
    let opts = AutodiffOptions { wrt: Wrt::Indices(vec![2, 0]), func: Some("mlp".into()), ..Default::default() };
    autodiff(&mut m, &opts).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("mlp_grad").unwrap();
    assert_eq!(g.result_types, vec![t(&[]), t(&[4, 8]), t(&[8, 3])]);
}

#[test]
fn unreached_parameter_gets_a_zero_fill() {
    let mut f = Func::new("f", l());
    let x = f.add_param("x", t(&[3]), true);
    let u = f.add_param("unused", t(&[2, 2]), true);
    let _ = u;
    let s = f.push(OpKind::ReduceSum, &[x], attrs([("dims", Attr::IntArray(vec![0]))]), None, "s", l()).unwrap();
    f.push_return(&[s], l());
    let mut m = Module { funcs: vec![f] };
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("f_grad").unwrap();
    let r = g.returned()[2];
    let def = g.body.iter().find(|o| o.result == Some(r)).unwrap();
    assert_eq!(def.kind, OpKind::Fill);
    assert_eq!(def.f32_attr("value"), Some(0.0));
}

#[test]
fn fan_out_accumulates_with_one_add() {
    // loss = sum(relu(x*w) + x*w): the value x*w is used twice.
    let mut f = Func::new("f", l());
    let x = f.add_param("x", t(&[4]), false);
    let w = f.add_param("w", t(&[4]), true);
    let p = f.push(OpKind::Mul, &[x, w], Attrs::new(), None, "p", l()).unwrap();
    let r = f.push(OpKind::Relu, &[p], Attrs::new(), None, "r", l()).unwrap();
    let s = f.push(OpKind::Add, &[r, p], Attrs::new(), None, "s", l()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0]))]), None, "l", l()).unwrap();
    f.push_return(&[loss], l());
    let mut m = Module { funcs: vec![f] };
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("f_grad").unwrap();
    assert_eq!(count(g, OpKind::Add), 2, "the forward add plus exactly one accumulation");
}

#[test]
fn slices_tiling_one_dim_are_joined_by_one_concat() {
    // LSTM-style gates: four slices of one matmul result.
    let mut f = Func::new("f", l());
    let x = f.add_param("x", t(&[2, 3]), false);
    let w = f.add_param("w", t(&[3, 8]), true);
    let z = f.push(OpKind::Matmul, &[x, w], Attrs::new(), None, "z", l()).unwrap();
    let mut acc = None;
    for k in 0..4 {
        let s = f.push(OpKind::Slice, &[z], attrs([("offsets", Attr::IntArray(vec![0, 2 * k]))]), Some(t(&[2, 2])), "g", l()).unwrap();
        let a = f.push(OpKind::Tanh, &[s], Attrs::new(), None, "a", l()).unwrap();
        acc = Some(match acc {
            None => a,
            Some(p) => f.push(OpKind::Mul, &[p, a], Attrs::new(), None, "m", l()).unwrap(),
        });
    }
    let loss = f.push(OpKind::ReduceSum, &[acc.unwrap()], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "l", l()).unwrap();
    f.push_return(&[loss], l());
    let mut m = Module { funcs: vec![f] };
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("f_grad").unwrap();
    assert_eq!(count(g, OpKind::Concat), 1);
    assert_eq!(count(g, OpKind::Fill), 1, "only the seed: no zero padding");
    assert_eq!(count(g, OpKind::Add), 0);
}

#[test]
fn errors_name_the_function() {
    let mut m = mlp();
    let e = autodiff(&mut m, &AutodiffOptions { wrt: Wrt::All, func: Some("nope".into()), ..Default::default() }).unwrap_err();
    assert!(e.0[0].message.contains("no function @nope"), "{e}");
    let e = autodiff(&mut m, &AutodiffOptions { wrt: Wrt::Indices(vec![7]), func: None, ..Default::default() }).unwrap_err();
    assert!(e.0[0].message.contains("wrt index 7 is out of range: @mlp has 4 arguments"), "{e}");
    assert_eq!(m.funcs.len(), 1, "a failed pass adds nothing");
    // Non-scalar first result.
    let mut f = Func::new("vec", l());
    let x = f.add_param("x", t(&[3]), true);
    let y = f.push(OpKind::Relu, &[x], Attrs::new(), None, "y", l()).unwrap();
    f.push_return(&[y], l());
    let mut m2 = Module { funcs: vec![f] };
    let e = autodiff(&mut m2, &AutodiffOptions { wrt: Wrt::All, func: Some("vec".into()), ..Default::default() }).unwrap_err();
    assert!(e.0[0].message.contains("@vec does not return a scalar loss"), "{e}");
    // Without func=, non-scalar functions are skipped.
    autodiff(&mut m2, &AutodiffOptions::default()).unwrap();
    assert_eq!(m2.funcs.len(), 1);
    // A second run does not differentiate the gradient or duplicate it.
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    assert_eq!(m.funcs.len(), 2);
    let e = autodiff(&mut m, &AutodiffOptions { wrt: Wrt::All, func: Some("mlp".into()), ..Default::default() }).unwrap_err();
    assert!(e.0[0].message.contains("@mlp_grad already exists"), "{e}");
}

#[test]
fn forward_copy_keeps_user_marks_and_drops_placement() {
    // ck.mirror/ck.checkpoint survive into @f_grad; ck.inplace/ck.offset (invalid once the
    // backward reads forward values) are dropped; the function's arena size is not copied.
    let mut m = mlp();
    {
        let f = &mut m.funcs[0];
        f.body[0].attrs.insert("ck.checkpoint".into(), Attr::Unit);
        f.body[1].attrs.insert("ck.mirror".into(), Attr::Unit);
        f.body[1].attrs.insert("ck.inplace".into(), Attr::Int(0));
        f.body[2].attrs.insert("ck.offset".into(), Attr::Int(64));
        f.attrs.insert("ck.arena_bytes".into(), Attr::Int(4096));
    }
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    let g = m.func("mlp_grad").unwrap();
    assert!(g.body[0].has_attr("ck.checkpoint"));
    assert!(g.body[1].has_attr("ck.mirror"));
    assert!(!g.body.iter().any(|o| o.has_attr("ck.inplace") || o.has_attr("ck.offset")));
    assert!(!g.attrs.contains_key("ck.arena_bytes"));
    assert!(m.funcs[0].body[1].has_attr("ck.inplace"), "the source function is unchanged");
}

#[test]
fn loss_that_is_an_argument_has_gradient_one() {
    // @f(%l, %w) returns %l itself: d l/d l = 1, d l/d w = 0.
    let mut f = Func::new("f", l());
    let a = f.add_param("l", t(&[]), false);
    let _w = f.add_param("w", t(&[2]), false);
    f.push_return(&[a], l());
    let mut m = Module { funcs: vec![f] };
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("f_grad").unwrap();
    let vals: Vec<f32> = g.returned()[1..]
        .iter()
        .map(|r| g.body.iter().find(|o| o.result == Some(*r)).unwrap().f32_attr("value").unwrap())
        .collect();
    assert_eq!(vals, vec![1.0, 0.0]);
}

#[test]
fn unverified_input_is_an_error_not_a_panic() {
    let mut m = mlp();
    m.funcs[0].body[0].operands.pop(); // a matmul with one operand
    let e = autodiff(&mut m, &AutodiffOptions::default()).unwrap_err();
    assert!(e.0[0].message.contains("expects 2 operands"), "{e}");
}

#[test]
fn options_parse() {
    let mut o = PassOptions { pass: "autodiff".into(), values: Default::default() };
    assert_eq!(AutodiffOptions::from_pass_options(&o).unwrap(), AutodiffOptions::default());
    o.values.insert("wrt".into(), "0,2".into());
    o.values.insert("func".into(), "@f".into());
    let a = AutodiffOptions::from_pass_options(&o).unwrap();
    assert_eq!(a.wrt, Wrt::Indices(vec![0, 2]));
    assert_eq!(a.func.as_deref(), Some("f"));
    o.values.insert("wrt".into(), "x".into());
    assert!(AutodiffOptions::from_pass_options(&o).is_err());
}

#[test]
fn overlapping_max_pool_grad_has_no_rule() {
    let mut f = Func::new("f", l());
    let x = f.add_param("x", t(&[1, 1, 4, 4]), false);
    let g = f.add_param("g", t(&[1, 1, 3, 3]), true);
    let pa = attrs([("window", Attr::IntArray(vec![2, 2])), ("stride", Attr::IntArray(vec![1, 1]))]);
    let z = f.push(OpKind::MaxPool2dGrad, &[x, g], pa, None, "z", l()).unwrap();
    let s = f.push(OpKind::ReduceSum, &[z], attrs([("dims", Attr::IntArray(vec![0, 1, 2, 3]))]), None, "s", l()).unwrap();
    f.push_return(&[s], l());
    let mut m = Module { funcs: vec![f] };
    let e = autodiff(&mut m, &AutodiffOptions::default()).unwrap_err();
    assert!(e.0[0].message.contains("no gradient rule for 'ck.max_pool2d_grad'"), "{e}");
}

#[test]
fn deep_chain_is_linear_time() {
    // 10,000 layers: the pass must not be quadratic (a debug build still takes well under seconds).
    let mut f = Func::new("deep", l());
    let mut h = f.add_param("x", t(&[2, 4]), false);
    for _ in 0..10_000 {
        let w = f.add_param("w", t(&[4, 4]), true);
        let z = f.push(OpKind::Matmul, &[h, w], Attrs::new(), None, "z", l()).unwrap();
        h = f.push(OpKind::Relu, &[z], Attrs::new(), None, "h", l()).unwrap();
    }
    let loss = f.push(OpKind::ReduceSum, &[h], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "l", l()).unwrap();
    f.push_return(&[loss], l());
    let mut m = Module { funcs: vec![f] };
    let t0 = std::time::Instant::now();
    let s = autodiff_with_stats(&mut m, &AutodiffOptions::default()).unwrap();
    let el = t0.elapsed();
    assert_eq!(s.backward_ops, 1 + 1 + 10_000 * 2 + 9_999, "seed, broadcast, relu_grad+dW per layer, dh for all but the first");
    assert!(el.as_secs_f64() < 20.0, "autodiff of 10k layers took {el:?}");
}

/// Integer and bool arguments are constants: `wrt=all` (no `{ck.param}`
/// marked: every argument) skips them, `wrt` naming one is an error, and a
/// function whose rank-0 result is an integer is not a loss.
#[test]
fn integer_arguments_are_never_differentiated() {
    let mut f = Func::new("f", l());
    let x = f.add_param("x", t(&[4]), false);
    let ids = f.add_param("ids", TensorType::new(vec![4], DType::I64), false);
    let two = f.push(OpKind::Add, &[ids, ids], Attrs::new(), None, "two", l()).unwrap();
    let s = f.push(OpKind::Mul, &[x, x], Attrs::new(), None, "s", l()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0]))]), None, "loss", l()).unwrap();
    f.push_return(&[loss, two], l());
    let (g, _, _) = differentiate(&f, &Wrt::All).unwrap();
    assert_eq!(g.result_types, vec![t(&[]), t(&[4])], "d/dx only");
    let e = differentiate(&f, &Wrt::Indices(vec![1])).unwrap_err();
    assert!(e.message.contains("wrt index 1 names %ids, of type tensor<4xi64>"), "{}", e.message);

    let mut h = Func::new("count", l());
    let n = h.add_param("n", TensorType::new(vec![], DType::I64), false);
    let m2 = h.push(OpKind::Add, &[n, n], Attrs::new(), None, "m", l()).unwrap();
    h.push_return(&[m2], l());
    assert!(!has_scalar_loss(&h));
    assert!(differentiate(&h, &Wrt::All).unwrap_err().message.contains("a loss must be a float scalar"));
}

/// Self-attention's self-product: `s = x·xᵀ`, `o = tanh(s)·x`, so `x` gets
/// three partial gradients (one from `o`, two from `s`), 1 MiB each.
fn self_product() -> Module {
    let mut f = Func::new("attn", l());
    let inp = f.add_param("inp", t(&[512, 512]), false);
    let w = f.add_param("w", t(&[512, 512]), true);
    let x = f.push(OpKind::Matmul, &[inp, w], Attrs::new(), None, "x", l()).unwrap();
    let s = f.push(OpKind::Matmul, &[x, x], attrs([("transpose_b", Attr::Bool(true))]), None, "s", l()).unwrap();
    let a = f.push(OpKind::Tanh, &[s], Attrs::new(), None, "a", l()).unwrap();
    let o = f.push(OpKind::Matmul, &[a, x], Attrs::new(), None, "o", l()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[o], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l()).unwrap();
    f.push_return(&[loss], l());
    Module { funcs: vec![f] }
}

#[test]
fn fan_out_of_a_self_product_is_summed_as_soon_as_two_partials_exist() {
    let mut m = self_product();
    autodiff(&mut m, &AutodiffOptions::default()).unwrap();
    verify_module(&m).unwrap();
    let g = m.func("attn_grad").unwrap().clone();
    let x = g.body.iter().find(|o| g.name_of(o.result.unwrap()) == "x").unwrap().result.unwrap();
    // The partial gradients of x: matmuls reading x whose result is named dx.
    let is_dx = |o: &Op| o.result.is_some_and(|r| g.name_of(r) == "dx");
    let partials: Vec<usize> = (0..g.body.len()).filter(|&i| g.body[i].kind == OpKind::Matmul && is_dx(&g.body[i])).collect();
    let adds: Vec<usize> = (0..g.body.len()).filter(|&i| g.body[i].kind == OpKind::Add && is_dx(&g.body[i])).collect();
    assert_eq!((partials.len(), adds.len()), (3, 2), "three partials of x, two adds");
    assert!(g.body[partials[1]].operands.contains(&x) && g.body[partials[2]].operands.contains(&x));
    // Eager: the first add comes before the self-product's second partial.
    assert!(adds[0] < partials[2], "adds at {adds:?}, partials at {partials:?}");
    // Live bytes around the self-product's backward (its two partials and the
    // adds), with the adds in place (as `inplace` marks them).
    let window = |f: &Func| {
        let mut f = f.clone();
        crate::inplace::mark_inplace_greedy(&mut f);
        let tl = crate::analysis::live_bytes_timeline(&f, &crate::analysis::liveness(&f), false);
        tl[partials[1]..=partials[2] + 1].iter().copied().max().unwrap()
    };
    // The schedule summing only after both of the self-product's partials
    // exist (the add moved down a line) holds three partials at once: 1 MiB more.
    let mut late = g.clone();
    let add = late.body.remove(adds[0]);
    late.body.insert(partials[2], add);
    verify_module(&Module { funcs: vec![late.clone()] }).unwrap();
    assert_eq!(window(&late), window(&g) + (1 << 20), "eager {} late {}", window(&g), window(&late));
}

#[test]
fn stop_gradient_makes_a_value_constant() {
    // loss = sum(x * stop_gradient(reduce_max(x))): the gradient is the
    // broadcast max alone; nothing differentiates reduce_max.
    let mut f = Func::new("sg", l());
    let x = f.add_param("x", t(&[2, 3]), true);
    let m = f.push(OpKind::ReduceMax, &[x], attrs([("dims", Attr::IntArray(vec![1])), (ATTR_STOP_GRADIENT, Attr::Unit)]), None, "m", l()).unwrap();
    let b = f.push(OpKind::Broadcast, &[m], attrs([("dims", Attr::IntArray(vec![0]))]), Some(t(&[2, 3])), "b", l()).unwrap();
    let p = f.push(OpKind::Mul, &[x, b], Attrs::new(), None, "p", l()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[p], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l()).unwrap();
    f.push_return(&[loss], l());
    let mut md = Module { funcs: vec![f] };
    verify_module(&md).unwrap();
    autodiff(&mut md, &AutodiffOptions::default()).unwrap();
    verify_module(&md).unwrap();
    let g = md.func("sg_grad").unwrap();
    assert_eq!(count(g, OpKind::ReduceMax), 1, "only the forward's");
    assert_eq!(count(g, OpKind::ReluGrad), 0, "reduce_max is not differentiated");
    assert_eq!(count(g, OpKind::Add), 0, "one contribution to dx (from the mul)");
}

#[test]
fn rebroadcast_makes_the_backward_keep_the_broadcast_operand() {
    // loss = sum(x * broadcast(r)) with r [2] a parameter: the backward's
    // dx = dy * b reads a fresh broadcast of r, not the forward's b.
    let mut f = Func::new("rb", l());
    let x = f.add_param("x", t(&[2, 3]), true);
    let r = f.add_param("r", t(&[2]), true);
    let e = f.push(OpKind::Exp, &[r], Attrs::new(), None, "e", l()).unwrap();
    let b = f.push(OpKind::Broadcast, &[e], attrs([("dims", Attr::IntArray(vec![0]))]), Some(t(&[2, 3])), "b", l()).unwrap();
    let p = f.push(OpKind::Mul, &[x, b], Attrs::new(), None, "p", l()).unwrap();
    let loss = f.push(OpKind::ReduceSum, &[p], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l()).unwrap();
    f.push_return(&[loss], l());
    let (plain, _, _) = differentiate(&f, &Wrt::All).unwrap();
    let (g, _, _) = differentiate_with(&f, &Wrt::All, true).unwrap();
    verify_module(&Module { funcs: vec![f.clone(), g.clone()] }).unwrap();
    let seed = g.body.iter().position(|o| o.kind == OpKind::Fill).unwrap();
    assert!(g.body[seed..].iter().all(|o| !o.operands.contains(&b)), "the backward never reads the forward broadcast");
    assert!(g.body[seed..].iter().any(|o| o.kind == OpKind::Broadcast && o.operands == [e]));
    assert_eq!(count(&g, OpKind::Broadcast), count(&plain, OpKind::Broadcast) + 1);
    assert!(plain.body.iter().skip_while(|o| o.kind != OpKind::Fill).any(|o| o.operands.contains(&b)));
}
