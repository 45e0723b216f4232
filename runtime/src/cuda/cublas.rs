//! cuBLAS, opened at run time with libloading.
//!
//! Not through cudarc's `cublas` module: with dynamic loading it panics on
//! a missing library or symbol, and it looks only for the library names of
//! the CUDA version it was built for (`libcublas.so.12` for `cuda-12000`),
//! while machines ship `libcublas.so.13` next to a CUDA 13 driver (the
//! device machine's image has it inside the Python environment's
//! `nvidia/cublas/lib`). Here every symbol is looked up before use and a
//! failure is a message; the executor then runs the fallback GEMM kernel.
//!
//! Where: `$CKOPT_CUBLAS` (a path to `libcublas.so*`) if set, else the
//! library search path (`LD_LIBRARY_PATH`, ldconfig) for `libcublas.so.13`,
//! `.so.12`, `.so.11`, `libcublas.so`. libcublas needs its `libcublasLt`
//! from the same folder: put that folder on `LD_LIBRARY_PATH`.
//!
//! GEMMs: `cublasSgemmStridedBatched` on the default stream, fp32 compute
//! (`CUBLAS_DEFAULT_MATH`); `tf32` selects `CUBLAS_TF32_TENSOR_OP_MATH`.
//! GEMMs on bf16/f16 operands: `cublasGemmStridedBatchedEx` with A, B and
//! C of that type (`CUDA_R_16BF`/`CUDA_R_16F`), f32 compute
//! (`CUBLAS_COMPUTE_32F`, alpha and beta f32), `CUBLAS_GEMM_DEFAULT`; when
//! the library lacks that symbol those GEMMs run the fallback kernel.
//! Row-major `C = op(A)·op(B)` is computed as the column-major
//! `Cᵀ = op(B)ᵀ·op(A)ᵀ`: the operands are passed swapped, with their own
//! transposes, so no data moves.

use super::device::GemmCall;
use crate::error::RuntimeError;
use std::ffi::{c_int, c_void};

type Handle = *mut c_void;
type Status = c_int;
type Create = unsafe extern "C" fn(*mut Handle) -> Status;
type Destroy = unsafe extern "C" fn(Handle) -> Status;
type SetMathMode = unsafe extern "C" fn(Handle, c_int) -> Status;
type GetVersion = unsafe extern "C" fn(Handle, *mut c_int) -> Status;
#[allow(clippy::type_complexity)]
type SgemmStridedBatched = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const f32,
    *const f32,
    c_int,
    i64,
    *const f32,
    c_int,
    i64,
    *const f32,
    *mut f32,
    c_int,
    i64,
    c_int,
) -> Status;

#[allow(clippy::type_complexity)]
type GemmStridedBatchedEx = unsafe extern "C" fn(
    Handle,
    c_int,
    c_int,
    c_int,
    c_int,
    c_int,
    *const c_void,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    c_int,
    c_int,
    i64,
    *const c_void,
    *mut c_void,
    c_int,
    c_int,
    i64,
    c_int,
    c_int,
    c_int,
) -> Status;

/// `cudaDataType` values (library_types.h).
const CUDA_R_16F: c_int = 2;
const CUDA_R_16BF: c_int = 14;
/// `CUBLAS_COMPUTE_32F` (cublas_api.h).
const COMPUTE_32F: c_int = 68;
/// `CUBLAS_GEMM_DEFAULT`.
const GEMM_DEFAULT: c_int = -1;

const OP_N: c_int = 0;
const OP_T: c_int = 1;
const DEFAULT_MATH: c_int = 0;
const TF32_TENSOR_OP_MATH: c_int = 3;

/// A loaded cuBLAS with one handle.
pub struct Cublas {
    _lib: libloading::Library,
    handle: Handle,
    destroy: Destroy,
    sgemm: SgemmStridedBatched,
    /// `cublasGemmStridedBatchedEx`, for bf16/f16 GEMMs (None: not exported).
    gemm_ex: Option<GemmStridedBatchedEx>,
    from: String,
    version: i32,
    tf32: bool,
}

// SAFETY: the handle is used on one stream; calls are serialized by the executor.
unsafe impl Send for Cublas {}
unsafe impl Sync for Cublas {}

/// The candidates, in order.
pub fn candidates() -> Vec<String> {
    let mut v = Vec::new();
    if let Some(p) = std::env::var_os("CKOPT_CUBLAS") {
        v.push(p.to_string_lossy().into_owned());
    }
    v.extend(["libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so"].map(String::from));
    v
}

fn status_name(s: Status) -> &'static str {
    match s {
        0 => "CUBLAS_STATUS_SUCCESS",
        1 => "CUBLAS_STATUS_NOT_INITIALIZED",
        3 => "CUBLAS_STATUS_ALLOC_FAILED",
        7 => "CUBLAS_STATUS_INVALID_VALUE",
        8 => "CUBLAS_STATUS_ARCH_MISMATCH",
        11 => "CUBLAS_STATUS_MAPPING_ERROR",
        13 => "CUBLAS_STATUS_EXECUTION_FAILED",
        14 => "CUBLAS_STATUS_INTERNAL_ERROR",
        15 => "CUBLAS_STATUS_NOT_SUPPORTED",
        16 => "CUBLAS_STATUS_LICENSE_ERROR",
        _ => "unknown cuBLAS status",
    }
}

impl Cublas {
    /// Opens the first candidate that loads and has every symbol, and
    /// creates a handle (in the current context).
    pub fn load(tf32: bool) -> Result<Cublas, RuntimeError> {
        let mut tried = Vec::new();
        for name in candidates() {
            // SAFETY: loading a shared library runs its initialisers; cuBLAS's are benign.
            let lib = match unsafe { libloading::Library::new(&name) } {
                Ok(l) => l,
                Err(e) => {
                    tried.push(format!("{name}: {e}"));
                    continue;
                }
            };
            return Cublas::from_lib(lib, name, tf32);
        }
        Err(RuntimeError::Library {
            name: "libcublas".into(),
            why: format!(
                "cuBLAS could not be loaded (tried {}); set CKOPT_CUBLAS to a libcublas.so and put its folder on LD_LIBRARY_PATH",
                tried.join("; ")
            ),
        })
    }

    fn from_lib(lib: libloading::Library, from: String, tf32: bool) -> Result<Cublas, RuntimeError> {
        // SAFETY: each symbol is looked up by its C name and given its C type from cublas_api.h.
        unsafe {
            let sym = |n: &str| -> Result<*const c_void, RuntimeError> {
                lib.get::<*const c_void>(n.as_bytes())
                    .map(|s| *s)
                    .map_err(|e| RuntimeError::Library { name: from.clone(), why: format!("{from} lacks {n}: {e}") })
            };
            let create: Create = std::mem::transmute(sym("cublasCreate_v2")?);
            let destroy: Destroy = std::mem::transmute(sym("cublasDestroy_v2")?);
            let set_math: SetMathMode = std::mem::transmute(sym("cublasSetMathMode")?);
            let get_version: GetVersion = std::mem::transmute(sym("cublasGetVersion_v2")?);
            let sgemm: SgemmStridedBatched = std::mem::transmute(sym("cublasSgemmStridedBatched")?);
            let gemm_ex: Option<GemmStridedBatchedEx> =
                sym("cublasGemmStridedBatchedEx").ok().map(|p| std::mem::transmute::<*const c_void, GemmStridedBatchedEx>(p));
            let mut handle: Handle = std::ptr::null_mut();
            let s = create(&mut handle);
            if s != 0 {
                return Err(RuntimeError::Cublas { call: "cublasCreate", status: status_name(s), code: s });
            }
            let s = set_math(handle, if tf32 { TF32_TENSOR_OP_MATH } else { DEFAULT_MATH });
            if s != 0 {
                destroy(handle);
                return Err(RuntimeError::Cublas { call: "cublasSetMathMode", status: status_name(s), code: s });
            }
            let mut version = 0;
            let _ = get_version(handle, &mut version);
            Ok(Cublas { _lib: lib, handle, destroy, sgemm, gemm_ex, from, version, tf32 })
        }
    }

    /// `cuBLAS 13.0.2 (libcublas.so.13), fp32`.
    pub fn describe(&self) -> String {
        let v = self.version;
        format!(
            "cuBLAS {}.{}.{} ({}), {}",
            v / 10000,
            (v / 100) % 100,
            v % 100,
            self.from,
            if self.tf32 { "TF32 tensor cores" } else { "fp32" }
        )
    }

    /// The row-major GEMM of `g` in its element type: `Ok(false)` when this
    /// library cannot run it (a bf16/f16 GEMM without
    /// `cublasGemmStridedBatchedEx`; the fallback kernel runs it then).
    pub fn gemm(&self, g: &GemmCall) -> Result<bool, RuntimeError> {
        use ckopt_ir::DType;
        let ty = match g.dtype {
            DType::F32 => {
                self.sgemm(g)?;
                return Ok(true);
            }
            DType::BF16 => CUDA_R_16BF,
            DType::F16 => CUDA_R_16F,
            other => return Err(RuntimeError::Other(format!("a GEMM on {} has no cuBLAS type", other.name()))),
        };
        let Some(ex) = self.gemm_ex else { return Ok(false) };
        let int = |v: u64, what: &str| {
            c_int::try_from(v).map_err(|_| RuntimeError::Other(format!("{what} = {v} exceeds cuBLAS's 32-bit limit")))
        };
        let (m, n, k) = (int(g.m, "M")?, int(g.n, "N")?, int(g.k, "K")?);
        let batch = int(g.batch, "batch")?;
        // The same column-major formulation as `sgemm`.
        let (op_b, ldb) = if g.trans_b { (OP_T, g.k) } else { (OP_N, g.n) };
        let (op_a, lda) = if g.trans_a { (OP_T, g.m) } else { (OP_N, g.k) };
        let (ldb, lda, ldc) = (int(ldb.max(1), "ldb")?, int(lda.max(1), "lda")?, int(g.n.max(1), "ldc")?);
        let alpha = 1.0f32;
        // SAFETY: device pointers of matrices of these sizes and this element
        // type (the executor's slots); alpha and beta are f32 for COMPUTE_32F.
        let s = unsafe {
            ex(
                self.handle,
                op_b,
                op_a,
                n,
                m,
                k,
                &alpha as *const f32 as *const c_void,
                g.b as *const c_void,
                ty,
                ldb,
                g.stride_b as i64,
                g.a as *const c_void,
                ty,
                lda,
                g.stride_a as i64,
                &g.beta as *const f32 as *const c_void,
                g.c as *mut c_void,
                ty,
                ldc,
                g.stride_c as i64,
                batch,
                COMPUTE_32F,
                GEMM_DEFAULT,
            )
        };
        if s != 0 {
            return Err(RuntimeError::Cublas { call: "cublasGemmStridedBatchedEx", status: status_name(s), code: s });
        }
        Ok(true)
    }

    /// The row-major f32 GEMM of `g` (see the module doc).
    pub fn sgemm(&self, g: &GemmCall) -> Result<(), RuntimeError> {
        let int = |v: u64, what: &str| {
            c_int::try_from(v).map_err(|_| RuntimeError::Other(format!("{what} = {v} exceeds cuBLAS's 32-bit limit")))
        };
        let (m, n, k) = (int(g.m, "M")?, int(g.n, "N")?, int(g.k, "K")?);
        let batch = int(g.batch, "batch")?;
        // Column-major Cᵀ (N x M) = op(B)ᵀ (N x K) · op(A)ᵀ (K x M).
        let (op_b, ldb) = if g.trans_b { (OP_T, g.k) } else { (OP_N, g.n) };
        let (op_a, lda) = if g.trans_a { (OP_T, g.m) } else { (OP_N, g.k) };
        let (ldb, lda, ldc) = (int(ldb.max(1), "ldb")?, int(lda.max(1), "lda")?, int(g.n.max(1), "ldc")?);
        let alpha = 1.0f32;
        // SAFETY: device pointers of matrices of these sizes (the executor's slots).
        let s = unsafe {
            (self.sgemm)(
                self.handle,
                op_b,
                op_a,
                n,
                m,
                k,
                &alpha,
                g.b as *const f32,
                ldb,
                g.stride_b as i64,
                g.a as *const f32,
                lda,
                g.stride_a as i64,
                &g.beta,
                g.c as *mut f32,
                ldc,
                g.stride_c as i64,
                batch,
            )
        };
        if s != 0 {
            return Err(RuntimeError::Cublas { call: "cublasSgemmStridedBatched", status: status_name(s), code: s });
        }
        Ok(())
    }
}

impl Drop for Cublas {
    fn drop(&mut self) {
        // SAFETY: the handle was created by this library.
        unsafe {
            (self.destroy)(self.handle);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_library_is_a_message_listing_what_was_tried() {
        // SAFETY of the test: single-threaded use of the environment.
        if candidates().iter().any(|c| unsafe { libloading::Library::new(c) }.is_ok()) {
            return; // a machine with cuBLAS: nothing to check here
        }
        let e = Cublas::load(false).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("cuBLAS could not be loaded") && e.contains("libcublas.so.13"), "{e}");
    }
}
