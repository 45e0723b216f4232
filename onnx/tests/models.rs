//! PyTorch-exported models (test/onnx/models, written by
//! test/onnx/export_models.py with onnxruntime's outputs) through the
//! importer, the interpreter, autodiff and remat.
//!
//! Properties pinned, per model (an MLP with a dynamic batch dim, a CNN with
//! BatchNormalization and two residual blocks, a 2-layer transformer
//! encoder, a MobileNetV3-style block with HardSwish and a HardSigmoid
//! squeeze-excite gate):
//! - forward: ckopt's outputs equal onnxruntime's within
//!   |got - want| <= 1e-4 |want| + 1e-5 per element;
//! - gradients: `@NAME_grad` (mse loss) equals central finite differences
//!   of the loss for a sample of coordinates of every parameter;
//! - training: SGD with `remat{mode=sqrt}` gives the same losses, step for
//!   step, as without (bit for bit on the interpreter).

#![allow(clippy::unwrap_used)]

mod common;

use ckopt_interp::{Tensor, run_func};
use ckopt_ir::Module;
use ckopt_onnx::{ImportOptions, Loss, NamedTensor, Params, import_file};
use ckopt_passes::autodiff::{AutodiffOptions, autodiff};
use std::path::PathBuf;

const MODELS: [&str; 4] = ["mlp", "cnn", "transformer", "mbv3"];

fn model(name: &str) -> PathBuf {
    common::fixtures().join("models").join(name)
}

fn tensor(t: &NamedTensor) -> Tensor {
    Tensor::new(t.shape.iter().map(|&d| d as usize).collect(), t.data.clone()).unwrap()
}

fn import(name: &str, loss: Loss) -> (Module, Params) {
    let opts = ImportOptions { loss, batch: Some(if name == "mlp" { 4 } else { 2 }), name: None };
    import_file(&model(name).join("model.onnx"), &opts).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn forward_matches_onnxruntime() {
    for name in MODELS {
        let (m, params) = import(name, Loss::None);
        let f = &m.funcs[0];
        let x = common::tensors(&model(name), "input");
        let want = common::tensors(&model(name), "output");
        let mut inputs = vec![tensor(&x[0])];
        inputs.extend(params.iter().map(tensor));
        let out = run_func(&m, &f.name, &inputs).unwrap();
        assert_eq!(out[0].shape, want[0].shape.iter().map(|&d| d as usize).collect::<Vec<_>>(), "{name}");
        let e = common::excess(&out[0].data, &want[0].data, 1e-4, 1e-5).unwrap();
        assert_eq!(e, 0.0, "{name}: output differs from onnxruntime's beyond tolerance by {e:e}");
    }
}

#[test]
fn initializers_become_named_params_and_bn_statistics_are_folded() {
    let (m, params) = import("cnn", Loss::None);
    let f = &m.funcs[0];
    assert_eq!(f.params.len(), 1 + params.len(), "x, then one argument per parameter");
    assert!(params.iter().all(|p| !p.name.contains("running")), "running statistics are constants, not parameters");
    for (i, p) in params.iter().enumerate() {
        assert!(f.is_trainable(i + 1));
        assert_eq!(ckopt_onnx::weights::arg_name(f, i + 1), p.name);
    }
    assert!(params.iter().any(|p| p.name == "head.weight"), "{:?}", params.iter().map(|p| &p.name).collect::<Vec<_>>());
}

/// Inputs of the mse function: x, a target, the parameters.
fn mse_inputs(name: &str, m: &Module, params: &Params) -> Vec<Tensor> {
    let f = &m.funcs[0];
    let x = common::tensors(&model(name), "input");
    let t_ty = f.ty(f.params[1].value);
    let n = t_ty.elems() as usize;
    let target = Tensor::new(t_ty.shape.iter().map(|&d| d as usize).collect(), (0..n).map(|i| ((i * 7) % 5) as f32 * 0.25 - 0.5).collect()).unwrap();
    let mut inputs = vec![tensor(&x[0]), target];
    inputs.extend(params.iter().map(tensor));
    inputs
}

#[test]
fn gradients_match_finite_differences() {
    for name in MODELS {
        let (mut m, params) = import(name, Loss::Mse);
        let fname = m.funcs[0].name.clone();
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        let inputs = mse_inputs(name, &m, &params);
        let grads = run_func(&m, &format!("{fname}_grad"), &inputs).unwrap();
        let loss = |inp: &[Tensor]| -> f64 { run_func(&m, &fname, inp).unwrap()[0].data[0] as f64 };
        let eps = 1e-2f32;
        let mut checked = 0;
        for (k, _) in params.iter().enumerate() {
            let arg = 2 + k;
            let g = &grads[1 + k];
            let n = inputs[arg].data.len();
            for j in [0, n / 3, n - 1] {
                let mut up = inputs.clone();
                up[arg].data[j] += eps;
                let mut dn = inputs.clone();
                dn[arg].data[j] -= eps;
                let fd = ((loss(&up) - loss(&dn)) / (2.0 * eps as f64)) as f32;
                let got = g.data[j];
                assert!(
                    (got - fd).abs() <= 2e-3 + 5e-2 * got.abs().max(fd.abs()),
                    "{name}: d loss / d {}[{j}] = {got}, finite difference {fd}",
                    params[k].name
                );
                checked += 1;
            }
        }
        assert!(checked >= 9, "{name}");
    }
}

#[test]
fn sqrt_remat_training_gives_the_same_losses() {
    use ckopt_passes::PassManager;
    let mut recomputed = 0;
    for name in MODELS {
        let (m, params) = import(name, Loss::Mse);
        let fname = m.funcs[0].name.clone();
        // sqrt keeps no remat when its plan would not lower the peak (a
        // small model), so the smallest plan of the memory curve runs too:
        // it recomputes whenever any plan lowers the peak.
        let mut g0 = m.clone();
        PassManager::parse("autodiff").unwrap().run(&mut g0).unwrap();
        let curve = ckopt_passes::remat::curve::memory_curve(g0.func(&format!("{fname}_grad")).unwrap()).expect("a curve");
        let smallest = format!("autodiff,{}", curve.points[0].plan);
        let mut runs = Vec::new();
        for pipeline in ["autodiff", "autodiff,remat{mode=sqrt}", smallest.as_str()] {
            let mut mm = m.clone();
            PassManager::parse(pipeline).unwrap().run_with(&mut mm, |_, _| {}).unwrap();
            let g = mm.func(&format!("{fname}_grad")).unwrap();
            let recomputes = g.body.iter().any(|o| o.has_attr("ck.recompute"));
            if pipeline == smallest {
                assert_eq!(recomputes, curve.points.len() > 1, "{name}: {pipeline}");
                recomputed += usize::from(recomputes);
            }
            let mut inputs = mse_inputs(name, &mm, &params);
            let mut losses = Vec::new();
            for _ in 0..3 {
                let out = run_func(&mm, &format!("{fname}_grad"), &inputs).unwrap();
                losses.push(out[0].data[0]);
                for (k, g) in out[1..].iter().enumerate() {
                    for (p, d) in inputs[2 + k].data.iter_mut().zip(&g.data) {
                        *p -= 0.05 * d;
                    }
                }
            }
            runs.push(losses);
        }
        assert_eq!(runs[0], runs[1], "{name}: losses with and without sqrt remat differ");
        assert_eq!(runs[0], runs[2], "{name}: losses with and without {smallest} differ");
        assert!(runs[0][2] < runs[0][0], "{name}: the loss does not fall: {:?}", runs[0]);
    }
    assert!(recomputed >= 2, "only {recomputed} of the {} models were trained with recomputation", MODELS.len());
}
