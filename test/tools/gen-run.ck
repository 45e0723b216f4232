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
