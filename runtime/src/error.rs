//! The runtime's error type: what the arena, the cuda executor and the
//! devices under it (the CUDA driver, cuBLAS, the CPU emulation) report.
//!
//! Every variant displays as the message the runtime printed when its
//! errors were strings (the lit tests match ckopt-exec / ckopt-run output),
//! so callers that format with `{e}` or `.to_string()` see the same text.
//! Wrapping variants (`Alloc`, `Launch`, `Op`, `Async`, `Context`) keep the
//! underlying error as their `source`. `From<RuntimeError> for String` lets
//! callers that still carry strings use `?`.

use thiserror::Error;

#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RuntimeError {
    /// A CUDA driver call returned an error status: `cuMemAlloc:
    /// CUDA_ERROR_OUT_OF_MEMORY (out of memory)`.
    #[error("{call}: {message}")]
    Driver {
        /// The call (or what it was doing: `creating a context (cuDevicePrimaryCtxRetain)`).
        call: String,
        /// The `CUresult`.
        code: u32,
        /// The status as text (`CUDA_ERROR_… (description)`).
        message: String,
    },
    /// No usable CUDA driver or device: libcuda missing or older than CUDA
    /// 12.0, no device, or a build without the `cuda` feature.
    #[error("{0}")]
    NoDevice(String),
    /// A shared library (libcublas) that could not be loaded, or lacks a
    /// symbol; `why` is the whole message.
    #[error("{why}")]
    Library { name: String, why: String },
    /// A cuBLAS call that returned an error status.
    #[error("{call} failed: {status} ({code})")]
    Cublas { call: &'static str, status: &'static str, code: i32 },
    /// The driver's JIT rejected the bundle's PTX; `log` is its error and
    /// info log (`(empty)` when it wrote none).
    #[error("loading the PTX module failed: {status}; JIT log: {log}")]
    PtxLoad { status: String, log: String },
    /// The bundle was compiled for another compute capability.
    #[error(
        "the bundle is compiled for sm_{bundle_sm} but the device is {device}; re-create it with `ckopt-translate --to=cuda-bundle --sm={device_sm}`"
    )]
    SmMismatch { bundle_sm: u32, device_sm: u32, device: String },
    /// A host allocation (an arena) that failed.
    #[error("could not allocate an arena of {bytes} bytes")]
    OutOfMemory { bytes: u64 },
    /// A device allocation that failed, with the device's free memory
    /// (free, total) when it could be read.
    #[error("allocating {what} ({bytes} bytes) on the device failed: {source}{}", free_text(.free))]
    Alloc { what: String, bytes: u64, free: Option<(u64, u64)>, source: Box<RuntimeError> },
    /// A kernel launch the device rejected.
    #[error("launching {entry} failed: {source}")]
    Launch { entry: String, source: Box<RuntimeError> },
    /// A step of a program that failed: the op, its location, the function.
    #[error("cuda backend: {op} at {loc} (in @{func}) failed: {source}")]
    Op { op: String, loc: String, func: String, source: Box<RuntimeError> },
    /// A fault found at the end of a step (kernels run asynchronously).
    #[error(
        "cuda backend: a kernel of @{func} failed: {source} (kernels run asynchronously; run with CKOPT_CUDA_SYNC=1 to name the failing op)"
    )]
    Async { func: String, source: Box<RuntimeError> },
    /// An error with what was being done: `clearing the arena: …`.
    #[error("{context}: {source}")]
    Context { context: String, source: Box<RuntimeError> },
    /// A request the bundle or program cannot satisfy (no such function,
    /// argument, result or kernel; a wrong argument shape).
    #[error("{0}")]
    Bundle(String),
    /// Calling a JIT-compiled cpu kernel, or compiling and running the cuda
    /// emulation, failed.
    #[cfg(feature = "lower")]
    #[error(transparent)]
    Lower(#[from] ckopt_lower::LowerError),
    /// Anything else (lock poisoning, a timer not started).
    #[error("{0}")]
    Other(String),
}

fn free_text(free: &Option<(u64, u64)>) -> String {
    match free {
        Some((f, t)) => format!(" ({f} of {t} bytes free)"),
        None => String::new(),
    }
}

impl RuntimeError {
    /// This error with what was being done in front: `{context}: {self}`.
    pub fn context(self, context: impl Into<String>) -> RuntimeError {
        RuntimeError::Context { context: context.into(), source: Box::new(self) }
    }

    /// The error's message (its `Display`).
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl From<RuntimeError> for String {
    fn from(e: RuntimeError) -> String {
        e.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapped_errors_display_as_the_old_messages() {
        let d = RuntimeError::Driver { call: "cuMemAlloc".into(), code: 2, message: "CUDA_ERROR_OUT_OF_MEMORY (out of memory)".into() };
        let a = RuntimeError::Alloc { what: "the arena".into(), bytes: 8, free: Some((4, 16)), source: Box::new(d.clone()) };
        assert_eq!(
            a.to_string(),
            "allocating the arena (8 bytes) on the device failed: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory) (4 of 16 bytes free)"
        );
        assert_eq!(d.clone().context("clearing the arena").to_string(), "clearing the arena: cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
        let s: String = RuntimeError::OutOfMemory { bytes: 3 }.into();
        assert_eq!(s, "could not allocate an arena of 3 bytes");
        assert!(std::error::Error::source(&a).is_some());
    }
}
