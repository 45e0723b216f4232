//! The `adamw` pass and the hyperparameter inputs of step functions:
//! three AdamW steps on the interpreter against a hand-written f64
//! reference of PyTorch's AdamW, the learning rate given at run time
//! applies, and global-norm clipping scales the update.

use ckopt_interp::{InterpExec, StepExec, Tensor, random_inputs, run_func};
use ckopt_ir::Module;
use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::PassManager;
use ckopt_passes::sgd::{AdamWOptions, SgdOptions, StepRule};
use ckopt_passes::train::{Hyper, initial_args, prepare, step_once, train_loop};

fn mlp() -> Module {
    let mut o = GenOptions::default();
    o.depth = Some(2);
    o.width = Some(8);
    o.batch = Some(4);
    generate(ModelKind::Mlp, &o).expect("generates")
}

/// PyTorch's AdamW on f64 copies, one step.
#[allow(clippy::too_many_arguments)]
fn reference_step(p: &mut [f64], m: &mut [f64], v: &mut [f64], g: &[f32], t: i32, lr: f64, b1: f64, b2: f64, eps: f64, wd: f64) {
    let (bc1, bc2) = (1.0 - b1.powi(t), 1.0 - b2.powi(t));
    for i in 0..p.len() {
        let gi = g[i] as f64;
        p[i] *= 1.0 - lr * wd;
        m[i] = b1 * m[i] + (1.0 - b1) * gi;
        v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
        p[i] -= (lr / bc1) * m[i] / (v[i].sqrt() / bc2.sqrt() + eps);
    }
}

#[test]
fn adamw_matches_a_reference_over_three_steps() {
    let (lr, b1, b2, eps, wd) = (0.01f32, 0.8f32, 0.95f32, 1e-6f32, 0.1f32);
    let m0 = mlp();
    let mut m = m0.clone();
    let rule = StepRule::AdamW(AdamWOptions { lr, beta1: b1, beta2: b2, eps, weight_decay: wd, ..Default::default() });
    let sig = prepare(&mut m, "mlp", &rule).expect("prepares");
    assert_eq!(sig.state.len(), 2 * sig.params.len(), "two moments per parameter");
    let f = m.func("mlp").expect("loss").clone();
    let s = m.func("mlp_step").expect("step").clone();
    let inputs = random_inputs(&f, 4);
    let mut exec = InterpExec::new(m.clone(), "mlp_step", initial_args(&s, &sig, &inputs)).expect("exec");
    // Reference state.
    let mut p: Vec<Vec<f64>> = sig.params.iter().map(|&i| inputs[i].data.iter().map(|&x| x as f64).collect()).collect();
    let mut mm: Vec<Vec<f64>> = p.iter().map(|x| vec![0.0; x.len()]).collect();
    let mut vv = mm.clone();
    let mut args = inputs.clone();
    for t in 1..=3 {
        // The gradient at the current (f32) parameters.
        let g = run_func(&m, "mlp_grad", &args).expect("grad");
        let loss = step_once(&mut exec, &sig, t as usize, &Hyper::default()).expect("a step");
        assert_eq!(loss.to_bits(), g[0].data[0].to_bits(), "step {t}: the loss of @mlp_grad");
        for (k, &i) in sig.params.iter().enumerate() {
            reference_step(&mut p[k], &mut mm[k], &mut vv[k], &g[1 + k].data, t, lr as f64, b1 as f64, b2 as f64, eps as f64, wd as f64);
            let got = exec.arg(i).expect("param");
            for (a, b) in got.data.iter().zip(&p[k]) {
                assert!((*a as f64 - b).abs() <= 1e-5 * (1.0 + b.abs()), "step {t}, parameter {i}: {a} vs {b}");
            }
            args[i] = got;
        }
        // Keep the reference on the f32 parameters the next gradient sees.
        for (k, &i) in sig.params.iter().enumerate() {
            p[k] = args[i].data.iter().map(|&x| x as f64).collect();
        }
    }
}

/// The learning rate is an input: the same step function, run with another
/// `lr`, moves the parameters by exactly that much more (the bug of
/// `--lr` being ignored once the module had a step function).
#[test]
fn lr_given_at_run_time_applies() {
    let mut m = mlp();
    PassManager::parse("autodiff,sgd{lr=0.1}").expect("pipeline").run(&mut m).expect("runs");
    let mut copy = m.clone();
    let sig = prepare(&mut copy, "mlp", &Default::default()).expect("prepares");
    assert!(!sig.built_step, "the file's own step function");
    let f = m.func("mlp").expect("loss").clone();
    let s = m.func("mlp_step").expect("step").clone();
    let inputs = random_inputs(&f, 2);
    let g = run_func(&m, "mlp_grad", &inputs).expect("grad");
    for lr in [0.1f32, 0.5] {
        let mut exec = InterpExec::new(m.clone(), "mlp_step", initial_args(&s, &sig, &inputs)).expect("exec");
        train_loop(&mut exec, &sig, 1, &Hyper::lr(lr), |_, _, _| {}).expect("a step");
        for (k, &i) in sig.params.iter().enumerate() {
            let want: Vec<f32> = inputs[i].data.iter().zip(&g[1 + k].data).map(|(p, d)| p - d * lr).collect();
            assert_eq!(exec.arg(i).expect("param").data, want, "lr {lr}");
        }
    }
    // A hyperparameter the step does not have is an error naming it.
    let mut h = Hyper::lr(0.1);
    h.set("momentum", 0.9);
    let mut exec = InterpExec::new(m.clone(), "mlp_step", initial_args(&s, &sig, &inputs)).expect("exec");
    let e = train_loop(&mut exec, &sig, 1, &h, |_, _, _| {}).expect_err("no momentum state");
    assert!(e.message.contains("'momentum'") && e.message.contains("lr"), "{}", e.message);
}

/// Clipping: with C far above the norm nothing changes; with C below it the
/// update is the gradient scaled to norm C.
#[test]
fn clip_norm_scales_the_gradients_to_the_threshold() {
    let m0 = mlp();
    let f = m0.func("mlp").expect("loss").clone();
    let inputs = random_inputs(&f, 3);
    let mut plain = m0.clone();
    let psig = prepare(&mut plain, "mlp", &Default::default()).expect("prepares");
    let g = run_func(&plain, "mlp_grad", &inputs).expect("grad");
    let norm = g[1..].iter().flat_map(|t| t.data.iter()).map(|&x| (x as f64) * (x as f64)).sum::<f64>().sqrt();
    let _ = psig;
    for (c, scale) in [(norm * 100.0, 1.0), (norm / 4.0, 0.25)] {
        let mut m = m0.clone();
        let rule = StepRule::Sgd(SgdOptions { lr: 1.0, clip_norm: c as f32, ..Default::default() });
        let sig = prepare(&mut m, "mlp", &rule).expect("prepares");
        assert!(sig.hypers.iter().any(|h| h.1 == "clip_norm"));
        let s = m.func("mlp_step").expect("step").clone();
        let mut exec = InterpExec::new(m.clone(), "mlp_step", initial_args(&s, &sig, &inputs)).expect("exec");
        train_loop(&mut exec, &sig, 1, &Hyper::default(), |_, _, _| {}).expect("a step");
        for (k, &i) in sig.params.iter().enumerate() {
            let got = exec.arg(i).expect("param");
            for ((a, p), d) in got.data.iter().zip(&inputs[i].data).zip(&g[1 + k].data) {
                let want = *p as f64 - scale * *d as f64;
                assert!((*a as f64 - want).abs() <= 1e-5 * (1.0 + want.abs()), "C {c}: {a} vs {want}");
            }
        }
    }
    let _ = Tensor::scalar(0.0);
}
