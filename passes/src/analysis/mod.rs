//! Analyses: the numbers that matter, each computed by one function and
//! reused by reports, passes and benchmarks (docs/memory.md).

pub mod flops;
pub mod liveness;
pub mod phase;
pub mod report;
pub mod timeline;

pub use flops::op_flops;
pub use liveness::{Interval, Liveness, liveness, live_bytes_timeline, peak};
pub use phase::{Phase, op_phases};
pub use report::{MemoryReport, argument_bytes, memory_report, module_report, reports_json};
pub use timeline::{esc, func_timeline_svg, memory_timeline_svg, nice_step, svg_document};
