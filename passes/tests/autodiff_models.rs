//! Whole-model gradient checks: every `ckopt-gen` model at a small size.
//!
//! Property pinned: for each model, `@MODEL_grad` verifies, returns the same
//! loss as `@MODEL` (bit-for-bit: the forward ops are copied), one gradient
//! per `{ck.param}` argument, and its gradients match finite differences
//! (see `common::directional`; tolerance there) along random directions over
//! all parameters and along a few single coordinates of every parameter.
//! Kinks (relu, max) detected by the two-scale difference are skipped, but at
//! least one direction per model must be judged, and none may fail.

#![allow(clippy::unwrap_used)]

mod common;

use ckopt_interp::{random_inputs, run_func};
use ckopt_ir::verify_module;
use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::autodiff::{AutodiffOptions, autodiff};
use common::{Lcg, Outcome, coord_dir, directional, random_dir};

fn small(kind: ModelKind) -> GenOptions {
    let mut o = GenOptions::default();
    match kind {
        ModelKind::Mlp | ModelKind::Resmlp => {
            o.depth = Some(3);
            o.width = Some(8);
            o.batch = Some(4);
        }
        ModelKind::Lstm => {
            o.depth = Some(2);
            o.seq = Some(3);
            o.width = Some(4);
            o.batch = Some(2);
        }
        ModelKind::Resnet => {
            o.depth = Some(1);
            o.channels = Some(4);
            o.image = Some(8);
            o.batch = Some(2);
            o.classes = Some(3);
        }
        ModelKind::Transformer => {
            o.depth = Some(1);
            o.seq = Some(4);
            o.width = Some(8);
            o.heads = Some(2);
            o.batch = Some(2);
        }
        ModelKind::Gpt => {
            o.depth = Some(1);
            o.seq = Some(4);
            o.width = Some(8);
            o.heads = Some(2);
            o.vocab = Some(6);
            o.batch = Some(2);
        }
    }
    o
}

fn check_model(kind: ModelKind) {
    let mut m = generate(kind, &small(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let name = kind.name().to_string();
    autodiff(&mut m, &AutodiffOptions::default()).unwrap_or_else(|d| panic!("{kind}: {d}"));
    verify_module(&m).unwrap_or_else(|d| panic!("{kind} grad does not verify: {d}"));
    let f = m.func(&name).expect("model function").clone();
    let wrt = f.trainable_indices();
    assert!(wrt.len() >= 2 && !wrt.contains(&0) && !wrt.contains(&1), "{kind}: params are the {{ck.param}} args");
    let inputs = random_inputs(&f, 3);
    let fwd = run_func(&m, &name, &inputs).expect("forward");
    let out = run_func(&m, &format!("{name}_grad"), &inputs).expect("grad");
    assert_eq!(out.len(), 1 + wrt.len());
    assert_eq!(out[0].data, fwd[0].data, "{kind}: the gradient function's loss is the forward loss");
    let grads = &out[1..];
    for (g, &i) in grads.iter().zip(&wrt) {
        assert_eq!(g.shape, inputs[i].shape);
        assert!(g.all_finite(), "{kind}: gradient of argument {i} is finite");
    }
    assert!(grads.iter().any(|g| g.data.iter().any(|&v| v != 0.0)), "{kind}: some gradient is non-zero");
    let mut rng = Lcg(17);
    let mut judged = 0;
    for _ in 0..4 {
        let dir = random_dir(&inputs, &wrt, &mut rng);
        match directional(&m, &name, &inputs, &wrt, grads, &dir, 1e-2) {
            Outcome::Pass => judged += 1,
            Outcome::Kink => {}
            Outcome::Fail(msg) => panic!("{kind}: {msg}"),
        }
    }
    assert!(judged >= 1, "{kind}: every random direction crossed a kink");
    // A few single coordinates of every parameter.
    for k in 0..wrt.len() {
        let n = inputs[wrt[k]].data.len();
        for j in [0, n / 2, n - 1] {
            let dir = coord_dir(&inputs, &wrt, k, j);
            if let Outcome::Fail(msg) = directional(&m, &name, &inputs, &wrt, grads, &dir, 1e-2) {
                panic!("{kind}: parameter {k} coordinate {j}: {msg}");
            }
        }
    }
}

#[test]
fn mlp_gradient_matches_finite_differences() {
    check_model(ModelKind::Mlp);
}

#[test]
fn resmlp_gradient_matches_finite_differences() {
    check_model(ModelKind::Resmlp);
}

#[test]
fn lstm_gradient_matches_finite_differences() {
    check_model(ModelKind::Lstm);
}

#[test]
fn resnet_gradient_matches_finite_differences() {
    check_model(ModelKind::Resnet);
}

#[test]
fn transformer_gradient_matches_finite_differences() {
    check_model(ModelKind::Transformer);
}

#[test]
fn gpt_gradient_matches_finite_differences() {
    check_model(ModelKind::Gpt);
}

#[test]
fn every_model_kind_is_checked() {
    assert_eq!(ModelKind::ALL.len(), 6, "a new model needs a gradient check above");
}
