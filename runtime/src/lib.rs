//! ckopt-runtime: arena, CPU and CUDA executors (skeleton until the lowering work).
