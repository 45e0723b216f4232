//! The CPU executor: a JIT-compiled planned function plus its arena.
//!
//! The arena (exactly `ck.arena_bytes`, 64-byte aligned) is allocated once
//! and reused by every step; argument tensors are passed as their own
//! buffers. Step time is wall-clock time of the JIT call. Optimisation level:
//! `default_opt_level`.

use crate::arena::Arena;
use crate::report::Report;
use ckopt_interp::{Tensor, check_inputs};
use ckopt_ir::{Diag, Func};
use ckopt_lower::{CpuProgram, compile_cpu};
use std::time::Instant;

/// LLVM -O2 for functions of up to 200 ops, -O0 above. Measured on this
/// project's machine: JIT time at -O2 grows ~10 ms per op (20 s for a
/// 2000-op gradient, 0.5 s at -O0) while the step time of these naive
/// kernels is the same within noise (latency-bound accumulation chains:
/// 520 vs 560 ms for a 512x256x256 resmlp step).
pub fn default_opt_level(func: &Func) -> usize {
    if func.body.len() <= 200 { 2 } else { 0 }
}

pub struct CpuExecutor {
    prog: CpuProgram,
    arena: Arena,
    func: Func,
    report: Report,
}

impl CpuExecutor {
    /// Compiles `func` (planned by memplan) at `default_opt_level` and
    /// allocates its arena.
    pub fn new(func: &Func) -> Result<CpuExecutor, Diag> {
        Self::with_opt_level(func, default_opt_level(func))
    }

    /// Compiles at LLVM optimisation level `opt` (0..=3).
    pub fn with_opt_level(func: &Func, opt: usize) -> Result<CpuExecutor, Diag> {
        let t = Instant::now();
        let prog = compile_cpu(func, opt)?;
        let compile_ms = t.elapsed().as_secs_f64() * 1e3;
        let arena = Arena::new(prog.layout.arena_bytes).map_err(|m| Diag::error(func.loc.clone(), m))?;
        let report = Report {
            backend: "cpu".into(),
            function: func.name.clone(),
            arena_bytes: prog.layout.arena_bytes,
            arena_allocated_bytes: arena.len() as u64,
            input_bytes: prog.layout.inputs.iter().map(|t| t.bytes()).sum(),
            compile_ms,
            ..Default::default()
        };
        Ok(CpuExecutor { prog, arena, func: func.clone(), report })
    }

    /// The MLIR text that was compiled.
    pub fn mlir(&self) -> &str {
        &self.prog.mlir
    }

    /// Runs one step on `inputs` (one tensor per argument).
    pub fn step(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Diag> {
        check_inputs(&self.func, inputs)?;
        let ins: Vec<&[f32]> = inputs.iter().map(|t| t.data.as_slice()).collect();
        let t = Instant::now();
        self.prog.run(self.arena.as_mut_slice(), &ins).map_err(|m| Diag::error(self.func.loc.clone(), m))?;
        self.report.step_ms = t.elapsed().as_secs_f64() * 1e3;
        self.report.steps += 1;
        let outs = self.prog.outputs(self.arena.as_slice(), &ins);
        Ok(outs
            .into_iter()
            .zip(&self.prog.layout.outputs)
            .map(|(data, (ty, _))| Tensor { shape: ty.shape.iter().map(|&d| d as usize).collect(), data })
            .collect())
    }

    pub fn report(&self) -> Report {
        self.report.clone()
    }
}
