/// A GPT exported by PyTorch (test/onnx/models/gpt_ts: TorchScript exporter)
/// through ckopt-translate with integer token ids and integer labels, then
/// ckopt-run on the interpreter: the loss of the exported F.cross_entropy
/// (test/onnx/models/gpt_loss_ts/output_0.pb: 3.5638 from onnxruntime),
/// training (with and without remat), and the errors for bad integer inputs.
// REQUIRES: lower

// RUN: ckopt-translate --from=onnx %S/../onnx/models/gpt_ts/model.onnx --loss=cross-entropy-index -o %t.ck --params-out=%t.st
// RUN: FileCheck %s --check-prefix=IR < %t.ck
// IR:      func.func @main_graph(%ids: tensor<2x8xi64> {ck.name = "ids"}, %labels: tensor<2x8xi64>, %wte.weight: tensor<32x16xf32> {ck.name = "wte.weight", ck.param}
// IR-SAME: -> tensor<f32>
// IR:      "ck.gather"(%wte.weight, {{.*}}) {axis = 0 : i64} : (tensor<32x16xf32>, tensor<2x8xi64>) -> tensor<2x8x16xf32>
// IR:      "ck.select"({{.*}}) : (tensor<2x2x8x8xi1>, tensor<2x2x8x8xf32>, tensor<2x2x8x8xf32>) -> tensor<2x2x8x8xf32>
// IR:      "ck.cross_entropy"({{.*}}) {ignore_index = -100 : i64} : (tensor<16x32xf32>, tensor<16xi64>) -> tensor<f32>

/// The imported function verifies in mlir-opt too.
// RUN: %mlir-opt --allow-unregistered-dialect %t.ck -o /dev/null

/// The loss of the exported model's batch (one label is -100, ignored).
// RUN: ckopt-run %t.ck --params %t.st --inputs %S/Inputs/gpt-batch.json | FileCheck %s --check-prefix=EVAL
// EVAL: result 0: tensor<f32> = 3.563{{[78][0-9]*}}

/// Training on the interpreter: the loss falls, and a step function planned
/// with sqrt remat gives the same losses, digit for digit.
// RUN: ckopt-run %t.ck --params %t.st --inputs %S/Inputs/gpt-batch.json --train --steps 5 --lr 0.1 | grep '^step' > %t.none.txt
// RUN: FileCheck %s --check-prefix=TRAIN < %t.none.txt
// TRAIN: step 1/5 loss 3.5638
// TRAIN: step 5/5 loss 3.0
// RUN: ckopt-opt %t.ck --pass-pipeline='autodiff,remat{mode=sqrt},sgd{lr=0.1}' -o %t.sqrt.ck
// RUN: grep -q ck.recompute %t.sqrt.ck
// RUN: ckopt-run %t.sqrt.ck --func main_graph --params %t.st --inputs %S/Inputs/gpt-batch.json --train --steps 5 | grep '^step' > %t.sqrt.txt
// RUN: diff %t.none.txt %t.sqrt.txt

/// Float data for the integer ids: an error naming the input and element.
// RUN: not ckopt-run %t.ck --params %t.st --inputs %S/Inputs/gpt-float-ids.json 2>&1 | FileCheck %s --check-prefix=FLOAT
// FLOAT: gpt-float-ids.json{{.*}}error: inputs[0]: "data"[0] is 10.0, but i64 data must be integers

/// A token id outside the vocabulary: a run-time error naming the gather, the index and the bound.
// RUN: not ckopt-run %t.ck --params %t.st --inputs %S/Inputs/gpt-bad-id.json 2>&1 | FileCheck %s --check-prefix=RANGE
// RANGE: error: 'ck.gather' op index 32 at position [1, 7] of the index operand is out of range [0, 32)
