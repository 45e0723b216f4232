/// After fuse, memplan gives no bytes to values that are never stored: the
/// broadcast and the add inside the group get no ck.offset, the relu's
/// result does; the memory report counts the unstored bytes as fused_bytes
/// and one kernel per group; pass statistics say how many kernels there are.
// RUN: ckopt-opt %s --pass-pipeline='fuse,memplan' | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='fuse,memplan' --memory-report=- -o /dev/null | FileCheck %s --check-prefix=REPORT
// RUN: ckopt-opt %s --pass-pipeline='fuse' --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS

// CHECK: "ck.matmul"{{.*}}ck.offset
// CHECK-NEXT: "ck.broadcast"(%b) {ck.fusion = 0 : i64, dims = [1]}
// CHECK-NEXT: "ck.add"(%{{.*}}) {ck.fusion = 0 : i64}
// CHECK-NEXT: "ck.relu"(%{{.*}}) {ck.fusion = 0 : i64, ck.offset = {{[0-9]+}} : i64}

// REPORT: "fused_bytes": 256,
// REPORT: "kernels": 2

// STATS: fuse
// STATS-NEXT: (S) 4 @f kernels-before - kernels (ops) before fusion
// STATS-NEXT: (S) 2 @f kernels-after
// STATS-NEXT: (S) 1 @f fusion-groups
// STATS-NEXT: (S) 2 @f values-not-materialized
// STATS-NEXT: (S) 256 @f bytes-not-materialized

module {
  func.func @f(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
    %mm = "ck.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %bb = "ck.broadcast"(%b) {dims = [1]} : (tensor<8xf32>) -> tensor<4x8xf32>
    %z = "ck.add"(%mm, %bb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %h = "ck.relu"(%z) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "ck.return"(%h) : (tensor<4x8xf32>) -> ()
  }
}
