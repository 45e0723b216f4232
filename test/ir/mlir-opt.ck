// RUN: ckopt-opt %S/roundtrip.ck | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=MLIR
// RUN: ckopt-opt %S/roundtrip.ck | %mlir-opt --allow-unregistered-dialect | ckopt-opt | FileCheck %s --check-prefix=BACK
// RUN: ckopt-opt %s | %mlir-opt --allow-unregistered-dialect --verify-roundtrip | FileCheck %s --check-prefix=SELF
// RUN: ckopt-opt %S/dtypes.ck | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null
// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null
// RUN: ckopt-gen resmlp --depth 2 --width 8 --batch 4 | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null
// RUN: ckopt-gen lstm --depth 2 --seq 3 --width 4 --batch 2 | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null
// RUN: ckopt-gen resnet --depth 2 --channels 4 --image 6 --batch 2 --classes 3 | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null
// RUN: ckopt-gen transformer --depth 2 --seq 4 --width 8 --heads 2 --batch 2 | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null
// RUN: ckopt-gen gpt --depth 2 --seq 4 --width 8 --heads 2 --vocab 7 --batch 2 | %mlir-opt --allow-unregistered-dialect | ckopt-opt > /dev/null

/// What ckopt prints is accepted by upstream mlir-opt (LLVM 22) with
/// --allow-unregistered-dialect, and what mlir-opt prints back (renamed
/// values, `5.000000e-01`-style floats, `\22` escapes) is accepted by ckopt,
/// for this file and for every ckopt-gen model.

// MLIR-LABEL: func.func @all_ops(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32> {ck.param}
// MLIR: "ck.scale"(%{{.*}}) {value = 5.000000e-01 : f32}
// MLIR: "ck.fill"() {value = 0x7F800000 : f32} : () -> tensor<f32>
// MLIR: "ck.conv2d"(%arg3, %arg4) {padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// MLIR: "ck.conv2d"(%arg3, %{{.*}}) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x4x4xf32>
// MLIR: "ck.dropout"(%{{.*}}) {rate = 2.500000e-01 : f32, seed = 42 : i64}
// MLIR: "ck.return"(%{{.*}}, %{{.*}}) : (tensor<2x3xf32>, tensor<f32>) -> ()
// MLIR-LABEL: func.func @"quoted name"() -> tensor<f16>
// MLIR: {user.note = "tab\09quote\22", value = 0.000000e+00 : f32}

// BACK-LABEL: func.func @all_ops(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32> {ck.param}
// BACK: %13 = "ck.scale"(%12) {value = 0.5 : f32}
// BACK: %14 = "ck.scale"(%13) {value = 1.0e-5 : f32}
// BACK: %15 = "ck.fill"() {value = -2.0 : f32}
// BACK: "ck.return"(%38, %20) : (tensor<2x3xf32>, tensor<f32>) -> ()
// BACK-LABEL: func.func @"quoted name"() -> tensor<f16>
// BACK: {user.note = "tab\09quote\"", value = 0.0 : f32}

// SELF-LABEL: func.func @f(%arg0: tensor<4x4xf32> {ck.param}) -> tensor<f32>
// SELF: "ck.reduce_sum"(%{{.*}}) {ck.mirror, dims = [0, 1]}
func.func @f(%w: tensor<4x4xf32> {ck.param}) -> tensor<f32> {
  %a = "ck.matmul"(%w, %w) {transpose_b = true} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %l = "ck.reduce_sum"(%a) {dims = [0, 1], ck.mirror} : (tensor<4x4xf32>) -> tensor<f32>
  "ck.return"(%l) : (tensor<f32>) -> ()
}
