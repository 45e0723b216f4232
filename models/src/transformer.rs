//! `transformer`: `depth` pre-LayerNorm encoder layers (no mask, no dropout).
//!
//! Activations are kept as rows `[B·S, W]` (so projections are rank-2
//! matmuls); attention reshapes to `[B·H, S, D]` (D = W/H) so the score and
//! context products are rank-3 batched matmuls with equal batch dims:
//!   n = LN(h); q, k, v = n·Wq, n·Wk, n·Wv
//!   split(t) = reshape(transpose(reshape(t, [B,S,H,D]), [0,2,1,3]), [B·H,S,D])
//!   p = softmax(scale(matmul(split q, split k, transpose_b), 1/sqrt D))
//!   ctx = merge(matmul(p, split v)) (the inverse of split); h = h + ctx·Wo
//!   h = h + (relu(LN(h)·W1 + b1)·W2 + b2), MLP width 4·W
//! Loss: MSE of reshape(h, [B, S, W]) against %target.
//!
//! Complexity: O(depth) ops.

use crate::{BuildError, Sizes};
use crate::builder::{Builder, mul};
use ckopt_ir::{Attr, Attrs, DType, Func, OpKind, TensorType, ValueId, attrs};

pub(crate) fn transformer(s: &Sizes) -> Result<Func, BuildError> {
    let dm = Dims::of(s)?;
    let (b, sq, w) = (dm.b, dm.sq, dm.w);
    let mut g = Builder::new("transformer");
    let x = g.arg("x", &[b, sq, w], false)?;
    let t = g.arg("target", &[b, sq, w], false)?;
    let layers = layer_params(&mut g, s.depth, w, dm.w4)?;
    let mut h = g.reshape(x, &[dm.rows, w], "h_in")?;
    for (l, p) in layers.iter().enumerate() {
        h = block(&mut g, h, p, l, &dm, Block { causal: false, gelu: false })?;
    }
    let y = g.reshape(h, &[b, sq, w], "y")?;
    let loss = g.mse(y, t)?;
    g.finish(loss)
}

/// The sizes of a transformer-like model (`transformer`, `gpt`).
pub(crate) struct Dims {
    pub b: u64,
    pub sq: u64,
    pub w: u64,
    pub nh: u64,
    pub d: u64,
    pub w4: u64,
    pub rows: u64,
    pub bh: u64,
}

impl Dims {
    pub fn of(s: &Sizes) -> Result<Dims, BuildError> {
        let (b, sq, w, nh) = (s.batch, s.seq, s.width, s.heads);
        if nh == 0 || w % nh != 0 {
            return Err(BuildError::HeadsNotDividingWidth { heads: nh, width: w });
        }
        Ok(Dims {
            b,
            sq,
            w,
            nh,
            d: w / nh,
            w4: mul(4, w, "4·width")?,
            rows: mul(b, sq, "batch·seq")?,
            bh: mul(b, nh, "batch·heads")?,
        })
    }
}

/// How a block differs between the models: a causal mask on the scores
/// (gpt) and the MLP's activation (GELU for gpt, relu for transformer).
#[derive(Clone, Copy)]
pub(crate) struct Block {
    pub causal: bool,
    pub gelu: bool,
}

/// One pre-LayerNorm block on rows `h` `[B·S, W]` (module docs): attention
/// (with the causal mask `select(iota_row >= iota_col, scores, -inf)` when
/// asked), then the 4·W MLP, each with its residual.
pub(crate) fn block(g: &mut Builder, h: ValueId, p: &Layer, l: usize, dm: &Dims, kind: Block) -> Result<ValueId, BuildError> {
    let (b, sq, nh, d, bh) = (dm.b, dm.sq, dm.nh, dm.d, dm.bh);
    let n = g.layer_norm(h, &format!("{l}a"))?;
    let q = g.matmul(n, p.wq, false, &format!("q{l}"))?;
    let k = g.matmul(n, p.wk, false, &format!("k{l}"))?;
    let v = g.matmul(n, p.wv, false, &format!("v{l}"))?;
    let split = |g: &mut Builder, t: ValueId, nm: &str| -> Result<ValueId, BuildError> {
        let r4 = g.reshape(t, &[b, sq, nh, d], &format!("{nm}{l}_4d"))?;
        let tr = g.transpose(r4, &[0, 2, 1, 3], &format!("{nm}{l}_t"))?;
        g.reshape(tr, &[bh, sq, d], &format!("{nm}{l}_heads"))
    };
    let qh = split(g, q, "q")?;
    let kh = split(g, k, "k")?;
    let vh = split(g, v, "v")?;
    let sc = g.matmul(qh, kh, true, &format!("scores{l}"))?;
    let mut scs = g.scale(sc, 1.0 / (d as f32).sqrt(), &format!("scaled{l}"))?;
    if kind.causal {
        // Query row i sees key columns j <= i.
        let shape = [bh, sq, sq];
        let it = TensorType::new(shape.to_vec(), DType::I64);
        let row = g.op_typed(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(it.clone()), &format!("row{l}"))?;
        let col = g.op_typed(OpKind::Iota, &[], attrs([("dim", Attr::Int(2))]), Some(it), &format!("col{l}"))?;
        let mask = g.op_typed(OpKind::Ge, &[row, col], Attrs::new(), None, &format!("causal{l}"))?;
        let ninf = g.fill(&shape, f32::NEG_INFINITY, &format!("ninf{l}"))?;
        scs = g.op_typed(OpKind::Select, &[mask, scs, ninf], Attrs::new(), None, &format!("masked{l}"))?;
    }
    let pr = g.softmax_last(scs, &l.to_string())?;
    let ctx = g.matmul(pr, vh, false, &format!("ctx{l}"))?;
    let c4 = g.reshape(ctx, &[b, nh, sq, d], &format!("ctx{l}_4d"))?;
    let ct = g.transpose(c4, &[0, 2, 1, 3], &format!("ctx{l}_t"))?;
    let cm = g.reshape(ct, &[dm.rows, dm.w], &format!("ctx{l}_rows"))?;
    let o = g.matmul(cm, p.wo, false, &format!("attn{l}"))?;
    let h1 = g.binary(OpKind::Add, h, o, &format!("h{l}a"))?;
    let n2 = g.layer_norm(h1, &format!("{l}b"))?;
    let f1 = g.linear(n2, p.w1, p.b1, &format!("{l}_ff1"))?;
    let fa = if kind.gelu { g.gelu(f1, &format!("{l}"))? } else { g.unary(OpKind::Relu, f1, &format!("ff{l}"))? };
    let f2 = g.linear(fa, p.w2, p.b2, &format!("{l}_ff2"))?;
    g.binary(OpKind::Add, h1, f2, &format!("h{l}"))
}

/// One layer's parameters (attention projections, then the 4·W MLP), in
/// argument order; shared with `gpt`.
pub(crate) struct Layer {
    pub wq: ValueId,
    pub wk: ValueId,
    pub wv: ValueId,
    pub wo: ValueId,
    pub w1: ValueId,
    pub b1: ValueId,
    pub w2: ValueId,
    pub b2: ValueId,
}

/// Declares `depth` layers' parameters (`wq{l}`, ..., `b2_{l}`).
pub(crate) fn layer_params(g: &mut Builder, depth: u64, w: u64, w4: u64) -> Result<Vec<Layer>, BuildError> {
    let mut layers = Vec::with_capacity(depth as usize);
    for l in 0..depth {
        layers.push(Layer {
            wq: g.arg(&format!("wq{l}"), &[w, w], true)?,
            wk: g.arg(&format!("wk{l}"), &[w, w], true)?,
            wv: g.arg(&format!("wv{l}"), &[w, w], true)?,
            wo: g.arg(&format!("wo{l}"), &[w, w], true)?,
            w1: g.arg(&format!("w1_{l}"), &[w, w4], true)?,
            b1: g.arg(&format!("b1_{l}"), &[w4], true)?,
            w2: g.arg(&format!("w2_{l}"), &[w4, w], true)?,
            b2: g.arg(&format!("b2_{l}"), &[w], true)?,
        });
    }
    Ok(layers)
}
