//! Every remat mode's own plan against the exact planner (issue 21).
//!
//! usage: cargo run -p ckopt-passes --example remat_gap -- GRAPH.ck...
//!
//! For each file (a forward function; `autodiff,inplace` run first), and
//! each mode M of sqrt, greedy, log: M's plan without a budget (peak P,
//! recompute R), then `optimal` at budget P (every plan ckopt makes, the
//! MILP's exact plan over keep sets included: R*), and the gap R/R* - 1.
//! Then the smallest feasible budget: log's peak and the least peak over
//! keep sets (the MILP's `min_peak`) or, with at most 8 values in play,
//! brute force's. Prints markdown table rows.
use ckopt_passes::PassManager;
use ckopt_passes::remat::{Mode, RematOptions, chain, dag, milp, remat_func};

fn main() {
    println!("| graph | values in play | mode | peak (B) | recompute R | exact R* at that peak | gap R/R*-1 | milp-status |");
    println!("|---|---:|---|---:|---:|---:|---:|---|");
    let mut smallest = Vec::new();
    for path in std::env::args().skip(1) {
        let name = std::path::Path::new(&path).file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        };
        let mut m = match ckopt_ir::parse_and_verify(&text, &path) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(1);
            }
        };
        let run = PassManager::parse("autodiff,inplace").map_err(|e| e.to_string()).and_then(|mut pm| pm.run(&mut m).map_err(|d| d.to_string()));
        if let Err(e) = run {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
        let Some(f) = m.funcs.iter().find(|f| f.name.ends_with("_grad")).cloned() else { continue };
        let ch = chain::build_chain(&f);
        let n = dag::candidates(&f, &ch).len();
        let mut log_peak = 0;
        for mode in [Mode::Sqrt, Mode::Greedy, Mode::Log] {
            let mut g = f.clone();
            let Ok(Some(own)) = remat_func(&mut g, &RematOptions { mode, ..Default::default() }) else { continue };
            if mode == Mode::Log {
                log_peak = own.temp_peak_after;
            }
            let mut g = f.clone();
            let opts = RematOptions { mode: Mode::Optimal, budget: Some(own.temp_peak_after), ..Default::default() };
            let Ok(Some(ex)) = remat_func(&mut g, &opts) else { continue };
            let gap = if own.recompute_flops == ex.recompute_flops {
                "0".to_string()
            } else if ex.recompute_flops == 0 {
                "inf".to_string()
            } else {
                format!("{:.3}", own.recompute_flops as f64 / ex.recompute_flops as f64 - 1.0)
            };
            let st = ex.milp.as_ref().map_or(if n <= dag::EXHAUSTIVE_MAX { "(exhaustive)" } else { "-" }, |r| r.status.name());
            println!("| {name} | {n} | {} | {} | {} | {} | {gap} | {st} |", mode.name(), own.temp_peak_after, own.recompute_flops, ex.recompute_flops);
        }
        let least = if n <= dag::EXHAUSTIVE_MAX {
            dag::exhaustive(&f, &ch).and_then(|front| front.iter().map(|x| x.peak).min()).map(|p| (p, "brute force"))
        } else {
            milp::min_peak(&f, &ch, 60.0).and_then(|o| o.best.map(|b| (b.peak, o.report.status.name())))
        };
        smallest.push((name, log_peak, least));
    }
    println!();
    println!("| graph | log's peak (B) | least peak over keep sets (B) | by |");
    println!("|---|---:|---:|---|");
    for (name, lp, least) in smallest {
        let (p, by) = least.map_or(("-".to_string(), "-"), |(p, b)| (p.to_string(), b));
        println!("| {name} | {lp} | {p} | {by} |");
    }
}
