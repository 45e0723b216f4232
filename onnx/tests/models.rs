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

// ------------------------------------------------------------------ GPT
//
// A small GPT exported by both of PyTorch's exporters (TorchScript and
// torch.export): integer token ids, embedding Gathers with computed indices,
// a causal mask by Where, Split, both Gelu spellings (Erf / Gelu), and, in the
// loss models, SoftmaxCrossEntropyLoss with an ignored label.

const GPTS: [&str; 2] = ["gpt_ts", "gpt_dynamo"];

/// An interpreter tensor of a test-data tensor's element type.
fn typed(t: ckopt_onnx::TypedTensor) -> Tensor {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    if t.dtype.is_float() { Tensor::from_floats(shape, t.dtype, t.floats).unwrap() } else { Tensor::from_ints(shape, t.dtype, t.ints).unwrap() }
}

/// The model's inputs (typed) followed by its parameters.
fn gpt_inputs(name: &str, params: &Params) -> Vec<Tensor> {
    let mut inputs: Vec<Tensor> = common::typed_tensors(&model(name), "input").into_iter().map(typed).collect();
    inputs.extend(params.iter().map(tensor));
    inputs
}

#[test]
fn gpt_logits_and_loss_match_onnxruntime() {
    for name in GPTS.iter().copied().chain(GPTS.iter().map(|g| if *g == "gpt_ts" { "gpt_loss_ts" } else { "gpt_loss_dynamo" })) {
        let (m, params) = import(name, Loss::None);
        let f = &m.funcs[0];
        assert_eq!(f.ty(f.params[0].value).dtype, ckopt_ir::DType::I64, "{name}: ids are i64");
        let out = run_func(&m, &f.name, &gpt_inputs(name, &params)).unwrap();
        let want = common::tensors(&model(name), "output");
        assert_eq!(out[0].shape, want[0].shape.iter().map(|&d| d as usize).collect::<Vec<_>>(), "{name}");
        let e = common::excess(&out[0].data, &want[0].data, 1e-4, 1e-5).unwrap();
        assert_eq!(e, 0.0, "{name}: output differs from onnxruntime's beyond tolerance by {e:e}");
    }
}

#[test]
fn gpt_cross_entropy_index_loss_equals_the_exported_loss() {
    // The logits model with --loss=cross-entropy-index and the labels of the
    // loss model gives the exported F.cross_entropy (one label is -100).
    for (logits, loss) in [("gpt_ts", "gpt_loss_ts"), ("gpt_dynamo", "gpt_loss_dynamo")] {
        let (m, params) = import(logits, Loss::CrossEntropyIndex);
        let f = &m.funcs[0];
        assert_eq!(f.ty(f.params[1].value).to_string(), "tensor<2x8xi64>", "{logits}: %labels");
        let mut inputs: Vec<Tensor> = common::typed_tensors(&model(loss), "input").into_iter().map(typed).collect();
        inputs.extend(params.iter().map(tensor));
        let got = run_func(&m, &f.name, &inputs).unwrap()[0].data[0];
        let want = common::tensors(&model(loss), "output")[0].data[0];
        assert!((got - want).abs() <= 1e-5 * want.abs(), "{logits}: cross-entropy-index {got}, exported loss {want}");
    }
}

#[test]
fn gpt_loss_gradients_match_finite_differences() {
    // The float paths through gather (embeddings), where (the mask) and
    // SoftmaxCrossEntropyLoss, against central differences of the loss.
    for name in ["gpt_loss_ts", "gpt_loss_dynamo"] {
        let (mut m, params) = import(name, Loss::None);
        let fname = m.funcs[0].name.clone();
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        let inputs = gpt_inputs(name, &params);
        let grads = run_func(&m, &format!("{fname}_grad"), &inputs).unwrap();
        let loss = |inp: &[Tensor]| -> f64 { run_func(&m, &fname, inp).unwrap()[0].data[0] as f64 };
        let eps = 1e-2f32;
        let ids = &inputs[0].ints;
        for (k, p) in params.iter().enumerate() {
            let arg = 2 + k;
            let g = &grads[1 + k];
            let n = inputs[arg].data.len();
            // For the token embedding, a row that is looked up (and one that is not: gradient 0).
            let mut coords = vec![0, n / 3, n - 1];
            if p.name.contains("wte") {
                let w = p.shape[1] as usize;
                coords.push(ids[0] as usize * w + 1);
            }
            for j in coords {
                let mut up = inputs.clone();
                up[arg].data[j] += eps;
                let mut dn = inputs.clone();
                dn[arg].data[j] -= eps;
                let fd = ((loss(&up) - loss(&dn)) / (2.0 * eps as f64)) as f32;
                let got = g.data[j];
                assert!(
                    (got - fd).abs() <= 2e-3 + 5e-2 * got.abs().max(fd.abs()),
                    "{name}: d loss / d {}[{j}] = {got}, finite difference {fd}",
                    p.name
                );
            }
        }
    }
}

#[test]
fn gpt_loss_gradient_under_every_remat_mode_is_bit_identical() {
    use ckopt_passes::PassManager;
    for name in ["gpt_loss_ts", "gpt_loss_dynamo"] {
        let (m, params) = import(name, Loss::None);
        let fname = m.funcs[0].name.clone();
        let inputs = gpt_inputs(name, &params);
        let grad = format!("{fname}_grad");
        let mut g0 = m.clone();
        PassManager::parse("autodiff").unwrap().run(&mut g0).unwrap();
        let reference = run_func(&g0, &grad, &inputs).unwrap();
        let peak = |mm: &Module| ckopt_passes::analysis::report::memory_report(mm.func(&grad).unwrap()).temp_peak_bytes;
        let mut sq = m.clone();
        PassManager::parse("autodiff,remat{mode=sqrt}").unwrap().run(&mut sq).unwrap();
        assert!(peak(&sq) < peak(&g0), "{name}: sqrt does not lower the temp peak ({} vs {})", peak(&sq), peak(&g0));
        // optimal at sqrt's peak: feasible, and it recomputes.
        let optimal = format!("autodiff,remat{{mode=optimal budget={}}}", peak(&sq));
        let mut recomputing = Vec::new();
        for pipeline in [
            "autodiff,remat{mode=sqrt}",
            "autodiff,remat{mode=greedy}",
            "autodiff,remat{mode=log}",
            optimal.as_str(),
            "autodiff,remat{mode=sqrt},memplan",
        ] {
            let mut mm = m.clone();
            PassManager::parse(pipeline).unwrap().run_with(&mut mm, |_, _| {}).unwrap_or_else(|e| panic!("{name}: {pipeline}: {e:?}"));
            let g = mm.func(&grad).unwrap();
            if g.body.iter().any(|o| o.has_attr("ck.recompute")) {
                recomputing.push(pipeline.to_string());
            }
            let got = run_func(&mm, &grad, &inputs).unwrap();
            assert_eq!(got, reference, "{name}: {pipeline}: the gradient differs from no remat's");
        }
        assert!(recomputing.len() >= 3, "{name}: only {recomputing:?} recompute");
    }
}
