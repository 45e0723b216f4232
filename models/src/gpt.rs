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

use crate::builder::Builder;
use crate::transformer::{Block, Dims, block, layer_params};
use crate::{BuildError, Sizes};
use ckopt_ir::{Attr, Attrs, DType, OpKind, TensorType, attrs};

pub(crate) fn gpt(s: &Sizes) -> Result<ckopt_ir::Func, BuildError> {
    let dm = Dims::of(s)?;
    let (b, sq, w, voc, rows) = (dm.b, dm.sq, dm.w, s.vocab, dm.rows);
    let mut g = Builder::new("gpt");
    let ids = g.arg_typed("ids", &[b, sq], DType::I64, false)?;
    let labels = g.arg_typed("labels", &[b, sq], DType::I64, false)?;
    let wte = g.arg("wte", &[voc, w], true)?;
    let wpe = g.arg("wpe", &[sq, w], true)?;
    let layers = layer_params(&mut g, s.depth, w, dm.w4)?;
    // Embeddings: token rows gathered by id, position rows by an iota.
    let idf = g.reshape_typed(ids, &[rows], "ids_flat")?;
    let tok = g.op_typed(OpKind::Gather, &[wte, idf], axis(0), None, "tok")?;
    let pos_ids = g.op_typed(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(TensorType::new(vec![b, sq], DType::I64)), "pos_ids")?;
    let pf = g.reshape_typed(pos_ids, &[rows], "pos_flat")?;
    let pos = g.op_typed(OpKind::Gather, &[wpe, pf], axis(0), None, "pos")?;
    let mut h = g.binary(OpKind::Add, tok, pos, "h_in")?;
    for (l, p) in layers.iter().enumerate() {
        h = block(&mut g, h, p, l, &dm, Block { causal: true, gelu: true })?;
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
