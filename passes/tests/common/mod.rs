//! Shared helpers of the autodiff integration tests: a robust directional
//! finite-difference check that tells kinks from wrong gradients.
//!
//! For a direction `v` over the wrt arguments, the analytic directional
//! derivative `g·v` is compared with central differences at two step sizes
//! (`e` and `e/4`). When the two differences disagree with each other,
//! the loss is not smooth on the segment (a relu, max or pool kink was
//! crossed). Otherwise the gradient must match the finer difference within
//! `ATOL + RTOL * max(|g·v|, |fd|) + rounding`, where rounding is
//! `8 * 2^-23 * (|L| + sum|terms|) / (e/4)` for an f32 loss. This is tried at
//! `e = eps, eps/8, eps/64` (see `directional`).
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
/// of `@name` at `inputs` along `dir`, at step sizes `eps`, `eps/8`, `eps/64`:
/// `Pass` if some scale is smooth and matches, `Fail` if every scale is smooth
/// and none matches (a wrong gradient is wrong at every scale, while a kink at
/// distance d stops mattering once the step is below d), else `Kink`.
pub fn directional(m: &Module, name: &str, inputs: &[Tensor], wrt: &[usize], grads: &[Tensor], dir: &[Tensor], eps: f32) -> Outcome {
    let mut gv = 0f64;
    let mut mag = 0f64;
    for (g, d) in grads.iter().zip(dir) {
        for (a, b) in g.data.iter().zip(&d.data) {
            gv += (*a as f64) * (*b as f64);
            mag += ((*a as f64) * (*b as f64)).abs();
        }
    }
    let g = gv as f32;
    let fd_at = |e: f32| -> Result<f32, String> {
        let p = loss(m, name, &shifted(inputs, wrt, dir, e))?;
        let q = loss(m, name, &shifted(inputs, wrt, dir, -e))?;
        Ok((p - q) / (2.0 * e))
    };
    let l0 = loss(m, name, inputs).unwrap_or(0.0).abs();
    let mut saw_kink = false;
    let mut last = String::new();
    for scale in [1.0f32, 8.0, 64.0] {
        let e = eps / scale;
        let (coarse, fine) = match (fd_at(e), fd_at(e / 4.0)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(err), _) | (_, Err(err)) => return Outcome::Fail(format!("forward run failed: {err}")),
        };
        let rounding = 8.0 * f32::EPSILON * (l0 + mag as f32) / (e / 4.0);
        let tol = |a: f32, b: f32| ATOL + RTOL * a.abs().max(b.abs()) + rounding;
        if !coarse.is_finite() || !fine.is_finite() || (coarse - fine).abs() > tol(coarse, fine) {
            saw_kink = true;
            continue;
        }
        if (g - fine).abs() <= tol(g, fine) {
            return Outcome::Pass;
        }
        last = format!("autodiff {g}, finite differences {fine} (step {}) and {coarse} (step {e})", e / 4.0);
    }
    if saw_kink { Outcome::Kink } else { Outcome::Fail(format!("directional derivative: {last}")) }
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
