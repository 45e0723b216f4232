//! ckopt-interp: the reference evaluator (f32, straightforward). Filled in by the foundation work.
