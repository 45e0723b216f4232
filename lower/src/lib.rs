//! ckopt-lower: ck -> MLIR -> LLVM/NVPTX (skeleton until the lowering work).
