/// sgd after autodiff: @loss_step takes @loss's arguments with the
/// parameters donated, returns the loss and the updated parameters; each
/// update (p - lr * g, written in place into p) comes right after its
/// gradient is final, before the rest of the backward. The learning rate is
/// an input (`{ck.hyper = "lr"}`) whose default is the pass option.
// RUN: ckopt-opt %s --pass-pipeline='autodiff,sgd{lr=0.5}' | FileCheck %s
// RUN: ckopt-opt %s --pass-pipeline='autodiff,sgd{lr=0.5 momentum=0.9}' | FileCheck %s --check-prefix=MOM
// RUN: ckopt-opt %s --pass-pipeline='autodiff,sgd{lr=0.5},memplan' | %mlir-opt --allow-unregistered-dialect > /dev/null

// CHECK-LABEL: func.func @loss_step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.donate, ck.param}, %v: tensor<8x8xf32> {ck.donate, ck.param}, %hyper_lr: tensor<f32> {ck.hyper = "lr", ck.hyper_default = 0.5 : f32}) -> (tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>)
/// The second layer's weight is updated as soon as dv is computed.
// CHECK: %[[DV:.*]] = "ck.matmul"(%a, %{{.*}}) {transpose_a = true}
// CHECK-NEXT: %[[LRB:.*]] = "ck.broadcast"(%hyper_lr) {dims = []}
// CHECK-NEXT: %[[SV:.*]] = "ck.mul"(%[[DV]], %[[LRB]])
// CHECK-NEXT: %[[V2:.*]] = "ck.sub"(%v, %[[SV]]) {ck.inplace = 0 : i64}
// CHECK: %[[W2:.*]] = "ck.sub"(%w, %{{.*}}) {ck.inplace = 0 : i64}
// CHECK-NEXT: "ck.return"(%loss, %[[W2]], %[[V2]])

/// With momentum the state is an argument (donated) and a result.
// MOM-LABEL: func.func @loss_step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.donate, ck.param}, %v: tensor<8x8xf32> {ck.donate, ck.param}, %w_mom: tensor<8x8xf32> {ck.donate, ck.opt_state}, %v_mom: tensor<8x8xf32> {ck.donate, ck.opt_state}, %hyper_lr: tensor<f32> {{.*}}, %hyper_momentum: tensor<f32> {ck.hyper = "momentum", ck.hyper_default = 0.9 : f32})
// MOM: "ck.mul"(%v_mom, %v_momentum) {ck.inplace = 0 : i64}

/// adamw: both moments are donated state; every figure is an input.
// RUN: ckopt-opt %s --pass-pipeline='autodiff,adamw{lr=0.01}' | FileCheck %s --check-prefix=ADAM
// RUN: ckopt-opt %s --pass-pipeline='autodiff,adamw{clip_norm=1},fuse,memplan' | %mlir-opt --allow-unregistered-dialect > /dev/null
// ADAM-LABEL: func.func @loss_step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.donate, ck.param}, %v: tensor<8x8xf32> {ck.donate, ck.param}, %w_m: tensor<8x8xf32> {ck.donate, ck.opt_state}, %v_m: tensor<8x8xf32> {ck.donate, ck.opt_state}, %w_v: tensor<8x8xf32> {ck.donate, ck.opt_state}, %v_v: tensor<8x8xf32> {ck.donate, ck.opt_state}, %hyper_lr: {{.*}}, %hyper_beta1: {{.*}}, %hyper_beta2: {{.*}}, %hyper_eps: {{.*}}, %hyper_weight_decay: {{.*}}, %hyper_bias_correction1: {{.*}}, %hyper_bias_correction2: tensor<f32> {{.*}}) -> (tensor<f32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>)

/// Bad options are errors naming the option.
// RUN: not ckopt-opt %s --pass-pipeline='autodiff,sgd{lr=-1}' 2>&1 | FileCheck %s --check-prefix=LR
// LR: option 'lr' of pass 'sgd' must be a positive number
// RUN: not ckopt-opt %s --pass-pipeline='sgd{func=loss}' 2>&1 | FileCheck %s --check-prefix=NOGRAD
// NOGRAD: sgd: needs @loss and its gradient @loss_grad (run autodiff first)

module {
  func.func @loss(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.param}, %v: tensor<8x8xf32> {ck.param}) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %a = "ck.tanh"(%h) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %g = "ck.matmul"(%a, %v) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %s = "ck.mul"(%g, %g) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %loss = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<4x8xf32>) -> tensor<f32>
    "ck.return"(%loss) : (tensor<f32>) -> ()
  }
}
