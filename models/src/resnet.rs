//! `resnet`: a small residual convolutional classifier (NCHW).
//!
//!   h = max_pool2d(relu(conv2d(%x, %w_stem)), window 2, stride 2)   3 -> C channels
//!   depth blocks: h = relu(h + conv2d(relu(conv2d(h, %w{i}a)), %w{i}b))
//!   p = avg_pool2d(h) over the whole map; logits = reshape(p)·%w_fc + %b_fc
//!   loss = softmax cross-entropy(logits, %target one-hot), batch mean.
//! All convs are 3x3, stride 1, padding 1, without bias; there is no batch
//! norm (no such primitive; the benchmark is about memory, not accuracy).
//!
//! Complexity: O(depth) ops.

use crate::{BuildError, Sizes};
use crate::builder::Builder;
use ckopt_ir::{Func, OpKind};

/// Input channels of `%x` (RGB).
pub(crate) const IN_CHANNELS: u64 = 3;

pub(crate) fn resnet(s: &Sizes) -> Result<Func, BuildError> {
    let (b, c, img, k) = (s.batch, s.channels, s.image, s.classes);
    let mut g = Builder::new("resnet");
    let x = g.arg("x", &[b, IN_CHANNELS, img, img], false)?;
    let t = g.arg("target", &[b, k], false)?;
    let w_stem = g.arg("w_stem", &[c, IN_CHANNELS, 3, 3], true)?;
    let mut blocks = Vec::with_capacity(s.depth as usize);
    for i in 0..s.depth {
        let wa = g.arg(&format!("w{i}a"), &[c, c, 3, 3], true)?;
        let wb = g.arg(&format!("w{i}b"), &[c, c, 3, 3], true)?;
        blocks.push((wa, wb));
    }
    let w_fc = g.arg("w_fc", &[c, k], true)?;
    let b_fc = g.arg("b_fc", &[k], true)?;

    let s0 = g.conv2d(x, w_stem, 1, 1, "stem")?;
    let s1 = g.unary(OpKind::Relu, s0, "stem_relu")?;
    let mut h = g.pool(OpKind::MaxPool2d, s1, 2, 2, "stem_pool")?;
    for (i, &(wa, wb)) in blocks.iter().enumerate() {
        let ca = g.conv2d(h, wa, 1, 1, &format!("conv{i}a"))?;
        let ra = g.unary(OpKind::Relu, ca, &format!("r{i}"))?;
        let cb = g.conv2d(ra, wb, 1, 1, &format!("conv{i}b"))?;
        let sum = g.binary(OpKind::Add, h, cb, &format!("res{i}"))?;
        h = g.unary(OpKind::Relu, sum, &format!("h{i}"))?;
    }
    let side = g.shape(h).get(2).copied().ok_or(BuildError::PooledMapNotRank4)?;
    let p = g.pool(OpKind::AvgPool2d, h, side, side, "gap")?;
    let flat = g.reshape(p, &[b, c], "features")?;
    let logits = g.linear(flat, w_fc, b_fc, "_fc")?;
    let loss = g.softmax_cross_entropy(logits, t)?;
    g.finish(loss)
}
