//! The cuda path without a GPU: the generated cuda kernels, run by the CPU
//! emulation (`ckopt_runtime::cuda::emu`) through the same executor and
//! step programs as on a device, against the interpreter (1e-4 relative):
//! every op, every generated model (forward, gradient and training step;
//! with and without fusion and remat), the reduction schemes, and training
//! with resident parameters (no argument copied in after the first step);
//! the mixed element-type ops (bit for bit where the cpu backend is), the
//! gpt language model's training steps and a bf16 (autocast) resmlp step.

use ckopt_interp::{StepExec, Tensor, random_inputs, run_func};
use ckopt_ir::{Func, Module};
use ckopt_lower::testcases::{close, naive_plan, op_cases};
use ckopt_models::ModelKind;
use ckopt_runtime::{CudaExecutor, emulated_module};
use super::common::{CPU_KINDS, planned};

fn emu(funcs: &[&Func], func: &str, inputs: &[Tensor]) -> Result<(Vec<Tensor>, CudaExecutor), String> {
    let m = emulated_module(funcs).map_err(|d| d.message)?;
    let mut e = CudaExecutor::new(m, func)?;
    for (i, t) in inputs.iter().enumerate() {
        e.set_arg(i, t)?;
    }
    e.run()?;
    let out = (0..e.program().results.len()).map(|j| e.result(j)).collect::<Result<Vec<_>, _>>()?;
    Ok((out, e))
}

#[test]
fn every_op_on_emulated_cuda_matches_the_interpreter() {
    let mut failures = Vec::new();
    for mut f in op_cases() {
        naive_plan(&mut f);
        let inputs = random_inputs(&f, 7);
        let module = Module { funcs: vec![f.clone()] };
        let want = run_func(&module, &f.name, &inputs).expect("interp runs");
        match emu(&[&f], &f.name, &inputs) {
            Ok((got, _)) => {
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    if let Err(e) = close(&g.data, &w.data) {
                        failures.push(format!("@{} result {k}: {e}", f.name));
                    }
                }
            }
            Err(e) => failures.push(format!("@{}: {e}", f.name)),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn small(kind: ModelKind) -> Module {
    super::common::small(kind, super::common::Sizes { depth: 2, width: 24, batch: 5, seq: 3, image: 6 })
}

#[test]
fn models_on_emulated_cuda_match_the_interpreter() {
    let mut failures = Vec::new();
    for kind in CPU_KINDS {
        let m = small(kind);
        let name = kind.name();
        for pipeline in ["autodiff,memplan", "autodiff,inplace,sgd{lr=0.05},fuse,remat{mode=sqrt},memplan"] {
            let p = planned(&m, pipeline);
            let funcs: Vec<&Func> = p.funcs.iter().collect();
            for func in [name.to_string(), format!("{name}_grad"), format!("{name}_step")] {
                let Some(f) = p.func(&func) else { continue };
                let inputs = random_inputs(f, 3);
                let want = run_func(&p, &func, &inputs).expect("interp");
                match emu(&funcs, &func, &inputs) {
                    Ok((got, _)) => {
                        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                            if let Err(e) = close(&g.data, &w.data) {
                                failures.push(format!("{pipeline} @{func} result {k}: {e}"));
                            }
                        }
                    }
                    Err(e) => failures.push(format!("{pipeline} @{func}: {e}")),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Long rows (two stages), many rows (one block each), columns in one and
/// two stages, max and sum, with prologue and epilogue ops fused in.
#[test]
fn reduction_schemes_on_emulated_cuda_match_the_interpreter() {
    let text = r#"
module {
  func.func @r(%x: tensor<3x5000xf32>, %y: tensor<300x40xf32>, %z: tensor<200x70xf32>, %w: tensor<2x33x9xf32>) -> (tensor<3xf32>, tensor<300xf32>, tensor<70xf32>, tensor<33xf32>, tensor<f32>) {
    %e = "ck.exp"(%x) : (tensor<3x5000xf32>) -> tensor<3x5000xf32>
    %s = "ck.reduce_sum"(%e) {dims = [1]} : (tensor<3x5000xf32>) -> tensor<3xf32>
    %l = "ck.log"(%s) : (tensor<3xf32>) -> tensor<3xf32>
    %m = "ck.reduce_max"(%y) {dims = [1]} : (tensor<300x40xf32>) -> tensor<300xf32>
    %sq = "ck.mul"(%z, %z) : (tensor<200x70xf32>, tensor<200x70xf32>) -> tensor<200x70xf32>
    %c = "ck.reduce_sum"(%sq) {dims = [0]} : (tensor<200x70xf32>) -> tensor<70xf32>
    %d = "ck.reduce_sum"(%w) {dims = [0, 2]} : (tensor<2x33x9xf32>) -> tensor<33xf32>
    %a = "ck.reduce_sum"(%sq) {dims = [0, 1]} : (tensor<200x70xf32>) -> tensor<f32>
    "ck.return"(%l, %m, %c, %d, %a) : (tensor<3xf32>, tensor<300xf32>, tensor<70xf32>, tensor<33xf32>, tensor<f32>) -> ()
  }
}"#;
    let m = ckopt_ir::parse_and_verify(text, "r.ck").expect("parses");
    for pipeline in ["memplan", "fuse,memplan"] {
        let p = planned(&m, pipeline);
        let f = p.func("r").expect("r");
        let inputs = random_inputs(f, 11);
        let want = run_func(&p, "r", &inputs).expect("interp");
        let (got, _) = emu(&[f], "r", &inputs).unwrap_or_else(|e| panic!("{pipeline}: {e}"));
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            close(&g.data, &w.data).unwrap_or_else(|e| panic!("{pipeline} result {k}: {e}"));
        }
        // The same bits run to run (no atomics, fixed orders).
        let (again, _) = emu(&[f], "r", &inputs).expect("runs");
        assert_eq!(got, again, "{pipeline}: deterministic");
    }
}

/// Training on the cuda executor: losses equal the interpreter's step for
/// step; after the first step nothing but the 4-byte step key (none here)
/// and the 4-byte hyperparameter inputs is copied to the device.
#[test]
fn training_keeps_parameters_resident_and_matches_the_interpreter() {
    let m = small(ModelKind::Resmlp);
    let p = planned(&m, "autodiff,inplace,sgd{lr=0.05 momentum=0.9},fuse,remat{mode=sqrt},memplan");
    let mut sig = p.clone();
    let sig = ckopt_passes::train::prepare(&mut sig, "resmlp", &Default::default()).expect("step function");
    let s = p.func(&sig.step_func).expect("step");
    let loss_f = p.func("resmlp").expect("loss");
    let inputs = random_inputs(loss_f, 4);
    let args = ckopt_passes::train::initial_args(s, &sig, &inputs);
    let mut interp = ckopt_interp::InterpExec::new(p.clone(), &sig.step_func, args.clone()).expect("interp");
    let want = ckopt_passes::train::train_loop(&mut interp, &sig, 4, &ckopt_passes::train::Hyper::lr(0.05), |_, _, _| {}).expect("interp trains");
    let module = emulated_module(&[s]).expect("compiles");
    let mut e = CudaExecutor::new(module, &sig.step_func).expect("executor");
    for (i, t) in args.iter().enumerate() {
        e.set_arg(i, t).expect("set");
    }
    let got = ckopt_passes::train::train_loop(&mut e, &sig, 4, &ckopt_passes::train::Hyper::lr(0.05), |_, _, _| {}).expect("emulated cuda trains");
    close(&got.losses, &want.losses).unwrap_or_else(|err| panic!("losses {:?} vs {:?}: {err}", got.losses, want.losses));
    let rep = e.report();
    // Only the rank-0 hyperparameter inputs (lr, momentum: 4 bytes each) cross per step.
    assert_eq!(rep.h2d_bytes_per_step, Some(4 * sig.hypers.len() as u64), "parameters and momentum stay on the device");
    assert_eq!(rep.steps, 4);
    for (i, w) in want.args.iter().enumerate() {
        let g = StepExec::arg(&e, i).expect("arg");
        close(&g.data, &w.data).unwrap_or_else(|err| panic!("argument {i} after training: {err}"));
    }
}

/// Whether `g` and `w` are equal bit for bit (NaN equal to NaN), or, when
/// `tol > 0`, within `tol` relative (1 below 1).
fn same(g: &Tensor, w: &Tensor, tol: f32) -> Result<(), String> {
    if g.dtype != w.dtype || g.shape != w.shape || g.ints != w.ints || g.data.len() != w.data.len() {
        return Err(format!("{} {:?} {:?} vs {} {:?} {:?}", g.dtype.name(), g.shape, g.ints, w.dtype.name(), w.shape, w.ints));
    }
    for (i, (a, b)) in g.data.iter().zip(&w.data).enumerate() {
        let ok = a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()) || (tol > 0.0 && (a - b).abs() <= tol * b.abs().max(1.0));
        if !ok {
            return Err(format!("element {i}: got {a:e}, interp {b:e} (tolerance {tol})"));
        }
    }
    Ok(())
}

/// The mixed element-type cases of the cpu tests (`mixed_op_cases`:
/// indexing and the scatter-add gradients, comparisons, logic, select, the
/// 36 casts, iota, cross_entropy and its gradient, integer and bf16/f16
/// arithmetic) on emulated cuda: the interpreter's bits, as on the cpu,
/// except where cuda sums in another order than the cpu: reductions (the
/// block tree) and GEMMs (the fallback kernel), within 1e-2 relative in
/// bf16/f16 and 1e-4 in f32.
#[test]
fn mixed_ops_on_emulated_cuda_match_the_interpreter() {
    use ckopt_ir::OpKind;
    use ckopt_lower::testcases::{is_lowp_conv, mixed_op_cases};
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut exact = 0;
    for mut f in mixed_op_cases() {
        naive_plan(&mut f);
        let sums = f.body.iter().any(|o| matches!(o.kind, OpKind::ReduceSum | OpKind::ReduceMax | OpKind::Matmul));
        let lowp = f.body.iter().any(|o| o.result.is_some_and(|r| matches!(f.ty(r).dtype, ckopt_ir::DType::BF16 | ckopt_ir::DType::F16)));
        let tol = if !sums { 0.0 } else if lowp { 1e-2 } else { 1e-4 };
        let lowp_conv = is_lowp_conv(&f);
        let m = match emulated_module(&[&f]) {
            Err(e) if lowp_conv => {
                // cuda refuses bf16/f16 convolutions at the op (cpu computes them).
                assert!(e.to_string().contains("convolutions are f32 on cuda"), "@{}: {e}", f.name);
                continue;
            }
            Ok(_) if lowp_conv => {
                failures.push(format!("@{}: a bf16/f16 convolution was accepted by the cuda lowering", f.name));
                continue;
            }
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("@{}: {e}", f.name));
                continue;
            }
        };
        for seed in [3u64, 8] {
            let inputs = super::cpu_ops::mixed_inputs(&f, seed);
            let module = Module { funcs: vec![f.clone()] };
            let want = run_func(&module, &f.name, &inputs).unwrap_or_else(|e| panic!("@{}: interp: {e}", f.name));
            let got = (|| -> Result<Vec<Tensor>, String> {
                let mut e = CudaExecutor::new(m.clone(), &f.name)?;
                for (i, t) in inputs.iter().enumerate() {
                    e.set_arg(i, t)?;
                }
                e.run()?;
                (0..want.len()).map(|j| e.result(j).map_err(|e| e.to_string())).collect()
            })();
            match got {
                Ok(got) => {
                    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                        if let Err(e) = same(g, w, tol) {
                            failures.push(format!("@{} seed {seed} result {k}: {e}", f.name));
                        }
                    }
                }
                Err(e) => failures.push(format!("@{} seed {seed}: {e}", f.name)),
            }
            checked += 1;
            exact += usize::from(tol == 0.0);
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    assert!(checked >= 2 * 70 && exact >= 2 * 60, "checked {checked}, {exact} bit for bit");
}

/// Out-of-range indices on cuda: the kernels clamp (docs/cuda.md): an
/// index outside `[0, n)` reads element 0 of the axis in gather and
/// take_along, and a label outside `[0, C)` counts as class 0 in
/// cross_entropy, never a read outside the buffers.
#[test]
fn out_of_range_indices_are_clamped_on_cuda() {
    use ckopt_lower::testcases::mixed_op_cases;
    for (name, arg, pos, bad) in [("gather_i64", 1usize, 2usize, 9i64), ("take_along", 1, 3, 4), ("cross_entropy", 1, 3, 5)] {
        let mut f = mixed_op_cases().into_iter().find(|f| f.name == name).expect("case");
        naive_plan(&mut f);
        let mut inputs = super::cpu_ops::mixed_inputs(&f, 3);
        let mut clamped = inputs.clone();
        inputs[arg].ints[pos] = bad;
        clamped[arg].ints[pos] = 0;
        let module = Module { funcs: vec![f.clone()] };
        let want = run_func(&module, &f.name, &clamped).expect("interp");
        let (got, _) = emu(&[&f], &f.name, &inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        same(&got[0], &want[0], 0.0).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// `ckopt-gen gpt` (token and position embeddings, causal attention,
/// integer labels with one ignored position) trains on emulated cuda: 4
/// SGD steps on a fixed batch, each step's loss within 1e-4 relative of
/// the interpreter's step from the same parameters, and the loss falls.
#[test]
fn gpt_trains_on_emulated_cuda_as_on_the_interpreter() {
    use ckopt_models::{GenOptions, generate};
    let o = GenOptions { depth: Some(2), width: Some(16), heads: Some(2), seq: Some(8), vocab: Some(11), batch: Some(2), ..Default::default() };
    let m = generate(ModelKind::Gpt, &o).expect("generates");
    let p = planned(&m, "autodiff,sgd{lr=0.5},inplace,fuse,remat{mode=sqrt},memplan");
    let f = p.func("gpt_step").expect("step");
    let mut a = random_inputs(f, 5);
    for (i, q) in f.params.iter().enumerate() {
        if let Some(ckopt_ir::Attr::F32(d)) = q.attrs.get(ckopt_ir::ops::ATTR_HYPER_DEFAULT) {
            a[i] = Tensor::scalar(*d);
        }
    }
    let ids: Vec<i64> = (0..16).map(|i| [1, 4, 7][i % 3] + (i / 8) as i64).collect();
    let mut labels: Vec<i64> = (0..16).map(|i| if i % 8 == 7 { -100 } else { ids[i + 1] }).collect();
    labels[15] = -100;
    a[0] = Tensor::from_ints(vec![2, 8], ckopt_ir::DType::I64, ids).expect("ids");
    a[1] = Tensor::from_ints(vec![2, 8], ckopt_ir::DType::I64, labels).expect("labels");
    let trained = m.func("gpt").expect("gpt").trainable_indices();
    let module = emulated_module(&[f]).unwrap_or_else(|e| panic!("{e}"));
    let mut e = CudaExecutor::new(module, "gpt_step").expect("executor");
    let mut losses = Vec::new();
    for step in 0..4 {
        let want = run_func(&p, "gpt_step", &a).unwrap_or_else(|d| panic!("interp step {step}: {d}"));
        for (i, t) in a.iter().enumerate() {
            e.set_arg(i, t).expect("set");
        }
        e.run().unwrap_or_else(|d| panic!("step {step}: {d}"));
        let out: Vec<Tensor> = (0..want.len()).map(|j| e.result(j).expect("result")).collect();
        let (g, w) = (out[0].data[0], want[0].data[0]);
        assert!((g - w).abs() <= 1e-4 * w.abs(), "step {step}: emulated cuda loss {g}, interp {w}");
        for (k, (o, wt)) in out.iter().zip(&want).enumerate().skip(1) {
            close(&o.data, &wt.data).unwrap_or_else(|err| panic!("step {step} result {k}: {err}"));
        }
        losses.push(g);
        for (k, &i) in trained.iter().enumerate() {
            a[i] = out[1 + k].clone();
        }
    }
    eprintln!("gpt on emulated cuda: losses {losses:?}");
    assert!(losses[3] < losses[0], "the loss falls: {losses:?}");
}

/// A bf16 training step (`autocast{dtype=bf16}`: bf16 activations and GEMM
/// operands through the bf16 fallback GEMM kernel, f32 masters) of resmlp
/// on emulated cuda: loss and updated parameters within 1e-2 relative of
/// the interpreter's bf16 step.
#[test]
fn bf16_resmlp_step_on_emulated_cuda_matches_the_interpreter() {
    use ckopt_models::{GenOptions, generate};
    let o = GenOptions { depth: Some(4), width: Some(32), batch: Some(8), ..Default::default() };
    let m = generate(ModelKind::Resmlp, &o).expect("generates");
    let p = planned(&m, "autocast{dtype=bf16},autodiff,inplace,sgd,fuse,remat{mode=sqrt},memplan");
    let f = p.func("resmlp_step").expect("step");
    assert!(f.values.iter().any(|v| v.ty.dtype == ckopt_ir::DType::BF16), "autocast made bf16 values");
    let mut a = random_inputs(f, 4);
    for (i, q) in f.params.iter().enumerate() {
        if let Some(ckopt_ir::Attr::F32(d)) = q.attrs.get(ckopt_ir::ops::ATTR_HYPER_DEFAULT) {
            a[i] = Tensor::scalar(*d);
        }
    }
    let want = run_func(&p, "resmlp_step", &a).expect("interp");
    let (got, e) = emu(&[f], "resmlp_step", &a).unwrap_or_else(|e| panic!("{e}"));
    let (g, w) = (got[0].data[0], want[0].data[0]);
    assert!((g - w).abs() <= 1e-2 * w.abs(), "loss: emulated cuda {g}, interp {w}");
    for (k, (o, wt)) in got.iter().zip(&want).enumerate() {
        for (x, y) in o.data.iter().zip(&wt.data) {
            assert!((x - y).abs() <= 1e-2 * y.abs().max(1.0), "result {k}: {x} vs {y}");
        }
    }
    let bf16_gemms = e
        .program()
        .steps
        .iter()
        .filter(|s| matches!(s, ckopt_kernels::Step::Gemm { gemm, .. } if gemm.dtypes == [ckopt_ir::DType::BF16; 3]))
        .count();
    assert!(bf16_gemms >= 8, "bf16 GEMMs (ck_lib_gemm_bf16 in the emulation): {bf16_gemms}");
}
