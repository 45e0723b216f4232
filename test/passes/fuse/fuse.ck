// RUN: ckopt-opt %s --split-input-file --pass-pipeline='fuse' | FileCheck %s
// RUN: ckopt-opt %s --split-input-file --pass-pipeline='fuse' | %mlir-opt --allow-unregistered-dialect --split-input-file > /dev/null

/// Loop fusion: the bias broadcast, the add and the relu after a matmul are
/// one group (one kernel); the matmul is a library call and stays apart.
// CHECK-LABEL: func.func @bias_relu
// CHECK: "ck.matmul"
// CHECK-NOT: ck.fusion
// CHECK-SAME: -> tensor<4x8xf32>
// CHECK-NEXT: "ck.broadcast"(%{{.*}}) {ck.fusion = [[G:[0-9]+]] : i64
// CHECK-NEXT: "ck.add"(%{{.*}}) {ck.fusion = [[G]] : i64}
// CHECK-NEXT: "ck.relu"(%{{.*}}) {ck.fusion = [[G]] : i64}
// CHECK-NEXT: "ck.return"
func.func @bias_relu(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %mm = "ck.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %bb = "ck.broadcast"(%b) {dims = [1]} : (tensor<8xf32>) -> tensor<4x8xf32>
  %z = "ck.add"(%mm, %bb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %h = "ck.relu"(%z) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  "ck.return"(%h) : (tensor<4x8xf32>) -> ()
}

// -----

/// LayerNorm without affine parameters: 12 ops, 3 kernels. The mean
/// (reduction + scale), then the centred values (stored: the last kernel
/// reads them) with the variance and rsqrt as the reduction's epilogue, then
/// the normalization.
// CHECK-LABEL: func.func @layernorm
// CHECK: "ck.reduce_sum"(%x) {ck.fusion = [[A:[0-9]+]] : i64, dims = [1]}
// CHECK-NEXT: "ck.scale"{{.*}}ck.fusion = [[A]] : i64
// CHECK-NEXT: "ck.broadcast"{{.*}}ck.fusion = [[B:[0-9]+]] : i64
// CHECK-NEXT: %[[C:.*]] = "ck.sub"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.mul"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.reduce_sum"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.scale"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.fill"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.add"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.rsqrt"{{.*}}ck.fusion = [[B]] : i64
// CHECK-NEXT: "ck.broadcast"{{.*}}ck.fusion = [[N:[0-9]+]] : i64
// CHECK-NEXT: "ck.mul"(%[[C]], %{{.*}}) {ck.fusion = [[N]] : i64}
func.func @layernorm(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %sum = "ck.reduce_sum"(%x) {dims = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  %mean = "ck.scale"(%sum) {value = 0.125 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %meanb = "ck.broadcast"(%mean) {dims = [0]} : (tensor<4xf32>) -> tensor<4x8xf32>
  %c = "ck.sub"(%x, %meanb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %c2 = "ck.mul"(%c, %c) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %vsum = "ck.reduce_sum"(%c2) {dims = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  %var = "ck.scale"(%vsum) {value = 0.125 : f32} : (tensor<4xf32>) -> tensor<4xf32>
  %eps = "ck.fill"() {value = 1.0e-5 : f32} : () -> tensor<4xf32>
  %vareps = "ck.add"(%var, %eps) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %rstd = "ck.rsqrt"(%vareps) : (tensor<4xf32>) -> tensor<4xf32>
  %rstdb = "ck.broadcast"(%rstd) {dims = [0]} : (tensor<4xf32>) -> tensor<4x8xf32>
  %y = "ck.mul"(%c, %rstdb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  "ck.return"(%y) : (tensor<4x8xf32>) -> ()
}

// -----

/// Softmax: 7 ops, 3 kernels (the max; the exponentials, stored, with their
/// sum; the division).
// CHECK-LABEL: func.func @softmax
// CHECK: "ck.reduce_max"(%x) {dims = [1]}
// CHECK-NEXT: "ck.broadcast"{{.*}}ck.fusion = [[E:[0-9]+]] : i64
// CHECK-NEXT: "ck.sub"{{.*}}ck.fusion = [[E]] : i64
// CHECK-NEXT: "ck.exp"{{.*}}ck.fusion = [[E]] : i64
// CHECK-NEXT: "ck.reduce_sum"{{.*}}ck.fusion = [[E]] : i64
// CHECK-NEXT: "ck.broadcast"{{.*}}ck.fusion = [[D:[0-9]+]] : i64
// CHECK-NEXT: "ck.div"{{.*}}ck.fusion = [[D]] : i64
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %m = "ck.reduce_max"(%x) {dims = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  %mb = "ck.broadcast"(%m) {dims = [0]} : (tensor<4xf32>) -> tensor<4x8xf32>
  %s = "ck.sub"(%x, %mb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %e = "ck.exp"(%s) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %z = "ck.reduce_sum"(%e) {dims = [1]} : (tensor<4x8xf32>) -> tensor<4xf32>
  %zb = "ck.broadcast"(%z) {dims = [0]} : (tensor<4xf32>) -> tensor<4x8xf32>
  %y = "ck.div"(%e, %zb) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  "ck.return"(%y) : (tensor<4x8xf32>) -> ()
}

// -----

/// An in-place mark the group would make unsafe is dropped: the transpose
/// reads %a at other elements than the exp writes.
// CHECK-LABEL: func.func @unsafe_inplace
// CHECK: "ck.exp"(%a) {ck.fusion = [[U:[0-9]+]] : i64}
// CHECK-NOT: ck.inplace
// CHECK: "ck.return"
func.func @unsafe_inplace(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %a = "ck.neg"(%x) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %t = "ck.transpose"(%a) {perm = [1, 0]} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %e = "ck.exp"(%a) {ck.inplace = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %s = "ck.add"(%t, %e) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  "ck.return"(%s) : (tensor<4x4xf32>) -> ()
}
