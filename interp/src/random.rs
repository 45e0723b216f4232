//! Deterministic randomness: the dropout mask and generated inputs.
//!
//! Everything here is a pure function of its arguments (no global state), so
//! every backend and every recomputation reproduces the same numbers.
//!
//! - `mix64` is SplitMix64's output function (Steele, Lea, Flood 2014), a
//!   bijective 64-bit finalizer.
//! - the ck.dropout mask (`dropout_key`, `dropout_keep_key`) is defined once,
//!   in `ckopt_ir::random`, and re-exported here.
//! - `random_inputs(func, seed)` draws the `ckopt-run --seed N` inputs.

use crate::tensor::{Tensor, shape_of};
use ckopt_ir::{Diag, Func};

pub use ckopt_ir::random::{GOLDEN, dropout_key, dropout_keep, dropout_keep_key, mix64, unit_f32};

/// A SplitMix64 stream: `state += GOLDEN; mix64(state)`.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    pub state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix64(self.state)
    }
    /// Uniform in [0, 1) (`unit_f32` of the next output).
    pub fn next_unit(&mut self) -> f32 {
        unit_f32(self.next_u64())
    }
}

/// Fan-in used to scale `{ck.param}` arguments: rank 2 `[K, N]` (a matmul
/// weight) → K; rank 4 `FCHW` (a conv filter) → C·KH·KW; other ranks >= 3 →
/// product of all dims but the last; rank 0 and 1 → 1 (biases and gains are
/// not scaled).
pub fn fan_in(shape: &[usize]) -> usize {
    match shape.len() {
        0 | 1 => 1,
        2 => shape[0],
        4 => shape[1] * shape[2] * shape[3],
        r => shape[..r - 1].iter().product(),
    }
    .max(1)
}

/// Deterministic inputs for `func`, one tensor per argument, in order.
///
/// Distribution: argument `i` uses the stream
/// `SplitMix64::new(mix64(seed ^ (i as u64 + 1).wrapping_mul(GOLDEN)))`, and
/// each element (row-major) is `2 * next_unit() - 1`, uniform in [-1, 1).
/// Arguments marked `{ck.param}` are then multiplied by `1 / sqrt(fan_in)`
/// (see `fan_in`), a LeCun-style scale that keeps activations O(1) so
/// training is stable; bf16/f16 arguments hold those values rounded to their
/// type. Integer and bool arguments are uniform in {0, 1} (the top bit of
/// each draw). Errors when an argument is larger than the interpreter's limit.
pub fn try_random_inputs(func: &Func, seed: u64) -> Result<Vec<Tensor>, Diag> {
    (0..func.params.len())
        .map(|i| {
            random_arg(func, i, seed).map_err(|d| {
                let v = func.params[i].value;
                Diag::error(func.loc.clone(), format!("argument {i} (%{}) of @{}: {}", func.name_of(v), func.name, d.message))
            })
        })
        .collect()
}

/// The generated value of argument `i` (see `try_random_inputs`).
pub fn random_arg(func: &Func, i: usize, seed: u64) -> Result<Tensor, Diag> {
    let p = func.params.get(i).ok_or_else(|| Diag::unlocated(format!("@{} has no argument {i}", func.name)))?;
    let shape = shape_of(func.ty(p.value))?;
    let mut rng = SplitMix64::new(mix64(seed ^ (i as u64 + 1).wrapping_mul(GOLDEN)));
    let ty = func.ty(p.value);
    if !ty.dtype.is_float() {
        // Integers and bools: uniform in {0, 1} (valid indices of any
        // non-empty dimension of size >= 2, and both truth values).
        let mut t = Tensor::zeros_of(ty)?;
        for v in &mut t.ints {
            *v = (rng.next_u64() >> 63) as i64;
        }
        return Ok(t);
    }
    let scale = if func.is_trainable(i) { 1.0 / (fan_in(&shape) as f32).sqrt() } else { 1.0 };
    let mut t = Tensor::zeros_of(ty)?;
    for v in &mut t.data {
        *v = crate::tensor::round_to(ty.dtype, (2.0 * rng.next_unit() - 1.0) * scale);
    }
    Ok(t)
}

/// `try_random_inputs` for tests and callers that already know the sizes are
/// reasonable (generated and verified modules). Never panics: an argument
/// above the interpreter's size limit gets an empty placeholder tensor of
/// shape `[0]`, which `run_func` then rejects with a located error.
pub fn random_inputs(func: &Func, seed: u64) -> Vec<Tensor> {
    (0..func.params.len())
        .map(|i| random_arg(func, i, seed).unwrap_or_else(|_| Tensor::vector(Vec::new())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_ir::{Loc, TensorType};

    #[test]
    fn mix64_matches_splitmix64_reference_values() {
        // SplitMix64 seeded with 0: the first outputs of the reference C code.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn dropout_mask_is_pure_and_rate_controls_density() {
        for i in 0..100 {
            assert_eq!(dropout_keep(7, i, 0.5), dropout_keep(7, i, 0.5));
            assert!(dropout_keep(7, i, 0.0), "rate 0 keeps everything");
        }
        let kept = (0..10_000).filter(|&i| dropout_keep(42, i, 0.3)).count();
        assert!((6_700..7_300).contains(&kept), "kept {kept} of 10000 at rate 0.3");
        let other = (0..10_000).filter(|&i| dropout_keep(43, i, 0.3) != dropout_keep(42, i, 0.3)).count();
        assert!(other > 1_000, "different seeds give different masks");
    }

    #[test]
    fn random_inputs_are_deterministic_bounded_and_params_scaled() {
        let mut f = Func::new("f", Loc::unknown());
        f.add_param("x", TensorType::f32(vec![4, 8]), false);
        f.add_param("w", TensorType::f32(vec![16, 8]), true);
        let a = random_inputs(&f, 3);
        assert_eq!(a, random_inputs(&f, 3));
        assert_ne!(a, random_inputs(&f, 4));
        assert_eq!(a[0].shape, vec![4, 8]);
        assert!(a[0].data.iter().all(|v| (-1.0..1.0).contains(v)));
        assert!(a[1].data.iter().all(|v| v.abs() <= 0.25), "scaled by 1/sqrt(16)");
        assert!(a[1].data.iter().any(|v| v.abs() > 0.1));
    }
}
