//! ckopt-train: the training job of `ckopt-run --train` and of the `ckopt`
//! API's `Trainer`.
//!
//! - `data`: safetensors datasets, memory-mapped, validated against the
//!   loss function before any step, shuffled per epoch, prefetched by a
//!   background thread.
//! - `schedule`: learning-rate schedules (constant; linear warmup then
//!   cosine decay), fed to the step's `lr` input.
//! - `checkpoint`: parameters + optimizer state + step as safetensors with
//!   JSON metadata, written atomically, loaded strictly.
//! - `eval`: mean loss and accuracy on an evaluation dataset.
//! - `job`: the loop tying them together on any `StepExec`.
//! - `plot`: the train/eval loss picture (SVG).

pub mod checkpoint;
pub mod data;
pub mod eval;
pub mod job;
pub mod plot;
pub mod schedule;

pub use data::{DataError, Dataset};
pub use eval::{EvalResult, Evaluator, Target, eval_function};
pub use job::{JobResult, JobSpec, Observer, Quiet};
pub use schedule::{Schedule, ScheduleKind};
