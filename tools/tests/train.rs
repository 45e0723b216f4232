//! `--train` (tools::train): SGD through autodiff on ckopt-gen models.
//!
//! Property pinned: with a synthetic teacher target — the model's own
//! prediction under different ("teacher") parameters — SGD on the student's
//! `{ck.param}` arguments makes the loss fall: the last loss is well below
//! the first and the losses decrease overall. The teacher prediction is read
//! off the gradient of the MSE loss w.r.t. the target:
//! `L = mean((y - t)^2)` gives `y = t - (n/2) dL/dt`, so at `t = 0`,
//! `y = -(n/2) dL/dt` (autodiff with `wrt=1`).

#![allow(clippy::unwrap_used)]

use ckopt_interp::{Tensor, random_inputs, run_func};
use ckopt_ir::Module;
use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::autodiff::{AutodiffOptions, Wrt, autodiff};
use ckopt_tools::train::train;

/// The prediction of `@name` under the parameters in `args` (MSE models only).
fn teacher_prediction(m: &Module, name: &str, args: &[Tensor]) -> Tensor {
    let mut mm = m.clone();
    autodiff(&mut mm, &AutodiffOptions { wrt: Wrt::Indices(vec![1]), func: Some(name.into()), ..Default::default() }).expect("autodiff wrt target");
    let mut a = args.to_vec();
    for v in &mut a[1].data {
        *v = 0.0;
    }
    let out = run_func(&mm, &format!("{name}_grad"), &a).expect("run");
    let n = out[1].data.len() as f32;
    let mut y = out[1].clone();
    for v in &mut y.data {
        *v *= -n / 2.0;
    }
    y
}

fn loss_falls(kind: ModelKind, opts: GenOptions, steps: usize, lr: f32, factor: f32) {
    let m = generate(kind, &opts).expect("generate");
    let name = kind.name();
    let f = m.func(name).expect("func");
    let teacher = random_inputs(f, 100);
    let y = teacher_prediction(&m, name, &teacher);
    // Sanity: the teacher itself has (almost) zero loss on its own prediction.
    let mut t_args = teacher.clone();
    t_args[1] = y.clone();
    let l_teacher = run_func(&m, name, &t_args).expect("run")[0].data[0];
    assert!(l_teacher.abs() < 1e-6, "{kind}: teacher loss {l_teacher}");
    let mut student = random_inputs(f, 0);
    student[0] = teacher[0].clone();
    student[1] = y;
    let mut seen = Vec::new();
    let r = train(&m, name, student.clone(), steps, lr, |k, n, l| seen.push((k, n, l))).expect("train");
    assert_eq!(r.losses.len(), steps);
    assert_eq!(seen.len(), steps);
    assert!(seen.iter().enumerate().all(|(i, &(k, n, _))| k == i + 1 && n == steps));
    assert!(r.built_grad, "the model file has no grad function: autodiff ran in-process");
    let (first, last) = (r.losses[0], r.losses[steps - 1]);
    assert!(last < factor * first, "{kind}: loss {first} -> {last} did not fall below {factor}x");
    let falls = r.losses.windows(2).filter(|w| w[1] < w[0]).count();
    assert!(falls * 4 >= (steps - 1) * 3, "{kind}: the loss fell in only {falls} of {} steps: {:?}", steps - 1, r.losses);
    // %x and %target are untouched; every parameter moved.
    assert_eq!(r.args[0], student[0]);
    assert_eq!(r.args[1], student[1]);
    for &i in &r.trained {
        assert_ne!(r.args[i], student[i], "{kind}: parameter {i} did not change");
    }
}

#[test]
fn mlp_loss_falls_towards_a_teacher() {
    let o = GenOptions { depth: Some(3), width: Some(16), batch: Some(8), ..Default::default() };
    loss_falls(ModelKind::Mlp, o, 30, 0.5, 0.5);
}

#[test]
fn resmlp_loss_falls_towards_a_teacher() {
    let o = GenOptions { depth: Some(2), width: Some(16), batch: Some(8), ..Default::default() };
    loss_falls(ModelKind::Resmlp, o, 30, 0.1, 0.5);
}

#[test]
fn lstm_loss_falls_towards_a_teacher() {
    let o = GenOptions { depth: Some(1), seq: Some(3), width: Some(8), batch: Some(4), ..Default::default() };
    loss_falls(ModelKind::Lstm, o, 30, 1.0, 0.5);
}

#[test]
fn an_existing_grad_function_is_used_and_a_wrong_one_rejected() {
    let o = GenOptions { depth: Some(2), width: Some(8), batch: Some(4), ..Default::default() };
    let mut m = generate(ModelKind::Mlp, &o).expect("generate");
    autodiff(&mut m, &AutodiffOptions::default()).expect("autodiff");
    let inputs = random_inputs(m.func("mlp").expect("f"), 0);
    let r = train(&m, "mlp_grad", inputs.clone(), 2, 0.1, |_, _, _| {}).expect("train");
    assert!(!r.built_grad);
    assert_eq!(r.grad_func, "mlp_grad");
    // A gradient function w.r.t. the wrong arguments is refused with a message naming it.
    let mut bad = generate(ModelKind::Mlp, &o).expect("generate");
    autodiff(&mut bad, &AutodiffOptions { wrt: Wrt::Indices(vec![0]), func: None, ..Default::default() }).expect("autodiff");
    let e = train(&bad, "mlp", inputs, 2, 0.1, |_, _, _| {}).unwrap_err();
    assert!(e.message.contains("@mlp_grad does not return (loss, gradient of each {ck.param} argument"), "{e}");
}
