//! What a backend measured: the `--report` JSON of `ckopt-run`.

use serde_json::{Value, json};

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub backend: String,
    pub function: String,
    /// `ck.arena_bytes` of the function.
    pub arena_bytes: u64,
    /// Bytes the runtime actually allocated for the arena (equal to `arena_bytes`).
    pub arena_allocated_bytes: u64,
    /// Bytes of the argument buffers (parameters and inputs), allocated apart.
    pub input_bytes: u64,
    pub compile_ms: f64,
    /// Wall time of the last step (CPU) or CUDA-event time of its kernels (cuda).
    pub step_ms: f64,
    pub steps: u64,
    /// cuda: device memory in use by the step, measured as the drop of the
    /// driver's free memory from before the allocations to after the step.
    pub device_memory_bytes: Option<u64>,
    pub device: Option<String>,
    /// Kernel calls per step.
    pub kernels: Option<usize>,
    /// Distinct kernels compiled (the module's kernel cache).
    pub distinct_kernels: Option<usize>,
    /// Scratch bytes beside the arena (convolution columns, column-reduction accumulators).
    pub workspace_bytes: u64,
    /// Worker threads of kernels and GEMMs.
    pub threads: Option<usize>,
    /// Bytes copied host to device per step (cuda).
    pub h2d_bytes_per_step: Option<u64>,
}

impl Report {
    pub fn to_json(&self) -> Value {
        json!({
            "backend": self.backend,
            "function": self.function,
            "arena_bytes": self.arena_bytes,
            "arena_allocated_bytes": self.arena_allocated_bytes,
            "input_bytes": self.input_bytes,
            "compile_ms": self.compile_ms,
            "step_ms": self.step_ms,
            "steps": self.steps,
            "device_memory_bytes": self.device_memory_bytes,
            "device": self.device,
            "kernels": self.kernels,
            "distinct_kernels": self.distinct_kernels,
            "workspace_bytes": self.workspace_bytes,
            "threads": self.threads,
            "h2d_bytes_per_step": self.h2d_bytes_per_step,
        })
    }
}
