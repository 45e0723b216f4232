/// ckopt-translate --from=onnx and ckopt-run --params/--params-out on the
/// PyTorch-exported MLP (test/onnx/models/mlp): names, parameter arguments,
/// the mse loss, weights through safetensors, and the errors.
// REQUIRES: lower

// RUN: ckopt-translate --from=onnx %S/../onnx/models/mlp/model.onnx --batch=4 --loss=mse -o %t.ck --params-out=%t.st
// RUN: FileCheck %s --check-prefix=IR < %t.ck
// IR:      func.func @main_graph(%x: tensor<4x6xf32> {ck.name = "x"}, %target: tensor<4x3xf32>, %fc1.weight: tensor<12x6xf32> {ck.name = "fc1.weight", ck.param}, %fc1.bias: tensor<12xf32> {ck.name = "fc1.bias", ck.param},
// IR-SAME: -> tensor<f32>
// IR:      "ck.matmul"(%x, %fc1.weight) {transpose_b = true}

/// The imported function verifies in mlir-opt too.
// RUN: %mlir-opt --allow-unregistered-dialect %t.ck -o /dev/null

/// Evaluating with the exported weights, then training writes them back.
// RUN: ckopt-run %t.ck --params %t.st --seed 1 | FileCheck %s --check-prefix=EVAL
// RUN: ckopt-run %t.ck --params %t.st --seed 1 --train --steps 3 --lr 0.05 --params-out %t.trained.st | FileCheck %s --check-prefix=TRAIN
// RUN: ckopt-run %t.ck --params %t.trained.st --seed 1 | FileCheck %s --check-prefix=EVAL
// RUN: not cmp -s %t.st %t.trained.st
// EVAL: result 0: tensor<f32>
// EVAL: inputs from seed 1, parameters from {{.*}}.st
// TRAIN: step 1/3 loss
// TRAIN: step 3/3 loss

/// Errors: a dynamic batch without --batch, a non-ONNX file, weights that do not match.
// RUN: not ckopt-translate --from=onnx %S/../onnx/models/mlp/model.onnx 2>&1 | FileCheck %s --check-prefix=DYN
// DYN: model.onnx: error: graph input 'x' has a dynamic dimension 'batch' at position 0; ck shapes are static: pass --batch=N
// RUN: not ckopt-translate --from=onnx %s 2>&1 | FileCheck %s --check-prefix=NOTONNX
// NOTONNX: onnx-import.ck: error: not a valid ONNX model (protobuf decoding failed
// RUN: ckopt-translate --from=onnx %S/../onnx/models/mlp/model.onnx --batch=8 -o %t.b8.ck
/// The weights do not depend on the batch size.
// RUN: ckopt-run %t.b8.ck --params %t.st | FileCheck %s --check-prefix=OK8
// OK8: result 0: tensor<8x3xf32>
// RUN: ckopt-translate --from=onnx %S/../onnx/models/cnn/model.onnx --batch=2 -o %t.cnn.ck
// RUN: not ckopt-run %t.cnn.ck --params %t.st 2>&1 | FileCheck %s --check-prefix=MISMATCH
// MISMATCH: .st: error: no tensor for {ck.param} arguments 'stem.weight'
// RUN: head -c 20 %t.st > %t.cut.st
// RUN: not ckopt-run %t.ck --params %t.cut.st 2>&1 | FileCheck %s --check-prefix=CUT
// CUT: cut.st: error: not a valid safetensors file
