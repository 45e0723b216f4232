//! The elemental emitter of fused kernels: the value of any op of a kernel
//! at an index, as upstream MLIR (arith, math, memref, vector), `w` lanes
//! at a time.
//!
//! An index is one component per dimension (`Comp`): a scalar (`S`, the
//! same for every lane), an affine run (`L(b, s)`: lane l is at `b + l·s`)
//! or per-lane values (`V`, a `vector<w x index>`). Loop drivers put the
//! lane on the innermost iteration dimension (`L(j, 1)`); broadcasts,
//! transposes, slices and most reshapes map components without losing the
//! affine form, so the loads they lead to are contiguous vector loads
//! (`L(b, 1)`), splats of one scalar (`S`) or, otherwise, gathers. With
//! `w == 1` everything is scalar (loop tails, epilogues).
//!
//! The arithmetic is the interpreter's, op for op (`ckopt_interp::eval`),
//! from the one definition shared with the per-element emitter
//! (`crate::emit::elementwise`): the same f32 operations in the same order,
//! `ckopt_ir::math` for exp/tanh/erf/sigmoid, libm for log, an exact division for rsqrt,
//! SplitMix64 for dropout (`ckopt_ir::random`), so elementwise results are
//! bit-identical to the interpreter and do not depend on the lane count or
//! on which kernel an op was fused into. Values are memoized per (value,
//! index) so a value read twice at one index is computed once.

use crate::emit::elementwise::{self, Lanes};
use crate::emit::{Em, from_mem, lanes_of, mem_elem, reg_elem, round_reg, to_mem};
use ckopt_ir::ops::attr_ints;
use ckopt_ir::{DType, Diag, Func, Loc, OpKind, ValueId};
use std::collections::HashMap;

/// One index component (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub enum Comp {
    S(String),
    L(String, i64),
    V(String),
}

impl Comp {
    fn key(&self) -> String {
        match self {
            Comp::S(a) => a.clone(),
            Comp::L(a, s) => format!("{a}+l*{s}"),
            Comp::V(a) => format!("v{a}"),
        }
    }
}

/// The emitter of one kernel body at one lane count.
pub struct VEm<'a> {
    pub em: &'a mut Em,
    k: &'a Func,
    pub w: usize,
    /// Memref SSA name of each kernel parameter (`memref<Nxf32>`).
    mems: &'a [String],
    memo: HashMap<String, String>,
    /// Values given by the driver (a reduction's result in its epilogue).
    pub given: HashMap<ValueId, String>,
    /// Every value is read at the one flat index (`KernelKind::Loop { flat }`).
    pub flat: bool,
    /// Integer type of scalar index arithmetic: `index` (cpu), or `i32` in
    /// cuda kernels whose sizes fit (cheaper division and multiplication);
    /// a memory access casts an `i32` index to `index` (zero-extended).
    pub ity: &'static str,
}

fn err(m: impl Into<String>) -> Diag {
    Diag::error(Loc::unknown(), m.into())
}

impl<'a> VEm<'a> {
    pub fn new(em: &'a mut Em, k: &'a Func, w: usize, mems: &'a [String]) -> VEm<'a> {
        VEm { em, k, w, mems, memo: HashMap::new(), given: HashMap::new(), flat: false, ity: "index" }
    }

    /// The f32 value type: `f32` or `vector<w x f32>`.
    pub fn vt(&self) -> String {
        if self.w == 1 { "f32".into() } else { format!("vector<{}xf32>", self.w) }
    }
    fn vty(&self, elem: &str) -> String {
        if self.w == 1 { elem.into() } else { format!("vector<{}x{elem}>", self.w) }
    }
    pub fn ci(&mut self, v: i64) -> String {
        let key = format!("ci{v}");
        if let Some(s) = self.memo.get(&key) {
            return s.clone();
        }
        let s = self.em.op(&format!("arith.constant {v} : {}", self.ity));
        self.memo.insert(key, s.clone());
        s
    }
    /// An f32 constant of the value type.
    pub fn cf(&mut self, v: f32) -> String {
        let key = format!("cf{}w{}", v.to_bits(), self.w);
        if let Some(s) = self.memo.get(&key) {
            return s.clone();
        }
        let lit = ckopt_ir::attr::format_f32(v);
        let s = if self.w == 1 {
            self.em.op(&format!("arith.constant {lit} : f32"))
        } else {
            self.em.op(&format!("arith.constant dense<{lit}> : vector<{}xf32>", self.w))
        };
        self.memo.insert(key, s.clone());
        s
    }
    fn ci64(&mut self, v: u64) -> String {
        let key = format!("cl{v}w{}", self.w);
        if let Some(s) = self.memo.get(&key) {
            return s.clone();
        }
        let t = self.vty("i64");
        let s = if self.w == 1 {
            self.em.op(&format!("arith.constant {} : i64", v as i64))
        } else {
            self.em.op(&format!("arith.constant dense<{}> : {t}", v as i64))
        };
        self.memo.insert(key, s.clone());
        s
    }
    fn iota(&mut self) -> String {
        if let Some(s) = self.memo.get("iota") {
            return s.clone();
        }
        let lanes: Vec<String> = (0..self.w).map(|i| i.to_string()).collect();
        let s = self.em.op(&format!("arith.constant dense<[{}]> : vector<{}xindex>", lanes.join(", "), self.w));
        self.memo.insert("iota".into(), s.clone());
        s
    }
    /// Broadcasts a scalar of `elem` type to the value type (no-op at w = 1).
    fn splat(&mut self, s: &str, elem: &str) -> String {
        if self.w == 1 {
            return s.to_string();
        }
        self.em.op(&format!("vector.broadcast {s} : {elem} to vector<{}x{elem}>", self.w))
    }

    // ---- index components ----

    fn vec_of(&mut self, c: &Comp) -> String {
        match c {
            Comp::V(v) => v.clone(),
            Comp::S(a) => self.splat(a, "index"),
            Comp::L(b, s) => {
                let io = self.iota();
                let sv = self.ci(*s);
                let ss = self.splat(&sv, "index");
                let m = self.em.op(&format!("arith.muli {io}, {ss} : vector<{}xindex>", self.w));
                let bs = self.splat(b, "index");
                self.em.op(&format!("arith.addi {m}, {bs} : vector<{}xindex>", self.w))
            }
        }
    }
    fn add_c(&mut self, c: &Comp, k: i64) -> Comp {
        if k == 0 {
            return c.clone();
        }
        let kc = self.ci(k);
        match c {
            Comp::S(a) => Comp::S(self.em.op(&format!("arith.addi {a}, {kc} : {}", self.ity))),
            Comp::L(b, s) => Comp::L(self.em.op(&format!("arith.addi {b}, {kc} : {}", self.ity)), *s),
            Comp::V(v) => {
                let ks = self.splat(&kc, "index");
                Comp::V(self.em.op(&format!("arith.addi {v}, {ks} : vector<{}xindex>", self.w)))
            }
        }
    }
    fn mul_c(&mut self, c: &Comp, k: i64) -> Comp {
        if k == 1 {
            return c.clone();
        }
        let kc = self.ci(k);
        match c {
            Comp::S(a) => Comp::S(self.em.op(&format!("arith.muli {a}, {kc} : {}", self.ity))),
            Comp::L(b, s) => Comp::L(self.em.op(&format!("arith.muli {b}, {kc} : {}", self.ity)), s * k),
            Comp::V(v) => {
                let ks = self.splat(&kc, "index");
                Comp::V(self.em.op(&format!("arith.muli {v}, {ks} : vector<{}xindex>", self.w)))
            }
        }
    }
    fn add(&mut self, a: &Comp, b: &Comp) -> Comp {
        match (a, b) {
            (Comp::S(x), Comp::S(y)) => Comp::S(self.em.op(&format!("arith.addi {x}, {y} : {}", self.ity))),
            (Comp::S(x), Comp::L(y, s)) | (Comp::L(y, s), Comp::S(x)) => Comp::L(self.em.op(&format!("arith.addi {x}, {y} : index")), *s),
            (Comp::L(x, s), Comp::L(y, t)) if s + t != 0 => Comp::L(self.em.op(&format!("arith.addi {x}, {y} : index")), s + t),
            _ => {
                let (va, vb) = (self.vec_of(a), self.vec_of(b));
                Comp::V(self.em.op(&format!("arith.addi {va}, {vb} : vector<{}xindex>", self.w)))
            }
        }
    }
    /// `c / k` and `c % k` (non-negative indices).
    fn divrem_c(&mut self, c: &Comp, k: i64) -> (Comp, Comp) {
        let kc = self.ci(k);
        match c {
            Comp::S(a) => (
                Comp::S(self.em.op(&format!("arith.divui {a}, {kc} : {}", self.ity))),
                Comp::S(self.em.op(&format!("arith.remui {a}, {kc} : {}", self.ity))),
            ),
            _ => {
                let v = self.vec_of(c);
                let ks = self.splat(&kc, "index");
                let t = format!("vector<{}xindex>", self.w);
                (Comp::V(self.em.op(&format!("arith.divui {v}, {ks} : {t}"))), Comp::V(self.em.op(&format!("arith.remui {v}, {ks} : {t}"))))
            }
        }
    }
    /// Row-major flat index of `idx` in `shape`.
    pub fn linearize(&mut self, idx: &[Comp], shape: &[u64]) -> Comp {
        if idx.is_empty() {
            return Comp::S(self.ci(0));
        }
        let mut acc = idx[idx.len() - 1].clone();
        let mut stride = 1i64;
        for d in (0..idx.len() - 1).rev() {
            stride *= shape[d + 1] as i64;
            let t = self.mul_c(&idx[d], stride);
            acc = self.add(&t, &acc);
        }
        acc
    }
    /// Row-major multi-index of flat `c` in `shape`.
    pub fn delinearize(&mut self, c: &Comp, shape: &[u64]) -> Vec<Comp> {
        let r = shape.len();
        if r == 0 {
            return Vec::new();
        }
        let mut out = vec![Comp::S(String::new()); r];
        let mut cur = c.clone();
        for d in (1..r).rev() {
            if shape[d] == 1 {
                out[d] = Comp::S(self.ci(0));
                continue;
            }
            let (q, rem) = self.divrem_c(&cur, shape[d] as i64);
            out[d] = rem;
            cur = q;
        }
        out[0] = cur;
        out
    }
    /// The reshape index map: the operand index of result index `idx`.
    /// Keeps the innermost component when both shapes end in the same
    /// extent (the common case: only the outer dims are regrouped).
    fn reshape_index(&mut self, idx: &[Comp], out: &[u64], inp: &[u64]) -> Vec<Comp> {
        if self.w > 1
            && !out.is_empty()
            && !inp.is_empty()
            && out.last() == inp.last()
            && idx[..idx.len() - 1].iter().all(|c| matches!(c, Comp::S(_)))
        {
            let outer = self.linearize(&idx[..idx.len() - 1], &out[..out.len() - 1]);
            let mut res = self.delinearize(&outer, &inp[..inp.len() - 1]);
            res.push(idx[idx.len() - 1].clone());
            return res;
        }
        let flat = self.linearize(idx, out);
        self.delinearize(&flat, inp)
    }

    // ---- memory ----

    /// A scalar index of type `ity` as an `index` (for memref accesses).
    pub fn as_index(&mut self, a: &str) -> String {
        if self.ity == "index" { a.to_string() } else { self.em.op(&format!("arith.index_castui {a} : {} to index", self.ity)) }
    }

    /// Loads kernel parameter `p` at `idx` (as its register type).
    fn load(&mut self, p: usize, idx: &[Comp]) -> String {
        let ty = self.k.ty(self.k.params[p].value);
        let (shape, dt) = (ty.shape.clone(), ty.dtype);
        let n: u64 = shape.iter().product();
        let m = self.mems[p].clone();
        let flat = if self.flat && idx.len() == 1 { idx[0].clone() } else { self.linearize(idx, &shape) };
        self.load_typed(&m, n, dt, &flat)
    }

    /// Loads from f32 memref `m` (of `n` elements) at flat index `flat`.
    pub fn load_mem(&mut self, m: &str, n: u64, flat: &Comp) -> String {
        self.load_typed(m, n, DType::F32, flat)
    }

    /// Loads from memref `m` of `n` elements of type `dt` (stored as
    /// `mem_elem(dt)`) at flat index `flat`; the value is of the register
    /// type (`reg_elem(dt)`).
    pub fn load_typed(&mut self, m: &str, n: u64, dt: DType, flat: &Comp) -> String {
        let m = m.to_string();
        let flat = flat.clone();
        let e = mem_elem(dt);
        let mt = format!("memref<{n}x{e}>");
        let w = self.w;
        let raw = match &flat {
            Comp::S(a) => {
                let a = self.as_index(a);
                let s = self.em.op(&format!("memref.load {m}[{a}] : {mt}"));
                let s = from_mem(self.em, &s, dt, 1);
                return self.splat(&s, reg_elem(dt));
            }
            Comp::L(b, 1) => self.em.op(&format!("vector.load {m}[{b}] : {mt}, vector<{w}x{e}>")),
            _ => {
                let v = self.vec_of(&flat);
                let c0 = self.ci(0);
                let mask = self.em.op(&format!("arith.constant dense<true> : vector<{w}xi1>"));
                let zl = if dt.is_float() { "0.0" } else { "0" };
                let z = self.em.op(&format!("arith.constant dense<{zl}> : vector<{w}x{e}>"));
                self.em.op(&format!(
                    "vector.gather {m}[{c0}] [{v}], {mask}, {z} : {mt}, vector<{w}xindex>, vector<{w}xi1>, vector<{w}x{e}> into vector<{w}x{e}>"
                ))
            }
        };
        from_mem(self.em, &raw, dt, w)
    }

    /// Stores f32 `val` into memref `m` (of `n` elements) at flat index
    /// `flat` (scalar, or a contiguous run).
    pub fn store(&mut self, m: &str, n: u64, flat: &Comp, val: &str) -> Result<(), Diag> {
        self.store_typed(m, n, DType::F32, flat, val)
    }

    /// Stores register value `val` of type `dt` into memref `m` (`n`
    /// elements stored as `mem_elem(dt)`) at flat index `flat`.
    pub fn store_typed(&mut self, m: &str, n: u64, dt: DType, flat: &Comp, val: &str) -> Result<(), Diag> {
        let e = mem_elem(dt);
        let mt = format!("memref<{n}x{e}>");
        let w = self.w;
        let val = to_mem(self.em, val, dt, w);
        match flat {
            Comp::S(a) if self.w == 1 => {
                let a = self.as_index(a);
                self.em.line(&format!("memref.store {val}, {m}[{a}] : {mt}"))
            }
            Comp::L(b, 1) => self.em.line(&format!("vector.store {val}, {m}[{b}] : {mt}, vector<{w}x{e}>")),
            _ => {
                let v = self.vec_of(flat);
                let c0 = self.ci(0);
                let mask = self.em.op(&format!("arith.constant dense<true> : vector<{w}xi1>"));
                self.em.line(&format!(
                    "vector.scatter {m}[{c0}] [{v}], {mask}, {val} : {mt}, vector<{w}xindex>, vector<{w}xi1>, vector<{w}x{e}>"
                ));
            }
        }
        Ok(())
    }

    // ---- values ----

    /// The value of `v` at `idx` (an index of `v`'s own shape).
    pub fn value(&mut self, v: ValueId, idx: &[Comp]) -> Result<String, Diag> {
        if let Some(s) = self.given.get(&v) {
            return Ok(s.clone());
        }
        let key = format!("{}w{}@{}", v.0, self.w, idx.iter().map(Comp::key).collect::<Vec<_>>().join(","));
        if let Some(s) = self.memo.get(&key) {
            return Ok(s.clone());
        }
        let s = self.compute(v, idx)?;
        self.memo.insert(key, s.clone());
        Ok(s)
    }

    fn compute(&mut self, v: ValueId, idx: &[Comp]) -> Result<String, Diag> {
        use OpKind::*;
        let k = self.k;
        if let Some(p) = k.params.iter().position(|p| p.value == v) {
            return Ok(self.load(p, idx));
        }
        let op = k.body.iter().find(|o| o.result == Some(v)).ok_or_else(|| err(format!("kernel value %{} has no definition", v.0)))?;
        let shape = |x: ValueId| k.ty(x).shape.clone();
        Ok(match op.kind {
            // An integer or i1 fill: the interpreter's `value as i64`, wrapped to the type.
            Fill if !k.ty(v).dtype.is_float() => {
                let x = op.attrs.get("value").and_then(ckopt_ir::Attr::as_f32).unwrap_or(0.0) as i64;
                let dt = k.ty(v).dtype;
                let c = match dt {
                    DType::I32 => i64::from(x as i32).to_string(),
                    DType::I1 => (x != 0).to_string(),
                    _ => x.to_string(),
                };
                let e = reg_elem(dt);
                if self.w == 1 && dt == DType::I1 {
                    self.em.op(&format!("arith.constant {c}"))
                } else if self.w == 1 {
                    self.em.op(&format!("arith.constant {c} : {e}"))
                } else {
                    self.em.op(&format!("arith.constant dense<{c}> : vector<{}x{e}>", self.w))
                }
            }
            Neg | Add | Sub | Mul | Max if !k.ty(v).dtype.is_float() => {
                let xs = op.operands.iter().map(|&o| self.value(o, idx)).collect::<Result<Vec<_>, _>>()?;
                let w = self.w;
                int_formula(self.em, w, op.kind, k.ty(v).dtype, &xs)
                    .map_err(|m| Diag::error(op.loc.clone(), format!("'{}' op: {m}", op.kind.full_name())))?
            }
            Neg | Exp | Log | Tanh | Sqrt | Rsqrt | Erf | Sigmoid | Relu | Scale | Add | Sub | Mul | Div | Max | ReluGrad | Fill => {
                let xs = op.operands.iter().map(|&o| self.value(o, idx)).collect::<Result<Vec<_>, _>>()?;
                let y = elementwise::formula(self, op, &xs)?;
                let w = self.w;
                round_reg(self.em, &y, k.ty(v).dtype, w)
            }
            Eq | Ne | Lt | Le | Gt | Ge | And | Or | Not | Select | Cast => {
                let xs = op.operands.iter().map(|&o| self.value(o, idx)).collect::<Result<Vec<_>, _>>()?;
                let dts: Vec<DType> = op.operands.iter().map(|&o| k.ty(o).dtype).collect();
                let w = self.w;
                mixed_formula(self.em, w, op.kind, &dts, k.ty(v).dtype, &xs)
                    .map_err(|m| Diag::error(op.loc.clone(), format!("'{}' op: {m}", op.kind.full_name())))?
            }
            Iota => {
                let d = op.int_attr("dim").unwrap_or(0).max(0) as usize;
                let c = idx.get(d).cloned().ok_or_else(|| err("iota: dim out of range"))?;
                let w = self.w;
                let iv = match &c {
                    Comp::S(a) => {
                        let a = self.as_index(a);
                        let s = self.em.op(&format!("arith.index_cast {a} : index to i64"));
                        self.splat(&s, "i64")
                    }
                    _ => {
                        let vv = self.vec_of(&c);
                        self.em.op(&format!("arith.index_cast {vv} : vector<{w}xindex> to vector<{w}xi64>"))
                    }
                };
                mixed_formula(self.em, w, Cast, &[DType::I64], k.ty(v).dtype, &[iv]).map_err(err)?
            }
            Broadcast => {
                let dims = attr_ints(&op.attrs, "dims", &[]);
                let sub: Vec<Comp> = dims.iter().map(|&d| idx[d as usize].clone()).collect();
                self.value(op.operands[0], &sub)?
            }
            Transpose => {
                let perm = attr_ints(&op.attrs, "perm", &[]);
                let mut sub = vec![Comp::S(String::new()); perm.len()];
                for (i, &p) in perm.iter().enumerate() {
                    sub[p as usize] = idx[i].clone();
                }
                self.value(op.operands[0], &sub)?
            }
            Slice => {
                let offs = attr_ints(&op.attrs, "offsets", &[]);
                let sub: Vec<Comp> = idx.iter().zip(&offs).map(|(c, &o)| self.add_c(c, o)).collect();
                self.value(op.operands[0], &sub)?
            }
            Reshape if self.flat => self.value(op.operands[0], idx)?,
            Reshape => {
                let sub = self.reshape_index(idx, &shape(v), &shape(op.operands[0]));
                self.value(op.operands[0], &sub)?
            }
            Dropout => {
                let y = self.dropout(op, idx)?;
                let w = self.w;
                round_reg(self.em, &y, k.ty(v).dtype, w)
            }
            ReduceSum | ReduceMax => {
                return Err(err("a reduction's value is only available in its epilogue (driver error)"));
            }
            other => {
                return Err(err(format!("'{}' cannot be evaluated element by element in a fused kernel", other.full_name())));
            }
        })
    }

    /// Dropout (`elementwise::dropout`) at `idx`: the mask of the operand's
    /// flat index, the key mixed with the step key operand's value if any.
    fn dropout(&mut self, op: &ckopt_ir::Op, idx: &[Comp]) -> Result<String, Diag> {
        let xv = self.value(op.operands[0], idx)?;
        let shape = self.k.ty(op.operands[0]).shape.clone();
        let flat = self.linearize(idx, &shape);
        // The per-op key, a scalar: constant, or mixed with the step key's bits at run time.
        let key = {
            let w = self.w;
            self.w = 1;
            let r = match op.operands.get(1) {
                None => elementwise::dropout_key_value(self, op, None),
                Some(&s) => self.value(s, &[]).and_then(|sv| elementwise::dropout_key_value(self, op, Some(&sv))),
            };
            self.w = w;
            r?
        };
        let it = self.vty("i64");
        let index_i64 = match &flat {
            Comp::S(a) => {
                let s = if self.ity == "index" {
                    self.em.op(&format!("arith.index_cast {a} : index to i64"))
                } else {
                    self.em.op(&format!("arith.extui {a} : {} to i64", self.ity))
                };
                self.splat(&s, "i64")
            }
            _ => {
                let v = self.vec_of(&flat);
                self.em.op(&format!("arith.index_cast {v} : vector<{}xindex> to {it}", self.w))
            }
        };
        let keyv = self.splat(&key, "i64");
        elementwise::dropout(self, op, &xv, &index_i64, &keyv)
    }

    /// Forgets memoized values (a new loop body scope).
    pub fn reset(&mut self) {
        self.memo.clear();
    }
}

/// Integer `neg`, `add`, `sub`, `mul`, `max` on i64/i32 with `w` lanes:
/// two's-complement wrapping in the type (the interpreter's `wrapping_*`
/// then wrapped to the type), `max` signed.
pub fn int_formula(em: &mut Em, w: usize, kind: OpKind, dt: DType, xs: &[String]) -> Result<String, String> {
    let t = lanes_of(w, reg_elem(dt));
    let x = |i: usize| xs.get(i).cloned().ok_or_else(|| format!("operand {i} is missing"));
    Ok(match kind {
        OpKind::Neg => {
            let z = if w == 1 { em.op(&format!("arith.constant 0 : {t}")) } else { em.op(&format!("arith.constant dense<0> : {t}")) };
            em.op(&format!("arith.subi {z}, {} : {t}", x(0)?))
        }
        OpKind::Add => em.op(&format!("arith.addi {}, {} : {t}", x(0)?, x(1)?)),
        OpKind::Sub => em.op(&format!("arith.subi {}, {} : {t}", x(0)?, x(1)?)),
        OpKind::Mul => em.op(&format!("arith.muli {}, {} : {t}", x(0)?, x(1)?)),
        OpKind::Max => em.op(&format!("arith.maxsi {}, {} : {t}", x(0)?, x(1)?)),
        other => return Err(format!("'{}' has no integer semantics for {}", other.full_name(), dt.name())),
    })
}

/// The value of a comparison, logic op, `select` or `cast` with `w` lanes
/// from its operand values `xs` (register types, `reg_elem`) of element
/// types `dts`, giving a value of element type `out`: the interpreter's
/// definitions (`ckopt_interp` mixed ops): float comparisons are ordered
/// except `ne` (true on NaN), `i1` compares as unsigned; a float to integer
/// cast truncates toward zero, saturates and maps NaN to 0 (Rust's `as`), to
/// `i1` is `x != 0` (NaN gives 1); integer to integer wraps (to `i1`:
/// `x != 0`); integer to float goes through f32, then rounds to nearest even.
pub fn mixed_formula(em: &mut Em, w: usize, kind: OpKind, dts: &[DType], out: DType, xs: &[String]) -> Result<String, String> {
    use OpKind::*;
    let x = |i: usize| xs.get(i).cloned().ok_or_else(|| format!("operand {i} is missing"));
    let dt0 = dts.first().copied().ok_or("no operands")?;
    let t = |e: &str| lanes_of(w, e);
    let splat_c = |em: &mut Em, lit: &str, e: &str| -> String {
        if w == 1 {
            em.op(&format!("arith.constant {lit} : {e}"))
        } else {
            em.op(&format!("arith.constant dense<{lit}> : vector<{w}x{e}>"))
        }
    };
    Ok(match kind {
        Eq | Ne | Lt | Le | Gt | Ge => {
            let (a, b) = (x(0)?, x(1)?);
            if dt0.is_float() {
                let p = match kind {
                    Eq => "oeq",
                    Ne => "une",
                    Lt => "olt",
                    Le => "ole",
                    Gt => "ogt",
                    _ => "oge",
                };
                em.op(&format!("arith.cmpf {p}, {a}, {b} : {}", t("f32")))
            } else {
                let u = dt0 == DType::I1;
                let p = match kind {
                    Eq => "eq",
                    Ne => "ne",
                    Lt if u => "ult",
                    Le if u => "ule",
                    Gt if u => "ugt",
                    Ge if u => "uge",
                    Lt => "slt",
                    Le => "sle",
                    Gt => "sgt",
                    _ => "sge",
                };
                em.op(&format!("arith.cmpi {p}, {a}, {b} : {}", t(reg_elem(dt0))))
            }
        }
        And => em.op(&format!("arith.andi {}, {} : {}", x(0)?, x(1)?, t("i1"))),
        Or => em.op(&format!("arith.ori {}, {} : {}", x(0)?, x(1)?, t("i1"))),
        Not => {
            let one = if w == 1 { em.op("arith.constant true") } else { splat_c(em, "true", "i1") };
            em.op(&format!("arith.xori {}, {one} : {}", x(0)?, t("i1")))
        }
        Select => {
            let (c, a, b) = (x(0)?, x(1)?, x(2)?);
            let vt = t(reg_elem(out));
            if w == 1 {
                em.op(&format!("arith.select {c}, {a}, {b} : {vt}"))
            } else {
                em.op(&format!("arith.select {c}, {a}, {b} : {}, {vt}", t("i1")))
            }
        }
        Cast => {
            let a = x(0)?;
            let (ri, ro) = (reg_elem(dt0), reg_elem(out));
            match (dt0.is_float(), out.is_float()) {
                (true, true) => round_reg(em, &a, out, w),
                (false, true) => {
                    let op = if dt0 == DType::I1 { "uitofp" } else { "sitofp" };
                    let f = em.op(&format!("arith.{op} {a} : {} to {}", t(ri), t("f32")));
                    round_reg(em, &f, out, w)
                }
                (true, false) if out == DType::I1 => {
                    let z = splat_c(em, "0.0", "f32");
                    em.op(&format!("arith.cmpf une, {a}, {z} : {}", t("f32")))
                }
                (true, false) => {
                    let (hi, lo, max, min) = if out == DType::I32 {
                        ("2147483648.0", "-2147483648.0", i64::from(i32::MAX), i64::from(i32::MIN))
                    } else {
                        ("9223372036854775808.0", "-9223372036854775808.0", i64::MAX, i64::MIN)
                    };
                    let r = em.op(&format!("arith.fptosi {a} : {} to {}", t("f32"), t(ro)));
                    let chi = splat_c(em, hi, "f32");
                    let clo = splat_c(em, lo, "f32");
                    let kmax = splat_c(em, &max.to_string(), ro);
                    let kmin = splat_c(em, &min.to_string(), ro);
                    let k0 = splat_c(em, "0", ro);
                    let sel = |em: &mut Em, c: &str, a: &str, b: &str| {
                        if w == 1 {
                            em.op(&format!("arith.select {c}, {a}, {b} : {ro}"))
                        } else {
                            em.op(&format!("arith.select {c}, {a}, {b} : {}, {}", t("i1"), t(ro)))
                        }
                    };
                    let big = em.op(&format!("arith.cmpf oge, {a}, {chi} : {}", t("f32")));
                    let r = sel(em, &big, &kmax, &r);
                    let small = em.op(&format!("arith.cmpf olt, {a}, {clo} : {}", t("f32")));
                    let r = sel(em, &small, &kmin, &r);
                    let nan = em.op(&format!("arith.cmpf uno, {a}, {a} : {}", t("f32")));
                    sel(em, &nan, &k0, &r)
                }
                (false, false) => {
                    if dt0 == out {
                        a
                    } else if out == DType::I1 {
                        let z = splat_c(em, "0", ri);
                        em.op(&format!("arith.cmpi ne, {a}, {z} : {}", t(ri)))
                    } else if dt0 == DType::I1 {
                        em.op(&format!("arith.extui {a} : {} to {}", t(ri), t(ro)))
                    } else if dt0 == DType::I64 {
                        em.op(&format!("arith.trunci {a} : {} to {}", t(ri), t(ro)))
                    } else {
                        em.op(&format!("arith.extsi {a} : {} to {}", t(ri), t(ro)))
                    }
                }
            }
        }
        other => {
            return Err(format!("'{}' is not a mixed elementwise op", other.full_name()));
        }
    })
}

impl Lanes for VEm<'_> {
    fn em(&mut self) -> &mut Em {
        self.em
    }
    fn lanes(&self) -> usize {
        self.w
    }
    fn cf(&mut self, v: f32) -> String {
        VEm::cf(self, v)
    }
    fn ci64(&mut self, v: u64) -> String {
        VEm::ci64(self, v)
    }
}
