//! Trains a small resmlp for a few SGD steps on the cpu backend, once without
//! remat and once with `remat{mode=sqrt}`, and shows that the losses match
//! step for step while the planned arena shrinks.
//!
//! `cargo run --release -p ckopt --example train -- [--depth N=32] [--width N=32]
//! [--batch N=256] [--steps N=5] [--lr X=0.01] [--target cpu|interp|cuda]`

use ckopt::{GenOptions, ModelKind, Options, Target, Trainer, memory_report, model, optimize};
use std::process::ExitCode;

fn arg<T: std::str::FromStr>(args: &[String], name: &str, default: T) -> Result<T, String> {
    match args.iter().position(|a| a == name) {
        None => Ok(default),
        Some(i) => args.get(i + 1).and_then(|v| v.parse().ok()).ok_or_else(|| format!("{name} needs a value")),
    }
}

fn run() -> Result<bool, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let depth: u64 = arg(&args, "--depth", 32)?;
    let width: u64 = arg(&args, "--width", 32)?;
    let batch: u64 = arg(&args, "--batch", 256)?;
    let steps: usize = arg(&args, "--steps", 5)?;
    let lr: f32 = arg(&args, "--lr", 0.01)?;
    let target = match arg(&args, "--target", "cpu".to_string())?.as_str() {
        "cpu" => Target::Cpu,
        "cuda" => Target::Cuda,
        "interp" => Target::Interp,
        t => return Err(format!("unknown target {t} (cpu, cuda, interp)").into()),
    };
    let base = model(ModelKind::Resmlp, &GenOptions { depth: Some(depth), width: Some(width), batch: Some(batch), ..Default::default() })?;
    println!("resmlp depth {depth} width {width} batch {batch}: {steps} SGD steps, lr {lr}, target {target:?}");
    let mut runs = Vec::new();
    for remat in ["none", "sqrt"] {
        let mut m = base.clone();
        let opts = Options { inplace: true, sgd: Some(lr), fuse: true, remat: remat.into(), ..Default::default() };
        optimize(&mut m, &opts.pipeline())?;
        let rep = memory_report(&m).into_iter().find(|r| r.function == "resmlp_step").ok_or("no @resmlp_step")?;
        let mut t = Trainer::new(&m, "resmlp", target, lr)?;
        let params = t.random_inputs(0)?;
        t.load(&params)?;
        let mut losses = Vec::new();
        let mut ms = 0.0;
        for _ in 0..steps {
            losses.push(t.step()?);
            ms += t.report().map(|r| r.step_ms).unwrap_or(0.0);
        }
        println!(
            "  remat={remat:<4} pipeline {:<52} arena {:>9} B  temp peak {:>9} B  recomputed ops {:>3}  {:.2} ms/step",
            opts.pipeline(),
            rep.arena_bytes.unwrap_or(0),
            rep.temp_peak_bytes,
            rep.recomputed_ops,
            ms / steps.max(1) as f64
        );
        runs.push(losses);
    }
    println!("  step  loss (no remat)  loss (sqrt remat)");
    let mut same = true;
    for (i, (a, b)) in runs[0].iter().zip(&runs[1]).enumerate() {
        let ok = (a - b).abs() <= 1e-5 * a.abs().max(1.0);
        same &= ok;
        println!("  {i:>4}  {a:>15.7}  {b:>17.7}  {}", if ok { "match" } else { "DIFFER" });
    }
    println!("{}", if same { "losses match step for step" } else { "LOSSES DIFFER" });
    Ok(same)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("train: {e}");
            ExitCode::FAILURE
        }
    }
}
