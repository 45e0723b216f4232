//! Shared helpers of the ckopt command-line tools.
