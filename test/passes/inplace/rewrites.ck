/// inplace: the named algebraic rewrites (each removes its ops) and the
/// runner limits with the stop reason in --pass-statistics.

// RUN: ckopt-opt %s --pass-pipeline='inplace' | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='inplace' --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// RUN: ckopt-opt %s --pass-pipeline='inplace{iter-limit=1}' --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=ITER
// RUN: ckopt-opt %s --pass-pipeline='inplace{node-limit=20}' --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=NODES
// RUN: not ckopt-opt %s --pass-pipeline='inplace{nodes=3}' 2>&1 | FileCheck %s --check-prefix=OPT

/// mul-one, add-zero, neg-neg: -(-((e * 1) + 0)) is e; transpose-transpose
/// then transpose-identity: x; reshape-reshape: one reshape of x;
/// scale-scale (2 is a power of two): scale{6}; 3*3 would round twice: kept.
// CHECK-LABEL: func.func @algebra(
// CHECK-NEXT:    %[[E:.*]] = "ck.exp"(%x)
// CHECK-NEXT:    %[[R:.*]] = "ck.reshape"(%x) : (tensor<2x3xf32>) -> tensor<6xf32>
// CHECK-NEXT:    %[[S:.*]] = "ck.scale"(%x) {value = 6.0 : f32}
// CHECK-NEXT:    %[[U1:.*]] = "ck.scale"(%x) {value = 3.0 : f32}
// CHECK-NEXT:    %[[U2:.*]] = "ck.scale"(%[[U1]]) {ck.inplace = 0 : i64, value = 3.0 : f32}
// CHECK-NEXT:    "ck.return"(%[[E]], %x, %[[R]], %[[S]], %[[U2]])
// CHECK-NOT:     ck.neg
// CHECK-NOT:     ck.transpose

// STATS: inplace
// STATS-DAG: saturated @algebra e-graph-stop-reason
// STATS-DAG: 1 @algebra rewrite-applied[mul-one]
// STATS-DAG: 1 @algebra rewrite-applied[add-zero]
// STATS-DAG: 1 @algebra rewrite-applied[neg-neg]
// STATS-DAG: 2 @algebra rewrite-applied[transpose-transpose]
// STATS-DAG: 1 @algebra rewrite-applied[transpose-identity]
// STATS-DAG: 1 @algebra rewrite-applied[reshape-reshape]
// STATS-DAG: 1 @algebra rewrite-applied[scale-scale]
// STATS-DAG: 10 @algebra ops-simplified-away

// ITER: iteration limit (1) @algebra e-graph-stop-reason
// NODES: node limit (20) @algebra e-graph-stop-reason
// OPT: error: pass 'inplace' has no option 'nodes'; valid options: node-limit, iter-limit, time-limit-ms

module {
  func.func @algebra(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
    %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<2x3xf32>
    %zero = "ck.fill"() {value = 0.0 : f32} : () -> tensor<2x3xf32>
    %e = "ck.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %m = "ck.mul"(%e, %one) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %p = "ck.add"(%m, %zero) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %n1 = "ck.neg"(%p) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %n2 = "ck.neg"(%n1) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %t1 = "ck.transpose"(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %t2 = "ck.transpose"(%t1) {perm = [1, 0]} : (tensor<3x2xf32>) -> tensor<2x3xf32>
    %r1 = "ck.reshape"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %r2 = "ck.reshape"(%r1) : (tensor<3x2xf32>) -> tensor<6xf32>
    %s1 = "ck.scale"(%x) {value = 2.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %s2 = "ck.scale"(%s1) {value = 3.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %u1 = "ck.scale"(%x) {value = 3.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %u2 = "ck.scale"(%u1) {value = 3.0 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    "ck.return"(%n2, %t2, %r2, %s2, %u2) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }
}
