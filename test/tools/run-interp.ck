/// ckopt-run --backend interp: given inputs give hand-computed outputs as
/// the tensor JSON of docs/tools.md, readable text, and a report with the measured peak;
/// --func picks a function; --seed inputs are deterministic.

// RUN: echo '{"inputs": [{"shape": [2, 3], "data": [1.0, 2.0, 3.0, -1.0, 0.0, 1.0]}, {"shape": [3, 2], "data": [1.0, -1.0, 0.0, 1.0, 1.0, 0.0]}]}' > %t.json
// RUN: ckopt-run %s --inputs %t.json --outputs - | FileCheck %s --check-prefix=OUT
// RUN: ckopt-run %s --backend interp --inputs %t.json --outputs %t.out.json --report - | FileCheck %s --check-prefix=REP
// RUN: FileCheck %s --check-prefix=OUT < %t.out.json
// RUN: ckopt-run %s --inputs %t.json | FileCheck %s --check-prefix=TXT

/// x w = [[4, 1], [0, 1]]; relu keeps it; the sum of squares is 18.
// OUT:      {"outputs": [
// OUT-NEXT:   {"shape": [], "data": [18.0]},
// OUT-NEXT:   {"shape": [2, 2], "data": [4.0, 1.0, 0.0, 1.0]}
// OUT-NEXT: ]}

/// Peak: at reduce_sum, %a (returned, 16 B) + %s (16 B) + %l (4 B) are held.
// REP-DAG: "backend": "interp"
// REP-DAG: "function": "mlp"
// REP-DAG: "peak_bytes": 36
// REP-DAG: "arg_bytes": 48
// REP-DAG: "step_time_ms": {{[0-9.e-]+}}

// TXT:      result 0: tensor<f32> = 18.0
// TXT-NEXT: result 1: tensor<2x2xf32> = {{\[\[}}4.0, 1.0], [0.0, 1.0]]
// TXT-NEXT: # @mlp on interp: {{[0-9.]+}} ms, peak 36 bytes (arguments excluded), inputs from file

module {
  func.func @mlp(%x: tensor<2x3xf32>, %w: tensor<3x2xf32> {ck.param}) -> (tensor<f32>, tensor<2x2xf32>) {
    %h = "ck.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
    %a = "ck.relu"(%h) : (tensor<2x2xf32>) -> tensor<2x2xf32>
    %s = "ck.mul"(%a, %a) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<2x2xf32>) -> tensor<f32>
    "ck.return"(%l, %a) : (tensor<f32>, tensor<2x2xf32>) -> ()
  }

  /// conv2d is cross-correlation: y[i, j] = x[i, j] - x[i+1, j+1] = -4;
  /// stride 2 and padding 1 give [-1, -3, -7, -4]; 2x2 max pooling of the
  /// 3x3 input (stride 1) gives [5, 6, 8, 9].
  // RUN: echo '{"inputs": [{"shape": [1, 1, 3, 3], "data": [1, 2, 3, 4, 5, 6, 7, 8, 9]}, {"shape": [1, 1, 2, 2], "data": [1, 0, 0, -1]}]}' > %t.conv.json
  // RUN: ckopt-run %s --func conv --inputs %t.conv.json --outputs - | FileCheck %s --check-prefix=CONV
  // CONV:      {"outputs": [
  // CONV-NEXT:   {"shape": [1, 1, 2, 2], "data": [-4.0, -4.0, -4.0, -4.0]},
  // CONV-NEXT:   {"shape": [1, 1, 2, 2], "data": [-1.0, -3.0, -7.0, -4.0]},
  // CONV-NEXT:   {"shape": [1, 1, 2, 2], "data": [5.0, 6.0, 8.0, 9.0]}
  // CONV-NEXT: ]}
  func.func @conv(%x: tensor<1x1x3x3xf32>, %w: tensor<1x1x2x2xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
    %y = "ck.conv2d"(%x, %w) : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %z = "ck.conv2d"(%x, %w) {padding = [1, 1], stride = [2, 2]} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
    %p = "ck.max_pool2d"(%x) {stride = [1, 1], window = [2, 2]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
    "ck.return"(%y, %z, %p) : (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) -> ()
  }
}

/// Same seed, same inputs and outputs; another seed differs.
// RUN: ckopt-run %s --seed 7 --outputs %t.a.json
// RUN: ckopt-run %s --seed 7 --outputs %t.b.json
// RUN: ckopt-run %s --seed 8 --outputs %t.c.json
// RUN: diff %t.a.json %t.b.json
// RUN: not diff %t.a.json %t.c.json
/// The default is --seed 0, and the file may come on stdin.
// RUN: ckopt-run %s --seed 0 --outputs %t.d.json
// RUN: cat %s | ckopt-run - --outputs %t.e.json
// RUN: diff %t.d.json %t.e.json
