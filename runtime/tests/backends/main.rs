//! The runtime's integration tests, as one test binary: each links LLVM and
//! MLIR (about 300 MB in a debug build), so one binary instead of four keeps
//! `make test`'s link time and disk use down. Run one group with
//! `cargo test -p ckopt-runtime --test backends cpu_ops::`.

mod common;
mod cpu_models;
mod cpu_ops;
mod cuda_bundles;
mod cuda_emu;
