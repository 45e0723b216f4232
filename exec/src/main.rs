//! ckopt-exec: runs or trains one function of a cuda bundle on the GPU.
//!
//! ```text
//! ckopt-exec BUNDLE.ckb [--func NAME] [--inputs FILE.json | --seed N]
//!            [--outputs FILE.json|-] [--report FILE.json|-] [--repeat N]
//!            [--train [--steps N] [--lr X]] [--tf32]
//! ```
//! The runtime half of the cuda backend: a bundle written by
//! `ckopt-translate --to=cuda-bundle` holds the PTX, the launches and the
//! step programs, so this binary links neither LLVM nor MLIR (only the
//! runtime crate with its `cuda` feature, cudarc and libloading). Flags,
//! tensor JSON, printed results and `--report` keys are those of
//! `ckopt-run --backend cuda` (docs/tools.md), plus `bundle` and `sm` in
//! the report.
//!
//! `--train` runs the bundle's `@NAME_step` (which the bundle must contain:
//! build it with the `sgd` pass before translating); the learning rate is
//! the one compiled into it (`--lr` is accepted, as by ckopt-run for a
//! module that already has its step function, and reported). Parameters
//! and optimizer state stay in device memory; per step only the loss (4
//! bytes) comes back and only a dropout step key (4 bytes) goes in.
//!
//! Errors (exit 1, never a panic): an unreadable or damaged bundle (wrong
//! magic, other format version, truncated, corrupted), a bundle for another
//! compute capability than the device's, no CUDA driver or device, a
//! driver without a needed function, PTX the driver rejects (with its JIT
//! log), out of device memory, a failing launch (naming the op and its
//! location), bad inputs, a non-finite loss.

use ckopt_interp::{Tensor, check_inputs, try_random_inputs};
use ckopt_ir::{Diag, Func, Loc};
use ckopt_kernels::{Bundle, StepProgram, TrainSig};
use ckopt_passes::train::{StepSig, initial_args};
use ckopt_runtime::{CudaExecutor, CudaModule, RunOptions};
use ckopt_tools::input::{ToolError, display_name, read_bytes, write_text};
use ckopt_tools::tensor_json::{parse_inputs, readable, tensors_to_json};
use clap::{CommandFactory, Parser};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Runs or trains a function of a cuda bundle on the GPU (no LLVM, no MLIR).
#[derive(Parser, Debug)]
#[command(name = "ckopt-exec", version)]
struct Cli {
    /// The bundle (from `ckopt-translate --to=cuda-bundle FILE -o BUNDLE.ckb`).
    bundle: PathBuf,
    /// Function to run (default: the bundle's first; with --train, the first trainable model).
    #[arg(long, value_name = "NAME")]
    func: Option<String>,
    /// Input tensors as JSON: {"inputs": [{"shape": [..], "data": [..]}, ...]} in argument order.
    #[arg(long, value_name = "FILE.json", conflicts_with = "seed")]
    inputs: Option<String>,
    /// Generate inputs from this seed (as ckopt-run): uniform [-1, 1), {ck.param} arguments scaled by 1/sqrt(fan_in).
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Write the results as JSON ({"outputs": [...]}) to FILE, or stdout for `-`.
    #[arg(long, value_name = "FILE.json|-")]
    outputs: Option<String>,
    /// Write a JSON report (backend, function, step_time_ms, peak_bytes, ...) to FILE, or stdout for `-`.
    #[arg(long, value_name = "FILE.json|-")]
    report: Option<String>,
    /// Run the function N times on the same inputs; the report's step_time_ms is the median, step_times_ms lists them all.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "train")]
    repeat: usize,
    /// Train: SGD steps through the bundle's @NAME_step (parameters stay on the device).
    #[arg(long)]
    train: bool,
    /// Number of SGD steps (with --train).
    #[arg(long, value_name = "N", default_value_t = 10, requires = "train")]
    steps: usize,
    /// Learning rate (with --train; the bundle's @NAME_step has its own, compiled in; this one is reported).
    #[arg(long, value_name = "X", default_value_t = 0.01, requires = "train")]
    lr: f32,
    /// GEMMs on TF32 tensor cores (cuBLAS); fp32 by default.
    #[arg(long)]
    tf32: bool,
}

fn bundle_err(e: ckopt_kernels::BundleError) -> ToolError {
    ToolError::msg(e.0)
}

/// Opens the device and loads the bundle on it.
fn load(cli: &Cli, bundle: Bundle) -> Result<Arc<CudaModule>, ToolError> {
    let dev = ckopt_runtime::cuda::open_device().map_err(|m| ToolError::msg(format!("cuda backend: {m}")))?;
    let opts = RunOptions { tf32: cli.tf32, ..Default::default() };
    let m = ckopt_runtime::cuda::load_bundle(dev, bundle, &opts).map_err(|m| ToolError::msg(format!("cuda backend: {m}")))?;
    if let Some(e) = m.dev.gemm_load_error() {
        eprintln!("ckopt-exec: note: {e}; GEMMs run on the fallback kernel ck_lib_gemm");
    }
    Ok(m)
}

/// The inputs for `f` (a signature) and where they came from.
fn choose_inputs(cli: &Cli, f: &Func) -> Result<(Vec<Tensor>, String), ToolError> {
    match &cli.inputs {
        Some(path) => {
            let bytes = read_bytes(path)?;
            let name = display_name(path);
            let text = String::from_utf8_lossy(&bytes);
            let expected: Vec<_> = f.params.iter().map(|p| f.ty(p.value).dtype).collect();
            let ts = parse_inputs(&text, name, &expected).map_err(|d| ToolError::diag(d, Some(&text)))?;
            check_inputs(f, &ts).map_err(|d| ToolError::diag(Diag::error(Loc::new(Arc::from(name), 0, 0), d.message), None))?;
            Ok((ts, format!("file {name}")))
        }
        None => {
            let ts = try_random_inputs(f, cli.seed).map_err(|d| ToolError::msg(d.message))?;
            Ok((ts, format!("seed {}", cli.seed)))
        }
    }
}

fn program<'b>(b: &'b Bundle, name: &str) -> Result<&'b StepProgram, ToolError> {
    b.program(name).ok_or_else(|| {
        let names: Vec<&str> = b.programs.iter().map(|p| p.func.as_str()).collect();
        ToolError::msg(format!("the bundle has no function @{name}; it has @{}", names.join(", @")))
    })
}

fn merge(v: &mut Value, extra: Value) {
    if let (Value::Object(m), Value::Object(x)) = (v, extra) {
        for (k, val) in x {
            m.entry(k).or_insert(val);
        }
    }
}

fn write_report(cli: &Cli, v: &Value) -> Result<(), ToolError> {
    if let Some(path) = &cli.report {
        let text = serde_json::to_string_pretty(v).map_err(|e| ToolError::msg(format!("cannot encode the report: {e}")))?;
        write_text(path, &(text + "\n"))?;
    }
    Ok(())
}

fn fmt_loss(l: f32) -> String {
    if l != 0.0 && l.abs() < 1e-3 { format!("{l:.6e}") } else { format!("{l:.6}") }
}

fn median(xs: &[f64]) -> f64 {
    ckopt_runtime::median(xs)
}

fn eval(cli: &Cli, bundle: Bundle, func: &str) -> Result<(), ToolError> {
    if cli.repeat == 0 {
        return Err(ToolError::msg("--repeat must be at least 1"));
    }
    let prog = program(&bundle, func)?;
    let sig = prog.signature(None);
    let (inputs, inputs_desc) = choose_inputs(cli, &sig)?;
    let ops = bundle.ops(func);
    let sm = bundle.sm;
    let module = load(cli, bundle)?;
    let mut e = CudaExecutor::new(module, func).map_err(ToolError::msg)?;
    let mut times = Vec::with_capacity(cli.repeat);
    let mut outputs = Vec::new();
    for (i, t) in inputs.iter().enumerate() {
        e.set_arg(i, t).map_err(ToolError::msg)?;
    }
    for _ in 0..cli.repeat {
        e.run().map_err(ToolError::msg)?;
        times.push(e.report().step_ms);
    }
    for j in 0..e.program().results.len() {
        outputs.push(e.result(j).map_err(ToolError::msg)?);
    }
    let rep = e.report();
    let peak = rep.device_memory_bytes.unwrap_or(0).saturating_sub(rep.input_bytes);
    let step_time_ms = median(&times);
    match &cli.outputs {
        Some(path) => write_text(path, &tensors_to_json("outputs", &outputs))?,
        None => {
            let mut s = String::new();
            for (i, t) in outputs.iter().enumerate() {
                s.push_str(&format!("result {i}: {}\n", readable(t)));
            }
            s.push_str(&format!(
                "# @{func} on cuda: {step_time_ms:.3} ms, peak {peak} bytes (arguments excluded), inputs from {inputs_desc}\n"
            ));
            write_text("-", &s)?;
        }
    }
    let mut v = json!({
        "backend": "cuda",
        "function": func,
        "step_time_ms": step_time_ms,
        "step_times_ms": times,
        "peak_bytes": peak,
        "peak_bytes_with_args": peak + rep.input_bytes,
        "arg_bytes": rep.input_bytes,
        "ops": ops,
        "inputs": inputs_desc,
        "outputs": outputs.len(),
        "bundle": cli.bundle.display().to_string(),
        "sm": sm,
    });
    merge(&mut v, rep.to_json());
    write_report(cli, &v)
}

fn train(cli: &Cli, bundle: Bundle, name: &str) -> Result<(), ToolError> {
    if !cli.lr.is_finite() || cli.lr <= 0.0 {
        return Err(ToolError::msg(format!("--lr must be a positive number, got {}", cli.lr)));
    }
    let ts: TrainSig = bundle.train_sig(name).cloned().ok_or_else(|| {
        let steps: Vec<&str> = bundle.trains.iter().map(|t| t.loss_func.as_str()).collect();
        ToolError::msg(format!(
            "the bundle has no training step for @{name} ({}); translate a module with @{name}_step, e.g. from \
             `ckopt-opt --pass-pipeline='autodiff,inplace,sgd{{lr=0.01}},fuse,memplan'`",
            if steps.is_empty() { "it has none".to_string() } else { format!("it can train @{}", steps.join(", @")) }
        ))
    })?;
    let prog = program(&bundle, &ts.step_func)?;
    let step_sig = prog.signature(None);
    let mut loss_sig = prog.signature(Some(ts.loss_args));
    loss_sig.name = ts.loss_func.clone();
    let (inputs, inputs_desc) = choose_inputs(cli, &loss_sig)?;
    let sig = StepSig {
        loss_func: ts.loss_func.clone(),
        grad_func: ts.grad_func.clone(),
        step_func: ts.step_func.clone(),
        params: ts.params.clone(),
        state: ts.state.clone(),
        step_key: ts.step_key,
        hypers: ts.hypers.clone(),
        built_step: false,
        built_grad: false,
    };
    let args = initial_args(&step_sig, &sig, &inputs);
    let module = load(cli, bundle)?;
    let mut e = CudaExecutor::new(module, &ts.step_func).map_err(ToolError::msg)?;
    for (i, t) in args.iter().enumerate() {
        e.set_arg(i, t).map_err(ToolError::msg)?;
    }
    let on_step = |k: usize, n: usize, loss: f32| {
        let _ = write_text("-", &format!("step {k}/{n} loss {}\n", fmt_loss(loss)));
    };
    let mut r = ckopt_tools::train::run_steps(&mut e, &sig, ts.loss_args, cli.steps, cli.lr, on_step)
        .map_err(|d| ToolError::msg(d.message))?;
    let rep = e.report();
    // The step times of the report: CUDA events around each whole step.
    if !rep.step_times_ms.is_empty() {
        r.step_time_ms = rep.step_times_ms.iter().sum::<f64>() / rep.step_times_ms.len() as f64;
        r.step_times_ms = rep.step_times_ms.clone();
    }
    let first = r.losses.first().copied();
    let last = r.losses.last().copied();
    let show = |l: Option<f32>| l.map(fmt_loss).unwrap_or_else(|| "none".into());
    match &cli.outputs {
        Some(path) => write_text(path, &tensors_to_json("outputs", &r.args))?,
        None => write_text(
            "-",
            &format!(
                "# trained @{} on cuda with @{}: {} steps, lr {}, first loss {}, last loss {}, {:.3} ms/step, inputs from {inputs_desc}\n",
                ts.loss_func,
                ts.step_func,
                cli.steps,
                cli.lr,
                show(first),
                show(last),
                r.step_time_ms
            ),
        )?,
    }
    let mut v = json!({
        "backend": "cuda",
        "function": ts.loss_func,
        "grad_function": ts.grad_func,
        "step_function": ts.step_func,
        "steps": cli.steps,
        "lr": cli.lr,
        "first_loss": first,
        "last_loss": last,
        "losses": r.losses,
        "step_time_ms": r.step_time_ms,
        "step_times_ms": r.step_times_ms,
        "peak_bytes": r.peak_bytes,
        "trained_arguments": r.trained,
        "inputs": inputs_desc,
        "bundle": cli.bundle.display().to_string(),
    });
    let mut extra = rep.to_json();
    if let Value::Object(m) = &mut extra {
        m.remove("step_ms");
    }
    merge(&mut v, extra);
    write_report(cli, &v)
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    let bundle = Bundle::read(&cli.bundle).map_err(bundle_err)?;
    if cli.train {
        let name = match &cli.func {
            Some(n) => n.clone(),
            None => bundle.trains.first().map(|t| t.loss_func.clone()).unwrap_or_else(|| {
                bundle.programs.first().map(|p| p.func.clone()).unwrap_or_default()
            }),
        };
        return train(cli, bundle, &name);
    }
    let func = match &cli.func {
        Some(n) => n.clone(),
        None => bundle.programs.first().map(|p| p.func.clone()).ok_or_else(|| ToolError::msg("the bundle has no function"))?,
    };
    eval(cli, bundle, &func)
}

fn main() -> ExitCode {
    let cli: Cli = match ckopt_tools::cli::parse(Cli::command().after_help("No LLVM, no MLIR: bundles come from `ckopt-translate --to=cuda-bundle`.")) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", e.render("ckopt-exec"));
            ExitCode::FAILURE
        }
    }
}
