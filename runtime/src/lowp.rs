//! bf16/f16 <-> f32 conversion of whole buffers for the library calls
//! (GEMMs, convolutions) of the cpu backend, which compute in f32.
//!
//! bf16 -> f32 is a 16-bit shift; f32 -> bf16 rounds to nearest even with
//! integer arithmetic (a NaN stays a quiet NaN of its sign: `half`'s
//! `bf16::from_f32`, the interpreter's rounding). Both are branch-free
//! loops that LLVM vectorizes, compiled for AVX-512 and AVX2 besides the
//! baseline and chosen at run time. f16 uses `half`'s slice conversions
//! (F16C when the machine has it). Large buffers are converted on several
//! threads in fixed chunks; every element is converted by itself, so the
//! bits do not depend on the split.

use ckopt_ir::DType;
use rayon::prelude::*;

/// Elements below which a conversion runs on one thread.
const PAR_MIN: usize = 1 << 17;
/// Elements per parallel chunk.
const CHUNK: usize = 1 << 15;

#[inline(always)]
fn bf16_to_f32_body(src: &[u16], dst: &mut [f32]) {
    for (d, &s) in dst.iter_mut().zip(src) {
        *d = f32::from_bits(u32::from(s) << 16);
    }
}

#[inline(always)]
fn f32_to_bf16_body(src: &[f32], dst: &mut [u16]) {
    for (d, &x) in dst.iter_mut().zip(src) {
        let b = x.to_bits();
        let rne = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
        let nan = ((b >> 16) | 0x40) as u16;
        *d = if (b & 0x7fff_ffff) > 0x7f80_0000 { nan } else { rne };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn bf16_to_f32_avx512(src: &[u16], dst: &mut [f32]) {
    bf16_to_f32_body(src, dst)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn bf16_to_f32_avx2(src: &[u16], dst: &mut [f32]) {
    bf16_to_f32_body(src, dst)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn f32_to_bf16_avx512(src: &[f32], dst: &mut [u16]) {
    f32_to_bf16_body(src, dst)
}
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn f32_to_bf16_avx2(src: &[f32], dst: &mut [u16]) {
    f32_to_bf16_body(src, dst)
}

/// `dst[i] = src[i]` widened (one thread).
pub fn bf16_to_f32(src: &[u16], dst: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the features were detected.
            return unsafe { bf16_to_f32_avx512(src, dst) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { bf16_to_f32_avx2(src, dst) };
        }
    }
    bf16_to_f32_body(src, dst)
}

/// `dst[i] = src[i]` rounded to bf16, nearest even (one thread).
pub fn f32_to_bf16(src: &[f32], dst: &mut [u16]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the features were detected.
            return unsafe { f32_to_bf16_avx512(src, dst) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { f32_to_bf16_avx2(src, dst) };
        }
    }
    f32_to_bf16_body(src, dst)
}

fn widen(dt: DType, src: &[u8], dst: &mut [f32]) {
    use half::slice::HalfFloatSliceExt;
    let n = dst.len();
    match dt {
        DType::BF16 => bf16_to_f32(bytemuck_u16(src, n), dst),
        DType::F16 => {
            let s: &[half::f16] = bytemuck_half(src, n);
            s.convert_to_f32_slice(dst)
        }
        _ => dst.copy_from_slice(bytemuck_f32(src, n)),
    }
}

fn narrow(dt: DType, src: &[f32], dst: &mut [u8]) {
    use half::slice::HalfFloatSliceExt;
    let n = src.len();
    match dt {
        DType::BF16 => f32_to_bf16(src, bytemuck_u16_mut(dst, n)),
        DType::F16 => bytemuck_half_mut(dst, n).convert_from_f32_slice(src),
        _ => bytemuck_f32_mut(dst, n).copy_from_slice(src),
    }
}

// Views of aligned byte buffers (the layout aligns every value to its
// element size; the executor's buffers are 64-byte aligned).
fn bytemuck_u16(b: &[u8], n: usize) -> &[u16] {
    assert!(b.len() >= 2 * n && (b.as_ptr() as usize).is_multiple_of(2));
    // SAFETY: length and alignment checked.
    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const u16, n) }
}
fn bytemuck_u16_mut(b: &mut [u8], n: usize) -> &mut [u16] {
    assert!(b.len() >= 2 * n && (b.as_ptr() as usize).is_multiple_of(2));
    // SAFETY: length and alignment checked.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut u16, n) }
}
fn bytemuck_half(b: &[u8], n: usize) -> &[half::f16] {
    let s = bytemuck_u16(b, n);
    // SAFETY: f16 is a u16.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const half::f16, n) }
}
fn bytemuck_half_mut(b: &mut [u8], n: usize) -> &mut [half::f16] {
    let s = bytemuck_u16_mut(b, n);
    // SAFETY: f16 is a u16.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut half::f16, n) }
}
fn bytemuck_f32(b: &[u8], n: usize) -> &[f32] {
    assert!(b.len() >= 4 * n && (b.as_ptr() as usize).is_multiple_of(4));
    // SAFETY: length and alignment checked.
    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const f32, n) }
}
fn bytemuck_f32_mut(b: &mut [u8], n: usize) -> &mut [f32] {
    assert!(b.len() >= 4 * n && (b.as_ptr() as usize).is_multiple_of(4));
    // SAFETY: length and alignment checked.
    unsafe { std::slice::from_raw_parts_mut(b.as_mut_ptr() as *mut f32, n) }
}

/// `dst` (n f32) = the `n` elements of type `dt` at `src`, widened.
///
/// # Safety
/// `src` points to `dst.len()` elements of `dt`, aligned to its size,
/// not overlapping `dst`.
pub unsafe fn to_f32(src: *const u8, dt: DType, dst: &mut [f32], threads: usize) {
    let w = dt.bytes() as usize;
    // SAFETY: per the contract.
    let s = unsafe { std::slice::from_raw_parts(src, dst.len() * w) };
    if threads > 1 && dst.len() >= PAR_MIN {
        dst.par_chunks_mut(CHUNK).zip(s.par_chunks(CHUNK * w)).for_each(|(d, s)| widen(dt, s, d));
    } else {
        widen(dt, s, dst);
    }
}

/// The elements of `src` rounded to `dt` (nearest even) at `dst`.
///
/// # Safety
/// `dst` points to `src.len()` elements of `dt`, aligned to its size, not
/// overlapping `src`.
pub unsafe fn from_f32(src: &[f32], dt: DType, dst: *mut u8, threads: usize) {
    let w = dt.bytes() as usize;
    // SAFETY: per the contract.
    let d = unsafe { std::slice::from_raw_parts_mut(dst, src.len() * w) };
    if threads > 1 && src.len() >= PAR_MIN {
        d.par_chunks_mut(CHUNK * w).zip(src.par_chunks(CHUNK)).for_each(|(d, s)| narrow(dt, s, d));
    } else {
        narrow(dt, src, d);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounding_is_halfs_on_every_class_of_value() {
        let mut xs: Vec<f32> = vec![0.0, -0.0, 1.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -f32::NAN, f32::MAX, f32::MIN_POSITIVE];
        xs.extend([f32::from_bits(1), f32::from_bits(0x7f7f_ffff), f32::from_bits(0xffff_ffff), f32::from_bits(0x7f80_0001)]);
        // Ties (even and odd), just below/above them, over many exponents.
        for e in 0..255u32 {
            for m in [0x0000_8000u32, 0x0001_8000, 0x0000_7fff, 0x0000_8001, 0x007f_ffff, 0x0012_3456] {
                xs.push(f32::from_bits((e << 23) | m));
                xs.push(f32::from_bits(0x8000_0000 | (e << 23) | m));
            }
        }
        let mut got = vec![0u16; xs.len()];
        f32_to_bf16(&xs, &mut got);
        let mut base = vec![0u16; xs.len()];
        f32_to_bf16_body(&xs, &mut base);
        for ((x, g), b) in xs.iter().zip(&got).zip(&base) {
            assert_eq!(*g, half::bf16::from_f32(*x).to_bits(), "{x:e} ({:#x})", x.to_bits());
            assert_eq!(g, b, "{x:e}: the vectorized and the baseline loop agree");
        }
        let mut back = vec![0f32; got.len()];
        bf16_to_f32(&got, &mut back);
        for (g, b) in got.iter().zip(&back) {
            assert_eq!(b.to_bits(), half::bf16::from_bits(*g).to_f32().to_bits());
        }
    }
}
