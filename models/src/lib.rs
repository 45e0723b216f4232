//! ckopt-models: the benchmark models of `ckopt-gen`, built with the IR builder API.
