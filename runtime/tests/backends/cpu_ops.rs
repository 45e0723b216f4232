//! The cpu backend against the interpreter (the oracle), op by op: every op
//! kind in a function of its own, planned naively (every result its own
//! slot), 1e-4 relative.

use ckopt_interp::{random_inputs, run_func};
use ckopt_ir::Module;
use ckopt_lower::testcases::{close, naive_plan, op_cases};
use ckopt_runtime::CpuExecutor;

#[test]
fn every_op_on_cpu_matches_the_interpreter() {
    let mut failures = Vec::new();
    for mut f in op_cases() {
        naive_plan(&mut f);
        let inputs = random_inputs(&f, 7);
        let module = Module { funcs: vec![f.clone()] };
        let want = run_func(&module, &f.name, &inputs).expect("interp runs");
        let got = match CpuExecutor::new(&f).and_then(|mut e| e.step(&inputs)) {
            Ok(g) => g,
            Err(e) => {
                failures.push(format!("@{}: {e}", f.name));
                continue;
            }
        };
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            if let Err(e) = close(&g.data, &w.data) {
                failures.push(format!("@{} result {k}: {e}", f.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
