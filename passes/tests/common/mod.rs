//! Shared helpers of the autodiff integration tests: a robust directional
//! finite-difference check that tells kinks from wrong gradients.
//!
//! For a direction `v` over the wrt arguments, the analytic directional
//! derivative `g·v` is compared with central differences at two step sizes
//! (`eps` and `eps/4`). When the two differences disagree with each other,
//! the loss is not smooth on the segment (a relu, max or pool kink was
//! crossed) and the point is reported as `Kink`, not judged. Otherwise the
//! gradient must match the finer difference within
//! `ATOL + RTOL * max(|g·v|, |fd|) + rounding`, where rounding is
//! `8 * 2^-23 * (|L| + sum|terms|) / eps` for an f32 loss.
#![allow(dead_code)]

use ckopt_interp::{Tensor, run_func};
use ckopt_ir::Module;

pub const RTOL: f32 = 3e-2;
pub const ATOL: f32 = 1e-3;

#[derive(Debug, PartialEq)]
pub enum Outcome {
    Pass,
    Kink,
    Fail(String),
}

pub struct Lcg(pub u64);
impl Lcg {
    pub fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32) / ((1u64 << 24) as f32)
    }
}

fn loss(m: &Module, name: &str, inputs: &[Tensor]) -> Result<f32, String> {
    let out = run_func(m, name, inputs).map_err(|d| d.to_string())?;
    out.first().and_then(|t| t.item()).ok_or_else(|| "no scalar loss".to_string())
}

fn shifted(inputs: &[Tensor], wrt: &[usize], dir: &[Tensor], s: f32) -> Vec<Tensor> {
    let mut x = inputs.to_vec();
    for (k, &ai) in wrt.iter().enumerate() {
        for (xv, dv) in x[ai].data.iter_mut().zip(&dir[k].data) {
            *xv += s * dv;
        }
    }
    x
}

/// Checks the gradients `grads` (one per wrt argument, as `@NAME_grad` returned them)
/// of `@name` at `inputs` along `dir`.
pub fn directional(m: &Module, name: &str, inputs: &[Tensor], wrt: &[usize], grads: &[Tensor], dir: &[Tensor], eps: f32) -> Outcome {
    let mut gv = 0f64;
    let mut mag = 0f64;
    for (g, d) in grads.iter().zip(dir) {
        for (a, b) in g.data.iter().zip(&d.data) {
            gv += (*a as f64) * (*b as f64);
            mag += ((*a as f64) * (*b as f64)).abs();
        }
    }
    let fd_at = |e: f32| -> Result<f32, String> {
        let p = loss(m, name, &shifted(inputs, wrt, dir, e))?;
        let q = loss(m, name, &shifted(inputs, wrt, dir, -e))?;
        Ok((p - q) / (2.0 * e))
    };
    let (coarse, fine) = match (fd_at(eps), fd_at(eps / 4.0)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return Outcome::Fail(format!("forward run failed: {e}")),
    };
    let l0 = loss(m, name, inputs).unwrap_or(0.0).abs();
    let rounding = 8.0 * f32::EPSILON * (l0 + mag as f32) / (eps / 4.0);
    let tol = |a: f32, b: f32| ATOL + RTOL * a.abs().max(b.abs()) + rounding;
    if !coarse.is_finite() || !fine.is_finite() {
        return Outcome::Kink;
    }
    if (coarse - fine).abs() > tol(coarse, fine) {
        return Outcome::Kink;
    }
    let g = gv as f32;
    if (g - fine).abs() <= tol(g, fine) {
        Outcome::Pass
    } else {
        Outcome::Fail(format!("directional derivative: autodiff {g}, finite differences {fine} (eps/4) and {coarse} (eps)"))
    }
}

/// A random direction in [-1, 1] for each wrt argument.
pub fn random_dir(inputs: &[Tensor], wrt: &[usize], rng: &mut Lcg) -> Vec<Tensor> {
    wrt.iter()
        .map(|&i| {
            let mut t = inputs[i].clone();
            for v in &mut t.data {
                *v = 2.0 * rng.next() - 1.0;
            }
            t
        })
        .collect()
}

/// The unit direction of coordinate `j` of the `k`-th wrt argument.
pub fn coord_dir(inputs: &[Tensor], wrt: &[usize], k: usize, j: usize) -> Vec<Tensor> {
    wrt.iter()
        .enumerate()
        .map(|(kk, &i)| {
            let mut t = inputs[i].clone();
            for v in &mut t.data {
                *v = 0.0;
            }
            if kk == k {
                t.data[j] = 1.0;
            }
            t
        })
        .collect()
}
