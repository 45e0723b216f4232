/// --to=ptx: one PTX module with one .entry per op (bare pointer
/// parameters: distinct operands, then the result), preceded by the launch
/// table as // JSON lines (kernel, grid, block, buffer and offset of each
/// argument). Math ops link libdevice (no __nv_ call remains).
// REQUIRES: lower, libdevice
// RUN: ckopt-translate --to=ptx --sm=90 %s | FileCheck %s
// RUN: ckopt-translate --to=ptx --sm=80 %s | FileCheck %s --check-prefix=SM80

module {
  func.func @f(%x: tensor<4x300xf32>, %w: tensor<300x8xf32>) -> tensor<4x8xf32> attributes {ck.arena_bytes = 256 : i64} {
    %h = "ck.matmul"(%x, %w) {ck.offset = 0 : i64} : (tensor<4x300xf32>, tensor<300x8xf32>) -> tensor<4x8xf32>
    %t = "ck.tanh"(%h) {ck.offset = 128 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    "ck.return"(%t) : (tensor<4x8xf32>) -> ()
  }
}

// CHECK: // ckopt launch table (JSON):
// CHECK-NEXT: // {"sm": 90, "functions": [
// CHECK-NEXT: //  {"function": "f", "arena_bytes": 256, "inputs": [{"bytes":4800,"shape":[4,300]},{"bytes":9600,"shape":[300,8]}], "outputs": [{"buffer":"arena","offset":128,"shape":[4,8]}], "kernels": [
// CHECK-NEXT: //   {"args":[{"buffer":"arg0","bytes":4800,"offset":0},{"buffer":"arg1","bytes":9600,"offset":0},{"buffer":"arena","bytes":128,"offset":0}],"block":[256,1,1],"grid":[1,1,1],"kernel":"f_k0_matmul",{{.*}}"op":"ck.matmul"},
// CHECK-NEXT: //   {"args":[{"buffer":"arena","bytes":128,"offset":0},{"buffer":"arena","bytes":128,"offset":128}],"block":[256,1,1],"grid":[1,1,1],"kernel":"f_k1_tanh",{{.*}}"op":"ck.tanh"}
// CHECK-NEXT: //  ]}
// CHECK-NEXT: // ]}
// CHECK: .target sm_90
// CHECK: .visible .entry f_k0_matmul(
// CHECK-NEXT: .param .u64 .ptr .align 1 f_k0_matmul_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 1 f_k0_matmul_param_1,
// CHECK-NEXT: .param .u64 .ptr .align 1 f_k0_matmul_param_2
// CHECK-NEXT: )
// CHECK: .visible .entry f_k1_tanh(
// CHECK-NEXT: .param .u64 .ptr .align 1 f_k1_tanh_param_0,
// CHECK-NEXT: .param .u64 .ptr .align 1 f_k1_tanh_param_1
// CHECK-NEXT: )
// CHECK-NOT: __nv_
// SM80: .target sm_80
