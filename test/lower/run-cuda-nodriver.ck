/// ckopt-run --backend cuda on a machine without an NVIDIA driver: a clear
/// error and exit 1, never a crash.
// REQUIRES: lower
// UNSUPPORTED: cuda-driver
// RUN: not ckopt-run %s --backend cuda 2>&1 | FileCheck %s

module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {ck.arena_bytes = 16 : i64} {
    %y = "ck.neg"(%x) {ck.offset = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}
// CHECK: error: cuda backend: no CUDA driver: libcuda.so could not be loaded
// CHECK-NOT: panicked
