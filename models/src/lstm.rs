//! `lstm`: `depth` stacked LSTM layers unrolled over `seq` time steps.
//!
//! Layer-major order: layer 0 runs all steps, then layer 1 reads layer 0's
//! hidden states, and so on. Step t of layer l (H = width):
//!   in_t = reshape(slice(%x, [t, 0, 0]) : [1, B, H]) : [B, H]   (layer 0)
//!        = h_t of layer l-1                                        (l > 0)
//!   gates = in_t·Wx + h·Wh + broadcast(b)      : [B, 4H]
//!   i, f, g, o = sigmoid/sigmoid/tanh/sigmoid of the four [B, H] slices
//!   c = f*c + i*g;  h = o * tanh(c)
//! h and c start as `ck.fill 0`. Loss: MSE of the top layer's last h vs %target.
//!
//! Complexity: O(depth · seq) ops.

use crate::{BuildError, Sizes};
use crate::builder::{Builder, mul};
use ckopt_ir::{Func, OpKind};

pub(crate) fn lstm(s: &Sizes) -> Result<Func, BuildError> {
    let (b, w) = (s.batch, s.width);
    let w4 = mul(4, w, "4·width")?;
    let mut g = Builder::new("lstm");
    let x = g.arg("x", &[s.seq, b, w], false)?;
    let t = g.arg("target", &[b, w], false)?;
    let mut params = Vec::with_capacity(s.depth as usize);
    for l in 0..s.depth {
        let wx = g.arg(&format!("wx{l}"), &[w, w4], true)?;
        let wh = g.arg(&format!("wh{l}"), &[w, w4], true)?;
        let bl = g.arg(&format!("b{l}"), &[w4], true)?;
        params.push((wx, wh, bl));
    }
    let mut inputs: Vec<ckopt_ir::ValueId> = Vec::new();
    for (l, &(wx, wh, bl)) in params.iter().enumerate() {
        let mut h = g.fill(&[b, w], 0.0, &format!("h{l}_init"))?;
        let mut c = g.fill(&[b, w], 0.0, &format!("c{l}_init"))?;
        let mut outs = Vec::with_capacity(s.seq as usize);
        for step in 0..s.seq {
            let tag = format!("{l}_{step}");
            let inp = if l == 0 {
                let xs = g.slice(x, &[step, 0, 0], &[1, b, w], &format!("x{step}"))?;
                g.reshape(xs, &[b, w], &format!("xt{step}"))?
            } else {
                inputs[step as usize]
            };
            let gx = g.matmul(inp, wx, false, &format!("gx{tag}"))?;
            let gh = g.matmul(h, wh, false, &format!("gh{tag}"))?;
            let gs = g.binary(OpKind::Add, gx, gh, &format!("gs{tag}"))?;
            let bb = g.broadcast(bl, &[1], &[b, w4], &format!("bias{tag}"))?;
            let ga = g.binary(OpKind::Add, gs, bb, &format!("gates{tag}"))?;
            let mut gate = |k: u64, act: OpKind, name: &str| -> Result<ckopt_ir::ValueId, BuildError> {
                let off = mul(k, w, "gate offset")?;
                let sl = g.slice(ga, &[0, off], &[b, w], &format!("{name}pre{tag}"))?;
                g.unary(act, sl, &format!("{name}{tag}"))
            };
            let ig = gate(0, OpKind::Sigmoid, "i")?;
            let fg = gate(1, OpKind::Sigmoid, "f")?;
            let gg = gate(2, OpKind::Tanh, "g")?;
            let og = gate(3, OpKind::Sigmoid, "o")?;
            let fc = g.binary(OpKind::Mul, fg, c, &format!("fc{tag}"))?;
            let ig2 = g.binary(OpKind::Mul, ig, gg, &format!("ig{tag}"))?;
            c = g.binary(OpKind::Add, fc, ig2, &format!("c{tag}"))?;
            let tc = g.unary(OpKind::Tanh, c, &format!("tc{tag}"))?;
            h = g.binary(OpKind::Mul, og, tc, &format!("h{tag}"))?;
            outs.push(h);
        }
        inputs = outs;
    }
    let last = *inputs.last().ok_or(BuildError::EmptySequence)?;
    let loss = g.mse(last, t)?;
    g.finish(loss)
}
