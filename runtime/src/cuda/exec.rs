//! The cuda executor: runs the step programs of a bundle on a `Device`.
//!
//! `CudaModule` is a bundle loaded on a device: its kernels resolved to
//! device functions. A `CudaExecutor` runs one of its programs with
//! resident buffers: one device arena of exactly `ck.arena_bytes`, the
//! workspace (convolution columns, column-reduction accumulators), the
//! scratch buffer of two-stage reductions, and one buffer per argument.
//! Arguments are copied in only by `set_arg` (training sets them once;
//! parameters and optimizer state are then updated in place by the step's
//! own kernels), results are copied back only when asked for (`result`:
//! the loss is 4 bytes). A step launches every step of the program in
//! order on one stream, with a timer (CUDA events) around the whole step.
//!
//! GEMM steps go to the device's GEMM library (cuBLAS: f32 GEMMs as
//! `cublasSgemmStridedBatched`, bf16/f16 ones as `cublasGemmStridedBatchedEx`
//! with f32 compute) or, without one, to the fallback kernel of their
//! element type (`ck_lib_gemm`, `ck_lib_gemm_bf16`, `ck_lib_gemm_f16`);
//! convolutions (f32) are im2col / col2im kernels plus GEMMs, one image at
//! a time in the workspace. Buffers hold each value in its element type
//! (`ArgInfo::dtype`, `ResultInfo::dtype`): arguments and results cross as
//! the little-endian bytes of their type.
//!
//! Errors (`RuntimeError`s naming the op, its location and the function): a
//! launch the driver rejects, a GEMM that fails, an allocation that does
//! not fit (with the device's free memory), a fault found at the end of the
//! step (asynchronous: `CKOPT_CUDA_SYNC=1` synchronizes after every op to
//! name the failing one).

use super::device::{Device, GemmCall, KArg};
use crate::error::RuntimeError;
use crate::report::Report;
use ckopt_interp::Tensor;
use ckopt_ir::DType;
use ckopt_kernels::bundle::{GEMM_TILE, LIB_BLOCK, LIB_COL2IM, LIB_IM2COL, MAX_GRID, lib_gemm_entry};
use ckopt_kernels::{BufId, Bundle, Conv, ConvKind, Gemm, Launch, OpRef, Slot, Step, StepProgram};
use std::sync::Arc;

/// A bundle loaded on a device.
pub struct CudaModule {
    pub dev: Arc<dyn Device>,
    pub bundle: Bundle,
    /// Per kernel: its launches with their device functions.
    kernels: Vec<Vec<(usize, Launch)>>,
    /// The fallback GEMM kernels, by element type.
    gemm: Vec<(DType, usize)>,
    im2col: Option<usize>,
    col2im: Option<usize>,
    /// Bytes of the largest scratch any kernel needs.
    scratch_bytes: u64,
}

impl CudaModule {
    /// Resolves every kernel entry of `bundle` on `dev` (whose module is
    /// the bundle's PTX).
    pub fn new(dev: Arc<dyn Device>, bundle: Bundle) -> Result<Arc<CudaModule>, RuntimeError> {
        let mut kernels = Vec::with_capacity(bundle.kernels.len());
        for k in &bundle.kernels {
            let mut v = Vec::with_capacity(k.launches.len());
            for l in &k.launches {
                v.push((dev.function(&l.entry)?, l.clone()));
            }
            kernels.push(v);
        }
        let lib = |e: &str| dev.function(e).ok();
        let scratch_bytes = bundle.kernels.iter().map(|k| k.scratch_bytes).max().unwrap_or(0);
        Ok(Arc::new(CudaModule {
            gemm: [DType::F32, DType::BF16, DType::F16].into_iter().filter_map(|d| Some((d, lib(&lib_gemm_entry(d))?))).collect(),
            im2col: lib(LIB_IM2COL),
            col2im: lib(LIB_COL2IM),
            dev,
            bundle,
            kernels,
            scratch_bytes,
        }))
    }
}

/// A device allocation freed on drop.
struct Buffer {
    dev: Arc<dyn Device>,
    ptr: u64,
    bytes: u64,
}

impl Buffer {
    fn new(dev: &Arc<dyn Device>, bytes: u64, what: &str) -> Result<Buffer, RuntimeError> {
        if bytes == 0 {
            return Ok(Buffer { dev: dev.clone(), ptr: 0, bytes: 0 });
        }
        let ptr = dev.alloc(bytes).map_err(|e| RuntimeError::Alloc {
            what: what.to_string(),
            bytes,
            free: dev.mem_info().ok(),
            source: Box::new(e),
        })?;
        dev.zero(ptr, bytes).map_err(|e| e.context(format!("clearing {what}")))?;
        Ok(Buffer { dev: dev.clone(), ptr, bytes })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        if self.bytes > 0 {
            self.dev.free(self.ptr);
        }
    }
}

/// Runs one program of a `CudaModule` on resident device buffers.
pub struct CudaExecutor {
    module: Arc<CudaModule>,
    prog: StepProgram,
    arena: Buffer,
    workspace: Buffer,
    scratch: Buffer,
    args: Vec<Buffer>,
    free_before: u64,
    h2d_since_run: u64,
    sync_each_op: bool,
    report: Report,
}

fn at(op: &OpRef, func: &str, e: RuntimeError) -> RuntimeError {
    RuntimeError::Op { op: op.name.clone(), loc: op.loc.clone(), func: func.to_string(), source: Box::new(e) }
}

impl CudaExecutor {
    /// An executor for function `func` of the module's bundle.
    pub fn new(module: Arc<CudaModule>, func: &str) -> Result<CudaExecutor, RuntimeError> {
        let prog = module.bundle.program(func).cloned().ok_or_else(|| {
            let names: Vec<&str> = module.bundle.programs.iter().map(|p| p.func.as_str()).collect();
            RuntimeError::Bundle(format!("the bundle has no function @{func}; it has @{}", names.join(", @")))
        })?;
        let dev = module.dev.clone();
        let (free_before, _) = dev.mem_info().map_err(|e| e.context("cuda backend: cuMemGetInfo"))?;
        let arena = Buffer::new(&dev, prog.arena_bytes, "the arena")?;
        let workspace = Buffer::new(&dev, prog.workspace_bytes, "the workspace")?;
        let scratch = Buffer::new(&dev, module.scratch_bytes, "the reduction scratch")?;
        let mut args = Vec::with_capacity(prog.args.len());
        for (i, a) in prog.args.iter().enumerate() {
            let bytes = a.dtype.bytes() * a.shape.iter().product::<u64>();
            args.push(Buffer::new(&dev, bytes, &format!("argument {i} (%{})", a.name))?);
        }
        let kernels = prog.steps.iter().filter(|s| matches!(s, Step::Kernel { .. })).count();
        let report = Report {
            backend: "cuda".into(),
            function: func.to_string(),
            arena_bytes: prog.arena_bytes,
            arena_allocated_bytes: arena.bytes,
            input_bytes: args.iter().map(|b| b.bytes).sum(),
            workspace_bytes: workspace.bytes + scratch.bytes,
            device: Some(dev.describe()),
            kernels: Some(kernels),
            distinct_kernels: Some(module.bundle.kernels.len()),
            gemm: Some(dev.gemm_library()),
            ..Default::default()
        };
        let sync_each_op = std::env::var_os("CKOPT_CUDA_SYNC").is_some_and(|v| v != "0");
        Ok(CudaExecutor {
            module,
            prog,
            arena,
            workspace,
            scratch,
            args,
            free_before,
            h2d_since_run: 0,
            sync_each_op,
            report,
        })
    }

    pub fn program(&self) -> &StepProgram {
        &self.prog
    }

    /// Records how long compiling took (for the report).
    pub fn set_compile_ms(&mut self, ms: f64) {
        self.report.compile_ms = ms;
    }

    fn base(&self, b: BufId) -> u64 {
        match b {
            BufId::Arena => self.arena.ptr,
            BufId::Workspace => self.workspace.ptr,
            BufId::Arg(i) => self.args.get(i as usize).map(|a| a.ptr).unwrap_or(0),
        }
    }

    fn ptr(&self, s: &Slot) -> u64 {
        self.base(s.buf) + s.offset
    }

    /// Copies `t` into argument `i`'s device buffer.
    pub fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), RuntimeError> {
        let a = self.prog.args.get(i).ok_or_else(|| RuntimeError::Bundle(format!("@{} has no argument {i}", self.prog.func)))?;
        let want: Vec<usize> = a.shape.iter().map(|&d| d as usize).collect();
        if t.shape != want {
            return Err(RuntimeError::Bundle(format!(
                "argument {i} (%{}) of @{} needs shape {want:?}, got {:?}",
                a.name, self.prog.func, t.shape
            )));
        }
        if t.dtype != a.dtype {
            return Err(RuntimeError::Bundle(format!(
                "argument {i} (%{}) of @{} needs element type {}, got {}",
                a.name,
                self.prog.func,
                a.dtype.name(),
                t.dtype.name()
            )));
        }
        let buf = &self.args[i];
        if buf.bytes > 0 {
            let bytes = t.to_le_bytes();
            self.module.dev.htod(buf.ptr, &bytes).map_err(|e| e.context(format!("cuda backend: copying argument {i} to the device")))?;
            self.h2d_since_run += buf.bytes;
        }
        Ok(())
    }

    fn read(&self, ptr: u64, shape: &[u64], dt: DType) -> Result<Tensor, RuntimeError> {
        let n = shape.iter().product::<u64>() as usize;
        let mut bytes = vec![0u8; n * dt.bytes() as usize];
        if n > 0 {
            self.module.dev.dtoh(ptr, &mut bytes)?;
        }
        Tensor::from_le_bytes(shape.iter().map(|&d| d as usize).collect(), dt, &bytes).map_err(|e| RuntimeError::Other(e.to_string()))
    }

    /// Result `j` of the last run, copied back.
    pub fn result(&self, j: usize) -> Result<Tensor, RuntimeError> {
        let r = self.prog.results.get(j).ok_or_else(|| RuntimeError::Bundle(format!("@{} has no result {j}", self.prog.func)))?;
        self.read(self.ptr(&r.slot), &r.shape, r.dtype).map_err(|e| e.context(format!("cuda backend: copying result {j} back")))
    }

    /// Argument `i`'s current contents, copied back.
    pub fn arg(&self, i: usize) -> Result<Tensor, RuntimeError> {
        let a = self.prog.args.get(i).ok_or_else(|| RuntimeError::Bundle(format!("@{} has no argument {i}", self.prog.func)))?;
        self.read(self.args[i].ptr, &a.shape, a.dtype).map_err(|e| e.context(format!("cuda backend: copying argument {i} back")))
    }

    /// Runs the program once on the resident buffers.
    pub fn run(&mut self) -> Result<(), RuntimeError> {
        let dev = self.module.dev.clone();
        let func = self.prog.func.clone();
        dev.start_timer().map_err(|e| e.context(format!("cuda backend: @{func}: recording the start event")))?;
        for s in &self.prog.steps {
            let op = s.op();
            match s {
                Step::Kernel { kernel, args, .. } => self.kernel(*kernel as usize, args),
                Step::Gemm { gemm, .. } => self.gemm(gemm),
                Step::Conv { conv, .. } => self.conv(conv),
            }
            .map_err(|e| at(op, &func, e))?;
            if self.sync_each_op {
                dev.synchronize().map_err(|e| at(op, &func, e))?;
            }
        }
        let ms = dev.stop_timer().map_err(|e| RuntimeError::Async { func: func.clone(), source: Box::new(e) })?;
        let (free_after, _) = dev.mem_info().map_err(|e| e.context("cuda backend: cuMemGetInfo"))?;
        self.report.step_ms = ms;
        self.report.step_times_ms.push(ms);
        self.report.steps += 1;
        self.report.device_memory_bytes = Some(self.free_before.saturating_sub(free_after));
        self.report.h2d_bytes_per_step = Some(self.h2d_since_run);
        self.h2d_since_run = 0;
        Ok(())
    }

    fn launch(&self, f: usize, l: &Launch, args: &[KArg]) -> Result<(), RuntimeError> {
        if l.grid.contains(&0) || l.block.contains(&0) {
            return Ok(());
        }
        self.module.dev.launch(f, l.grid, l.block, args).map_err(|e| RuntimeError::Launch { entry: l.entry.clone(), source: Box::new(e) })
    }

    fn kernel(&self, k: usize, slots: &[Slot]) -> Result<(), RuntimeError> {
        let launches = self.module.kernels.get(k).ok_or_else(|| RuntimeError::Bundle(format!("no kernel {k} in the bundle")))?;
        let mut args: Vec<KArg> = slots.iter().map(|s| KArg::Ptr(self.ptr(s))).collect();
        if self.module.bundle.kernels[k].scratch_bytes > 0 {
            args.push(KArg::Ptr(self.scratch.ptr));
        }
        for (f, l) in launches {
            self.launch(*f, l, &args)?;
        }
        Ok(())
    }

    /// A GEMM through the device's library, else the fallback kernel.
    fn gemm_call(&self, g: &GemmCall) -> Result<(), RuntimeError> {
        if g.m == 0 || g.n == 0 || g.batch == 0 {
            return Ok(());
        }
        if self.module.dev.gemm(g)? {
            return Ok(());
        }
        let f = self.module.gemm.iter().find(|(d, _)| *d == g.dtype).map(|&(_, f)| f).ok_or_else(|| {
            RuntimeError::Bundle(format!("the bundle has no fallback GEMM kernel for {}", g.dtype.name()))
        })?;
        let t = GEMM_TILE as u64;
        let tiles = g.m.div_ceil(t) * g.n.div_ceil(t) * g.batch;
        let l = Launch { entry: lib_gemm_entry(g.dtype), grid: [tiles.min(MAX_GRID as u64) as u32, 1, 1], block: [GEMM_TILE * GEMM_TILE, 1, 1] };
        let args = [
            KArg::Ptr(g.a),
            KArg::Ptr(g.b),
            KArg::Ptr(g.c),
            KArg::Index(g.m),
            KArg::Index(g.n),
            KArg::Index(g.k),
            KArg::I32(g.trans_a as i32),
            KArg::I32(g.trans_b as i32),
            KArg::Index(g.stride_a),
            KArg::Index(g.stride_b),
            KArg::Index(g.stride_c),
            KArg::Index(g.batch),
            KArg::F32(g.beta),
        ];
        self.launch(f, &l, &args)
    }

    fn gemm(&self, g: &Gemm) -> Result<(), RuntimeError> {
        self.gemm_call(&GemmCall {
            trans_a: g.trans_a,
            trans_b: g.trans_b,
            m: g.m,
            n: g.n,
            k: g.k,
            a: self.ptr(&g.a),
            b: self.ptr(&g.b),
            c: self.ptr(&g.c),
            batch: g.batch,
            stride_a: g.m * g.k,
            stride_b: g.k * g.n,
            stride_c: g.m * g.n,
            beta: 0.0,
            dtype: g.dtypes[2],
        })
    }

    /// im2col or col2im of one image.
    fn cols(&self, f: Option<usize>, entry: &str, cv: &Conv, from: u64, to: u64, total: u64) -> Result<(), RuntimeError> {
        let f = f.ok_or_else(|| RuntimeError::Bundle(format!("the bundle has no {entry} kernel")))?;
        let l = Launch {
            entry: entry.into(),
            grid: [total.div_ceil(LIB_BLOCK as u64).min(MAX_GRID as u64) as u32, 1, 1],
            block: [LIB_BLOCK, 1, 1],
        };
        let mut args = vec![KArg::Ptr(from), KArg::Ptr(to)];
        args.extend([cv.c, cv.h, cv.w, cv.kh, cv.kw, cv.oh, cv.ow, cv.sh, cv.sw, cv.ph, cv.pw].map(KArg::Index));
        self.launch(f, &l, &args)
    }

    /// A convolution as im2col/col2im of each image plus one GEMM per image,
    /// batched over the groups (group g: filters `g·F/G ..`, column rows
    /// `g·(C/G)·KH·KW ..`, output planes `g·F/G ..`).
    fn conv(&self, cv: &Conv) -> Result<(), RuntimeError> {
        let (x, w, y, ws) = (self.ptr(&cv.x), self.ptr(&cv.wt), self.ptr(&cv.y), self.workspace.ptr);
        let groups = cv.groups.max(1);
        let (fg, cgkk) = (cv.fg(), cv.cg() * cv.kh * cv.kw);
        let ohw = cv.oh * cv.ow;
        let chw = cv.c * cv.h * cv.w;
        let fohw = cv.f * ohw;
        // Per-group blocks: W_g (Fg x CgKK), cols_g (CgKK x OHW), y_g (Fg x OHW).
        let (w_g, cols_g, y_g) = (fg * cgkk, cgkk * ohw, fg * ohw);
        let batched = |trans_a, trans_b, m, n, k, (a, sa), (b, sb), (c, sc), beta| GemmCall {
            trans_a,
            trans_b,
            m,
            n,
            k,
            a,
            b,
            c,
            batch: groups,
            stride_a: sa,
            stride_b: sb,
            stride_c: sc,
            beta,
            dtype: DType::F32,
        };
        for img in 0..cv.n {
            let (xi, yi) = (x + 4 * img * chw, y + 4 * img * fohw);
            match cv.kind {
                ConvKind::Forward => {
                    self.cols(self.module.im2col, LIB_IM2COL, cv, xi, ws, cv.cols())?;
                    // y[img]_g (Fg x OHW) = W_g (Fg x CgKK) . cols_g (CgKK x OHW)
                    self.gemm_call(&batched(false, false, fg, ohw, cgkk, (w, w_g), (ws, cols_g), (yi, y_g), 0.0))?;
                }
                ConvKind::GradInput => {
                    // cols_g (CgKK x OHW) = W_g^T (CgKK x Fg) . dy[img]_g (Fg x OHW)
                    self.gemm_call(&batched(true, false, cgkk, ohw, fg, (w, w_g), (yi, y_g), (ws, cols_g), 0.0))?;
                    self.cols(self.module.col2im, LIB_COL2IM, cv, ws, xi, chw)?;
                }
                ConvKind::GradFilter => {
                    self.cols(self.module.im2col, LIB_IM2COL, cv, xi, ws, cv.cols())?;
                    // dW_g (Fg x CgKK) (+)= dy[img]_g (Fg x OHW) . cols_g^T (OHW x CgKK)
                    let beta = if img > 0 { 1.0 } else { 0.0 };
                    self.gemm_call(&batched(false, true, fg, cgkk, ohw, (yi, y_g), (ws, cols_g), (w, w_g), beta))?;
                }
            }
        }
        if cv.n == 0 && cv.kind == ConvKind::GradFilter {
            self.module.dev.zero(w, 4 * cv.filter_elems())?;
        }
        Ok(())
    }

    pub fn report(&self) -> Report {
        self.report.clone()
    }
}

fn diag(e: RuntimeError) -> ckopt_ir::Diag {
    ckopt_ir::Diag::error(Default::default(), e.to_string())
}

impl ckopt_interp::StepExec for CudaExecutor {
    fn set_arg(&mut self, i: usize, t: &Tensor) -> Result<(), ckopt_ir::Diag> {
        CudaExecutor::set_arg(self, i, t).map_err(diag)
    }
    fn run(&mut self) -> Result<(), ckopt_ir::Diag> {
        CudaExecutor::run(self).map_err(diag)
    }
    fn result(&self, j: usize) -> Option<Tensor> {
        CudaExecutor::result(self, j).ok()
    }
    fn arg(&self, i: usize) -> Option<Tensor> {
        CudaExecutor::arg(self, i).ok()
    }
    fn result_in_arg(&self, j: usize) -> Option<usize> {
        match self.prog.results.get(j)?.slot.buf {
            BufId::Arg(i) => Some(i as usize),
            _ => None,
        }
    }
    fn peak_bytes(&self) -> u64 {
        self.report.device_memory_bytes.unwrap_or(0).saturating_sub(self.report.input_bytes)
    }
}
