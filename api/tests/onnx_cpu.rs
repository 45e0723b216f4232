//! ONNX import on the cpu backend: the ONNX project's node test cases
//! (test/onnx/node) and the PyTorch-exported models (test/onnx/models)
//! through `ckopt::import_onnx`, compiled for `Target::Cpu`.
//!
//! Properties pinned: every node case the importer accepts reproduces
//! ONNX's expected outputs on cpu within |got - want| <= 1e-5 |want| + 1e-6
//! (the same tolerance as on the interpreter; integers and bools exactly),
//! every accepted case runs (integer, bool and low-precision values
//! included); the exported models, the GPTs with integer token ids among
//! them, match onnxruntime within 1e-4 on cpu; training a model with
//! remat{mode=sqrt} on cpu gives the losses of training without remat, and
//! the GPT loss model's gradient is bit-identical under every remat mode.

#![allow(clippy::unwrap_used)]

#[path = "../../onnx/tests/common/mod.rs"]
mod common;

use ckopt::{ImportOptions, Loss, Target, Tensor, compile, import_onnx, optimize, params_tensors};

fn tensor(t: &ckopt::NamedTensor) -> Tensor {
    Tensor::new(t.shape.iter().map(|&d| d as usize).collect(), t.data.clone()).unwrap()
}

/// Whether a value of the module's first function is not f32.
fn has_non_f32(m: &ckopt::Module) -> bool {
    let f = &m.funcs[0];
    f.params.iter().map(|p| p.value).chain(f.body.iter().filter_map(|o| o.result)).any(|v| f.ty(v).dtype != ckopt::DType::F32)
}

/// A tensor of a test-data tensor's element type.
fn typed(t: ckopt_onnx::TypedTensor) -> Tensor {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    if t.dtype.is_float() { Tensor::from_floats(shape, t.dtype, t.floats).unwrap() } else { Tensor::from_ints(shape, t.dtype, t.ints).unwrap() }
}

#[test]
fn onnx_node_cases_match_their_expected_outputs_on_cpu() {
    let mut failures = Vec::new();
    let (mut ran, mut rejected, mut non_f32) = (0, 0, 0);
    for dir in common::node_cases() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        // Import errors are pinned case by case by ckopt-onnx's node_cases test.
        let Ok((m, params)) = import_onnx(dir.join("model.onnx"), ImportOptions::default()) else {
            rejected += 1;
            continue;
        };
        let fname = m.funcs[0].name.clone();
        let mut inputs: Vec<Tensor> = common::typed_tensors(&dir, "input").into_iter().map(typed).collect();
        inputs.extend(params_tensors(&params).unwrap());
        let out = match compile(&m, &fname, Target::Cpu).and_then(|mut c| c.run(&inputs)) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: {e}"));
                continue;
            }
        };
        for (k, (g, w)) in out.iter().zip(common::typed_tensors(&dir, "output")).enumerate() {
            match common::compare(g.dtype, &g.data, &g.ints, &w, 1e-5, 1e-6) {
                Ok(0.0) => {}
                Ok(e) => failures.push(format!("{name}: output {k} off by {e:e} beyond tolerance")),
                Err(m) => failures.push(format!("{name}: output {k}: {m}")),
            }
        }
        ran += 1;
        non_f32 += usize::from(has_non_f32(&m));
    }
    eprintln!("{ran} ONNX node cases ran on cpu ({non_f32} of them with integer, bool or low-precision values; {rejected} rejected at import)");
    assert!(ran >= 440, "only {ran} cases ran");
    assert!(non_f32 >= 140, "only {non_f32} cases with non-f32 values ran");
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

fn model(name: &str) -> std::path::PathBuf {
    common::fixtures().join("models").join(name)
}

fn opts(name: &str, loss: Loss) -> ImportOptions {
    ImportOptions { loss, batch: Some(if name == "mlp" { 4 } else { 2 }), name: None }
}

#[test]
fn exported_models_match_onnxruntime_on_cpu() {
    for name in ["mlp", "cnn", "transformer", "mbv3"] {
        let (m, params) = import_onnx(model(name).join("model.onnx"), opts(name, Loss::None)).unwrap();
        let mut inputs = vec![tensor(&common::tensors(&model(name), "input")[0])];
        inputs.extend(params_tensors(&params).unwrap());
        let out = compile(&m, &m.funcs[0].name, Target::Cpu).unwrap().run(&inputs).unwrap();
        let want = &common::tensors(&model(name), "output")[0];
        let e = common::excess(&out[0].data, &want.data, 1e-4, 1e-5).unwrap();
        assert_eq!(e, 0.0, "{name}: cpu output differs from onnxruntime's by {e:e} beyond tolerance");
    }
}

/// float16 and bfloat16 models (test/onnx/gen_lowp_models.py): their
/// initializers become f32 parameters cast to the model's type, and the
/// output matches the reference (onnxruntime's float16 kernels; numpy with
/// ml_dtypes for bfloat16, which onnxruntime's CPU provider lacks) within
/// low-precision tolerance on the interpreter and on cpu.
#[test]
fn low_precision_models_match_their_references_on_interp_and_cpu() {
    for (name, dt) in [("mlp_f16", ckopt::DType::F16), ("mlp_bf16", ckopt::DType::BF16)] {
        let (m, params) = import_onnx(model(name).join("model.onnx"), ImportOptions::default()).unwrap();
        let f = &m.funcs[0];
        let mm: Vec<_> = f.body.iter().filter(|o| o.kind == ckopt::OpKind::Matmul).collect();
        assert!(mm.len() == 2 && mm.iter().all(|o| f.ty(o.result.unwrap()).dtype == dt), "{name}: the MatMuls compute in {}", dt.name());
        assert!(params.len() == 4 && f.params[1..].iter().all(|p| f.ty(p.value).dtype == ckopt::DType::F32), "{name}: f32 parameters");
        let mut inputs: Vec<Tensor> = common::typed_tensors(&model(name), "input").into_iter().map(typed).collect();
        inputs.extend(params_tensors(&params).unwrap());
        let want = common::typed_tensors(&model(name), "output").remove(0);
        for target in [Target::Interp, Target::Cpu] {
            let out = compile(&m, &f.name, target).unwrap().run(&inputs).unwrap();
            let e = common::compare(out[0].dtype, &out[0].data, &out[0].ints, &want, 1e-2, 1e-2).unwrap();
            assert_eq!(e, 0.0, "{name} on {target:?}: output differs from the reference by {e:e} beyond tolerance");
        }
    }
}

#[test]
fn sqrt_remat_training_on_cpu_gives_the_losses_without_remat() {
    for name in ["cnn", "transformer", "mbv3"] {
        let (m, params) = import_onnx(model(name).join("model.onnx"), opts(name, Loss::Mse)).unwrap();
        let fname = m.funcs[0].name.clone();
        let x = tensor(&common::tensors(&model(name), "input")[0]);
        let t_ty = m.funcs[0].ty(m.funcs[0].params[1].value).clone();
        let n = t_ty.elems() as usize;
        let target = Tensor::new(t_ty.shape.iter().map(|&d| d as usize).collect(), (0..n).map(|i| (i % 3) as f32 * 0.5 - 0.5).collect()).unwrap();
        let mut args = vec![x, target];
        args.extend(params_tensors(&params).unwrap());
        let mut runs = Vec::new();
        for pipeline in ["autodiff", "autodiff,remat{mode=sqrt}"] {
            let mut mm = m.clone();
            optimize(&mut mm, pipeline).unwrap();
            let mut t = ckopt::Trainer::new(&mm, &fname, Target::Cpu, 0.05).unwrap();
            t.load(&args).unwrap();
            runs.push((0..3).map(|_| t.step().unwrap()).collect::<Vec<f32>>());
        }
        for (a, b) in runs[0].iter().zip(&runs[1]) {
            assert!((a - b).abs() <= 1e-5 * a.abs().max(1e-3), "{name}: losses {:?} vs {:?}", runs[0], runs[1]);
        }
        assert!(runs[0][2] < runs[0][0], "{name}: the loss does not fall: {:?}", runs[0]);
    }
}

const GPTS: [&str; 4] = ["gpt_ts", "gpt_dynamo", "gpt_loss_ts", "gpt_loss_dynamo"];

/// The model's inputs (typed: i64 token ids and labels) followed by its parameters.
fn gpt_inputs(name: &str, params: &ckopt::Params) -> Vec<Tensor> {
    let mut inputs: Vec<Tensor> = common::typed_tensors(&model(name), "input").into_iter().map(typed).collect();
    inputs.extend(params_tensors(params).unwrap());
    inputs
}

#[test]
fn exported_gpts_match_onnxruntime_on_cpu() {
    for name in GPTS {
        let (m, params) = import_onnx(model(name).join("model.onnx"), opts(name, Loss::None)).unwrap();
        let out = compile(&m, &m.funcs[0].name, Target::Cpu).unwrap().run(&gpt_inputs(name, &params)).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = &common::tensors(&model(name), "output")[0];
        assert_eq!(out[0].shape, want.shape.iter().map(|&d| d as usize).collect::<Vec<_>>(), "{name}");
        let e = common::excess(&out[0].data, &want.data, 1e-4, 1e-5).unwrap();
        assert_eq!(e, 0.0, "{name}: cpu output differs from onnxruntime's by {e:e} beyond tolerance");
    }
}

#[test]
fn gpt_loss_gradient_on_cpu_is_bit_identical_under_every_remat_mode_and_trains() {
    for name in ["gpt_loss_ts", "gpt_loss_dynamo"] {
        let (m, params) = import_onnx(model(name).join("model.onnx"), opts(name, Loss::None)).unwrap();
        let fname = m.funcs[0].name.clone();
        let grad = format!("{fname}_grad");
        let inputs = gpt_inputs(name, &params);
        let bits = |ts: &[Tensor]| -> Vec<Vec<u32>> { ts.iter().map(|t| t.data.iter().map(|v| v.to_bits()).collect()).collect() };
        let mut reference = None;
        for pipeline in ["autodiff,inplace,fuse", "autodiff,inplace,fuse,remat{mode=sqrt}", "autodiff,inplace,fuse,remat{mode=greedy}", "autodiff,inplace,fuse,remat{mode=log}"] {
            let mut mm = m.clone();
            optimize(&mut mm, pipeline).unwrap();
            let got = compile(&mm, &grad, Target::Cpu).unwrap().run(&inputs).unwrap_or_else(|e| panic!("{name} {pipeline}: {e}"));
            match &reference {
                None => reference = Some(bits(&got)),
                Some(r) => assert_eq!(&bits(&got), r, "{name}: {pipeline}: the cpu gradient differs from no remat's"),
            }
        }
        // Training on cpu: the loss falls over 5 SGD steps, the same with and without sqrt remat.
        let mut runs = Vec::new();
        for pipeline in ["autodiff", "autodiff,remat{mode=sqrt}"] {
            let mut mm = m.clone();
            optimize(&mut mm, pipeline).unwrap();
            let mut t = ckopt::Trainer::new(&mm, &fname, Target::Cpu, 0.1).unwrap();
            t.load(&inputs).unwrap();
            runs.push((0..5).map(|_| t.step().unwrap()).collect::<Vec<f32>>());
        }
        assert_eq!(runs[0], runs[1], "{name}: sqrt remat changed the cpu losses");
        assert!(runs[0][4] < runs[0][0], "{name}: the loss does not fall: {:?}", runs[0]);
        eprintln!("{name} on cpu: losses {:?}", runs[0]);
    }
}
