//! Structure-aware fuzz target for the memory planner (regalloc2's
//! `ion_checker` idea): the input bytes drive the shared random graph
//! generator (`ckopt_ir::testgen::build_module`, as `gen_roundtrip`), then a
//! pipeline with options chosen by the input: autodiff, inplace, sgd
//! (momentum or not), fuse (or not), remat (any mode, an optional budget as a
//! fraction of the unplanned temp peak, an optional device budget), memplan
//! (align 4..256).
//!
//! Properties: every pass either succeeds or returns an error value (a
//! budget may be infeasible; autodiff has no rule for a few op
//! combinations); the result verifies; the independent memplan checker
//! accepts every plan; and the arena interpreter, which stores every value
//! at its planned offset, gives bit-identical results to the plain
//! interpreter for every function (a plan that lets two live values share
//! bytes would change them).
#![no_main]
use ckopt_interp::{random_inputs, run_func, run_func_in_arena};
use ckopt_ir::testgen::{GenConfig, build_module};
use ckopt_ir::{print_module, verify_module};
use ckopt_passes::PassManager;
use ckopt_passes::memplan_check::check_func;
use libfuzzer_sys::fuzz_target;

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    u64::from_le_bytes(w)
}

fn bits(ts: &[ckopt_interp::Tensor]) -> Vec<Vec<u32>> {
    ts.iter().map(|t| t.data.iter().map(|v| v.to_bits()).collect()).collect()
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 24 {
        return;
    }
    let arg_seed = word(&data[..8]);
    let opts = word(&data[8..16]);
    let steps: Vec<u64> = data[16..].chunks(8).take(40).map(word).collect();
    let cfg = GenConfig { max_ops: 40, max_dim: 6, ..GenConfig::default() }.annotated();
    let m = build_module(&cfg, arg_seed, &steps);
    let mode = ["none", "sqrt", "greedy", "log", "optimal"][(opts % 5) as usize];
    let align = 4u64 << ((opts >> 3) % 7);
    let mut p = vec!["autodiff".to_string(), "inplace{iter-limit=3}".into()];
    if (opts >> 6) & 1 == 1 {
        p.push(if (opts >> 7) & 1 == 1 { "sgd{lr=0.1 momentum=0.5}".into() } else { "sgd{lr=0.1}".into() });
    }
    if (opts >> 8) & 1 == 1 {
        p.push("fuse".into());
    }
    let temp = {
        let mut g = m.clone();
        let _ = PassManager::parse("autodiff").map(|mut pm| pm.run(&mut g));
        g.funcs.iter().map(|f| ckopt_passes::analysis::memory_report(f).temp_peak_bytes).max().unwrap_or(0)
    };
    let budget = match (opts >> 9) % 4 {
        0 => None,
        k => Some(temp * k / 4 + 64),
    };
    let mut remat = match (mode, budget) {
        ("optimal", None) => format!("remat{{mode=optimal budget={}", temp + 64),
        (_, Some(b)) => format!("remat{{mode={mode} budget={b}"),
        _ => format!("remat{{mode={mode}"),
    };
    // a device budget too (arguments + arena after memplan): ample, or tight
    match (opts >> 11) % 4 {
        1 => remat.push_str(" device_budget=1GiB"),
        2 => remat.push_str(&format!(" device_budget={}", temp * 3 + 4096)),
        _ => {}
    }
    remat.push('}');
    p.push(remat);
    p.push(format!("memplan{{align={align} check=false}}"));
    let pipeline = p.join(",");
    let mut out = m.clone();
    let Ok(mut pm) = PassManager::parse(&pipeline) else { panic!("bad pipeline {pipeline}") };
    if pm.run(&mut out).is_err() {
        return; // an infeasible budget or a missing gradient rule: an error value, fine
    }
    if let Err(d) = verify_module(&out) {
        panic!("{pipeline}: result does not verify:\n{d}\n{}", print_module(&out));
    }
    for f in &out.funcs {
        if let Err(d) = check_func(f, align) {
            panic!("{pipeline}: the checker rejects the plan of @{}:\n{d}\n{}", f.name, print_module(&out));
        }
        let inputs = random_inputs(f, arg_seed);
        let (Ok(plain), Ok((arena, _))) = (run_func(&out, &f.name, &inputs), run_func_in_arena(&out, &f.name, &inputs)) else {
            continue;
        };
        assert_eq!(bits(&plain), bits(&arena), "{pipeline}: @{} differs in the arena:\n{}", f.name, print_module(&out));
    }
});
