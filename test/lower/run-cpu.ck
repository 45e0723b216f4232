/// ckopt-run --backend cpu: the JIT gives the interpreter's results on given
/// inputs; the report says backend cpu and an arena allocation of exactly
/// ck.arena_bytes; an unplanned function is planned by ckopt-run (memplan).
// REQUIRES: lower
// RUN: echo '{"inputs": [{"shape": [2, 3], "data": [1.0, 2.0, 3.0, -1.0, 0.0, 1.0]}, {"shape": [3, 2], "data": [1.0, -1.0, 0.0, 1.0, 1.0, 0.0]}]}' > %t.json
// RUN: ckopt-run %s --backend cpu --inputs %t.json --outputs - | FileCheck %s --check-prefix=OUT
// RUN: ckopt-run %s --backend cpu --inputs %t.json --outputs %t.out --report - | FileCheck %s --check-prefix=REP
// RUN: ckopt-run %s --func unplanned --backend cpu --inputs %t.json --outputs %t.out --report - | FileCheck %s --check-prefix=PLAN
// RUN: ckopt-run %s --func unplanned --backend cpu --inputs %t.json --outputs - | FileCheck %s --check-prefix=OUT

module {
  func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x2xf32> {ck.param}) -> (tensor<f32>, tensor<2x2xf32>) attributes {ck.arena_bytes = 192 : i64} {
    %h = "ck.matmul"(%x, %w) {ck.offset = 0 : i64} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %a = "ck.relu"(%h) {ck.offset = 64 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %s = "ck.mul"(%a, %a) {ck.offset = 0 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1], ck.offset = 128 : i64} : (tensor<2x2xf32>) -> tensor<f32>
    "ck.return"(%l, %a) : (tensor<f32>, tensor<2x2xf32>) -> ()
  }
  func.func @unplanned(%x: tensor<2x3xf32>, %w: tensor<3x2xf32> {ck.param}) -> (tensor<f32>, tensor<2x2xf32>) {
    %h = "ck.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %a = "ck.relu"(%h) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %s = "ck.mul"(%a, %a) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<2x2xf32>) -> tensor<f32>
    "ck.return"(%l, %a) : (tensor<f32>, tensor<2x2xf32>) -> ()
  }
}

/// x w = [[4, 1], [0, 1]]; relu keeps it; the sum of squares is 18.
// OUT:      {"outputs": [
// OUT-NEXT:   {"shape": [], "data": [18.0]},
// OUT-NEXT:   {"shape": [2, 2], "data": [4.0, 1.0, 0.0, 1.0]}
// OUT-NEXT: ]}

// REP-DAG: "backend": "cpu"
// REP-DAG: "arena_bytes": 192
// REP-DAG: "arena_allocated_bytes": 192
// REP-DAG: "planned_by_ckopt_run": false
// REP-DAG: "step_time_ms":

// PLAN-DAG: "backend": "cpu"
// PLAN-DAG: "planned_by_ckopt_run": true
