//! ckopt-passes: the Pass trait, the PassManager and its registry, analyses
//! (liveness, flops, the memory report) and the passes themselves.
//!
//! Each pass lives in `src/<name>.rs` as a plain `pub fn` plus a thin `Pass`
//! shell and one entry in `registry.rs`.

pub mod analysis;
pub mod autocast;
pub mod autodiff;
pub mod canonicalize;
pub mod cse;
pub mod dce;
pub mod eqsat;
pub mod fuse;
pub mod identities;
pub mod inplace;
pub mod manager;
pub mod memplan;
pub mod memplan_check;
pub mod registry;
pub mod remat;
pub mod rewrite;
pub mod sgd;
pub mod train;

pub use manager::{OptionError, Pass, PassManager, PassOptions, Statistics, parse_pipeline};
pub use registry::{PassInfo, registry};
