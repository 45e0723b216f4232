//! On the shared random graphs (ckopt_ir::testgen): every generated module
//! verifies, runs on `random_inputs` without error, returns a rank-0 loss
//! first, and every output is finite; evaluation is deterministic.

use ckopt_interp::{random_inputs, run_func, run_func_with_stats};
use ckopt_ir::testgen::{GenConfig, arb_module, gen_module};
use ckopt_ir::{print_module, verify_module};
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn generated_modules_run_and_stay_finite(m in prop_oneof![arb_module(&GenConfig::default().annotated()), arb_module(&GenConfig::default().annotated().with_int_ops())], seed in 0u64..4) {
        prop_assert!(verify_module(&m).is_ok());
        let f = &m.funcs[0];
        let inputs = random_inputs(f, seed);
        let out = run_func(&m, "f", &inputs);
        prop_assert!(out.is_ok(), "{:?}\n{}", out.err(), print_module(&m));
        let out = out.unwrap_or_default();
        prop_assert_eq!(out.len(), f.result_types.len());
        prop_assert!(out[0].shape.is_empty(), "loss is rank 0");
        for (i, t) in out.iter().enumerate() {
            prop_assert!(t.all_finite(), "output {} not finite: {:?}\n{}", i, t.data, print_module(&m));
        }
    }
}

#[test]
fn many_seeds_run_finite_and_deterministically() {
    for (seed, cfg) in (0..300).map(|s| (s, GenConfig::default())).chain((0..200).map(|s| (s, GenConfig::default().with_int_ops()))) {
        let m = gen_module(&cfg, seed);
        let inputs = random_inputs(&m.funcs[0], seed);
        let (a, st) = run_func_with_stats(&m, "f", &inputs).unwrap_or_else(|d| panic!("seed {seed}: {d}\n{}", print_module(&m)));
        let b = run_func(&m, "f", &inputs).unwrap_or_else(|d| panic!("seed {seed}: {d}"));
        assert_eq!(a, b, "seed {seed}: same inputs, same outputs");
        assert!(a.iter().all(|t| t.all_finite()), "seed {seed}: non-finite output\n{}", print_module(&m));
        assert!(st.peak_bytes > 0);
    }
}
