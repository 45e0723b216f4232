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
//! dropout reproduces the interpreter's SplitMix64 mask bit for bit.
//! Invariant: an op only reads operand elements inside their bounds (padding
//! and window checks guard every load).
//! Complexity: the emitted text is O(rank + loop depth) lines per op.

use ckopt_ir::ops::{attr_bool, attr_ints, conv_params, pool_params};
use ckopt_ir::{Attr, Diag, Func, Op, OpKind};
use std::fmt::Write;

/// An SSA value of type `memref<Nxf32>`.
#[derive(Clone, Debug)]
pub struct Mem {
    pub name: String,
    pub n: u64,
}

impl Mem {
    pub fn ty(&self) -> String {
        memref_ty(self.n)
    }
}

pub fn memref_ty(n: u64) -> String {
    format!("memref<{n}xf32>")
}

/// The body of an `scf.for`: (emitter, induction variable, carried values) -> next values.
type LoopBody<'a> = dyn FnMut(&mut Em, &str, &[String]) -> Vec<String> + 'a;

/// A text emitter with fresh SSA names.
pub struct Em {
    pub out: String,
    next: usize,
    pub indent: usize,
    prefix: String,
}

impl Em {
    pub fn new(prefix: &str, indent: usize) -> Em {
        Em { out: String::new(), next: 0, indent, prefix: prefix.to_string() }
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
    pub fn load(&mut self, m: &Mem, idx: &str) -> String {
        self.op(&format!("memref.load {}[{idx}] : {}", m.name, m.ty()))
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
    fn for_iter(
        &mut self,
        hi: u64,
        inits: &[(String, &str)],
        body: &mut LoopBody<'_>,
    ) -> Vec<String> {
        let lo = self.ci(0);
        let up = self.ci(hi);
        let one = self.ci(1);
        let iv = self.fresh();
        let args: Vec<String> = inits.iter().map(|_| self.fresh()).collect();
        let (lhs, names) = self.result_names(inits.len());
        let iter: Vec<String> = args.iter().zip(inits).map(|(a, (i, _))| format!("{a} = {i}")).collect();
        let tys: Vec<&str> = inits.iter().map(|(_, t)| *t).collect();
        self.line(&format!(
            "{lhs} = scf.for {iv} = {lo} to {up} step {one} iter_args({}) -> ({}) {{",
            iter.join(", "),
            tys.join(", ")
        ));
        self.indent += 1;
        let next = body(self, &iv, &args);
        self.line(&format!("scf.yield {} : {}", next.join(", "), tys.join(", ")));
        self.indent -= 1;
        self.line("}");
        names
    }
    /// Nested loops over `bounds` carrying one f32 accumulator.
    fn loops_acc(
        &mut self,
        bounds: &[u64],
        init: &str,
        body: &mut dyn FnMut(&mut Em, &[String], &str) -> String,
    ) -> String {
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

/// SplitMix64's output function (the interpreter's `mix64`).
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

fn shape(f: &Func, v: ckopt_ir::ValueId) -> Vec<u64> {
    f.ty(v).shape.clone()
}

fn ints(op: &Op, name: &str) -> Vec<i64> {
    attr_ints(&op.attrs, name, &[])
}

fn f32_attr(op: &Op, name: &str) -> Result<f32, Diag> {
    op.attrs
        .get(name)
        .and_then(Attr::as_f32)
        .ok_or_else(|| Diag::error(op.loc.clone(), format!("'{}' op needs f32 attribute '{name}'", op.kind.full_name())))
}

/// Emits the computation of result element `idx` of `op`; returns its SSA name.
/// `ins[i]` is operand i as a flat memref.
pub fn element(em: &mut Em, f: &Func, op: &Op, ins: &[Mem], idx: &str) -> Result<String, Diag> {
    use OpKind::*;
    let bad = |m: String| Diag::error(op.loc.clone(), format!("'{}' op: {m}", op.kind.full_name()));
    let Some(res) = op.result else {
        return Err(bad("has no result to compute".into()));
    };
    let ys = shape(f, res);
    let xs = |i: usize| shape(f, op.operands[i]);
    Ok(match op.kind {
        Neg | Exp | Log | Tanh | Sqrt | Rsqrt | Sigmoid | Relu | Scale | Dropout => {
            let x = em.load(&ins[0], idx);
            match op.kind {
                Neg => em.op(&format!("arith.negf {x} : f32")),
                Exp => em.op(&format!("math.exp {x} : f32")),
                Log => em.op(&format!("math.log {x} : f32")),
                Tanh => em.op(&format!("math.tanh {x} : f32")),
                Sqrt => em.op(&format!("math.sqrt {x} : f32")),
                Rsqrt => em.op(&format!("math.rsqrt {x} : f32")),
                Sigmoid => {
                    let n = em.op(&format!("arith.negf {x} : f32"));
                    let e = em.op(&format!("math.exp {n} : f32"));
                    let one = em.cf(1.0);
                    let d = em.fbin("addf", &one, &e);
                    em.fbin("divf", &one, &d)
                }
                Relu => {
                    let z = em.cf(0.0);
                    let c = em.op(&format!("arith.cmpf ogt, {x}, {z} : f32"));
                    em.op(&format!("arith.select {c}, {x}, {z} : f32"))
                }
                Scale => {
                    let v = em.cf(f32_attr(op, "value")?);
                    em.fbin("mulf", &v, &x)
                }
                _ => {
                    // Dropout: h = mix64(mix64(seed + GOLDEN) ^ index); keep = (h >> 40) * 2^-24 >= rate.
                    let rate = f32_attr(op, "rate")?;
                    let seed = op.int_attr("seed").ok_or_else(|| bad("needs i64 attribute 'seed'".into()))?;
                    let base = mix64((seed as u64).wrapping_add(GOLDEN));
                    let i64c = |em: &mut Em, v: u64| em.op(&format!("arith.constant {} : i64", v as i64));
                    let i = em.op(&format!("arith.index_cast {idx} : index to i64"));
                    let b = i64c(em, base);
                    let mut z = em.op(&format!("arith.xori {b}, {i} : i64"));
                    for (sh, mul) in [(30u64, 0xBF58_476D_1CE4_E5B9u64), (27, 0x94D0_49BB_1331_11EB)] {
                        let s = i64c(em, sh);
                        let t = em.op(&format!("arith.shrui {z}, {s} : i64"));
                        let x2 = em.op(&format!("arith.xori {z}, {t} : i64"));
                        let m = i64c(em, mul);
                        z = em.op(&format!("arith.muli {x2}, {m} : i64"));
                    }
                    let s31 = i64c(em, 31);
                    let t = em.op(&format!("arith.shrui {z}, {s31} : i64"));
                    let h = em.op(&format!("arith.xori {z}, {t} : i64"));
                    let s40 = i64c(em, 40);
                    let top = em.op(&format!("arith.shrui {h}, {s40} : i64"));
                    let fl = em.op(&format!("arith.uitofp {top} : i64 to f32"));
                    let sc = em.cf(1.0 / 16_777_216.0);
                    let u = em.fbin("mulf", &fl, &sc);
                    let r = em.cf(rate);
                    let keep = em.op(&format!("arith.cmpf oge, {u}, {r} : f32"));
                    let q = em.cf(1.0 - rate);
                    let y = em.fbin("divf", &x, &q);
                    let z0 = em.cf(0.0);
                    em.op(&format!("arith.select {keep}, {y}, {z0} : f32"))
                }
            }
        }
        Add | Sub | Mul | Div | Max | ReluGrad => {
            let a = em.load(&ins[0], idx);
            let b = em.load(&ins[1], idx);
            match op.kind {
                Add => em.fbin("addf", &a, &b),
                Sub => em.fbin("subf", &a, &b),
                Mul => em.fbin("mulf", &a, &b),
                Div => em.fbin("divf", &a, &b),
                Max => em.fbin("maxnumf", &a, &b),
                _ => {
                    let z = em.cf(0.0);
                    let c = em.op(&format!("arith.cmpf ogt, {a}, {z} : f32"));
                    em.op(&format!("arith.select {c}, {b}, {z} : f32"))
                }
            }
        }
        Fill => em.cf(f32_attr(op, "value")?),
        Erf => {
            let x = em.load(&ins[0], idx);
            em.op(&format!("math.erf {x} : f32"))
        }
        Constant => {
            // The elements as one constant vector, read at the flat index.
            let (_, data) = op.attrs.get("value").and_then(Attr::as_dense).ok_or_else(|| bad("needs a dense 'value'".into()))?;
            if data.is_empty() {
                return Err(bad("has no elements".into()));
            }
            let elems: Vec<String> = data.iter().map(|&v| ckopt_ir::attr::format_f32(v)).collect();
            let n = data.len();
            let c = em.op(&format!("arith.constant dense<[{}]> : vector<{n}xf32>", elems.join(", ")));
            em.op(&format!("vector.extract {c}[{idx}] : f32 from vector<{n}xf32>"))
        }
        Reshape => em.load(&ins[0], idx),
        Broadcast => {
            let dims = ints(op, "dims");
            let yi = em.delin(idx, &ys);
            let xi: Vec<String> = dims.iter().map(|&d| yi[d as usize].clone()).collect();
            em.load_at(&ins[0], &xi, &xs(0))
        }
        Transpose => {
            let perm = ints(op, "perm");
            let yi = em.delin(idx, &ys);
            let mut xi = vec![String::new(); perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                xi[p as usize] = yi[i].clone();
            }
            em.load_at(&ins[0], &xi, &xs(0))
        }
        Slice => {
            let offs = ints(op, "offsets");
            let yi = em.delin(idx, &ys);
            let xi: Vec<String> = yi.iter().zip(&offs).map(|(y, &o)| em.iadd_c(y, o as u64)).collect();
            em.load_at(&ins[0], &xi, &xs(0))
        }
        Concat => {
            let d = op.int_attr("dim").ok_or_else(|| bad("needs i64 attribute 'dim'".into()))? as usize;
            let yi = em.delin(idx, &ys);
            let shapes: Vec<Vec<u64>> = (0..ins.len()).map(xs).collect();
            concat_pick(em, ins, &shapes, &yi, d, 0, 0)
        }
        ReduceSum | ReduceMax => {
            let x = xs(0);
            let dims: Vec<usize> = ints(op, "dims").iter().map(|&d| d as usize).collect();
            let yi = em.delin(idx, &ys);
            let kept: Vec<usize> = (0..x.len()).filter(|i| !dims.contains(i)).collect();
            let bounds: Vec<u64> = dims.iter().map(|&d| x[d]).collect();
            let sum = op.kind == ReduceSum;
            let init = if sum { em.cf(0.0) } else { em.cf(f32::NEG_INFINITY) };
            let m = ins[0].clone();
            em.loops_acc(&bounds, &init, &mut |em, ivs, acc| {
                let mut xi = vec![String::new(); x.len()];
                for (k, &d) in kept.iter().enumerate() {
                    xi[d] = yi[k].clone();
                }
                for (k, &d) in dims.iter().enumerate() {
                    xi[d] = ivs[k].clone();
                }
                let v = em.load_at(&m, &xi, &x);
                em.fbin(if sum { "addf" } else { "maxnumf" }, acc, &v)
            })
        }
        Matmul => {
            let (a, b) = (xs(0), xs(1));
            let r = ys.len();
            let (ta, tb) = (attr_bool(&op.attrs, "transpose_a"), attr_bool(&op.attrs, "transpose_b"));
            let kdim = if ta { a[r - 2] } else { a[r - 1] };
            let yi = em.delin(idx, &ys);
            let (ma, mb) = (ins[0].clone(), ins[1].clone());
            let zero = em.cf(0.0);
            em.loops_acc(&[kdim], &zero, &mut |em, ivs, acc| {
                let k = &ivs[0];
                let mut ai = yi[..r - 2].to_vec();
                let mut bi = yi[..r - 2].to_vec();
                if ta {
                    ai.extend([k.clone(), yi[r - 2].clone()]);
                } else {
                    ai.extend([yi[r - 2].clone(), k.clone()]);
                }
                if tb {
                    bi.extend([yi[r - 1].clone(), k.clone()]);
                } else {
                    bi.extend([k.clone(), yi[r - 1].clone()]);
                }
                let av = em.load_at(&ma, &ai, &a);
                let bv = em.load_at(&mb, &bi, &b);
                let p = em.fbin("mulf", &av, &bv);
                em.fbin("addf", acc, &p)
            })
        }
        Conv2d => {
            let (x, w) = (xs(0), xs(1));
            let (s, p) = conv_params(&op.attrs).map_err(bad)?;
            let yi = em.delin(idx, &ys); // n f oh ow
            let (mx, mw) = (ins[0].clone(), ins[1].clone());
            let zero = em.cf(0.0);
            em.loops_acc(&[x[1], w[2], w[3]], &zero, &mut |em, ivs, acc| {
                let (c, i, j) = (&ivs[0], &ivs[1], &ivs[2]);
                let hs = em.imul_c(&yi[2], s[0]);
                let hh0 = em.iadd(&hs, i);
                let hh = em.isub_c(&hh0, p[0]);
                let ws = em.imul_c(&yi[3], s[1]);
                let ww0 = em.iadd(&ws, j);
                let ww = em.isub_c(&ww0, p[1]);
                let xi = vec![yi[0].clone(), c.clone(), hh.clone(), ww.clone()];
                let wi = vec![yi[1].clone(), c.clone(), i.clone(), j.clone()];
                let mut term = |em: &mut Em| {
                    let xv = em.load_at(&mx, &xi, &x);
                    let wv = em.load_at(&mw, &wi, &w);
                    em.fbin("mulf", &xv, &wv)
                };
                if p == [0, 0] {
                    let t = term(em);
                    em.fbin("addf", acc, &t)
                } else {
                    let a = em.in_range(&hh, x[2]);
                    let b = em.in_range(&ww, x[3]);
                    let cond = em.and(&a, &b);
                    em.add_if(&cond, acc, &mut term)
                }
            })
        }
        Conv2dGradInput => {
            // dx[n,c,h,w] = sum_{f,i,j} dy[n,f,oh,ow] * w[f,c,i,j], oh*sh = h+ph-i, ow*sw = w+pw-j.
            let (dy, w) = (xs(0), xs(1));
            let (s, p) = conv_params(&op.attrs).map_err(bad)?;
            let yi = em.delin(idx, &ys); // n c h w
            let (mdy, mw) = (ins[0].clone(), ins[1].clone());
            let zero = em.cf(0.0);
            em.loops_acc(&[w[0], w[2], w[3]], &zero, &mut |em, ivs, acc| {
                let (fi, i, j) = (&ivs[0], &ivs[1], &ivs[2]);
                let (oh, ch) = strided_source(em, &yi[2], p[0], i, s[0], dy[2]);
                let (ow, cw) = strided_source(em, &yi[3], p[1], j, s[1], dy[3]);
                let cond = em.and(&ch, &cw);
                let dyi = vec![yi[0].clone(), fi.clone(), oh, ow];
                let wi = vec![fi.clone(), yi[1].clone(), i.clone(), j.clone()];
                em.add_if(&cond, acc, &mut |em| {
                    let a = em.load_at(&mdy, &dyi, &dy);
                    let b = em.load_at(&mw, &wi, &w);
                    em.fbin("mulf", &a, &b)
                })
            })
        }
        Conv2dGradFilter => {
            // dw[f,c,i,j] = sum_{n,oh,ow} dy[n,f,oh,ow] * x[n,c,oh*sh+i-ph,ow*sw+j-pw].
            let (x, dy) = (xs(0), xs(1));
            let (s, p) = conv_params(&op.attrs).map_err(bad)?;
            let yi = em.delin(idx, &ys); // f c i j
            let (mx, mdy) = (ins[0].clone(), ins[1].clone());
            let zero = em.cf(0.0);
            em.loops_acc(&[dy[0], dy[2], dy[3]], &zero, &mut |em, ivs, acc| {
                let (n, oh, ow) = (&ivs[0], &ivs[1], &ivs[2]);
                let hs = em.imul_c(oh, s[0]);
                let hh0 = em.iadd(&hs, &yi[2]);
                let hh = em.isub_c(&hh0, p[0]);
                let ws = em.imul_c(ow, s[1]);
                let ww0 = em.iadd(&ws, &yi[3]);
                let ww = em.isub_c(&ww0, p[1]);
                let xi = vec![n.clone(), yi[1].clone(), hh.clone(), ww.clone()];
                let dyi = vec![n.clone(), yi[0].clone(), oh.clone(), ow.clone()];
                let mut term = |em: &mut Em| {
                    let a = em.load_at(&mdy, &dyi, &dy);
                    let b = em.load_at(&mx, &xi, &x);
                    em.fbin("mulf", &a, &b)
                };
                if p == [0, 0] {
                    let t = term(em);
                    em.fbin("addf", acc, &t)
                } else {
                    let a = em.in_range(&hh, x[2]);
                    let b = em.in_range(&ww, x[3]);
                    let cond = em.and(&a, &b);
                    em.add_if(&cond, acc, &mut term)
                }
            })
        }
        MaxPool2d | AvgPool2d => {
            let x = xs(0);
            let (win, s) = pool_params(&op.attrs).map_err(bad)?;
            let yi = em.delin(idx, &ys); // n c oh ow
            let mx = ins[0].clone();
            let is_max = op.kind == MaxPool2d;
            let init = if is_max { em.cf(f32::NEG_INFINITY) } else { em.cf(0.0) };
            let r = em.loops_acc(&[win[0], win[1]], &init, &mut |em, ivs, acc| {
                let hs = em.imul_c(&yi[2], s[0]);
                let hh = em.iadd(&hs, &ivs[0]);
                let ws = em.imul_c(&yi[3], s[1]);
                let ww = em.iadd(&ws, &ivs[1]);
                let xi = vec![yi[0].clone(), yi[1].clone(), hh, ww];
                let v = em.load_at(&mx, &xi, &x);
                em.fbin(if is_max { "maxnumf" } else { "addf" }, acc, &v)
            });
            if is_max {
                r
            } else {
                let cnt = em.cf((win[0] * win[1]) as f32);
                em.fbin("divf", &r, &cnt)
            }
        }
        MaxPool2dGrad | AvgPool2dGrad => {
            // Gather over the windows that contain (h, w), in row-major window order.
            let is_max = op.kind == MaxPool2dGrad;
            let dyv = if is_max { 1 } else { 0 };
            let dy = xs(dyv);
            let x = ys.clone();
            let (win, s) = pool_params(&op.attrs).map_err(bad)?;
            let yi = em.delin(idx, &ys); // n c h w
            let mdy = ins[dyv].clone();
            let mx = ins[0].clone();
            let zero = em.cf(0.0);
            em.loops_acc(&[win[0], win[1]], &zero, &mut |em, ivs, acc| {
                // i = KH-1-r and j = KW-1-t so that windows come in increasing (oh, ow).
                let kh1 = em.ci(win[0] - 1);
                let i = em.op(&format!("arith.subi {kh1}, {} : index", ivs[0]));
                let kw1 = em.ci(win[1] - 1);
                let j = em.op(&format!("arith.subi {kw1}, {} : index", ivs[1]));
                let (oh, ch) = strided_source(em, &yi[2], 0, &i, s[0], dy[2]);
                let (ow, cw) = strided_source(em, &yi[3], 0, &j, s[1], dy[3]);
                let cond = em.and(&ch, &cw);
                let dyi = vec![yi[0].clone(), yi[1].clone(), oh.clone(), ow.clone()];
                let acc_s = acc.to_string();
                em.if_vals(
                    &cond,
                    &["f32"],
                    &mut |em| {
                        let g = em.load_at(&mdy, &dyi, &dy);
                        if is_max {
                            // First maximal element of window (oh, ow), as a position p*KW+q.
                            let ninf = em.cf(f32::NEG_INFINITY);
                            let pos0 = em.ci(0);
                            let (oh, ow) = (oh.clone(), ow.clone());
                            let (y0, y1) = (yi[0].clone(), yi[1].clone());
                            let best = em.for_iter(win[0], &[(ninf, "f32"), (pos0, "index")], &mut |em, pi, a| {
                                em.for_iter(win[1], &[(a[0].clone(), "f32"), (a[1].clone(), "index")], &mut |em, qi, b| {
                                    let hs = em.imul_c(&oh, s[0]);
                                    let hh = em.iadd(&hs, pi);
                                    let ws = em.imul_c(&ow, s[1]);
                                    let ww = em.iadd(&ws, qi);
                                    let v = em.load_at(&mx, &[y0.clone(), y1.clone(), hh, ww], &x);
                                    let gt = em.op(&format!("arith.cmpf ogt, {v}, {} : f32", b[0]));
                                    let pk = em.imul_c(pi, win[1]);
                                    let pos = em.iadd(&pk, qi);
                                    let nb = em.op(&format!("arith.select {gt}, {v}, {} : f32", b[0]));
                                    let np = em.op(&format!("arith.select {gt}, {pos}, {} : index", b[1]));
                                    vec![nb, np]
                                })
                            });
                            let ik = em.imul_c(&i, win[1]);
                            let me = em.iadd(&ik, &j);
                            let hit = em.op(&format!("arith.cmpi eq, {}, {me} : index", best[1]));
                            let z = em.cf(0.0);
                            let gg = em.op(&format!("arith.select {hit}, {g}, {z} : f32"));
                            vec![em.fbin("addf", &acc_s, &gg)]
                        } else {
                            let cnt = em.cf((win[0] * win[1]) as f32);
                            let q = em.fbin("divf", &g, &cnt);
                            vec![em.fbin("addf", &acc_s, &q)]
                        }
                    },
                    &mut |_| vec![acc_s.clone()],
                )[0]
                    .clone()
            })
        }
        Return => return Err(bad("has no result to compute".into())),
    })
}

/// For a result coordinate `h` reached from source coordinate `o` as
/// `o*stride + k - pad = h`: returns (`o`, in-bounds condition `o` integral and
/// `0 <= o < out`).
fn strided_source(em: &mut Em, h: &str, pad: u64, k: &str, stride: u64, out: u64) -> (String, String) {
    let hp = em.iadd_c(h, pad);
    let t = em.op(&format!("arith.subi {hp}, {k} : index"));
    let nonneg = em.icmp_c("sge", &t, 0);
    let o = em.idiv_c(&t, stride);
    let lt = em.icmp_c("slt", &o, out);
    let mut cond = em.and(&nonneg, &lt);
    if stride != 1 {
        let r = em.irem_c(&t, stride);
        let ex = em.icmp_c("eq", &r, 0);
        cond = em.and(&cond, &ex);
    }
    (o, cond)
}

fn concat_pick(em: &mut Em, ins: &[Mem], shapes: &[Vec<u64>], yi: &[String], d: usize, k: usize, start: u64) -> String {
    let load = |em: &mut Em| {
        let mut xi = yi.to_vec();
        xi[d] = em.isub_c(&yi[d], start);
        em.load_at(&ins[k], &xi, &shapes[k])
    };
    if k + 1 == ins.len() {
        return load(em);
    }
    let end = start + shapes[k][d];
    let cond = em.icmp_c("ult", &yi[d], end);
    em.if_vals(&cond, &["f32"], &mut |em| vec![load(em)], &mut |em| {
        vec![concat_pick(em, ins, shapes, yi, d, k + 1, end)]
    })[0]
        .clone()
}

/// Whether `op` may write its result over operand memory it also reads:
/// true when every result element `i` reads only element `i` of each operand
/// that it aliases (elementwise ops and reshape).
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
