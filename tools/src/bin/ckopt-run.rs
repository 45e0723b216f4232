//! ckopt-run: executes one function of a ck file (like mlir-runner).
//!
//! ```text
//! ckopt-run FILE [--func NAME] [--backend interp|cpu|cuda]
//!           [--inputs FILE.json | --seed N] [--outputs FILE.json|-] [--report FILE.json|-]
//!           [--train [--steps N] [--lr X]]
//!           [--params FILE.safetensors] [--params-out FILE.safetensors]
//! ```
//! FILE may be `-` (stdin). The default function is the module's first.
//! Inputs: `--inputs` (tensor JSON, docs/tools.md) or generated from `--seed N`
//! (default 0) by `ckopt_interp::random_inputs`: uniform [-1, 1), `{ck.param}`
//! arguments scaled by 1/sqrt(fan_in). Outputs: `--outputs` writes tensor
//! JSON; without it the results print readably on stdout followed by a
//! one-line summary of time and peak. `--report` writes a JSON object:
//! `backend`, `function`, `step_time_ms` (wall time of the execution only),
//! `peak_bytes` (measured; for `interp` the most bytes of op-defined tensors
//! it held at once, arguments excluded: docs/memory.md's peak, unoptimized), plus
//! `peak_bytes_with_args`, `arg_bytes`, `ops`, `inputs`, `outputs`.
//!
//! Training (`--train`, every backend): SGD on the `{ck.param}` arguments
//! (every argument when none is marked) for `--steps N` (default 10),
//! through the step function `@NAME_step` (the `sgd` pass's: loss and
//! updated parameters in the parameters' own buffers) when the file has one,
//! else one built in-process by `sgd{lr=X}` (`--lr X`, default 0.01) from
//! `@NAME_grad` (itself built by `autodiff{func=NAME}` when missing;
//! `--func NAME_grad` or `NAME_step` means `NAME`). On cpu/cuda the
//! parameters stay in the backend's memory across steps; a dropout step key
//! (`{ck.step}`) gets a new value each step. One line per step on stdout,
//! `step K/N loss L`, then a `#` summary; `--outputs` writes the loss
//! function's arguments after training (argument order); `--report` adds
//! `first_loss`, `last_loss` (the loss at the start of the first and of the
//! last step), `losses`, `steps`, `lr`, `grad_function`, `step_function`,
//! with `step_time_ms` the mean per step and `peak_bytes` the largest
//! interpreter peak of a step (cpu: the arena; cuda: device memory minus
//! arguments; their report adds the backend keys below, with `step_time_ms`
//! excluding `compile_ms`). A non-finite loss is an error.
//!
//! Parameters (`--params FILE.safetensors`): the `{ck.param}` arguments by
//! name (`ck.name`, else the value name; see `ckopt_tools::params`), the
//! other arguments from `--inputs` (which then lists only those) or
//! `--seed`; a missing, extra, misshapen or non-F32 tensor is an error
//! naming it. `--params-out FILE.safetensors` writes the `{ck.param}`
//! arguments (after the last step with `--train`) by the same names.
//!
//! `--arena` (interp; cpu and cuda always run in one arena): the arena interpreter (`ckopt_interp::arena`):
//! every op result lives at its `ck.offset` inside one buffer of
//! `ck.arena_bytes`, so an overlap or in-place bug in the plan corrupts the
//! results; an unplanned function is an error (run memplan first). Its
//! `peak_bytes` is the arena size; the report adds `arena`, `arena_bytes`.
//!
//! Backends: `interp` (the reference interpreter); `cpu` (MLIR/LLVM JIT)
//! and `cuda` (a cuda bundle compiled in memory, run by ckopt-exec's runtime:
//! PTX kernels and cuBLAS through the CUDA driver; `--tf32` for TF32 GEMMs)
//! when built with the `lower` feature
//! (`make build`), else a clear error, exit 1. On cpu/cuda a function
//! without memplan's `ck.offset`/`ck.arena_bytes` is planned with
//! `fuse,memplan` first (checked by the memplan checker); the report then
//! says `planned_by_ckopt_run`.
//! Their report adds `arena_bytes`, `arena_allocated_bytes` (the one arena
//! the runtime allocated: exactly `ck.arena_bytes`), `input_bytes`,
//! `compile_ms`, `step_ms`, `device_memory_bytes` (cuda: driver free-memory
//! drop), `device`, `kernels`; `peak_bytes` is the arena (cpu) or the
//! device memory minus the argument buffers (cuda). cuda needs libdevice
//! for math ops: `CKOPT_LIBDEVICE=.../libdevice.10.bc`.
//! Every error (bad file, bad JSON, wrong input count or shape, unknown
//! function or backend) prints a diagnostic on stderr and exits 1; --help
//! exits 0. Structure: parse args -> load -> choose inputs -> run the mode
//! (one evaluation, or `--train` steps) -> emit.

use ckopt_interp::{RunStats, Tensor, check_inputs, find_func, run_func_with_stats, try_random_inputs};
use ckopt_ir::{Diag, Func, Loc};
use ckopt_tools::input::{Loaded, ToolError, display_name, load_module, read_bytes, write_text};
use ckopt_tools::tensor_json::{parse_inputs, readable, tensors_to_json};
use clap::{CommandFactory, Parser, ValueEnum};
use serde_json::{Value, json};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// Execution backends: the interpreter, or one of the runtime's
/// (`ckopt_runtime::Backend`, see `lowered`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// The reference interpreter (f32, the oracle of all tests).
    Interp,
    /// Lowered native code through MLIR/LLVM JIT (needs the `lower` feature).
    Cpu,
    /// A cuda bundle (PTX kernels, cuBLAS) compiled in memory and run on the GPU (needs the `lower` feature).
    Cuda,
}

impl Backend {
    /// The runtime's backend for the lowered ones (None: the interpreter).
    #[cfg(feature = "lower")]
    fn lowered(self) -> Option<ckopt_runtime::Backend> {
        match self {
            Backend::Interp => None,
            Backend::Cpu => Some(ckopt_runtime::Backend::Cpu),
            Backend::Cuda => Some(ckopt_runtime::Backend::Cuda),
        }
    }
    fn name(self) -> &'static str {
        match self {
            Backend::Interp => "interp",
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
        }
    }
}

/// Executes a function of a ck IR file and prints its results.
#[derive(Parser, Debug)]
#[command(name = "ckopt-run", version)]
struct Cli {
    /// The ck IR file (`-` for stdin).
    file: String,
    /// Function to run (default: the first in the file).
    #[arg(long, value_name = "NAME")]
    func: Option<String>,
    /// Where to run it.
    #[arg(long, value_enum, default_value_t = Backend::Interp)]
    backend: Backend,
    /// Input tensors as JSON: {"inputs": [{"shape": [..], "data": [..]}, ...]} in argument order.
    #[arg(long, value_name = "FILE.json", conflicts_with = "seed")]
    inputs: Option<String>,
    /// Generate inputs from this seed: uniform [-1, 1), {ck.param} arguments scaled by 1/sqrt(fan_in).
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Write the results as JSON ({"outputs": [...]}) to FILE, or stdout for `-`.
    #[arg(long, value_name = "FILE.json|-")]
    outputs: Option<String>,
    /// Write a JSON report (backend, function, step_time_ms, peak_bytes, ...) to FILE, or stdout for `-`.
    #[arg(long, value_name = "FILE.json|-")]
    report: Option<String>,
    /// cpu/cuda: plan if needed and compile (with --train: the step function), report compile_ms and the program's sizes; run nothing, generate no inputs.
    #[arg(long)]
    compile_only: bool,
    /// Run the function N times on the same inputs (one compile); the report's step_time_ms is the median, step_times_ms lists them all.
    #[arg(long, value_name = "N", default_value_t = 1, conflicts_with = "train")]
    repeat: usize,
    /// Run in ONE arena, every value at its ck.offset inside a buffer of ck.arena_bytes (the
    /// function must be planned by memplan), so a plan bug corrupts results (cpu/cuda always do).
    #[arg(long, conflicts_with = "train")]
    arena: bool,
    /// Train: SGD steps on the {ck.param} arguments via @NAME_step (built in-process by autodiff and sgd if absent) (any backend).
    #[arg(long)]
    train: bool,
    /// Number of SGD steps (with --train).
    #[arg(long, value_name = "N", default_value_t = 10, requires = "train")]
    steps: usize,
    /// SGD learning rate (with --train; used when @NAME_step is built here, an existing one has its own).
    #[arg(long, value_name = "X", default_value_t = 0.01, requires = "train")]
    lr: f32,
    /// cuda: GEMMs on TF32 tensor cores (cuBLAS); fp32 by default.
    #[arg(long)]
    tf32: bool,
    /// The {ck.param} arguments by name (ck.name, else the value name) from a safetensors file;
    /// the other arguments come from --inputs (only those, in order) or --seed.
    #[arg(long, value_name = "FILE.safetensors")]
    params: Option<String>,
    /// Write the {ck.param} arguments (after training, with --train) to a safetensors file.
    #[arg(long, value_name = "FILE.safetensors")]
    params_out: Option<String>,
}

/// What to do with the function. Training (`--train --steps N --lr X`)
/// becomes a second variant here, with its own executor and report keys.
enum Mode {
    /// Evaluate the function once on the inputs.
    Eval,
    /// SGD steps on the trainable arguments (`--train`).
    Train { steps: usize, lr: f32 },
}

/// Results of one execution, whatever the backend.
struct Execution {
    outputs: Vec<Tensor>,
    step_time_ms: f64,
    /// Every run's time (`--repeat`).
    step_times_ms: Vec<f64>,
    stats: RunStats,
    /// Backend-specific report keys (cpu/cuda: arena_bytes, arena_allocated_bytes, ...).
    extra: Option<Value>,
}

/// The inputs and a description of where they came from (for the report).
/// With `--params`, the `{ck.param}` arguments come from the safetensors
/// file and `--inputs` holds only the other arguments (in order).
fn choose_inputs(cli: &Cli, f: &Func, loaded: &Loaded) -> Result<(Vec<Tensor>, String), ToolError> {
    let Some(pfile) = &cli.params else { return choose_plain_inputs(cli, f, loaded) };
    let params = ckopt_tools::params::load_params(pfile, f)?;
    let mut slots: Vec<Option<Tensor>> = vec![None; f.params.len()];
    for (i, t) in params {
        slots[i] = Some(t);
    }
    let rest: Vec<usize> = (0..f.params.len()).filter(|&i| slots[i].is_none()).collect();
    let desc = match &cli.inputs {
        Some(path) => {
            let bytes = read_bytes(path)?;
            let name = display_name(path);
            let text = String::from_utf8_lossy(&bytes);
            let expected: Vec<_> = rest.iter().map(|&i| f.ty(f.params[i].value).dtype).collect();
            let ts = parse_inputs(&text, name, &expected).map_err(|d| ToolError::diag(d, Some(&text)))?;
            if ts.len() != rest.len() {
                let names: Vec<String> = rest.iter().map(|&i| format!("%{}", f.name_of(f.params[i].value))).collect();
                return Err(ToolError::msg(format!(
                    "{name}: with --params, the inputs are the arguments that are not {{ck.param}} ({}): expected {} tensors, got {}",
                    names.join(", "),
                    rest.len(),
                    ts.len()
                )));
            }
            for (&i, t) in rest.iter().zip(ts) {
                slots[i] = Some(t);
            }
            format!("file {name}, parameters from {pfile}")
        }
        None => {
            let ts = try_random_inputs(f, cli.seed).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
            for (slot, t) in slots.iter_mut().zip(ts) {
                if slot.is_none() {
                    *slot = Some(t);
                }
            }
            format!("seed {}, parameters from {pfile}", cli.seed)
        }
    };
    let ts: Vec<Tensor> = slots.into_iter().flatten().collect();
    check_inputs(f, &ts).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
    Ok((ts, desc))
}

/// The element types of `f`'s arguments (the tensor JSON's default dtypes).
fn arg_dtypes(f: &Func) -> Vec<ckopt_ir::DType> {
    f.params.iter().map(|p| f.ty(p.value).dtype).collect()
}

fn choose_plain_inputs(cli: &Cli, f: &Func, loaded: &Loaded) -> Result<(Vec<Tensor>, String), ToolError> {
    match &cli.inputs {
        Some(path) => {
            let bytes = read_bytes(path)?;
            let name = display_name(path);
            let text = String::from_utf8_lossy(&bytes);
            let ts = parse_inputs(&text, name, &arg_dtypes(f)).map_err(|d| ToolError::diag(d, Some(&text)))?;
            // Blame the JSON file, and point at the function's signature.
            check_inputs(f, &ts).map_err(|d| {
                let e = Diag::error(Loc::new(Arc::from(name), 0, 0), d.message)
                    .with_note(Diag::note(f.loc.clone(), format!("@{} is defined here", f.name)));
                ToolError::Diags { diags: e.into(), source: Some(loaded.source.clone()) }
            })?;
            Ok((ts, format!("file {name}")))
        }
        None => {
            let ts = try_random_inputs(f, cli.seed).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
            Ok((ts, format!("seed {}", cli.seed)))
        }
    }
}

/// Runs the function `repeat` times on the chosen backend (one compile);
/// the step time is the median.
fn execute(cli: &Cli, loaded: &Loaded, func: &str, inputs: &[Tensor]) -> Result<Execution, ToolError> {
    let (backend, arena, repeat) = (cli.backend, cli.arena, cli.repeat);
    match backend {
        Backend::Interp => {
            let mut times = Vec::with_capacity(repeat);
            let mut last = None;
            for _ in 0..repeat.max(1) {
                let start = Instant::now();
                let r = if arena {
                    let (outputs, arena_bytes) = ckopt_interp::run_func_in_arena(&loaded.module, func, inputs)
                        .map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
                    let f = find_func(&loaded.module, func).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
                    let arg_bytes: u64 = inputs.iter().map(Tensor::bytes).sum();
                    let stats = RunStats {
                        peak_bytes: arena_bytes,
                        peak_bytes_with_args: arena_bytes.saturating_add(arg_bytes),
                        arg_bytes,
                        ops: f.body.len().saturating_sub(1),
                    };
                    (outputs, stats, Some(json!({ "arena": true, "arena_bytes": arena_bytes })))
                } else {
                    let (outputs, stats) = run_func_with_stats(&loaded.module, func, inputs)
                        .map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
                    (outputs, stats, None)
                };
                times.push(start.elapsed().as_secs_f64() * 1e3);
                last = Some(r);
            }
            let (outputs, stats, extra) = last.ok_or_else(|| ToolError::msg("nothing ran"))?;
            Ok(Execution { outputs, step_time_ms: median(&times), step_times_ms: times, stats, extra })
        }
        Backend::Cpu | Backend::Cuda => execute_lowered(backend, repeat, cli.tf32, loaded, func, inputs),
    }
}

/// The median of a list of times (0 when empty).
fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// cpu/cuda: plan with memplan when the function is not planned yet, compile,
/// run one step in one arena of exactly `ck.arena_bytes` (see
/// `ckopt_tools::lowered`). `peak_bytes` is the arena actually allocated
/// (cpu) or the driver's free-memory drop minus the argument buffers (cuda).
#[cfg(feature = "lower")]
fn execute_lowered(backend: Backend, repeat: usize, tf32: bool, loaded: &Loaded, func: &str, inputs: &[Tensor]) -> Result<Execution, ToolError> {
    let b = backend.lowered().unwrap_or(ckopt_runtime::Backend::Cpu);
    let mut module = loaded.module.clone();
    let planned_here = ckopt_tools::lowered::plan_if_needed(&mut module, func, "fuse,memplan")
        .map_err(|d| ToolError::Diags { diags: d, source: Some(loaded.source.clone()) })?;
    let (outputs, rep, times) = ckopt_tools::lowered::run_lowered(&module, func, b, inputs, repeat, tf32)
        .map_err(|d| ToolError::Diags { diags: d, source: Some(loaded.source.clone()) })?;
    let peak = match backend {
        Backend::Cuda => rep.device_memory_bytes.unwrap_or(0).saturating_sub(rep.input_bytes),
        _ => rep.arena_allocated_bytes,
    };
    let ops = module.func(func).map(|f| f.body.len().saturating_sub(1)).unwrap_or(0);
    let stats = RunStats { peak_bytes: peak, peak_bytes_with_args: peak + rep.input_bytes, arg_bytes: rep.input_bytes, ops };
    let mut extra = rep.to_json();
    extra["planned_by_ckopt_run"] = json!(planned_here);
    Ok(Execution { outputs, step_time_ms: rep.step_ms, step_times_ms: times, stats, extra: Some(extra) })
}

#[cfg(not(feature = "lower"))]
fn execute_lowered(backend: Backend, _: usize, _: bool, _: &Loaded, _: &str, _: &[Tensor]) -> Result<Execution, ToolError> {
    Err(ToolError::msg(format!(
        "backend '{}' needs ckopt-run built with the `lower` feature (`make build`, or \
         `cargo build --features ckopt-tools/lower`); use --backend interp",
        backend.name()
    )))
}

fn report_json(cli: &Cli, func: &str, inputs_desc: &str, ex: &Execution) -> Value {
    let mut v = report_base(cli, func, inputs_desc, ex);
    if let (Some(Value::Object(extra)), Value::Object(m)) = (&ex.extra, &mut v) {
        for (k, x) in extra {
            if !m.contains_key(k) {
                m.insert(k.clone(), x.clone());
            }
        }
    }
    v
}

fn report_base(cli: &Cli, func: &str, inputs_desc: &str, ex: &Execution) -> Value {
    json!({
        "backend": cli.backend.name(),
        "function": func,
        "step_time_ms": ex.step_time_ms,
        "step_times_ms": ex.step_times_ms,
        "peak_bytes": ex.stats.peak_bytes,
        "peak_bytes_with_args": ex.stats.peak_bytes_with_args,
        "arg_bytes": ex.stats.arg_bytes,
        "ops": ex.stats.ops,
        "inputs": inputs_desc,
        "outputs": ex.outputs.len(),
    })
}

fn emit(cli: &Cli, func: &str, inputs_desc: &str, ex: &Execution) -> Result<(), ToolError> {
    match &cli.outputs {
        Some(path) => write_text(path, &tensors_to_json("outputs", &ex.outputs))?,
        None => {
            let mut s = String::new();
            for (i, t) in ex.outputs.iter().enumerate() {
                s.push_str(&format!("result {i}: {}\n", readable(t)));
            }
            s.push_str(&format!(
                "# @{func} on {}: {:.3} ms, peak {} bytes (arguments excluded), inputs from {inputs_desc}\n",
                cli.backend.name(),
                ex.step_time_ms,
                ex.stats.peak_bytes
            ));
            write_text("-", &s)?;
        }
    }
    if let Some(path) = &cli.report {
        let text = serde_json::to_string_pretty(&report_json(cli, func, inputs_desc, ex))
            .map_err(|e| ToolError::msg(format!("cannot encode the report: {e}")))?;
        write_text(path, &(text + "\n"))?;
    }
    Ok(())
}

/// `--train` on cpu/cuda: the step function is compiled once (planned with
/// `inplace,fuse,memplan` first if needed) and every step runs on the
/// backend's resident arguments; `step_time_ms` is the mean step (the
/// compile time is `compile_ms`).
#[cfg(feature = "lower")]
#[allow(clippy::too_many_arguments)]
fn train_lowered(
    backend: Backend,
    loaded: &Loaded,
    func: &str,
    inputs: Vec<Tensor>,
    steps: usize,
    lr: f32,
    tf32: bool,
    on_step: impl FnMut(usize, usize, f32),
) -> Result<(ckopt_tools::train::TrainResult, Option<Value>), ToolError> {
    let b = backend.lowered().unwrap_or(ckopt_runtime::Backend::Cpu);
    let (r, rep, planned) = ckopt_tools::lowered::train_lowered(&loaded.module, func, b, inputs, steps, lr, tf32, on_step)
        .map_err(|d| ToolError::Diags { diags: d, source: Some(loaded.source.clone()) })?;
    let mut v = rep.to_json();
    v["planned_by_ckopt_run"] = json!(planned);
    v.as_object_mut().map(|o| o.remove("step_ms"));
    Ok((r, Some(v)))
}

#[cfg(not(feature = "lower"))]
#[allow(clippy::too_many_arguments)]
fn train_lowered(
    backend: Backend,
    _: &Loaded,
    _: &str,
    _: Vec<Tensor>,
    _: usize,
    _: f32,
    _: bool,
    _: impl FnMut(usize, usize, f32),
) -> Result<(ckopt_tools::train::TrainResult, Option<Value>), ToolError> {
    Err(ToolError::msg(format!(
        "backend '{}' needs ckopt-run built with the `lower` feature (`make build`, or \
         `cargo build --features ckopt-tools/lower`); use --backend interp",
        backend.name()
    )))
}

/// A loss for the progress lines: fixed-point unless it is tiny.
fn fmt_loss(l: f32) -> String {
    if l != 0.0 && l.abs() < 1e-3 { format!("{l:.6e}") } else { format!("{l:.6}") }
}

fn train_mode(
    cli: &Cli,
    loaded: &Loaded,
    func: &str,
    inputs_desc: &str,
    inputs: Vec<Tensor>,
    steps: usize,
    lr: f32,
) -> Result<(), ToolError> {
    if !lr.is_finite() || lr <= 0.0 {
        return Err(ToolError::msg(format!("--lr must be a positive number, got {lr}")));
    }
    let on_step = |k: usize, n: usize, loss: f32| {
        let _ = write_text("-", &format!("step {k}/{n} loss {}\n", fmt_loss(loss)));
    };
    let (r, extra) = match cli.backend {
        Backend::Interp => {
            let r = ckopt_tools::train::train(&loaded.module, func, inputs, steps, lr, on_step)
                .map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
            (r, None)
        }
        b => train_lowered(b, loaded, func, inputs, steps, lr, cli.tf32, on_step)?,
    };
    let first = r.losses.first().copied();
    let last = r.losses.last().copied();
    if cli.outputs.is_none() {
        let show = |l: Option<f32>| l.map(fmt_loss).unwrap_or_else(|| "none".into());
        write_text(
            "-",
            &format!(
                "# trained @{func} on {} with @{}{}: {steps} steps, lr {lr}, first loss {}, last loss {}, {:.3} ms/step, inputs from {inputs_desc}\n",
                cli.backend.name(),
                r.step_func,
                match (r.built_grad, r.built_step) {
                    (true, _) => " (built by autodiff and sgd)",
                    (false, true) => " (built by sgd)",
                    _ => "",
                },
                show(first),
                show(last),
                r.step_time_ms
            ),
        )?;
    }
    if let Some(path) = &cli.outputs {
        write_text(path, &tensors_to_json("outputs", &r.args))?;
    }
    if let Some(path) = &cli.params_out {
        let f = find_func(&loaded.module, func).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
        ckopt_tools::params::save_params(path, f, &r.args)?;
    }
    if let Some(path) = &cli.report {
        let v = json!({
            "backend": cli.backend.name(),
            "function": func,
            "grad_function": r.grad_func,
            "step_function": r.step_func,
            "steps": steps,
            "lr": lr,
            "first_loss": first,
            "last_loss": last,
            "losses": r.losses,
            "step_time_ms": r.step_time_ms,
            "step_times_ms": r.step_times_ms,
            "peak_bytes": r.peak_bytes,
            "trained_arguments": r.trained,
            "inputs": inputs_desc,
        });
        let mut v = v;
        if let (Some(Value::Object(extra)), Value::Object(m)) = (&extra, &mut v) {
            for (k, x) in extra {
                m.entry(k.clone()).or_insert_with(|| x.clone());
            }
        }
        let text = serde_json::to_string_pretty(&v).map_err(|e| ToolError::msg(format!("cannot encode the report: {e}")))?;
        write_text(path, &(text + "\n"))?;
    }
    Ok(())
}

fn run(cli: &Cli) -> Result<(), ToolError> {
    let loaded = load_module(&cli.file)?;
    let func = match &cli.func {
        Some(name) => name.clone(),
        None => match loaded.module.funcs.first() {
            Some(f) => f.name.clone(),
            None => {
                let loc = Loc::new(Arc::from(loaded.name.as_str()), 0, 0);
                return Err(ToolError::diag(Diag::error(loc, "the module has no function to run"), None));
            }
        },
    };
    let mode = if cli.train { Mode::Train { steps: cli.steps, lr: cli.lr } } else { Mode::Eval };
    let func = if cli.train { ckopt_tools::train::loss_func_name(&loaded.module, &func) } else { func };
    let f = find_func(&loaded.module, &func).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
    if cli.compile_only {
        return compile_only_mode(cli, &loaded, &func);
    }
    let (inputs, inputs_desc) = choose_inputs(cli, f, &loaded)?;
    match mode {
        Mode::Eval => {
            if cli.repeat == 0 {
                return Err(ToolError::msg("--repeat must be at least 1"));
            }
            let ex = execute(cli, &loaded, &func, &inputs)?;
            if let Some(path) = &cli.params_out {
                ckopt_tools::params::save_params(path, f, &inputs)?;
            }
            emit(cli, &func, &inputs_desc, &ex)
        }
        Mode::Train { steps, lr } => train_mode(cli, &loaded, &func, &inputs_desc, inputs, steps, lr),
    }
}

/// `--compile-only`: the backend's compile report, as `--report` JSON (or a summary line).
fn compile_only_mode(cli: &Cli, loaded: &Loaded, func: &str) -> Result<(), ToolError> {
    let v = compile_only_report(cli, loaded, func)?;
    match &cli.report {
        Some(path) => {
            let text = serde_json::to_string_pretty(&v).map_err(|e| ToolError::msg(format!("cannot encode the report: {e}")))?;
            write_text(path, &(text + "\n"))
        }
        None => write_text(
            "-",
            &format!(
                "# compiled @{} for {}: {:.1} ms, arena {} bytes, {} kernel calls, {} distinct kernels\n",
                v["function"].as_str().unwrap_or(func),
                cli.backend.name(),
                v["compile_ms"].as_f64().unwrap_or(0.0),
                v["arena_bytes"],
                v["kernels"],
                v["distinct_kernels"]
            ),
        ),
    }
}

#[cfg(feature = "lower")]
fn compile_only_report(cli: &Cli, loaded: &Loaded, func: &str) -> Result<Value, ToolError> {
    let Some(b) = cli.backend.lowered() else {
        return Err(ToolError::msg("--compile-only needs --backend cpu or cuda (the interpreter compiles nothing)"));
    };
    let (rep, planned) = ckopt_tools::lowered::compile_only(&loaded.module, func, b, cli.train.then_some(cli.lr))
        .map_err(|d| ToolError::Diags { diags: d, source: Some(loaded.source.clone()) })?;
    let mut v = rep.to_json();
    v["planned_by_ckopt_run"] = json!(planned);
    Ok(v)
}

#[cfg(not(feature = "lower"))]
fn compile_only_report(cli: &Cli, _: &Loaded, _: &str) -> Result<Value, ToolError> {
    Err(ToolError::msg(format!(
        "backend '{}' needs ckopt-run built with the `lower` feature (`make build`, or \
         `cargo build --features ckopt-tools/lower`)",
        cli.backend.name()
    )))
}

fn main() -> ExitCode {
    let built = if cfg!(feature = "lower") { "interp, cpu, cuda" } else { "interp (cpu and cuda need the `lower` feature)" };
    let cmd = Cli::command().after_help(format!("Backends built: {built}"));
    let cli: Cli = match ckopt_tools::cli::parse(cmd) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprint!("{}", e.render("ckopt-run"));
            ExitCode::FAILURE
        }
    }
}
