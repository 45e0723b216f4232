//! The one definition of ckopt's deterministic randomness: SplitMix64 and
//! the `ck.dropout` mask. Every backend (interpreter, lowered cpu and cuda
//! code) reproduces these formulas bit for bit.
//!
//! - `mix64` is SplitMix64's output function (Steele, Lea, Flood 2014), a
//!   bijective 64-bit finalizer; `unit_f32` maps 64 bits to [0, 1) exactly.
//! - `dropout_key(seed, step)` is the per-op key: from the `seed` attribute,
//!   and from the bit pattern of the optional rank-0 step key operand
//!   (`ck.step` argument of a training step), so masks differ per step while a
//!   recomputation within one step reproduces the same mask.
//! - `dropout_keep_key(key, index, rate)` decides element `index` (flat,
//!   row-major).

/// SplitMix64's increment (2^64 / golden ratio).
pub const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;
/// SplitMix64's two multipliers, in order.
pub const MIX_MUL: [u64; 2] = [0xBF58_476D_1CE4_E5B9, 0x94D0_49BB_1331_11EB];

/// SplitMix64's output function: `z ^= z >> 30; z *= 0xBF58476D1CE4E5B9;
/// z ^= z >> 27; z *= 0x94D049BB133111EB; z ^= z >> 31` (wrapping arithmetic).
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(MIX_MUL[0]);
    z = (z ^ (z >> 27)).wrapping_mul(MIX_MUL[1]);
    z ^ (z >> 31)
}

/// Maps 64 random bits to a uniform f32 in [0, 1): the top 24 bits times 2^-24
/// (every value is exactly representable, so all backends agree).
pub fn unit_f32(bits: u64) -> f32 {
    (bits >> 40) as f32 * (1.0 / 16_777_216.0)
}

/// The key of one dropout op:
/// ```text
/// key  = mix64(seed as u64 + GOLDEN)
/// key' = mix64(key ^ (step.to_bits() as u64 * GOLDEN))   // with a step key operand
/// ```
pub fn dropout_key(seed: i64, step: Option<f32>) -> u64 {
    let key = mix64((seed as u64).wrapping_add(GOLDEN));
    match step {
        None => key,
        Some(s) => mix64(key ^ (s.to_bits() as u64).wrapping_mul(GOLDEN)),
    }
}

/// Whether element `index` is kept: `unit_f32(mix64(key ^ index)) >= rate`;
/// the op computes `y[i] = keep(i) ? x[i] / (1 - rate) : 0`. `rate = 0` keeps all.
pub fn dropout_keep_key(key: u64, index: u64, rate: f32) -> bool {
    unit_f32(mix64(key ^ index)) >= rate
}

/// `dropout_keep_key(dropout_key(seed, None), index, rate)`.
pub fn dropout_keep(seed: i64, index: u64, rate: f32) -> bool {
    dropout_keep_key(dropout_key(seed, None), index, rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix64_matches_splitmix64_reference_values() {
        // SplitMix64 seeded with 0: the first outputs of the reference C code.
        assert_eq!(mix64(GOLDEN), 0xE220_A839_7B1D_CDAF);
        assert_eq!(mix64(GOLDEN.wrapping_mul(2)), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn step_keys_give_other_masks_and_no_step_is_the_plain_seed() {
        assert_eq!(dropout_key(7, None), mix64(7u64.wrapping_add(GOLDEN)));
        let differ = |a: u64, b: u64| (0..4096).filter(|&i| dropout_keep_key(a, i, 0.5) != dropout_keep_key(b, i, 0.5)).count();
        assert!(differ(dropout_key(7, Some(1.0)), dropout_key(7, Some(2.0))) > 1000);
        assert!(differ(dropout_key(7, None), dropout_key(7, Some(0.0))) > 1000);
        assert_eq!(dropout_key(7, Some(3.0)), dropout_key(7, Some(3.0)));
    }
}
