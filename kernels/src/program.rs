//! The step program: what a backend executes for one planned function.
//!
//! A list of steps in schedule order: kernel calls (a kernel of the module's
//! `KernelCache` and the buffer slices it reads and writes) and library
//! calls (GEMM, convolution), each naming the ck op it came from for errors.
//! Buffers are the one arena (`ck.arena_bytes`), the argument buffers, and
//! a scratch workspace (`workspace_bytes`, for convolution columns and
//! column-reduction accumulators). Both the cpu and the cuda runtimes execute
//! the same program; it serializes (serde) into cuda bundles.
//!
//! Built by `build_program` from a function that memplan planned (and,
//! optionally, `fuse` grouped). Checks, each an error naming the op: the
//! function is planned; convolutions are f32; every slot lies inside its buffer; a kernel
//! output that overlaps an input is exactly that input's bytes and the
//! kernel reads it element by element (else the kernel would read bytes it
//! has overwritten); GEMM sizes fit the backends' 32-bit limits.
//! Complexity: O(ops + values) plus the kernel signatures' text.

use crate::kernel::{KernelCache, extract, with_alias};
use crate::layout::{Buf, Layout, Place, layout};
use ckopt_ir::fusion::analyze;
use ckopt_ir::ops::{ATTR_DONATE, ATTR_OPT_STATE, ATTR_PARAM, ATTR_STEP, attr_bool, conv_groups, conv_params};
use ckopt_ir::{DType, Diag, Func, Op, OpKind, ValueId};
use serde::{Deserialize, Serialize};

/// Element types in bundles: by name (`"bf16"`), f32 when absent (bundles
/// written before element types were recorded).
mod dtype_serde {
    use ckopt_ir::DType;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(d: &DType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(d.name())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DType, D::Error> {
        let s = String::deserialize(d)?;
        DType::from_name(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown element type '{s}'")))
    }
    pub fn is_f32(d: &DType) -> bool {
        *d == DType::F32
    }
    pub fn f32() -> DType {
        DType::F32
    }
    pub mod three {
        use ckopt_ir::DType;
        use serde::{Deserialize, Deserializer, Serializer};
        pub fn serialize<S: Serializer>(d: &[DType; 3], s: S) -> Result<S::Ok, S::Error> {
            s.collect_seq(d.iter().map(|t| t.name()))
        }
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[DType; 3], D::Error> {
            let v = <[String; 3]>::deserialize(d)?;
            let one = |s: &str| DType::from_name(s).ok_or_else(|| serde::de::Error::custom(format!("unknown element type '{s}'")));
            Ok([one(&v[0])?, one(&v[1])?, one(&v[2])?])
        }
        pub fn is_f32(d: &[DType; 3]) -> bool {
            d.iter().all(|&t| t == DType::F32)
        }
        pub fn f32() -> [DType; 3] {
            [DType::F32; 3]
        }
    }
}

/// Which buffer a slot is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BufId {
    Arena,
    Arg(u32),
    Workspace,
}

impl From<Buf> for BufId {
    fn from(b: Buf) -> BufId {
        match b {
            Buf::Arena => BufId::Arena,
            Buf::Input(i) => BufId::Arg(i as u32),
        }
    }
}

/// A byte range of one buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Slot {
    pub buf: BufId,
    pub offset: u64,
    pub bytes: u64,
}

impl Slot {
    pub fn overlaps(&self, o: &Slot) -> bool {
        self.buf == o.buf && self.offset < o.offset + o.bytes && o.offset < self.offset + self.bytes
    }
}

/// The ck op a step comes from (for error messages).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpRef {
    /// Index of the (first) op in the function body.
    pub index: u32,
    /// `ck.matmul`, or `fusion of ck.add, ck.relu` for a group.
    pub name: String,
    /// `file:line:col`.
    pub loc: String,
}

/// `C[b] = op(A[b]) · op(B[b])` for b in 0..batch, row-major, of element
/// types `dtypes` (A, B, C: f32, bf16 or f16; f32 accumulation).
/// A is `[M, K]` (`[K, M]` when `trans_a`), B is `[K, N]` (`[N, K]` when
/// `trans_b`), C is `[M, N]`; consecutive batch matrices are contiguous.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gemm {
    pub batch: u64,
    pub m: u64,
    pub n: u64,
    pub k: u64,
    pub trans_a: bool,
    pub trans_b: bool,
    pub a: Slot,
    pub b: Slot,
    pub c: Slot,
    /// Element types of A, B and C.
    #[serde(default = "dtype_serde::three::f32", skip_serializing_if = "dtype_serde::three::is_f32", with = "dtype_serde::three")]
    pub dtypes: [DType; 3],
}

/// Which convolution a library step computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ConvKind {
    /// y = conv2d(x, w)
    Forward,
    /// dx = conv2d_grad_input(dy, w)
    GradInput,
    /// dw = conv2d_grad_filter(x, dy)
    GradFilter,
}

/// A 2-D convolution (NCHW input x, FCHW filter w, NFHW output y) or one of
/// its gradients; the three slots are x, w, y by role whichever is written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conv {
    pub kind: ConvKind,
    pub n: u64,
    pub c: u64,
    pub h: u64,
    pub w: u64,
    pub f: u64,
    pub kh: u64,
    pub kw: u64,
    pub oh: u64,
    pub ow: u64,
    pub sh: u64,
    pub sw: u64,
    pub ph: u64,
    pub pw: u64,
    /// `groups` of the op: filter group g (F/groups filters) reads input
    /// channel group g (C/groups channels); the filter is `[F, C/groups, KH, KW]`.
    /// 1 in bundles written before grouped convolutions.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub groups: u64,
    pub x: Slot,
    pub wt: Slot,
    pub y: Slot,
}

fn one() -> u64 {
    1
}

fn is_one(g: &u64) -> bool {
    *g == 1
}

impl Conv {
    /// Input channels per group (the filter's second dim).
    pub fn cg(&self) -> u64 {
        self.c / self.groups.max(1)
    }
    /// Filters per group.
    pub fn fg(&self) -> u64 {
        self.f / self.groups.max(1)
    }
    /// Floats of the filter `[F, C/groups, KH, KW]`.
    pub fn filter_elems(&self) -> u64 {
        self.f * self.cg() * self.kh * self.kw
    }
    /// Depthwise: one input channel per group (`C/groups == 1`), which the
    /// backends may run as a direct loop instead of im2col + GEMM.
    pub fn depthwise(&self) -> bool {
        self.groups > 1 && self.cg() == 1
    }
    /// Floats of one image's im2col matrix `[C·KH·KW, OH·OW]`.
    pub fn cols(&self) -> u64 {
        self.c * self.kh * self.kw * self.oh * self.ow
    }
}

/// One step of the program.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Step {
    /// Kernel `kernel` of the cache on `args`: inputs, outputs, then the
    /// workspace if the kernel needs one.
    Kernel {
        kernel: u32,
        args: Vec<Slot>,
        op: OpRef,
    },
    Gemm {
        gemm: Gemm,
        op: OpRef,
    },
    Conv {
        conv: Conv,
        op: OpRef,
    },
}

impl Step {
    pub fn op(&self) -> &OpRef {
        match self {
            Step::Kernel { op, .. } | Step::Gemm { op, .. } | Step::Conv { op, .. } => op,
        }
    }
}

/// What a function argument is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArgInfo {
    pub name: String,
    pub shape: Vec<u64>,
    /// `{ck.param}`: a trainable parameter.
    pub param: bool,
    /// `{ck.donate}`: the step may write into it (updated parameters, state).
    pub donated: bool,
    /// `{ck.step}`: the dropout step key.
    pub step_key: bool,
    /// `{ck.opt_state}`: optimizer state (momentum).
    pub opt_state: bool,
    /// `{ck.hyper = NAME, ck.hyper_default = V}`: a hyperparameter input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hyper: Option<(String, f32)>,
    /// Its element type.
    #[serde(default = "dtype_serde::f32", skip_serializing_if = "dtype_serde::is_f32", with = "dtype_serde")]
    pub dtype: DType,
}

/// Where a result is after the step.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultInfo {
    pub shape: Vec<u64>,
    pub slot: Slot,
    /// Its element type.
    #[serde(default = "dtype_serde::f32", skip_serializing_if = "dtype_serde::is_f32", with = "dtype_serde")]
    pub dtype: DType,
}

/// The executable form of one planned function.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepProgram {
    pub func: String,
    pub arena_bytes: u64,
    pub workspace_bytes: u64,
    pub args: Vec<ArgInfo>,
    pub results: Vec<ResultInfo>,
    pub steps: Vec<Step>,
}

impl StepProgram {
    /// Steps that call kernel `k`.
    pub fn kernel_steps(&self) -> impl Iterator<Item = (usize, &Step)> {
        self.steps.iter().enumerate().filter(|(_, s)| matches!(s, Step::Kernel { .. }))
    }
}

fn op_ref(f: &Func, i: usize, group: &[Op]) -> OpRef {
    let name = if group.len() == 1 {
        group[0].kind.full_name()
    } else {
        let names: Vec<String> = group.iter().map(|o| o.kind.full_name()).collect();
        format!("fusion of {}", names.join(", "))
    };
    OpRef { index: i as u32, name, loc: f.body[i].loc.to_string() }
}

fn slot_of(f: &Func, l: &Layout, v: ValueId, op: &Op) -> Result<Slot, Diag> {
    let p: Place = l
        .place_of(v)
        .ok_or_else(|| Diag::error(op.loc.clone(), format!("'{}' op reads %{} which has no storage", op.kind.full_name(), f.name_of(v))))?;
    Ok(Slot { buf: p.buf.into(), offset: p.offset, bytes: f.ty(v).bytes() })
}

fn too_big(op: &Op, what: &str, v: u64) -> Diag {
    Diag::error(op.loc.clone(), format!("'{}' op: {what} = {v} exceeds the backends' limit of 2^31 - 1", op.kind.full_name()))
}

/// The GEMM of a `ck.matmul`.
fn gemm_of(f: &Func, l: &Layout, op: &Op) -> Result<Gemm, Diag> {
    let (a, b) = (f.ty(op.operands[0]), f.ty(op.operands[1]));
    let r = a.rank();
    let ta = attr_bool(&op.attrs, "transpose_a");
    let tb = attr_bool(&op.attrs, "transpose_b");
    let (m, k) = if ta { (a.shape[r - 1], a.shape[r - 2]) } else { (a.shape[r - 2], a.shape[r - 1]) };
    let n = if tb { b.shape[r - 2] } else { b.shape[r - 1] };
    let batch: u64 = a.shape[..r - 2].iter().product();
    for (what, v) in [("M", m), ("N", n), ("K", k), ("batch", batch)] {
        if v > i32::MAX as u64 {
            return Err(too_big(op, what, v));
        }
    }
    let res = op.result.ok_or_else(|| Diag::error(op.loc.clone(), "matmul without result"))?;
    Ok(Gemm {
        batch,
        m,
        n,
        k,
        trans_a: ta,
        trans_b: tb,
        a: slot_of(f, l, op.operands[0], op)?,
        b: slot_of(f, l, op.operands[1], op)?,
        c: slot_of(f, l, res, op)?,
        dtypes: [a.dtype, b.dtype, f.ty(res).dtype],
    })
}

/// The library convolution of a conv op.
fn conv_of(f: &Func, l: &Layout, op: &Op) -> Result<Conv, Diag> {
    let res = op.result.ok_or_else(|| Diag::error(op.loc.clone(), "conv without result"))?;
    let (s, p) = conv_params(&op.attrs).map_err(|e| Diag::error(op.loc.clone(), e.to_string()))?;
    let groups = conv_groups(&op.attrs).map_err(|e| Diag::error(op.loc.clone(), e.to_string()))?;
    let (kind, x, w, y) = match op.kind {
        OpKind::Conv2d => (ConvKind::Forward, op.operands[0], op.operands[1], res),
        OpKind::Conv2dGradInput => (ConvKind::GradInput, res, op.operands[1], op.operands[0]),
        _ => (ConvKind::GradFilter, op.operands[0], res, op.operands[1]),
    };
    let (xs, ws, ys) = (&f.ty(x).shape, &f.ty(w).shape, &f.ty(y).shape);
    let c = Conv {
        kind,
        n: xs[0],
        c: xs[1],
        h: xs[2],
        w: xs[3],
        f: ws[0],
        kh: ws[2],
        kw: ws[3],
        oh: ys[2],
        ow: ys[3],
        sh: s[0],
        sw: s[1],
        ph: p[0],
        pw: p[1],
        groups,
        x: slot_of(f, l, x, op)?,
        wt: slot_of(f, l, w, op)?,
        y: slot_of(f, l, y, op)?,
    };
    if c.cols() > i32::MAX as u64 {
        return Err(too_big(op, "im2col elements", c.cols()));
    }
    if groups == 0 || c.c % groups != 0 || c.f % groups != 0 || ws[1] != c.cg() {
        return Err(Diag::error(
            op.loc.clone(),
            format!("'{}' op: groups {groups} does not fit input channels {} and filter {:?}", op.kind.full_name(), c.c, ws),
        ));
    }
    Ok(c)
}

/// Whether, inside kernel function `k`, input `i` and everything computed
/// from it are read only at the element being written (elementwise ops,
/// reshapes, the reduction): then an output may overwrite it in place.
fn reads_stepwise(k: &Func, i: usize) -> bool {
    let mut derived = vec![k.params[i].value];
    for op in &k.body {
        if op.kind == OpKind::Return || !op.operands.iter().any(|o| derived.contains(o)) {
            continue;
        }
        let reduce = matches!(op.kind, OpKind::ReduceSum | OpKind::ReduceMax);
        if !(op.kind.is_elementwise() || op.kind == OpKind::Reshape || reduce) {
            return false;
        }
        if let Some(r) = op.result
            && !reduce
        {
            derived.push(r);
        }
    }
    true
}

/// Builds the step program of a planned function; its kernels go into
/// `cache` (shared by the functions of a module).
pub fn build_program(f: &Func, cache: &mut KernelCache) -> Result<StepProgram, Diag> {
    let l = layout(f)?;
    let fusion = analyze(f);
    let mut steps = Vec::new();
    let mut workspace = 0u64;
    let mut i = 0;
    while i < f.body.len() {
        let (s, e) = fusion.span(i);
        let op = &f.body[i];
        i = e + 1;
        if op.kind == OpKind::Return || op.result.is_none() {
            continue;
        }
        let group = &f.body[s..=e];
        let oref = op_ref(f, s, group);
        match op.kind {
            OpKind::Matmul if s == e => {
                let g = gemm_of(f, &l, op)?;
                if g.m * g.n > 0 {
                    steps.push(Step::Gemm { gemm: g, op: oref });
                }
                continue;
            }
            OpKind::Conv2d | OpKind::Conv2dGradInput | OpKind::Conv2dGradFilter if s == e => {
                let c = conv_of(f, &l, op)?;
                workspace = workspace.max(c.cols() * 4);
                steps.push(Step::Conv { conv: c, op: oref });
                continue;
            }
            _ => {}
        }
        let (kernel, ins, outs) = extract(f, s..=e, &fusion.internal)?;
        // A reshape written in place is a relabelling of the same bytes.
        if s == e && op.kind == OpKind::Reshape && outs.len() == 1 && l.place_of(outs[0]) == l.place_of(ins[0]) {
            continue;
        }
        let in_slots: Vec<Slot> = ins.iter().map(|&v| slot_of(f, &l, v, op)).collect::<Result<_, _>>()?;
        let out_slots: Vec<Slot> = outs.iter().map(|&v| slot_of(f, &l, v, op)).collect::<Result<_, _>>()?;
        let mut alias = Vec::with_capacity(outs.len());
        for (j, o) in out_slots.iter().enumerate() {
            let mut a = None;
            for (k, x) in in_slots.iter().enumerate() {
                if !o.overlaps(x) {
                    continue;
                }
                let exact = o.offset == x.offset && o.bytes == x.bytes;
                if !exact || !reads_stepwise(&kernel.func, k) || kernel.kind == crate::kernel::KernelKind::Single {
                    return Err(Diag::error(
                        op.loc.clone(),
                        format!(
                            "'{}': result %{} overwrites operand %{} that the kernel still reads at other elements; the plan is not executable (re-run memplan)",
                            oref.name,
                            f.name_of(outs[j]),
                            f.name_of(ins[k])
                        ),
                    ));
                }
                a = Some(k);
            }
            alias.push(a);
        }
        let kernel = with_alias(kernel, alias);
        let mut args = in_slots;
        args.extend(out_slots);
        if kernel.workspace > 0 {
            args.push(Slot { buf: BufId::Workspace, offset: 0, bytes: kernel.workspace });
            workspace = workspace.max(kernel.workspace);
        }
        let id = cache.intern(kernel);
        steps.push(Step::Kernel { kernel: id as u32, args, op: oref });
    }
    let args = f
        .params
        .iter()
        .map(|p| ArgInfo {
            name: f.name_of(p.value).to_string(),
            shape: f.ty(p.value).shape.clone(),
            param: p.attrs.contains_key(ATTR_PARAM),
            donated: p.attrs.contains_key(ATTR_DONATE),
            step_key: p.attrs.contains_key(ATTR_STEP),
            opt_state: p.attrs.contains_key(ATTR_OPT_STATE),
            hyper: match (p.attrs.get(ckopt_ir::ops::ATTR_HYPER), p.attrs.get(ckopt_ir::ops::ATTR_HYPER_DEFAULT)) {
                (Some(ckopt_ir::Attr::Str(n)), d) => Some((n.clone(), if let Some(ckopt_ir::Attr::F32(x)) = d { *x } else { 0.0 })),
                _ => None,
            },
            dtype: f.ty(p.value).dtype,
        })
        .collect();
    let results = l
        .outputs
        .iter()
        .map(|(t, p)| ResultInfo {
            shape: t.shape.clone(),
            slot: Slot { buf: p.buf.into(), offset: p.offset, bytes: t.bytes() },
            dtype: t.dtype,
        })
        .collect();
    Ok(StepProgram { func: f.name.clone(), arena_bytes: l.arena_bytes, workspace_bytes: workspace, args, results, steps })
}

impl std::fmt::Display for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.buf {
            BufId::Arena => write!(f, "arena[{}..+{}]", self.offset, self.bytes),
            BufId::Workspace => write!(f, "workspace[{}..+{}]", self.offset, self.bytes),
            BufId::Arg(i) => write!(f, "arg{i}[{}..+{}]", self.offset, self.bytes),
        }
    }
}

impl StepProgram {
    /// The program as text, one step per line (`ckopt-translate` prints it
    /// as comments): what each step runs, on which bytes, for which op.
    pub fn describe(&self, kernel_name: impl Fn(usize) -> String) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "step program of @{}: {} steps, arena {} bytes, workspace {} bytes",
            self.func,
            self.steps.len(),
            self.arena_bytes,
            self.workspace_bytes
        );
        for (i, st) in self.steps.iter().enumerate() {
            let what = match st {
                Step::Kernel { kernel, args, .. } => {
                    let a: Vec<String> = args.iter().map(|x| x.to_string()).collect();
                    format!("call {}({})", kernel_name(*kernel as usize), a.join(", "))
                }
                Step::Gemm { gemm: g, .. } => format!(
                    "gemm batch {} m {} n {} k {}{}{}{}: {} = {} x {}",
                    g.batch,
                    g.m,
                    g.n,
                    g.k,
                    if g.trans_a { " trans_a" } else { "" },
                    if g.trans_b { " trans_b" } else { "" },
                    if g.dtypes.iter().all(|&d| d == DType::F32) {
                        String::new()
                    } else {
                        format!(" {} = {} x {}", g.dtypes[2].name(), g.dtypes[0].name(), g.dtypes[1].name())
                    },
                    g.c,
                    g.a,
                    g.b
                ),
                Step::Conv { conv: c, .. } => format!(
                    "conv {:?} n {} c {} {}x{} f {} k {}x{} stride {}x{} pad {}x{}{}: x {} w {} y {}",
                    c.kind,
                    c.n,
                    c.c,
                    c.h,
                    c.w,
                    c.f,
                    c.kh,
                    c.kw,
                    c.sh,
                    c.sw,
                    c.ph,
                    c.pw,
                    if c.groups > 1 { format!(" groups {}", c.groups) } else { String::new() },
                    c.x,
                    c.wt,
                    c.y
                ),
            };
            let op = st.op();
            let _ = writeln!(s, "  {i}: {what}  ; {} at {}", op.name, op.loc);
        }
        for (j, r) in self.results.iter().enumerate() {
            let _ = writeln!(s, "  result {j}: {}", r.slot);
        }
        s
    }
}
