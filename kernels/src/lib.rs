//! ckopt-kernels: kernel templates and launch metadata per op (skeleton until the lowering work).
