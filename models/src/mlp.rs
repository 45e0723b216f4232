//! The chain models of the memory benchmarks (BENCHMARKS.md): `mlp` and `resmlp`.
//!
//! mlp, per block i (4 values of one activation unit, batch·width·4 bytes):
//!   %mm{i} = matmul(h, %w{i}); %bias{i} = broadcast(%b{i}) dims=[1];
//!   %z{i} = add; %h{i} = relu.
//! resmlp, per block i (the anchors' `res`, LayerNorm without affine
//! parameters as in peers/jax_anchor.py; torch's LayerNorm affine is the
//! identity at initialisation):
//!   %ln{i} = LN(h); %z{i}a = ln·W1 + b1; %r{i} = relu; %z{i}b = r·W2 + b2;
//!   %h{i} = h + z{i}b.
//! Both end with the MSE loss against %target.
//!
//! Argument order: %x, %target, then the parameters block by block.
//! Complexity: O(depth) ops.

use crate::{BuildError, Sizes};
use crate::builder::Builder;
use ckopt_ir::{Func, OpKind};

pub(crate) fn mlp(s: &Sizes) -> Result<Func, BuildError> {
    let (b, w) = (s.batch, s.width);
    let mut g = Builder::new("mlp");
    let x = g.arg("x", &[b, w], false)?;
    let t = g.arg("target", &[b, w], false)?;
    let mut params = Vec::with_capacity(s.depth as usize);
    for i in 0..s.depth {
        let wi = g.arg(&format!("w{i}"), &[w, w], true)?;
        let bi = g.arg(&format!("b{i}"), &[w], true)?;
        params.push((wi, bi));
    }
    let mut h = x;
    for (i, &(wi, bi)) in params.iter().enumerate() {
        let z = g.linear(h, wi, bi, &i.to_string())?;
        h = g.unary(OpKind::Relu, z, &format!("h{i}"))?;
    }
    let loss = g.mse(h, t)?;
    g.finish(loss)
}

pub(crate) fn resmlp(s: &Sizes) -> Result<Func, BuildError> {
    let (b, w) = (s.batch, s.width);
    let mut g = Builder::new("resmlp");
    let x = g.arg("x", &[b, w], false)?;
    let t = g.arg("target", &[b, w], false)?;
    let mut params = Vec::with_capacity(s.depth as usize);
    for i in 0..s.depth {
        let wa = g.arg(&format!("w{i}a"), &[w, w], true)?;
        let ba = g.arg(&format!("b{i}a"), &[w], true)?;
        let wb = g.arg(&format!("w{i}b"), &[w, w], true)?;
        let bb = g.arg(&format!("b{i}b"), &[w], true)?;
        params.push((wa, ba, wb, bb));
    }
    let mut h = x;
    for (i, &(wa, ba, wb, bb)) in params.iter().enumerate() {
        let n = g.layer_norm(h, &i.to_string())?;
        let za = g.linear(n, wa, ba, &format!("{i}a"))?;
        let r = g.unary(OpKind::Relu, za, &format!("r{i}"))?;
        let zb = g.linear(r, wb, bb, &format!("{i}b"))?;
        h = g.binary(OpKind::Add, h, zb, &format!("h{i}"))?;
    }
    let loss = g.mse(h, t)?;
    g.finish(loss)
}
