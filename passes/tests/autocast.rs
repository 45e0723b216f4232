//! The `autocast` pass: which ops run low, where the casts go, what it does
//! to the gradient (interp oracle against the f32 gradient) and to the plan.

use ckopt_interp::{random_inputs, run_func};
use ckopt_ir::ops::ATTR_MIRROR;
use ckopt_ir::{DType, Module, OpKind, verify_module};
use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::PassManager;
use ckopt_passes::analysis::report::memory_report;

fn model(kind: ModelKind, depth: u64, width: u64, batch: u64) -> Module {
    let mut o = GenOptions::default();
    o.depth = Some(depth);
    o.width = Some(width);
    o.batch = Some(batch);
    generate(kind, &o).expect("generates")
}

fn run(m: &Module, pipeline: &str) -> Module {
    let mut m = m.clone();
    PassManager::parse(pipeline).expect("pipeline").run(&mut m).unwrap_or_else(|e| panic!("{pipeline}: {e}"));
    m
}

/// On the mlp: matmuls, bias adds and relus compute in bf16; each weight
/// and bias is cast once, on the parameter itself (before the broadcast),
/// marked ck.mirror; the loss stays f32; signature and result types unchanged.
#[test]
fn mlp_runs_low_between_matmuls_and_keeps_the_loss_f32() {
    let m = model(ModelKind::Mlp, 3, 16, 4);
    let a = run(&m, "autocast{dtype=bf16}");
    verify_module(&a).expect("verifies");
    let (f0, f) = (m.func("mlp").unwrap(), a.func("mlp").unwrap());
    assert_eq!(f.result_types, f0.result_types);
    assert_eq!(f.params.len(), f0.params.len());
    for op in &f.body {
        let Some(r) = op.result else { continue };
        match op.kind {
            OpKind::Matmul | OpKind::Relu | OpKind::Add => assert_eq!(f.ty(r).dtype, DType::BF16, "{:?}", op.kind),
            OpKind::ReduceSum => assert_eq!(f.ty(r).dtype, DType::F32),
            OpKind::Cast => {
                let src = op.operands[0];
                if f.ty(r).dtype == DType::BF16 && f.trainable_indices().iter().any(|&i| f.params[i].value == src) {
                    assert!(op.has_attr(ATTR_MIRROR), "parameter casts are mirror");
                }
            }
            _ => {}
        }
    }
    // Each of the 3 weights and 3 biases is cast once; no cast reads a broadcast.
    let casts: Vec<_> = f.body.iter().filter(|o| o.kind == OpKind::Cast).collect();
    let trainable: Vec<_> = f.trainable_indices().iter().map(|&i| f.params[i].value).collect();
    assert_eq!(casts.iter().filter(|c| trainable.contains(&c.operands[0])).count(), 6, "each parameter cast once");
    let defs = f.def_index();
    assert!(casts.iter().all(|c| defs.get(&c.operands[0]).is_none_or(|&i| f.body[i].kind != OpKind::Broadcast)));
}

/// The bf16 gradient is the f32 gradient within bf16's rounding: relative
/// error of each parameter gradient (L2) under 8%, on mlp and resmlp.
#[test]
fn gradient_close_to_f32() {
    for kind in [ModelKind::Mlp, ModelKind::Resmlp] {
        let m = model(kind, 3, 32, 8);
        let name = kind.name();
        let full = run(&m, "autodiff");
        let low = run(&m, "autocast{dtype=bf16},autodiff");
        verify_module(&low).expect("verifies");
        let g = low.func(&format!("{name}_grad")).unwrap();
        for p in &g.params {
            assert_ne!(g.ty(p.value).dtype, DType::BF16);
        }
        let inputs = random_inputs(full.func(&format!("{name}_grad")).unwrap(), 5);
        let a = run_func(&full, &format!("{name}_grad"), &inputs).expect("f32 runs");
        let b = run_func(&low, &format!("{name}_grad"), &inputs).expect("bf16 runs");
        assert_eq!(a.len(), b.len());
        for (k, (x, y)) in a.iter().zip(&b).enumerate() {
            assert_eq!(y.dtype, DType::F32, "{name}: result {k} stays f32");
            let num: f64 = x.data.iter().zip(&y.data).map(|(p, q)| ((p - q) as f64).powi(2)).sum();
            let den: f64 = x.data.iter().map(|p| (*p as f64).powi(2)).sum();
            let rel = (num / den.max(1e-30)).sqrt();
            assert!(rel < 0.08, "{name}: result {k} relative error {rel}");
            assert!(rel > 0.0 || den == 0.0, "{name}: result {k} identical to f32: autocast did nothing");
        }
    }
}

/// The plan at half the bytes: the mlp's sqrt temp peak under bf16 is at
/// most 0.55x the f32 one (activations are half; the f32 loss tail and the
/// f32 parameter gradients are not; batch 4x the width, so activations
/// dominate as in the 1000-layer benchmark).
#[test]
fn sqrt_plan_keeps_about_half_the_bytes() {
    let m = model(ModelKind::Mlp, 64, 64, 256);
    let tail = "autodiff,inplace,fuse,remat{mode=sqrt},memplan";
    let full = run(&m, tail);
    let low = run(&m, &format!("autocast{{dtype=bf16}},{tail}"));
    let (a, b) = (memory_report(full.func("mlp_grad").unwrap()), memory_report(low.func("mlp_grad").unwrap()));
    let ratio = b.temp_peak_bytes as f64 / a.temp_peak_bytes as f64;
    assert!(ratio <= 0.55, "temp peak {} -> {} ({ratio:.3}x)", a.temp_peak_bytes, b.temp_peak_bytes);
}

/// f16 too, and an already-low or integer value is left alone: a function
/// with no f32 float op is unchanged.
#[test]
fn f16_and_idempotent() {
    let m = model(ModelKind::Mlp, 2, 8, 2);
    let a = run(&m, "autocast{dtype=f16}");
    assert!(a.func("mlp").unwrap().body.iter().any(|o| o.result.is_some_and(|r| a.func("mlp").unwrap().ty(r).dtype == DType::F16)));
    let b = run(&a, "autocast{dtype=f16}");
    assert_eq!(ckopt_ir::print_module(&a), ckopt_ir::print_module(&b), "a second autocast changes nothing");
}
