//! GEMMs of bf16 operands on AVX512_BF16: `vdpbf16ps` multiplies bf16
//! pairs into f32 accumulators, twice the products per instruction of an
//! f32 FMA and no widening pass over the operands.
//!
//! Used by the cpu backend for `ck.matmul` with bf16 `a` and `b` (result
//! bf16 or f32) on machines that have the instruction set
//! (`available()`); elsewhere the operands are widened to f32 for the f32
//! GEMM (`run_gemm_lowp`).
//!
//! Arithmetic: every product of two bf16 values is exact in f32; the
//! accumulation over k is in f32, pairs of k in increasing order, each
//! pair as `vdpbf16ps` defines it (the odd k's product added first, round
//! to nearest even, subnormal inputs and results flushed to zero); the
//! result is rounded to bf16 (nearest even) once when its type is bf16. The
//! interpreter sums in plain k order without flushing, so the two agree to
//! f32 accumulation error (the backends' tests: 1e-2 relative in bf16).
//!
//! Blocking: for each block of `NC` columns, B is packed once as k-pairs
//! (`[panel][k/2][NR]` u32 words, each two bf16 of consecutive k); for each
//! block of `MR` rows, A is packed as `[k/2][MR]` words; the micro-kernel
//! keeps an `MR x NR` tile (24 zmm accumulators) over the whole k, so an
//! element's sum never depends on the blocking of other elements. Row
//! blocks are split over the threads in contiguous runs: the bits do not
//! depend on the number of threads.

use ckopt_ir::DType;
use ckopt_kernels::Gemm;

/// Rows of the micro-kernel's tile.
const MR: usize = 12;
/// Columns of the micro-kernel's tile (two zmm of 16 f32).
const NR: usize = 32;
/// Columns per packed block of B (a multiple of NR; 256 columns x 1024
/// k-values of B is 512 KiB, within L2).
const NC: usize = 256;
/// Row blocks below which a GEMM runs on one thread.
const PAR_MIN_FLOPS: usize = 1 << 20;

/// Whether this machine runs `gemm_bf16` (AVX512F and AVX512_BF16).
pub fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether `gemm_bf16` computes a GEMM of element types `dts` (A, B, C).
pub fn handles(dts: [DType; 3]) -> bool {
    dts[0] == DType::BF16 && dts[1] == DType::BF16 && matches!(dts[2], DType::BF16 | DType::F32) && available()
}

/// Strided view of one bf16 operand: element (i, j) at `p[i*rs + j*cs]`.
#[derive(Clone, Copy)]
struct View {
    p: *const u16,
    rs: usize,
    cs: usize,
}
// SAFETY: read-only views of buffers that outlive the GEMM call.
unsafe impl Send for View {}
unsafe impl Sync for View {}

#[derive(Clone, Copy)]
struct Out(*mut u8);
// SAFETY: threads write disjoint row blocks of C.
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

/// `C = op(A) · op(B)` per batch matrix, A and B bf16, C bf16 or f32 (`handles`).
///
/// # Safety
/// `a`, `b`, `c` point to `batch` contiguous matrices of the sizes in `g`
/// with element types `g.dtypes`; `handles(g.dtypes)` holds.
pub unsafe fn gemm_bf16(g: &Gemm, a: *const u16, b: *const u16, c: *mut u8, threads: usize) {
    let (m, n, k) = (g.m as usize, g.n as usize, g.k as usize);
    let c_bytes = if g.dtypes[2] == DType::F32 { 4 } else { 2 };
    for bi in 0..g.batch as usize {
        // SAFETY: batch matrix bi lies inside each buffer (the contract).
        let (av, bv, cp) = unsafe {
            let av = View { p: a.add(bi * m * k), rs: if g.trans_a { 1 } else { k }, cs: if g.trans_a { m } else { 1 } };
            let bv = View { p: b.add(bi * k * n), rs: if g.trans_b { 1 } else { n }, cs: if g.trans_b { k } else { 1 } };
            (av, bv, Out(c.add(bi * m * n * c_bytes)))
        };
        // SAFETY: as above.
        unsafe { one(m, n, k, av, bv, cp, g.dtypes[2], threads) };
    }
}

/// One matrix: `C[m x n] = A[m x k] · B[k x n]` through the views.
unsafe fn one(m: usize, n: usize, k: usize, a: View, b: View, c: Out, c_dt: DType, threads: usize) {
    let kp = k.div_ceil(2);
    let row_blocks = m.div_ceil(MR);
    let parts = if threads > 1 && 2 * m * n * k >= PAR_MIN_FLOPS { threads.min(row_blocks).max(1) } else { 1 };
    let mut bp = Vec::<u32>::new();
    for j0 in (0..n).step_by(NC) {
        let nc = NC.min(n - j0);
        let panels = nc.div_ceil(NR);
        // SAFETY: every (k, column) read lies in B (the caller's contract).
        unsafe { pack_b(&mut bp, b, k, j0, nc, panels) };
        let bp = &bp;
        let run = move |lo: usize, hi: usize| {
            let mut ap = vec![0u32; kp * MR];
            let mut tile = [0f32; MR * NR];
            for rb in lo..hi {
                let i0 = rb * MR;
                let mr = MR.min(m - i0);
                // SAFETY: rows i0..i0+mr and every k lie in A.
                unsafe { pack_a(&mut ap, a, k, i0, mr) };
                for pj in 0..panels {
                    let jn = NR.min(nc - pj * NR);
                    // SAFETY: ap holds kp*MR words, the panel kp*NR; AVX512_BF16 is present (handles).
                    unsafe { kernel(ap.as_ptr(), bp.as_ptr().add(pj * kp * NR), kp, &mut tile) };
                    // SAFETY: rows i0..i0+mr, columns j0+pj*NR.. +jn lie in C; row blocks are disjoint per thread.
                    unsafe { store(&tile, c, c_dt, n, i0, mr, j0 + pj * NR, jn) };
                }
            }
        };
        if parts == 1 {
            run(0, row_blocks);
        } else {
            rayon::scope(|s| {
                for t in 0..parts {
                    let (lo, hi) = (row_blocks * t / parts, row_blocks * (t + 1) / parts);
                    s.spawn(move |_| run(lo, hi));
                }
            });
        }
    }
}

/// Two bf16 as one word: `lo` in the low half (the even k), `hi` in the high.
#[inline(always)]
fn pair(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | (u32::from(hi) << 16)
}

/// Packs columns `j0..j0+nc` of B as `panels` panels of `[k/2][NR]` words
/// (zero past k and past the last column).
unsafe fn pack_b(bp: &mut Vec<u32>, b: View, k: usize, j0: usize, nc: usize, panels: usize) {
    let kp = k.div_ceil(2);
    bp.clear();
    bp.resize(panels * kp * NR, 0);
    for pj in 0..panels {
        let dst = &mut bp[pj * kp * NR..(pj + 1) * kp * NR];
        for jj in 0..NR.min(nc - pj * NR) {
            let j = j0 + pj * NR + jj;
            for p in 0..kp {
                // SAFETY: (2p, j) and (2p+1, j) < (k, n) when read.
                let lo = unsafe { *b.p.add(2 * p * b.rs + j * b.cs) };
                let hi = if 2 * p + 1 < k { unsafe { *b.p.add((2 * p + 1) * b.rs + j * b.cs) } } else { 0 };
                dst[p * NR + jj] = pair(lo, hi);
            }
        }
    }
}

/// Packs rows `i0..i0+mr` of A as `[k/2][MR]` words (zero past k and mr).
unsafe fn pack_a(ap: &mut [u32], a: View, k: usize, i0: usize, mr: usize) {
    let kp = k.div_ceil(2);
    for r in 0..MR {
        for p in 0..kp {
            ap[p * MR + r] = if r < mr {
                let i = i0 + r;
                // SAFETY: (i, 2p) and (i, 2p+1) < (m, k) when read.
                let lo = unsafe { *a.p.add(i * a.rs + 2 * p * a.cs) };
                let hi = if 2 * p + 1 < k { unsafe { *a.p.add(i * a.rs + (2 * p + 1) * a.cs) } } else { 0 };
                pair(lo, hi)
            } else {
                0
            };
        }
    }
}

/// The `MR x NR` tile `ap · bp` over `kp` k-pairs, into `tile` (row-major).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn kernel(ap: *const u32, bp: *const u32, kp: usize, tile: &mut [f32; MR * NR]) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    for p in 0..kp {
        // SAFETY: p < kp; the panels hold kp*NR and kp*MR words.
        unsafe {
            let b0: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(p * NR) as *const _));
            let b1: __m512bh = std::mem::transmute(_mm512_loadu_si512(bp.add(p * NR + 16) as *const _));
            for (r, acc) in acc.iter_mut().enumerate() {
                let w: __m512bh = std::mem::transmute(_mm512_set1_epi32(*ap.add(p * MR + r) as i32));
                acc[0] = _mm512_dpbf16_ps(acc[0], w, b0);
                acc[1] = _mm512_dpbf16_ps(acc[1], w, b1);
            }
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: the tile has MR*NR elements.
        unsafe {
            _mm512_storeu_ps(tile.as_mut_ptr().add(r * NR), acc[0]);
            _mm512_storeu_ps(tile.as_mut_ptr().add(r * NR + 16), acc[1]);
        }
    }
}
#[cfg(not(target_arch = "x86_64"))]
unsafe fn kernel(_: *const u32, _: *const u32, _: usize, _: &mut [f32; MR * NR]) {
    unreachable!("gemm_bf16 runs only where available() holds")
}

/// Writes the valid `mr x jn` part of `tile` to C at (i0, j0), rounded to
/// bf16 (nearest even, as `crate::lowp`) or as f32.
#[allow(clippy::too_many_arguments)]
unsafe fn store(tile: &[f32; MR * NR], c: Out, c_dt: DType, n: usize, i0: usize, mr: usize, j0: usize, jn: usize) {
    for r in 0..mr {
        let row = &tile[r * NR..r * NR + jn];
        let at = (i0 + r) * n + j0;
        // SAFETY: (i0+r, j0..j0+jn) lie in C of element type c_dt.
        unsafe {
            if c_dt == DType::F32 {
                std::ptr::copy_nonoverlapping(row.as_ptr(), (c.0 as *mut f32).add(at), jn);
            } else {
                let dst = std::slice::from_raw_parts_mut((c.0 as *mut u16).add(at), jn);
                crate::lowp::f32_to_bf16(row, dst);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ckopt_kernels::{BufId, Slot};

    fn bf16(x: f32) -> u16 {
        half::bf16::from_f32(x).to_bits()
    }
    fn f(x: u16) -> f64 {
        f64::from(f32::from_bits(u32::from(x) << 16))
    }

    fn gemm(batch: u64, m: u64, n: u64, k: u64, ta: bool, tb: bool, c: DType) -> Gemm {
        let s = Slot { buf: BufId::Arena, offset: 0, bytes: 0 };
        Gemm { batch, m, n, k, trans_a: ta, trans_b: tb, a: s, b: s, c: s, dtypes: [DType::BF16, DType::BF16, c] }
    }

    /// Sizes that are not multiples of the tile, both transposes, both
    /// result types, against an f64 reference; 1 and 2 threads give the
    /// same bits.
    #[test]
    fn bf16_gemm_matches_f64_and_threads() {
        if !available() {
            eprintln!("AVX512_BF16 not present: the widening path runs instead (tested by the backends)");
            return;
        }
        for &(batch, m, n, k, ta, tb) in
            &[(1, 1, 1, 1, false, false), (2, 13, 33, 7, false, true), (1, 37, 300, 129, true, false), (1, 64, 64, 256, true, true)]
        {
            for c_dt in [DType::F32, DType::BF16] {
                let g = gemm(batch, m, n, k, ta, tb, c_dt);
                let (m, n, k, nb) = (m as usize, n as usize, k as usize, batch as usize);
                let a: Vec<u16> = (0..nb * m * k).map(|i| bf16(((i * 37 % 101) as f32 - 50.0) / 16.0)).collect();
                let b: Vec<u16> = (0..nb * k * n).map(|i| bf16(((i * 53 % 97) as f32 - 48.0) / 32.0)).collect();
                let cb = if c_dt == DType::F32 { 4 } else { 2 };
                let mut c1 = vec![0u8; nb * m * n * cb];
                let mut c2 = vec![0u8; nb * m * n * cb];
                unsafe {
                    gemm_bf16(&g, a.as_ptr(), b.as_ptr(), c1.as_mut_ptr(), 1);
                    gemm_bf16(&g, a.as_ptr(), b.as_ptr(), c2.as_mut_ptr(), 2);
                }
                assert_eq!(c1, c2, "threads change the bits ({m}x{n}x{k})");
                for bi in 0..nb {
                    for i in 0..m {
                        for j in 0..n {
                            let mut want = 0.0f64;
                            let mut mag = 0.0f64;
                            for p in 0..k {
                                let x = if ta { a[bi * m * k + p * m + i] } else { a[bi * m * k + i * k + p] };
                                let y = if tb { b[bi * k * n + j * k + p] } else { b[bi * k * n + p * n + j] };
                                want += f(x) * f(y);
                                mag += (f(x) * f(y)).abs();
                            }
                            let at = bi * m * n + i * n + j;
                            let got = if c_dt == DType::F32 {
                                f64::from(f32::from_le_bytes(c1[4 * at..4 * at + 4].try_into().unwrap()))
                            } else {
                                f(u16::from_le_bytes(c1[2 * at..2 * at + 2].try_into().unwrap()))
                            };
                            let tol = if c_dt == DType::F32 { 1e-6 * mag } else { 4e-3 * want.abs() + 1e-6 * mag };
                            assert!((got - want).abs() <= tol, "{m}x{n}x{k} ta={ta} tb={tb} {c_dt:?} at ({bi},{i},{j}): {got} vs {want}");
                        }
                    }
                }
            }
        }
    }
}
