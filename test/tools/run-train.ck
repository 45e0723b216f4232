/// ckopt-run --train: SGD steps on the {ck.param} arguments of a ckopt-gen
/// model through its step function @NAME_step (built in-process by autodiff
/// and sgd when the file has none), one progress line per step, a summary,
/// and a report with the first and last loss. That the loss falls is pinned by tools/tests/train.rs.

// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | ckopt-run - --train --steps 3 --lr 0.1 | FileCheck %s --check-prefix=STEPS
// STEPS:      step 1/3 loss {{[0-9]+\.[0-9]+}}
// STEPS-NEXT: step 2/3 loss {{[0-9]+\.[0-9]+}}
// STEPS-NEXT: step 3/3 loss {{[0-9]+\.[0-9]+}}
// STEPS-NEXT: # trained @mlp on interp with @mlp_step (built by autodiff and sgd): 3 steps, lr 0.1, first loss

/// --report gives first_loss and last_loss (and the whole loss curve).
// RUN: ckopt-gen lstm --depth 1 --seq 2 --width 4 --batch 2 | ckopt-run - --train --steps 2 --lr 0.5 --report - | FileCheck %s --check-prefix=REPORT
// REPORT: step 2/2 loss
// REPORT: "first_loss": {{[0-9]}}
// REPORT: "function": "lstm",
// REPORT: "grad_function": "lstm_grad",
// REPORT: "last_loss": {{[0-9]}}
// REPORT: "step_function": "lstm_step",

/// Bad uses: training flags without --train, a non-positive rate, a backend
/// without training, a function without a scalar loss.
// RUN: not ckopt-run %s --steps 3 2>&1 | FileCheck %s --check-prefix=NOTRAIN
// NOTRAIN: --train
// RUN: ckopt-gen mlp --depth 1 --width 4 --batch 2 | not ckopt-run - --train --lr=-1 2>&1 | FileCheck %s --check-prefix=LR
// LR: error: --lr must be a positive number
// RUN: not ckopt-run %s --train --func vec 2>&1 | FileCheck %s --check-prefix=VEC
// VEC: error: @vec cannot be trained: its first result must be a rank-0 loss

module {
  func.func @vec(%x: tensor<3xf32> {ck.param}) -> tensor<3xf32> {
    %y = "ck.relu"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    "ck.return"(%y) : (tensor<3xf32>) -> ()
  }
}
