/// memplan: offsets from liveness-based sharing, in-place results at their
/// operand's offset, ck.arena_bytes on the function, and its errors.

// RUN: ckopt-opt %s --pass-pipeline='memplan' | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='memplan{align=256}' | FileCheck %s --check-prefix=A256
// RUN: ckopt-opt %s --pass-pipeline='memplan' --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// RUN: ckopt-opt %s --pass-pipeline='memplan' --memory-report=- -o /dev/null | FileCheck %s --check-prefix=REPORT

/// A chain needs two 256-byte slots: values alternate between them, the
/// reduction (16 bytes, padded to 64) reuses a dead slot.
// CHECK-LABEL: func.func @chain(
// CHECK-SAME:    attributes {ck.arena_bytes = 512 : i64}
// CHECK-NEXT:    "ck.exp"(%x) {ck.offset = 0 : i64}
// CHECK-NEXT:    "ck.tanh"(%a) {ck.offset = 256 : i64}
// CHECK-NEXT:    "ck.relu"(%b) {ck.offset = 0 : i64}
// CHECK-NEXT:    "ck.reduce_sum"(%c) {ck.offset = 256 : i64, dims = [1]}
// CHECK-NEXT:    "ck.neg"(%c) {ck.offset = 256 : i64}

/// With a 256-byte alignment the 16-byte reduction takes a full slot.
// A256-LABEL: func.func @chain(
// A256-SAME:    attributes {ck.arena_bytes = 512 : i64}
// A256:         "ck.reduce_sum"(%c) {ck.offset = 256 : i64, dims = [1]}

/// In-place marks (already legal) put the result at the operand's offset: one slot.
// CHECK-LABEL: func.func @marked(
// CHECK-SAME:    attributes {ck.arena_bytes = 256 : i64}
// CHECK-NEXT:    "ck.exp"(%x) {ck.offset = 0 : i64}
// CHECK-NEXT:    "ck.tanh"(%a) {ck.inplace = 0 : i64, ck.offset = 0 : i64}
// CHECK-NEXT:    "ck.add"(%b, %b) {ck.inplace = 1 : i64, ck.offset = 0 : i64}

/// A value read later (a skip connection) keeps its bytes while the other branch runs.
// CHECK-LABEL: func.func @skip(
// CHECK-SAME:    attributes {ck.arena_bytes = 768 : i64}
// CHECK-NEXT:    %a = "ck.exp"(%x) {ck.offset = [[A:[0-9]+]] : i64}
// CHECK-NEXT:    %b = "ck.tanh"(%a) {ck.offset = [[B:[0-9]+]] : i64}
// CHECK-NEXT:    %c = "ck.neg"(%b) {ck.offset = [[C:[0-9]+]] : i64}
// CHECK-NEXT:    "ck.add"(%a, %c)

// STATS: memplan
// STATS-DAG: (S) 512 @chain arena-bytes - arena size of the plan
// STATS-DAG: (S) 512 @chain first-fit-arena-bytes - arena size of a first-fit
// STATS-DAG: (S) 512 @chain live-peak-bytes - peak of the bytes live at once

// REPORT: "function": "chain"
// REPORT: "arena_bytes": 512
// REPORT: "function": "marked"
// REPORT: "arena_bytes": 256
// REPORT: "inplace_ops": 2

module {
  func.func @chain(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %a = "ck.exp"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = "ck.tanh"(%a) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %c = "ck.relu"(%b) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %s = "ck.reduce_sum"(%c) {dims = [1]} : (tensor<4x16xf32>) -> tensor<4xf32>
    %d = "ck.neg"(%c) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    "ck.return"(%d) : (tensor<4x16xf32>) -> ()
  }
  func.func @marked(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %a = "ck.exp"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = "ck.tanh"(%a) {ck.inplace = 0 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %c = "ck.add"(%b, %b) {ck.inplace = 1 : i64} : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    "ck.return"(%c) : (tensor<4x16xf32>) -> ()
  }
  func.func @skip(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
    %a = "ck.exp"(%x) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %b = "ck.tanh"(%a) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %c = "ck.neg"(%b) : (tensor<4x16xf32>) -> tensor<4x16xf32>
    %d = "ck.add"(%a, %c) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
    "ck.return"(%d) : (tensor<4x16xf32>) -> ()
  }
}
