//! ckopt-bench: benchmark drivers.
