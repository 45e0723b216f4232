//! `autodiff`: reverse-mode differentiation — the gradient graph of the paper.
//!
//! For a function `@NAME` whose first result is a rank-0 loss, adds
//! `@NAME_grad` with the same arguments (argument attributes such as
//! `{ck.param}` carried over) returning `(loss, dloss/d wrt_1, ..., dloss/d wrt_k)`
//! with the wrt arguments in argument order. `wrt=all` (the default) means the
//! `{ck.param}` arguments, or every argument when none is marked (docs/ir.md);
//! `wrt=I,J,..` names argument indices (0-based). `func=NAME` restricts the
//! pass to one function; without it every function whose first result is a
//! rank-0 tensor is differentiated, except those that already have a
//! `@NAME_grad` and those that are themselves `@X_grad` of an `@X` in the module.
//!
//! # Schedule of `@NAME_grad`
//! The forward ops (copied, `ck.inplace`/`ck.offset` dropped since the
//! backward now reads forward values), then the seed `fill 1.0`, then the
//! backward ops in reverse order of the forward ops they differentiate, then
//! `ck.return`. Every value the backward reads is an explicit operand, so
//! liveness, remat and memplan see exactly which forward values are kept.
//! Backward ops carry the location of the forward op they differentiate.
//!
//! Only what is needed is emitted: an operand gets a gradient only when it is
//! *active* (depends on a wrt argument through differentiable operands) and
//! its op is *useful* (the loss depends on it). Fan-out gradients accumulate
//! eagerly with `add` (only when a second contribution really arrives, so at
//! most two partial sums are live); gradients of slices of one value that
//! tile it along one dimension are joined with one `concat` (gaps filled
//! with zeros) instead of being padded and summed. wrt arguments that do not
//! reach the loss get `fill 0.0`. Finally a dead-code sweep over the whole
//! function removes anything the return does not need (forward ops that only
//! fed other results, backward ops whose gradients were dropped).
//!
//! # The rule table (one entry per op; `dy` = adjoint of the result `y`)
//! | op | adjoint(s) | forward values the backward reads |
//! |---|---|---|
//! | neg | `dx = neg dy` | none |
//! | exp | `dx = dy*y` | output y (input may die) |
//! | log | `dx = dy/x` | input x |
//! | tanh | `dx = dy - dy*(y*y)` | output y |
//! | sigmoid | `t = dy*y; dx = t - t*y` | output y |
//! | relu | `dx = relu_grad(y, dy)` (y>0 iff x>0) | output y (input may die) |
//! | sqrt | `dx = 0.5 * (dy/y)` | output y |
//! | rsqrt | `dx = -0.5 * (dy*y)*(y*y)` | output y |
//! | add | `da = dy, db = dy` (no op; `add(x,x)`: `2*dy`) | none |
//! | sub | `da = dy, db = neg dy` | none |
//! | mul | `da = dy*b, db = dy*a` (`mul(x,x)`: `2*(dy*x)`) | the other operand |
//! | div | `da = dy/b, db = neg((dy/b)*y)` | b and output y (a may die) |
//! | max | `da = relu_grad(a-b, dy), db = dy - da`; tie → b | a, b |
//! | scale | `dx = value * dy` | none |
//! | fill, constant | no operands | — |
//! | erf | `dx = 2/sqrt(pi) * (dy * exp(neg(x*x)))` | input x |
//! | relu_grad(x, g) | `dg = relu_grad(x, dz)`; x: zero a.e. (not differentiated) | x |
//! | broadcast | `dx = reduce_sum(dy)` over the new dims (alias if none) | none |
//! | reduce_sum | `dx = broadcast(dy)` back to x's shape | none |
//! | reduce_max | `m = 1 - relu_grad(bcast(y)-x, 1)` (1 at maxima); `dx = m * bcast(dy / reduce_sum(m))`: ties share dy evenly (JAX's rule) | x, output y |
//! | transpose | `dx = transpose(dy, inverse perm)` | none |
//! | reshape | `dx = reshape(dy)` | none |
//! | slice | `dy` padded with zeros (concat of fills); slices tiling one dim are joined by one concat | none |
//! | concat | `d operand_i = slice(dy)` at its offset | none |
//! | matmul | `dA, dB` by matmuls with transpose flags (4 cases), batch dims carried | the other operand |
//! | conv2d(x, w) | `dx = conv2d_grad_input(dy, w)`, `dw = conv2d_grad_filter(x, dy)` | w for dx, x for dw |
//! | conv2d_grad_input(g, w) | `dg = conv2d(dz, w)`, `dw = conv2d_grad_filter(dz, g)` | w, g |
//! | conv2d_grad_filter(x, g) | `dx = conv2d_grad_input(g, dz)`, `dg = conv2d(x, dz)` | g, x |
//! | max_pool2d | `dx = max_pool2d_grad(x, dy)` (first maximum of a window takes it) | input x |
//! | avg_pool2d | `dx = avg_pool2d_grad(dy)` | none |
//! | max_pool2d_grad(x, g) | `dg = k * avg_pool2d(dz * max_pool2d_grad(x, 1))` with k the window area; needs stride >= window (non-overlapping windows), otherwise a located error; x: zero a.e. | x |
//! | avg_pool2d_grad(g) | `dg = avg_pool2d(dz)` | none |
//! | dropout | `dx = dropout(dy)` with the same rate and seed (same mask) | none |
//! | return | the seed: `dloss = fill 1.0` | — |
//!
//! Tie rules: `max(a, b)` gives a tie's gradient to `b`; `reduce_max` splits it
//! evenly between the tied maxima (a subgradient, like JAX); `max_pool2d`
//! follows `max_pool2d_grad` (first maximum in the window).
//!
//! Invariants in: a verified module (each target function is re-verified
//! first, so bad input gives the verifier's diagnostics, never a panic). Out: a verified module with one more
//! function per differentiated function; existing functions unchanged.
//! Errors (located, naming the function or op): `func=NAME` missing or not
//! returning a rank-0 first result, `@NAME_grad` already present for
//! `func=NAME`, a wrt index out of range, the one op without a rule
//! (`max_pool2d_grad` with overlapping windows, differentiated w.r.t. its dy).
//!
//! Complexity: O(ops + values) per function (one forward activity sweep, one
//! backward usefulness sweep, one reverse sweep emitting a constant number of
//! ops per forward op and operand, one dead-code sweep). Reference: Chen et
//! al. 2016, §2 (the gradient graph whose memory the later passes cut).

use crate::manager::{Pass, PassOptions, Statistics};
use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_OFFSET, attr_bool, pool_params};
use ckopt_ir::{Attr, Attrs, Diag, Diags, Func, Loc, Module, Op, OpKind, TensorType, ValueId};

/// Suffix of the gradient function's name.
pub const GRAD_SUFFIX: &str = "_grad";

/// Which arguments to differentiate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wrt {
    /// The `{ck.param}` arguments, or every argument when none is marked.
    All,
    /// These argument indices (returned in argument order, duplicates merged).
    Indices(Vec<usize>),
}

/// Options of the `autodiff` pass.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutodiffOptions {
    pub wrt: Wrt,
    /// Only this function (without `@`); `None` = every scalar-loss function.
    pub func: Option<String>,
}

impl AutodiffOptions {
    /// Reads `wrt=all|I,J,..` and `func=NAME` (checked by their kinds in the registry).
    pub fn from_pass_options(o: &PassOptions) -> Result<Self, String> {
        let wrt = match o.indices("wrt")? {
            None => Wrt::All,
            Some(v) => Wrt::Indices(v),
        };
        Ok(AutodiffOptions { wrt, func: o.func_name("func")? })
    }
}

/// The registry's defaults.
impl Default for AutodiffOptions {
    fn default() -> Self {
        Self::from_pass_options(&PassOptions::new("autodiff")).expect("the registry's defaults of autodiff parse")
    }
}

/// `NAME_grad`.
pub fn grad_name(name: &str) -> String {
    format!("{name}{GRAD_SUFFIX}")
}

/// Whether `f`'s first result is a rank-0 tensor (a scalar loss).
pub fn has_scalar_loss(f: &Func) -> bool {
    f.result_types.first().is_some_and(|t| t.rank() == 0) && !f.returned().is_empty()
}

/// What one differentiation did (for statistics and tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AutodiffStats {
    pub functions: usize,
    pub forward_ops: usize,
    pub backward_ops: usize,
}

/// The pass as a plain function: adds `@NAME_grad` next to each selected function.
pub fn autodiff(module: &mut Module, opts: &AutodiffOptions) -> Result<(), Diags> {
    autodiff_with_stats(module, opts).map(|_| ())
}

/// `autodiff` that also returns what it did.
pub fn autodiff_with_stats(module: &mut Module, opts: &AutodiffOptions) -> Result<AutodiffStats, Diags> {
    let targets: Vec<usize> = match &opts.func {
        Some(name) => {
            let Some(i) = module.funcs.iter().position(|f| f.name == *name) else {
                let loc = module.funcs.first().map(|f| Loc::new(f.loc.file.clone(), 1, 1)).unwrap_or_default();
                let names: Vec<String> = module.funcs.iter().map(|f| format!("@{}", f.name)).collect();
                return Err(Diag::error(
                    loc,
                    format!(
                        "autodiff: no function @{name} in the module (functions: {})",
                        if names.is_empty() { "none".to_string() } else { names.join(", ") }
                    ),
                )
                .into());
            };
            let f = &module.funcs[i];
            if !has_scalar_loss(f) {
                let what = match f.result_types.first() {
                    Some(t) => format!("its first result has type {t}"),
                    None => "it returns nothing".to_string(),
                };
                let mut d = Diag::error(
                    f.loc.clone(),
                    format!("autodiff: function @{} does not return a scalar loss first: {what} (expected tensor<f32>)", f.name),
                );
                if let Some(r) = f.return_op() {
                    d = d.with_note(Diag::note(r.loc.clone(), "the loss would be the first value returned here"));
                }
                return Err(d.into());
            }
            if module.func(&grad_name(name)).is_some() {
                return Err(Diag::error(
                    f.loc.clone(),
                    format!("autodiff: function @{} already exists; cannot create the gradient of @{name}", grad_name(name)),
                )
                .into());
            }
            vec![i]
        }
        None => (0..module.funcs.len())
            .filter(|&i| {
                let f = &module.funcs[i];
                let is_grad_of_other = f
                    .name
                    .strip_suffix(GRAD_SUFFIX)
                    .is_some_and(|base| module.func(base).is_some());
                has_scalar_loss(f) && !is_grad_of_other && module.func(&grad_name(&f.name)).is_none()
            })
            .collect(),
    };
    let mut diags = Diags::new();
    // The rules index operands by the op table's arities: refuse unverified input instead of panicking.
    for &i in &targets {
        ckopt_ir::verify::verify_func(&module.funcs[i], &mut diags);
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    let mut made = Vec::new();
    let mut stats = AutodiffStats::default();
    for i in targets {
        match differentiate(&module.funcs[i], &opts.wrt) {
            Ok((g, fw, bw)) => {
                stats.functions += 1;
                stats.forward_ops += fw;
                stats.backward_ops += bw;
                made.push((i, g));
            }
            Err(d) => diags.push(d),
        }
    }
    if !diags.is_empty() {
        return Err(diags);
    }
    for (i, g) in made.into_iter().rev() {
        module.funcs.insert(i + 1, g);
    }
    Ok(stats)
}

/// Whether the op's result depends differentiably on operand `i`
/// (`relu_grad` and `max_pool2d_grad` are piecewise constant in their first operand).
pub fn differentiable_operand(kind: OpKind, i: usize) -> bool {
    match kind {
        OpKind::ReluGrad | OpKind::MaxPool2dGrad => i == 1,
        OpKind::Return => false,
        _ => true,
    }
}

/// A partial gradient of one value.
enum Contrib {
    Dense(ValueId),
    /// A gradient for the window at `offsets` of the value (shape of `dy`).
    Slice { dy: ValueId, offsets: Vec<u64> },
}

/// Accumulated gradient of one value: a running dense sum plus pending slice pieces.
#[derive(Default)]
struct Adj {
    dense: Option<ValueId>,
    slices: Vec<(Vec<u64>, ValueId)>,
}

/// Emits backward ops into the gradient function.
struct Emitter<'a> {
    g: &'a mut Func,
    loc: Loc,
    count: usize,
}

impl Emitter<'_> {
    fn op(&mut self, kind: OpKind, operands: &[ValueId], attrs: Attrs, declared: Option<TensorType>, name: &str) -> Result<ValueId, Diag> {
        self.count += 1;
        self.g.push(kind, operands, attrs, declared, name, self.loc.clone()).map_err(|d| {
            Diag::error(d.loc.clone(), format!("autodiff: internal error building a gradient: {}", d.message))
        })
    }
    fn un(&mut self, kind: OpKind, x: ValueId, name: &str) -> Result<ValueId, Diag> {
        self.op(kind, &[x], Attrs::new(), None, name)
    }
    fn bin(&mut self, kind: OpKind, a: ValueId, b: ValueId, name: &str) -> Result<ValueId, Diag> {
        self.op(kind, &[a, b], Attrs::new(), None, name)
    }
    fn scale(&mut self, x: ValueId, v: f32, name: &str) -> Result<ValueId, Diag> {
        self.op(OpKind::Scale, &[x], one("value", Attr::F32(v)), None, name)
    }
    fn fill(&mut self, ty: TensorType, v: f32, name: &str) -> Result<ValueId, Diag> {
        self.op(OpKind::Fill, &[], one("value", Attr::F32(v)), Some(ty), name)
    }
    fn ty(&self, v: ValueId) -> TensorType {
        self.g.ty(v).clone()
    }
    /// `dy` zero-padded into `full` at `offsets`: one concat (with up to two fills) per differing dim.
    fn pad(&mut self, dy: ValueId, offsets: &[u64], full: &TensorType, name: &str) -> Result<ValueId, Diag> {
        let mut cur = dy;
        for d in 0..full.rank() {
            let ct = self.ty(cur);
            if ct.shape[d] == full.shape[d] {
                continue;
            }
            let before = offsets[d];
            let after = full.shape[d] - before - ct.shape[d];
            let mut parts = Vec::with_capacity(3);
            if before > 0 {
                let mut s = ct.shape.clone();
                s[d] = before;
                parts.push(self.fill(ct.with_shape(s), 0.0, name)?);
            }
            parts.push(cur);
            if after > 0 {
                let mut s = ct.shape.clone();
                s[d] = after;
                parts.push(self.fill(ct.with_shape(s), 0.0, name)?);
            }
            cur = self.op(OpKind::Concat, &parts, one("dim", Attr::Int(d as i64)), None, name)?;
        }
        Ok(cur)
    }
}

fn one(k: &str, v: Attr) -> Attrs {
    let mut a = Attrs::new();
    a.insert(k.to_string(), v);
    a
}

/// The op's own attributes (stride, padding, window, dims...), without pass or user attributes.
fn own_attrs(op: &Op) -> Attrs {
    let specs = op.kind.attr_specs();
    op.attrs.iter().filter(|(k, _)| specs.iter().any(|s| s.name == k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn with_bools(ta: bool, tb: bool) -> Attrs {
    let mut a = Attrs::new();
    if ta {
        a.insert("transpose_a".into(), Attr::Bool(true));
    }
    if tb {
        a.insert("transpose_b".into(), Attr::Bool(true));
    }
    a
}

fn ints(v: impl IntoIterator<Item = usize>) -> Attr {
    Attr::IntArray(v.into_iter().map(|d| d as i64).collect())
}

/// THE rule table: the adjoints of one op given the adjoint `dy` of its result.
/// `want[i]` says whether operand i needs a gradient. Returns (operand index, contribution).
/// Every `OpKind` has an arm (the match has no wildcard), documented in the header table.
fn rule(e: &mut Emitter, f: &Func, op: &Op, dy: ValueId, want: &[bool]) -> Result<Vec<(usize, Contrib)>, Diag> {
    use Contrib::Dense;
    use OpKind::*;
    let x = |i: usize| op.operands[i];
    let y = op.result.unwrap_or(dy);
    let nm = |i: usize| format!("d{}", f.name_of(op.operands[i]));
    let w = |i: usize| want.get(i).copied().unwrap_or(false);
    let mut out = Vec::new();
    match op.kind {
        Neg => out.push((0, Dense(e.un(Neg, dy, &nm(0))?))),
        Exp => out.push((0, Dense(e.bin(Mul, dy, y, &nm(0))?))),
        Log => out.push((0, Dense(e.bin(Div, dy, x(0), &nm(0))?))),
        Tanh => {
            let yy = e.bin(Mul, y, y, &nm(0))?;
            let t = e.bin(Mul, dy, yy, &nm(0))?;
            out.push((0, Dense(e.bin(Sub, dy, t, &nm(0))?)));
        }
        Sigmoid => {
            let t = e.bin(Mul, dy, y, &nm(0))?;
            let u = e.bin(Mul, t, y, &nm(0))?;
            out.push((0, Dense(e.bin(Sub, t, u, &nm(0))?)));
        }
        Relu => out.push((0, Dense(e.bin(ReluGrad, y, dy, &nm(0))?))),
        Sqrt => {
            let t = e.bin(Div, dy, y, &nm(0))?;
            out.push((0, Dense(e.scale(t, 0.5, &nm(0))?)));
        }
        Rsqrt => {
            let t = e.bin(Mul, dy, y, &nm(0))?;
            let yy = e.bin(Mul, y, y, &nm(0))?;
            let t3 = e.bin(Mul, t, yy, &nm(0))?;
            out.push((0, Dense(e.scale(t3, -0.5, &nm(0))?)));
        }
        Add => {
            if x(0) == x(1) {
                out.push((0, Dense(e.scale(dy, 2.0, &nm(0))?)));
            } else {
                if w(0) {
                    out.push((0, Dense(dy)));
                }
                if w(1) {
                    out.push((1, Dense(dy)));
                }
            }
        }
        Sub => {
            if x(0) != x(1) {
                if w(0) {
                    out.push((0, Dense(dy)));
                }
                if w(1) {
                    out.push((1, Dense(e.un(Neg, dy, &nm(1))?)));
                }
            }
        }
        Mul => {
            if x(0) == x(1) {
                let t = e.bin(Mul, dy, x(0), &nm(0))?;
                out.push((0, Dense(e.scale(t, 2.0, &nm(0))?)));
            } else {
                if w(0) {
                    out.push((0, Dense(e.bin(Mul, dy, x(1), &nm(0))?)));
                }
                if w(1) {
                    out.push((1, Dense(e.bin(Mul, dy, x(0), &nm(1))?)));
                }
            }
        }
        Div => {
            let t = e.bin(Div, dy, x(1), &nm(0))?;
            if w(0) {
                out.push((0, Dense(t)));
            }
            if w(1) {
                let u = e.bin(Mul, t, y, &nm(1))?;
                out.push((1, Dense(e.un(Neg, u, &nm(1))?)));
            }
        }
        Max => {
            if x(0) == x(1) {
                out.push((0, Dense(dy)));
            } else {
                let diff = e.bin(Sub, x(0), x(1), &nm(0))?;
                let da = e.bin(ReluGrad, diff, dy, &nm(0))?;
                if w(0) {
                    out.push((0, Dense(da)));
                }
                if w(1) {
                    out.push((1, Dense(e.bin(Sub, dy, da, &nm(1))?)));
                }
            }
        }
        Scale => {
            let v = op.f32_attr("value").unwrap_or(1.0);
            out.push((0, Dense(e.scale(dy, v, &nm(0))?)));
        }
        Fill | Constant => {}
        Erf => {
            let xx = e.bin(Mul, x(0), x(0), &nm(0))?;
            let n = e.un(Neg, xx, &nm(0))?;
            let g = e.un(Exp, n, &nm(0))?;
            let t = e.bin(Mul, dy, g, &nm(0))?;
            out.push((0, Dense(e.scale(t, std::f32::consts::FRAC_2_SQRT_PI, &nm(0))?)));
        }
        ReluGrad => {
            if w(1) {
                out.push((1, Dense(e.bin(ReluGrad, x(0), dy, &nm(1))?)));
            }
        }
        Broadcast => {
            let dims: Vec<usize> = op.attrs.get("dims").and_then(Attr::as_ints).unwrap_or(&[]).iter().map(|&d| d as usize).collect();
            let rank = f.ty(y).rank();
            let new: Vec<usize> = (0..rank).filter(|d| !dims.contains(d)).collect();
            if new.is_empty() {
                out.push((0, Dense(dy)));
            } else {
                out.push((0, Dense(e.op(ReduceSum, &[dy], one("dims", ints(new)), None, &nm(0))?)));
            }
        }
        ReduceSum => {
            let xt = f.ty(x(0)).clone();
            let dims: Vec<usize> = op.attrs.get("dims").and_then(Attr::as_ints).unwrap_or(&[]).iter().map(|&d| d as usize).collect();
            if dims.is_empty() {
                out.push((0, Dense(dy)));
            } else {
                let keep: Vec<usize> = (0..xt.rank()).filter(|d| !dims.contains(d)).collect();
                out.push((0, Dense(e.op(Broadcast, &[dy], one("dims", ints(keep)), Some(xt), &nm(0))?)));
            }
        }
        ReduceMax => {
            let xt = f.ty(x(0)).clone();
            let dims: Vec<usize> = op.attrs.get("dims").and_then(Attr::as_ints).unwrap_or(&[]).iter().map(|&d| d as usize).collect();
            if dims.is_empty() {
                out.push((0, Dense(dy)));
            } else {
                let keep: Vec<usize> = (0..xt.rank()).filter(|d| !dims.contains(d)).collect();
                let n = nm(0);
                let by = e.op(Broadcast, &[y], one("dims", ints(keep.clone())), Some(xt.clone()), &n)?;
                let gap = e.bin(Sub, by, x(0), &n)?;
                let ones = e.fill(xt.clone(), 1.0, &n)?;
                let not_max = e.bin(ReluGrad, gap, ones, &n)?;
                let mask = e.bin(Sub, ones, not_max, &n)?;
                let cnt = e.op(ReduceSum, &[mask], one("dims", ints(dims)), None, &n)?;
                let share = e.bin(Div, dy, cnt, &n)?;
                let bs = e.op(Broadcast, &[share], one("dims", ints(keep)), Some(xt), &n)?;
                out.push((0, Dense(e.bin(Mul, mask, bs, &n)?)));
            }
        }
        Transpose => {
            let perm = op.attrs.get("perm").and_then(Attr::as_ints).unwrap_or(&[]);
            let mut inv = vec![0usize; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inv[p as usize] = i;
            }
            if inv.iter().enumerate().all(|(i, &p)| i == p) {
                out.push((0, Dense(dy)));
            } else {
                out.push((0, Dense(e.op(Transpose, &[dy], one("perm", ints(inv)), None, &nm(0))?)));
            }
        }
        Reshape => {
            let xt = f.ty(x(0)).clone();
            if xt == *f.ty(y) {
                out.push((0, Dense(dy)));
            } else {
                out.push((0, Dense(e.op(Reshape, &[dy], Attrs::new(), Some(xt), &nm(0))?)));
            }
        }
        Slice => {
            let offs: Vec<u64> = op.attrs.get("offsets").and_then(Attr::as_ints).unwrap_or(&[]).iter().map(|&o| o as u64).collect();
            if f.ty(x(0)) == f.ty(y) {
                out.push((0, Dense(dy)));
            } else {
                out.push((0, Contrib::Slice { dy, offsets: offs }));
            }
        }
        Concat => {
            let dim = op.int_attr("dim").unwrap_or(0) as usize;
            let yt = f.ty(y);
            let mut at = 0u64;
            for (i, &o) in op.operands.iter().enumerate() {
                let ot = f.ty(o).clone();
                let size = ot.shape[dim];
                if w(i) {
                    if ot == *yt {
                        out.push((i, Dense(dy)));
                    } else {
                        let mut offs = vec![0i64; yt.rank()];
                        offs[dim] = at as i64;
                        out.push((i, Dense(e.op(Slice, &[dy], one("offsets", Attr::IntArray(offs)), Some(ot), &nm(i))?)));
                    }
                }
                at += size;
            }
        }
        Matmul => {
            let (ta, tb) = (attr_bool(&op.attrs, "transpose_a"), attr_bool(&op.attrs, "transpose_b"));
            let (a, b) = (x(0), x(1));
            // Y = op(A) op(B); see the header table. Each case reads only the other operand.
            if w(0) {
                let da = match (ta, tb) {
                    (false, false) => e.op(Matmul, &[dy, b], with_bools(false, true), None, &nm(0))?,
                    (true, false) => e.op(Matmul, &[b, dy], with_bools(false, true), None, &nm(0))?,
                    (false, true) => e.op(Matmul, &[dy, b], with_bools(false, false), None, &nm(0))?,
                    (true, true) => e.op(Matmul, &[b, dy], with_bools(true, true), None, &nm(0))?,
                };
                out.push((0, Dense(da)));
            }
            if w(1) {
                let db = match (ta, tb) {
                    (false, false) => e.op(Matmul, &[a, dy], with_bools(true, false), None, &nm(1))?,
                    (true, false) => e.op(Matmul, &[a, dy], with_bools(false, false), None, &nm(1))?,
                    (false, true) => e.op(Matmul, &[dy, a], with_bools(true, false), None, &nm(1))?,
                    (true, true) => e.op(Matmul, &[dy, a], with_bools(true, true), None, &nm(1))?,
                };
                out.push((1, Dense(db)));
            }
        }
        Conv2d => {
            let at = own_attrs(op);
            if w(0) {
                let xt = f.ty(x(0)).clone();
                out.push((0, Dense(e.op(Conv2dGradInput, &[dy, x(1)], at.clone(), Some(xt), &nm(0))?)));
            }
            if w(1) {
                let wt = f.ty(x(1)).clone();
                out.push((1, Dense(e.op(Conv2dGradFilter, &[x(0), dy], at, Some(wt), &nm(1))?)));
            }
        }
        Conv2dGradInput => {
            // z = conv2d_grad_input(g, w): the transpose of conv2d(., w).
            let at = own_attrs(op);
            if w(0) {
                out.push((0, Dense(e.op(Conv2d, &[dy, x(1)], at.clone(), None, &nm(0))?)));
            }
            if w(1) {
                let wt = f.ty(x(1)).clone();
                out.push((1, Dense(e.op(Conv2dGradFilter, &[dy, x(0)], at, Some(wt), &nm(1))?)));
            }
        }
        Conv2dGradFilter => {
            // z = conv2d_grad_filter(x, g): bilinear in x and g.
            let at = own_attrs(op);
            if w(0) {
                let xt = f.ty(x(0)).clone();
                out.push((0, Dense(e.op(Conv2dGradInput, &[x(1), dy], at.clone(), Some(xt), &nm(0))?)));
            }
            if w(1) {
                out.push((1, Dense(e.op(Conv2d, &[x(0), dy], at, None, &nm(1))?)));
            }
        }
        MaxPool2d => out.push((0, Dense(e.op(MaxPool2dGrad, &[x(0), dy], own_attrs(op), None, &nm(0))?))),
        AvgPool2d => {
            let xt = f.ty(x(0)).clone();
            out.push((0, Dense(e.op(AvgPool2dGrad, &[dy], own_attrs(op), Some(xt), &nm(0))?)));
        }
        MaxPool2dGrad => {
            if w(1) {
                let (win, stride) = pool_params(&op.attrs).map_err(|m| Diag::error(op.loc.clone(), m))?;
                if stride[0] < win[0] || stride[1] < win[1] {
                    return Err(Diag::error(
                        op.loc.clone(),
                        format!(
                            "autodiff: no gradient rule for 'ck.max_pool2d_grad' with overlapping windows (window {win:?}, stride {stride:?}); it is differentiable only when stride >= window"
                        ),
                    ));
                }
                let n = nm(1);
                let gt = f.ty(x(1)).clone();
                let ones = e.fill(gt, 1.0, &n)?;
                let mask = e.op(MaxPool2dGrad, &[x(0), ones], own_attrs(op), None, &n)?;
                let picked = e.bin(Mul, dy, mask, &n)?;
                let avg = e.op(AvgPool2d, &[picked], own_attrs(op), None, &n)?;
                out.push((1, Dense(e.scale(avg, (win[0] * win[1]) as f32, &n)?)));
            }
        }
        AvgPool2dGrad => out.push((0, Dense(e.op(AvgPool2d, &[dy], own_attrs(op), None, &nm(0))?))),
        Dropout => {
            // Same mask: same attributes and the same step key operand (if any).
            let mut ops = vec![dy];
            ops.extend(op.operands.get(1).copied());
            out.push((0, Dense(e.op(Dropout, &ops, own_attrs(op), None, &nm(0))?)))
        }
        Return => {
            return Err(Diag::error(op.loc.clone(), "autodiff: internal error: ck.return has no adjoint"));
        }
    }
    Ok(out.into_iter().filter(|(i, _)| w(*i)).collect())
}

/// Adds a dense contribution to an accumulator (an `add` only for a second one).
fn add_dense(e: &mut Emitter, acc: &mut Adj, c: ValueId, name: &str) -> Result<(), Diag> {
    acc.dense = Some(match acc.dense {
        None => c,
        Some(prev) => e.bin(OpKind::Add, prev, c, name)?,
    });
    Ok(())
}

/// The total gradient of a value of type `ty` (None = zero): joins pending slices.
fn finalize(e: &mut Emitter, acc: &mut Adj, ty: &TensorType, name: &str) -> Result<Option<ValueId>, Diag> {
    let slices = std::mem::take(&mut acc.slices);
    if slices.is_empty() {
        return Ok(acc.dense);
    }
    // One dim along which every slice differs from the full value, the others full-size?
    let differing = |v: ValueId, e: &Emitter| -> Vec<usize> {
        let st = e.g.ty(v);
        (0..ty.rank()).filter(|&d| st.shape[d] != ty.shape[d]).collect()
    };
    let mut split_dim: Option<usize> = None;
    let mut tiled = true;
    for (offs, v) in &slices {
        let dd = differing(*v, e);
        if dd.len() != 1 || (0..ty.rank()).any(|d| d != dd[0] && offs[d] != 0) || split_dim.is_some_and(|s| s != dd[0]) {
            tiled = false;
            break;
        }
        split_dim = Some(dd[0]);
    }
    let mut sorted = slices.clone();
    if let (true, Some(d)) = (tiled, split_dim) {
        sorted.sort_by_key(|(o, _)| o[d]);
        let mut end = 0u64;
        for (o, v) in &sorted {
            if o[d] < end {
                tiled = false; // overlapping windows: sum instead
                break;
            }
            end = o[d] + e.g.ty(*v).shape[d];
        }
    }
    match (tiled, split_dim) {
        (true, Some(d)) => {
            let mut parts = Vec::with_capacity(2 * sorted.len() + 1);
            let mut at = 0u64;
            for (o, v) in &sorted {
                if o[d] > at {
                    let mut s = ty.shape.clone();
                    s[d] = o[d] - at;
                    parts.push(e.fill(ty.with_shape(s), 0.0, name)?);
                }
                parts.push(*v);
                at = o[d] + e.g.ty(*v).shape[d];
            }
            if at < ty.shape[d] {
                let mut s = ty.shape.clone();
                s[d] = ty.shape[d] - at;
                parts.push(e.fill(ty.with_shape(s), 0.0, name)?);
            }
            let joined = e.op(OpKind::Concat, &parts, one("dim", Attr::Int(d as i64)), None, name)?;
            add_dense(e, acc, joined, name)?;
        }
        _ => {
            for (o, v) in &slices {
                let p = e.pad(*v, o, ty, name)?;
                add_dense(e, acc, p, name)?;
            }
        }
    }
    Ok(acc.dense)
}

/// Builds `@NAME_grad` for one function. Returns it with its forward and backward op counts.
pub fn differentiate(f: &Func, wrt: &Wrt) -> Result<(Func, usize, usize), Diag> {
    let nargs = f.params.len();
    let mut wrt_idx: Vec<usize> = match wrt {
        Wrt::All => f.trainable_indices(),
        Wrt::Indices(v) => {
            if let Some(&bad) = v.iter().find(|&&i| i >= nargs) {
                return Err(Diag::error(
                    f.loc.clone(),
                    format!("autodiff: wrt index {bad} is out of range: @{} has {nargs} argument{}", f.name, if nargs == 1 { "" } else { "s" }),
                ));
            }
            v.clone()
        }
    };
    wrt_idx.sort_unstable();
    wrt_idx.dedup();
    let Some(&loss) = f.returned().first() else {
        return Err(Diag::error(f.loc.clone(), format!("autodiff: function @{} returns nothing", f.name)));
    };
    let fwd: Vec<&Op> = f.body.iter().filter(|o| o.kind != OpKind::Return).collect();
    let nv = f.values.len();

    let mut g = Func {
        name: grad_name(&f.name),
        params: f.params.clone(),
        result_types: Vec::new(),
        body: Vec::with_capacity(fwd.len() * 3 + wrt_idx.len() + 2),
        attrs: f.attrs.iter().filter(|(k, _)| k.as_str() != ATTR_ARENA_BYTES).map(|(k, v)| (k.clone(), v.clone())).collect(),
        values: f.values.clone(),
        loc: f.loc.clone(),
    };
    for op in &fwd {
        let mut c = (*op).clone();
        c.attrs.remove(ATTR_INPLACE);
        c.attrs.remove(ATTR_OFFSET);
        g.body.push(c);
    }

    // Activity: depends on a wrt argument through differentiable operands.
    let mut active = vec![false; nv];
    for &i in &wrt_idx {
        active[f.params[i].value.index()] = true;
    }
    for op in &fwd {
        if let Some(r) = op.result {
            active[r.index()] = op.operands.iter().enumerate().any(|(i, o)| active[o.index()] && differentiable_operand(op.kind, i));
        }
    }
    // Usefulness: the loss depends on it.
    let mut useful = vec![false; nv];
    useful[loss.index()] = true;
    for op in fwd.iter().rev() {
        if op.result.is_some_and(|r| useful[r.index()]) {
            for o in &op.operands {
                useful[o.index()] = true;
            }
        }
    }

    let mut adj: Vec<Adj> = (0..nv).map(|_| Adj::default()).collect();
    let mut e = Emitter { g: &mut g, loc: f.body.last().map(|o| o.loc.clone()).unwrap_or_else(|| f.loc.clone()), count: 0 };
    if active[loss.index()] {
        let lt = f.ty(loss).clone();
        let seed = e.fill(lt, 1.0, &format!("d{}", f.name_of(loss)))?;
        adj[loss.index()].dense = Some(seed);
    }
    for op in fwd.iter().rev() {
        let Some(r) = op.result else { continue };
        if !active[r.index()] || !useful[r.index()] {
            continue;
        }
        e.loc = op.loc.clone();
        let rty = f.ty(r).clone();
        let name = format!("d{}", f.name_of(r));
        let Some(dy) = finalize(&mut e, &mut adj[r.index()], &rty, &name)? else { continue };
        let want: Vec<bool> = op
            .operands
            .iter()
            .enumerate()
            .map(|(i, o)| active[o.index()] && differentiable_operand(op.kind, i))
            .collect();
        for (i, c) in rule(&mut e, f, op, dy, &want)? {
            let v = op.operands[i];
            let name = format!("d{}", f.name_of(v));
            match c {
                Contrib::Dense(c) => add_dense(&mut e, &mut adj[v.index()], c, &name)?,
                Contrib::Slice { dy, offsets } => adj[v.index()].slices.push((offsets, dy)),
            }
        }
    }
    let mut results = vec![loss];
    e.loc = f.return_op().map(|o| o.loc.clone()).unwrap_or_else(|| f.loc.clone());
    for &i in &wrt_idx {
        let v = f.params[i].value;
        let ty = f.ty(v).clone();
        let name = format!("d{}", f.name_of(v));
        let grad = match finalize(&mut e, &mut adj[v.index()], &ty, &name)? {
            Some(gv) => gv,
            None => e.fill(ty, 0.0, &name)?,
        };
        results.push(grad);
    }
    let ret_loc = e.loc.clone();
    g.push_return(&results, ret_loc);
    let fw_kept = dce(&mut g, fwd.len());
    let bw = g.body.len() - 1 - fw_kept;
    Ok((g, fw_kept, bw))
}

/// Removes ops whose results the return does not (transitively) need.
/// Returns how many of the first `n_fwd` ops (the forward part) were kept. O(ops + values).
fn dce(g: &mut Func, n_fwd: usize) -> usize {
    let mut live = vec![false; g.values.len()];
    let mut keep = vec![false; g.body.len()];
    for (i, op) in g.body.iter().enumerate().rev() {
        let needed = op.kind == OpKind::Return || op.result.is_some_and(|r| live[r.index()]);
        if needed {
            keep[i] = true;
            for o in &op.operands {
                live[o.index()] = true;
            }
        }
    }
    let fw_kept = keep[..n_fwd.min(keep.len())].iter().filter(|&&k| k).count();
    let body = std::mem::take(&mut g.body);
    g.body = body.into_iter().zip(keep).filter_map(|(op, k)| k.then_some(op)).collect();
    fw_kept
}

/// The `Pass` shell.
pub struct AutodiffPass {
    pub opts: AutodiffOptions,
}

impl Pass for AutodiffPass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
        let s = autodiff_with_stats(module, &self.opts)?;
        stats.add("gradient-functions-created", s.functions);
        stats.add("forward-ops-kept", s.forward_ops);
        stats.add("backward-ops-emitted", s.backward_ops);
        Ok(())
    }
}

/// Registry constructor.
pub fn build(o: &PassOptions) -> Result<Box<dyn Pass>, String> {
    Ok(Box::new(AutodiffPass { opts: AutodiffOptions::from_pass_options(o)? }))
}

/// One line per op for docs and tests: (op, adjoint, forward values the backward reads).
/// Exhaustive over `OpKind` (no wildcard), so a new op cannot be added without a rule entry.
pub fn rule_doc(kind: OpKind) -> (&'static str, &'static str) {
    use OpKind::*;
    match kind {
        Neg => ("dx = neg dy", "none"),
        Exp => ("dx = dy*y", "output"),
        Log => ("dx = dy/x", "input"),
        Tanh => ("dx = dy - dy*(y*y)", "output"),
        Sigmoid => ("t = dy*y; dx = t - t*y", "output"),
        Relu => ("dx = relu_grad(y, dy)", "output"),
        Sqrt => ("dx = 0.5*(dy/y)", "output"),
        Rsqrt => ("dx = -0.5*(dy*y)*(y*y)", "output"),
        Add => ("da = dy, db = dy", "none"),
        Sub => ("da = dy, db = neg dy", "none"),
        Mul => ("da = dy*b, db = dy*a", "other operand"),
        Div => ("da = dy/b, db = neg((dy/b)*y)", "b, output"),
        Max => ("da = relu_grad(a-b, dy), db = dy - da (tie -> b)", "a, b"),
        Scale => ("dx = value*dy", "none"),
        Fill => ("no operands", "none"),
        Constant => ("no operands", "none"),
        Erf => ("dx = 2/sqrt(pi) * (dy * exp(-(x*x)))", "input"),
        ReluGrad => ("dg = relu_grad(x, dz); x not differentiated", "x"),
        Broadcast => ("dx = reduce_sum(dy) over the new dims", "none"),
        ReduceSum => ("dx = broadcast(dy)", "none"),
        ReduceMax => ("dx = mask * broadcast(dy / count) (ties share evenly)", "input, output"),
        Transpose => ("dx = transpose(dy, inverse perm)", "none"),
        Reshape => ("dx = reshape(dy)", "none"),
        Slice => ("dx = dy zero-padded (concat with fills)", "none"),
        Concat => ("d operand_i = slice(dy)", "none"),
        Matmul => ("dA, dB by matmuls with transpose flags", "other operand"),
        Conv2d => ("dx = conv2d_grad_input(dy, w), dw = conv2d_grad_filter(x, dy)", "w, x"),
        Conv2dGradInput => ("dg = conv2d(dz, w), dw = conv2d_grad_filter(dz, g)", "w, g"),
        Conv2dGradFilter => ("dx = conv2d_grad_input(g, dz), dg = conv2d(x, dz)", "g, x"),
        MaxPool2d => ("dx = max_pool2d_grad(x, dy)", "input"),
        AvgPool2d => ("dx = avg_pool2d_grad(dy)", "none"),
        MaxPool2dGrad => ("dg = k*avg_pool2d(dz * max_pool2d_grad(x, 1)) (stride >= window)", "x"),
        AvgPool2dGrad => ("dg = avg_pool2d(dz)", "none"),
        Dropout => ("dx = dropout(dy) with the same rate and seed", "none"),
        Return => ("seed dloss = fill 1.0", "-"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ckopt_ir::{attrs, verify_module};

    fn t(s: &[u64]) -> TensorType {
        TensorType::f32(s.to_vec())
    }
    fn l() -> Loc {
        Loc::unknown()
    }

    /// `@mlp(x, w1 {ck.param}, w2 {ck.param}, t)`: loss = sum((relu(x w1) w2 - t)^2).
    fn mlp() -> Module {
        let mut f = Func::new("mlp", l());
        let x = f.add_param("x", t(&[4, 8]), false);
        let w1 = f.add_param("w1", t(&[8, 8]), true);
        let w2 = f.add_param("w2", t(&[8, 3]), true);
        let tg = f.add_param("t", t(&[4, 3]), false);
        let h = f.push(OpKind::Matmul, &[x, w1], Attrs::new(), None, "h", l()).unwrap();
        let a = f.push(OpKind::Relu, &[h], Attrs::new(), None, "a", l()).unwrap();
        let o = f.push(OpKind::Matmul, &[a, w2], Attrs::new(), None, "o", l()).unwrap();
        let d = f.push(OpKind::Sub, &[o, tg], Attrs::new(), None, "d", l()).unwrap();
        let s = f.push(OpKind::Mul, &[d, d], Attrs::new(), None, "s", l()).unwrap();
        let loss = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "loss", l()).unwrap();
        f.push_return(&[loss], l());
        Module { funcs: vec![f] }
    }

    fn count(f: &Func, k: OpKind) -> usize {
        f.body.iter().filter(|o| o.kind == k).count()
    }

    #[test]
    fn mlp_grad_returns_loss_and_param_grads_and_verifies() {
        let mut m = mlp();
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        verify_module(&m).unwrap();
        let g = m.func("mlp_grad").unwrap();
        assert_eq!(g.result_types, vec![t(&[]), t(&[8, 8]), t(&[8, 3])]);
        assert!(g.is_trainable(1) && g.is_trainable(2) && !g.is_trainable(0));
        // 6 forward ops; backward: seed, broadcast (reduce_sum), mul+scale (d*d), [sub: alias],
        // 2 matmuls for o, relu_grad, 1 matmul for w1 (no gradient for x or t) = 8.
        assert_eq!(g.body.len() - 1, 6 + 8, "{:#?}", g.body.iter().map(|o| o.kind).collect::<Vec<_>>());
        assert_eq!(count(g, OpKind::Neg), 0, "no gradient for the target");
        assert_eq!(count(g, OpKind::Add), 0, "no fan-out, no accumulation");
    }

    #[test]
    fn relu_backward_reads_the_output_not_the_input() {
        let mut m = mlp();
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        let g = m.func("mlp_grad").unwrap();
        let relu = g.body.iter().find(|o| o.kind == OpKind::Relu).unwrap();
        let rg = g.body.iter().find(|o| o.kind == OpKind::ReluGrad).unwrap();
        assert_eq!(rg.operands[0], relu.result.unwrap());
        assert!(!g.body.iter().skip_while(|o| o.kind != OpKind::Fill).any(|o| o.operands.contains(&relu.operands[0])),
            "the relu input must not be read by the backward");
    }

    #[test]
    fn backward_order_is_reverse_of_forward() {
        let mut m = mlp();
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        let g = m.func("mlp_grad").unwrap();
        let kinds: Vec<OpKind> = g.body.iter().map(|o| o.kind).collect();
        let seed = kinds.iter().position(|&k| k == OpKind::Fill).unwrap();
        assert_eq!(seed, 6, "forward ops first, then the seed");
        let rg = kinds.iter().position(|&k| k == OpKind::ReluGrad).unwrap();
        let scale = kinds.iter().position(|&k| k == OpKind::Scale).unwrap();
        assert!(scale < rg, "the loss's adjoint comes before relu's");
    }

    #[test]
    fn wrt_indices_select_arguments_in_argument_order() {
        let mut m = mlp();
        let opts = AutodiffOptions { wrt: Wrt::Indices(vec![2, 0]), func: Some("mlp".into()) };
        autodiff(&mut m, &opts).unwrap();
        verify_module(&m).unwrap();
        let g = m.func("mlp_grad").unwrap();
        assert_eq!(g.result_types, vec![t(&[]), t(&[4, 8]), t(&[8, 3])]);
    }

    #[test]
    fn unreached_parameter_gets_a_zero_fill() {
        let mut f = Func::new("f", l());
        let x = f.add_param("x", t(&[3]), true);
        let u = f.add_param("unused", t(&[2, 2]), true);
        let _ = u;
        let s = f.push(OpKind::ReduceSum, &[x], attrs([("dims", Attr::IntArray(vec![0]))]), None, "s", l()).unwrap();
        f.push_return(&[s], l());
        let mut m = Module { funcs: vec![f] };
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        verify_module(&m).unwrap();
        let g = m.func("f_grad").unwrap();
        let r = g.returned()[2];
        let def = g.body.iter().find(|o| o.result == Some(r)).unwrap();
        assert_eq!(def.kind, OpKind::Fill);
        assert_eq!(def.f32_attr("value"), Some(0.0));
    }

    #[test]
    fn fan_out_accumulates_with_one_add() {
        // loss = sum(relu(x*w) + x*w): the value x*w is used twice.
        let mut f = Func::new("f", l());
        let x = f.add_param("x", t(&[4]), false);
        let w = f.add_param("w", t(&[4]), true);
        let p = f.push(OpKind::Mul, &[x, w], Attrs::new(), None, "p", l()).unwrap();
        let r = f.push(OpKind::Relu, &[p], Attrs::new(), None, "r", l()).unwrap();
        let s = f.push(OpKind::Add, &[r, p], Attrs::new(), None, "s", l()).unwrap();
        let loss = f.push(OpKind::ReduceSum, &[s], attrs([("dims", Attr::IntArray(vec![0]))]), None, "l", l()).unwrap();
        f.push_return(&[loss], l());
        let mut m = Module { funcs: vec![f] };
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        verify_module(&m).unwrap();
        let g = m.func("f_grad").unwrap();
        assert_eq!(count(g, OpKind::Add), 2, "the forward add plus exactly one accumulation");
    }

    #[test]
    fn slices_tiling_one_dim_are_joined_by_one_concat() {
        // LSTM-style gates: four slices of one matmul result.
        let mut f = Func::new("f", l());
        let x = f.add_param("x", t(&[2, 3]), false);
        let w = f.add_param("w", t(&[3, 8]), true);
        let z = f.push(OpKind::Matmul, &[x, w], Attrs::new(), None, "z", l()).unwrap();
        let mut acc = None;
        for k in 0..4 {
            let s = f.push(OpKind::Slice, &[z], attrs([("offsets", Attr::IntArray(vec![0, 2 * k]))]), Some(t(&[2, 2])), "g", l()).unwrap();
            let a = f.push(OpKind::Tanh, &[s], Attrs::new(), None, "a", l()).unwrap();
            acc = Some(match acc {
                None => a,
                Some(p) => f.push(OpKind::Mul, &[p, a], Attrs::new(), None, "m", l()).unwrap(),
            });
        }
        let loss = f.push(OpKind::ReduceSum, &[acc.unwrap()], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "l", l()).unwrap();
        f.push_return(&[loss], l());
        let mut m = Module { funcs: vec![f] };
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        verify_module(&m).unwrap();
        let g = m.func("f_grad").unwrap();
        assert_eq!(count(g, OpKind::Concat), 1);
        assert_eq!(count(g, OpKind::Fill), 1, "only the seed: no zero padding");
        assert_eq!(count(g, OpKind::Add), 0);
    }

    #[test]
    fn errors_name_the_function() {
        let mut m = mlp();
        let e = autodiff(&mut m, &AutodiffOptions { wrt: Wrt::All, func: Some("nope".into()) }).unwrap_err();
        assert!(e.0[0].message.contains("no function @nope"), "{e}");
        let e = autodiff(&mut m, &AutodiffOptions { wrt: Wrt::Indices(vec![7]), func: None }).unwrap_err();
        assert!(e.0[0].message.contains("wrt index 7 is out of range: @mlp has 4 arguments"), "{e}");
        assert_eq!(m.funcs.len(), 1, "a failed pass adds nothing");
        // Non-scalar first result.
        let mut f = Func::new("vec", l());
        let x = f.add_param("x", t(&[3]), true);
        let y = f.push(OpKind::Relu, &[x], Attrs::new(), None, "y", l()).unwrap();
        f.push_return(&[y], l());
        let mut m2 = Module { funcs: vec![f] };
        let e = autodiff(&mut m2, &AutodiffOptions { wrt: Wrt::All, func: Some("vec".into()) }).unwrap_err();
        assert!(e.0[0].message.contains("@vec does not return a scalar loss"), "{e}");
        // Without func=, non-scalar functions are skipped.
        autodiff(&mut m2, &AutodiffOptions::default()).unwrap();
        assert_eq!(m2.funcs.len(), 1);
        // A second run does not differentiate the gradient or duplicate it.
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        assert_eq!(m.funcs.len(), 2);
        let e = autodiff(&mut m, &AutodiffOptions { wrt: Wrt::All, func: Some("mlp".into()) }).unwrap_err();
        assert!(e.0[0].message.contains("@mlp_grad already exists"), "{e}");
    }

    #[test]
    fn forward_copy_keeps_user_marks_and_drops_placement() {
        // ck.mirror/ck.checkpoint survive into @f_grad; ck.inplace/ck.offset (invalid once the
        // backward reads forward values) are dropped; the function's arena size is not copied.
        let mut m = mlp();
        {
            let f = &mut m.funcs[0];
            f.body[0].attrs.insert("ck.checkpoint".into(), Attr::Unit);
            f.body[1].attrs.insert("ck.mirror".into(), Attr::Unit);
            f.body[1].attrs.insert("ck.inplace".into(), Attr::Int(0));
            f.body[2].attrs.insert("ck.offset".into(), Attr::Int(64));
            f.attrs.insert("ck.arena_bytes".into(), Attr::Int(4096));
        }
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        let g = m.func("mlp_grad").unwrap();
        assert!(g.body[0].has_attr("ck.checkpoint"));
        assert!(g.body[1].has_attr("ck.mirror"));
        assert!(!g.body.iter().any(|o| o.has_attr("ck.inplace") || o.has_attr("ck.offset")));
        assert!(!g.attrs.contains_key("ck.arena_bytes"));
        assert!(m.funcs[0].body[1].has_attr("ck.inplace"), "the source function is unchanged");
    }

    #[test]
    fn loss_that_is_an_argument_has_gradient_one() {
        // @f(%l, %w) returns %l itself: d l/d l = 1, d l/d w = 0.
        let mut f = Func::new("f", l());
        let a = f.add_param("l", t(&[]), false);
        let _w = f.add_param("w", t(&[2]), false);
        f.push_return(&[a], l());
        let mut m = Module { funcs: vec![f] };
        autodiff(&mut m, &AutodiffOptions::default()).unwrap();
        verify_module(&m).unwrap();
        let g = m.func("f_grad").unwrap();
        let vals: Vec<f32> = g.returned()[1..]
            .iter()
            .map(|r| g.body.iter().find(|o| o.result == Some(*r)).unwrap().f32_attr("value").unwrap())
            .collect();
        assert_eq!(vals, vec![1.0, 0.0]);
    }

    #[test]
    fn unverified_input_is_an_error_not_a_panic() {
        let mut m = mlp();
        m.funcs[0].body[0].operands.pop(); // a matmul with one operand
        let e = autodiff(&mut m, &AutodiffOptions::default()).unwrap_err();
        assert!(e.0[0].message.contains("expects 2 operands"), "{e}");
    }

    #[test]
    fn options_parse() {
        let mut o = PassOptions { pass: "autodiff".into(), values: Default::default() };
        assert_eq!(AutodiffOptions::from_pass_options(&o).unwrap(), AutodiffOptions::default());
        o.values.insert("wrt".into(), "0,2".into());
        o.values.insert("func".into(), "@f".into());
        let a = AutodiffOptions::from_pass_options(&o).unwrap();
        assert_eq!(a.wrt, Wrt::Indices(vec![0, 2]));
        assert_eq!(a.func.as_deref(), Some("f"));
        o.values.insert("wrt".into(), "x".into());
        assert!(AutodiffOptions::from_pass_options(&o).is_err());
    }

    #[test]
    fn overlapping_max_pool_grad_has_no_rule() {
        let mut f = Func::new("f", l());
        let x = f.add_param("x", t(&[1, 1, 4, 4]), false);
        let g = f.add_param("g", t(&[1, 1, 3, 3]), true);
        let pa = attrs([("window", Attr::IntArray(vec![2, 2])), ("stride", Attr::IntArray(vec![1, 1]))]);
        let z = f.push(OpKind::MaxPool2dGrad, &[x, g], pa, None, "z", l()).unwrap();
        let s = f.push(OpKind::ReduceSum, &[z], attrs([("dims", Attr::IntArray(vec![0, 1, 2, 3]))]), None, "s", l()).unwrap();
        f.push_return(&[s], l());
        let mut m = Module { funcs: vec![f] };
        let e = autodiff(&mut m, &AutodiffOptions::default()).unwrap_err();
        assert!(e.0[0].message.contains("no gradient rule for 'ck.max_pool2d_grad'"), "{e}");
    }

    #[test]
    fn deep_chain_is_linear_time() {
        // 10,000 layers: the pass must not be quadratic (a debug build still takes well under seconds).
        let mut f = Func::new("deep", l());
        let mut h = f.add_param("x", t(&[2, 4]), false);
        for _ in 0..10_000 {
            let w = f.add_param("w", t(&[4, 4]), true);
            let z = f.push(OpKind::Matmul, &[h, w], Attrs::new(), None, "z", l()).unwrap();
            h = f.push(OpKind::Relu, &[z], Attrs::new(), None, "h", l()).unwrap();
        }
        let loss = f.push(OpKind::ReduceSum, &[h], attrs([("dims", Attr::IntArray(vec![0, 1]))]), None, "l", l()).unwrap();
        f.push_return(&[loss], l());
        let mut m = Module { funcs: vec![f] };
        let t0 = std::time::Instant::now();
        let s = autodiff_with_stats(&mut m, &AutodiffOptions::default()).unwrap();
        let el = t0.elapsed();
        assert_eq!(s.backward_ops, 1 + 1 + 10_000 * 2 + 9_999, "seed, broadcast, relu_grad+dW per layer, dh for all but the first");
        assert!(el.as_secs_f64() < 20.0, "autodiff of 10k layers took {el:?}");
    }
}
