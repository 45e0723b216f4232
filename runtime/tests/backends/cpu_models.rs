//! Whole models on the cpu backend: every generated model's loss and
//! gradients (and training step) against the interpreter, with and without
//! fusion and remat; gradients bit-identical across remat modes on the cpu
//! backend itself; the same bits run to run.

use ckopt_interp::{Tensor, random_inputs, run_func};
use ckopt_ir::Module;
use ckopt_lower::testcases::close;
use ckopt_models::ModelKind;
use ckopt_runtime::CpuExecutor;
use super::common::{KINDS, planned};

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
    for kind in KINDS {
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
    for kind in KINDS {
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
