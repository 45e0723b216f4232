/// Every ckopt-gen model: autodiff adds @MODEL_grad, which verifies, prints
/// in a form upstream mlir-opt parses, and runs on the interpreter returning
/// the loss and one finite gradient per {ck.param} argument. Gradient values
/// are checked against finite differences in passes/tests/autodiff_models.rs.

// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | ckopt-opt --pass-pipeline=autodiff | ckopt-run - --func mlp_grad --outputs - | FileCheck %s --check-prefix=MLP
/// (loss, w0, b0, w1, b1)
// MLP:      {"outputs": [
// MLP-NEXT:   {"shape": [], "data": [{{[0-9.e-]+}}]},
// MLP-NEXT:   {"shape": [8, 8], "data": [{{[0-9.e, -]+}}]},
// MLP-NEXT:   {"shape": [8], "data": [{{[0-9.e, -]+}}]},
// MLP-NEXT:   {"shape": [8, 8], "data": [{{[0-9.e, -]+}}]},
// MLP-NEXT:   {"shape": [8], "data": [{{[0-9.e, -]+}}]}
// MLP-NEXT: ]}

// RUN: ckopt-gen resmlp --depth 2 --width 8 --batch 4 | ckopt-opt --pass-pipeline=autodiff | ckopt-run - --func resmlp_grad --outputs - | FileCheck %s --check-prefix=ANY
// RUN: ckopt-gen resnet --depth 2 --channels 4 --image 6 --batch 2 --classes 3 | ckopt-opt --pass-pipeline=autodiff | ckopt-run - --func resnet_grad --outputs - | FileCheck %s --check-prefix=ANY
// RUN: ckopt-gen transformer --depth 1 --seq 4 --width 8 --heads 2 --batch 2 | ckopt-opt --pass-pipeline=autodiff | ckopt-run - --func transformer_grad --outputs - | FileCheck %s --check-prefix=ANY
// RUN: ckopt-gen lstm --depth 2 --seq 3 --width 4 --batch 2 | ckopt-opt --pass-pipeline=autodiff | ckopt-run - --func lstm_grad --outputs - | FileCheck %s --check-prefix=ANY
/// Digits only: NaN or infinity would not match.
// ANY:      {"outputs": [
// ANY-NEXT:   {"shape": [], "data": [{{[0-9.e-]+}}]},
// ANY-NEXT:   {"shape": [{{[0-9, ]+}}], "data": [{{[0-9.e, -]+}}]}
// ANY-NOT:  {{NaN|inf}}

/// LSTM gates: the four slices of each cell's pre-activation get one concat
/// per cell (seq 3 -> 3), no zero padding and no accumulation of padded pieces.
// RUN: ckopt-gen lstm --depth 1 --seq 3 --width 4 --batch 2 | ckopt-opt --pass-pipeline=autodiff | FileCheck %s --check-prefix=LSTM
// LSTM-LABEL: func.func @lstm_grad(
// LSTM-COUNT-3: "ck.concat"
// LSTM-NOT:     "ck.concat"

/// Upstream MLIR parses the gradient functions.
// RUN: ckopt-gen resnet --depth 1 --channels 2 --image 4 --batch 1 --classes 2 | ckopt-opt --pass-pipeline=autodiff | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=MLIR
// MLIR: func.func @resnet_grad(
// MLIR: "ck.conv2d_grad_input"
// MLIR: "ck.conv2d_grad_filter"
