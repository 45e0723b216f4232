//! Whole models on the cpu backend: every generated model's loss and
//! gradients (and training step) against the interpreter, with and without
//! fusion and remat; gradients bit-identical across remat modes on the cpu
//! backend itself; the same bits run to run.

use ckopt_interp::{Tensor, random_inputs, run_func};
use ckopt_ir::Module;
use ckopt_lower::testcases::close;
use ckopt_models::ModelKind;
use ckopt_runtime::CpuExecutor;
use super::common::{CPU_KINDS, planned};

fn small(kind: ModelKind) -> Module {
    super::common::small(kind, super::common::Sizes { depth: 3, width: 24, batch: 5, seq: 3, image: 8 })
}

fn cpu(m: &Module, func: &str, inputs: &[Tensor]) -> Vec<Tensor> {
    let f = m.func(func).expect("function");
    let mut e = CpuExecutor::new(f).unwrap_or_else(|e| panic!("@{func}: {e}"));
    e.step(inputs).unwrap_or_else(|e| panic!("@{func}: {e}"))
}

fn bits(ts: &[Tensor]) -> Vec<Vec<u32>> {
    ts.iter().map(|t| t.data.iter().map(|v| v.to_bits()).collect()).collect()
}

#[test]
fn models_match_the_interpreter_with_fusion_and_remat() {
    for kind in CPU_KINDS {
        let m = small(kind);
        let name = kind.name();
        for pipeline in ["autodiff,memplan", "autodiff,inplace,fuse,memplan", "autodiff,inplace,fuse,remat{mode=sqrt},memplan"] {
            let p = planned(&m, pipeline);
            for func in [name.to_string(), format!("{name}_grad")] {
                let f = p.func(&func).expect("function");
                let inputs = random_inputs(f, 3);
                let want = run_func(&p, &func, &inputs).expect("interp");
                let got = cpu(&p, &func, &inputs);
                for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                    close(&g.data, &w.data).unwrap_or_else(|e| panic!("{pipeline} @{func} result {k}: {e}"));
                }
            }
        }
    }
}

#[test]
fn remat_modes_give_bit_identical_gradients_on_cpu() {
    for kind in CPU_KINDS {
        let m = small(kind);
        let g = format!("{}_grad", kind.name());
        let base = planned(&m, "autodiff,inplace,fuse,memplan");
        let inputs = random_inputs(base.func(&g).expect("grad"), 5);
        let want = cpu(&base, &g, &inputs);
        assert_eq!(bits(&want), bits(&cpu(&base, &g, &inputs)), "{kind:?}: run to run");
        for mode in ["sqrt", "log", "greedy"] {
            let p = planned(&m, &format!("autodiff,inplace,fuse,remat{{mode={mode}}},memplan"));
            assert_eq!(bits(&cpu(&p, &g, &inputs)), bits(&want), "{kind:?} remat{{mode={mode}}}");
        }
    }
}

#[test]
fn training_step_matches_the_interpreter() {
    for kind in [ModelKind::Mlp, ModelKind::Resmlp, ModelKind::Resnet] {
        let m = small(kind);
        let s = format!("{}_step", kind.name());
        for pipeline in ["autodiff,inplace,sgd{lr=0.05},fuse,memplan", "autodiff,inplace,sgd{lr=0.05 momentum=0.9},fuse,remat{mode=sqrt},memplan"] {
            let p = planned(&m, pipeline);
            let f = p.func(&s).expect("step");
            let inputs = random_inputs(f, 9);
            let want = run_func(&p, &s, &inputs).expect("interp");
            let got = cpu(&p, &s, &inputs);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                close(&g.data, &w.data).unwrap_or_else(|e| panic!("{pipeline} @{s} result {k}: {e}"));
            }
        }
    }
}

/// The gpt language model trains on the cpu backend: 20 SGD steps on one
/// fixed batch of token ids and next-token labels (one position ignored,
/// -100), each loss within 1e-5 relative of the interpreter's step from the
/// same parameters, the loss falling well below its start; the step planned
/// with `remat{mode=sqrt}` gives bit-identical losses and parameters on the
/// cpu.
#[test]
fn gpt_trains_on_cpu_as_on_the_interpreter_and_remat_is_bit_identical() {
    use ckopt_models::{GenOptions, generate};
    let o = GenOptions { depth: Some(2), width: Some(16), heads: Some(2), seq: Some(8), vocab: Some(11), batch: Some(2), ..Default::default() };
    let m = generate(ModelKind::Gpt, &o).expect("generates");
    let plain = planned(&m, "autodiff,sgd{lr=0.5},inplace,fuse,memplan");
    let remat = planned(&m, "autodiff,sgd{lr=0.5},inplace,fuse,remat{mode=sqrt},memplan");
    let fp = plain.func("gpt_step").expect("step");
    let fr = remat.func("gpt_step").expect("step");
    let mut inputs = random_inputs(fp, 5);
    // The hyperparameter inputs at their defaults (lr 0.5), not random.
    for (i, p) in fp.params.iter().enumerate() {
        if let Some(ckopt_ir::Attr::F32(d)) = p.attrs.get(ckopt_ir::ops::ATTR_HYPER_DEFAULT) {
            inputs[i] = Tensor::scalar(*d);
        }
    }
    // A repeating sequence (period 3) the model can learn: labels are the next token.
    let ids: Vec<i64> = (0..16).map(|i| [1, 4, 7][i % 3] + (i / 8) as i64).collect();
    let mut labels: Vec<i64> = (0..16).map(|i| if i % 8 == 7 { -100 } else { ids[i + 1] }).collect();
    labels[15] = -100;
    inputs[0] = Tensor::from_ints(vec![2, 8], ckopt_ir::DType::I64, ids).expect("ids");
    inputs[1] = Tensor::from_ints(vec![2, 8], ckopt_ir::DType::I64, labels).expect("labels");
    let trained = m.func("gpt").expect("gpt").trainable_indices();
    let mut ep = CpuExecutor::new(fp).unwrap_or_else(|e| panic!("{e}"));
    let mut er = CpuExecutor::new(fr).unwrap_or_else(|e| panic!("{e}"));
    let (mut a, mut b) = (inputs.clone(), inputs);
    let mut losses = Vec::new();
    for step in 0..20 {
        let want = run_func(&plain, "gpt_step", &a).unwrap_or_else(|d| panic!("interp step {step}: {d}"));
        let oa = ep.step(&a).unwrap_or_else(|d| panic!("cpu step {step}: {d}"));
        let ob = er.step(&b).unwrap_or_else(|d| panic!("cpu remat step {step}: {d}"));
        assert_eq!(bits(&oa), bits(&ob), "step {step}: remat{{mode=sqrt}} changed the cpu step");
        let (g, w) = (oa[0].data[0], want[0].data[0]);
        assert!((g - w).abs() <= 1e-5 * w.abs(), "step {step}: cpu loss {g}, interp {w}");
        losses.push(g);
        for (k, &i) in trained.iter().enumerate() {
            a[i] = oa[1 + k].clone();
            b[i] = ob[1 + k].clone();
        }
    }
    let (first, last) = (losses[0], losses[19]);
    eprintln!("gpt on cpu, fixed batch: loss {first} -> {last} in 20 SGD steps");
    assert!(first > 2.0, "starts near ln(11) = 2.40: {first}");
    assert!(last < 0.5 * first, "loss {first} -> {last} over 20 steps: {losses:?}");
}

/// Mixed precision on the cpu backend (`autocast{dtype=bf16}`: bf16
/// activations and GEMM operands, f32 masters): resmlp depth 8 width 64
/// batch 32 trained 30 SGD steps ends within 5% of the f32 loss; every bf16
/// step's loss is within 1e-2 relative of the interpreter's bf16 step from
/// the same parameters; the bf16 step under `remat{mode=sqrt}` gives the
/// same bits as without remat on the cpu.
#[test]
fn bf16_resmlp_trains_on_cpu_within_5_percent_of_f32_and_remat_is_bit_identical() {
    use ckopt_models::{GenOptions, generate};
    let o = GenOptions { depth: Some(8), width: Some(64), batch: Some(32), ..Default::default() };
    let m = generate(ModelKind::Resmlp, &o).expect("generates");
    let train = |pipeline: &str, check_interp: bool| -> (Vec<f32>, Vec<Vec<Vec<u32>>>) {
        let p = planned(&m, pipeline);
        let f = p.func("resmlp_step").expect("step");
        let mut a = random_inputs(f, 4);
        for (i, q) in f.params.iter().enumerate() {
            if let Some(ckopt_ir::Attr::F32(d)) = q.attrs.get(ckopt_ir::ops::ATTR_HYPER_DEFAULT) {
                a[i] = Tensor::scalar(*d);
            }
        }
        let trained = m.func("resmlp").expect("resmlp").trainable_indices();
        let mut e = CpuExecutor::new(f).unwrap_or_else(|e| panic!("{pipeline}: {e}"));
        let (mut losses, mut outs) = (Vec::new(), Vec::new());
        for step in 0..30 {
            let o = e.step(&a).unwrap_or_else(|d| panic!("{pipeline} step {step}: {d}"));
            if check_interp && step % 10 == 0 {
                let w = run_func(&p, "resmlp_step", &a).expect("interp")[0].data[0];
                assert!((o[0].data[0] - w).abs() <= 1e-2 * w.abs(), "{pipeline} step {step}: cpu {} interp {w}", o[0].data[0]);
            }
            losses.push(o[0].data[0]);
            for (k, &i) in trained.iter().enumerate() {
                a[i] = o[1 + k].clone();
            }
            outs.push(bits(&o));
        }
        (losses, outs)
    };
    let (f32_losses, _) = train("autodiff,inplace,sgd,fuse,memplan", false);
    let (bf16_losses, bf16_bits) = train("autocast{dtype=bf16},autodiff,inplace,sgd,fuse,memplan", true);
    let (_, remat_bits) = train("autocast{dtype=bf16},autodiff,inplace,sgd,fuse,remat{mode=sqrt},memplan", false);
    assert_eq!(bf16_bits, remat_bits, "bf16: remat{{mode=sqrt}} changed the cpu steps");
    let (a, b) = (f32_losses[29], bf16_losses[29]);
    eprintln!("resmlp 30 steps on cpu: f32 {} -> {a}, bf16 {} -> {b}", f32_losses[0], bf16_losses[0]);
    assert!(a < 0.5 * f32_losses[0], "f32 does not train: {f32_losses:?}");
    assert!((a - b).abs() <= 0.05 * a, "bf16 ends at {b}, f32 at {a}");
}
