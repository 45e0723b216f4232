//! `gpt`: a decoder-only language model (GPT-2's layout, no dropout, LN
//! without affine parameters, the output head tied to the token embedding).
//!
//! Rows are `[B·S, W]` as in `transformer`; attention reshapes to
//! `[B·H, S, D]` (D = W/H):
//!   h = gather(wte, ids) + gather(wpe, iota positions)
//!   per layer: n = LN(h); q, k, v = n·Wq, n·Wk, n·Wv
//!     s = scale(matmul(split q, split k, transpose_b), 1/sqrt D)
//!     s = select(ge(iota row, iota col), s, fill -inf)      (causal mask)
//!     h = h + merge(matmul(softmax(s), split v))·Wo
//!     h = h + gelu(LN(h)·W1 + b1)·W2 + b2, gelu(x) = 0.5·x·(1 + erf(x/sqrt 2))
//!   logits = LN(h)·wte^T [B·S, V]; loss = cross_entropy(logits, labels)
//! (mean over every position, PyTorch's default ignore_index -100).
//!
//! Complexity: O(depth) ops.

use crate::builder::{Builder, mul};
use crate::{BuildError, Sizes};
use ckopt_ir::{Attr, Attrs, DType, OpKind, TensorType, ValueId, attrs};

pub(crate) fn gpt(s: &Sizes) -> Result<ckopt_ir::Func, BuildError> {
    let (b, sq, w, nh, voc) = (s.batch, s.seq, s.width, s.heads, s.vocab);
    if nh == 0 || w % nh != 0 {
        return Err(BuildError::HeadsNotDividingWidth { heads: nh, width: w });
    }
    let d = w / nh;
    let w4 = mul(4, w, "4·width")?;
    let rows = mul(b, sq, "batch·seq")?;
    let bh = mul(b, nh, "batch·heads")?;
    let mut g = Builder::new("gpt");
    let ids = g.arg_typed("ids", &[b, sq], DType::I64, false)?;
    let labels = g.arg_typed("labels", &[b, sq], DType::I64, false)?;
    let wte = g.arg("wte", &[voc, w], true)?;
    let wpe = g.arg("wpe", &[sq, w], true)?;
    let layers = crate::transformer::layer_params(&mut g, s.depth, w, w4)?;
    // Embeddings: token rows gathered by id, position rows by an iota.
    let idf = g.reshape_typed(ids, &[rows], "ids_flat")?;
    let tok = g.op_typed(OpKind::Gather, &[wte, idf], axis(0), None, "tok")?;
    let pos_ids = g.op_typed(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(TensorType::new(vec![b, sq], DType::I64)), "pos_ids")?;
    let pf = g.reshape_typed(pos_ids, &[rows], "pos_flat")?;
    let pos = g.op_typed(OpKind::Gather, &[wpe, pf], axis(0), None, "pos")?;
    let mut h = g.binary(OpKind::Add, tok, pos, "h_in")?;
    let inv_sqrt_d = 1.0 / (d as f32).sqrt();
    let score_shape = [bh, sq, sq];
    for (l, p) in layers.iter().enumerate() {
        let n = g.layer_norm(h, &format!("{l}a"))?;
        let q = g.matmul(n, p.wq, false, &format!("q{l}"))?;
        let k = g.matmul(n, p.wk, false, &format!("k{l}"))?;
        let v = g.matmul(n, p.wv, false, &format!("v{l}"))?;
        let split = |g: &mut Builder, t: ValueId, nm: &str| -> Result<ValueId, BuildError> {
            let r4 = g.reshape(t, &[b, sq, nh, d], &format!("{nm}{l}_4d"))?;
            let tr = g.transpose(r4, &[0, 2, 1, 3], &format!("{nm}{l}_t"))?;
            g.reshape(tr, &[bh, sq, d], &format!("{nm}{l}_heads"))
        };
        let qh = split(&mut g, q, "q")?;
        let kh = split(&mut g, k, "k")?;
        let vh = split(&mut g, v, "v")?;
        let sc = g.matmul(qh, kh, true, &format!("scores{l}"))?;
        let scs = g.scale(sc, inv_sqrt_d, &format!("scaled{l}"))?;
        // Causal mask: query row i sees key columns j <= i.
        let it = TensorType::new(score_shape.to_vec(), DType::I64);
        let row = g.op_typed(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(it.clone()), &format!("row{l}"))?;
        let col = g.op_typed(OpKind::Iota, &[], attrs([("dim", Attr::Int(2))]), Some(it), &format!("col{l}"))?;
        let mask = g.op_typed(OpKind::Ge, &[row, col], Attrs::new(), None, &format!("causal{l}"))?;
        let ninf = g.fill(&score_shape, f32::NEG_INFINITY, &format!("ninf{l}"))?;
        let masked = g.op_typed(OpKind::Select, &[mask, scs, ninf], Attrs::new(), None, &format!("masked{l}"))?;
        let pr = g.softmax_last(masked, &l.to_string())?;
        let ctx = g.matmul(pr, vh, false, &format!("ctx{l}"))?;
        let c4 = g.reshape(ctx, &[b, nh, sq, d], &format!("ctx{l}_4d"))?;
        let ct = g.transpose(c4, &[0, 2, 1, 3], &format!("ctx{l}_t"))?;
        let cm = g.reshape(ct, &[rows, w], &format!("ctx{l}_rows"))?;
        let o = g.matmul(cm, p.wo, false, &format!("attn{l}"))?;
        let h1 = g.binary(OpKind::Add, h, o, &format!("h{l}a"))?;
        let n2 = g.layer_norm(h1, &format!("{l}b"))?;
        let f1 = g.linear(n2, p.w1, p.b1, &format!("{l}_ff1"))?;
        let fg = g.gelu(f1, &format!("{l}"))?;
        let f2 = g.linear(fg, p.w2, p.b2, &format!("{l}_ff2"))?;
        h = g.binary(OpKind::Add, h1, f2, &format!("h{l}"))?;
    }
    let nf = g.layer_norm(h, "f")?;
    let logits = g.matmul(nf, wte, true, "logits")?;
    let lf = g.reshape_typed(labels, &[rows], "labels_flat")?;
    let loss = g.op_typed(OpKind::CrossEntropy, &[logits, lf], Attrs::new(), None, "loss")?;
    g.finish(loss)
}

fn axis(a: i64) -> Attrs {
    attrs([("axis", Attr::Int(a))])
}
