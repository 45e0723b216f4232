/// remat's errors: an infeasible budget is an error located at the function
/// that names the smallest feasible budget found (exit 1, IR untouched);
/// optimal needs a budget; bad option values are pipeline errors.

// RUN: not ckopt-opt %s --pass-pipeline='autodiff,inplace,remat{mode=greedy budget=64B}' 2>&1 | FileCheck %s --check-prefix=GREEDY
// GREEDY: errors.ck:[[@LINE+44]]:3: error: remat{mode=greedy}: budget 64 B is infeasible for @mlp_grad: the smallest feasible budget found is {{[1-9][0-9]*}} B
// GREEDY-NEXT: func.func @mlp(
// GREEDY-NEXT: ^

/// Every mode checks an explicit budget.
// RUN: not ckopt-opt %s --pass-pipeline='autodiff,remat{mode=optimal budget=10B}' 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: remat{mode=optimal}: budget 10 B is infeasible for @mlp_grad: the smallest feasible budget found is
// RUN: not ckopt-opt %s --pass-pipeline='autodiff,remat{mode=sqrt budget=100B}' 2>&1 | FileCheck %s --check-prefix=SQRT
// SQRT: error: remat{mode=sqrt}: budget 100 B is infeasible for @mlp_grad

// RUN: not ckopt-opt %s --pass-pipeline='autodiff,remat{mode=optimal}' 2>&1 | FileCheck %s --check-prefix=NOBUDGET
// NOBUDGET: error: remat{mode=optimal} needs budget=BYTES or device_budget=BYTES (e.g. budget=48MiB) for @mlp_grad

/// device_budget counts the arguments (here 14 tensors: 544 B) and the arena.
/// Below the arguments alone: the option is named. Infeasible: the smallest
/// feasible total found is named (the unit tests rerun with it).
// RUN: not ckopt-opt %s --pass-pipeline='autodiff,remat{mode=greedy device_budget=500B}' 2>&1 | FileCheck %s --check-prefix=DEVARGS
// DEVARGS: error: option 'device_budget' of pass 'remat': 500 B is below the arguments of @mlp_grad alone (544 B)
// RUN: not ckopt-opt %s --pass-pipeline='autodiff,remat{mode=greedy device_budget=560B}' 2>&1 | FileCheck %s --check-prefix=DEV
// DEV: error: remat{mode=greedy}: device budget 560 B is infeasible for @mlp_grad: the smallest feasible total found is {{[1-9].*}} (arguments 544 B + arena
// RUN: not ckopt-opt %s --pass-pipeline='remat{device_budget=0}' 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: option 'device_budget' of pass 'remat' must be more than 0 bytes
// RUN: not ckopt-opt %s --pass-pipeline='remat{budget=0MiB}' 2>&1 | FileCheck %s --check-prefix=ZERO2
// ZERO2: error: option 'budget' of pass 'remat' must be more than 0 bytes
// RUN: not ckopt-opt %s --pass-pipeline='remat{device_budget=lots}' 2>&1 | FileCheck %s --check-prefix=DEVBYTES
// DEVBYTES: error: option 'device_budget' of pass 'remat': unknown byte unit 'lots'
// RUN: not ckopt-opt %s --pass-pipeline='remat{align=48}' 2>&1 | FileCheck %s --check-prefix=ALIGN
// ALIGN: error: option 'align' of pass 'remat' must be a power of two, got 48
// RUN: not ckopt-opt %s --pass-pipeline='autodiff,remat{func=nope}' 2>&1 | FileCheck %s --check-prefix=FUNC
// FUNC: error: option 'func' of pass 'remat': no function @nope in the module
/// func= rewrites that function only: the forward has no backward, so nothing is recomputed.
// RUN: ckopt-opt %s --pass-pipeline='autodiff,remat{func=mlp}' | FileCheck %s --check-prefix=ONLY
// ONLY-NOT: ck.recompute

// RUN: not ckopt-opt %s --pass-pipeline='remat{mode=fast}' 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: error: option 'mode' of pass 'remat' must be none, sqrt, greedy, log or optimal, got 'fast'
// RUN: not ckopt-opt %s --pass-pipeline='remat{budget=12parsecs}' 2>&1 | FileCheck %s --check-prefix=BYTES
// BYTES: error: option 'budget' of pass 'remat': unknown byte unit 'parsecs'
// RUN: not ckopt-opt %s --pass-pipeline='remat{k=0}' 2>&1 | FileCheck %s --check-prefix=K
// K: error: option 'k' of pass 'remat' must be at least 1
// RUN: not ckopt-opt %s --pass-pipeline='remat{fanout=2}' 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: pass 'remat' has no option 'fanout'; valid options: mode, budget, device_budget, align, search, threshold, k, min_gain, func

module {
  func.func @mlp(%x: tensor<2x4xf32>, %target: tensor<2x4xf32>, %w0: tensor<4x4xf32> {ck.param}, %b0: tensor<4xf32> {ck.param}, %w1: tensor<4x4xf32> {ck.param}, %b1: tensor<4xf32> {ck.param}, %w2: tensor<4x4xf32> {ck.param}, %b2: tensor<4xf32> {ck.param}, %w3: tensor<4x4xf32> {ck.param}, %b3: tensor<4xf32> {ck.param}, %w4: tensor<4x4xf32> {ck.param}, %b4: tensor<4xf32> {ck.param}, %w5: tensor<4x4xf32> {ck.param}, %b5: tensor<4xf32> {ck.param}) -> tensor<f32> {
    %mm0 = "ck.matmul"(%x, %w0) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias0 = "ck.broadcast"(%b0) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z0 = "ck.add"(%mm0, %bias0) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h0 = "ck.relu"(%z0) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm1 = "ck.matmul"(%h0, %w1) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias1 = "ck.broadcast"(%b1) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z1 = "ck.add"(%mm1, %bias1) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h1 = "ck.relu"(%z1) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm2 = "ck.matmul"(%h1, %w2) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias2 = "ck.broadcast"(%b2) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z2 = "ck.add"(%mm2, %bias2) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h2 = "ck.relu"(%z2) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm3 = "ck.matmul"(%h2, %w3) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias3 = "ck.broadcast"(%b3) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z3 = "ck.add"(%mm3, %bias3) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h3 = "ck.relu"(%z3) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm4 = "ck.matmul"(%h3, %w4) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias4 = "ck.broadcast"(%b4) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z4 = "ck.add"(%mm4, %bias4) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h4 = "ck.relu"(%z4) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %mm5 = "ck.matmul"(%h4, %w5) : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
    %bias5 = "ck.broadcast"(%b5) {dims = [1]} : (tensor<4xf32>) -> tensor<2x4xf32>
    %z5 = "ck.add"(%mm5, %bias5) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %h5 = "ck.relu"(%z5) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %diff = "ck.sub"(%h5, %target) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %sq = "ck.mul"(%diff, %diff) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
    %sqsum = "ck.reduce_sum"(%sq) {dims = [0, 1]} : (tensor<2x4xf32>) -> tensor<f32>
    %loss = "ck.scale"(%sqsum) {value = 0.125 : f32} : (tensor<f32>) -> tensor<f32>
    "ck.return"(%loss) : (tensor<f32>) -> ()
  }
}
