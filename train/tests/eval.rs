//! Accuracy in evaluation: which value holds the class scores (docs/training.md),
//! checked against hand-counted hits on the interpreter.

#![allow(clippy::unwrap_used)]

use ckopt_interp::{InterpExec, StepExec, Tensor};
use ckopt_train::{Dataset, Evaluator, Target, eval_function};
use safetensors::tensor::{Dtype, TensorView};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ckopt-train-eval-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Integer-label `cross_entropy`: the logits are the scores, one row per
/// label, and a row labelled `ignore_index` (-100, the default) is not
/// counted. The logits here are the parameter itself, so the hits can be
/// counted by hand: 4 of the 7 counted rows.
#[test]
fn integer_label_cross_entropy_accuracy_counts_labelled_rows() {
    let src = r#"module {
  func.func @f(%z: tensor<4x3xf32> {ck.param}, %y: tensor<4xi64>) -> tensor<f32> {
    %l = "ck.cross_entropy"(%z, %y) : (tensor<4x3xf32>, tensor<4xi64>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}"#;
    let m = ckopt_ir::parse_and_verify(src, "f.ck").unwrap();
    let f = m.func("f").unwrap().clone();
    let (ef, target) = eval_function(&f, &[0]);
    assert_eq!(target, Some(Target::Labels { arg: 1, ignore_index: -100 }));
    assert_eq!(ef.result_types.len(), 2, "@f_eval returns the loss and the logits");
    // Row argmaxes: 0, 2, 2, 1.
    let z = Tensor::new(vec![4, 3], vec![3.0, 1.0, 0.0, 0.0, 1.0, 2.0, -1.0, 0.5, 0.7, 0.0, 5.0, 1.0]).unwrap();
    let labels: [i64; 8] = [0, 1, 2, -100, 2, 2, 0, 1];
    let d = tmp("xent");
    let data = d.join("eval.safetensors");
    let bytes = i64_bytes(&labels);
    safetensors::serialize_to_file([("y".to_string(), TensorView::new(Dtype::I64, vec![8], &bytes).unwrap())], None, &data).unwrap();
    let y0 = Tensor::from_ints(vec![4], ckopt_ir::DType::I64, vec![0; 4]).unwrap();
    let mut train = InterpExec::new(m.clone(), "f", vec![z.clone(), y0.clone()]).unwrap();
    let em = ckopt_ir::Module { funcs: vec![ef.clone()] };
    let exec = InterpExec::new(em, &ef.name, vec![Tensor::zeros(&[4, 3]), y0]).unwrap();
    let mut ev = Evaluator { exec: Box::new(exec), data: Dataset::open(data.to_str().unwrap(), &f, &[0]).unwrap(), params: vec![0], target };
    let r = ev.run(&mut train, 3).unwrap();
    assert_eq!(r.accuracy, Some(4.0 / 7.0), "batch 1: rows 0 and 2 of 3 counted; batch 2: rows 1 and 3 of 4");
    assert_eq!((r.step, r.examples), (3, 8));
    // The mean loss is the loss function's own, batch by batch.
    let mut want = 0.0f64;
    for b in labels.chunks(4) {
        let y = Tensor::from_ints(vec![4], ckopt_ir::DType::I64, b.to_vec()).unwrap();
        let out = ckopt_interp::run_func(&m, "f", &[z.clone(), y]).unwrap();
        want += out[0].item().unwrap() as f64 / 2.0;
    }
    assert_eq!(r.loss, want);
    assert_eq!(train.arg(0).unwrap().data, z.data, "evaluation gives the parameters back as they were");
    assert!(ev.exec.arg(0).unwrap().data.is_empty(), "they were lent, and the evaluator keeps no copy");
    assert_eq!(ev.run(&mut train, 4).unwrap().accuracy, Some(4.0 / 7.0), "lent again for the next evaluation");
}

/// `ckopt-gen gpt`'s loss: cross_entropy of [B·S, V] logits against the
/// [B, S] labels reshaped to [B·S]: found through the reshape.
#[test]
fn gpt_labels_are_found_through_the_reshape() {
    let o = ckopt_models::GenOptions { depth: Some(1), width: Some(8), batch: Some(2), seq: Some(4), heads: Some(2), vocab: Some(5), ..Default::default() };
    let m = ckopt_models::generate(ckopt_models::ModelKind::from_name("gpt").unwrap(), &o).unwrap();
    let f = &m.funcs[0];
    let params: Vec<usize> = (0..f.params.len()).filter(|&i| f.is_trainable(i)).collect();
    let labels = (0..f.params.len()).find(|&i| ckopt_train::data::arg_name(f, i) == "labels").unwrap();
    let (ef, target) = eval_function(f, &params);
    assert_eq!(target, Some(Target::Labels { arg: labels, ignore_index: -100 }));
    let scores = ef.returned()[1];
    assert_eq!(ef.ty(scores).shape, vec![8, 5], "the [B·S, V] logits");
}

/// A loss that is neither pattern: no accuracy.
#[test]
fn mse_has_no_accuracy() {
    let o = ckopt_models::GenOptions { depth: Some(1), width: Some(4), batch: Some(2), ..Default::default() };
    let m = ckopt_models::generate(ckopt_models::ModelKind::from_name("mlp").unwrap(), &o).unwrap();
    let f = &m.funcs[0];
    let params: Vec<usize> = (0..f.params.len()).filter(|&i| f.is_trainable(i)).collect();
    assert_eq!(eval_function(f, &params).1, None);
}
