//! A thin typed builder over `ckopt_ir::Func` plus the building blocks the
//! models share: linear layers with broadcast bias, LayerNorm, softmax, and
//! the two losses (mean squared error, softmax cross-entropy).
//!
//! Every helper goes through `Func::push`, so each op's result type comes from
//! the op table's `infer_type` (the one shape rule): a model that builds is
//! well typed by construction. Shape arithmetic done here uses checked
//! multiplication, and argument types are checked to have a byte size that
//! fits in u64, so huge options give an `Err`, never a panic or an overflow.
//!
//! Everything is built from `ck` primitives only (no composite ops), in
//! schedule order. Value names are readable hints (`h3`, `w3`); the printer
//! makes them unique.
//!
//! Complexity: O(1) per op built (plus the op's operand/shape sizes).

use crate::BuildError;
use ckopt_ir::{Attr, Attrs, DType, Func, Loc, OpKind, TensorType, ValueId, attrs};

/// `a * b` or an error naming what overflowed.
pub(crate) fn mul(a: u64, b: u64, what: &'static str) -> Result<u64, BuildError> {
    a.checked_mul(b).ok_or(BuildError::Overflow { what, a, b })
}

/// Builds one function op by op.
pub(crate) struct Builder {
    pub f: Func,
}

fn ints(v: &[u64]) -> Result<Attr, BuildError> {
    v.iter()
        .map(|&d| i64::try_from(d).map_err(|_| BuildError::IndexTooLarge(d)))
        .collect::<Result<Vec<i64>, BuildError>>()
        .map(Attr::IntArray)
}

impl Builder {
    pub fn new(name: &str) -> Self {
        Builder { f: Func::new(name, Loc::unknown()) }
    }

    /// Adds an argument (`param` marks it `{ck.param}`); its size must fit in u64 bytes.
    pub fn arg(&mut self, name: &str, shape: &[u64], param: bool) -> Result<ValueId, BuildError> {
        let ty = TensorType::f32(shape.to_vec());
        if ty.byte_size().is_none() {
            return Err(BuildError::ArgTooLarge { name: name.to_string(), ty });
        }
        Ok(self.f.add_param(name, ty, param))
    }

    /// An argument of any element type (token ids, labels).
    pub fn arg_typed(&mut self, name: &str, shape: &[u64], dtype: DType, param: bool) -> Result<ValueId, BuildError> {
        let ty = TensorType::new(shape.to_vec(), dtype);
        if ty.byte_size().is_none() {
            return Err(BuildError::ArgTooLarge { name: name.to_string(), ty });
        }
        Ok(self.f.add_param(name, ty, param))
    }

    /// Any op with a fully declared result type (or none, inferred).
    pub fn op_typed(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        attrs: Attrs,
        declared: Option<TensorType>,
        name: &str,
    ) -> Result<ValueId, BuildError> {
        self.f.push(kind, operands, attrs, declared, name, Loc::unknown()).map_err(BuildError::Ir)
    }

    /// Reshape keeping the operand's element type.
    pub fn reshape_typed(&mut self, x: ValueId, shape: &[u64], name: &str) -> Result<ValueId, BuildError> {
        let ty = TensorType::new(shape.to_vec(), self.f.ty(x).dtype);
        self.op_typed(OpKind::Reshape, &[x], Attrs::new(), Some(ty), name)
    }

    /// GELU, the erf form (PyTorch's default): `0.5·x·(1 + erf(x/sqrt 2))`
    /// from scale, erf, fill, add, mul. Names `gelu{tag}_*`, `gelu{tag}`.
    pub fn gelu(&mut self, x: ValueId, tag: &str) -> Result<ValueId, BuildError> {
        let shape = self.shape(x);
        let xs = self.scale(x, std::f32::consts::FRAC_1_SQRT_2, &format!("gelu{tag}_xs"))?;
        let e = self.unary(OpKind::Erf, xs, &format!("gelu{tag}_erf"))?;
        let one = self.fill(&shape, 1.0, &format!("gelu{tag}_one"))?;
        let e1 = self.binary(OpKind::Add, e, one, &format!("gelu{tag}_1p"))?;
        let hx = self.scale(x, 0.5, &format!("gelu{tag}_half"))?;
        self.binary(OpKind::Mul, hx, e1, &format!("gelu{tag}"))
    }

    pub fn shape(&self, v: ValueId) -> Vec<u64> {
        self.f.ty(v).shape.clone()
    }

    fn op(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        attrs: Attrs,
        declared: Option<Vec<u64>>,
        name: &str,
    ) -> Result<ValueId, BuildError> {
        self.f
            .push(kind, operands, attrs, declared.map(TensorType::f32), name, Loc::unknown())
            .map_err(BuildError::Ir)
    }

    /// Elementwise unary op (`relu`, `exp`, `tanh`, ...).
    pub fn unary(&mut self, kind: OpKind, x: ValueId, name: &str) -> Result<ValueId, BuildError> {
        self.op(kind, &[x], Attrs::new(), None, name)
    }

    /// Elementwise binary op (`add`, `sub`, `mul`, `div`, ...).
    pub fn binary(&mut self, kind: OpKind, a: ValueId, b: ValueId, name: &str) -> Result<ValueId, BuildError> {
        self.op(kind, &[a, b], Attrs::new(), None, name)
    }

    pub fn scale(&mut self, x: ValueId, value: f32, name: &str) -> Result<ValueId, BuildError> {
        self.op(OpKind::Scale, &[x], attrs([("value", Attr::F32(value))]), None, name)
    }

    pub fn fill(&mut self, shape: &[u64], value: f32, name: &str) -> Result<ValueId, BuildError> {
        self.op(OpKind::Fill, &[], attrs([("value", Attr::F32(value))]), Some(shape.to_vec()), name)
    }

    /// `ck.matmul`; `tb` sets `transpose_b = true`.
    pub fn matmul(&mut self, a: ValueId, b: ValueId, tb: bool, name: &str) -> Result<ValueId, BuildError> {
        let at = if tb { attrs([("transpose_b", Attr::Bool(true))]) } else { Attrs::new() };
        self.op(OpKind::Matmul, &[a, b], at, None, name)
    }

    /// Input dim i becomes result dim `dims[i]` of `shape`.
    pub fn broadcast(&mut self, x: ValueId, dims: &[u64], shape: &[u64], name: &str) -> Result<ValueId, BuildError> {
        self.op(OpKind::Broadcast, &[x], attrs([("dims", ints(dims)?)]), Some(shape.to_vec()), name)
    }

    pub fn reduce(&mut self, kind: OpKind, x: ValueId, dims: &[u64], name: &str) -> Result<ValueId, BuildError> {
        self.op(kind, &[x], attrs([("dims", ints(dims)?)]), None, name)
    }

    pub fn transpose(&mut self, x: ValueId, perm: &[u64], name: &str) -> Result<ValueId, BuildError> {
        self.op(OpKind::Transpose, &[x], attrs([("perm", ints(perm)?)]), None, name)
    }

    pub fn reshape(&mut self, x: ValueId, shape: &[u64], name: &str) -> Result<ValueId, BuildError> {
        self.op(OpKind::Reshape, &[x], Attrs::new(), Some(shape.to_vec()), name)
    }

    pub fn slice(&mut self, x: ValueId, offsets: &[u64], shape: &[u64], name: &str) -> Result<ValueId, BuildError> {
        self.op(OpKind::Slice, &[x], attrs([("offsets", ints(offsets)?)]), Some(shape.to_vec()), name)
    }

    /// `ck.conv2d` with the given stride and symmetric padding.
    pub fn conv2d(&mut self, x: ValueId, w: ValueId, stride: u64, pad: u64, name: &str) -> Result<ValueId, BuildError> {
        let at = attrs([("stride", ints(&[stride, stride])?), ("padding", ints(&[pad, pad])?)]);
        self.op(OpKind::Conv2d, &[x, w], at, None, name)
    }

    /// `ck.max_pool2d` / `ck.avg_pool2d` with a square window and stride.
    pub fn pool(&mut self, kind: OpKind, x: ValueId, window: u64, stride: u64, name: &str) -> Result<ValueId, BuildError> {
        let at = attrs([("window", ints(&[window, window])?), ("stride", ints(&[stride, stride])?)]);
        self.op(kind, &[x], at, None, name)
    }

    /// `x · w + broadcast(b)` for `x: [R, K]`, `w: [K, N]`, `b: [N]`: three
    /// values (matmul, broadcast bias, add). Names `mm{tag}`, `bias{tag}`, `z{tag}`.
    pub fn linear(&mut self, x: ValueId, w: ValueId, b: ValueId, tag: &str) -> Result<ValueId, BuildError> {
        let mm = self.matmul(x, w, false, &format!("mm{tag}"))?;
        let shape = self.shape(mm);
        let bb = self.broadcast(b, &[1], &shape, &format!("bias{tag}"))?;
        self.binary(OpKind::Add, mm, bb, &format!("z{tag}"))
    }

    /// LayerNorm over the last dim of `x: [R, W]`, no affine parameters:
    /// `(x - mean) * rsqrt(var + 1e-5)` with the biased variance (as PyTorch
    /// and the JAX anchor). Built from reduce_sum, scale, broadcast, sub, mul,
    /// fill, add, rsqrt.
    pub fn layer_norm(&mut self, x: ValueId, tag: &str) -> Result<ValueId, BuildError> {
        let shape = self.shape(x);
        let (r, w) = match shape.as_slice() {
            [r, w] => (*r, *w),
            _ => return Err(BuildError::BadRank { what: "layer_norm expects a rank-2 input", ty: self.f.ty(x).clone() }),
        };
        let inv_w = 1.0 / w as f32;
        let s = self.reduce(OpKind::ReduceSum, x, &[1], &format!("ln{tag}_sum"))?;
        let mean = self.scale(s, inv_w, &format!("ln{tag}_mean"))?;
        let mb = self.broadcast(mean, &[0], &shape, &format!("ln{tag}_meanb"))?;
        let c = self.binary(OpKind::Sub, x, mb, &format!("ln{tag}_c"))?;
        let c2 = self.binary(OpKind::Mul, c, c, &format!("ln{tag}_c2"))?;
        let vs = self.reduce(OpKind::ReduceSum, c2, &[1], &format!("ln{tag}_vsum"))?;
        let var = self.scale(vs, inv_w, &format!("ln{tag}_var"))?;
        let eps = self.fill(&[r], 1e-5, &format!("ln{tag}_eps"))?;
        let ve = self.binary(OpKind::Add, var, eps, &format!("ln{tag}_vareps"))?;
        let rs = self.unary(OpKind::Rsqrt, ve, &format!("ln{tag}_rstd"))?;
        let rb = self.broadcast(rs, &[0], &shape, &format!("ln{tag}_rstdb"))?;
        self.binary(OpKind::Mul, c, rb, &format!("ln{tag}"))
    }

    /// Softmax over the last dim of `x` (any rank >= 1), numerically stable:
    /// `exp(x - max) / sum(exp(x - max))` from reduce_max, broadcast, sub,
    /// exp, reduce_sum, div.
    pub fn softmax_last(&mut self, x: ValueId, tag: &str) -> Result<ValueId, BuildError> {
        let shape = self.shape(x);
        let r = shape.len() as u64;
        if r == 0 {
            return Err(BuildError::SoftmaxOfScalar);
        }
        let keep: Vec<u64> = (0..r - 1).collect();
        let m = self.reduce(OpKind::ReduceMax, x, &[r - 1], &format!("sm{tag}_max"))?;
        let mb = self.broadcast(m, &keep, &shape, &format!("sm{tag}_maxb"))?;
        let s = self.binary(OpKind::Sub, x, mb, &format!("sm{tag}_shift"))?;
        let e = self.unary(OpKind::Exp, s, &format!("sm{tag}_exp"))?;
        let se = self.reduce(OpKind::ReduceSum, e, &[r - 1], &format!("sm{tag}_sum"))?;
        let sb = self.broadcast(se, &keep, &shape, &format!("sm{tag}_sumb"))?;
        self.binary(OpKind::Div, e, sb, &format!("sm{tag}"))
    }

    /// Mean squared error `sum((y - t)^2) / numel` as a rank-0 tensor.
    pub fn mse(&mut self, y: ValueId, t: ValueId) -> Result<ValueId, BuildError> {
        let n = self.f.ty(y).elems();
        let rank = self.f.ty(y).rank() as u64;
        let d = self.binary(OpKind::Sub, y, t, "diff")?;
        let sq = self.binary(OpKind::Mul, d, d, "sq")?;
        let all: Vec<u64> = (0..rank).collect();
        let s = self.reduce(OpKind::ReduceSum, sq, &all, "sqsum")?;
        self.scale(s, 1.0 / n as f32, "loss")
    }

    /// Softmax cross-entropy of `logits: [B, K]` against a one-hot (or any
    /// probability) `target: [B, K]`, averaged over the batch:
    /// `-sum(t * (z - max - log(sum(exp(z - max))))) / B`, rank 0.
    pub fn softmax_cross_entropy(&mut self, logits: ValueId, target: ValueId) -> Result<ValueId, BuildError> {
        let shape = self.shape(logits);
        let b = match shape.as_slice() {
            [b, _] => *b,
            _ => {
                return Err(BuildError::BadRank {
                    what: "cross-entropy expects rank-2 logits",
                    ty: self.f.ty(logits).clone(),
                });
            }
        };
        let m = self.reduce(OpKind::ReduceMax, logits, &[1], "ce_max")?;
        let mb = self.broadcast(m, &[0], &shape, "ce_maxb")?;
        let s = self.binary(OpKind::Sub, logits, mb, "ce_shift")?;
        let e = self.unary(OpKind::Exp, s, "ce_exp")?;
        let se = self.reduce(OpKind::ReduceSum, e, &[1], "ce_sumexp")?;
        let lse = self.unary(OpKind::Log, se, "ce_lse")?;
        let lb = self.broadcast(lse, &[0], &shape, "ce_lseb")?;
        let logp = self.binary(OpKind::Sub, s, lb, "logp")?;
        let tl = self.binary(OpKind::Mul, target, logp, "tlogp")?;
        let tot = self.reduce(OpKind::ReduceSum, tl, &[0, 1], "tlogp_sum")?;
        self.scale(tot, -1.0 / b as f32, "loss")
    }

    /// Ends the function returning `loss` (a rank-0 tensor).
    pub fn finish(mut self, loss: ValueId) -> Result<Func, BuildError> {
        if self.f.ty(loss).rank() != 0 {
            return Err(BuildError::LossNotScalar(self.f.ty(loss).clone()));
        }
        self.f.push_return(&[loss], Loc::unknown());
        Ok(self.f)
    }
}
