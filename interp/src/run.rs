//! Running a whole function: ops evaluated one by one in schedule order.
//!
//! Entry: a module (need not be verified: `run_func` verifies the function
//! it runs first and returns the first error), a function name and one
//! tensor per argument. Exit: one tensor per returned value, plus
//! `RunStats` from `run_func_with_stats`.
//!
//! Memory measurement: the interpreter frees each op-defined tensor right
//! after the last op that reads it (returned values are kept to the end).
//! `RunStats::peak_bytes` is the maximum, over the ops, of the bytes of
//! op-defined tensors held while that op runs (its operands and its new
//! result included) — the same definition as the memory report's
//! `peak_bytes` (docs/memory.md: arguments excluded, results included), measured on
//! what the interpreter actually allocated. The interpreter ignores
//! `ck.inplace` and `ck.offset` (every op gets a fresh tensor), so this is
//! the unoptimized peak of the schedule as written; remat changes it,
//! inplace/memplan do not. `peak_bytes_with_args` adds the argument tensors.
//!
//! Complexity: O(ops + sum of kernel costs); memory as measured.

use crate::eval::eval_op;
use crate::tensor::Tensor;
use ckopt_ir::verify::verify_func;
use ckopt_ir::{Diag, Diags, Func, Loc, Module, OpKind};
use std::sync::Arc;

/// What the interpreter measured while running a function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Max bytes of op-defined tensors held at once (arguments excluded).
    pub peak_bytes: u64,
    /// `peak_bytes` plus the bytes of the argument tensors.
    pub peak_bytes_with_args: u64,
    /// Bytes of the argument tensors.
    pub arg_bytes: u64,
    /// Ops evaluated (excluding `ck.return`).
    pub ops: usize,
}

/// Looks up `name` in `module`; the error names the functions that exist.
pub fn find_func<'m>(module: &'m Module, name: &str) -> Result<&'m Func, Diag> {
    module.func(name).ok_or_else(|| {
        let file = module.funcs.first().map(|f| f.loc.file.clone()).unwrap_or_else(|| Arc::from("<module>"));
        let names: Vec<String> = module.funcs.iter().map(|f| format!("@{}", f.name)).collect();
        let known = if names.is_empty() { "the module has no functions".to_string() } else { format!("functions: {}", names.join(", ")) };
        Diag::error(Loc::new(file, 0, 0), format!("no function @{name} in the module ({known})"))
    })
}

/// Checks `inputs` against the arguments of `func` (count and shapes).
pub fn check_inputs(func: &Func, inputs: &[Tensor]) -> Result<(), Diag> {
    if inputs.len() != func.params.len() {
        return Err(Diag::error(
            func.loc.clone(),
            format!("@{} takes {} argument(s) but {} input(s) were given", func.name, func.params.len(), inputs.len()),
        ));
    }
    for (i, (p, t)) in func.params.iter().zip(inputs).enumerate() {
        let ty = func.ty(p.value);
        let what = format!("input {i} (%{}) of @{}", func.name_of(p.value), func.name);
        if let Err(e) = t.check() {
            return Err(Diag::error(func.loc.clone(), format!("{what}: {e}")));
        }
        if t.dtype != ty.dtype {
            return Err(Diag::error(
                func.loc.clone(),
                format!("{what} has element type {}, expected {ty}", t.dtype.name()),
            ));
        }
        if !t.matches_type(ty) {
            return Err(Diag::error(
                func.loc.clone(),
                format!("{what} has shape {:?} with {} values, expected {ty}", t.shape, t.num_elements()),
            ));
        }
    }
    Ok(())
}

/// Runs `module`'s function `func` on `inputs`; returns the returned values.
pub fn run_func(module: &Module, func: &str, inputs: &[Tensor]) -> Result<Vec<Tensor>, Diag> {
    run_func_with_stats(module, func, inputs).map(|(out, _)| out)
}

/// `run_func` plus the measured `RunStats`.
pub fn run_func_with_stats(module: &Module, func: &str, inputs: &[Tensor]) -> Result<(Vec<Tensor>, RunStats), Diag> {
    run_body(prepare(module, func, inputs)?, inputs)
}

/// What every entry point checks before evaluating: the function exists,
/// verifies (first error returned), and `inputs` match its arguments.
pub fn prepare<'m>(module: &'m Module, func: &str, inputs: &[Tensor]) -> Result<&'m Func, Diag> {
    let f = find_func(module, func)?;
    let mut diags = Diags::new();
    verify_func(f, &mut diags);
    if let Some(d) = diags.0.into_iter().next() {
        return Err(d);
    }
    check_inputs(f, inputs)?;
    Ok(f)
}

/// Evaluates the body of a verified `f` on checked `inputs`.
fn run_body(f: &Func, inputs: &[Tensor]) -> Result<(Vec<Tensor>, RunStats), Diag> {
    // Index of the last op reading each value (the return counts as a reader
    // at the end, so returned values stay alive).
    let mut last_use = vec![None::<usize>; f.values.len()];
    for (i, op) in f.body.iter().enumerate() {
        for &o in &op.operands {
            last_use[o.index()] = Some(i);
        }
    }
    let mut is_arg = vec![false; f.values.len()];
    let mut env: Vec<Option<Tensor>> = vec![None; f.values.len()];
    let mut stats = RunStats::default();
    for (p, t) in f.params.iter().zip(inputs) {
        is_arg[p.value.index()] = true;
        stats.arg_bytes += t.bytes();
        env[p.value.index()] = Some(t.clone());
    }
    let mut live: u64 = 0;
    for (i, op) in f.body.iter().enumerate() {
        let args: Vec<&Tensor> = op
            .operands
            .iter()
            .map(|&v| {
                env[v.index()].as_ref().ok_or_else(|| {
                    Diag::error(op.loc.clone(), format!("internal: value %{} is not available", f.name_of(v)))
                })
            })
            .collect::<Result<_, _>>()?;
        if op.kind == OpKind::Return {
            let outs = args.into_iter().cloned().collect();
            stats.peak_bytes_with_args = stats.peak_bytes + stats.arg_bytes;
            return Ok((outs, stats));
        }
        let y = eval_op(op, f, &args)?;
        stats.ops += 1;
        live += y.bytes();
        stats.peak_bytes = stats.peak_bytes.max(live);
        if let Some(r) = op.result {
            env[r.index()] = Some(y);
            // A result nobody reads is dropped at once (it was live during its op).
            if last_use[r.index()].is_none() {
                live -= env[r.index()].take().map(|t| t.bytes()).unwrap_or(0);
            }
        }
        // Free operands whose last reader was this op.
        for &o in &op.operands {
            if last_use[o.index()] == Some(i)
                && !is_arg[o.index()]
                && let Some(t) = env[o.index()].take()
            {
                live -= t.bytes();
            }
        }
    }
    Err(Diag::error(f.loc.clone(), format!("function @{} has no 'ck.return'", f.name)))
}
