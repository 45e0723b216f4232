//! ckopt: the embedding API for other frontends (a thin facade over the
//! workspace's crates; no logic of its own beyond wiring).
//!
//! 1. Get a module: `parse` ck IR text, `model` a benchmark model, or build
//!    one with `Func::push` (re-exported IR types).
//! 2. Choose passes: `Options` (autodiff, inplace, remat mode and budget,
//!    memplan) gives a pipeline string; `optimize` runs any pipeline.
//! 3. `memory_report` reads SPEC §4's numbers for every function.
//! 4. `compile` a function for `Target::Interp | Cpu | Cuda` (cpu/cuda plan
//!    it with memplan if needed) and `Compiled::run` it on `Tensor`s;
//!    `Compiled::report` gives the measured step time and arena.
//! 5. `Trainer` runs SGD steps of a model through its `@NAME_grad`.
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

fn msg(m: impl Into<String>) -> Error {
    Diag::error(Loc::unknown(), m).into()
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

/// Which passes to run, as a pipeline (SPEC §3).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Add `@NAME_grad` for every function returning a scalar loss first.
    pub autodiff: bool,
    /// Run the in-place pass (when it is registered).
    pub inplace: bool,
    /// Remat mode: `none`, `sqrt`, `greedy`, `log`, `optimal`.
    pub remat: String,
    /// Memory budget for remat in bytes (`temp_peak_bytes` limit).
    pub budget: Option<u64>,
    /// Plan the arena (needed by cpu/cuda; they plan on their own otherwise).
    pub memplan: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { autodiff: true, inplace: false, remat: "none".into(), budget: None, memplan: true }
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
        if self.remat != "none" {
            match self.budget {
                Some(b) => p.push(format!("remat{{mode={} budget={b}}}", self.remat)),
                None => p.push(format!("remat{{mode={}}}", self.remat)),
            }
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

/// SPEC §4's memory report of every function.
pub fn memory_report(module: &Module) -> Vec<MemoryReport> {
    ckopt_passes::analysis::report::module_report(module)
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
            if !ckopt_lower::is_planned(f) {
                ckopt_passes::memplan::memplan_func(f, ckopt_passes::memplan::DEFAULT_ALIGN)?;
            }
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
    /// SPEC §4 memory report of the compiled function.
    pub fn memory_report(&self) -> MemoryReport {
        ckopt_passes::analysis::report::memory_report(&self.func)
    }
    /// Deterministic inputs for the function (`ckopt-run --seed`).
    pub fn random_inputs(&self, seed: u64) -> Result<Vec<Tensor>, Error> {
        ckopt_interp::try_random_inputs(&self.func, seed).map_err(Error::from)
    }
}

/// SGD on the `{ck.param}` arguments of a model through its gradient
/// function `@NAME_grad` (made by the `autodiff` pass), which returns the
/// loss and one gradient per trainable argument.
pub struct Trainer {
    step_fn: Compiled,
    params: Vec<usize>,
    lr: f32,
}

impl Trainer {
    /// `module` holds `@model` and `@model_grad`, already optimized as wanted.
    pub fn new(module: &Module, model: &str, target: Target, lr: f32) -> Result<Trainer, Error> {
        let f = module.func(model).ok_or_else(|| msg(format!("no function @{model} in the module")))?;
        let params = f.trainable_indices();
        let grad = format!("{model}_grad");
        let g = module.func(&grad).ok_or_else(|| msg(format!("no gradient function @{grad}: run the autodiff pass first")))?;
        if g.result_types.len() != 1 + params.len() || g.params.len() != f.params.len() {
            return Err(msg(format!(
                "@{grad} returns {} values for {} trainable arguments; expected the loss and one gradient each",
                g.result_types.len(),
                params.len()
            )));
        }
        for (k, &i) in params.iter().enumerate() {
            if g.result_types[1 + k] != *f.ty(f.params[i].value) {
                return Err(msg(format!("gradient {k} of @{grad} does not have the type of argument {i}")));
            }
        }
        Ok(Trainer { step_fn: compile(module, &grad, target)?, params, lr })
    }

    /// One SGD step: returns the loss at the current parameters and updates
    /// `args[p] -= lr * grad` for each trainable argument.
    pub fn step(&mut self, args: &mut [Tensor]) -> Result<f32, Error> {
        let out = self.step_fn.run(args)?;
        let loss = out.first().and_then(|t| t.data.first().copied()).ok_or_else(|| msg("the gradient function returned no loss"))?;
        for (k, &i) in self.params.iter().enumerate() {
            let (p, g) = (&mut args[i], &out[1 + k]);
            for (w, d) in p.data.iter_mut().zip(&g.data) {
                *w -= self.lr * d;
            }
        }
        Ok(loss)
    }

    /// The compiled gradient function (its report and memory report).
    pub fn compiled(&self) -> &Compiled {
        &self.step_fn
    }
}

#[cfg(test)]
mod tests;
