// RUN: ckopt-opt %s | ckopt-opt | FileCheck %s

/// Every op of the ck table parses, verifies and prints back in canonical form
/// (sorted attributes, typed numbers); printing is stable through a second
/// parse. This file is itself in canonical form.

// CHECK-LABEL: func.func @all_ops(%x: tensor<2x3xf32>, %w: tensor<3x4xf32> {ck.param}, %v: tensor<3xf32>, %img: tensor<1x3x8x8xf32>, %filt: tensor<4x3x3x3xf32> {ck.param}) -> (tensor<2x3xf32>, tensor<f32>) attributes {ck.arena_bytes = 4096 : i64} {
module {
  func.func @all_ops(%x: tensor<2x3xf32>, %w: tensor<3x4xf32> {ck.param}, %v: tensor<3xf32>, %img: tensor<1x3x8x8xf32>, %filt: tensor<4x3x3x3xf32> {ck.param}) -> (tensor<2x3xf32>, tensor<f32>) attributes {ck.arena_bytes = 4096 : i64} {
// CHECK-NEXT: %neg = "ck.neg"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %neg = "ck.neg"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %exp = "ck.exp"(%neg) {ck.offset = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %exp = "ck.exp"(%neg) {ck.offset = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %log = "ck.log"(%exp) {ck.inplace = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %log = "ck.log"(%exp) {ck.inplace = 0 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %tanh = "ck.tanh"(%log) {ck.mirror} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %tanh = "ck.tanh"(%log) {ck.mirror} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %sig = "ck.sigmoid"(%tanh) {ck.checkpoint} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %sig = "ck.sigmoid"(%tanh) {ck.checkpoint} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %relu = "ck.relu"(%sig) {ck.recompute} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %relu = "ck.relu"(%sig) {ck.recompute} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %sqrt = "ck.sqrt"(%relu) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %sqrt = "ck.sqrt"(%relu) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %rsqrt = "ck.rsqrt"(%sqrt) : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %rsqrt = "ck.rsqrt"(%sqrt) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %add = "ck.add"(%x, %rsqrt) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %add = "ck.add"(%x, %rsqrt) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %sub = "ck.sub"(%add, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %sub = "ck.sub"(%add, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %mul = "ck.mul"(%sub, %sub) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %mul = "ck.mul"(%sub, %sub) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %div = "ck.div"(%mul, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %div = "ck.div"(%mul, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %max = "ck.max"(%div, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %max = "ck.max"(%div, %x) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %scale = "ck.scale"(%max) {value = 0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %scale = "ck.scale"(%max) {value = 0.5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %tiny = "ck.scale"(%scale) {value = 1.0e-5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %tiny = "ck.scale"(%scale) {value = 1.0e-5 : f32} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %fill = "ck.fill"() {value = -2.0 : f32} : () -> tensor<2x3xf32>
    %fill = "ck.fill"() {value = -2.0 : f32} : () -> tensor<2x3xf32>
// CHECK-NEXT: %inf = "ck.fill"() {value = 0x7F800000 : f32} : () -> tensor<f32>
    %inf = "ck.fill"() {value = 0x7F800000 : f32} : () -> tensor<f32>
// CHECK-NEXT: %rg = "ck.relu_grad"(%x, %fill) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %rg = "ck.relu_grad"(%x, %fill) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %bc = "ck.broadcast"(%v) {dims = [1]} : (tensor<3xf32>) -> tensor<2x3xf32>
    %bc = "ck.broadcast"(%v) {dims = [1]} : (tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %rs = "ck.reduce_sum"(%bc) {dims = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
    %rs = "ck.reduce_sum"(%bc) {dims = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
// CHECK-NEXT: %rm = "ck.reduce_max"(%bc) {dims = [0, 1]} : (tensor<2x3xf32>) -> tensor<f32>
    %rm = "ck.reduce_max"(%bc) {dims = [0, 1]} : (tensor<2x3xf32>) -> tensor<f32>
// CHECK-NEXT: %tr = "ck.transpose"(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %tr = "ck.transpose"(%x) {perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
// CHECK-NEXT: %re = "ck.reshape"(%tr) : (tensor<3x2xf32>) -> tensor<6xf32>
    %re = "ck.reshape"(%tr) : (tensor<3x2xf32>) -> tensor<6xf32>
// CHECK-NEXT: %sl = "ck.slice"(%x) {offsets = [0, 1]} : (tensor<2x3xf32>) -> tensor<2x2xf32>
    %sl = "ck.slice"(%x) {offsets = [0, 1]} : (tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %cat = "ck.concat"(%x, %x, %x) {dim = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
    %cat = "ck.concat"(%x, %x, %x) {dim = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32>
// CHECK-NEXT: %mm = "ck.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %mm = "ck.matmul"(%x, %w) : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT: %mmt = "ck.matmul"(%x, %x) {transpose_a = false, transpose_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
    %mmt = "ck.matmul"(%x, %x) {transpose_a = false, transpose_b = true} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x2xf32>
// CHECK-NEXT: %conv = "ck.conv2d"(%img, %filt) {padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
    %conv = "ck.conv2d"(%img, %filt) {padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT: %gin = "ck.conv2d_grad_input"(%conv, %filt) {padding = [1, 1], stride = [2, 2]} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
    %gin = "ck.conv2d_grad_input"(%conv, %filt) {padding = [1, 1], stride = [2, 2]} : (tensor<1x4x4x4xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %gf = "ck.conv2d_grad_filter"(%img, %conv) {padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>
    %gf = "ck.conv2d_grad_filter"(%img, %conv) {padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x4x4x4xf32>) -> tensor<4x3x3x3xf32>
// CHECK-NEXT: %dwf = "ck.slice"(%filt) {offsets = [0, 0, 0, 0]} : (tensor<4x3x3x3xf32>) -> tensor<3x1x3x3xf32>
    %dwf = "ck.slice"(%filt) {offsets = [0, 0, 0, 0]} : (tensor<4x3x3x3xf32>) -> tensor<3x1x3x3xf32>
// CHECK-NEXT: %dw = "ck.conv2d"(%img, %dwf) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x4x4xf32>
    %dw = "ck.conv2d"(%img, %dwf) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: %dwgi = "ck.conv2d_grad_input"(%dw, %dwf) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x4x4xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x8x8xf32>
    %dwgi = "ck.conv2d_grad_input"(%dw, %dwf) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x4x4xf32>, tensor<3x1x3x3xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %dwgf = "ck.conv2d_grad_filter"(%img, %dw) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<3x1x3x3xf32>
    %dwgf = "ck.conv2d_grad_filter"(%img, %dw) {groups = 3 : i64, padding = [1, 1], stride = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<3x1x3x3xf32>
// CHECK-NEXT: %mp = "ck.max_pool2d"(%img) {window = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
    %mp = "ck.max_pool2d"(%img) {window = [2, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
// CHECK-NEXT: %ap = "ck.avg_pool2d"(%img) {stride = [1, 1], window = [3, 3]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
    %ap = "ck.avg_pool2d"(%img) {stride = [1, 1], window = [3, 3]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x6x6xf32>
// CHECK-NEXT: %mpg = "ck.max_pool2d_grad"(%img, %mp) {window = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
    %mpg = "ck.max_pool2d_grad"(%img, %mp) {window = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x3x4x4xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %apg = "ck.avg_pool2d_grad"(%ap) {stride = [1, 1], window = [3, 3]} : (tensor<1x3x6x6xf32>) -> tensor<1x3x8x8xf32>
    %apg = "ck.avg_pool2d_grad"(%ap) {stride = [1, 1], window = [3, 3]} : (tensor<1x3x6x6xf32>) -> tensor<1x3x8x8xf32>
// CHECK-NEXT: %drop = "ck.dropout"(%tiny) {rate = 0.25 : f32, seed = 42 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
    %drop = "ck.dropout"(%tiny) {rate = 0.25 : f32, seed = 42 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: %half = "ck.fill"() {value = 1.5 : f32} : () -> tensor<2x2xbf16>
    %half = "ck.fill"() {value = 1.5 : f32} : () -> tensor<2x2xbf16>
// CHECK-NEXT: "ck.return"(%drop, %rm) : (tensor<2x3xf32>, tensor<f32>) -> ()
    "ck.return"(%drop, %rm) : (tensor<2x3xf32>, tensor<f32>) -> ()
// CHECK-NEXT: }
  }
// CHECK-LABEL: func.func @"quoted name"() -> tensor<f16> {
  func.func @"quoted name"() -> tensor<f16> {
// CHECK-NEXT: %0 = "ck.fill"() {user.note = "tab\09quote\"", value = 0.0 : f32} : () -> tensor<f16>
    %0 = "ck.fill"() {user.note = "tab\09quote\"", value = 0.0 : f32} : () -> tensor<f16>
    "ck.return"(%0) : (tensor<f16>) -> ()
  }
}
