//! The executor interface every backend offers a training loop: resident
//! argument buffers, one run of the function on them, results read back.
//!
//! `InterpExec` is the interpreter's implementation (fresh tensors per run,
//! as `run_func`); `ckopt_runtime` implements the trait for its cpu and cuda
//! executors, whose argument buffers stay on the backend across runs (a
//! donated argument is updated in place, so `result_in_arg` tells the
//! caller that nothing needs copying back).

use crate::run::{RunStats, find_func, run_func_with_stats};
use crate::tensor::Tensor;
use ckopt_ir::{Diag, Module};

/// A function ready to run repeatedly on resident arguments.
pub trait StepExec {
    /// Replaces argument `i`'s contents.
    fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), Diag>;
    /// Runs the function once on the current arguments.
    fn run(&mut self) -> Result<(), Diag>;
    /// Result `j` of the last run.
    fn result(&self, j: usize) -> Option<Tensor>;
    /// Argument `i`'s current contents.
    fn arg(&self, i: usize) -> Option<Tensor>;
    /// The argument whose buffer holds result `j` after a run (a result
    /// written in place into a donated argument), if any.
    fn result_in_arg(&self, j: usize) -> Option<usize>;
    /// Measured bytes of the last run (interp: its peak; backends: their arena).
    fn peak_bytes(&self) -> u64;
    /// Moves argument `i`'s storage out, without copying it, to lend it to
    /// another executor of the same kind (`put_arg`); until it comes back
    /// this executor has no argument `i` and running is an error. `None`:
    /// this executor cannot lend (the caller copies with `arg`/`set_arg`).
    fn take_arg(&mut self, _i: usize) -> Option<ArgBuf> {
        None
    }
    /// Installs storage taken from an executor of the same kind as argument
    /// `i` (dropping what it held); gives it back when it does not fit
    /// (another kind of executor, another size).
    fn put_arg(&mut self, _i: usize, b: ArgBuf) -> Result<(), ArgBuf> {
        Err(b)
    }
}

/// An argument's storage on its way from one executor to another
/// (`StepExec::take_arg` / `put_arg`): the backend's own buffer, moved.
pub struct ArgBuf(pub Box<dyn std::any::Any + Send>);

/// The interpreter as a `StepExec`.
pub struct InterpExec {
    module: Module,
    func: String,
    args: Vec<Tensor>,
    results: Vec<Tensor>,
    stats: RunStats,
}

impl InterpExec {
    /// `func` of `module` with `args` as its initial arguments.
    pub fn new(module: Module, func: &str, args: Vec<Tensor>) -> Result<InterpExec, Diag> {
        find_func(&module, func)?;
        Ok(InterpExec { module, func: func.to_string(), args, results: Vec::new(), stats: RunStats::default() })
    }
}

impl StepExec for InterpExec {
    fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), Diag> {
        match self.args.get_mut(i) {
            Some(a) => {
                *a = t.clone();
                Ok(())
            }
            None => Err(Diag::error(Default::default(), format!("@{} has no argument {i}", self.func))),
        }
    }
    fn run(&mut self) -> Result<(), Diag> {
        let (out, stats) = run_func_with_stats(&self.module, &self.func, &self.args)?;
        self.results = out;
        self.stats = stats;
        Ok(())
    }
    fn result(&self, j: usize) -> Option<Tensor> {
        self.results.get(j).cloned()
    }
    fn arg(&self, i: usize) -> Option<Tensor> {
        self.args.get(i).cloned()
    }
    fn result_in_arg(&self, _: usize) -> Option<usize> {
        None
    }
    fn peak_bytes(&self) -> u64 {
        self.stats.peak_bytes
    }
    fn take_arg(&mut self, i: usize) -> Option<ArgBuf> {
        let a = self.args.get_mut(i)?;
        let empty = Tensor { shape: Vec::new(), dtype: a.dtype, data: Vec::new(), ints: Vec::new() };
        Some(ArgBuf(Box::new(std::mem::replace(a, empty))))
    }
    fn put_arg(&mut self, i: usize, b: ArgBuf) -> Result<(), ArgBuf> {
        let t = b.0.downcast::<Tensor>().map_err(ArgBuf)?;
        let want = find_func(&self.module, &self.func).ok().and_then(|f| f.params.get(i).map(|p| f.ty(p.value).clone()));
        let fits = want.is_some_and(|ty| ty.dtype == t.dtype && ty.shape.iter().map(|&d| d as usize).eq(t.shape.iter().copied()));
        match self.args.get_mut(i) {
            Some(a) if fits => {
                *a = *t;
                Ok(())
            }
            _ => Err(ArgBuf(t)),
        }
    }
}
