//! The CPU executor: runs a step program (`ckopt_kernels::StepProgram`) with
//! JIT-compiled kernels (`ckopt_lower::compile_kernels`), GEMMs from the
//! `gemm` crate and convolutions as im2col + GEMM, in one host arena of
//! exactly `ck.arena_bytes` plus one workspace.
//!
//! Buffers: the arena and the workspace are allocated once (64-byte
//! aligned, zeroed) and reused by every step; each argument has a resident
//! buffer (`set_arg`), so training keeps parameters and optimizer state in
//! place across steps: the step writes updated parameters into them
//! (donated arguments) and only the loss needs reading back. An argument's
//! buffer is allocated when it is first set (an argument never set is
//! zeros, allocated at the first run), so an executor whose parameters are
//! lent to it by another (`take_arg`/`put_arg`: evaluation borrowing the
//! training step's parameters) never holds a copy of them.
//!
//! Threads: kernels whose outermost loop is splittable and that visit at
//! least `PAR_MIN_WORK` elements run as contiguous ranges on the rayon pool;
//! GEMMs use the gemm crate's rayon parallelism above `GEMM_PAR_MIN_FLOPS`.
//! Every element is computed by the same code whatever the split (a GEMM
//! splits its output, never its sum), so a step gives the same bits run to
//! run.
//!
//! Errors (never a panic): a step naming an op the backend cannot run, a
//! kernel the JIT did not produce, inputs of the wrong shape.

use crate::arena::Arena;
use crate::error::RuntimeError;
use crate::report::Report;
use ckopt_interp::{Tensor, check_inputs};
use ckopt_ir::{DType, Diag, Func, Loc, OpKind};
use ckopt_kernels::{BufId, Conv, ConvKind, Gemm, KernelCache, Slot, Step, StepProgram, build_program};
use ckopt_lower::{CpuKernels, compile_kernels};
use std::sync::Arc;
use std::time::Instant;

/// Kernels visiting fewer elements run on one thread.
pub const PAR_MIN_WORK: u64 = 1 << 15;
/// GEMMs of fewer flops run on one thread.
pub const GEMM_PAR_MIN_FLOPS: u64 = 1 << 20;

/// A module's functions compiled for the cpu: programs plus one kernel JIT.
pub struct CpuModule {
    pub cache: KernelCache,
    pub programs: Vec<StepProgram>,
    pub kernels: Arc<CpuKernels>,
    pub compile_ms: f64,
}

impl CpuModule {
    /// Builds the step programs of `funcs` (planned) and compiles their
    /// distinct kernels once (LLVM -O3).
    pub fn compile(funcs: &[&Func]) -> Result<CpuModule, Diag> {
        let t = Instant::now();
        let mut cache = KernelCache::new();
        let mut programs = Vec::with_capacity(funcs.len());
        for f in funcs {
            programs.push(build_program(f, &mut cache)?);
        }
        let kernels = compile_kernels(&cache, 3).map_err(|d| {
            let loc = funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
            Diag::error(loc, d.message)
        })?;
        Ok(CpuModule { cache, programs, kernels: Arc::new(kernels), compile_ms: t.elapsed().as_secs_f64() * 1e3 })
    }
}

/// An index operand of a step to check before the step runs (the kernels
/// clamp out-of-range indices for memory safety; this gives the error).
struct IndexCheck {
    slot: Slot,
    dtype: DType,
    shape: Vec<u64>,
    bound: u64,
    /// `cross_entropy`'s ignore_index (labels equal to it are skipped).
    ignore: Option<i64>,
}

/// The index checks of each step of `prog` (compiled from `func`): the
/// index operand of gather, take_along and their gradients, the labels of
/// cross_entropy and its gradient. Those ops always run as single-op
/// kernels, so their index operand is stored.
fn index_checks(func: &Func, prog: &StepProgram) -> Result<Vec<Vec<IndexCheck>>, Diag> {
    let layout = ckopt_kernels::layout(func)?;
    let mut out = Vec::with_capacity(prog.steps.len());
    for s in &prog.steps {
        let mut cs = Vec::new();
        if let Some(op) = func.body.get(s.op().index as usize) {
            let axis = |name: &str| op.int_attr(name).unwrap_or(0).max(0) as usize;
            let sh = |i: usize| &func.ty(op.operands[i]).shape;
            let check = match op.kind {
                OpKind::Gather => Some((1, sh(0).get(axis("axis")).copied(), None)),
                OpKind::TakeAlong => Some((1, sh(0).get(axis("axis")).copied(), None)),
                OpKind::GatherGrad | OpKind::TakeAlongGrad => {
                    Some((0, op.result.and_then(|r| func.ty(r).shape.get(axis("axis")).copied()), None))
                }
                OpKind::CrossEntropy | OpKind::CrossEntropyGrad => {
                    Some((1, sh(0).get(1).copied(), Some(ckopt_ir::mixed::ignore_index(&op.attrs))))
                }
                _ => None,
            };
            if let Some((i, Some(bound), ignore)) = check {
                let v = op.operands[i];
                if let Some(p) = layout.place_of(v) {
                    let t = func.ty(v);
                    cs.push(IndexCheck {
                        slot: Slot { buf: p.buf.into(), offset: p.offset, bytes: t.bytes() },
                        dtype: t.dtype,
                        shape: t.shape.clone(),
                        bound,
                        ignore,
                    });
                }
            }
        }
        out.push(cs);
    }
    Ok(out)
}

/// A raw pointer that may cross to a worker thread (the ranges given to
/// concurrent kernel calls are disjoint).
#[derive(Clone, Copy)]
struct SendPtr(*mut f32);
// SAFETY: used only for disjoint ranges of buffers that outlive the scope.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

pub struct CpuExecutor {
    prog: StepProgram,
    /// Per kernel of the module: (split extent, work).
    split: Vec<(u64, u64)>,
    kernels: Arc<CpuKernels>,
    arena: Arena,
    workspace: Arena,
    /// One resident buffer per argument: its elements as bytes of its
    /// element type (`Tensor::to_le_bytes`; 64-byte aligned).
    args: Vec<Arena>,
    /// Element type of each argument and result.
    arg_dt: Vec<DType>,
    res_dt: Vec<DType>,
    /// Per step: the index operands to check before it runs.
    checks: Vec<Vec<IndexCheck>>,
    /// Per step: the element types (a, b, c) of a GEMM, or (x, w, y) of a
    /// convolution, that is not all f32.
    lib_dt: Vec<Option<[DType; 3]>>,
    /// f32 copies of the bf16/f16 operands and results of those library
    /// calls (allocated once, `lowp_elems`).
    lowp: Vec<f32>,
    /// Arguments whose buffer is lent to another executor (`take_arg`).
    lent: Vec<bool>,
    /// During `run_borrowed`: the caller's memory standing in for each
    /// argument's buffer (never written: donated arguments are refused).
    /// (Addresses, so the executor stays `Send`.)
    borrowed: Vec<Option<usize>>,
    /// During `run_borrowed` with an arena: the caller's memory standing in
    /// for the executor's own arena.
    borrowed_arena: Option<usize>,
    threads: usize,
    func: Func,
    report: Report,
    /// Time per kind of step (`CKOPT_PROFILE` set).
    profile: Option<std::collections::HashMap<String, (u64, f64)>>,
}

fn diag(f: &Func, m: String) -> Diag {
    Diag::error(f.loc.clone(), m)
}

impl CpuExecutor {
    /// Compiles `func` (planned by memplan) alone and allocates its buffers.
    pub fn new(func: &Func) -> Result<CpuExecutor, Diag> {
        let m = CpuModule::compile(&[func])?;
        let prog = m.programs.into_iter().next().ok_or_else(|| diag(func, "no program".into()))?;
        let mut e = CpuExecutor::from_program(func, prog, &m.cache, m.kernels)?;
        e.report.compile_ms = m.compile_ms;
        Ok(e)
    }

    /// An executor for one program of a compiled module.
    pub fn from_program(func: &Func, prog: StepProgram, cache: &KernelCache, kernels: Arc<CpuKernels>) -> Result<CpuExecutor, Diag> {
        let arena = Arena::new(prog.arena_bytes).map_err(|m| diag(func, m.to_string()))?;
        let workspace = Arena::new(prog.workspace_bytes).map_err(|m| diag(func, m.to_string()))?;
        let arg_dt: Vec<DType> = func.params.iter().map(|p| func.ty(p.value).dtype).collect();
        let res_dt: Vec<DType> = func.result_types.iter().map(|t| t.dtype).collect();
        let args: Vec<Arena> = prog
            .args
            .iter()
            .zip(&arg_dt)
            .map(|(a, dt)| Arena::new(a.shape.iter().product::<u64>().saturating_mul(dt.bytes())).map_err(|m| diag(func, m.to_string())))
            .collect::<Result<_, _>>()?;
        let checks = index_checks(func, &prog)?;
        let lib_dt: Vec<Option<[DType; 3]>> = prog
            .steps
            .iter()
            .map(|s| {
                let op = func.body.get(s.op().index as usize)?;
                let (a, b, c) = (*op.operands.first()?, *op.operands.get(1)?, op.result?);
                let dts = match s {
                    Step::Gemm { .. } => [a, b, c],
                    Step::Conv { conv, .. } => match conv.kind {
                        ConvKind::Forward => [a, b, c],
                        ConvKind::GradInput => [c, b, a],
                        ConvKind::GradFilter => [a, c, b],
                    },
                    Step::Kernel { .. } => return None,
                }
                .map(|v| func.ty(v).dtype);
                dts.iter().any(|&d| d != DType::F32).then_some(dts)
            })
            .collect();
        let lowp_n = prog.steps.iter().zip(&lib_dt).map(|(s, d)| d.map_or(0, |d| lowp_elems(s, d))).max().unwrap_or(0);
        let lowp = vec![0.0f32; lowp_n as usize];
        let lent = vec![false; args.len()];
        let borrowed = vec![None; args.len()];
        let report = Report {
            backend: "cpu".into(),
            function: func.name.clone(),
            arena_bytes: prog.arena_bytes,
            arena_allocated_bytes: arena.len() as u64,
            input_bytes: args.iter().map(|a| a.len() as u64).sum(),
            workspace_bytes: workspace.len() as u64 + lowp_n * 4,
            kernels: Some(prog.steps.iter().filter(|s| matches!(s, Step::Kernel { .. })).count()),
            distinct_kernels: Some(cache.len()),
            threads: Some(rayon::current_num_threads()),
            ..Default::default()
        };
        let split = cache.kernels.iter().map(|k| (k.split, k.work)).collect();
        Ok(CpuExecutor {
            prog,
            split,
            kernels,
            arena,
            workspace,
            args,
            arg_dt,
            res_dt,
            checks,
            lib_dt,
            lowp,
            lent,
            borrowed,
            borrowed_arena: None,
            threads: rayon::current_num_threads().max(1),
            func: func.clone(),
            report,
            profile: std::env::var_os("CKOPT_PROFILE").map(|_| Default::default()),
        })
    }

    pub fn program(&self) -> &StepProgram {
        &self.prog
    }

    /// Bytes of argument `i`'s buffer.
    fn arg_bytes(&self, i: usize) -> u64 {
        let n: u64 = self.prog.args.get(i).map(|a| a.shape.iter().product()).unwrap_or(0);
        n.saturating_mul(self.arg_dt.get(i).map_or(4, |d| d.bytes()))
    }

    /// Copies `t` into argument `i`'s resident buffer.
    pub fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), Diag> {
        let want: Vec<usize> = self.prog.args.get(i).map(|a| a.shape.iter().map(|&d| d as usize).collect()).unwrap_or_default();
        let dt = self.arg_dt.get(i).copied().unwrap_or(DType::F32);
        if t.dtype != dt && t.shape == want {
            return Err(diag(
                &self.func,
                format!("argument {i} of @{} needs element type {}, got {}", self.func.name, dt.name(), t.dtype.name()),
            ));
        }
        if self.lent.get(i) == Some(&true) && t.shape == want {
            // The lent buffer is gone with its borrower: a fresh one.
            self.args[i] = Arena::new(self.arg_bytes(i)).map_err(|m| diag(&self.func, m.to_string()))?;
            self.lent[i] = false;
        }
        match self.args.get_mut(i) {
            Some(buf) if t.shape == want && t.bytes() == buf.len() as u64 => {
                if dt == DType::F32 {
                    for (c, v) in buf.as_mut_slice().chunks_exact_mut(4).zip(&t.data) {
                        c.copy_from_slice(&v.to_le_bytes());
                    }
                } else {
                    buf.as_mut_slice().copy_from_slice(&t.to_le_bytes());
                }
                Ok(())
            }
            _ => Err(diag(&self.func, format!("argument {i} of @{} needs shape {want:?}, got {:?}", self.func.name, t.shape))),
        }
    }

    /// The current contents of argument `i` (after a step: updated
    /// parameters for donated ones; zeros if never set; `None` while lent).
    pub fn arg(&self, i: usize) -> Option<Tensor> {
        let a = self.prog.args.get(i)?;
        if *self.lent.get(i)? {
            return None;
        }
        let dt = *self.arg_dt.get(i)?;
        Tensor::from_le_bytes(a.shape.iter().map(|&d| d as usize).collect(), dt, self.args.get(i)?.as_slice()).ok()
    }

    /// Lends argument `i`'s buffer (see `ckopt_interp::StepExec::take_arg`):
    /// `None` if it is lent already.
    pub fn take_arg(&mut self, i: usize) -> Option<Arena> {
        if *self.lent.get(i)? {
            return None;
        }
        let empty = Arena::new(0).ok()?;
        self.lent[i] = true;
        Some(std::mem::replace(&mut self.args[i], empty))
    }

    /// Installs a buffer of argument `i`'s size (lent by `take_arg`); gives
    /// it back if its size differs.
    pub fn put_arg(&mut self, i: usize, b: Arena) -> Result<(), Arena> {
        if i >= self.args.len() || b.len() as u64 != self.arg_bytes(i) {
            return Err(b);
        }
        self.args[i] = b;
        self.lent[i] = false;
        Ok(())
    }

    fn base(&mut self, b: BufId) -> *mut f32 {
        match b {
            BufId::Arena => match self.borrowed_arena {
                Some(p) => p as *mut f32,
                None => self.arena.as_mut_slice().as_mut_ptr() as *mut f32,
            },
            BufId::Workspace => self.workspace.as_mut_slice().as_mut_ptr() as *mut f32,
            BufId::Arg(i) => match self.borrowed.get(i as usize).copied().flatten() {
                Some(p) => p as *mut f32,
                None => self.args.get_mut(i as usize).map(|a| a.as_mut_slice().as_mut_ptr() as *mut f32).unwrap_or(std::ptr::null_mut()),
            },
        }
    }

    /// The bytes of buffer `b` (an argument's borrowed memory during
    /// `run_borrowed`).
    fn buf_slice(&self, b: BufId) -> &[u8] {
        match b {
            BufId::Arena => match self.borrowed_arena {
                // SAFETY: `run_borrowed` checked the caller's arena holds `arena_bytes`
                // and keeps it borrowed while `borrowed_arena` is set.
                Some(p) => unsafe { std::slice::from_raw_parts(p as *const u8, self.prog.arena_bytes as usize) },
                None => self.arena.as_slice(),
            },
            BufId::Workspace => self.workspace.as_slice(),
            BufId::Arg(i) => match self.borrowed.get(i as usize).copied().flatten() {
                // SAFETY: `run_borrowed` checked the caller's slice has the argument's bytes
                // and holds it borrowed for as long as `borrowed` is set.
                Some(p) => unsafe { std::slice::from_raw_parts(p as *const u8, self.arg_bytes(i as usize) as usize) },
                None => self.args.get(i as usize).map(|a| a.as_slice()).unwrap_or(&[]),
            },
        }
    }

    /// Runs one step on the caller's memory: argument i is read from
    /// `args[i]` (exactly its bytes, little-endian elements of its type) in
    /// place, not copied into the resident buffer; result j is copied into
    /// `outs[j]` (exactly its bytes). Arguments marked `ck.donate` are
    /// refused (the step would write into them). With `arena`, the step's
    /// values live in the caller's memory (at least the program's arena
    /// bytes, 64-byte aligned) instead of the executor's own arena, so two
    /// executors that never run at once (a forward and its backward) can
    /// share one buffer; the executor's own arena is then never touched.
    pub fn run_borrowed(&mut self, args: &[&[u8]], outs: &mut [&mut [u8]], arena: Option<&mut [u8]>) -> Result<(), Diag> {
        let f = &self.func;
        if args.len() != self.args.len() || outs.len() != self.prog.results.len() {
            return Err(diag(
                f,
                format!("@{} takes {} arguments and gives {} results, got {} and {}", f.name, self.args.len(), self.prog.results.len(), args.len(), outs.len()),
            ));
        }
        for (i, a) in args.iter().enumerate() {
            if a.len() as u64 != self.arg_bytes(i) {
                return Err(diag(f, format!("argument {i} of @{} needs {} bytes, got {}", f.name, self.arg_bytes(i), a.len())));
            }
            if f.params.get(i).is_some_and(|p| p.attrs.contains_key(ckopt_ir::ops::ATTR_DONATE)) {
                return Err(diag(f, format!("argument {i} of @{} is donated (the step writes it): run it with resident buffers", f.name)));
            }
        }
        for (j, o) in outs.iter().enumerate() {
            let want = self.result_bytes(j);
            if o.len() != want {
                return Err(diag(f, format!("result {j} of @{} needs {want} bytes, got {}", f.name, o.len())));
            }
        }
        if let Some(a) = &arena
            && ((a.len() as u64) < self.prog.arena_bytes || a.as_ptr() as usize % 64 != 0)
        {
            return Err(diag(
                f,
                format!("the arena for @{} needs {} bytes at a 64-byte aligned address, got {} bytes at {:p}", f.name, self.prog.arena_bytes, a.len(), a.as_ptr()),
            ));
        }
        self.borrowed = args.iter().map(|a| Some(a.as_ptr() as usize)).collect();
        self.borrowed_arena = arena.map(|a| a.as_mut_ptr() as usize);
        let r = self.run_unchecked();
        if r.is_ok() {
            for (j, o) in outs.iter_mut().enumerate() {
                if let Some(src) = self.result_slice(j) {
                    o.copy_from_slice(src);
                }
            }
        }
        self.borrowed.iter_mut().for_each(|b| *b = None);
        self.borrowed_arena = None;
        r
    }

    /// Bytes of result `j`.
    fn result_bytes(&self, j: usize) -> usize {
        let n: u64 = self.prog.results.get(j).map(|r| r.shape.iter().product()).unwrap_or(0);
        n as usize * self.res_dt.get(j).map_or(4, |d| d.bytes() as usize)
    }

    /// The bytes of result `j` in its buffer after a step.
    fn result_slice(&self, j: usize) -> Option<&[u8]> {
        let r = self.prog.results.get(j)?;
        let o = r.slot.offset as usize;
        self.buf_slice(r.slot.buf).get(o..o + self.result_bytes(j))
    }

    fn ptr(&mut self, s: &Slot) -> *mut f32 {
        let b = self.base(s.buf);
        // SAFETY: the program builder checked every slot lies in its buffer.
        unsafe { (b as *mut u8).add(s.offset as usize) as *mut f32 }
    }

    /// Runs the program once on the resident argument buffers.
    pub fn run(&mut self) -> Result<(), Diag> {
        for i in 0..self.args.len() {
            if self.lent[i] {
                return Err(diag(&self.func, format!("argument {i} of @{} is lent to another executor", self.func.name)));
            }
        }
        self.run_unchecked()
    }

    fn run_unchecked(&mut self) -> Result<(), Diag> {
        let t = Instant::now();
        let steps = std::mem::take(&mut self.prog.steps);
        let r = self.run_steps(&steps);
        self.prog.steps = steps;
        r?;
        self.report.step_ms = t.elapsed().as_secs_f64() * 1e3;
        self.report.steps += 1;
        Ok(())
    }

    fn run_steps(&mut self, steps: &[Step]) -> Result<(), Diag> {
        for (si, s) in steps.iter().enumerate() {
            let t = self.profile.is_some().then(Instant::now);
            if let Some(cs) = self.checks.get(si) {
                for c in cs {
                    self.check_index(c).map_err(|m| {
                        let op = s.op();
                        Diag::error(Loc::unknown(), format!("cpu backend: '{}' op at {}: {m}", op.name, op.loc))
                    })?;
                }
            }
            let res = match s {
                Step::Kernel { kernel, args, .. } => self.kernel(*kernel as usize, args),
                Step::Gemm { gemm, .. } => {
                    let (a, b, c) = (self.ptr(&gemm.a), self.ptr(&gemm.b), self.ptr(&gemm.c));
                    match self.lib_dt.get(si).copied().flatten() {
                        // SAFETY: slots checked by the builder; sizes and element types from the same op;
                        // `lowp` holds `lowp_elems` of every such step.
                        Some(dts) => unsafe { run_gemm_lowp(gemm, dts, a as *const u8, b as *const u8, c as *mut u8, &mut self.lowp, self.threads) },
                        // SAFETY: slots checked by the builder; sizes from the same gemm.
                        None => unsafe { run_gemm(gemm, a, b, c, self.threads) },
                    }
                    Ok(())
                }
                Step::Conv { conv, .. } => {
                    let (x, w, y) = (self.ptr(&conv.x), self.ptr(&conv.wt), self.ptr(&conv.y));
                    let ws = self.base(BufId::Workspace);
                    match self.lib_dt.get(si).copied().flatten() {
                        // SAFETY: as for the GEMM; the workspace holds one image's columns.
                        Some(dts) => unsafe { run_conv_lowp(conv, dts, [x as *mut u8, w as *mut u8, y as *mut u8], ws, &mut self.lowp, self.threads) },
                        // SAFETY: as above.
                        None => unsafe { run_conv(conv, x, w, y, ws, self.threads) },
                    }
                    Ok(())
                }
            };
            res.map_err(|m| {
                let op = s.op();
                Diag::error(Loc::unknown(), format!("cpu backend: {} at {} failed: {m}", op.name, op.loc))
            })?;
            if let (Some(t), Some(p)) = (t, self.profile.as_mut()) {
                let key = match s {
                    Step::Kernel { kernel, .. } => format!("kernel ck_k{kernel} ({})", s.op().name),
                    Step::Gemm { gemm: g, .. } => {
                        format!("gemm {}x{}x{}{}{}", g.m, g.n, g.k, if g.trans_a { " ta" } else { "" }, if g.trans_b { " tb" } else { "" })
                    }
                    Step::Conv { conv, .. } => format!(
                        "conv {:?}{}",
                        conv.kind,
                        if conv.depthwise() {
                            " depthwise".to_string()
                        } else if conv.groups > 1 {
                            format!(" groups {}", conv.groups)
                        } else {
                            String::new()
                        }
                    ),
                };
                let e = p.entry(key).or_insert((0, 0.0));
                e.0 += 1;
                e.1 += t.elapsed().as_secs_f64() * 1e3;
            }
        }
        Ok(())
    }

    /// The time spent per kind of step since the executor was made, most
    /// first: (what, calls, ms). Empty unless `CKOPT_PROFILE` is set.
    pub fn profile(&self) -> Vec<(String, u64, f64)> {
        let mut v: Vec<(String, u64, f64)> = self.profile.iter().flatten().map(|(k, (n, ms))| (k.clone(), *n, *ms)).collect();
        v.sort_by(|a, b| b.2.total_cmp(&a.2));
        v
    }

    fn kernel(&mut self, k: usize, slots: &[Slot]) -> Result<(), RuntimeError> {
        let ptrs: Vec<*mut f32> = slots.iter().map(|s| self.ptr(s)).collect();
        let (split, work) = self.split.get(k).copied().unwrap_or((0, 0));
        let kernels = &self.kernels;
        if split >= 2 && work >= PAR_MIN_WORK && self.threads > 1 {
            let parts = (self.threads as u64).min(split);
            let sp: Vec<SendPtr> = ptrs.iter().map(|&p| SendPtr(p)).collect();
            let errs: std::sync::Mutex<Vec<ckopt_lower::LowerError>> = std::sync::Mutex::new(Vec::new());
            rayon::scope(|sc| {
                for t in 0..parts {
                    let (lo, hi) = (split * t / parts, split * (t + 1) / parts);
                    let sp = &sp;
                    let errs = &errs;
                    sc.spawn(move |_| {
                        let ps: Vec<*mut f32> = sp.iter().map(|p| p.0).collect();
                        // SAFETY: disjoint ranges of the kernel's split loop.
                        if let Err(e) = unsafe { kernels.call(k, &ps, lo as i64, hi as i64) }
                            && let Ok(mut v) = errs.lock()
                        {
                            v.push(e);
                        }
                    });
                }
            });
            return match errs.into_inner().unwrap_or_default().into_iter().next() {
                Some(e) => Err(RuntimeError::Lower(e)),
                None => Ok(()),
            };
        }
        // SAFETY: pointers into live buffers of the sizes the kernel expects.
        Ok(unsafe { kernels.call(k, &ptrs, 0, split as i64) }?)
    }

    /// Checks a stored index operand (see `IndexCheck`): the interpreter's
    /// error for the first index outside `[0, bound)` in row-major order.
    fn check_index(&self, c: &IndexCheck) -> Result<(), String> {
        let bytes: &[u8] = self.buf_slice(c.slot.buf);
        let w = c.dtype.bytes() as usize;
        let o = c.slot.offset as usize;
        let data = bytes.get(o..o + c.slot.bytes as usize).unwrap_or(&[]);
        for (j, e) in data.chunks_exact(w).enumerate() {
            let v = if w == 8 {
                i64::from_le_bytes(e.try_into().unwrap_or([0; 8]))
            } else {
                i64::from(i32::from_le_bytes(e.try_into().unwrap_or([0; 4])))
            };
            if c.ignore == Some(v) || (v >= 0 && (v as u64) < c.bound) {
                continue;
            }
            let mut pos = vec![0u64; c.shape.len()];
            let mut rest = j as u64;
            for d in (0..c.shape.len()).rev() {
                let n = c.shape[d].max(1);
                pos[d] = rest % n;
                rest /= n;
            }
            return Err(match c.ignore {
                None => format!("index {v} at position {pos:?} of the index operand is out of range [0, {})", c.bound),
                Some(ign) => format!("label {v} at position {pos:?} is out of range [0, {}) and is not the ignore_index {ign}", c.bound),
            });
        }
        Ok(())
    }

    /// Reads result `j` after a step.
    pub fn result(&self, j: usize) -> Option<Tensor> {
        let r = self.prog.results.get(j)?;
        let dt = *self.res_dt.get(j)?;
        Tensor::from_le_bytes(r.shape.iter().map(|&d| d as usize).collect(), dt, self.result_slice(j)?).ok()
    }

    /// Runs one step on `inputs` (one tensor per argument) and returns the results.
    pub fn step(&mut self, inputs: &[Tensor]) -> Result<Vec<Tensor>, Diag> {
        check_inputs(&self.func, inputs)?;
        for (i, t) in inputs.iter().enumerate() {
            self.set_arg(i, t)?;
        }
        self.run()?;
        (0..self.prog.results.len())
            .map(|j| self.result(j).ok_or_else(|| diag(&self.func, format!("result {j} cannot be read back"))))
            .collect()
    }

    pub fn report(&self) -> Report {
        self.report.clone()
    }
}

/// `C = op(A) · op(B)` per batch matrix with the gemm crate.
///
/// # Safety
/// `a`, `b`, `c` point to `batch` contiguous matrices of the sizes in `g`.
pub unsafe fn run_gemm(g: &Gemm, a: *const f32, b: *const f32, c: *mut f32, threads: usize) {
    let (m, n, k) = (g.m as usize, g.n as usize, g.k as usize);
    let (a_cs, a_rs) = if g.trans_a { (m as isize, 1) } else { (1, k as isize) };
    let (b_cs, b_rs) = if g.trans_b { (k as isize, 1) } else { (1, n as isize) };
    let par =
        if threads > 1 && g.m * g.n * g.k >= GEMM_PAR_MIN_FLOPS { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
    // Many small matrices (attention's per-head products): contiguous runs of
    // the batch on the threads, each matrix single-threaded as it would be
    // anyway (below the threshold), so the bits do not change.
    let nb = g.batch as usize;
    if threads > 1 && nb >= 2 && matches!(par, gemm::Parallelism::None) && g.batch * g.m * g.n * g.k >= GEMM_PAR_MIN_FLOPS {
        let parts = threads.min(nb);
        let (sa, sb, sc) = (SendPtr(a as *mut f32), SendPtr(b as *mut f32), SendPtr(c));
        let one = Gemm { batch: 1, ..g.clone() };
        rayon::scope(|scope| {
            for t in 0..parts {
                let (lo, hi) = (nb * t / parts, nb * (t + 1) / parts);
                let (sa, sb, sc, one) = (&sa, &sb, &sc, &one);
                scope.spawn(move |_| {
                    for bi in lo..hi {
                        // SAFETY: batch matrix bi lies inside each buffer; the runs of c are disjoint.
                        unsafe { run_gemm(one, sa.0.add(bi * m * k), sb.0.add(bi * k * n), sc.0.add(bi * m * n), 1) };
                    }
                });
            }
        });
        return;
    }
    for bi in 0..g.batch as usize {
        // SAFETY: per the contract, batch matrix bi lies inside each buffer.
        unsafe {
            gemm::gemm(
                m,
                n,
                k,
                c.add(bi * m * n),
                1,
                n as isize,
                false,
                a.add(bi * m * k),
                a_cs,
                a_rs,
                b.add(bi * k * n),
                b_cs,
                b_rs,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                par,
            );
        }
    }
}

/// f32 elements a library call with bf16/f16 values `dts` needs for its
/// f32 copies (`run_gemm_lowp`, `run_conv_lowp`): one per element of each
/// value that is not f32.
fn lowp_elems(s: &Step, dts: [DType; 3]) -> u64 {
    let sizes = match s {
        Step::Gemm { gemm: g, .. } => [g.batch * g.m * g.k, g.batch * g.k * g.n, g.batch * g.m * g.n],
        Step::Conv { conv: c, .. } => [c.n * c.c * c.h * c.w, c.filter_elems(), c.n * c.f * c.oh * c.ow],
        Step::Kernel { .. } => [0; 3],
    };
    sizes.iter().zip(dts).filter(|(_, d)| *d != DType::F32).map(|(n, _)| n).sum()
}

/// Splits `lowp` into the f32 copies of values of `sizes` elements whose
/// type is not f32 (`None` for an f32 value, used in place).
fn lowp_parts(lowp: &mut [f32], sizes: [usize; 3], dts: [DType; 3]) -> [Option<&mut [f32]>; 3] {
    let mut rest = lowp;
    let mut out: [Option<&mut [f32]>; 3] = [None, None, None];
    for i in 0..3 {
        if dts[i] != DType::F32 {
            let n = sizes[i].min(rest.len());
            let (p, r) = std::mem::take(&mut rest).split_at_mut(n);
            out[i] = Some(p);
            rest = r;
        }
    }
    out
}

/// A GEMM with bf16/f16 operands or result: the low-precision operands
/// widened to f32 (`lowp`), the f32 GEMM (f32 accumulation), the result
/// rounded to its type (nearest even), as the interpreter's matmul.
///
/// # Safety
/// `a`, `b`, `c` point to `batch` contiguous matrices of the sizes in `g`
/// with element types `dts`; `lowp` holds `lowp_elems` of the step.
pub unsafe fn run_gemm_lowp(g: &Gemm, dts: [DType; 3], a: *const u8, b: *const u8, c: *mut u8, lowp: &mut [f32], threads: usize) {
    let (m, n, k, nb) = (g.m as usize, g.n as usize, g.k as usize, g.batch as usize);
    let [pa, pb, pc] = lowp_parts(lowp, [nb * m * k, nb * k * n, nb * m * n], dts);
    // SAFETY: per the contract; each copy has its value's element count.
    unsafe {
        let a32 = match pa {
            Some(p) => {
                crate::lowp::to_f32(a, dts[0], p, threads);
                p.as_ptr()
            }
            None => a as *const f32,
        };
        let b32 = match pb {
            Some(p) => {
                crate::lowp::to_f32(b, dts[1], p, threads);
                p.as_ptr()
            }
            None => b as *const f32,
        };
        match pc {
            Some(p) => {
                run_gemm(g, a32, b32, p.as_mut_ptr(), threads);
                crate::lowp::from_f32(p, dts[2], c, threads);
            }
            None => run_gemm(g, a32, b32, c as *mut f32, threads),
        }
    }
}

/// A convolution (or gradient) with bf16/f16 values: its inputs widened to
/// f32, the f32 convolution (f32 accumulation), its result rounded to its
/// type (nearest even) once, as the interpreter's.
///
/// # Safety
/// As `run_conv`, with `ptrs` = (x, w, y) of element types `dts`; `lowp`
/// holds `lowp_elems` of the step.
pub unsafe fn run_conv_lowp(cv: &Conv, dts: [DType; 3], ptrs: [*mut u8; 3], ws: *mut f32, lowp: &mut [f32], threads: usize) {
    let sizes = [cv.n * cv.c * cv.h * cv.w, cv.filter_elems(), cv.n * cv.f * cv.oh * cv.ow].map(|n| n as usize);
    // The value the call writes: y forward, x for the input gradient, w for the filter's.
    let out = match cv.kind {
        ConvKind::Forward => 2,
        ConvKind::GradInput => 0,
        ConvKind::GradFilter => 1,
    };
    let parts = lowp_parts(lowp, sizes, dts);
    let mut p32 = [std::ptr::null_mut::<f32>(); 3];
    let mut copies: [Option<&mut [f32]>; 3] = [None, None, None];
    for (i, part) in parts.into_iter().enumerate() {
        match part {
            Some(p) => {
                if i != out {
                    // SAFETY: per the contract, ptrs[i] holds sizes[i] elements of dts[i].
                    unsafe { crate::lowp::to_f32(ptrs[i], dts[i], p, threads) };
                }
                p32[i] = p.as_mut_ptr();
                copies[i] = Some(p);
            }
            None => p32[i] = ptrs[i] as *mut f32,
        }
    }
    // SAFETY: f32 buffers of the convolution's sizes.
    unsafe { run_conv(cv, p32[0], p32[1], p32[2], ws, threads) };
    if let Some(p) = copies[out].as_deref() {
        // SAFETY: per the contract.
        unsafe { crate::lowp::from_f32(p, dts[out], ptrs[out], threads) };
    }
}

/// One image's im2col: `cols[(c·KH + i)·KW + j][oh·OW + ow] = x[c, oh·sh + i - ph, ow·sw + j - pw]` (0 outside).
fn im2col(cv: &Conv, x: &[f32], cols: &mut [f32]) {
    let (h, w, oh, ow) = (cv.h as usize, cv.w as usize, cv.oh as usize, cv.ow as usize);
    let (kh, kw, sh, sw, ph, pw) = (cv.kh as usize, cv.kw as usize, cv.sh as usize, cv.sw as usize, cv.ph as isize, cv.pw as isize);
    let ohw = oh * ow;
    for c in 0..cv.c as usize {
        for i in 0..kh {
            for j in 0..kw {
                let row = &mut cols[((c * kh + i) * kw + j) * ohw..][..ohw];
                for y in 0..oh {
                    let hy = (y * sh + i) as isize - ph;
                    let out = &mut row[y * ow..][..ow];
                    if hy < 0 || hy >= h as isize {
                        out.fill(0.0);
                        continue;
                    }
                    let src = &x[(c * h + hy as usize) * w..][..w];
                    for (xo, o) in out.iter_mut().enumerate() {
                        let wx = (xo * sw + j) as isize - pw;
                        *o = if wx >= 0 && wx < w as isize { src[wx as usize] } else { 0.0 };
                    }
                }
            }
        }
    }
}

/// The adjoint of `im2col`: `dx[c, ...] += cols[...]`, in row-major order of
/// the columns (a fixed order: deterministic).
fn col2im(cv: &Conv, cols: &[f32], dx: &mut [f32]) {
    let (h, w, oh, ow) = (cv.h as usize, cv.w as usize, cv.oh as usize, cv.ow as usize);
    let (kh, kw, sh, sw, ph, pw) = (cv.kh as usize, cv.kw as usize, cv.sh as usize, cv.sw as usize, cv.ph as isize, cv.pw as isize);
    let ohw = oh * ow;
    dx.fill(0.0);
    for c in 0..cv.c as usize {
        for i in 0..kh {
            for j in 0..kw {
                let row = &cols[((c * kh + i) * kw + j) * ohw..][..ohw];
                for y in 0..oh {
                    let hy = (y * sh + i) as isize - ph;
                    if hy < 0 || hy >= h as isize {
                        continue;
                    }
                    let dst = &mut dx[(c * h + hy as usize) * w..][..w];
                    for xo in 0..ow {
                        let wx = (xo * sw + j) as isize - pw;
                        if wx >= 0 && wx < w as isize {
                            dst[wx as usize] += row[y * ow + xo];
                        }
                    }
                }
            }
        }
    }
}

/// Runs `f(lo, hi)` over `0..n` in contiguous ranges on the rayon pool
/// when there are several threads and at least `PAR_MIN_WORK` elements of
/// work, else `f(0, n)` on this thread. Each item is done wholly by one call,
/// so the bits do not depend on the split.
fn par_ranges(n: usize, work: u64, threads: usize, f: &(dyn Fn(usize, usize) + Sync)) {
    if threads > 1 && n >= 2 && work >= PAR_MIN_WORK {
        let parts = threads.min(n);
        rayon::scope(|sc| {
            for t in 0..parts {
                let (lo, hi) = (n * t / parts, n * (t + 1) / parts);
                sc.spawn(move |_| f(lo, hi));
            }
        });
    } else {
        f(0, n);
    }
}

/// The output positions `j` (of `0..out`) whose tap `q` reads inside an input
/// row of `size` (`j·s + q - p` in `0..size`), as a range.
fn tap_range(out: usize, q: usize, s: usize, p: usize, size: usize) -> std::ops::Range<usize> {
    // j·s + q >= p  and  j·s + q - p <= size - 1
    let lo = if q >= p { 0 } else { (p - q).div_ceil(s) };
    let hi = if size + p > q { ((size + p - q - 1) / s + 1).min(out) } else { 0 };
    lo..hi.max(lo)
}

/// A depthwise convolution (`C/groups == 1`; `F/groups` filters per input
/// channel) or one of its gradients as direct loops, one output plane
/// (forward, input gradient) or one filter (filter gradient) per task.
/// Each element is summed in the interpreter's order, so the results are its
/// bits: the forward conv over taps (p, q), the filter gradient over (n, i,
/// j), the input gradient over (filter, i, j) (its taps q run backwards, so
/// the output columns j reaching one input column come in increasing
/// order). Measured against a register-accumulating gather per element, these
/// row loops were 1.1-3.5x faster (3x3 stride 2 and 5x5 stride 1 layers).
///
/// # Safety
/// As `run_conv`; `cv.depthwise()`.
unsafe fn run_depthwise(cv: &Conv, x: *mut f32, w: *mut f32, y: *mut f32, threads: usize) {
    let (n, c, f) = (cv.n as usize, cv.c as usize, cv.f as usize);
    let (h, wd, oh, ow) = (cv.h as usize, cv.w as usize, cv.oh as usize, cv.ow as usize);
    let (kh, kw, sh, sw, ph, pw) = (cv.kh as usize, cv.kw as usize, cv.sh as usize, cv.sw as usize, cv.ph as usize, cv.pw as usize);
    let fg = cv.fg() as usize;
    let (hw, ohw, kk) = (h * wd, oh * ow, kh * kw);
    let work = (n * f * ohw * kk) as u64;
    let (xp, wp, yp) = (SendPtr(x), SendPtr(w), SendPtr(y));
    let (xp, wp, yp) = (&xp, &wp, &yp);
    // Columns of each tap q: the output range and its first input column.
    let cols: Vec<std::ops::Range<usize>> = (0..kw).map(|q| tap_range(ow, q, sw, pw, wd)).collect();
    let cols = &cols;
    match cv.kind {
        ConvKind::Forward => par_ranges(n * f, work, threads, &|lo, hi| {
            for plane in lo..hi {
                let (img, fi) = (plane / f, plane % f);
                let ch = fi / fg;
                // SAFETY: plane `plane` of y, channel ch of image img of x, filter fi; planes are disjoint per task.
                let (xs, ws, ys) = unsafe {
                    (
                        std::slice::from_raw_parts(xp.0.add((img * c + ch) * hw), hw),
                        std::slice::from_raw_parts(wp.0.add(fi * kk), kk),
                        std::slice::from_raw_parts_mut(yp.0.add(plane * ohw), ohw),
                    )
                };
                ys.fill(0.0);
                for i in 0..oh {
                    let yrow = &mut ys[i * ow..][..ow];
                    for p in 0..kh {
                        let Some(r) = (i * sh + p).checked_sub(ph).filter(|&r| r < h) else { continue };
                        let xrow = &xs[r * wd..][..wd];
                        for q in 0..kw {
                            let wv = ws[p * kw + q];
                            let js = cols[q].clone();
                            if js.is_empty() {
                                continue;
                            }
                            if sw == 1 {
                                let x0 = js.start + q - pw;
                                for (yv, xv) in yrow[js.clone()].iter_mut().zip(&xrow[x0..x0 + js.len()]) {
                                    *yv += *xv * wv;
                                }
                            } else {
                                for j in js {
                                    yrow[j] += xrow[j * sw + q - pw] * wv;
                                }
                            }
                        }
                    }
                }
            }
        }),
        ConvKind::GradInput => par_ranges(n * c, work, threads, &|lo, hi| {
            for plane in lo..hi {
                let (img, ch) = (plane / c, plane % c);
                // SAFETY: plane `plane` of dx (disjoint per task), the dy planes and filters of its channel.
                let dx = unsafe { std::slice::from_raw_parts_mut(xp.0.add(plane * hw), hw) };
                dx.fill(0.0);
                for m in 0..fg {
                    let fi = ch * fg + m;
                    let (dy, ws) = unsafe {
                        (
                            std::slice::from_raw_parts(yp.0.add((img * f + fi) * ohw), ohw),
                            std::slice::from_raw_parts(wp.0.add(fi * kk), kk),
                        )
                    };
                    for i in 0..oh {
                        let dyrow = &dy[i * ow..][..ow];
                        for p in 0..kh {
                            let Some(r) = (i * sh + p).checked_sub(ph).filter(|&r| r < h) else { continue };
                            let dxrow = &mut dx[r * wd..][..wd];
                            for q in (0..kw).rev() {
                                let wv = ws[p * kw + q];
                                let js = cols[q].clone();
                                if js.is_empty() {
                                    continue;
                                }
                                if sw == 1 {
                                    let x0 = js.start + q - pw;
                                    for (d, g) in dxrow[x0..x0 + js.len()].iter_mut().zip(&dyrow[js]) {
                                        *d += *g * wv;
                                    }
                                } else {
                                    for j in js {
                                        dxrow[j * sw + q - pw] += dyrow[j] * wv;
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }),
        ConvKind::GradFilter => par_ranges(f, work, threads, &|lo, hi| {
            for fi in lo..hi {
                let ch = fi / fg;
                // SAFETY: filter fi of dw (disjoint per task).
                let dw = unsafe { std::slice::from_raw_parts_mut(wp.0.add(fi * kk), kk) };
                for p in 0..kh {
                    for q in 0..kw {
                        let mut acc = 0.0f32;
                        for img in 0..n {
                            // SAFETY: channel ch of image img of x, plane fi of image img of dy.
                            let (xs, dy) = unsafe {
                                (
                                    std::slice::from_raw_parts(xp.0.add((img * c + ch) * hw), hw),
                                    std::slice::from_raw_parts(yp.0.add((img * f + fi) * ohw), ohw),
                                )
                            };
                            for i in 0..oh {
                                let Some(r) = (i * sh + p).checked_sub(ph).filter(|&r| r < h) else { continue };
                                let xrow = &xs[r * wd..][..wd];
                                let dyrow = &dy[i * ow..][..ow];
                                for j in cols[q].clone() {
                                    acc += dyrow[j] * xrow[j * sw + q - pw];
                                }
                            }
                        }
                        dw[p * kw + q] = acc;
                    }
                }
            }
        }),
    }
}

/// A convolution or one of its gradients as im2col/col2im + GEMM, one image
/// at a time (the workspace holds one image's columns), one GEMM per group
/// (group g: filters `g·F/G ..`, column rows `g·(C/G)·KH·KW ..`); depthwise
/// convolutions (`C/groups == 1`) as direct loops (`run_depthwise`).
///
/// # Safety
/// The pointers hold the tensors of `cv` (x: N·C·H·W, w: F·(C/G)·KH·KW,
/// y: N·F·OH·OW floats), `ws` at least `cv.cols()` floats, all disjoint
/// except as the op's semantics allow (they are distinct values).
pub unsafe fn run_conv(cv: &Conv, x: *mut f32, w: *mut f32, y: *mut f32, ws: *mut f32, threads: usize) {
    if cv.depthwise() {
        // SAFETY: per the contract.
        unsafe { run_depthwise(cv, x, w, y, threads) };
        return;
    }
    let (n, c, f) = (cv.n as usize, cv.c as usize, cv.f as usize);
    let groups = cv.groups.max(1) as usize;
    let (fg, cgkk) = (cv.fg() as usize, (cv.cg() * cv.kh * cv.kw) as usize);
    let ckk = c * (cv.kh * cv.kw) as usize;
    let ohw = (cv.oh * cv.ow) as usize;
    let chw = c * (cv.h * cv.w) as usize;
    let fohw = f * ohw;
    let cols_n = ckk * ohw;
    // SAFETY: sizes per the contract.
    let cols = unsafe { std::slice::from_raw_parts_mut(ws, cols_n) };
    // One GEMM per group; with several groups each below the threading
    // threshold, contiguous runs of groups on the threads, each GEMM on one
    // thread as it would be anyway (the same bits).
    let per_group = |m: usize,
                     nn: usize,
                     k: usize,
                     dst: (*mut f32, usize),
                     read: bool,
                     lhs: (*const f32, usize, isize, isize),
                     rhs: (*const f32, usize, isize, isize)| {
        let flops = (m * nn * k) as u64;
        let split = threads > 1 && groups >= 2 && flops < GEMM_PAR_MIN_FLOPS && flops * groups as u64 >= GEMM_PAR_MIN_FLOPS;
        let par = if threads > 1 && flops >= GEMM_PAR_MIN_FLOPS { gemm::Parallelism::Rayon(threads) } else { gemm::Parallelism::None };
        let (d, l, r) = (SendPtr(dst.0), SendPtr(lhs.0 as *mut f32), SendPtr(rhs.0 as *mut f32));
        let (d, l, r) = (&d, &l, &r);
        let (dst, lhs, rhs) = ((0u8, dst.1), (0u8, lhs.1, lhs.2, lhs.3), (0u8, rhs.1, rhs.2, rhs.3));
        let run = |lo: usize, hi: usize| {
            for g in lo..hi {
                // SAFETY: group g's blocks lie inside each matrix (callers pass the group strides);
                // the destination blocks of different groups are disjoint.
                unsafe {
                    gemm::gemm(
                        m,
                        nn,
                        k,
                        d.0.add(g * dst.1),
                        1,
                        nn as isize,
                        read,
                        l.0.add(g * lhs.1),
                        lhs.2,
                        lhs.3,
                        r.0.add(g * rhs.1),
                        rhs.2,
                        rhs.3,
                        1.0f32,
                        1.0f32,
                        false,
                        false,
                        false,
                        par,
                    )
                }
            }
        };
        if split {
            par_ranges(groups, PAR_MIN_WORK, threads, &run);
        } else {
            run(0, groups);
        }
    };
    match cv.kind {
        ConvKind::Forward => {
            for img in 0..n {
                // SAFETY: image img of x and y.
                let xi = unsafe { std::slice::from_raw_parts(x.add(img * chw), chw) };
                im2col(cv, xi, cols);
                // y[img]_g (Fg x OHW) = W_g (Fg x CgKK) . cols_g (CgKK x OHW)
                let yi = unsafe { y.add(img * fohw) };
                per_group(fg, ohw, cgkk, (yi, fg * ohw), false, (w, fg * cgkk, 1, cgkk as isize), (cols.as_ptr(), cgkk * ohw, 1, ohw as isize));
            }
        }
        ConvKind::GradInput => {
            for img in 0..n {
                // cols_g (CgKK x OHW) = W_g^T (CgKK x Fg) . dy[img]_g (Fg x OHW)
                let dyi = unsafe { y.add(img * fohw) } as *const f32;
                per_group(cgkk, ohw, fg, (cols.as_mut_ptr(), cgkk * ohw), false, (w, fg * cgkk, cgkk as isize, 1), (dyi, fg * ohw, 1, ohw as isize));
                // SAFETY: image img of dx.
                let dx = unsafe { std::slice::from_raw_parts_mut(x.add(img * chw), chw) };
                col2im(cv, cols, dx);
            }
        }
        ConvKind::GradFilter => {
            for img in 0..n {
                // SAFETY: image img of x.
                let xi = unsafe { std::slice::from_raw_parts(x.add(img * chw), chw) };
                im2col(cv, xi, cols);
                // dW_g (Fg x CgKK) (+)= dy[img]_g (Fg x OHW) . cols_g^T (OHW x CgKK)
                let dyi = unsafe { y.add(img * fohw) } as *const f32;
                per_group(fg, cgkk, ohw, (w, fg * cgkk), img > 0, (dyi, fg * ohw, 1, ohw as isize), (cols.as_ptr(), cgkk * ohw, ohw as isize, 1));
            }
            if n == 0 {
                // SAFETY: the filter gradient has F·(C/G)·KK floats.
                unsafe { std::slice::from_raw_parts_mut(w, cv.filter_elems() as usize) }.fill(0.0);
            }
        }
    }
}

impl Drop for CpuExecutor {
    /// With `CKOPT_PROFILE` set, prints where the steps spent their time.
    fn drop(&mut self) {
        if self.profile.is_none() {
            return;
        }
        eprintln!("# cpu profile of @{} ({} runs): calls, ms, what", self.func.name, self.report.steps);
        for (what, n, ms) in self.profile() {
            eprintln!("{n:>8} {ms:>10.2}  {what}");
        }
    }
}

impl ckopt_interp::StepExec for CpuExecutor {
    fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), Diag> {
        CpuExecutor::set_arg(self, i, t)
    }
    fn run(&mut self) -> Result<(), Diag> {
        CpuExecutor::run(self)
    }
    fn result(&self, j: usize) -> Option<Tensor> {
        CpuExecutor::result(self, j)
    }
    fn arg(&self, i: usize) -> Option<Tensor> {
        CpuExecutor::arg(self, i)
    }
    fn result_in_arg(&self, j: usize) -> Option<usize> {
        match self.prog.results.get(j)?.slot.buf {
            BufId::Arg(i) => Some(i as usize),
            _ => None,
        }
    }
    fn peak_bytes(&self) -> u64 {
        self.report.arena_allocated_bytes
    }
    fn take_arg(&mut self, i: usize) -> Option<ckopt_interp::ArgBuf> {
        CpuExecutor::take_arg(self, i).map(|v| ckopt_interp::ArgBuf(Box::new(v)))
    }
    fn put_arg(&mut self, i: usize, b: ckopt_interp::ArgBuf) -> Result<(), ckopt_interp::ArgBuf> {
        let v = b.0.downcast::<Arena>().map_err(ckopt_interp::ArgBuf)?;
        CpuExecutor::put_arg(self, i, *v).map_err(|v| ckopt_interp::ArgBuf(Box::new(v)))
    }
}
