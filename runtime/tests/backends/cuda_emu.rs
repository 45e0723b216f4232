//! The cuda path without a GPU: the generated cuda kernels, run by the CPU
//! emulation (`ckopt_runtime::cuda::emu`) through the same executor and
//! step programs as on a device, against the interpreter (1e-4 relative):
//! every op, every generated model (forward, gradient and training step;
//! with and without fusion and remat), the reduction schemes, and training
//! with resident parameters (no argument copied in after the first step).

use ckopt_interp::{StepExec, Tensor, random_inputs, run_func};
use ckopt_ir::{Func, Module};
use ckopt_lower::testcases::{close, naive_plan, op_cases};
use ckopt_models::ModelKind;
use ckopt_runtime::{CudaExecutor, emulated_module};
use super::common::{KINDS, planned};

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
    for kind in KINDS {
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
