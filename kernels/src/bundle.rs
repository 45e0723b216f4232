//! Cuda bundles: a compiled module in one file, run by an LLVM-free runtime.
//!
//! `ckopt-translate --to=cuda-bundle` writes one, `ckopt-exec` (and
//! `ckopt-run --backend cuda`, in memory) runs it. A bundle holds everything
//! the cuda runtime needs and nothing it would have to compile: the PTX of
//! every kernel of the module (one PTX module), how to launch each kernel
//! (entries, grid, block, scratch), the step program of every function
//! (kernel calls with buffer slots, GEMM and convolution library calls,
//! arena and workspace sizes, argument and result signatures), the training
//! signatures of its step functions, and the compute capability it targets.
//!
//! File format (all integers little-endian):
//!
//! | bytes | what |
//! |---|---|
//! | 0..8 | magic `CKOPTCB\0` |
//! | 8..12 | format version (`BUNDLE_VERSION`) |
//! | 12..16 | compute capability (`90` = sm_90) |
//! | 16..24 | payload length in bytes |
//! | 24..32 | FNV-1a 64 checksum of the payload |
//! | 32.. | payload: the `Bundle` as JSON |
//!
//! Reading checks, in order, each with its own message: the magic, the
//! version, the length (a truncated file), the checksum (a corrupted file),
//! the JSON, and that the header's compute capability equals the payload's.
//! Whether the bundle's compute capability matches the device is the
//! runtime's check (it knows the device).

use crate::program::StepProgram;
use ckopt_ir::ops::{ATTR_DONATE, ATTR_OPT_STATE, ATTR_PARAM, ATTR_STEP};
use ckopt_ir::{Attr, Func, Loc, TensorType};
use serde::{Deserialize, Serialize};

/// The first 8 bytes of every bundle.
pub const BUNDLE_MAGIC: [u8; 8] = *b"CKOPTCB\0";
/// The format version this build reads and writes.
pub const BUNDLE_VERSION: u32 = 1;
/// Header bytes before the payload.
pub const HEADER_BYTES: usize = 32;

/// Fixed names of the library kernels every PTX module may contain.
pub const LIB_GEMM: &str = "ck_lib_gemm";
pub const LIB_IM2COL: &str = "ck_lib_im2col";
pub const LIB_COL2IM: &str = "ck_lib_col2im";

/// The fallback GEMM kernel for operands and result of element type `dt`
/// (`ck_lib_gemm` for f32, `ck_lib_gemm_bf16`, `ck_lib_gemm_f16`).
pub fn lib_gemm_entry(dt: ckopt_ir::DType) -> String {
    if dt == ckopt_ir::DType::F32 { LIB_GEMM.to_string() } else { format!("{LIB_GEMM}_{}", dt.name()) }
}
/// Tile edge of the fallback GEMM kernel (blocks of `GEMM_TILE`² threads).
pub const GEMM_TILE: u32 = 16;
/// Threads per block of the im2col/col2im kernels and of loop kernels.
pub const LIB_BLOCK: u32 = 256;
/// Most blocks a grid-stride kernel is launched with.
pub const MAX_GRID: u32 = 65536;
/// CUDA's limit on grid x.
pub const GRID_X_LIMIT: u64 = (1 << 31) - 1;

/// One launch of a kernel: its PTX entry and configuration.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    pub entry: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// How one kernel of the module's `KernelCache` runs on cuda: its launches
/// in order (one, or two for two-stage reductions), each taking the step's
/// pointers (inputs, outputs, workspace) and then, when `scratch_bytes > 0`,
/// a pointer to the runtime's scratch buffer (partial results between the
/// stages).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CudaKernel {
    pub launches: Vec<Launch>,
    pub scratch_bytes: u64,
    /// What the kernel computes (`loop`, `row reduction`, ...), for reports.
    pub what: String,
}

/// The training signature of a step function (`sgd`'s `@NAME_step`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainSig {
    pub loss_func: String,
    pub grad_func: String,
    pub step_func: String,
    /// Arguments of the loss function (the first arguments of the step).
    pub loss_args: usize,
    /// Trained parameters (argument indices; result `1 + k` is the k-th's new value).
    pub params: Vec<usize>,
    /// Optimizer state arguments (results after the parameters).
    pub state: Vec<usize>,
    /// The `{ck.step}` argument (dropout key), if any.
    pub step_key: Option<usize>,
    /// The `{ck.hyper}` arguments: (index, name, default).
    #[serde(default)]
    pub hypers: Vec<(usize, String, f32)>,
}

/// A compiled module for the cuda runtime.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bundle {
    /// Compute capability the PTX targets (`90` = sm_90).
    pub sm: u32,
    /// Which ckopt wrote it (`ckopt 0.1.0`).
    pub producer: String,
    /// One PTX module: every kernel and the library kernels.
    pub ptx: String,
    /// Launches of kernel `i` of the programs' `Step::Kernel { kernel: i }`.
    pub kernels: Vec<CudaKernel>,
    /// Step programs, one per function.
    pub programs: Vec<StepProgram>,
    /// Ops of each program's function (`ck.return` excluded), for reports.
    pub op_counts: Vec<usize>,
    /// Training signatures of the step functions among them.
    pub trains: Vec<TrainSig>,
}

impl StepProgram {
    /// The function's signature as a ck function without body: its
    /// arguments with their names, shapes and attributes (`{ck.param}`,
    /// `{ck.donate}`, `{ck.step}`, `{ck.opt_state}`), the first `n` of them
    /// when given. What generating inputs (`--seed`) and checking them
    /// (`--inputs`) need, without the IR.
    pub fn signature(&self, n: Option<usize>) -> Func {
        let mut f = Func::new(self.func.clone(), Loc::unknown());
        for a in self.args.iter().take(n.unwrap_or(self.args.len())) {
            f.add_param(a.name.clone(), TensorType::new(a.shape.clone(), a.dtype), a.param);
            let attrs = &mut f.params.last_mut().expect("just added").attrs;
            for (on, name) in [(a.donated, ATTR_DONATE), (a.step_key, ATTR_STEP), (a.opt_state, ATTR_OPT_STATE)] {
                if on {
                    attrs.insert(name.into(), Attr::Unit);
                }
            }
            if let Some((name, d)) = &a.hyper {
                attrs.insert(ckopt_ir::ops::ATTR_HYPER.into(), Attr::Str(name.clone()));
                attrs.insert(ckopt_ir::ops::ATTR_HYPER_DEFAULT.into(), Attr::F32(*d));
            }
            debug_assert_eq!(attrs.contains_key(ATTR_PARAM), a.param);
        }
        f
    }
}

/// Why bytes are not a usable bundle.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BundleError(pub String);

impl std::fmt::Display for BundleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BundleError {}

/// FNV-1a, 64 bits.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Bundle {
    /// The program of function `name`.
    pub fn program(&self, name: &str) -> Option<&StepProgram> {
        self.programs.iter().find(|p| p.func == name)
    }

    /// The training signature whose loss, gradient or step function is `name`.
    pub fn train_sig(&self, name: &str) -> Option<&TrainSig> {
        self.trains.iter().find(|t| t.loss_func == name || t.step_func == name || t.grad_func == name)
    }

    /// Ops of function `name` (`ck.return` excluded).
    pub fn ops(&self, name: &str) -> usize {
        self.programs.iter().position(|p| p.func == name).and_then(|i| self.op_counts.get(i).copied()).unwrap_or(0)
    }

    /// The file contents (header and payload).
    pub fn to_bytes(&self) -> Result<Vec<u8>, BundleError> {
        let payload = serde_json::to_vec(self).map_err(|e| BundleError(format!("cannot encode the bundle: {e}")))?;
        let mut out = Vec::with_capacity(HEADER_BYTES + payload.len());
        out.extend_from_slice(&BUNDLE_MAGIC);
        out.extend_from_slice(&BUNDLE_VERSION.to_le_bytes());
        out.extend_from_slice(&self.sm.to_le_bytes());
        out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&fnv1a64(&payload).to_le_bytes());
        out.extend_from_slice(&payload);
        Ok(out)
    }

    /// Reads a bundle (see the module doc for the checks and their order).
    pub fn from_bytes(b: &[u8]) -> Result<Bundle, BundleError> {
        let make = "make one with `ckopt-translate --to=cuda-bundle FILE -o OUT.ckb`";
        if b.len() < BUNDLE_MAGIC.len() || b[..BUNDLE_MAGIC.len()] != BUNDLE_MAGIC {
            return Err(BundleError(format!("not a ckopt cuda bundle (wrong magic bytes); {make}")));
        }
        if b.len() < HEADER_BYTES {
            return Err(BundleError(format!(
                "truncated bundle: {} bytes, shorter than the {HEADER_BYTES}-byte header",
                b.len()
            )));
        }
        let version = u32_at(b, 8);
        if version != BUNDLE_VERSION {
            return Err(BundleError(format!(
                "bundle format version {version}, but this runtime reads version {BUNDLE_VERSION}; re-create the bundle \
                 with the ckopt-translate of this ckopt"
            )));
        }
        let sm = u32_at(b, 12);
        let len = u64_at(b, 16);
        let have = (b.len() - HEADER_BYTES) as u64;
        if have < len {
            return Err(BundleError(format!("truncated bundle: the header announces {len} bytes of payload, the file has {have}")));
        }
        if have > len {
            return Err(BundleError(format!(
                "corrupted bundle: {} bytes after the {len}-byte payload the header announces",
                have - len
            )));
        }
        let payload = &b[HEADER_BYTES..];
        let sum = u64_at(b, 24);
        if fnv1a64(payload) != sum {
            return Err(BundleError("corrupted bundle: the payload's checksum does not match the header".into()));
        }
        let bundle: Bundle =
            serde_json::from_slice(payload).map_err(|e| BundleError(format!("corrupted bundle: its payload does not decode: {e}")))?;
        if bundle.sm != sm {
            return Err(BundleError(format!("corrupted bundle: header says sm_{sm}, payload says sm_{}", bundle.sm)));
        }
        bundle.check()?;
        Ok(bundle)
    }

    /// Internal consistency: every kernel step names a kernel with launches,
    /// every training signature names a program of the bundle.
    pub fn check(&self) -> Result<(), BundleError> {
        for p in &self.programs {
            for (i, s) in p.steps.iter().enumerate() {
                if let crate::program::Step::Kernel { kernel, .. } = s
                    && self.kernels.get(*kernel as usize).is_none_or(|k| k.launches.is_empty())
                {
                    return Err(BundleError(format!(
                        "corrupted bundle: step {i} of @{} calls kernel {kernel}, which the bundle does not have",
                        p.func
                    )));
                }
            }
        }
        for t in &self.trains {
            if self.program(&t.step_func).is_none() {
                return Err(BundleError(format!("corrupted bundle: training signature of @{} without its program", t.step_func)));
            }
        }
        Ok(())
    }

    /// Reads a bundle file; errors name the file.
    pub fn read(path: &std::path::Path) -> Result<Bundle, BundleError> {
        let b = std::fs::read(path).map_err(|e| BundleError(format!("cannot read {}: {e}", path.display())))?;
        Bundle::from_bytes(&b).map_err(|e| BundleError(format!("{}: {}", path.display(), e.0)))
    }

    /// Writes a bundle file.
    pub fn write(&self, path: &std::path::Path) -> Result<(), BundleError> {
        let b = self.to_bytes()?;
        std::fs::write(path, b).map_err(|e| BundleError(format!("cannot write {}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::{ArgInfo, BufId, OpRef, ResultInfo, Slot, Step};

    fn sample() -> Bundle {
        let slot = |buf, offset, bytes| Slot { buf, offset, bytes };
        let op = OpRef { index: 0, name: "ck.add".into(), loc: "f.ck:3:5".into() };
        let prog = StepProgram {
            func: "f".into(),
            arena_bytes: 64,
            workspace_bytes: 0,
            args: vec![ArgInfo {
                name: "x".into(),
                shape: vec![4],
                param: true,
                donated: false,
                step_key: false,
                opt_state: false,
                hyper: None,
                dtype: ckopt_ir::DType::F32,
            }],
            results: vec![ResultInfo { shape: vec![4], slot: slot(BufId::Arena, 0, 16), dtype: ckopt_ir::DType::F32 }],
            steps: vec![Step::Kernel { kernel: 0, args: vec![slot(BufId::Arg(0), 0, 16), slot(BufId::Arena, 0, 16)], op }],
        };
        Bundle {
            sm: 90,
            producer: "test".into(),
            ptx: ".version 8.0\n.target sm_90\n.address_size 64\n".into(),
            kernels: vec![CudaKernel {
                launches: vec![Launch { entry: "ck_k0".into(), grid: [1, 1, 1], block: [256, 1, 1] }],
                scratch_bytes: 0,
                what: "loop".into(),
            }],
            programs: vec![prog],
            op_counts: vec![1],
            trains: Vec::new(),
        }
    }

    #[test]
    fn round_trip_is_exact() {
        let b = sample();
        let bytes = b.to_bytes().unwrap();
        assert_eq!(&bytes[..8], b"CKOPTCB\0");
        assert_eq!(Bundle::from_bytes(&bytes).unwrap(), b);
    }

    #[test]
    fn each_kind_of_damage_has_its_own_message() {
        let bytes = sample().to_bytes().unwrap();
        let err = |b: &[u8]| Bundle::from_bytes(b).unwrap_err().0;
        assert!(err(b"hello").contains("wrong magic"));
        assert!(err(&bytes[..20]).contains("shorter than the 32-byte header"));
        assert!(err(&bytes[..bytes.len() - 7]).contains("truncated bundle: the header announces"));
        let mut v = bytes.clone();
        v[8] = 9;
        assert!(err(&v).contains("format version 9"));
        let mut v = bytes.clone();
        let n = v.len();
        v[n - 3] ^= 0x20;
        assert!(err(&v).contains("checksum does not match"));
        let mut v = bytes.clone();
        v.push(b' ');
        assert!(err(&v).contains("after the"));
        let mut v = bytes.clone();
        v[12] = 80;
        assert!(err(&v).contains("header says sm_80, payload says sm_90"));
    }

    #[test]
    fn a_step_calling_a_missing_kernel_is_rejected() {
        let mut b = sample();
        b.kernels.clear();
        let bytes = b.to_bytes().unwrap();
        assert!(Bundle::from_bytes(&bytes).unwrap_err().0.contains("calls kernel 0"));
    }
}
