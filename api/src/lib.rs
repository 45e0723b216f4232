//! ckopt: the embedding API for other frontends (a thin facade over the
//! workspace's crates: the logic lives in them, this crate wires it; the
//! one piece of its own is `split_gradient`, the cut a frontend with its
//! own autograd needs). The Python package (`python/`, `import ckopt`) is
//! built on it.
//!
//! 1. Get a module: `parse` ck IR text, `load` a file, `model`/`gen_model`
//!    a benchmark model, or build one with `Func::push` (re-exported IR
//!    types).
//! 2. Choose passes: `Options` (autodiff, inplace, remat mode and budget,
//!    memplan) gives a pipeline string; `optimize` runs any pipeline
//!    (`optimize_interruptible` asks a hook before each pass).
//! 3. `memory_report`/`memory_report_of` read the numbers of docs/memory.md
//!    (`device_bytes`: "does it fit?"); `memory_curves`/`memory_curve` the
//!    memory/recompute trade-off of gradient functions; `reports_json` and
//!    `curves_json` are the one serializer of the `ckopt-opt
//!    --memory-report`/`--memory-curve` JSON.
//! 4. `compile` a function for `Target::Interp | Cpu | Cuda` (cpu/cuda plan
//!    it with `fuse,memplan` if needed) and `Compiled::run` it on `Tensor`s;
//!    `Compiled::report` gives the measured step time and arena.
//! 5. `Trainer` runs SGD steps of a model through its step function
//!    `@NAME_step` (parameters resident on the backend), with the training
//!    driver of `ckopt-run --train` (`ckopt_passes::train`); `step_with`
//!    takes a new batch (the non-parameter arguments) each step.
//! 6. `import_onnx`/`import_onnx_bytes` turn an ONNX model into a module
//!    plus its parameter values (`Params`, in `{ck.param}` argument order),
//!    `params_tensors` makes them `Tensor`s; `read_params`/`write_params`
//!    are safetensors; `arg_name` is an argument's name there.
//! 7. `split_gradient` cuts a planned `@NAME_grad` into its forward and
//!    backward halves and the values kept between them, for a frontend
//!    whose own autograd runs the step (the Python package's
//!    `ckopt.torch`); each half is a ck function.
//!
//! Errors are `Error` values: an `ErrorKind` (what failed), diagnostics and
//! the source they point into (`render` is the tools' text); no call panics
//! on bad input.

use std::fmt;

mod split;
pub use split::{GradientSplit, split_gradient};

pub use ckopt_interp::{ShapeError, Tensor};
pub use ckopt_ir::{Attr, Attrs, DType, Diag, Diags, Func, Loc, Module, OpKind, TensorType, ValueId, attrs};
pub use ckopt_lower::PtxOptions;
pub use ckopt_models::{GenOptions, ModelKind, SizeOpt};
pub use ckopt_passes::analysis::report::MemoryReport;
pub use ckopt_passes::remat::curve::{Curve, CurvePoint};
pub use ckopt_runtime::Report as RunReport;
pub use ckopt_onnx::{ImportOptions, Loss, NamedTensor, Params};
pub use ckopt_passes::sgd::{AdamWOptions, SgdOptions, StepRule};
pub use ckopt_passes::train::Hyper;
pub use ckopt_train::{Dataset, EvalResult, JobResult, Schedule, ScheduleKind};

/// What failed, so that callers (the Python package's exception classes,
/// a frontend's error handling) can tell errors apart without parsing
/// messages. Every call documents the kinds it returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// ck IR text that does not parse or verify (`parse`, `load`).
    Parse,
    /// A pipeline text that does not parse: unknown pass or option, bad value.
    Pipeline,
    /// A pass that failed (an infeasible remat budget, ...) or whose output
    /// did not verify.
    Pass,
    /// Planning or compiling a function for cpu/cuda; an unknown function.
    Compile,
    /// Running a step: a backend failure, a non-finite training loss.
    Run,
    /// Arguments that do not match the function (count, shape, element type).
    Input,
    /// An ONNX model or a safetensors file that cannot be imported or read.
    Import,
    /// A file that cannot be read or written.
    Io,
    /// A model or size that `ckopt-gen` does not have.
    Gen,
    /// The caller's `should_stop` hook stopped a long call between two
    /// passes (`optimize_interruptible`).
    Interrupted,
}

/// An error with its kind, diagnostics and, when known, the source they
/// point into.
#[derive(Debug, Clone)]
pub struct Error {
    pub kind: ErrorKind,
    pub diags: Diags,
    pub source: Option<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, diags: impl Into<Diags>, source: Option<String>) -> Error {
        Error { kind, diags: diags.into(), source }
    }
    /// An `Input` error with this message.
    pub fn input(m: impl std::fmt::Display) -> Error {
        err(ErrorKind::Input, m)
    }
    /// The error as the command-line tools print it: each diagnostic
    /// `FILE:LINE:COL: error: MESSAGE`, with the source line and a caret
    /// when the source is known (ends with a newline).
    pub fn render(&self) -> String {
        self.diags.render(self.source.as_deref())
    }
    /// The same error with another kind (what a call reports it as).
    pub fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.kind = kind;
        self
    }
    /// The same error rendered against `source` when it has none yet.
    pub fn with_source(mut self, source: Option<&str>) -> Error {
        if self.source.is_none() {
            self.source = source.map(str::to_string);
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.render().trim_end())
    }
}

impl std::error::Error for Error {}

/// Diagnostics from a call that does not say otherwise are `Compile`
/// errors (planning, lowering); calls that know better set the kind.
impl From<Diags> for Error {
    fn from(diags: Diags) -> Error {
        Error { kind: ErrorKind::Compile, diags, source: None }
    }
}

impl From<Diag> for Error {
    fn from(d: Diag) -> Error {
        Error { kind: ErrorKind::Compile, diags: d.into(), source: None }
    }
}

fn err(kind: ErrorKind, m: impl std::fmt::Display) -> Error {
    Error::new(kind, Diag::error(Loc::unknown(), m.to_string()), None)
}

/// Imports an ONNX model: a module with one function (graph inputs, loss
/// inputs, then one `{ck.param}` argument per initializer that feeds
/// computation) and the parameters' values in that argument order.
/// Errors: `Import` (`Io` when the file cannot be read).
pub fn import_onnx(path: impl AsRef<std::path::Path>, opts: ImportOptions) -> Result<(Module, Params), Error> {
    let p = path.as_ref();
    let file = p.display().to_string();
    let bytes = std::fs::read(p).map_err(|e| err(ErrorKind::Io, format!("cannot read '{file}': {e}")))?;
    import_onnx_bytes(&bytes, &file, p.parent(), opts)
}

/// `import_onnx` of a serialized model held in memory (`file` names it in
/// diagnostics; external tensor data is looked for in `dir`, when given).
/// Errors: `Import`.
pub fn import_onnx_bytes(bytes: &[u8], file: &str, dir: Option<&std::path::Path>, opts: ImportOptions) -> Result<(Module, Params), Error> {
    ckopt_onnx::import_bytes(bytes, file, dir, &opts).map_err(|d| Error::new(ErrorKind::Import, d, None))
}

/// Parameter values as tensors (for `Compiled::run` and `Trainer::step`).
pub fn params_tensors(params: &Params) -> Result<Vec<Tensor>, Error> {
    params
        .iter()
        .map(|p| Tensor::new(p.shape.iter().map(|&d| d as usize).collect(), p.data.clone()).map_err(|e| err(ErrorKind::Input, e)))
        .collect()
}

/// Reads a safetensors file of f32 tensors. Errors: `Io`, `Import`.
pub fn read_params(path: impl AsRef<std::path::Path>) -> Result<Params, Error> {
    let p = path.as_ref();
    let file = p.display().to_string();
    let bytes = std::fs::read(p).map_err(|e| err(ErrorKind::Io, format!("cannot read '{file}': {e}")))?;
    ckopt_onnx::read_safetensors(&bytes, &file).map_err(|d| Error::new(ErrorKind::Import, d, None))
}

/// Writes tensors as a safetensors file. Errors: `Input`, `Io`.
pub fn write_params(path: impl AsRef<std::path::Path>, params: &Params) -> Result<(), Error> {
    let bytes = ckopt_onnx::write_safetensors(params).map_err(|e| err(ErrorKind::Input, e))?;
    std::fs::write(path.as_ref(), bytes).map_err(|e| err(ErrorKind::Io, format!("cannot write '{}': {e}", path.as_ref().display())))
}

/// The name of argument `i` of `f` in weights files and parameter
/// dictionaries: its `ck.name`, else its value name without `%`.
pub fn arg_name(f: &Func, i: usize) -> String {
    ckopt_onnx::weights::arg_name(f, i)
}

/// Parses and verifies ck IR text (`file` names it in diagnostics).
/// Errors: `Parse`, rendered against `text`.
pub fn parse(text: &str, file: &str) -> Result<Module, Error> {
    ckopt_ir::parse_and_verify(text, file).map_err(|diags| Error::new(ErrorKind::Parse, diags, Some(text.to_string())))
}

/// Reads and parses a ck IR file (diagnostics name it as `path` is
/// written, as the tools do). Returns the module and its text (what
/// errors of later calls are rendered against). Errors: `Io`, `Parse`.
pub fn load(path: impl AsRef<std::path::Path>) -> Result<(Module, String), Error> {
    let p = path.as_ref();
    let file = p.display().to_string();
    let bytes = std::fs::read(p).map_err(|e| err(ErrorKind::Io, format!("cannot read '{file}': {e}")))?;
    parse_bytes(bytes, &file)
}

/// `parse` of a file's bytes (what `load` does after reading it): invalid
/// UTF-8 is a `Parse` error at the line and column of the first bad byte,
/// never a lossy decode. Returns the module and its text.
pub fn parse_bytes(bytes: Vec<u8>, file: &str) -> Result<(Module, String), Error> {
    let text = ckopt_ir::parser::decode_utf8(bytes, file, 1).map_err(|(d, good)| Error::new(ErrorKind::Parse, d, Some(good)))?;
    let m = parse(&text, file)?;
    Ok((m, text))
}

/// Prints a module as ck IR.
pub fn print(module: &Module) -> String {
    ckopt_ir::print_module(module)
}

/// A benchmark model (`mlp`, `resmlp`, `lstm`, `resnet`, `transformer`) as
/// `ckopt-gen` prints it. Errors: `Gen`.
pub fn model(kind: ModelKind, opts: &GenOptions) -> Result<Module, Error> {
    ckopt_models::generate(kind, opts).map_err(|e| err(ErrorKind::Gen, e))
}

/// `model` by names, as `ckopt-gen MODEL --SIZE N ...` takes them: the
/// model's name and `(size option, value)` pairs (`("depth", 4)`). An
/// unknown model or size name is a `Gen` error listing the valid ones.
pub fn gen_model(name: &str, sizes: &[(&str, u64)]) -> Result<Module, Error> {
    let names = || ModelKind::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ");
    let kind = ModelKind::from_name(name).ok_or_else(|| err(ErrorKind::Gen, format!("unknown model '{name}' (models: {})", names())))?;
    let mut opts = GenOptions::default();
    for &(k, v) in sizes {
        let o = SizeOpt::ALL.iter().copied().find(|o| o.name() == k).ok_or_else(|| {
            let valid: Vec<&str> = kind.options().iter().map(|(o, _)| o.name()).collect();
            err(ErrorKind::Gen, format!("unknown size '{k}' for {name} (its sizes: {})", valid.join(", ")))
        })?;
        opts.set(o, Some(v));
    }
    model(kind, &opts)
}

/// Which passes to run, as a pipeline (docs/passes.md).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Add `@NAME_grad` for every function returning a scalar loss first.
    pub autodiff: bool,
    /// Run the in-place pass.
    pub inplace: bool,
    /// Add `@NAME_step` with SGD at this learning rate (the `sgd` pass).
    pub sgd: Option<f32>,
    /// Fuse ops into kernels (the `fuse` pass).
    pub fuse: bool,
    /// Remat mode: `none`, `sqrt`, `greedy`, `log`, `optimal`.
    pub remat: String,
    /// Memory budget for remat in bytes (`temp_peak_bytes` limit).
    pub budget: Option<u64>,
    /// Device budget for remat in bytes (`device_bytes`: arguments + arena).
    pub device_budget: Option<u64>,
    /// Plan the arena (needed by cpu/cuda; they plan on their own otherwise).
    pub memplan: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            autodiff: true,
            inplace: false,
            sgd: None,
            fuse: false,
            remat: "none".into(),
            budget: None,
            device_budget: None,
            memplan: true,
        }
    }
}

impl Options {
    /// The pipeline string, e.g. `autodiff,remat{mode=sqrt},memplan`.
    pub fn pipeline(&self) -> String {
        let mut p = Vec::new();
        if self.autodiff {
            p.push("autodiff".to_string());
        }
        if self.inplace {
            p.push("inplace".to_string());
        }
        if let Some(lr) = self.sgd {
            p.push(format!("sgd{{lr={lr}}}"));
        }
        if self.fuse {
            p.push("fuse".to_string());
        }
        if self.remat != "none" {
            let mut r = format!("remat{{mode={}", self.remat);
            if let Some(b) = self.budget {
                r.push_str(&format!(" budget={b}"));
            }
            if let Some(d) = self.device_budget {
                r.push_str(&format!(" device_budget={d}"));
            }
            r.push('}');
            p.push(r);
        }
        if self.memplan {
            p.push("memplan".to_string());
        }
        p.join(",")
    }
}

/// Runs a pass pipeline (`autodiff,remat{mode=sqrt},memplan`, ...) on the
/// module, verifying after each pass. Errors: `Pipeline`, `Pass`.
pub fn optimize(module: &mut Module, pipeline: &str) -> Result<(), Error> {
    optimize_interruptible(module, pipeline, || false)
}

/// `optimize`, asking `should_stop` before each pass: when it says true the
/// call returns an `Interrupted` error and the module is as the passes run
/// so far left it (the Python package checks for Ctrl-C there).
pub fn optimize_interruptible(module: &mut Module, pipeline: &str, mut should_stop: impl FnMut() -> bool) -> Result<(), Error> {
    if pipeline.trim().is_empty() {
        return Ok(());
    }
    let mut pm = ckopt_passes::PassManager::parse(pipeline).map_err(|e| err(ErrorKind::Pipeline, e))?;
    let mut stopped = None;
    pm.run_until(module, |next| {
        if should_stop() {
            stopped = Some(next.to_string());
            true
        } else {
            false
        }
    })
    .map_err(|d| Error::new(ErrorKind::Pass, d, None))?;
    match stopped {
        Some(pass) => Err(err(ErrorKind::Interrupted, format!("interrupted before pass {pass}"))),
        None => Ok(()),
    }
}

/// The memory report (docs/memory.md) of every function.
pub fn memory_report(module: &Module) -> Vec<MemoryReport> {
    ckopt_passes::analysis::report::module_report(module)
}

/// The memory report of one function. Errors: `Compile` (no such function).
pub fn memory_report_of(module: &Module, func: &str) -> Result<MemoryReport, Error> {
    let f = find(module, func)?;
    Ok(ckopt_passes::analysis::report::memory_report(f))
}

/// The memory/recompute curve (docs/remat.md) of every gradient function:
/// the Pareto front of (temp peak bytes, recompute flops) over the plans
/// remat can make, each point with the pass text that reproduces it. Take it
/// after the passes that come before `remat` (e.g. `autodiff,inplace`).
pub fn memory_curves(module: &Module) -> Vec<Curve> {
    ckopt_passes::remat::curve::module_curves(module)
}

/// The curve of one function. Errors: `Compile` when there is no such
/// function or remat cannot rewrite it (not a gradient function).
pub fn memory_curve(module: &Module, func: &str) -> Result<Curve, Error> {
    let f = find(module, func)?;
    ckopt_passes::remat::curve::memory_curve(f).ok_or_else(|| {
        Error::new(
            ErrorKind::Compile,
            Diag::error(f.loc.clone(), format!("@{func} has no memory curve: remat rewrites gradient functions (run autodiff first)")),
            None,
        )
    })
}

/// The memory reports as the JSON of `ckopt-opt --memory-report` (an
/// array, one object per report; the one serializer of that schema).
pub fn reports_json(reports: &[MemoryReport]) -> String {
    ckopt_passes::analysis::report::reports_json(reports)
}

/// The curves as the JSON of `ckopt-opt --memory-curve` (an array, one
/// object per curve; the one serializer of that schema).
pub fn curves_json(curves: &[Curve]) -> String {
    ckopt_passes::remat::curve::curves_json(curves)
}

fn find<'m>(module: &'m Module, func: &str) -> Result<&'m Func, Error> {
    module.func(func).ok_or_else(|| {
        let names: Vec<String> = module.funcs.iter().map(|f| format!("@{}", f.name)).collect();
        err(ErrorKind::Compile, format!("no function @{func} in the module (functions: {})", names.join(", ")))
    })
}

/// Where `compile` runs a function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The reference interpreter.
    Interp,
    /// MLIR/LLVM JIT in one host arena of `ck.arena_bytes`.
    Cpu,
    /// NVPTX through cudarc in one device arena (needs a GPU and libdevice for math).
    Cuda,
}

/// A function compiled for a target, ready to run many steps.
pub struct Compiled {
    func: Func,
    module: Module,
    exec: Option<ckopt_runtime::Executor>,
    last: Option<RunReport>,
}

fn backend(target: Target) -> Option<ckopt_runtime::Backend> {
    match target {
        Target::Interp => None,
        Target::Cpu => Some(ckopt_runtime::Backend::Cpu),
        Target::Cuda => Some(ckopt_runtime::Backend::Cuda),
    }
}

/// Compiles `func` of `module` for `target`. For cpu/cuda the function is
/// planned with memplan first when it has no `ck.offset`s. Errors: `Compile`.
pub fn compile(module: &Module, func: &str, target: Target) -> Result<Compiled, Error> {
    compile_with(module, func, target, &PtxOptions::default())
}

/// `compile` with NVPTX options (sm, libdevice path, block size).
pub fn compile_with(module: &Module, func: &str, target: Target, ptx: &PtxOptions) -> Result<Compiled, Error> {
    let mut module = module.clone();
    let name = find(&module, func)?.name.clone();
    let exec = match backend(target) {
        None => None,
        Some(b) => {
            ckopt_passes::train::plan_if_needed(&mut module, &name, "fuse,memplan")?;
            Some(ckopt_runtime::Executor::new(find(&module, &name)?, b, ptx)?)
        }
    };
    let func = find(&module, &name)?.clone();
    Ok(Compiled { func, module, exec, last: None })
}

impl Compiled {
    /// Runs one step: one tensor per argument in, one per result out.
    /// Errors: `Input` (count, shapes), `Run`.
    pub fn run(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Error> {
        ckopt_interp::check_inputs(&self.func, inputs).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        let run = |d: Diag| Error::new(ErrorKind::Run, d, None);
        match &mut self.exec {
            Some(e) => {
                let out = e.step(inputs).map_err(run)?;
                self.last = Some(e.report());
                Ok(out)
            }
            None => {
                let t = std::time::Instant::now();
                let out = ckopt_interp::run_func(&self.module, &self.func.name, inputs).map_err(run)?;
                self.last = Some(RunReport {
                    backend: "interp".into(),
                    function: self.func.name.clone(),
                    step_ms: t.elapsed().as_secs_f64() * 1e3,
                    steps: self.last.as_ref().map(|r| r.steps).unwrap_or(0) + 1,
                    input_bytes: inputs.iter().map(Tensor::bytes).sum(),
                    ..Default::default()
                });
                Ok(out)
            }
        }
    }
    /// Runs one step on the caller's memory: `args[i]` holds argument i's
    /// elements (little-endian, exactly its bytes), `outs[j]` receives
    /// result j's. On the cpu backend the arguments are read in place (no
    /// copy into the executor's buffers) and each result is copied once;
    /// elsewhere this goes through `run`. `arena` (cpu only, ignored
    /// elsewhere): the caller's memory for the step's values, at least
    /// `arena_bytes()`, 64-byte aligned. Errors: `Input` (counts, byte
    /// sizes, a donated argument on cpu, a short or misaligned arena), `Run`.
    pub fn run_borrowed(&mut self, args: &[&[u8]], outs: &mut [&mut [u8]], arena: Option<&mut [u8]>) -> Result<(), Error> {
        let input = |d: Diag| Error::new(ErrorKind::Input, d, None);
        let f = &self.func;
        let bytes = |t: &ckopt_ir::TensorType| t.shape.iter().product::<u64>().saturating_mul(t.dtype.bytes());
        if args.len() != f.params.len() || outs.len() != f.result_types.len() {
            let m = format!("@{} takes {} arguments and gives {} results, got {} and {}", f.name, f.params.len(), f.result_types.len(), args.len(), outs.len());
            return Err(input(Diag::error(f.loc.clone(), m)));
        }
        for (i, (a, p)) in args.iter().zip(&f.params).enumerate() {
            let t = f.ty(p.value);
            if a.len() as u64 != bytes(t) {
                let m = format!("argument {i} (%{}) of @{} is {t}: {} bytes, got {}", f.name_of(p.value), f.name, bytes(t), a.len());
                return Err(input(Diag::error(f.loc.clone(), m)));
            }
        }
        for (j, (o, t)) in outs.iter().zip(&f.result_types).enumerate() {
            if o.len() as u64 != bytes(t) {
                let m = format!("result {j} of @{} is {t}: {} bytes, got {}", f.name, bytes(t), o.len());
                return Err(input(Diag::error(f.loc.clone(), m)));
            }
        }
        let need = self.arena_bytes();
        if let Some(a) = &arena
            && ((a.len() as u64) < need || a.as_ptr() as usize % 64 != 0)
        {
            let m = format!("the arena for @{} needs {need} bytes at a 64-byte aligned address, got {} bytes", f.name, a.len());
            return Err(input(Diag::error(f.loc.clone(), m)));
        }
        #[allow(irrefutable_let_patterns)]
        if let Some(ckopt_runtime::Executor::Cpu(e)) = &mut self.exec {
            e.run_borrowed(args, outs, arena).map_err(|d| Error::new(ErrorKind::Run, d, None))?;
            self.last = Some(e.report());
            return Ok(());
        }
        let inputs: Vec<Tensor> = args
            .iter()
            .zip(&f.params)
            .map(|(a, p)| {
                let t = f.ty(p.value);
                Tensor::from_le_bytes(t.shape.iter().map(|&d| d as usize).collect(), t.dtype, a)
                    .map_err(|e| input(Diag::error(f.loc.clone(), e.to_string())))
            })
            .collect::<Result<_, _>>()?;
        let res = self.run(&inputs)?;
        for (o, t) in outs.iter_mut().zip(&res) {
            o.copy_from_slice(&t.to_le_bytes());
        }
        Ok(())
    }

    /// The bytes of the arena the function was planned into (`ck.arena_bytes`;
    /// 0 on the interpreter).
    pub fn arena_bytes(&self) -> u64 {
        if self.exec.is_none() {
            return 0;
        }
        self.func.attrs.get("ck.arena_bytes").and_then(|a| a.as_int()).unwrap_or(0).max(0) as u64
    }

    /// What the last `run` measured (backend, step time, arena bytes allocated, ...).
    pub fn report(&self) -> Option<RunReport> {
        self.last.clone()
    }
    /// The function as compiled (planned for cpu/cuda).
    pub fn func(&self) -> &Func {
        &self.func
    }
    /// Memory report (docs/memory.md) of the compiled function.
    pub fn memory_report(&self) -> MemoryReport {
        ckopt_passes::analysis::report::memory_report(&self.func)
    }
    /// Deterministic inputs for the function (`ckopt-run --seed`).
    pub fn random_inputs(&self, seed: u64) -> Result<Vec<Tensor>, Error> {
        ckopt_interp::try_random_inputs(&self.func, seed).map_err(|d| Error::new(ErrorKind::Input, d, None))
    }
}

/// Training a model with the step function `@NAME_step` of the `sgd` pass
/// (built here from `@NAME_grad`, itself built by autodiff when missing, if
/// the module has none). On cpu/cuda the arguments stay resident in the
/// backend: parameters are updated in place by the step and only the loss
/// comes back per step. The driver is `ckopt_passes::train`, the same as
/// `ckopt-run --train`.
pub struct Trainer {
    exec: Box<dyn ckopt_interp::StepExec + Send>,
    sig: ckopt_passes::train::StepSig,
    step_fn: Func,
    loss_fn: Func,
    n_args: usize,
    /// The hyperparameters given (a name not set takes the step's default).
    hyper: Hyper,
    backend: Option<ckopt_runtime::Backend>,
    schedule: Option<Schedule>,
    steps: usize,
    report: Option<RunReport>,
}

impl Trainer {
    /// Prepares `@model_step` in a copy of `module` (already optimized as
    /// wanted: remat, fuse, memplan; an unplanned step function is planned
    /// with `inplace,fuse,memplan` for cpu/cuda) with SGD at `lr`, and
    /// compiles it for `target`. Load the arguments with `load` before `step`.
    /// Errors: `Compile`.
    pub fn new(module: &Module, model: &str, target: Target, lr: f32) -> Result<Trainer, Error> {
        let rule = StepRule::Sgd(SgdOptions { lr, ..Default::default() });
        Trainer::with_rule(module, model, target, &rule, Hyper::lr(lr))
    }

    /// As `new` with any update rule (`StepRule::AdamW`, SGD with momentum
    /// or clipping) for a step built here, and the hyperparameters `hyper`
    /// given to the step every step (its `{ck.hyper}` inputs; a name not set
    /// takes the step's default). Errors: `Compile`; `Input` for a
    /// hyperparameter the step does not take.
    pub fn with_rule(module: &Module, model: &str, target: Target, rule: &StepRule, hyper: Hyper) -> Result<Trainer, Error> {
        let mut m = module.clone();
        let sig = ckopt_passes::train::prepare(&mut m, model, rule)?;
        hyper.check(&sig).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        let loss_fn = find(&m, &sig.loss_func)?.clone();
        let n_args = loss_fn.params.len();
        let backend = backend(target);
        if backend.is_some() {
            ckopt_passes::train::plan_if_needed(&mut m, &sig.step_func, "inplace,fuse,memplan")?;
        }
        let step_fn = find(&m, &sig.step_func)?.clone();
        let zeros: Vec<Tensor> = step_fn.params.iter().map(|p| Tensor::zeros_of(step_fn.ty(p.value))).collect::<Result<_, _>>()?;
        let exec: Box<dyn ckopt_interp::StepExec + Send> = match backend {
            None => Box::new(ckopt_interp::InterpExec::new(m, &sig.step_func, zeros)?),
            Some(b) => Box::new(ckopt_runtime::Executor::new(&step_fn, b, &PtxOptions::default())?),
        };
        Ok(Trainer { exec, sig, step_fn, loss_fn, n_args, hyper, backend, schedule: None, steps: 0, report: None })
    }

    /// Loads the model's arguments (inputs and initial parameters, in the
    /// order of `@model`'s arguments); optimizer state starts at zero.
    /// Errors: `Input`.
    pub fn load(&mut self, args: &[Tensor]) -> Result<(), Error> {
        ckopt_interp::check_inputs(&self.loss_fn, args).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        for (i, t) in ckopt_passes::train::initial_args(&self.step_fn, &self.sig, args).iter().enumerate() {
            self.exec.set_arg(i, t).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        }
        Ok(())
    }

    /// One SGD step on the arguments loaded so far: returns the loss at the
    /// current parameters, then the parameters are updated where they live.
    /// Errors: `Run` (a backend failure, a non-finite loss).
    pub fn step(&mut self) -> Result<f32, Error> {
        self.steps += 1;
        let t = std::time::Instant::now();
        if let Some(s) = &self.schedule {
            self.hyper.set("lr", s.lr_at(self.steps));
        }
        let loss = ckopt_passes::train::step_once(self.exec.as_mut(), &self.sig, self.steps, &self.hyper)
            .map_err(|d| Error::new(ErrorKind::Run, d, None))?;
        self.report = Some(RunReport {
            function: self.sig.step_func.clone(),
            step_ms: t.elapsed().as_secs_f64() * 1e3,
            steps: self.steps as u64,
            arena_allocated_bytes: self.exec.peak_bytes(),
            ..Default::default()
        });
        Ok(loss)
    }

    /// The arguments of `@model` that are not trained (inputs, targets: a
    /// training batch), by index in argument order. Empty when every
    /// argument is trained (no `{ck.param}` marks).
    pub fn batch_indices(&self) -> Vec<usize> {
        (0..self.n_args).filter(|i| !self.sig.params.contains(i)).collect()
    }

    /// The trained arguments of `@model` (`{ck.param}`), by index.
    pub fn param_indices(&self) -> Vec<usize> {
        self.sig.params.clone()
    }

    /// One step on a new batch: `batch` holds the non-trained arguments
    /// (`batch_indices`, in that order), which replace the previous ones in
    /// the backend; the parameters stay where they live. Errors: `Input`
    /// (count, shapes), `Run`.
    pub fn step_with(&mut self, batch: &[Tensor]) -> Result<f32, Error> {
        let idx = self.batch_indices();
        if batch.len() != idx.len() {
            let names: Vec<String> = idx.iter().map(|&i| format!("%{}", self.loss_fn.name_of(self.loss_fn.params[i].value))).collect();
            return Err(err(
                ErrorKind::Input,
                format!("a batch of @{} is {} tensor(s) ({}), {} given", self.sig.loss_func, idx.len(), names.join(", "), batch.len()),
            ));
        }
        for (&i, t) in idx.iter().zip(batch) {
            let ty = self.loss_fn.ty(self.loss_fn.params[i].value);
            if !t.matches_type(ty) {
                let name = self.loss_fn.name_of(self.loss_fn.params[i].value);
                return Err(err(
                    ErrorKind::Input,
                    format!("argument {i} (%{name}) of @{} is {ty}, got {:?} of {}", self.sig.loss_func, t.shape, t.dtype.name()),
                ));
            }
            self.exec.set_arg(i, t).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        }
        self.step()
    }

    /// The model's arguments now (parameters as trained so far).
    pub fn args(&self) -> Vec<Tensor> {
        (0..self.n_args).filter_map(|i| self.exec.arg(i)).collect()
    }

    /// Deterministic arguments for the model (`ckopt-run --seed`).
    pub fn random_inputs(&self, seed: u64) -> Result<Vec<Tensor>, Error> {
        let all = ckopt_interp::try_random_inputs(&self.step_fn, seed).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        Ok(all.into_iter().take(self.n_args).collect())
    }

    /// The loss function `@model` (its arguments are what `load` takes).
    pub fn loss_function(&self) -> &Func {
        &self.loss_fn
    }

    /// The step function as compiled (planned for cpu/cuda).
    pub fn step_function(&self) -> &Func {
        &self.step_fn
    }

    /// Steps run so far.
    pub fn steps(&self) -> usize {
        self.steps
    }

    /// What the last step measured (step time; arena bytes on cpu).
    pub fn report(&self) -> Option<RunReport> {
        self.report.clone()
    }

    /// The memory report (docs/memory.md) of the step function.
    pub fn memory_report(&self) -> MemoryReport {
        ckopt_passes::analysis::report::memory_report(&self.step_fn)
    }

    /// Sets a hyperparameter input (`"lr"`, `"momentum"`, `"beta1"`, ...)
    /// for the following steps. Errors: `Input` when the step has no such input.
    pub fn set_hyper(&mut self, name: &str, value: f32) -> Result<(), Error> {
        let mut h = self.hyper.clone();
        h.set(name, value);
        h.check(&self.sig).map_err(|d| Error::new(ErrorKind::Input, d, None))?;
        self.hyper = h;
        Ok(())
    }

    /// The learning rate of each following step from `schedule` (by the
    /// step number); `None`: the `lr` set (or the step's default).
    pub fn set_schedule(&mut self, schedule: Option<Schedule>) {
        self.schedule = schedule;
    }

    /// The value each hyperparameter input gets at the next step.
    pub fn hyperparameters(&self) -> Vec<(String, f32)> {
        let mut h = self.hyper.clone();
        if let Some(s) = &self.schedule {
            h.set("lr", s.lr_at(self.steps + 1));
        }
        h.values(&self.sig, self.steps + 1).into_iter().map(|(_, n, v)| (n, v)).collect()
    }

    /// Writes a checkpoint (parameters, optimizer state, step) into `dir`,
    /// atomically (docs/training.md). Errors: `Run` (I/O).
    pub fn save(&self, dir: &str) -> Result<(), Error> {
        let spec = self.job_spec(0, None, None, None);
        ckopt_train::job::save_checkpoint(std::path::Path::new(dir), self.exec.as_ref(), &self.step_fn, &self.sig, &spec, None, self.steps)
            .map(|_| ())
            .map_err(|m| err(ErrorKind::Run, m))
    }

    /// Loads the checkpoint in `dir` (refused whole when it is not one of
    /// this model): parameters, optimizer state, and the step counter, so
    /// the following steps continue exactly. Errors: `Input`.
    pub fn resume(&mut self, dir: &str) -> Result<usize, Error> {
        let (step, _) = ckopt_train::job::resume_into(self.exec.as_mut(), &self.step_fn, &self.sig, std::path::Path::new(dir))
            .map_err(|m| err(ErrorKind::Input, m))?;
        self.steps = step;
        Ok(step)
    }

    fn job_spec(&self, steps: usize, shuffle: Option<u64>, eval_every: Option<usize>, save: Option<(&str, Option<usize>)>) -> ckopt_train::JobSpec {
        ckopt_train::JobSpec {
            steps,
            shuffle,
            hyper: self.hyper.clone(),
            schedule: self.schedule,
            eval_every,
            save_dir: save.map(|s| std::path::PathBuf::from(s.0)),
            save_every: save.and_then(|s| s.1),
            resume: None,
            info: serde_json::json!({"api": "ckopt::Trainer"}),
        }
    }

    /// Trains on a safetensors dataset (docs/training.md: one tensor per
    /// batch argument, examples along dimension 0, validated before any
    /// step): `steps` steps from the current step, batches by `shuffle`
    /// seed (per epoch), evaluation on `eval` every `eval_every` steps and
    /// at the end (on the interpreter: the loss function; cpu/cuda: compiled
    /// once), checkpoints into `save` every N steps and at the end.
    /// Errors: `Input` (the dataset), `Run`.
    pub fn fit(
        &mut self,
        data: &str,
        steps: usize,
        shuffle: Option<u64>,
        eval: Option<&str>,
        eval_every: Option<usize>,
        save: Option<(&str, Option<usize>)>,
    ) -> Result<JobResult, Error> {
        let input = |e: ckopt_train::DataError| err(ErrorKind::Input, e.to_string());
        let d = std::sync::Arc::new(Dataset::open(data, &self.loss_fn, &self.sig.params).map_err(input)?);
        let mut evaluator = match eval {
            Some(p) => {
                let ed = Dataset::open(p, &self.loss_fn, &self.sig.params).map_err(input)?;
                let (ef, target) = ckopt_train::eval_function(&self.loss_fn, &self.sig.params);
                let mut em = Module { funcs: vec![ef.clone()] };
                let zeros: Vec<Tensor> = ef.params.iter().map(|p| Tensor::zeros_of(ef.ty(p.value))).collect::<Result<_, _>>()?;
                let exec: Box<dyn ckopt_interp::StepExec> = match self.backend {
                    None => Box::new(ckopt_interp::InterpExec::new(em, &ef.name, zeros)?),
                    Some(b) => {
                        ckopt_passes::train::plan_if_needed(&mut em, &ef.name, "fuse,memplan")?;
                        let f = find(&em, &ef.name)?.clone();
                        Box::new(ckopt_runtime::Executor::new(&f, b, &PtxOptions::default())?)
                    }
                };
                Some(ckopt_train::Evaluator { exec, data: ed, params: self.sig.params.clone(), target })
            }
            None => None,
        };
        let spec = self.job_spec(steps, shuffle, eval_every, save);
        let stop = std::sync::atomic::AtomicBool::new(false);
        let r = ckopt_train::job::run(self.exec.as_mut(), &self.sig, &self.step_fn, Some(d), evaluator.as_mut(), &spec, self.steps, &stop, &mut ckopt_train::Quiet)
            .map_err(|m| err(ErrorKind::Run, m))?;
        self.steps += r.losses.len();
        Ok(r)
    }
}


#[cfg(test)]
mod tests;

// The Python package holds these across threads (the GIL is released
// while they run).
#[allow(dead_code)]
fn assert_send() {
    fn send<T: Send>() {}
    fn sync<T: Sync>() {}
    send::<Compiled>();
    send::<Trainer>();
    send::<Module>();
    sync::<Module>();
}
