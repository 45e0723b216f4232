/// Every ckopt-gen model at a small size runs on the reference interpreter
/// (ckopt-run, seeded inputs) and returns one finite scalar loss.

// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | ckopt-run - --outputs - | FileCheck %s
// RUN: ckopt-gen resmlp --depth 2 --width 8 --batch 4 | ckopt-run - --outputs - | FileCheck %s
// RUN: ckopt-gen lstm --depth 2 --seq 3 --width 4 --batch 2 | ckopt-run - --outputs - | FileCheck %s
// RUN: ckopt-gen resnet --depth 2 --channels 4 --image 6 --batch 2 --classes 3 | ckopt-run - --outputs - | FileCheck %s
// RUN: ckopt-gen transformer --depth 2 --seq 4 --width 8 --heads 2 --batch 2 | ckopt-run - --outputs - | FileCheck %s
// RUN: ckopt-gen transformer | ckopt-run - --seed 3 --outputs - | FileCheck %s

/// Digits only: NaN or infinity would not match.
// CHECK:      {"outputs": [
// CHECK-NEXT:   {"shape": [], "data": [{{-?[0-9]+(\.[0-9]+)?(e-?[0-9]+)?}}]}
// CHECK-NEXT: ]}

/// Every model differentiates (ckopt-opt autodiff) and @MODEL_grad returns
/// the forward loss (the same number) first, then finite gradients.
// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 -o %t.mlp.ck
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline=autodiff -o %t.mlp.grad.ck
// RUN: ckopt-run %t.mlp.ck --outputs %t.mlp.fwd.json
// RUN: ckopt-run %t.mlp.grad.ck --func mlp_grad --outputs %t.mlp.bwd.json
// RUN: cat %t.mlp.fwd.json %t.mlp.bwd.json | FileCheck %s --check-prefix=GRAD
// RUN: ckopt-gen resmlp --depth 2 --width 8 --batch 4 -o %t.res.ck
// RUN: ckopt-opt %t.res.ck --pass-pipeline=autodiff -o %t.res.grad.ck
// RUN: ckopt-run %t.res.ck --outputs %t.res.fwd.json
// RUN: ckopt-run %t.res.grad.ck --func resmlp_grad --outputs %t.res.bwd.json
// RUN: cat %t.res.fwd.json %t.res.bwd.json | FileCheck %s --check-prefix=GRAD
// RUN: ckopt-gen lstm --depth 2 --seq 3 --width 4 --batch 2 -o %t.lstm.ck
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline=autodiff -o %t.lstm.grad.ck
// RUN: ckopt-run %t.lstm.ck --outputs %t.lstm.fwd.json
// RUN: ckopt-run %t.lstm.grad.ck --func lstm_grad --outputs %t.lstm.bwd.json
// RUN: cat %t.lstm.fwd.json %t.lstm.bwd.json | FileCheck %s --check-prefix=GRAD
// RUN: ckopt-gen resnet --depth 2 --channels 4 --image 6 --batch 2 --classes 3 -o %t.rn.ck
// RUN: ckopt-opt %t.rn.ck --pass-pipeline=autodiff -o %t.rn.grad.ck
// RUN: ckopt-run %t.rn.ck --outputs %t.rn.fwd.json
// RUN: ckopt-run %t.rn.grad.ck --func resnet_grad --outputs %t.rn.bwd.json
// RUN: cat %t.rn.fwd.json %t.rn.bwd.json | FileCheck %s --check-prefix=GRAD
// RUN: ckopt-gen transformer --depth 2 --seq 4 --width 8 --heads 2 --batch 2 -o %t.tf.ck
// RUN: ckopt-opt %t.tf.ck --pass-pipeline=autodiff -o %t.tf.grad.ck
// RUN: ckopt-run %t.tf.ck --outputs %t.tf.fwd.json
// RUN: ckopt-run %t.tf.grad.ck --func transformer_grad --outputs %t.tf.bwd.json
// RUN: cat %t.tf.fwd.json %t.tf.bwd.json | FileCheck %s --check-prefix=GRAD

// GRAD:      {"outputs": [
// GRAD-NEXT:   {"shape": [], "data": [[[LOSS:-?[0-9.e-]+]]]}
// GRAD-NEXT: ]}
// GRAD-NEXT: {"outputs": [
// GRAD-NEXT:   {"shape": [], "data": [[[LOSS]]]}
// GRAD-NEXT:   {"shape": [{{[0-9, ]+}}], "data": [{{-?[0-9]}}
// GRAD-NOT: NaN
// GRAD-NOT: inf
