/// --memory-report (docs/memory.md): a JSON array, one object per function, with
/// exactly the documented keys; numbers checked by hand below. The report is taken
/// after the pipeline, so dce shrinks it.

// RUN: ckopt-opt %s --split-input-file --memory-report=- -o /dev/null | FileCheck %s
// RUN: ckopt-opt %s --split-input-file --memory-report=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=dce --memory-report=- -o /dev/null | FileCheck %s --check-prefix=DCE
// RUN: ckopt-opt %s --split-input-file --memory-report=- -o /dev/null | python3 -c "import json,sys; r=json.load(sys.stdin); print(sorted(r[0].keys())); print(len(r))" | FileCheck %s --check-prefix=KEYS

// KEYS: ['arena_bytes', 'argument_bytes', 'backward_flops', 'device_bytes', 'forward_flops', 'function', 'fused_bytes', 'inplace_ops', 'kernels', 'ops', 'peak_bytes', 'recompute_flops', 'recomputed_ops', 'temp_peak_bytes', 'total_bytes']
// KEYS-NEXT: 4

/// The example mlp of docs/ir.md (without {ck.param}): four 32x64 values
/// (8192 B) and a scalar. At most two big values are live at once: peak
/// 16384. Flops: matmul 2·32·64·64 = 262144, relu/sub/mul/reduce_sum 2048 each.
// CHECK:      "function": "mlp",
// CHECK-NEXT: "ops": 5,
// CHECK-NEXT: "total_bytes": 32772,
// CHECK-NEXT: "peak_bytes": 16384,
// CHECK-NEXT: "temp_peak_bytes": 16384,
// CHECK-NEXT: "arena_bytes": null,
// CHECK-NEXT: "forward_flops": 270336,
// CHECK-NEXT: "backward_flops": 0,
// CHECK-NEXT: "recompute_flops": 0,
// CHECK-NEXT: "inplace_ops": 0,
// CHECK-NEXT: "recomputed_ops": 0,
// CHECK-NEXT: "fused_bytes": 0,
// CHECK-NEXT: "kernels": 5,
// CHECK-NEXT: "argument_bytes": 32768,
// CHECK-NEXT: "device_bytes": null
module {
  func.func @mlp(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>, %t: tensor<32x64xf32>) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %a = "ck.relu"(%h) : (tensor<32x64xf32>) -> tensor<32x64xf32>
    %d = "ck.sub"(%a, %t) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %s = "ck.mul"(%d, %d) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<32x64xf32>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}

// -----

/// In-place: b reuses a's buffer ({a,b} live on ops 0..2, 32 B); c (32 B)
/// and d (4 B) are results. Live bytes per op: 32 32 64 36 36 -> peak 64;
/// without results only {a,b}: 32. total counts every op value: 3·32+4.
/// The dead exp (op 4, 32 B) is live at its own op only: 36 + 32 = 68 there,
/// so peak 68; dce removes it and the peak drops back to 64.
/// A function that returns its argument holds no bytes at all.
// CHECK:      "function": "inplace",
// CHECK-NEXT: "ops": 5,
// CHECK-NEXT: "total_bytes": 132,
// CHECK-NEXT: "peak_bytes": 68,
// CHECK-NEXT: "temp_peak_bytes": 32,
// CHECK-NEXT: "arena_bytes": null,
// CHECK-NEXT: "forward_flops": 32,
// CHECK-NEXT: "backward_flops": 8,
// CHECK-NEXT: "recompute_flops": 0,
// CHECK-NEXT: "inplace_ops": 1,
// CHECK:      "function": "inplace2",
// CHECK-NEXT: "ops": 0,
// CHECK-NEXT: "total_bytes": 0,
// CHECK-NEXT: "peak_bytes": 0,
// DCE:        "function": "inplace",
// DCE-NEXT:   "ops": 4,
// DCE-NEXT:   "total_bytes": 100,
// DCE-NEXT:   "peak_bytes": 64,
// DCE-NEXT:   "temp_peak_bytes": 32,
// DCE-NEXT:   "arena_bytes": null,
// DCE-NEXT:   "forward_flops": 32,
// DCE-NEXT:   "backward_flops": 0,
module {
  func.func @inplace(%x: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
    %a = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.tanh"(%a) {ck.inplace = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %c = "ck.mul"(%b, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %d = "ck.reduce_sum"(%c) {dims = [0]} : (tensor<8xf32>) -> tensor<f32>
    %dead = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    "ck.return"(%d, %c) : (tensor<f32>, tensor<8xf32>) -> ()
  }
  func.func @inplace2(%x: tensor<8xf32>) -> tensor<8xf32> {
    "ck.return"(%x) : (tensor<8xf32>) -> ()
  }
}

// -----

/// Phases: the loss's ops are forward (4), ck.recompute ops recompute (4),
/// the rest backward (fill 4 + mul 4). Arguments are never counted, even
/// returned: l 4 B, one 16 B, r 16 B, g 16 B -> live 4 20 36 52 20.
/// ck.arena_bytes (set by memplan) is reported.
// CHECK:      "function": "phases",
// CHECK-NEXT: "ops": 4,
// CHECK-NEXT: "total_bytes": 52,
// CHECK-NEXT: "peak_bytes": 52,
// CHECK-NEXT: "temp_peak_bytes": 32,
// CHECK-NEXT: "arena_bytes": 4096,
// CHECK-NEXT: "forward_flops": 4,
// CHECK-NEXT: "backward_flops": 8,
// CHECK-NEXT: "recompute_flops": 4,
// CHECK-NEXT: "inplace_ops": 0,
// CHECK-NEXT: "recomputed_ops": 1
module {
  func.func @phases(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) attributes {ck.arena_bytes = 4096 : i64} {
    %l = "ck.reduce_sum"(%x) {dims = [0]} : (tensor<4xf32>) -> tensor<f32>
    %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<4xf32>
    %r = "ck.neg"(%x) {ck.recompute} : (tensor<4xf32>) -> tensor<4xf32>
    %g = "ck.mul"(%one, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%l, %g, %x) : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }
}
