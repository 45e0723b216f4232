//! The memory report of docs/memory.md, one object per function.

use super::{Phase, liveness, op_flops, op_phases, peak};
use ckopt_ir::{Func, Module, OpKind, ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_RECOMPUTE}};
use serde::Serialize;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MemoryReport {
    pub function: String,
    /// Ops in the body, `ck.return` excluded.
    pub ops: usize,
    pub total_bytes: u64,
    pub peak_bytes: u64,
    pub temp_peak_bytes: u64,
    pub arena_bytes: Option<u64>,
    pub forward_flops: u64,
    pub backward_flops: u64,
    pub recompute_flops: u64,
    pub inplace_ops: usize,
    pub recomputed_ops: usize,
    /// Bytes of the values internal to fusion groups (`fuse`): computed
    /// inside their kernel and never stored; counted in `total_bytes`, not
    /// in the peaks or the arena.
    pub fused_bytes: u64,
    /// Kernels a backend runs: one per fusion group, one per other op that
    /// computes a value.
    pub kernels: usize,
    /// Bytes of the function's arguments (parameters, inputs, optimizer
    /// state): buffers the caller owns, outside the arena.
    pub argument_bytes: u64,
    /// What a device must hold to run the function: `argument_bytes` +
    /// `arena_bytes` (null before memplan). The one number for "does this fit?".
    pub device_bytes: Option<u64>,
}

/// Bytes of the arguments of `f`.
pub fn argument_bytes(f: &Func) -> u64 {
    f.params.iter().map(|p| f.ty(p.value).bytes()).fold(0u64, u64::saturating_add)
}

/// The reports as JSON (the `--memory-report` schema of docs/memory.md:
/// an array, one object per report), pretty-printed with a final newline.
/// The one serializer of that schema: `ckopt-opt` and the API use it.
pub fn reports_json(reports: &[MemoryReport]) -> String {
    let mut s = serde_json::to_string_pretty(reports).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
    s.push('\n');
    s
}

pub fn memory_report(f: &Func) -> MemoryReport {
    let live = liveness(f);
    let phases = op_phases(f);
    let (mut fw, mut bw, mut rc) = (0u64, 0u64, 0u64);
    let mut total = 0u64;
    for (op, ph) in f.body.iter().zip(&phases) {
        if let Some(r) = op.result {
            total = total.saturating_add(f.ty(r).bytes());
        }
        let fl = op_flops(f, op);
        match ph {
            Phase::Forward => fw = fw.saturating_add(fl),
            Phase::Backward => bw = bw.saturating_add(fl),
            Phase::Recompute => rc = rc.saturating_add(fl),
        }
    }
    let fusion = ckopt_ir::fusion::analyze(f);
    let fused_bytes = f
        .body
        .iter()
        .filter_map(|o| o.result)
        .filter(|&r| !fusion.materialized(r))
        .fold(0u64, |a, r| a.saturating_add(f.ty(r).bytes()));
    let kernels = f.body.iter().enumerate().filter(|(i, o)| o.result.is_some() && fusion.span(*i).0 == *i).count();
    let arena_bytes = f.attrs.get(ATTR_ARENA_BYTES).and_then(|a| a.as_int()).map(|v| v.max(0) as u64);
    let argument_bytes = argument_bytes(f);
    MemoryReport {
        function: f.name.clone(),
        ops: f.body.iter().filter(|o| o.kind != OpKind::Return).count(),
        total_bytes: total,
        peak_bytes: peak(f, &live, true),
        temp_peak_bytes: peak(f, &live, false),
        arena_bytes,
        forward_flops: fw,
        backward_flops: bw,
        recompute_flops: rc,
        inplace_ops: f.body.iter().filter(|o| o.has_attr(ATTR_INPLACE)).count(),
        recomputed_ops: f.body.iter().filter(|o| o.has_attr(ATTR_RECOMPUTE)).count(),
        fused_bytes,
        kernels,
        argument_bytes,
        device_bytes: arena_bytes.map(|a| a.saturating_add(argument_bytes)),
    }
}

pub fn module_report(m: &Module) -> Vec<MemoryReport> {
    m.funcs.iter().map(memory_report).collect()
}

#[cfg(test)]
mod tests {
    //! Hand-computed reports (docs/memory.md) on small functions.
    use super::*;

    fn report(text: &str) -> MemoryReport {
        let m = ckopt_ir::parse_and_verify(text, "t.ck").expect("test input parses");
        memory_report(&m.funcs[0])
    }

    /// The example of docs/ir.md (without {ck.param}): five 32x64 / scalar values, matmul-dominated flops.
    /// Live sets: {h} {h,a} {a,d} {d,s} {s,l} {l} -> peak 2·8192.
    #[test]
    fn spec_mlp_example_numbers() {
        let r = report(
            r#"module {
  func.func @mlp(%x: tensor<32x64xf32>, %w: tensor<64x64xf32>, %t: tensor<32x64xf32>) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<32x64xf32>, tensor<64x64xf32>) -> tensor<32x64xf32>
    %a = "ck.relu"(%h) : (tensor<32x64xf32>) -> tensor<32x64xf32>
    %d = "ck.sub"(%a, %t) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %s = "ck.mul"(%d, %d) : (tensor<32x64xf32>, tensor<32x64xf32>) -> tensor<32x64xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0, 1]} : (tensor<32x64xf32>) -> tensor<f32>
    "ck.return"(%l) : (tensor<f32>) -> ()
  }
}"#,
        );
        assert_eq!(r.function, "mlp");
        assert_eq!(r.ops, 5);
        assert_eq!(r.total_bytes, 4 * 8192 + 4);
        assert_eq!(r.peak_bytes, 16384);
        assert_eq!(r.temp_peak_bytes, 16384);
        assert_eq!(r.arena_bytes, None);
        // matmul 2·32·64·64; relu, sub, mul 2048 each; reduce_sum 2048 input elements
        assert_eq!(r.forward_flops, 2 * 32 * 64 * 64 + 4 * 2048);
        assert_eq!((r.backward_flops, r.recompute_flops), (0, 0));
        assert_eq!((r.inplace_ops, r.recomputed_ops), (0, 0));
    }

    /// In-place results share their operand's buffer; results count in peak
    /// but not in temp_peak; total ignores sharing.
    /// Buffers: {a,b} on [0,2] 32 B, c on [2,4] 32 B (result), d on [3,4] 4 B (result).
    /// Live bytes per op: 32, 32, 64, 36, 36 -> peak 64; without results 32.
    #[test]
    fn inplace_buffers_merge_and_results_are_separated() {
        let r = report(
            r#"module {
  func.func @f(%x: tensor<8xf32>) -> (tensor<f32>, tensor<8xf32>) {
    %a = "ck.exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
    %b = "ck.tanh"(%a) {ck.inplace = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %c = "ck.mul"(%b, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    %d = "ck.reduce_sum"(%c) {dims = [0]} : (tensor<8xf32>) -> tensor<f32>
    "ck.return"(%d, %c) : (tensor<f32>, tensor<8xf32>) -> ()
  }
}"#,
        );
        assert_eq!(r.total_bytes, 3 * 32 + 4);
        assert_eq!(r.peak_bytes, 64);
        assert_eq!(r.temp_peak_bytes, 32);
        assert_eq!(r.inplace_ops, 1);
        assert_eq!(r.forward_flops, 4 * 8);
    }

    /// Phases: ops the loss needs are forward, ck.recompute ops recompute, the
    /// rest backward. Arguments are never counted, even when returned.
    #[test]
    fn phases_split_flops_and_arguments_are_excluded() {
        let r = report(
            r#"module {
  func.func @g(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>, tensor<4xf32>) {
    %l = "ck.reduce_sum"(%x) {dims = [0]} : (tensor<4xf32>) -> tensor<f32>
    %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<4xf32>
    %r = "ck.neg"(%x) {ck.recompute} : (tensor<4xf32>) -> tensor<4xf32>
    %g = "ck.mul"(%one, %r) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%l, %g, %x) : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> ()
  }
}"#,
        );
        assert_eq!((r.forward_flops, r.backward_flops, r.recompute_flops), (4, 8, 4));
        assert_eq!(r.recomputed_ops, 1);
        // l [0,4] 4 B (result); one [1,3] 16 B; r [2,3] 16 B; g [3,4] 16 B (result)
        // live: 4, 20, 36, 52, 20 -> peak 52; temp: 0, 16, 32, 32, 0 -> 32
        assert_eq!(r.peak_bytes, 52);
        assert_eq!(r.temp_peak_bytes, 32);
        assert_eq!(r.total_bytes, 4 + 3 * 16);
    }

    /// conv: 2·N·F·C·KH·KW·OH·OW; batched matmul with transpose_a: 2·B·M·N·K;
    /// ck.arena_bytes is reported when memplan set it.
    #[test]
    fn conv_and_matmul_flops_and_arena() {
        let r = report(
            r#"module {
  func.func @c(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %a: tensor<2x3x5xf32>, %b: tensor<2x3x4xf32>) -> (tensor<1x4x8x8xf32>, tensor<2x5x4xf32>) attributes {ck.arena_bytes = 4096 : i64} {
    %y = "ck.conv2d"(%x, %w) {padding = [1, 1], stride = [1, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
    %m = "ck.matmul"(%a, %b) {transpose_a = true} : (tensor<2x3x5xf32>, tensor<2x3x4xf32>) -> tensor<2x5x4xf32>
    "ck.return"(%y, %m) : (tensor<1x4x8x8xf32>, tensor<2x5x4xf32>) -> ()
  }
}"#,
        );
        // y is the loss-side (first) result: forward; m backward.
        assert_eq!(r.forward_flops, 2 * 4 * 3 * 3 * 3 * 8 * 8);
        assert_eq!(r.backward_flops, 2 * 2 * 5 * 4 * 3);
        assert_eq!(r.arena_bytes, Some(4096));
        // arguments: x 192 + w 108 + a 30 + b 24 floats
        assert_eq!(r.argument_bytes, 4 * (192 + 108 + 30 + 24));
        assert_eq!(r.device_bytes, Some(4096 + 4 * (192 + 108 + 30 + 24)));
        assert_eq!(r.total_bytes, 4 * 256 + 4 * 40);
        assert_eq!(r.peak_bytes, 4 * 256 + 4 * 40);
        assert_eq!(r.temp_peak_bytes, 0);
    }

    /// Grouped convs count 1/groups of the dense multiply-adds: depthwise
    /// 2·N·F·KH·KW·OH·OW, and its gradients the same.
    #[test]
    fn grouped_conv_flops_divide_by_groups() {
        let r = report(
            r#"module {
  func.func @c(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>, %v: tensor<6x2x3x3xf32>) -> (tensor<1x4x8x8xf32>, tensor<1x6x8x8xf32>) {
    %y = "ck.conv2d"(%x, %w) {groups = 4 : i64, padding = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
    %z = "ck.conv2d"(%x, %v) {groups = 2 : i64, padding = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<1x6x8x8xf32>
    "ck.return"(%y, %z) : (tensor<1x4x8x8xf32>, tensor<1x6x8x8xf32>) -> ()
  }
}"#,
        );
        // depthwise: 2 · 4 filters · 1 channel · 9 taps · 64 positions (the dense conv: 4x that)
        assert_eq!(r.forward_flops, 2 * 4 * 9 * 64);
        // groups 2: 2 · 6 filters · 2 channels · 9 taps · 64 positions
        assert_eq!(r.backward_flops, 2 * 6 * 2 * 9 * 64);
        let m = ckopt_ir::parse_and_verify(
            r#"module {
  func.func @g(%x: tensor<1x4x8x8xf32>, %w: tensor<4x1x3x3xf32>, %dy: tensor<1x4x8x8xf32>) -> (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) {
    %dx = "ck.conv2d_grad_input"(%dy, %w) {groups = 4 : i64, padding = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
    %dw = "ck.conv2d_grad_filter"(%x, %dy) {groups = 4 : i64, padding = [1, 1]} : (tensor<1x4x8x8xf32>, tensor<1x4x8x8xf32>) -> tensor<4x1x3x3xf32>
    "ck.return"(%dx, %dw) : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> ()
  }
}"#,
            "g.ck",
        )
        .expect("parses");
        let f = &m.funcs[0];
        for op in &f.body[..2] {
            assert_eq!(crate::analysis::flops::op_flops(f, op), 2 * 4 * 9 * 64, "ck.{}", op.kind.name());
        }
    }

    /// The JSON object has exactly the keys of docs/memory.md, arena null before memplan.
    #[test]
    fn json_keys_are_the_spec_ones() {
        let r = report(
            r#"module {
  func.func @k(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "ck.return"(%y) : (tensor<2xf32>) -> ()
  }
}"#,
        );
        let v = serde_json::to_value(&r).expect("serializes");
        let obj = v.as_object().expect("an object");
        let mut keys: Vec<&str> = obj.keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            vec![
                "arena_bytes", "argument_bytes", "backward_flops", "device_bytes", "forward_flops", "function", "fused_bytes",
                "inplace_ops", "kernels", "ops", "peak_bytes", "recompute_flops", "recomputed_ops", "temp_peak_bytes",
                "total_bytes"
            ]
        );
        assert!(obj["arena_bytes"].is_null());
        assert!(obj["device_bytes"].is_null());
        assert_eq!(obj["argument_bytes"], 8);
    }
}
