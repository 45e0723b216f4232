//! remat-bench: memory and recompute of every remat mode on the generated
//! models, through the real pipeline `autodiff,inplace,remat{..},memplan`.
//!
//! Usage: `remat-bench MODEL DEPTH WIDTH BATCH MODE [BUDGET] [--no-inplace|--greedy-inplace] [--seq N] [--why]`
//! (BUDGET like 48MiB; MODE as in `remat{mode=...}`; extra model sizes use the
//! model's defaults). Prints one JSON object per line: the memory report of
//! `@MODEL_grad` (docs/memory.md) plus `input_bytes` (the first argument's
//! bytes: batch·width·4 for mlp and resmlp), planning time
//! of the whole pipeline and of remat alone, in seconds.

use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::PassManager;
use ckopt_passes::analysis::memory_report;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 5 {
        eprintln!("usage: remat-bench MODEL DEPTH WIDTH BATCH MODE [BUDGET|-] [--no-inplace|--greedy-inplace] [--seq N] [--why]");
        std::process::exit(2);
    }
    let kind = match ModelKind::from_name(&args[0]) {
        Some(k) => k,
        None => {
            eprintln!("remat-bench: unknown model '{}'", args[0]);
            std::process::exit(2);
        }
    };
    let num = |i: usize| -> u64 {
        args[i].parse().unwrap_or_else(|_| {
            eprintln!("remat-bench: '{}' is not a number", args[i]);
            std::process::exit(2)
        })
    };
    let mut o = GenOptions { depth: Some(num(1)), batch: Some(num(3)), ..Default::default() };
    if num(2) > 0 && kind != ModelKind::Resnet {
        o.width = Some(num(2));
    }
    if let Some(i) = args.iter().position(|a| a == "--seq") {
        o.seq = args.get(i + 1).and_then(|s| s.parse().ok());
    }
    let mode = args[4].clone();
    let budget = args.get(5).filter(|s| !s.starts_with("--")).cloned();
    let budget = budget.filter(|b| b != "-");
    let inplace = !args.iter().any(|a| a == "--no-inplace");
    // --greedy-inplace: mark in place with the linear scan of the same
    // legality rule instead of the egg pass (for very deep models)
    let greedy_inplace = args.iter().any(|a| a == "--greedy-inplace");
    let mut m = match generate(kind, &o) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("remat-bench: {e}");
            std::process::exit(1);
        }
    };
    let remat = match &budget {
        Some(b) => format!("remat{{mode={mode} budget={b}}}"),
        None => format!("remat{{mode={mode}}}"),
    };
    // the egg `inplace` pass when registered, else the linear marking of the same legality rule
    let have_inplace = ckopt_passes::registry().iter().any(|p| p.name == "inplace") && !greedy_inplace;
    let pipeline = format!("autodiff,{}{remat},memplan", if inplace && have_inplace { "inplace," } else { "" });
    if inplace && !have_inplace {
        let mut pre = match PassManager::parse("autodiff") {
            Ok(p) => p,
            Err(e) => {
                eprintln!("remat-bench: {e}");
                std::process::exit(1);
            }
        };
        if let Err(e) = pre.run(&mut m) {
            eprintln!("{e}");
            std::process::exit(1);
        }
        for f in &mut m.funcs {
            ckopt_passes::inplace::mark_inplace_greedy(f);
        }
    }
    let pipeline = if inplace && !have_inplace { pipeline.replacen("autodiff,", "", 1) } else { pipeline };
    let mut pm = match PassManager::parse(&pipeline) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("remat-bench: {e}");
            std::process::exit(1);
        }
    };
    let t = Instant::now();
    let r = pm.run(&mut m);
    let total = t.elapsed().as_secs_f64();
    if let Err(e) = r {
        eprintln!("{e}");
        std::process::exit(1);
    }
    let remat_s: f64 = pm.timings.iter().filter(|(n, _)| n == "remat").map(|(_, d)| d.as_secs_f64()).sum();
    let name = format!("{}_grad", kind.name());
    let Some(f) = m.func(&name) else {
        eprintln!("remat-bench: no @{name}");
        std::process::exit(1);
    };
    let rep = memory_report(f);
    let mut v = serde_json::to_value(&rep).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        let p = f.params.first().map(|p| f.ty(p.value).bytes()).unwrap_or(0);
        obj.insert("model".into(), kind.name().into());
        obj.insert("depth".into(), num(1).into());
        obj.insert("mode".into(), mode.clone().into());
        obj.insert("budget".into(), budget.clone().unwrap_or_default().into());
        obj.insert("input_bytes".into(), p.into());
        obj.insert("pipeline_seconds".into(), total.into());
        obj.insert("remat_seconds".into(), remat_s.into());
        for (n, d) in &pm.timings {
            obj.insert(format!("{n}_seconds"), d.as_secs_f64().into());
        }
    }
    println!("{v}");
    if args.iter().any(|a| a == "--why") {
        // the live buffers at the temp peak, largest first
        let live = ckopt_passes::analysis::liveness(f);
        let tl = ckopt_passes::analysis::live_bytes_timeline(f, &live, false);
        let at = tl.iter().enumerate().max_by_key(|(_, b)| **b).map(|(i, _)| i).unwrap_or(0);
        let phases = ckopt_passes::analysis::op_phases(f);
        eprintln!("peak {} bytes at op {at} ({:?} {})", tl[at], phases[at], f.body[at].kind.name());
        let mut ivs: Vec<_> = live.intervals.iter().filter(|iv| !iv.is_result && iv.start <= at && at <= iv.end).collect();
        ivs.sort_by_key(|iv| std::cmp::Reverse(iv.bytes));
        for iv in ivs.iter().take(40) {
            let d = live.def[iv.root.index()].unwrap_or(0);
            eprintln!("  {:>10} B  %{} = {} [{}..{}] {:?}", iv.bytes, f.name_of(iv.root), f.body[d].kind.name(), iv.start, iv.end, phases[d]);
        }
    }
}
