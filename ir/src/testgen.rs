//! THE random well-typed graph generator shared by every crate's tests
//! (feature `testgen`; use as a dev-dependency:
//! `ckopt-ir = { workspace = true, features = ["testgen"] }`).
//!
//! `arb_module(&GenConfig)` is a proptest `Strategy` producing a `Module`
//! with one function `@f`: 1..=`max_args` arguments (the first a plain
//! input, the others `{ck.param}` with probability 1/2, at least one marked
//! when there are two or more), then `min_ops..=max_ops` "steps", each
//! adding one random op drawn from the whole op table (plus the small
//! adapter ops it needs: broadcast/reshape/reduce/fill to make shapes fit,
//! tanh/exp/sigmoid to keep operands in range), and finally
//! `ck.return(loss, extras...)` where `loss` (a rank-0 tensor, always first)
//! is the sum of `reduce_sum` over every op result that nothing else uses,
//! so every op contributes to the loss.
//!
//! Invariants of every generated module:
//! - it verifies (`verify_module`), built only through `Func::push`, which
//!   infers types with the op table's rules;
//! - on inputs in [-1, 1] (what `ckopt_interp::random_inputs` gives) every
//!   value is finite: the generator tracks a sound interval for each value
//!   and squashes an operand with `tanh` when its magnitude could exceed
//!   `OPERAND_LIMIT`; `log`/`sqrt`/`rsqrt` and divisors only see values
//!   built to lie in [0.006, 150] (`exp` or `sigmoid` of something bounded);
//!   `exp` only sees operands <= 5;
//! - dims are in 1..=`max_dim` (reshape may merge them into larger ones).
//!
//! Presets: `GenConfig::default()` (everything), `.annotated()` (about 1/4
//! of the steps' ops marked ck.mirror or ck.checkpoint), `.smooth()` (no
//! ops with kinks, for finite-difference checks); `exclude` drops more.
//!
//! Shrinking: each step draws its choices from its own u64 seed, so
//! proptest shrinks a failing module by dropping steps and simplifying
//! seeds. `build_module` is the deterministic core (usable from fuzz
//! targets); `gen_module(cfg, seed)` is a one-seed convenience.
//!
//! Complexity: O(steps * pool size) to build.

use crate::attr::{Attr, Attrs};
use crate::diag::Loc;
use crate::func::{Func, Module, ValueId, attrs};
use crate::ops::{ATTR_CHECKPOINT, ATTR_MIRROR, OpKind};
use crate::types::{DType, TensorType};
use proptest::prelude::*;
use std::sync::Arc;

/// Magnitude above which an operand is first passed through `tanh`.
pub const OPERAND_LIMIT: f64 = 100.0;

/// What the generator produces.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Fewest random steps (each adds one op of the table, plus adapters). At least 1.
    pub min_ops: usize,
    /// Most random steps.
    pub max_ops: usize,
    /// Most function arguments (at least 1).
    pub max_args: usize,
    /// Largest dimension of generated shapes (at least 1).
    pub max_dim: u64,
    /// Mark about 1/8 of the ops `ck.mirror` and 1/8 `ck.checkpoint`.
    pub annotate: bool,
    /// Most extra results returned after the loss.
    pub max_extra_results: usize,
    /// Ops never generated (adapters are still used: broadcast, reshape,
    /// reduce_sum, fill, tanh, exp, sigmoid, add). For backends or passes
    /// that do not support some ops yet.
    pub exclude: Vec<OpKind>,
    /// Also draw the integer/bool/indexing ops (`int_ops`: gather,
    /// take_along and their gradients, comparisons, logic, select, cast,
    /// iota, cross_entropy and its gradient). Their integer and bool values
    /// stay internal to a step (they feed a float op of the same step), so
    /// the pool other steps read holds f32 values only. Off by default:
    /// turning it on changes the random stream of every seed.
    pub int_ops: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            min_ops: 1,
            max_ops: 40,
            max_args: 4,
            max_dim: 5,
            annotate: false,
            max_extra_results: 2,
            exclude: Vec::new(),
            int_ops: false,
        }
    }
}

impl GenConfig {
    /// Same configuration with ck.mirror/ck.checkpoint annotations on.
    pub fn annotated(mut self) -> Self {
        self.annotate = true;
        self
    }
    /// Same configuration with the integer/bool/indexing ops on (`int_ops`).
    pub fn with_int_ops(mut self) -> Self {
        self.int_ops = true;
        self
    }
    /// Same configuration without the ops that have kinks (relu, max,
    /// reduce_max, max_pool2d and their gradients), for finite-difference
    /// gradient checks. (The adapters never use them.)
    pub fn smooth(mut self) -> Self {
        for k in [
            OpKind::Relu,
            OpKind::ReluGrad,
            OpKind::Max,
            OpKind::ReduceMax,
            OpKind::MaxPool2d,
            OpKind::MaxPool2dGrad,
        ] {
            if !self.exclude.contains(&k) {
                self.exclude.push(k);
            }
        }
        self
    }
}

/// Proptest strategy: random well-typed modules per `cfg` (see the module doc).
pub fn arb_module(cfg: &GenConfig) -> impl Strategy<Value = Module> + use<> {
    let cfg = cfg.clone();
    let lo = cfg.min_ops.max(1);
    let hi = cfg.max_ops.max(lo);
    (any::<u64>(), proptest::collection::vec(any::<u64>(), lo..=hi))
        .prop_map(move |(arg_seed, steps)| build_module(&cfg, arg_seed, &steps))
}

/// A module from one seed (`min_ops..=max_ops` steps chosen from it).
pub fn gen_module(cfg: &GenConfig, seed: u64) -> Module {
    let mut r = Rng(seed);
    let lo = cfg.min_ops.max(1);
    let hi = cfg.max_ops.max(lo);
    let n = lo + r.below((hi - lo + 1) as u64) as usize;
    let steps: Vec<u64> = (0..n).map(|_| r.next()).collect();
    build_module(cfg, r.next(), &steps)
}

/// The deterministic core: arguments from `arg_seed`, one step per entry of `steps`.
pub fn build_module(cfg: &GenConfig, arg_seed: u64, steps: &[u64]) -> Module {
    let mut g = Gen::new(cfg, arg_seed);
    for (i, &s) in steps.iter().enumerate() {
        g.rng = Rng(s);
        g.line = i as u32 + 2;
        g.step();
    }
    g.rng = Rng(arg_seed ^ 0x5EED);
    g.line = steps.len() as u32 + 2;
    g.finish();
    Module { funcs: vec![g.f] }
}

/// A SplitMix64 stream (`crate::random`).
#[derive(Clone, Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(crate::random::GOLDEN);
        crate::random::mix64(self.0)
    }
    /// Uniform in 0..n (n > 0).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    /// Uniform in lo..=hi.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }
    /// True with probability 1/n.
    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// A sound bound on the values an element can take.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Iv {
    lo: f64,
    hi: f64,
}

impl Iv {
    fn new(lo: f64, hi: f64) -> Iv {
        Iv { lo: lo.min(hi), hi: hi.max(lo) }
    }
    fn mag(self) -> f64 {
        self.lo.abs().max(self.hi.abs())
    }
    fn with_zero(self) -> Iv {
        Iv::new(self.lo.min(0.0), self.hi.max(0.0))
    }
    fn times(self, k: f64) -> Iv {
        Iv::new(self.lo * k, self.hi * k)
    }
    fn mul(self, o: Iv) -> Iv {
        let c = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi];
        Iv::new(c.iter().copied().fold(f64::INFINITY, f64::min), c.iter().copied().fold(f64::NEG_INFINITY, f64::max))
    }
    fn map_monotone(self, f: impl Fn(f64) -> f64) -> Iv {
        Iv::new(f(self.lo), f(self.hi))
    }
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The ops a step may draw (everything but return).
const STEP_OPS: &[OpKind] = &[
    OpKind::Neg,
    OpKind::Exp,
    OpKind::Log,
    OpKind::Tanh,
    OpKind::Sigmoid,
    OpKind::Relu,
    OpKind::Sqrt,
    OpKind::Rsqrt,
    OpKind::Add,
    OpKind::Sub,
    OpKind::Mul,
    OpKind::Div,
    OpKind::Max,
    OpKind::Scale,
    OpKind::Fill,
    OpKind::ReluGrad,
    OpKind::Broadcast,
    OpKind::ReduceSum,
    OpKind::ReduceMax,
    OpKind::Transpose,
    OpKind::Reshape,
    OpKind::Slice,
    OpKind::Concat,
    OpKind::Matmul,
    OpKind::Conv2d,
    OpKind::Conv2dGradInput,
    OpKind::Conv2dGradFilter,
    OpKind::MaxPool2d,
    OpKind::AvgPool2d,
    OpKind::MaxPool2dGrad,
    OpKind::AvgPool2dGrad,
    OpKind::Dropout,
    OpKind::Erf,
    OpKind::Constant,
];

/// The ops drawn in addition when `GenConfig::int_ops` is on: the mixed
/// element-type class (`ElemClass::Mixed`), in table order.
fn int_ops() -> Vec<OpKind> {
    OpKind::ALL.iter().copied().filter(|k| k.elem_class() == crate::ops::ElemClass::Mixed).collect()
}

fn ints(v: &[u64]) -> Attr {
    Attr::IntArray(v.iter().map(|&x| x as i64).collect())
}

struct Gen<'c> {
    cfg: &'c GenConfig,
    f: Func,
    /// Values ops may read (arguments and op results), in creation order.
    pool: Vec<ValueId>,
    /// Interval of each value, indexed by `ValueId`.
    iv: Vec<Iv>,
    rng: Rng,
    line: u32,
    file: Arc<str>,
}

impl<'c> Gen<'c> {
    fn new(cfg: &'c GenConfig, arg_seed: u64) -> Self {
        let file: Arc<str> = Arc::from("<testgen>");
        let mut g = Gen {
            cfg,
            f: Func::new("f", Loc::new(file.clone(), 1, 1)),
            pool: Vec::new(),
            iv: Vec::new(),
            rng: Rng(arg_seed),
            line: 1,
            file,
        };
        let n = g.rng.range(1, cfg.max_args.max(1) as u64) as usize;
        let mut any_param = false;
        for i in 0..n {
            let shape = g.random_shape();
            let is_param = i > 0 && (g.rng.one_in(2) || (i == n - 1 && !any_param));
            any_param |= is_param;
            let name = if i == 0 { "x".to_string() } else if is_param { format!("w{i}") } else { format!("x{i}") };
            let v = g.f.add_param(name, TensorType::f32(shape), is_param);
            g.record(v, Iv::new(-1.0, 1.0));
        }
        g
    }

    fn record(&mut self, v: ValueId, iv: Iv) {
        if self.iv.len() <= v.index() {
            self.iv.resize(v.index() + 1, Iv::new(0.0, 0.0));
        }
        self.iv[v.index()] = iv;
        self.pool.push(v);
    }

    fn shape(&self, v: ValueId) -> Vec<u64> {
        self.f.ty(v).shape.clone()
    }

    fn dim(&mut self) -> u64 {
        self.rng.range(1, self.cfg.max_dim.max(1))
    }

    fn random_shape(&mut self) -> Vec<u64> {
        let rank = self.rng.pick(&[0u64, 1, 2, 2, 3, 4, 4]);
        (0..rank).map(|_| self.dim()).collect()
    }

    /// Appends an op through `Func::push` (types inferred) and records its interval.
    fn push(&mut self, kind: OpKind, operands: &[ValueId], a: Attrs, declared: Option<Vec<u64>>, iv: Iv) -> ValueId {
        let loc = Loc::new(self.file.clone(), self.line, 5);
        let v = self
            .f
            .push(kind, operands, a, declared.map(TensorType::f32), kind.name(), loc)
            .unwrap_or_else(|d| panic!("testgen built an ill-typed op (generator bug): {d}"));
        self.record(v, iv);
        v
    }

    fn unary(&mut self, kind: OpKind, x: ValueId, iv: Iv) -> ValueId {
        self.push(kind, &[x], Attrs::new(), None, iv)
    }

    fn pick_value(&mut self) -> ValueId {
        let i = self.rng.below(self.pool.len() as u64) as usize;
        self.pool[i]
    }

    /// `x` itself when its magnitude is at most `limit`, else `tanh(x)`.
    fn bounded(&mut self, x: ValueId, limit: f64) -> ValueId {
        let iv = self.iv[x.index()];
        if iv.mag() <= limit {
            return x;
        }
        self.unary(OpKind::Tanh, x, iv.map_monotone(f64::tanh))
    }

    /// A value in about [0.006, 150] derived from `x` (x itself if already so).
    fn positive(&mut self, x: ValueId) -> ValueId {
        let iv = self.iv[x.index()];
        if iv.lo >= 0.1 && iv.hi <= OPERAND_LIMIT {
            return x;
        }
        let b = self.bounded(x, 5.0);
        let ib = self.iv[b.index()];
        if self.rng.one_in(2) {
            self.unary(OpKind::Exp, b, ib.map_monotone(f64::exp))
        } else {
            self.unary(OpKind::Sigmoid, b, ib.map_monotone(sigmoid))
        }
    }

    /// A value of rank 0: `reduce_sum` of a random value over all its dims.
    fn scalar_from_pool(&mut self) -> ValueId {
        let v = self.pick_value();
        let v = self.bounded(v, OPERAND_LIMIT);
        let shape = self.shape(v);
        if shape.is_empty() {
            return v;
        }
        let n: u64 = shape.iter().product();
        let iv = self.iv[v.index()].times(n as f64);
        let dims: Vec<u64> = (0..shape.len() as u64).collect();
        self.push(OpKind::ReduceSum, &[v], attrs([("dims", ints(&dims))]), None, iv)
    }

    /// `broadcast` of `x` into `shape` given an increasing embedding of x's dims.
    fn broadcast_into(&mut self, x: ValueId, dims: &[u64], shape: Vec<u64>) -> ValueId {
        let iv = self.iv[x.index()];
        self.push(OpKind::Broadcast, &[x], attrs([("dims", ints(dims))]), Some(shape), iv)
    }

    /// Positions of `small`'s dims in `big` (leftmost greedy match), if `small` is a subsequence of `big`.
    fn embedding(small: &[u64], big: &[u64]) -> Option<Vec<u64>> {
        let mut out = Vec::with_capacity(small.len());
        let mut j = 0;
        for &d in small {
            while j < big.len() && big[j] != d {
                j += 1;
            }
            if j == big.len() {
                return None;
            }
            out.push(j as u64);
            j += 1;
        }
        Some(out)
    }

    /// Some value of exactly `shape`: a pool value of that shape, a reshape
    /// of one with as many elements, a broadcast of one that embeds, a
    /// broadcast scalar, or a fill.
    fn obtain(&mut self, shape: &[u64]) -> ValueId {
        let exact: Vec<ValueId> = self.pool.iter().copied().filter(|&v| self.f.ty(v).shape == shape).collect();
        if !exact.is_empty() && !self.rng.one_in(4) {
            return self.rng.pick(&exact);
        }
        let count: u64 = shape.iter().product();
        let same_count: Vec<ValueId> = self
            .pool
            .iter()
            .copied()
            .filter(|&v| self.f.ty(v).elems() == count && self.f.ty(v).shape != shape)
            .collect();
        if !same_count.is_empty() && self.rng.one_in(2) {
            let v = self.rng.pick(&same_count);
            let iv = self.iv[v.index()];
            return self.push(OpKind::Reshape, &[v], Attrs::new(), Some(shape.to_vec()), iv);
        }
        let embeddable: Vec<(ValueId, Vec<u64>)> = self
            .pool
            .iter()
            .filter_map(|&v| {
                let s = &self.f.ty(v).shape;
                if s.len() < shape.len() { Self::embedding(s, shape).map(|e| (v, e)) } else { None }
            })
            .collect();
        if !embeddable.is_empty() && !self.rng.one_in(4) {
            let i = self.rng.below(embeddable.len() as u64) as usize;
            let (v, e) = embeddable[i].clone();
            return self.broadcast_into(v, &e, shape.to_vec());
        }
        if !exact.is_empty() {
            return self.rng.pick(&exact);
        }
        if self.rng.one_in(2) {
            let s = self.scalar_from_pool();
            if shape.is_empty() {
                return s;
            }
            return self.broadcast_into(s, &[], shape.to_vec());
        }
        let value = self.rng.pick(&[-1.0f32, -0.5, 0.25, 0.5, 1.0, 2.0]);
        self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(value))]), Some(shape.to_vec()), Iv::new(value as f64, value as f64))
    }

    /// Some value of rank `r`: from the pool, or lifted (broadcast) from a
    /// lower rank, or reduced from a higher one.
    fn of_rank(&mut self, r: usize) -> ValueId {
        let same: Vec<ValueId> = self.pool.iter().copied().filter(|&v| self.f.ty(v).rank() == r).collect();
        if !same.is_empty() && !self.rng.one_in(5) {
            return self.rng.pick(&same);
        }
        let v = self.pick_value();
        let s = self.shape(v);
        if s.len() == r {
            return v;
        }
        if s.len() < r {
            // Choose increasing positions for v's dims among r slots.
            let mut slots: Vec<u64> = (0..r as u64).collect();
            while slots.len() > s.len() {
                let i = self.rng.below(slots.len() as u64) as usize;
                slots.remove(i);
            }
            let mut shape: Vec<u64> = (0..r).map(|_| self.dim()).collect();
            for (k, &p) in slots.iter().enumerate() {
                shape[p as usize] = s[k];
            }
            self.broadcast_into(v, &slots, shape)
        } else {
            let v = self.bounded(v, OPERAND_LIMIT);
            let mut dims: Vec<u64> = (0..s.len() as u64).collect();
            while dims.len() > s.len() - r {
                let i = self.rng.below(dims.len() as u64) as usize;
                dims.remove(i);
            }
            let n: u64 = dims.iter().map(|&d| s[d as usize]).product();
            let iv = self.iv[v.index()].times(n as f64);
            self.push(OpKind::ReduceSum, &[v], attrs([("dims", ints(&dims))]), None, iv)
        }
    }

    /// One random step: one op of the table (not excluded), with its adapters.
    fn step(&mut self) {
        let extra = if self.cfg.int_ops { int_ops() } else { Vec::new() };
        let allowed: Vec<OpKind> =
            STEP_OPS.iter().chain(&extra).copied().filter(|k| !self.cfg.exclude.contains(k)).collect();
        if allowed.is_empty() {
            return;
        }
        let kind = self.rng.pick(&allowed);
        let before = self.f.body.len();
        self.emit(kind);
        if self.cfg.annotate && self.f.body.len() > before {
            // Annotate the step's main op (the last one pushed).
            let choice = self.rng.below(8);
            if let Some(op) = self.f.body.last_mut() {
                match choice {
                    0 => {
                        op.attrs.insert(ATTR_MIRROR.into(), Attr::Unit);
                    }
                    1 => {
                        op.attrs.insert(ATTR_CHECKPOINT.into(), Attr::Unit);
                    }
                    _ => {}
                }
            }
        }
    }

    /// Emits one op of `kind` (with its adapters): dispatches to the op's
    /// generator. Each generator draws from the rng in a fixed order.
    fn emit(&mut self, kind: OpKind) {
        use OpKind::*;
        match kind {
            Neg | Tanh | Sigmoid | Relu => self.emit_bounded_unary(kind),
            Exp => self.emit_exp(),
            Log | Sqrt | Rsqrt => self.emit_positive_unary(kind),
            Add | Sub | Mul | Max | ReluGrad | Div => self.emit_binary(kind),
            Scale => self.emit_scale(),
            Erf => self.emit_erf(),
            Constant => self.emit_constant(),
            Fill => self.emit_fill(),
            Dropout => self.emit_dropout(),
            Broadcast => self.emit_broadcast(),
            ReduceSum | ReduceMax => self.emit_reduce(kind),
            Transpose => self.emit_transpose(),
            Reshape => self.emit_reshape(),
            Slice => self.emit_slice(),
            Concat => self.emit_concat(),
            Matmul => self.emit_matmul(),
            Conv2d | Conv2dGradInput | Conv2dGradFilter => self.emit_conv(kind),
            MaxPool2d | AvgPool2d | MaxPool2dGrad | AvgPool2dGrad => self.emit_pool(kind),
            Gather | GatherGrad => self.emit_gather(kind),
            TakeAlong | TakeAlongGrad => self.emit_take_along(kind),
            Eq | Ne | Lt | Le | Gt | Ge | Select => self.emit_compare_select(kind),
            And | Or | Not => self.emit_logic(kind),
            Cast => self.emit_cast(),
            Iota => self.emit_iota(),
            CrossEntropy | CrossEntropyGrad => self.emit_cross_entropy(kind),
            Return => {}
        }
    }

    /// Neg, tanh, sigmoid or relu of a bounded operand.
    fn emit_bounded_unary(&mut self, kind: OpKind) {
        use OpKind::*;
        let x = self.pick_value();
        let x = self.bounded(x, OPERAND_LIMIT);
        let iv = self.iv[x.index()];
        let out = match kind {
            Neg => Iv::new(-iv.hi, -iv.lo),
            Tanh => iv.map_monotone(f64::tanh),
            Sigmoid => iv.map_monotone(sigmoid),
            _ => iv.map_monotone(|v| v.max(0.0)),
        };
        self.unary(kind, x, out);
    }

    /// Exp of an operand at most 5 (else bounded to 1 first).
    fn emit_exp(&mut self) {
        let x = self.pick_value();
        let x = if self.iv[x.index()].hi > 5.0 { self.bounded(x, 1.0) } else { x };
        let iv = self.iv[x.index()].map_monotone(f64::exp);
        self.unary(OpKind::Exp, x, iv);
    }

    /// Log, sqrt or rsqrt of a positive operand.
    fn emit_positive_unary(&mut self, kind: OpKind) {
        use OpKind::*;
        let x = self.pick_value();
        let p = self.positive(x);
        let iv = self.iv[p.index()];
        let out = match kind {
            Log => iv.map_monotone(f64::ln),
            Sqrt => iv.map_monotone(f64::sqrt),
            _ => iv.map_monotone(|v| 1.0 / v.sqrt()),
        };
        self.unary(kind, p, out);
    }

    /// A binary elementwise op on two bounded operands of one shape (div: a positive divisor).
    fn emit_binary(&mut self, kind: OpKind) {
        use OpKind::*;
        let a = self.pick_value();
        let a = self.bounded(a, OPERAND_LIMIT);
        let shape = self.shape(a);
        let b = self.obtain(&shape);
        let b = if kind == Div { self.positive(b) } else { self.bounded(b, OPERAND_LIMIT) };
        let (ia, ib) = (self.iv[a.index()], self.iv[b.index()]);
        let out = match kind {
            Add => Iv::new(ia.lo + ib.lo, ia.hi + ib.hi),
            Sub => Iv::new(ia.lo - ib.hi, ia.hi - ib.lo),
            Mul => ia.mul(ib),
            Max => Iv::new(ia.lo.max(ib.lo), ia.hi.max(ib.hi)),
            ReluGrad => ib.with_zero(),
            _ => ia.mul(Iv::new(1.0 / ib.hi, 1.0 / ib.lo)),
        };
        self.push(kind, &[a, b], Attrs::new(), None, out);
    }

    /// Scale of a bounded operand by a random factor.
    fn emit_scale(&mut self) {
        let x = self.pick_value();
        let x = self.bounded(x, OPERAND_LIMIT);
        let value = self.rng.pick(&[-2.0f32, -0.5, 0.5, 1.5, 2.0]);
        let iv = self.iv[x.index()].times(value as f64);
        self.push(OpKind::Scale, &[x], attrs([("value", Attr::F32(value))]), None, iv);
    }

    /// Erf of any operand.
    fn emit_erf(&mut self) {
        // |erf x| <= min(1, (2/sqrt pi)|x|) and erf is monotone: a sound interval.
        let x = self.pick_value();
        let iv = self.iv[x.index()];
        let k = std::f64::consts::FRAC_2_SQRT_PI;
        let lo = if iv.lo >= 0.0 { 0.0 } else { (k * iv.lo).max(-1.0) };
        let hi = if iv.hi <= 0.0 { 0.0 } else { (k * iv.hi).min(1.0) };
        self.unary(OpKind::Erf, x, Iv::new(lo, hi));
    }

    /// A constant of a random shape with small dyadic elements.
    fn emit_constant(&mut self) {
        let shape = self.random_shape();
        let n: u64 = shape.iter().product();
        let data: Vec<f32> = (0..n).map(|_| self.rng.range(0, 8) as f32 * 0.25 - 1.0).collect();
        let value = Attr::Dense { shape, data };
        self.push(OpKind::Constant, &[], attrs([("value", value)]), None, Iv::new(-1.0, 1.0));
    }

    /// A fill of a random shape.
    fn emit_fill(&mut self) {
        let shape = self.random_shape();
        let value = self.rng.pick(&[-1.0f32, 0.0, 0.5, 3.0]);
        self.push(OpKind::Fill, &[], attrs([("value", Attr::F32(value))]), Some(shape), Iv::new(value as f64, value as f64));
    }

    /// Dropout of a bounded operand with a random rate and seed.
    fn emit_dropout(&mut self) {
        let x = self.pick_value();
        let x = self.bounded(x, OPERAND_LIMIT);
        let rate = self.rng.pick(&[0.0f32, 0.1, 0.25, 0.5]);
        let seed = self.rng.below(1000) as i64;
        let iv = self.iv[x.index()].times(1.0 / (1.0 - rate as f64)).with_zero();
        self.push(OpKind::Dropout, &[x], attrs([("rate", Attr::F32(rate)), ("seed", Attr::Int(seed))]), None, iv);
    }

    /// A broadcast of a lower-rank value into random slots of a rank 1..3 shape.
    fn emit_broadcast(&mut self) {
        let r = self.rng.range(1, 4) as usize;
        let xr = self.rng.below(r as u64) as usize;
        let x = self.of_rank(xr);
        let s = self.shape(x);
        let mut slots: Vec<u64> = (0..r as u64).collect();
        while slots.len() > s.len() {
            let i = self.rng.below(slots.len() as u64) as usize;
            slots.remove(i);
        }
        let mut shape: Vec<u64> = (0..r).map(|_| self.dim()).collect();
        for (k, &p) in slots.iter().enumerate() {
            shape[p as usize] = s[k];
        }
        self.broadcast_into(x, &slots, shape);
    }

    /// A reduction of a bounded operand over a random non-empty set of dims.
    fn emit_reduce(&mut self, kind: OpKind) {
        use OpKind::*;
        let x = self.pick_value();
        let x = self.bounded(x, OPERAND_LIMIT);
        let s = self.shape(x);
        let dims: Vec<u64> = (0..s.len() as u64).filter(|_| self.rng.one_in(2)).collect();
        let dims = if dims.is_empty() && !s.is_empty() { vec![self.rng.below(s.len() as u64)] } else { dims };
        let n: u64 = dims.iter().map(|&d| s[d as usize]).product();
        let iv = self.iv[x.index()];
        let iv = if kind == ReduceSum { iv.times(n as f64) } else { iv };
        self.push(kind, &[x], attrs([("dims", ints(&dims))]), None, iv);
    }

    /// A transpose by a random permutation (Fisher-Yates).
    fn emit_transpose(&mut self) {
        let r = self.rng.range(1, 4) as usize;
        let x = self.of_rank(r);
        let mut perm: Vec<u64> = (0..r as u64).collect();
        for i in (1..r).rev() {
            let j = self.rng.below(i as u64 + 1) as usize;
            perm.swap(i, j);
        }
        let iv = self.iv[x.index()];
        self.push(OpKind::Transpose, &[x], attrs([("perm", ints(&perm))]), None, iv);
    }

    /// A reshape spreading the prime factors of the element count over a random rank.
    fn emit_reshape(&mut self) {
        let x = self.pick_value();
        let n = self.f.ty(x).elems();
        // Distribute the prime factors of n over a random rank.
        let mut factors = Vec::new();
        let mut m = n;
        let mut p = 2;
        while m > 1 && p * p <= m {
            while m.is_multiple_of(p) {
                factors.push(p);
                m /= p;
            }
            p += 1;
        }
        if m > 1 {
            factors.push(m);
        }
        let rank = self.rng.range(if n == 1 { 0 } else { 1 }, 4) as usize;
        let mut shape = vec![1u64; rank];
        for fct in factors {
            let i = self.rng.below(rank.max(1) as u64) as usize;
            if let Some(d) = shape.get_mut(i) {
                *d *= fct;
            }
        }
        let iv = self.iv[x.index()];
        self.push(OpKind::Reshape, &[x], Attrs::new(), Some(shape), iv);
    }

    /// A slice: a random window in every dim.
    fn emit_slice(&mut self) {
        let r = self.rng.range(1, 4) as usize;
        let x = self.of_rank(r);
        let s = self.shape(x);
        let mut offs = Vec::with_capacity(r);
        let mut sizes = Vec::with_capacity(r);
        for &d in &s {
            let size = self.rng.range(1, d);
            offs.push(self.rng.range(0, d - size));
            sizes.push(size);
        }
        let iv = self.iv[x.index()];
        self.push(OpKind::Slice, &[x], attrs([("offsets", ints(&offs))]), Some(sizes), iv);
    }

    /// A concat of two values along a random dim.
    fn emit_concat(&mut self) {
        let r = self.rng.range(1, 4) as usize;
        let a = self.of_rank(r);
        let s = self.shape(a);
        let dim = self.rng.below(r as u64) as usize;
        let mut ops = vec![a];
        for _ in 0..self.rng.range(1, 2) {
            let mut t = s.clone();
            t[dim] = self.dim();
            let b = self.obtain(&t);
            ops.push(b);
        }
        let iv = ops.iter().fold(self.iv[a.index()], |acc, v| {
            let o = self.iv[v.index()];
            Iv::new(acc.lo.min(o.lo), acc.hi.max(o.hi))
        });
        self.push(OpKind::Concat, &ops, attrs([("dim", Attr::Int(dim as i64))]), None, iv);
    }

    /// A matmul of two bounded operands, with random transposes.
    fn emit_matmul(&mut self) {
        let r = self.rng.pick(&[2usize, 2, 3]);
        let a = self.of_rank(r);
        let a = self.bounded(a, OPERAND_LIMIT);
        let s = self.shape(a);
        let (ta, tb) = (self.rng.one_in(3), self.rng.one_in(3));
        let k = if ta { s[r - 2] } else { s[r - 1] };
        let n = self.dim();
        let mut bs = s[..r - 2].to_vec();
        bs.extend(if tb { [n, k] } else { [k, n] });
        let b = self.obtain(&bs);
        let b = self.bounded(b, OPERAND_LIMIT);
        let iv = self.iv[a.index()].mul(self.iv[b.index()]).times(k as f64);
        let mut at = Attrs::new();
        if ta {
            at.insert("transpose_a".into(), Attr::Bool(true));
        }
        if tb {
            at.insert("transpose_b".into(), Attr::Bool(true));
        }
        self.push(OpKind::Matmul, &[a, b], at, None, iv);
    }

    /// Stride/padding and a filter extent that fits `h`/`w`.
    fn conv_geometry(&mut self, h: u64, w: u64) -> ([u64; 2], [u64; 2], [u64; 2]) {
        let p = [self.rng.range(0, 1), self.rng.range(0, 1)];
        let s = [self.rng.range(1, 2), self.rng.range(1, 2)];
        let k = [self.rng.range(1, (h + 2 * p[0]).min(3)), self.rng.range(1, (w + 2 * p[1]).min(3))];
        (s, p, k)
    }

    fn emit_conv(&mut self, kind: OpKind) {
        let x = self.of_rank(4);
        let x = self.bounded(x, OPERAND_LIMIT);
        let xs = self.shape(x);
        let (s, p, k) = self.conv_geometry(xs[2], xs[3]);
        // Groups: usually (2 in 3) a divisor > 1 of the channels when there
        // is one, depthwise (groups = C) among them; then F is 1 or 2 filters per group.
        let c = xs[1];
        let divisors: Vec<u64> = (2..=c).filter(|d| c % d == 0).collect();
        let g = if !divisors.is_empty() && !self.rng.one_in(3) { self.rng.pick(&divisors) } else { 1 };
        let f = if g > 1 { g * self.rng.range(1, 2) } else { self.dim() };
        let ws = vec![f, c / g, k[0], k[1]];
        let out = |i: u64, k: u64, s: u64, p: u64| (i + 2 * p - k) / s + 1;
        let ys = vec![xs[0], f, out(xs[2], k[0], s[0], p[0]), out(xs[3], k[1], s[1], p[1])];
        let mut a = attrs([("stride", ints(&s)), ("padding", ints(&p))]);
        if g > 1 {
            a.insert("groups".into(), Attr::Int(g as i64));
        }
        match kind {
            OpKind::Conv2d => {
                let w = self.obtain(&ws);
                let w = self.bounded(w, OPERAND_LIMIT);
                let terms = (c / g * k[0] * k[1]) as f64;
                let iv = self.iv[x.index()].mul(self.iv[w.index()]).with_zero().times(terms);
                self.push(OpKind::Conv2d, &[x, w], a, None, iv);
            }
            OpKind::Conv2dGradInput => {
                // x only fixes the shape of dx here.
                let w = self.obtain(&ws);
                let w = self.bounded(w, OPERAND_LIMIT);
                let dy = self.obtain(&ys);
                let dy = self.bounded(dy, OPERAND_LIMIT);
                let terms = (f / g * k[0] * k[1]) as f64;
                let iv = self.iv[dy.index()].mul(self.iv[w.index()]).with_zero().times(terms);
                self.push(OpKind::Conv2dGradInput, &[dy, w], a, Some(xs), iv);
            }
            _ => {
                let dy = self.obtain(&ys);
                let dy = self.bounded(dy, OPERAND_LIMIT);
                let terms = (ys[0] * ys[2] * ys[3]) as f64;
                let iv = self.iv[x.index()].mul(self.iv[dy.index()]).with_zero().times(terms);
                self.push(OpKind::Conv2dGradFilter, &[x, dy], a, Some(ws), iv);
            }
        }
    }

    fn emit_pool(&mut self, kind: OpKind) {
        let x = self.of_rank(4);
        let x = self.bounded(x, OPERAND_LIMIT);
        let xs = self.shape(x);
        let win = [self.rng.range(1, xs[2].min(3)), self.rng.range(1, xs[3].min(3))];
        let mut a = attrs([("window", ints(&win))]);
        let st = if self.rng.one_in(2) {
            win
        } else {
            let s = [self.rng.range(1, win[0]), self.rng.range(1, win[1])];
            a.insert("stride".into(), ints(&s));
            s
        };
        let ys = vec![xs[0], xs[1], (xs[2] - win[0]) / st[0] + 1, (xs[3] - win[1]) / st[1] + 1];
        // How many windows can cover one input element.
        let overlap = (win[0].div_ceil(st[0]) * win[1].div_ceil(st[1])) as f64;
        let ix = self.iv[x.index()];
        match kind {
            OpKind::MaxPool2d | OpKind::AvgPool2d => {
                self.push(kind, &[x], a, None, ix);
            }
            OpKind::MaxPool2dGrad => {
                let dy = self.obtain(&ys);
                let dy = self.bounded(dy, OPERAND_LIMIT);
                let iv = self.iv[dy.index()].times(overlap).with_zero();
                self.push(kind, &[x, dy], a, None, iv);
            }
            _ => {
                let dy = self.obtain(&ys);
                let dy = self.bounded(dy, OPERAND_LIMIT);
                let iv = self.iv[dy.index()].times(overlap / (win[0] * win[1]) as f64).with_zero();
                self.push(kind, &[dy], a, Some(xs), iv);
            }
        }
    }

    /// Appends an op that stays out of the pool (an integer or bool value
    /// internal to a step); `declared` is its full type when needed.
    fn push_aux(&mut self, kind: OpKind, operands: &[ValueId], a: Attrs, declared: Option<TensorType>) -> ValueId {
        let loc = Loc::new(self.file.clone(), self.line, 5);
        self.f
            .push(kind, operands, a, declared, kind.name(), loc)
            .unwrap_or_else(|d| panic!("testgen built an ill-typed op (generator bug): {d}"))
    }

    /// An integer index tensor of `shape` with elements in `[0, n)` (some
    /// `ignore` instead when given): a constant of integral floats cast to i64 or i32.
    fn indices(&mut self, shape: &[u64], n: u64, ignore: Option<i64>) -> ValueId {
        let count: u64 = shape.iter().product();
        let data: Vec<f32> = (0..count)
            .map(|i| match ignore {
                // The first element is never ignored, so a loss has a label
                // (callers never pass an ignore value that is the only class).
                Some(v) if i > 0 && self.rng.one_in(4) => v as f32,
                Some(v) if i == 0 && (0..n as i64).contains(&v) => ((v as u64 + 1 + self.rng.below(n - 1)) % n) as f32,
                _ => self.rng.below(n) as f32,
            })
            .collect();
        let c = self.push_aux(OpKind::Constant, &[], attrs([("value", Attr::Dense { shape: shape.to_vec(), data })]), None);
        let dt = if self.rng.one_in(2) { DType::I64 } else { DType::I32 };
        self.push_aux(OpKind::Cast, &[c], Attrs::new(), Some(TensorType::new(shape.to_vec(), dt)))
    }

    /// Gather of a pool value at random indices, or gather_grad of a bounded dy.
    fn emit_gather(&mut self, kind: OpKind) {
        let r = self.rng.range(1, 3) as usize;
        let ir = self.rng.range(0, 2) as usize;
        let idx_shape: Vec<u64> = (0..ir).map(|_| self.dim()).collect();
        if kind == OpKind::Gather {
            let x = self.of_rank(r);
            let xs = self.shape(x);
            let axis = self.rng.below(r as u64) as usize;
            let idx = self.indices(&idx_shape, xs[axis], None);
            let iv = self.iv[x.index()];
            self.push(kind, &[x, idx], attrs([("axis", Attr::Int(axis as i64))]), None, iv);
        } else {
            let dx: Vec<u64> = (0..r).map(|_| self.dim()).collect();
            let axis = self.rng.below(r as u64) as usize;
            let idx = self.indices(&idx_shape, dx[axis], None);
            let dy_shape = crate::mixed::gather_shape(&dx, &idx_shape, axis);
            let dy = self.obtain(&dy_shape);
            let dy = self.bounded(dy, OPERAND_LIMIT);
            let n: u64 = idx_shape.iter().product();
            let iv = self.iv[dy.index()].times(n as f64).with_zero();
            self.push(kind, &[idx, dy], attrs([("axis", Attr::Int(axis as i64))]), Some(dx), iv);
        }
    }

    /// take_along of a pool value, or take_along_grad of a bounded dy.
    fn emit_take_along(&mut self, kind: OpKind) {
        let r = self.rng.range(1, 3) as usize;
        let axis = self.rng.below(r as u64) as usize;
        let k = self.dim();
        let a = attrs([("axis", Attr::Int(axis as i64))]);
        if kind == OpKind::TakeAlong {
            let x = self.of_rank(r);
            let xs = self.shape(x);
            let mut is = xs.clone();
            is[axis] = k;
            let idx = self.indices(&is, xs[axis], None);
            let iv = self.iv[x.index()];
            self.push(kind, &[x, idx], a, None, iv);
        } else {
            let dx: Vec<u64> = (0..r).map(|_| self.dim()).collect();
            let mut is = dx.clone();
            is[axis] = k;
            let idx = self.indices(&is, dx[axis], None);
            let dy = self.obtain(&is);
            let dy = self.bounded(dy, OPERAND_LIMIT);
            let iv = self.iv[dy.index()].times(k as f64).with_zero();
            self.push(kind, &[idx, dy], a, Some(dx), iv);
        }
    }

    /// A comparison of two bounded values of one shape, then a select between them.
    fn emit_compare_select(&mut self, kind: OpKind) {
        use OpKind::*;
        let cmp = if kind == Select { self.rng.pick(&[Eq, Ne, Lt, Le, Gt, Ge]) } else { kind };
        let (a, b) = self.pair();
        let c = self.push_aux(cmp, &[a, b], Attrs::new(), None);
        self.select_or_cast(c, a, b);
    }

    /// Two bounded pool values of one shape.
    fn pair(&mut self) -> (ValueId, ValueId) {
        let a = self.pick_value();
        let a = self.bounded(a, OPERAND_LIMIT);
        let shape = self.shape(a);
        let b = self.obtain(&shape);
        let b = self.bounded(b, OPERAND_LIMIT);
        (a, b)
    }

    /// `select(c, a, b)` or `cast(c)` to f32 (a float result for the pool).
    fn select_or_cast(&mut self, c: ValueId, a: ValueId, b: ValueId) {
        if self.rng.one_in(3) {
            let t = TensorType::f32(self.shape(c));
            let v = self.push_aux(OpKind::Cast, &[c], Attrs::new(), Some(t));
            self.record(v, Iv::new(0.0, 1.0));
        } else {
            let (ia, ib) = (self.iv[a.index()], self.iv[b.index()]);
            self.push(OpKind::Select, &[c, a, b], Attrs::new(), None, Iv::new(ia.lo.min(ib.lo), ia.hi.max(ib.hi)));
        }
    }

    /// and/or of two comparisons (not of one), then a select.
    fn emit_logic(&mut self, kind: OpKind) {
        use OpKind::*;
        let (a, b) = self.pair();
        let c1 = self.push_aux(Lt, &[a, b], Attrs::new(), None);
        let c = if kind == Not {
            self.push_aux(Not, &[c1], Attrs::new(), None)
        } else {
            let c2 = self.push_aux(Ne, &[a, b], Attrs::new(), None);
            self.push_aux(kind, &[c1, c2], Attrs::new(), None)
        };
        self.select_or_cast(c, a, b);
    }

    /// A round trip f32 -> T -> f32 through a random element type.
    fn emit_cast(&mut self) {
        let x = self.pick_value();
        let x = self.bounded(x, OPERAND_LIMIT);
        let dt = self.rng.pick(&[DType::I64, DType::I32, DType::I1, DType::BF16, DType::F16]);
        let shape = self.shape(x);
        let mid = self.push_aux(OpKind::Cast, &[x], Attrs::new(), Some(TensorType::new(shape.clone(), dt)));
        let iv = self.iv[x.index()];
        let out = match dt {
            DType::I1 => Iv::new(0.0, 1.0),
            DType::I64 | DType::I32 => iv.with_zero(),
            // Rounding to 8 (bf16) or 11 (f16) significant bits.
            _ => Iv::new(iv.lo - iv.mag() / 64.0, iv.hi + iv.mag() / 64.0),
        };
        self.push(OpKind::Cast, &[mid], Attrs::new(), Some(shape), out);
    }

    /// An f32 iota of a random shape along a random dim.
    fn emit_iota(&mut self) {
        let r = self.rng.range(1, 3) as usize;
        let shape: Vec<u64> = (0..r).map(|_| self.dim()).collect();
        let dim = self.rng.below(r as u64) as usize;
        let hi = (shape[dim] - 1) as f64;
        self.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(dim as i64))]), Some(shape), Iv::new(0.0, hi));
    }

    /// cross_entropy of bounded logits at random labels (some ignored), or its gradient.
    fn emit_cross_entropy(&mut self, kind: OpKind) {
        let (n, c) = (self.dim(), self.dim());
        let logits = self.obtain(&[n, c]);
        let logits = self.bounded(logits, OPERAND_LIMIT);
        // The default -100, a class (when there are two or more), or no class.
        let ignore = match self.rng.below(3) {
            0 => -100,
            1 if c > 1 => self.rng.below(c) as i64,
            _ => c as i64,
        };
        let labels = self.indices(&[n], c, Some(ignore));
        let a = if ignore == -100 { Attrs::new() } else { attrs([("ignore_index", Attr::Int(ignore))]) };
        let m = self.iv[logits.index()].mag();
        if kind == OpKind::CrossEntropy {
            self.push(kind, &[logits, labels], a, None, Iv::new(0.0, 2.0 * m + (c as f64).ln() + 1.0));
        } else {
            let dy = self.scalar_from_pool();
            let d = self.iv[dy.index()].mag();
            self.push(kind, &[logits, labels, dy], a, None, Iv::new(-d, d));
        }
    }

    /// Loss = sum of reduce_sum over every unused op result; then extras; return.
    fn finish(&mut self) {
        if self.f.body.is_empty() {
            // Every step was excluded: still produce a loss from an argument.
            let x = self.pool[0];
            let iv = self.iv[x.index()];
            self.unary(OpKind::Neg, x, Iv::new(-iv.hi, -iv.lo));
        }
        let uses = self.f.uses();
        let sinks: Vec<ValueId> =
            self.f.body.iter().filter_map(|op| op.result).filter(|r| uses[r.index()].is_empty()).collect();
        let mut loss: Option<ValueId> = None;
        for s in sinks {
            let s = self.bounded(s, OPERAND_LIMIT);
            let shape = self.shape(s);
            let n: u64 = shape.iter().product();
            let iv = self.iv[s.index()].times(n as f64);
            let dims: Vec<u64> = (0..shape.len() as u64).collect();
            let r = self.push(OpKind::ReduceSum, &[s], attrs([("dims", ints(&dims))]), None, iv);
            loss = Some(match loss {
                None => r,
                Some(l) => {
                    let (a, b) = (self.iv[l.index()], self.iv[r.index()]);
                    self.push(OpKind::Add, &[l, r], Attrs::new(), None, Iv::new(a.lo + b.lo, a.hi + b.hi))
                }
            });
        }
        let loss = loss.unwrap_or_else(|| self.scalar_from_pool());
        let mut results = vec![loss];
        let results_pool: Vec<ValueId> = self.f.body.iter().filter_map(|op| op.result).collect();
        let extras = self.rng.below(self.cfg.max_extra_results as u64 + 1);
        for _ in 0..extras {
            results.push(self.rng.pick(&results_pool));
        }
        let loc = Loc::new(self.file.clone(), self.line + 1, 5);
        self.f.push_return(&results, loc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::verify_module;

    #[test]
    fn generated_modules_verify_and_return_a_scalar_loss_first() {
        let mut kinds = std::collections::BTreeSet::new();
        for (seed, cfg) in (0..300).map(|s| (s, GenConfig::default().annotated())).chain((0..300).map(|s| (s, GenConfig::default().annotated().with_int_ops()))) {
            let m = gen_module(&cfg, seed);
            if let Err(d) = verify_module(&m) {
                panic!("seed {seed}: {d}\n{}", crate::print_module(&m));
            }
            let f = &m.funcs[0];
            assert_eq!(f.name, "f");
            assert_eq!(f.result_types[0], TensorType::scalar(), "loss first");
            kinds.extend(f.body.iter().map(|o| o.kind));
        }
        // Every op of the table shows up somewhere in 300 modules.
        for k in OpKind::ALL {
            assert!(kinds.contains(k), "never generated: ck.{}", k.name());
        }
    }

    #[test]
    fn generated_modules_print_parse_and_print_identically() {
        let cfg = GenConfig::default().annotated();
        for seed in 0..100 {
            let m = gen_module(&cfg, seed);
            let text = crate::print_module(&m);
            let back = crate::parse_and_verify(&text, "gen.ck").unwrap_or_else(|d| panic!("seed {seed}: {d}\n{text}"));
            assert_eq!(crate::print_module(&back), text, "seed {seed}");
        }
    }

    #[test]
    fn exclude_removes_ops_from_the_steps() {
        let cfg = GenConfig { exclude: vec![OpKind::Conv2d, OpKind::Matmul], ..GenConfig::default() };
        for seed in 0..100 {
            let m = gen_module(&cfg, seed);
            assert!(m.funcs[0].body.iter().all(|o| o.kind != OpKind::Conv2d && o.kind != OpKind::Matmul));
        }
        let smooth = GenConfig::default().smooth();
        for seed in 0..100 {
            let m = gen_module(&smooth, seed);
            let kinked = [OpKind::Relu, OpKind::Max, OpKind::ReduceMax, OpKind::MaxPool2d, OpKind::ReluGrad, OpKind::MaxPool2dGrad];
            assert!(m.funcs[0].body.iter().all(|o| !kinked.contains(&o.kind)), "seed {seed}");
        }
    }

    /// The conv steps emit grouped (1 < groups < C) and depthwise (groups = C)
    /// convolutions of all three kinds, and the modules verify.
    #[test]
    fn grouped_and_depthwise_convolutions_are_generated() {
        let convs = [OpKind::Conv2d, OpKind::Conv2dGradInput, OpKind::Conv2dGradFilter];
        let mut cfg = GenConfig { min_ops: 4, max_ops: 8, ..GenConfig::default() };
        cfg.exclude = OpKind::ALL.iter().copied().filter(|o| !convs.contains(o)).collect();
        let (mut grouped, mut depthwise) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
        for seed in 0..200 {
            let m = gen_module(&cfg, seed);
            verify_module(&m).unwrap_or_else(|d| panic!("seed {seed}: {d}"));
            let f = &m.funcs[0];
            for o in &f.body {
                let Some(g) = o.attrs.get("groups").and_then(Attr::as_int) else { continue };
                // the input's channels: x of conv2d / grad_filter, the result of grad_input
                let x = match o.kind {
                    OpKind::Conv2dGradInput => o.result.expect("result"),
                    _ => o.operands[0],
                };
                let c = f.ty(x).shape[1] as i64;
                assert!(g > 1 && c % g == 0, "seed {seed}: groups {g} of {c} channels");
                if g == c { depthwise.insert(o.kind) } else { grouped.insert(o.kind) };
            }
        }
        for k in convs {
            assert!(depthwise.contains(&k), "no depthwise ck.{}", k.name());
            assert!(grouped.contains(&k), "no grouped (1 < groups < C) ck.{}", k.name());
        }
    }

    #[test]
    fn generation_is_deterministic() {
        let cfg = GenConfig::default();
        assert_eq!(gen_module(&cfg, 5), gen_module(&cfg, 5));
        assert_ne!(gen_module(&cfg, 5), gen_module(&cfg, 6));
    }
}
