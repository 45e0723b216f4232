//! ckopt-interp: the reference evaluator, the oracle of every ckopt test.
//!
//! f32 everywhere, plain loops, one fresh tensor per op: clarity over speed.
//! - `tensor`: `Tensor` (shape + row-major data) and index helpers.
//! - `eval`: `eval_op` / `eval_kind`, the semantics of every `ck` op
//!   (reused by other executors that manage memory themselves).
//! - `run`: `run_func` runs a function in schedule order and measures the
//!   bytes it holds (`run_func_with_stats`).
//! - `random`: the dropout mask (`dropout_keep`, a pure counter-based hash)
//!   and deterministic inputs (`random_inputs`).
//!
//! Invariant: no input (module, tensors) makes these functions panic; every
//! problem is a `ckopt_ir::Diag` with a location.

pub mod arena;
pub mod eval;
pub mod exec;
pub mod mixed;
pub mod random;
pub mod run;
pub mod tensor;

pub use arena::run_func_in_arena;
pub use eval::{eval_kind, eval_op};
pub use exec::{ArgBuf, InterpExec, StepExec};
pub use random::{dropout_keep, random_arg, random_inputs, try_random_inputs};
pub use run::{RunStats, check_inputs, find_func, run_func, run_func_with_stats};
pub use tensor::{ShapeError, Tensor, round_to};
