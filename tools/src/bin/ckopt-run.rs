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
use ckopt_interp::StepExec;
use ckopt_passes::sgd::{AdamWOptions, SgdOptions, StepRule};
use ckopt_passes::train::Hyper;
use ckopt_train::job::{JobSpec, Observer};
use ckopt_train::{Dataset, EvalResult, Evaluator, Schedule, ScheduleKind};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
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
    /// Training steps to run (default 10; with --resume: steps after the checkpoint's).
    #[arg(long, value_name = "N", requires = "train", conflicts_with = "epochs")]
    steps: Option<usize>,
    /// Passes over --data (steps = epochs x full batches per epoch).
    #[arg(long, value_name = "E", requires = "train")]
    epochs: Option<usize>,
    /// Training data: a safetensors file with one tensor per non-parameter argument, named as it, examples along dimension 0.
    #[arg(long, value_name = "TRAIN.safetensors", requires = "train")]
    data: Option<String>,
    /// Evaluation data (same layout): mean loss (and accuracy for classifiers) every --eval-every steps and at the end.
    #[arg(long, value_name = "EVAL.safetensors", requires = "train")]
    eval_data: Option<String>,
    /// Evaluate every N steps (with --eval-data; always at the end).
    #[arg(long, value_name = "N", requires = "eval_data")]
    eval_every: Option<usize>,
    /// Shuffle seed of the data order, a new permutation each epoch (default 0; a resumed run keeps its checkpoint's).
    #[arg(long, value_name = "S", requires = "train")]
    shuffle_seed: Option<u64>,
    /// The optimizer of a step built here (default sgd); with a file's own @NAME_step it must match it.
    #[arg(long, value_enum, requires = "train")]
    optimizer: Option<OptimizerArg>,
    /// Learning rate, given to the step each step (default: the step's own, 0.01 for sgd and 0.001 for adamw built here).
    #[arg(long, value_name = "X", requires = "train", allow_negative_numbers = true)]
    lr: Option<f32>,
    /// SGD momentum (a step built here gets velocity state when > 0).
    #[arg(long, value_name = "M", requires = "train")]
    momentum: Option<f32>,
    /// AdamW's beta1,beta2 (default 0.9,0.999).
    #[arg(long, value_name = "B1,B2", requires = "train")]
    betas: Option<String>,
    /// AdamW's epsilon (default 1e-8).
    #[arg(long, value_name = "E", requires = "train")]
    eps: Option<f32>,
    /// AdamW's decoupled weight decay (default 0.01).
    #[arg(long, value_name = "W", requires = "train")]
    weight_decay: Option<f32>,
    /// Learning-rate schedule: constant, or cosine decay to 0 over --schedule-steps (both after --warmup).
    #[arg(long, value_enum, requires = "train")]
    schedule: Option<ScheduleArg>,
    /// Linear warmup steps (lr * t / N for t <= N).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "train")]
    warmup: usize,
    /// Horizon of the cosine decay (default: the run's last step; a resumed run keeps its checkpoint's).
    #[arg(long, value_name = "N", requires = "train")]
    schedule_steps: Option<usize>,
    /// Global-norm gradient clipping threshold (a step built here clips inside the step).
    #[arg(long, value_name = "C", requires = "train")]
    clip_norm: Option<f32>,
    /// Write checkpoints into DIR (atomically): every --save-every steps, at the end, and on Ctrl-C.
    #[arg(long, value_name = "DIR", requires = "train")]
    save: Option<String>,
    /// Checkpoint every N steps (with --save).
    #[arg(long, value_name = "N", requires = "save")]
    save_every: Option<usize>,
    /// Continue from DIR's checkpoint: parameters, optimizer state, step, data position.
    #[arg(long, value_name = "DIR", requires = "train")]
    resume: Option<String>,
    /// Draw train and eval loss over steps as SVG.
    #[arg(long, value_name = "FILE.svg", requires = "train")]
    plot: Option<String>,
    /// Without a terminal: one progress line every N steps (default 1).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "train")]
    log_every: usize,
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

/// What to do with the function.
enum Mode {
    /// Evaluate the function once on the inputs.
    Eval,
    /// Training steps on the trainable arguments (`--train`).
    Train,
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
    let file = ckopt_tools::params::ParamsFile::open(pfile, f)?;
    let (mut slots, desc) = other_inputs(cli, f, &file, loaded)?;
    for i in file.args() {
        if let Some(t) = file.tensor(i) {
            slots[i] = Some(t?);
        }
    }
    let ts: Vec<Tensor> = slots.into_iter().flatten().collect();
    check_inputs(f, &ts).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
    Ok((ts, desc))
}

/// With `--params FILE`: the arguments the file does not give (one slot per
/// argument, `None` for the file's), from `--inputs` (only those, in order)
/// or generated from `--seed` (the values `--seed` gives them without
/// `--params`), and the description of where the inputs came from.
fn other_inputs(cli: &Cli, f: &Func, file: &ckopt_tools::params::ParamsFile, loaded: &Loaded) -> Result<(Vec<Option<Tensor>>, String), ToolError> {
    let pfile = cli.params.as_deref().unwrap_or_default();
    let given = file.args();
    let mut slots: Vec<Option<Tensor>> = vec![None; f.params.len()];
    let rest: Vec<usize> = (0..f.params.len()).filter(|i| !given.contains(i)).collect();
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
            for &i in &rest {
                slots[i] = Some(ckopt_interp::random_arg(f, i, cli.seed).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?);
            }
            format!("seed {}, parameters from {pfile}", cli.seed)
        }
    };
    Ok((slots, desc))
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

/// The optimizer of `--optimizer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum OptimizerArg {
    Sgd,
    Adamw,
}

/// The learning-rate schedule of `--schedule`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ScheduleArg {
    Constant,
    Cosine,
}

/// Set by Ctrl-C while training with `--save`: the loop writes a last
/// checkpoint and stops.
static STOP: AtomicBool = AtomicBool::new(false);

/// A loss for the progress lines: fixed-point unless it is tiny.
fn fmt_loss(l: f32) -> String {
    if l != 0.0 && l.abs() < 1e-3 { format!("{l:.6e}") } else { format!("{l:.6}") }
}

/// The step's executor: the interpreter, or a cpu/cuda runtime.
enum TrainExec {
    Interp(ckopt_interp::InterpExec),
    #[cfg(feature = "lower")]
    Lowered(Box<ckopt_runtime::Executor>),
}

impl TrainExec {
    fn as_dyn(&mut self) -> &mut dyn StepExec {
        match self {
            TrainExec::Interp(e) => e,
            #[cfg(feature = "lower")]
            TrainExec::Lowered(e) => e.as_mut(),
        }
    }
    fn as_ref_dyn(&self) -> &dyn StepExec {
        match self {
            TrainExec::Interp(e) => e,
            #[cfg(feature = "lower")]
            TrainExec::Lowered(e) => e.as_ref(),
        }
    }
    /// Backend report keys (cpu/cuda).
    fn report(&self) -> Option<Value> {
        match self {
            TrainExec::Interp(_) => None,
            #[cfg(feature = "lower")]
            TrainExec::Lowered(e) => Some(e.report().to_json()),
        }
    }
    #[cfg(feature = "lower")]
    fn cuda_step_times(&self) -> Vec<f64> {
        match self {
            TrainExec::Lowered(e) => e.report().step_times_ms.clone(),
            _ => Vec::new(),
        }
    }
    #[cfg(not(feature = "lower"))]
    fn cuda_step_times(&self) -> Vec<f64> {
        Vec::new()
    }
}

#[cfg(not(feature = "lower"))]
fn no_lower(backend: Backend) -> ToolError {
    ToolError::msg(format!(
        "backend '{}' needs ckopt-run built with the `lower` feature (`make build`, or \
         `cargo build --features ckopt-tools/lower`); use --backend interp",
        backend.name()
    ))
}

/// Compiles `func` of `m` for the backend (planned first with `pipeline`
/// when memplan has not planned it): an executor with zero arguments.
/// Returns it and whether ckopt-run planned.
fn make_exec(cli: &Cli, m: &mut ckopt_ir::Module, func: &str, pipeline: &str, loaded: &Loaded) -> Result<(TrainExec, bool), ToolError> {
    let diags = |d: ckopt_ir::Diags| ToolError::Diags { diags: d, source: Some(loaded.source.clone()) };
    match cli.backend {
        Backend::Interp => {
            let f = find_func(m, func).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
            let zeros: Vec<Tensor> = f.params.iter().map(|p| Tensor::zeros_of(f.ty(p.value))).collect::<Result<_, _>>().map_err(|d| ToolError::diag(d, None))?;
            let e = ckopt_interp::InterpExec::new(m.clone(), func, zeros).map_err(|d| ToolError::diag(d, None))?;
            Ok((TrainExec::Interp(e), false))
        }
        #[cfg(feature = "lower")]
        b => {
            let rb = b.lowered().unwrap_or(ckopt_runtime::Backend::Cpu);
            let planned = ckopt_tools::lowered::plan_if_needed(m, func, pipeline).map_err(diags)?;
            let f = find_func(m, func).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
            let opts = ckopt_lower::CudaOptions { tf32: cli.tf32, ..Default::default() };
            let e = ckopt_runtime::Executor::new(f, rb, &opts).map_err(|d| ToolError::diag(d, None))?;
            Ok((TrainExec::Lowered(Box::new(e)), planned))
        }
        #[cfg(not(feature = "lower"))]
        b => {
            let _ = (pipeline, diags);
            Err(no_lower(b))
        }
    }
}

/// What the user asked of the optimizer: the rule to build a step with (when
/// the file has none) and the hyperparameters to give it each step.
fn optimizer_choice(cli: &Cli) -> Result<(StepRule, Hyper), ToolError> {
    let pos = |name: &str, v: Option<f32>| -> Result<(), ToolError> {
        match v {
            Some(x) if !x.is_finite() || x <= 0.0 => Err(ToolError::msg(format!("{name} must be a positive number, got {x}"))),
            _ => Ok(()),
        }
    };
    pos("--lr", cli.lr)?;
    pos("--eps", cli.eps)?;
    let unit = |name: &str, v: Option<f32>| -> Result<(), ToolError> {
        match v {
            Some(x) if !(0.0..1.0).contains(&x) => Err(ToolError::msg(format!("{name} must be in [0, 1), got {x}"))),
            _ => Ok(()),
        }
    };
    unit("--momentum", cli.momentum)?;
    let betas = match &cli.betas {
        Some(s) => {
            let v: Vec<f32> = s.split(',').map(|x| x.trim().parse::<f32>()).collect::<Result<_, _>>().map_err(|_| {
                ToolError::msg(format!("--betas expects two numbers B1,B2 (e.g. 0.9,0.999), got '{s}'"))
            })?;
            if v.len() != 2 {
                return Err(ToolError::msg(format!("--betas expects two numbers B1,B2 (e.g. 0.9,0.999), got '{s}'")));
            }
            unit("--betas", Some(v[0]))?;
            unit("--betas", Some(v[1]))?;
            Some((v[0], v[1]))
        }
        None => None,
    };
    for (name, v) in [("--weight-decay", cli.weight_decay), ("--clip-norm", cli.clip_norm)] {
        if let Some(x) = v
            && (!x.is_finite() || x < 0.0)
        {
            return Err(ToolError::msg(format!("{name} must be a number >= 0, got {x}")));
        }
    }
    let mut h = Hyper::default();
    let adamw = cli.optimizer == Some(OptimizerArg::Adamw);
    if !adamw && (betas.is_some() || cli.eps.is_some() || cli.weight_decay.is_some()) && cli.optimizer.is_some() {
        return Err(ToolError::msg("--betas, --eps and --weight-decay are AdamW's: add --optimizer adamw"));
    }
    let rule = if adamw {
        if cli.momentum.is_some() {
            return Err(ToolError::msg("--momentum is SGD's; AdamW takes --betas"));
        }
        let mut o = AdamWOptions::default();
        o.lr = cli.lr.unwrap_or(o.lr);
        if let Some((b1, b2)) = betas {
            (o.beta1, o.beta2) = (b1, b2);
        }
        o.eps = cli.eps.unwrap_or(o.eps);
        o.weight_decay = cli.weight_decay.unwrap_or(o.weight_decay);
        o.clip_norm = cli.clip_norm.unwrap_or(0.0);
        StepRule::AdamW(o)
    } else {
        let mut o = SgdOptions::default();
        o.lr = cli.lr.unwrap_or(o.lr);
        o.momentum = cli.momentum.unwrap_or(0.0);
        o.clip_norm = cli.clip_norm.unwrap_or(0.0);
        StepRule::Sgd(o)
    };
    let sets = [
        ("lr", cli.lr),
        ("momentum", cli.momentum),
        ("beta1", betas.map(|b| b.0)),
        ("beta2", betas.map(|b| b.1)),
        ("eps", cli.eps),
        ("weight_decay", cli.weight_decay),
        ("clip_norm", cli.clip_norm),
    ];
    for (name, v) in sets {
        if let Some(x) = v {
            h.set(name, x);
        }
    }
    Ok((rule, h))
}

/// The progress display: a bar on a terminal, else a line every N steps.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
    every: usize,
    quiet: bool,
    last_eval: Option<f64>,
    lines: Vec<String>,
}

impl Progress {
    fn say(&mut self, line: String) {
        if self.quiet {
            return;
        }
        match &self.bar {
            Some(b) => b.println(line),
            None => {
                let _ = write_text("-", &(line + "\n"));
            }
        }
    }
}

impl Observer for Progress {
    fn start(&mut self, first: usize, last: usize) {
        if let Some(b) = &self.bar {
            b.set_length(last as u64);
            b.set_position(first as u64);
            b.reset_eta();
        }
    }
    fn step(&mut self, step: usize, last: usize, loss: f32, lr: f32) {
        match &self.bar {
            Some(b) => {
                b.set_position(step as u64);
                let ev = self.last_eval.map(|e| format!(" eval {e:.4}")).unwrap_or_default();
                b.set_message(format!("loss {}{ev} lr {lr:.3e}", fmt_loss(loss)));
            }
            None => {
                if step % self.every.max(1) == 0 || step == last {
                    self.say(format!("step {step}/{last} loss {}", fmt_loss(loss)));
                }
            }
        }
    }
    fn eval(&mut self, r: &EvalResult) {
        self.last_eval = Some(r.loss);
        let acc = r.accuracy.map(|a| format!(" accuracy {:.4}", a)).unwrap_or_default();
        let line = format!("eval step {}: loss {:.6}{acc} ({} examples)", r.step, r.loss, r.examples);
        self.lines.push(line.clone());
        self.say(line);
    }
    fn saved(&mut self, step: usize, path: &std::path::Path) {
        if self.bar.is_none() && self.every <= 1 {
            return;
        }
        self.say(format!("saved step {step} to {}", path.display()));
    }
    fn finish(&mut self) {
        if let Some(b) = self.bar.take() {
            b.finish_and_clear();
        }
    }
}

/// The initial arguments of a training run: given (`--inputs`), read from
/// `--params` one tensor at a time (the other arguments given or
/// generated), or generated from a seed one argument at a time.
enum Inputs {
    Given(Vec<Tensor>),
    Params { file: ckopt_tools::params::ParamsFile, others: Vec<Option<Tensor>> },
    Seed(u64),
}

fn train_mode(cli: &Cli, loaded: &Loaded, func: &str, inputs_desc: &str, inputs: Inputs) -> Result<(), ToolError> {
    let diag = |d: Diag| ToolError::diag(d, Some(&loaded.source));
    let (rule, hyper) = optimizer_choice(cli)?;
    let mut m = loaded.module.clone();
    let sig = ckopt_passes::train::prepare(&mut m, func, &rule).map_err(diag)?;
    let step_opt = if sig.hypers.iter().any(|h| h.1 == "beta1") { "adamw" } else { "sgd" };
    if let Some(o) = cli.optimizer
        && !sig.built_step
        && (o == OptimizerArg::Adamw) != (step_opt == "adamw")
    {
        return Err(ToolError::msg(format!(
            "--optimizer {}: the file's @{} is an {step_opt} step; remove it (or build it with the {} pass)",
            if o == OptimizerArg::Adamw { "adamw" } else { "sgd" },
            sig.step_func,
            if o == OptimizerArg::Adamw { "adamw" } else { "sgd" }
        )));
    }
    hyper.check(&sig).map_err(|d| ToolError::msg(format!("{} (given on the command line)", d.message)))?;
    let loss_fn = find_func(&m, &sig.loss_func).map_err(diag)?.clone();
    // The data, validated before anything runs.
    let data = match &cli.data {
        Some(p) => Some(Arc::new(Dataset::open(p, &loss_fn, &sig.params).map_err(|e| ToolError::msg(format!("--data {e}")))?)),
        None => None,
    };
    if cli.epochs.is_some() && data.is_none() {
        return Err(ToolError::msg("--epochs needs --data (an epoch is one pass over a dataset)"));
    }
    let eval_data = match &cli.eval_data {
        Some(p) => Some(Dataset::open(p, &loss_fn, &sig.params).map_err(|e| ToolError::msg(format!("--eval-data {e}")))?),
        None => None,
    };
    let steps = match (cli.epochs, &data) {
        (Some(e), Some(d)) => e * d.batches_per_epoch(),
        _ => cli.steps.unwrap_or(10),
    };
    // The step, compiled; its arguments set from the inputs, one at a time.
    let (mut exec, planned) = make_exec(cli, &mut m, &sig.step_func, "inplace,fuse,memplan", loaded)?;
    let step_fn = find_func(&m, &sig.step_func).map_err(diag)?.clone();
    // Generated inputs are made one argument at a time, right where they go.
    let n_inputs = loss_fn.params.len();
    match inputs {
        Inputs::Given(v) => {
            let mut slots: Vec<Option<Tensor>> = v.into_iter().map(Some).collect();
            ckopt_train::job::set_initial_args(exec.as_dyn(), &step_fn, &sig, n_inputs, |i| {
                slots.get_mut(i).and_then(Option::take).ok_or_else(|| format!("no input {i}"))
            })
        }
        Inputs::Params { file, mut others } => ckopt_train::job::set_initial_args(exec.as_dyn(), &step_fn, &sig, n_inputs, |i| match file.tensor(i) {
            Some(t) => t.map_err(|e| e.render("ckopt-run").trim_end().to_string()),
            None => others.get_mut(i).and_then(Option::take).ok_or_else(|| format!("no input {i}")),
        }),
        Inputs::Seed(seed) => ckopt_train::job::set_initial_args(exec.as_dyn(), &step_fn, &sig, n_inputs, |i| {
            ckopt_interp::random_arg(&loss_fn, i, seed).map_err(|d| d.message)
        }),
    }
    .map_err(ToolError::msg)?;
    let mut start = 0;
    let mut resumed: Option<Value> = None;
    if let Some(dir) = &cli.resume {
        let (s, meta) = ckopt_train::job::resume_into(exec.as_dyn(), &step_fn, &sig, std::path::Path::new(dir)).map_err(ToolError::msg)?;
        if let (Some(d), Some(n)) = (&data, meta["data"]["examples"].as_u64())
            && n as usize != d.examples()
        {
            return Err(ToolError::msg(format!(
                "--resume {dir}: the checkpoint was trained on {n} examples, --data {} has {}",
                d.path(),
                d.examples()
            )));
        }
        start = s;
        resumed = Some(meta);
    }
    let from_ckpt = |k: &str| resumed.as_ref().map(|m| m[k].clone()).unwrap_or(Value::Null);
    let shuffle = cli.shuffle_seed.or_else(|| from_ckpt("shuffle_seed").as_u64()).or(Some(0));
    let base_lr = hyper.get("lr").or_else(|| sig.hypers.iter().find(|h| h.1 == "lr").map(|h| h.2)).unwrap_or(0.01);
    let sched_meta = from_ckpt("schedule");
    let schedule = match (cli.schedule, cli.warmup, sched_meta.is_object()) {
        (None, 0, false) => None,
        _ => {
            let kind = match cli.schedule {
                Some(ScheduleArg::Cosine) => ScheduleKind::Cosine,
                Some(ScheduleArg::Constant) => ScheduleKind::Constant,
                None => sched_meta["kind"].as_str().and_then(|k| k.parse().ok()).unwrap_or(ScheduleKind::Constant),
            };
            let total = cli.schedule_steps.or_else(|| sched_meta["total"].as_u64().map(|t| t as usize)).unwrap_or(start + steps);
            let warmup = if cli.warmup > 0 { cli.warmup } else { sched_meta["warmup"].as_u64().unwrap_or(0) as usize };
            Some(Schedule { kind, lr: base_lr, warmup, total })
        }
    };
    // Evaluation: @NAME_eval on its own executor.
    let mut evaluator = match eval_data {
        Some(d) => {
            let (ef, target) = ckopt_train::eval_function(&loss_fn, &sig.params);
            let mut em = ckopt_ir::Module { funcs: vec![ef.clone()] };
            let (e, _) = make_exec(cli, &mut em, &ef.name, "fuse,memplan", loaded)?;
            let boxed: Box<dyn StepExec> = match e {
                TrainExec::Interp(x) => Box::new(x),
                #[cfg(feature = "lower")]
                TrainExec::Lowered(x) => x,
            };
            Some(Evaluator { exec: boxed, data: d, params: sig.params.clone(), target })
        }
        None => None,
    };
    if cli.save.is_some() {
        let _ = ctrlc::set_handler(|| STOP.store(true, Ordering::SeqCst));
    }
    let spec = JobSpec {
        steps,
        shuffle: data.as_ref().and(shuffle),
        hyper,
        schedule,
        eval_every: cli.eval_every,
        save_dir: cli.save.as_ref().map(std::path::PathBuf::from),
        save_every: cli.save_every,
        resume: cli.resume.as_ref().map(std::path::PathBuf::from),
        info: json!({"backend": cli.backend.name(), "optimizer": step_opt, "data": cli.data}),
    };
    let tty = std::io::stdout().is_terminal() && cli.outputs.is_none();
    let mut progress = Progress {
        bar: tty.then(|| {
            let b = indicatif::ProgressBar::new(steps as u64);
            if let Ok(st) = indicatif::ProgressStyle::with_template("{bar:30.cyan/blue} step {pos}/{len} {per_sec} ETA {eta} {msg}") {
                b.set_style(st);
            }
            b
        }),
        every: cli.log_every,
        quiet: false,
        last_eval: None,
        lines: Vec::new(),
    };
    let r = ckopt_train::job::run(exec.as_dyn(), &sig, &step_fn, data.clone(), evaluator.as_mut(), &spec, start, &STOP, &mut progress)
        .map_err(ToolError::msg)?;
    let mut step_time_ms = if r.step_times_ms.is_empty() { 0.0 } else { r.step_times_ms.iter().sum::<f64>() / r.step_times_ms.len() as f64 };
    let mut step_times = r.step_times_ms.clone();
    let cuda_times = exec.cuda_step_times();
    if !cuda_times.is_empty() {
        step_time_ms = cuda_times.iter().sum::<f64>() / cuda_times.len() as f64;
        step_times = cuda_times;
    }
    let first = r.losses.first().copied();
    let last = r.losses.last().copied();
    let done = r.losses.len();
    let lr_text = match &spec.schedule {
        None => format!("lr {base_lr}"),
        Some(s) => format!("lr {base_lr} ({} schedule, warmup {}, over {} steps)", s.kind.name(), s.warmup, s.total),
    };
    if cli.outputs.is_none() {
        let show = |l: Option<f32>| l.map(fmt_loss).unwrap_or_else(|| "none".into());
        let data_text = match &data {
            Some(d) => format!("data {} ({} examples, batch {}, shuffle {})", d.path(), d.examples(), d.batch_size(),
                spec.shuffle.map(|s| format!("seed {s}")).unwrap_or_else(|| "off".into())),
            None => format!("inputs from {inputs_desc}"),
        };
        write_text(
            "-",
            &format!(
                "# trained @{func} on {} with @{}{}: {done} steps{}, {lr_text}, first loss {}, last loss {}, {:.3} ms/step, {data_text}{}\n",
                cli.backend.name(),
                sig.step_func,
                match (sig.built_grad, sig.built_step) {
                    (true, _) => format!(" (built by autodiff and {step_opt})"),
                    (false, true) => format!(" (built by {step_opt})"),
                    _ => String::new(),
                },
                if start > 0 { format!(" (resumed at step {start})") } else { String::new() },
                show(first),
                show(last),
                step_time_ms,
                if r.interrupted { ", interrupted" } else { "" },
            ),
        )?;
    }
    let need_args = cli.outputs.is_some() || cli.params_out.is_some();
    let args: Vec<Tensor> = if need_args {
        (0..loss_fn.params.len()).filter_map(|i| exec.as_ref_dyn().arg(i)).collect()
    } else {
        Vec::new()
    };
    if let Some(path) = &cli.outputs {
        write_text(path, &tensors_to_json("outputs", &args))?;
    }
    if let Some(path) = &cli.params_out {
        ckopt_tools::params::save_params(path, &loss_fn, &args)?;
    }
    let eval_json: Vec<Value> = r
        .eval
        .iter()
        .map(|e| {
            let mut v = json!({"step": e.step, "loss": e.loss, "examples": e.examples});
            if let Some(a) = e.accuracy {
                v["accuracy"] = json!(a);
            }
            v
        })
        .collect();
    if let Some(path) = &cli.plot {
        let train_pts: Vec<(usize, f32)> = r.losses.iter().enumerate().map(|(k, &l)| (start + k + 1, l)).collect();
        let eval_pts: Vec<(usize, f64)> = r.eval.iter().map(|e| (e.step, e.loss)).collect();
        let title = format!("@{func}: loss over steps ({} on {})", step_opt, cli.backend.name());
        write_text(path, &ckopt_train::plot::loss_svg(&title, &train_pts, &eval_pts))?;
    }
    if let Some(path) = &cli.report {
        let mut v = json!({
            "backend": cli.backend.name(),
            "function": func,
            "grad_function": sig.grad_func,
            "step_function": sig.step_func,
            "optimizer": step_opt,
            "steps": done,
            "start_step": start,
            "lr": base_lr,
            "lrs": r.lrs,
            "schedule": spec.schedule.map(|s| json!({"kind": s.kind.name(), "lr": s.lr, "warmup": s.warmup, "total": s.total})),
            "hyper": sig.hypers.iter().map(|h| (h.1.clone(), json!(spec.hyper.get(&h.1).unwrap_or(h.2)))).collect::<serde_json::Map<_, _>>(),
            "first_loss": first,
            "last_loss": last,
            "losses": r.losses,
            "eval": eval_json,
            "step_time_ms": step_time_ms,
            "step_times_ms": step_times,
            "wall_step_ms": r.wall_step_ms,
            "peak_bytes": r.peak_bytes,
            "trained_arguments": sig.params,
            "inputs": inputs_desc,
            "data": data.as_ref().map(|d| json!({"path": d.path(), "examples": d.examples(), "batch": d.batch_size(), "batches_per_epoch": d.batches_per_epoch()})),
            "interrupted": r.interrupted,
            "checkpoints": r.saved.iter().map(|(s, p)| json!({"step": s, "path": p.display().to_string()})).collect::<Vec<_>>(),
        });
        if let Some(Value::Object(mut extra)) = exec.report() {
            extra.remove("step_ms");
            extra.insert("planned_by_ckopt_run".into(), json!(planned));
            if let Value::Object(m) = &mut v {
                for (k, x) in extra {
                    m.entry(k).or_insert(x);
                }
            }
        }
        let text = serde_json::to_string_pretty(&v).map_err(|e| ToolError::msg(format!("cannot encode the report: {e}")))?;
        write_text(path, &(text + "\n"))?;
    }
    if r.interrupted {
        return Err(ToolError::msg(format!(
            "interrupted after step {}{}",
            start + done,
            r.saved.last().map(|(s, p)| format!("; checkpoint of step {s} in {}", p.display())).unwrap_or_default()
        )));
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
    let mode = if cli.train { Mode::Train } else { Mode::Eval };
    let func = if cli.train { ckopt_tools::train::loss_func_name(&loaded.module, &func) } else { func };
    let f = find_func(&loaded.module, &func).map_err(|d| ToolError::diag(d, Some(&loaded.source)))?;
    if cli.compile_only {
        return compile_only_mode(cli, &loaded, &func);
    }
    if let Mode::Train = mode
        && cli.inputs.is_none()
        && cli.params.is_none()
    {
        return train_mode(cli, &loaded, &func, &format!("seed {}", cli.seed), Inputs::Seed(cli.seed));
    }
    if let (Mode::Train, Some(pfile)) = (&mode, &cli.params) {
        // Read one tensor at a time into the backend (no host copy of the file).
        let file = ckopt_tools::params::ParamsFile::open(pfile, f)?;
        let (slots, desc) = other_inputs(cli, f, &file, &loaded)?;
        return train_mode(cli, &loaded, &func, &desc, Inputs::Params { file, others: slots });
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
        Mode::Train => train_mode(cli, &loaded, &func, &inputs_desc, Inputs::Given(inputs)),
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
    let (rep, planned) = ckopt_tools::lowered::compile_only(&loaded.module, func, b, cli.train.then_some(cli.lr.unwrap_or(0.01)))
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
