//! Per-element code of every ck op, as upstream MLIR text (arith, math,
//! memref, scf).
//!
//! Every value is seen as a flat `memref<Nxf32>` (a view of the arena or of
//! an argument buffer). For one op, `element` emits the code that computes
//! result element `idx` (an `index` SSA value, row-major flat index) from the
//! operand memrefs and returns the SSA name of that f32. The CPU backend puts
//! this code in the body of a 1-D `linalg.generic` over the result; the GPU
//! backend in a `gpu.func` kernel with one thread per element. So both
//! backends compute exactly the same arithmetic, in the same order.
//!
//! Semantics follow docs/ir.md and the interpreter: reductions, matmul and
//! convolutions accumulate from 0 in row-major order of the reduced indices;
//! max pooling's gradient goes to the first maximal element of each window;
//! dropout reproduces the interpreter's SplitMix64 mask bit for bit
//! (`ckopt_ir::random`).
//! Invariant: an op only reads operand elements inside their bounds (padding
//! and window checks guard every load).
//! Complexity: the emitted text is O(rank + loop depth) lines per op.
//!
//! Layout: this module holds the text emitter `Em` and `element`, a dispatch
//! with one arm per op kind into the op families: `elementwise` (arithmetic,
//! math functions, dropout, fill), `movement` (constant, reshape, broadcast,
//! transpose, slice, concat), `reduce` (reductions, matmul) and `conv`
//! (convolutions, pools and their gradients).

use ckopt_ir::ops::attr_ints;
use ckopt_ir::{DType, Diag, Func, Op, OpKind};
use std::fmt::Write;

mod conv;
pub(crate) mod elementwise;
mod index;
mod movement;
mod reduce;

/// An SSA value of type `memref<N x E>`, `E` the storage type of `dt`
/// (`mem_elem`).
#[derive(Clone, Debug)]
pub struct Mem {
    pub name: String,
    pub n: u64,
    pub dt: DType,
}

impl Mem {
    pub fn ty(&self) -> String {
        memref_of(self.n, self.dt)
    }
}

/// `memref<N x f32>`.
pub fn memref_ty(n: u64) -> String {
    memref_of(n, DType::F32)
}

/// `memref<N x E>` with `E` the storage type of `dt`.
pub fn memref_of(n: u64, dt: DType) -> String {
    format!("memref<{n}x{}>", mem_elem(dt))
}

/// The storage type of an element of `dt`: its own MLIR type, except that
/// an `i1` element is one byte (`i8`, 0 or 1).
pub fn mem_elem(dt: DType) -> &'static str {
    match dt {
        DType::F32 => "f32",
        DType::BF16 => "bf16",
        DType::F16 => "f16",
        DType::I64 => "i64",
        DType::I32 => "i32",
        DType::I1 => "i8",
    }
}

/// The type a value of `dt` is computed in: f32 for every float type
/// (bf16/f16 values are rounded to their type after each op, `round_reg`),
/// else the integer type itself (`i1` for masks).
pub fn reg_elem(dt: DType) -> &'static str {
    match dt {
        DType::F32 | DType::BF16 | DType::F16 => "f32",
        DType::I64 => "i64",
        DType::I32 => "i32",
        DType::I1 => "i1",
    }
}

/// `elem` or `vector<w x elem>`.
pub fn lanes_of(w: usize, elem: &str) -> String {
    if w == 1 { elem.to_string() } else { format!("vector<{w}x{elem}>") }
}

/// A loaded storage value `v` (of `w` lanes) as its register type.
pub fn from_mem(em: &mut Em, v: &str, dt: DType, w: usize) -> String {
    match dt {
        DType::BF16 | DType::F16 => em.op(&format!("arith.extf {v} : {} to {}", lanes_of(w, mem_elem(dt)), lanes_of(w, "f32"))),
        DType::I1 => em.op(&format!("arith.trunci {v} : {} to {}", lanes_of(w, "i8"), lanes_of(w, "i1"))),
        _ => v.to_string(),
    }
}

/// A register value `v` (of `w` lanes) as its storage type (bf16/f16
/// rounded to nearest even).
pub fn to_mem(em: &mut Em, v: &str, dt: DType, w: usize) -> String {
    match dt {
        DType::BF16 | DType::F16 => em.op(&format!("arith.truncf {v} : {} to {}", lanes_of(w, "f32"), lanes_of(w, mem_elem(dt)))),
        DType::I1 => em.op(&format!("arith.extui {v} : {} to {}", lanes_of(w, "i1"), lanes_of(w, "i8"))),
        _ => v.to_string(),
    }
}

/// An f32 register value rounded to `dt` (nearest even) and back: what the
/// interpreter does to every op result of a low-precision type.
pub fn round_reg(em: &mut Em, v: &str, dt: DType, w: usize) -> String {
    match dt {
        DType::BF16 | DType::F16 => {
            let t = to_mem(em, v, dt, w);
            from_mem(em, &t, dt, w)
        }
        _ => v.to_string(),
    }
}

/// The body of an `scf.for`: (emitter, induction variable, carried values) -> next values.
type LoopBody<'a> = dyn FnMut(&mut Em, &str, &[String]) -> Vec<String> + 'a;

/// A text emitter with fresh SSA names.
pub struct Em {
    pub out: String,
    next: usize,
    pub indent: usize,
    prefix: String,
    /// Emitting a cuda kernel (NVPTX): operations whose upstream MLIR
    /// lowering would be approximate there are written as NVVM intrinsics
    /// (see `elementwise::sqrt`).
    pub nvptx: bool,
}

impl Em {
    pub fn new(prefix: &str, indent: usize) -> Em {
        Em { out: String::new(), next: 0, indent, prefix: prefix.to_string(), nvptx: false }
    }
    /// An emitter for cuda kernels (`nvptx` set).
    pub fn nvptx(prefix: &str, indent: usize) -> Em {
        Em { nvptx: true, ..Em::new(prefix, indent) }
    }
    pub fn fresh(&mut self) -> String {
        self.next += 1;
        format!("%{}{}", self.prefix, self.next)
    }
    pub fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }
    /// Emits `%v = RHS` and returns `%v`.
    pub fn op(&mut self, rhs: &str) -> String {
        let v = self.fresh();
        self.line(&format!("{v} = {rhs}"));
        v
    }
    pub fn ci(&mut self, v: u64) -> String {
        self.op(&format!("arith.constant {v} : index"))
    }
    pub fn cf(&mut self, v: f32) -> String {
        self.op(&format!("arith.constant {} : f32", ckopt_ir::attr::format_f32(v)))
    }
    fn ibin(&mut self, op: &str, a: &str, b: &str) -> String {
        self.op(&format!("arith.{op} {a}, {b} : index"))
    }
    pub fn iadd(&mut self, a: &str, b: &str) -> String {
        self.ibin("addi", a, b)
    }
    pub fn imul(&mut self, a: &str, b: &str) -> String {
        self.ibin("muli", a, b)
    }
    fn iadd_c(&mut self, a: &str, c: u64) -> String {
        if c == 0 {
            return a.to_string();
        }
        let k = self.ci(c);
        self.iadd(a, &k)
    }
    fn isub_c(&mut self, a: &str, c: u64) -> String {
        if c == 0 {
            return a.to_string();
        }
        let k = self.ci(c);
        self.ibin("subi", a, &k)
    }
    fn imul_c(&mut self, a: &str, c: u64) -> String {
        if c == 1 {
            return a.to_string();
        }
        let k = self.ci(c);
        self.imul(a, &k)
    }
    fn idiv_c(&mut self, a: &str, c: u64) -> String {
        if c == 1 {
            return a.to_string();
        }
        let k = self.ci(c);
        self.ibin("divui", a, &k)
    }
    fn irem_c(&mut self, a: &str, c: u64) -> String {
        let k = self.ci(c);
        self.ibin("remui", a, &k)
    }
    fn icmp_c(&mut self, pred: &str, a: &str, c: u64) -> String {
        let k = self.ci(c);
        self.op(&format!("arith.cmpi {pred}, {a}, {k} : index"))
    }
    fn and(&mut self, a: &str, b: &str) -> String {
        self.op(&format!("arith.andi {a}, {b} : i1"))
    }
    fn fbin(&mut self, op: &str, a: &str, b: &str) -> String {
        self.op(&format!("arith.{op} {a}, {b} : f32"))
    }
    /// Element `idx` of `m`, as its register type (`reg_elem`).
    pub fn load(&mut self, m: &Mem, idx: &str) -> String {
        let v = self.op(&format!("memref.load {}[{idx}] : {}", m.name, m.ty()));
        from_mem(self, &v, m.dt, 1)
    }
    /// Stores register value `v` (of `m`'s type) at `idx`.
    pub fn store(&mut self, m: &Mem, idx: &str, v: &str) {
        let s = to_mem(self, v, m.dt, 1);
        self.line(&format!("memref.store {s}, {}[{idx}] : {}", m.name, m.ty()));
    }
    /// Row-major multi-index of flat `idx` in `shape`.
    fn delin(&mut self, idx: &str, shape: &[u64]) -> Vec<String> {
        let r = shape.len();
        let mut out = vec![String::new(); r];
        let mut cur = idx.to_string();
        for k in (0..r).rev() {
            if k == 0 {
                out[0] = cur.clone();
            } else {
                out[k] = if shape[k] == 1 { self.ci(0) } else { self.irem_c(&cur, shape[k]) };
                cur = self.idiv_c(&cur, shape[k]);
            }
        }
        out
    }
    /// Row-major flat index of `idx` in `shape`.
    fn lin(&mut self, idx: &[String], shape: &[u64]) -> String {
        if idx.is_empty() {
            return self.ci(0);
        }
        let r = shape.len();
        let mut acc = idx[r - 1].clone();
        let mut stride = 1u64;
        for k in (0..r - 1).rev() {
            stride = stride.saturating_mul(shape[k + 1]);
            let t = self.imul_c(&idx[k], stride);
            acc = self.iadd(&acc, &t);
        }
        acc
    }
    fn load_at(&mut self, m: &Mem, idx: &[String], shape: &[u64]) -> String {
        let l = self.lin(idx, shape);
        self.load(m, &l)
    }
    fn result_names(&mut self, n: usize) -> (String, Vec<String>) {
        let v = self.fresh();
        let names = if n == 1 { vec![v.clone()] } else { (0..n).map(|i| format!("{v}#{i}")).collect() };
        let lhs = if n == 1 { v } else { format!("{v}:{n}") };
        (lhs, names)
    }
    /// `scf.for` over `[0, hi)` carrying `inits` (value, type); `body` gets the
    /// induction variable and the carried values and returns the next ones.
    fn for_iter(&mut self, hi: u64, inits: &[(String, &str)], body: &mut LoopBody<'_>) -> Vec<String> {
        let lo = self.ci(0);
        let up = self.ci(hi);
        let one = self.ci(1);
        let iv = self.fresh();
        let args: Vec<String> = inits.iter().map(|_| self.fresh()).collect();
        let (lhs, names) = self.result_names(inits.len());
        let iter: Vec<String> = args.iter().zip(inits).map(|(a, (i, _))| format!("{a} = {i}")).collect();
        let tys: Vec<&str> = inits.iter().map(|(_, t)| *t).collect();
        self.line(&format!("{lhs} = scf.for {iv} = {lo} to {up} step {one} iter_args({}) -> ({}) {{", iter.join(", "), tys.join(", ")));
        self.indent += 1;
        let next = body(self, &iv, &args);
        self.line(&format!("scf.yield {} : {}", next.join(", "), tys.join(", ")));
        self.indent -= 1;
        self.line("}");
        names
    }
    /// Nested loops over `bounds` carrying one f32 accumulator.
    fn loops_acc(&mut self, bounds: &[u64], init: &str, body: &mut dyn FnMut(&mut Em, &[String], &str) -> String) -> String {
        fn rec(
            em: &mut Em,
            bounds: &[u64],
            ivs: &mut Vec<String>,
            acc: &str,
            body: &mut dyn FnMut(&mut Em, &[String], &str) -> String,
        ) -> String {
            if ivs.len() == bounds.len() {
                return body(em, ivs, acc);
            }
            let hi = bounds[ivs.len()];
            let r = em.for_iter(hi, &[(acc.to_string(), "f32")], &mut |em, iv, args| {
                ivs.push(iv.to_string());
                let v = rec(em, bounds, ivs, &args[0], body);
                ivs.pop();
                vec![v]
            });
            r[0].clone()
        }
        rec(self, bounds, &mut Vec::new(), init, body)
    }
    /// `scf.if cond { then }` without results.
    pub(crate) fn if_then(&mut self, cond: &str, then: &mut dyn FnMut(&mut Em) -> Result<(), Diag>) -> Result<(), Diag> {
        self.line(&format!("scf.if {cond} {{"));
        self.indent += 1;
        then(self)?;
        self.indent -= 1;
        self.line("}");
        Ok(())
    }
    /// `scf.if` with results of types `tys`.
    fn if_vals(
        &mut self,
        cond: &str,
        tys: &[&str],
        then: &mut dyn FnMut(&mut Em) -> Vec<String>,
        els: &mut dyn FnMut(&mut Em) -> Vec<String>,
    ) -> Vec<String> {
        let (lhs, names) = self.result_names(tys.len());
        let t = tys.join(", ");
        self.line(&format!("{lhs} = scf.if {cond} -> ({t}) {{"));
        self.indent += 1;
        let a = then(self);
        self.line(&format!("scf.yield {} : {t}", a.join(", ")));
        self.indent -= 1;
        self.line("} else {");
        self.indent += 1;
        let b = els(self);
        self.line(&format!("scf.yield {} : {t}", b.join(", ")));
        self.indent -= 1;
        self.line("}");
        names
    }
    /// `acc + f()` when `cond`, else `acc`.
    fn add_if(&mut self, cond: &str, acc: &str, f: &mut dyn FnMut(&mut Em) -> String) -> String {
        let acc_s = acc.to_string();
        self.if_vals(
            cond,
            &["f32"],
            &mut |em| {
                let v = f(em);
                vec![em.fbin("addf", &acc_s, &v)]
            },
            &mut |_| vec![acc_s.clone()],
        )[0]
        .clone()
    }
    /// `0 <= t < hi` for a signed index `t`.
    fn in_range(&mut self, t: &str, hi: u64) -> String {
        let a = self.icmp_c("sge", t, 0);
        let b = self.icmp_c("slt", t, hi);
        self.and(&a, &b)
    }
}

/// What the emitter of one op family gets: the op, its operand memrefs, the
/// flat index of the result element and the result's shape.
struct Ctx<'a> {
    f: &'a Func,
    op: &'a Op,
    /// Operand i as a flat memref.
    ins: &'a [Mem],
    /// The result element's flat index (an `index` SSA value).
    idx: &'a str,
    /// The result's shape.
    ys: Vec<u64>,
}

impl Ctx<'_> {
    /// An error naming the op.
    fn bad(&self, m: impl std::fmt::Display) -> Diag {
        Diag::error(self.op.loc.clone(), format!("'{}' op: {m}", self.op.kind.full_name()))
    }
    /// The shape of operand `i`.
    fn xs(&self, i: usize) -> Vec<u64> {
        self.f.ty(self.op.operands[i]).shape.clone()
    }
    fn ints(&self, name: &str) -> Vec<i64> {
        attr_ints(&self.op.attrs, name, &[])
    }
    fn int_attr(&self, name: &str) -> Result<i64, Diag> {
        elementwise::int_attr(self.op, name)
    }
}

/// Emits the computation of result element `idx` of `op`; returns its SSA name.
/// `ins[i]` is operand i as a flat memref. One arm per op kind, by family:
/// `elementwise`, `movement`, `reduce` (reductions and matmul) and `conv`
/// (convolutions, pools and their gradients).
pub fn element(em: &mut Em, f: &Func, op: &Op, ins: &[Mem], idx: &str) -> Result<String, Diag> {
    use OpKind::*;
    let Some(res) = op.result else {
        return Err(Diag::error(op.loc.clone(), format!("'{}' op: has no result to compute", op.kind.full_name())));
    };
    let c = Ctx { f, op, ins, idx, ys: f.ty(res).shape.clone() };
    match op.kind {
        Neg | Add | Sub | Mul | Max if !f.ty(res).dtype.is_float() => {
            let xs: Vec<String> = c.ins.iter().map(|m| em.load(m, idx)).collect();
            crate::vemit::int_formula(em, 1, op.kind, f.ty(res).dtype, &xs).map_err(|m| c.bad(m))
        }
        Neg | Exp | Log | Tanh | Sqrt | Rsqrt | Erf | Sigmoid | Relu | Scale | Dropout | Add | Sub | Mul | Div | Max | ReluGrad | Fill => {
            let y = elementwise::element(em, &c)?;
            Ok(round_reg(em, &y, f.ty(res).dtype, 1))
        }
        Constant => movement::constant(em, &c),
        Reshape => movement::reshape(em, &c),
        Broadcast => movement::broadcast(em, &c),
        Transpose => movement::transpose(em, &c),
        Slice => movement::slice(em, &c),
        Concat => movement::concat(em, &c),
        ReduceSum | ReduceMax => reduce::reduce(em, &c),
        Matmul => reduce::matmul(em, &c),
        Conv2d => conv::conv2d(em, &c),
        Conv2dGradInput => conv::conv2d_grad_input(em, &c),
        Conv2dGradFilter => conv::conv2d_grad_filter(em, &c),
        MaxPool2d | AvgPool2d => conv::pool(em, &c),
        MaxPool2dGrad | AvgPool2dGrad => conv::pool_grad(em, &c),
        Gather => index::gather(em, &c),
        GatherGrad => index::gather_grad(em, &c),
        TakeAlong => index::take_along(em, &c),
        TakeAlongGrad => index::take_along_grad(em, &c),
        CrossEntropy => index::cross_entropy(em, &c),
        Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select | Cast => {
            let xs: Vec<String> = c.ins.iter().map(|m| em.load(m, idx)).collect();
            let dts: Vec<DType> = c.ins.iter().map(|m| m.dt).collect();
            crate::vemit::mixed_formula(em, 1, op.kind, &dts, f.ty(res).dtype, &xs).map_err(|m| c.bad(m))
        }
        // Fused loops compute iota (`vemit`), `rows` cross_entropy_grad; neither backend gets here.
        Iota | CrossEntropyGrad => Err(c.bad("is not supported by the per-element emitter")),
        Return => Err(c.bad("has no result to compute")),
    }
}

/// Whether `op` may write its result over operand memory it also reads:
/// true when every result element `i` reads only element `i` of each operand
/// that it aliases (elementwise ops and reshape).
pub use index::{row_op, rows};

pub fn inplace_safe(op: &Op) -> bool {
    op.kind.is_elementwise() || op.kind == OpKind::Reshape
}

/// A one-line comment naming the op, for the emitted MLIR.
pub fn describe(f: &Func, op: &Op) -> String {
    let mut s = String::new();
    let _ = write!(s, "{}", op.kind.full_name());
    if let Some(r) = op.result {
        let _ = write!(s, " %{} : {}", f.name_of(r), f.ty(r));
    }
    if op.loc.is_known() {
        let _ = write!(s, " at {}", op.loc);
    }
    s
}

/// Emits `scf.for` over `[lo, hi)` with step `step` in type `ity` (`index`,
/// or an integer type on cuda), carrying values `inits` (value, type);
/// `body` gets the induction variable and the carried values and returns
/// the next ones. The loops of both backends' kernels.
#[allow(clippy::type_complexity)]
pub(crate) fn for_loop(
    em: &mut Em,
    lo: &str,
    hi: &str,
    step: &str,
    ity: &str,
    inits: &[(String, &str)],
    body: &mut dyn FnMut(&mut Em, &str, &[String]) -> Result<Vec<String>, Diag>,
) -> Result<Vec<String>, Diag> {
    let iv = em.fresh();
    let args: Vec<String> = inits.iter().map(|_| em.fresh()).collect();
    let res = em.fresh();
    let tys: Vec<&str> = inits.iter().map(|(_, t)| *t).collect();
    let names: Vec<String> = match inits.len() {
        0 => Vec::new(),
        1 => vec![res.clone()],
        n => (0..n).map(|i| format!("{res}#{i}")).collect(),
    };
    let lhs = match inits.len() {
        0 => String::new(),
        1 => format!("{res} = "),
        n => format!("{res}:{n} = "),
    };
    let iter = if inits.is_empty() {
        String::new()
    } else {
        let pairs: Vec<String> = args.iter().zip(inits).map(|(a, (i, _))| format!("{a} = {i}")).collect();
        format!(" iter_args({}) -> ({})", pairs.join(", "), tys.join(", "))
    };
    let ty = if ity == "index" { String::new() } else { format!(" : {ity}") };
    em.line(&format!("{lhs}scf.for {iv} = {lo} to {hi} step {step}{iter}{ty} {{"));
    em.indent += 1;
    let next = body(em, &iv, &args)?;
    if !inits.is_empty() {
        em.line(&format!("scf.yield {} : {}", next.join(", "), tys.join(", ")));
    }
    em.indent -= 1;
    em.line("}");
    Ok(names)
}
