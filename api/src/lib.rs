//! ckopt: the embedding API for other frontends (a thin facade over the
//! workspace's crates: the logic lives in them, this crate wires it).
//!
//! 1. Get a module: `parse` ck IR text, `model` a benchmark model, or build
//!    one with `Func::push` (re-exported IR types).
//! 2. Choose passes: `Options` (autodiff, inplace, remat mode and budget,
//!    memplan) gives a pipeline string; `optimize` runs any pipeline.
//! 3. `memory_report` reads the numbers of docs/memory.md for every function
//!    (`device_bytes`: "does it fit?"); `memory_curves` the whole
//!    memory/recompute trade-off of every gradient function.
//! 4. `compile` a function for `Target::Interp | Cpu | Cuda` (cpu/cuda plan
//!    it with `fuse,memplan` if needed) and `Compiled::run` it on `Tensor`s;
//!    `Compiled::report` gives the measured step time and arena.
//! 5. `Trainer` runs SGD steps of a model through its step function
//!    `@NAME_step` (parameters resident on the backend), with the training
//!    driver of `ckopt-run --train` (`ckopt_passes::train`).
//! 6. `import_onnx` turns an ONNX model into a module plus its parameter
//!    values (`Params`, in `{ck.param}` argument order), `params_tensors`
//!    makes them `Tensor`s; `read_params`/`write_params` are safetensors.
//!
//! Errors are `Error` values (rendered diagnostics with source lines); no
//! call panics on bad input.

use std::fmt;

pub use ckopt_interp::Tensor;
pub use ckopt_ir::{Attr, Attrs, DType, Diag, Diags, Func, Loc, Module, OpKind, TensorType, ValueId, attrs};
pub use ckopt_lower::PtxOptions;
pub use ckopt_models::{GenOptions, ModelKind, SizeOpt};
pub use ckopt_passes::analysis::report::MemoryReport;
pub use ckopt_passes::remat::curve::{Curve, CurvePoint};
pub use ckopt_runtime::Report as RunReport;
pub use ckopt_onnx::{ImportOptions, Loss, NamedTensor, Params};

/// An error with its diagnostics and, when known, the source they point into.
#[derive(Debug, Clone)]
pub struct Error {
    pub diags: Diags,
    pub source: Option<String>,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.diags.render(self.source.as_deref()).trim_end())
    }
}

impl std::error::Error for Error {}

impl From<Diags> for Error {
    fn from(diags: Diags) -> Error {
        Error { diags, source: None }
    }
}

impl From<Diag> for Error {
    fn from(d: Diag) -> Error {
        Error { diags: d.into(), source: None }
    }
}

fn msg(m: impl std::fmt::Display) -> Error {
    Diag::error(Loc::unknown(), m.to_string()).into()
}

/// Imports an ONNX model: a module with one function (graph inputs, loss
/// inputs, then one `{ck.param}` argument per initializer that feeds
/// computation) and the parameters' values in that argument order.
pub fn import_onnx(path: impl AsRef<std::path::Path>, opts: ImportOptions) -> Result<(Module, Params), Error> {
    ckopt_onnx::import_file(path.as_ref(), &opts).map_err(Error::from)
}

/// Parameter values as tensors (for `Compiled::run` and `Trainer::step`).
pub fn params_tensors(params: &Params) -> Result<Vec<Tensor>, Error> {
    params.iter().map(|p| Tensor::new(p.shape.iter().map(|&d| d as usize).collect(), p.data.clone()).map_err(msg)).collect()
}

/// Reads a safetensors file of f32 tensors.
pub fn read_params(path: impl AsRef<std::path::Path>) -> Result<Params, Error> {
    let p = path.as_ref();
    let file = p.display().to_string();
    let bytes = std::fs::read(p).map_err(|e| msg(format!("cannot read '{file}': {e}")))?;
    ckopt_onnx::read_safetensors(&bytes, &file).map_err(Error::from)
}

/// Writes tensors as a safetensors file.
pub fn write_params(path: impl AsRef<std::path::Path>, params: &Params) -> Result<(), Error> {
    let bytes = ckopt_onnx::write_safetensors(params).map_err(msg)?;
    std::fs::write(path.as_ref(), bytes).map_err(|e| msg(format!("cannot write '{}': {e}", path.as_ref().display())))
}

/// Parses and verifies ck IR text (`file` names it in diagnostics).
pub fn parse(text: &str, file: &str) -> Result<Module, Error> {
    ckopt_ir::parse_and_verify(text, file).map_err(|diags| Error { diags, source: Some(text.to_string()) })
}

/// Prints a module as ck IR.
pub fn print(module: &Module) -> String {
    ckopt_ir::print_module(module)
}

/// A benchmark model (`mlp`, `resmlp`, `lstm`, `resnet`, `transformer`) as
/// `ckopt-gen` prints it.
pub fn model(kind: ModelKind, opts: &GenOptions) -> Result<Module, Error> {
    ckopt_models::generate(kind, opts).map_err(msg)
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

/// Runs a pass pipeline (`autodiff,remat{mode=sqrt},memplan`, ...) on the module.
pub fn optimize(module: &mut Module, pipeline: &str) -> Result<(), Error> {
    if pipeline.trim().is_empty() {
        return Ok(());
    }
    let mut pm = ckopt_passes::PassManager::parse(pipeline).map_err(msg)?;
    pm.run(module).map_err(Error::from)
}

/// The memory report (docs/memory.md) of every function.
pub fn memory_report(module: &Module) -> Vec<MemoryReport> {
    ckopt_passes::analysis::report::module_report(module)
}

/// The memory/recompute curve (docs/remat.md) of every gradient function:
/// the Pareto front of (temp peak bytes, recompute flops) over the plans
/// remat can make, each point with the pass text that reproduces it. Take it
/// after the passes that come before `remat` (e.g. `autodiff,inplace`).
pub fn memory_curves(module: &Module) -> Vec<Curve> {
    ckopt_passes::remat::curve::module_curves(module)
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

/// Compiles `func` of `module` for `target`. For cpu/cuda the function is
/// planned with memplan first when it has no `ck.offset`s.
pub fn compile(module: &Module, func: &str, target: Target) -> Result<Compiled, Error> {
    compile_with(module, func, target, &PtxOptions::default())
}

/// `compile` with NVPTX options (sm, libdevice path, block size).
pub fn compile_with(module: &Module, func: &str, target: Target, ptx: &PtxOptions) -> Result<Compiled, Error> {
    let mut module = module.clone();
    let f = module.func_mut(func).ok_or_else(|| msg(format!("no function @{func} in the module")))?;
    let backend = match target {
        Target::Interp => None,
        Target::Cpu => Some(ckopt_runtime::Backend::Cpu),
        Target::Cuda => Some(ckopt_runtime::Backend::Cuda),
    };
    let exec = match backend {
        None => None,
        Some(b) => {
            let name = f.name.clone();
            ckopt_passes::train::plan_if_needed(&mut module, &name, "fuse,memplan")?;
            let f = module.func(&name).ok_or_else(|| msg(format!("no function @{name}")))?;
            Some(ckopt_runtime::Executor::new(f, b, ptx)?)
        }
    };
    let func = module.func(func).cloned().ok_or_else(|| msg(format!("no function @{func}")))?;
    Ok(Compiled { func, module, exec, last: None })
}

impl Compiled {
    /// Runs one step: one tensor per argument in, one per result out.
    pub fn run(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Error> {
        match &mut self.exec {
            Some(e) => {
                let out = e.step(inputs)?;
                self.last = Some(e.report());
                Ok(out)
            }
            None => {
                let t = std::time::Instant::now();
                let out = ckopt_interp::run_func(&self.module, &self.func.name, inputs)?;
                self.last = Some(RunReport {
                    backend: "interp".into(),
                    function: self.func.name.clone(),
                    step_ms: t.elapsed().as_secs_f64() * 1e3,
                    steps: self.last.as_ref().map(|r| r.steps).unwrap_or(0) + 1,
                    ..Default::default()
                });
                Ok(out)
            }
        }
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
        ckopt_interp::try_random_inputs(&self.func, seed).map_err(Error::from)
    }
}

/// Training a model with the step function `@NAME_step` of the `sgd` pass
/// (built here from `@NAME_grad`, itself built by autodiff when missing, if
/// the module has none). On cpu/cuda the arguments stay resident in the
/// backend: parameters are updated in place by the step and only the loss
/// comes back per step. The driver is `ckopt_passes::train`, the same as
/// `ckopt-run --train`.
pub struct Trainer {
    exec: Box<dyn ckopt_interp::StepExec>,
    sig: ckopt_passes::train::StepSig,
    step_fn: Func,
    n_args: usize,
    lr: f32,
    steps: usize,
    report: Option<RunReport>,
}

impl Trainer {
    /// Prepares `@model_step` in a copy of `module` (already optimized as
    /// wanted: remat, fuse, memplan; an unplanned step function is planned
    /// with `inplace,fuse,memplan` for cpu/cuda) with SGD at `lr`, and
    /// compiles it for `target`. Load the arguments with `load` before `step`.
    pub fn new(module: &Module, model: &str, target: Target, lr: f32) -> Result<Trainer, Error> {
        let mut m = module.clone();
        let sig = ckopt_passes::train::prepare(&mut m, model, &ckopt_passes::sgd::SgdOptions { lr, ..Default::default() })?;
        let n_args = m.func(&sig.loss_func).map(|f| f.params.len()).unwrap_or(0);
        let backend = match target {
            Target::Interp => None,
            Target::Cpu => Some(ckopt_runtime::Backend::Cpu),
            Target::Cuda => Some(ckopt_runtime::Backend::Cuda),
        };
        if backend.is_some() {
            ckopt_passes::train::plan_if_needed(&mut m, &sig.step_func, "inplace,fuse,memplan")?;
        }
        let step_fn = m.func(&sig.step_func).cloned().ok_or_else(|| msg(format!("no @{}", sig.step_func)))?;
        let zeros: Vec<Tensor> = step_fn.params.iter().map(|p| Tensor::zeros(&shape(step_fn.ty(p.value)))).collect();
        let exec: Box<dyn ckopt_interp::StepExec> = match backend {
            None => Box::new(ckopt_interp::InterpExec::new(m, &sig.step_func, zeros)?),
            Some(b) => Box::new(ckopt_runtime::Executor::new(&step_fn, b, &PtxOptions::default())?),
        };
        Ok(Trainer { exec, sig, step_fn, n_args, lr, steps: 0, report: None })
    }

    /// Loads the model's arguments (inputs and initial parameters, in the
    /// order of `@model`'s arguments); optimizer state starts at zero.
    pub fn load(&mut self, args: &[Tensor]) -> Result<(), Error> {
        if args.len() != self.n_args {
            return Err(msg(format!("@{} takes {} arguments, {} given", self.sig.loss_func, self.n_args, args.len())));
        }
        for (i, t) in ckopt_passes::train::initial_args(&self.step_fn, &self.sig, args).iter().enumerate() {
            self.exec.set_arg(i, t)?;
        }
        Ok(())
    }

    /// One SGD step: returns the loss at the current parameters, then the
    /// parameters are updated where they live.
    pub fn step(&mut self) -> Result<f32, Error> {
        self.steps += 1;
        let t = std::time::Instant::now();
        let loss = ckopt_passes::train::step_once(self.exec.as_mut(), &self.sig, self.steps, self.lr)?;
        self.report = Some(RunReport {
            function: self.sig.step_func.clone(),
            step_ms: t.elapsed().as_secs_f64() * 1e3,
            steps: self.steps as u64,
            arena_allocated_bytes: self.exec.peak_bytes(),
            ..Default::default()
        });
        Ok(loss)
    }

    /// The model's arguments now (parameters as trained so far).
    pub fn args(&self) -> Vec<Tensor> {
        (0..self.n_args).filter_map(|i| self.exec.arg(i)).collect()
    }

    /// Deterministic arguments for the model (`ckopt-run --seed`).
    pub fn random_inputs(&self, seed: u64) -> Result<Vec<Tensor>, Error> {
        let all = ckopt_interp::try_random_inputs(&self.step_fn, seed)?;
        Ok(all.into_iter().take(self.n_args).collect())
    }

    /// The step function as compiled (planned for cpu/cuda).
    pub fn step_function(&self) -> &Func {
        &self.step_fn
    }

    /// What the last step measured (step time; arena bytes on cpu).
    pub fn report(&self) -> Option<RunReport> {
        self.report.clone()
    }

    /// The memory report (docs/memory.md) of the step function.
    pub fn memory_report(&self) -> MemoryReport {
        ckopt_passes::analysis::report::memory_report(&self.step_fn)
    }
}

fn shape(t: &TensorType) -> Vec<usize> {
    t.shape.iter().map(|&d| d as usize).collect()
}

#[cfg(test)]
mod tests;
