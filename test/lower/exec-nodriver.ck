/// ckopt-exec on a machine without an NVIDIA driver: a clear error and
/// exit 1, never a crash; bundle and input errors come first.
// REQUIRES: lower
// UNSUPPORTED: cuda-driver
// RUN: ckopt-translate --to=cuda-bundle %s -o %t.ckb
// RUN: not ckopt-exec %t.ckb 2>&1 | FileCheck %s
// RUN: not ckopt-exec %t.ckb --func f --seed 3 --report - 2>&1 | FileCheck %s
// RUN: not ckopt-exec %t.ckb --train 2>&1 | FileCheck %s --check-prefix=TRAIN
// RUN: not ckopt-run %s --backend cuda --tf32 2>&1 | FileCheck %s --check-prefix=RUNNER

module {
  func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> attributes {ck.arena_bytes = 16 : i64} {
    %y = "ck.neg"(%x) {ck.offset = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%y) : (tensor<4xf32>) -> ()
  }
}
// CHECK: ckopt-exec: error: cuda backend: no CUDA driver: libcuda.so could not be loaded
// CHECK-NOT: panicked
// TRAIN: ckopt-exec: error: the bundle has no training step for @f (it has none); translate a module with @f_step
// RUNNER: error: cuda backend: no CUDA driver: libcuda.so could not be loaded
