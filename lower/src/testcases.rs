//! Small test functions shared by the lowering's and the runtimes' tests:
//! one function per op (and per interesting attribute combination), a naive
//! plan that gives every op result its own slot, and the tolerance used
//! against the interpreter (1e-4 relative, NaN matches NaN).
//!
//! Test support only: the cases are built from the op table with fixed,
//! well-typed shapes, so a failing `push` is a bug in this file (hence the
//! unwraps).
#![allow(clippy::unwrap_used)]

use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_OFFSET};
use ckopt_ir::{Attr, Attrs, DType, Func, Loc, OpKind, TensorType, ValueId, attrs};

/// Gives every op result its own 64-byte-aligned slot.
pub fn naive_plan(f: &mut Func) {
    let mut off = 0i64;
    let tys: Vec<u64> = f.body.iter().map(|o| o.result.map(|r| f.ty(r).bytes()).unwrap_or(0)).collect();
    for (op, b) in f.body.iter_mut().zip(tys) {
        if op.result.is_some() {
            op.attrs.insert(ATTR_OFFSET.into(), Attr::Int(off));
            off += (b as i64 + 63) / 64 * 64;
        }
    }
    f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(off));
}

pub fn close(got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("length {} vs {}", got.len(), want.len()));
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-4 * w.abs().max(1.0) || g == w;
        if !ok {
            return Err(format!("element {i}: got {g}, interp {w}"));
        }
    }
    Ok(())
}

pub fn t(s: &[u64]) -> TensorType {
    TensorType::f32(s.to_vec())
}

/// One function per op (and per interesting attribute combination).
pub fn op_cases() -> Vec<Func> {
    let mut out = Vec::new();
    let mut case = |name: &str, args: &[TensorType], build: &dyn Fn(&mut Func, &[ValueId]) -> ValueId| {
        let mut f = Func::new(name, Loc::unknown());
        let vs: Vec<ValueId> = args.iter().enumerate().map(|(i, ty)| f.add_param(format!("a{i}"), ty.clone(), false)).collect();
        let r = build(&mut f, &vs);
        f.push_return(&[r], Loc::unknown());
        out.push(f);
    };
    let u = Loc::unknown;
    for k in [OpKind::Neg, OpKind::Exp, OpKind::Log, OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Sqrt, OpKind::Rsqrt] {
        case(k.name(), &[t(&[3, 5])], &|f, a| f.push(k, &[a[0]], Attrs::new(), None, "y", u()).unwrap());
    }
    for k in [OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Max, OpKind::ReluGrad] {
        case(k.name(), &[t(&[2, 3, 4]), t(&[2, 3, 4])], &|f, a| f.push(k, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    }
    case("scale", &[t(&[7])], &|f, a| f.push(OpKind::Scale, &[a[0]], attrs([("value", Attr::F32(-2.5))]), None, "y", u()).unwrap());
    case("erf", &[t(&[3, 5])], &|f, a| f.push(OpKind::Erf, &[a[0]], Attrs::new(), None, "y", u()).unwrap());
    case("constant", &[], &|f, _| {
        let v = Attr::Dense { shape: vec![2, 3], data: vec![0.5, -1.0, 2.0, 0.25, -0.125, 3.0] };
        f.push(OpKind::Constant, &[], attrs([("value", v)]), None, "y", u()).unwrap()
    });
    case("fill", &[], &|f, _| f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(0.75))]), Some(t(&[2, 2])), "y", u()).unwrap());
    case("fill_scalar", &[], &|f, _| f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(3.0))]), Some(t(&[])), "y", u()).unwrap());
    case("broadcast", &[t(&[3, 4])], &|f, a| {
        f.push(OpKind::Broadcast, &[a[0]], attrs([("dims", Attr::IntArray(vec![0, 2]))]), Some(t(&[3, 2, 4])), "y", u()).unwrap()
    });
    case("broadcast_scalar", &[t(&[])], &|f, a| {
        f.push(OpKind::Broadcast, &[a[0]], attrs([("dims", Attr::IntArray(vec![]))]), Some(t(&[2, 3])), "y", u()).unwrap()
    });
    for (nm, dims) in [("reduce_sum", vec![1]), ("reduce_sum_all", vec![0, 1, 2]), ("reduce_sum_02", vec![0, 2])] {
        case(nm, &[t(&[3, 4, 5])], &|f, a| {
            f.push(OpKind::ReduceSum, &[a[0]], attrs([("dims", Attr::IntArray(dims.clone()))]), None, "y", u()).unwrap()
        });
    }
    case("reduce_max", &[t(&[3, 4, 5])], &|f, a| {
        f.push(OpKind::ReduceMax, &[a[0]], attrs([("dims", Attr::IntArray(vec![2]))]), None, "y", u()).unwrap()
    });
    case("transpose", &[t(&[2, 3, 4])], &|f, a| {
        f.push(OpKind::Transpose, &[a[0]], attrs([("perm", Attr::IntArray(vec![2, 0, 1]))]), None, "y", u()).unwrap()
    });
    case("reshape", &[t(&[2, 6])], &|f, a| f.push(OpKind::Reshape, &[a[0]], Attrs::new(), Some(t(&[3, 4])), "y", u()).unwrap());
    case("slice", &[t(&[5, 6])], &|f, a| {
        f.push(OpKind::Slice, &[a[0]], attrs([("offsets", Attr::IntArray(vec![1, 2]))]), Some(t(&[3, 3])), "y", u()).unwrap()
    });
    case("concat", &[t(&[2, 3]), t(&[2, 1]), t(&[2, 2])], &|f, a| {
        f.push(OpKind::Concat, a, attrs([("dim", Attr::Int(1))]), None, "y", u()).unwrap()
    });
    case("concat_single", &[t(&[2, 3])], &|f, a| f.push(OpKind::Concat, a, attrs([("dim", Attr::Int(0))]), None, "y", u()).unwrap());
    case("matmul", &[t(&[3, 4]), t(&[4, 5])], &|f, a| f.push(OpKind::Matmul, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    case("matmul_tt_batched", &[t(&[2, 4, 3]), t(&[2, 5, 4])], &|f, a| {
        f.push(OpKind::Matmul, &[a[0], a[1]], attrs([("transpose_a", Attr::Bool(true)), ("transpose_b", Attr::Bool(true))]), None, "y", u())
            .unwrap()
    });
    let conv = || attrs([("stride", Attr::IntArray(vec![2, 1])), ("padding", Attr::IntArray(vec![1, 1]))]);
    case("conv2d", &[t(&[2, 3, 6, 5]), t(&[4, 3, 3, 3])], &|f, a| f.push(OpKind::Conv2d, &[a[0], a[1]], conv(), None, "y", u()).unwrap());
    case("conv2d_nopad", &[t(&[1, 2, 5, 5]), t(&[3, 2, 2, 2])], &|f, a| {
        f.push(OpKind::Conv2d, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap()
    });
    // conv2d of [2,3,6,5] with [4,3,3,3], stride [2,1], pad [1,1] -> [2,4,3,5]
    case("conv2d_grad_input", &[t(&[2, 4, 3, 5]), t(&[4, 3, 3, 3])], &|f, a| {
        f.push(OpKind::Conv2dGradInput, &[a[0], a[1]], conv(), Some(t(&[2, 3, 6, 5])), "y", u()).unwrap()
    });
    case("conv2d_grad_filter", &[t(&[2, 3, 6, 5]), t(&[2, 4, 3, 5])], &|f, a| {
        f.push(OpKind::Conv2dGradFilter, &[a[0], a[1]], conv(), Some(t(&[4, 3, 3, 3])), "y", u()).unwrap()
    });
    // Grouped (groups 2: C 4, F 6; GEMM per group) and depthwise (C/groups = 1:
    // the direct loops on cpu) convolutions and their gradients.
    let grouped = |g: i64, s: [i64; 2], p: [i64; 2]| {
        attrs([("stride", Attr::IntArray(s.to_vec())), ("padding", Attr::IntArray(p.to_vec())), ("groups", Attr::Int(g))])
    };
    // (name, x, w, y, stride, padding, groups)
    #[allow(clippy::type_complexity)]
    let grouped_cases: [(&str, [u64; 4], [u64; 4], [u64; 4], [i64; 2], [i64; 2], i64); 5] = [
        // [2,4,6,5] with [6,2,3,3], stride [2,1], pad [1,1] -> [2,6,3,5]
        ("groups2", [2, 4, 6, 5], [6, 2, 3, 3], [2, 6, 3, 5], [2, 1], [1, 1], 2),
        // depthwise, stride 2, pad 1: [2,3,7,6] with [3,1,3,3] -> [2,3,4,3]
        ("depthwise", [2, 3, 7, 6], [3, 1, 3, 3], [2, 3, 4, 3], [2, 2], [1, 1], 3),
        // depthwise with channel multiplier 2, stride 1 (the contiguous rows): [2,2,5,5] with [4,1,3,3] -> [2,4,5,5]
        ("depthwise_mult2", [2, 2, 5, 5], [4, 1, 3, 3], [2, 4, 5, 5], [1, 1], [1, 1], 2),
        // depthwise with taps wholly in the padding: [1,2,2,2] with [2,1,5,5], pad 2 -> [1,2,2,2]
        ("depthwise_wide_pad", [1, 2, 2, 2], [2, 1, 5, 5], [1, 2, 2, 2], [1, 1], [2, 2], 2),
        // padding wider than the filter: border outputs read only padding. [1,2,3,4] with [2,1,2,1], stride [1,2], pad [3,2] -> [1,2,8,4]
        ("depthwise_pad_over_filter", [1, 2, 3, 4], [2, 1, 2, 1], [1, 2, 8, 4], [1, 2], [3, 2], 2),
    ];
    for (nm, xs, ws, ys, s, p, g) in grouped_cases {
        case(&format!("conv2d_{nm}"), &[t(&xs), t(&ws)], &|f, a| {
            f.push(OpKind::Conv2d, &[a[0], a[1]], grouped(g, s, p), None, "y", u()).unwrap()
        });
        case(&format!("conv2d_grad_input_{nm}"), &[t(&ys), t(&ws)], &|f, a| {
            f.push(OpKind::Conv2dGradInput, &[a[0], a[1]], grouped(g, s, p), Some(t(&xs)), "y", u()).unwrap()
        });
        case(&format!("conv2d_grad_filter_{nm}"), &[t(&xs), t(&ys)], &|f, a| {
            f.push(OpKind::Conv2dGradFilter, &[a[0], a[1]], grouped(g, s, p), Some(t(&ws)), "y", u()).unwrap()
        });
    }
    let pool = || attrs([("window", Attr::IntArray(vec![3, 2])), ("stride", Attr::IntArray(vec![2, 1]))]);
    case("max_pool2d", &[t(&[2, 2, 7, 5])], &|f, a| f.push(OpKind::MaxPool2d, &[a[0]], pool(), None, "y", u()).unwrap());
    case("avg_pool2d", &[t(&[2, 2, 7, 5])], &|f, a| f.push(OpKind::AvgPool2d, &[a[0]], pool(), None, "y", u()).unwrap());
    // pool of [2,2,7,5] with window [3,2], stride [2,1] -> [2,2,3,4]
    case("max_pool2d_grad", &[t(&[2, 2, 7, 5]), t(&[2, 2, 3, 4])], &|f, a| {
        f.push(OpKind::MaxPool2dGrad, &[a[0], a[1]], pool(), None, "y", u()).unwrap()
    });
    case("avg_pool2d_grad", &[t(&[2, 2, 3, 4])], &|f, a| {
        f.push(OpKind::AvgPool2dGrad, &[a[0]], pool(), Some(t(&[2, 2, 7, 5])), "y", u()).unwrap()
    });
    for (nm, rate) in [("dropout", 0.3f32), ("dropout_rate0", 0.0)] {
        case(nm, &[t(&[8, 16])], &|f, a| {
            f.push(OpKind::Dropout, &[a[0]], attrs([("rate", Attr::F32(rate)), ("seed", Attr::Int(-12345))]), None, "y", u()).unwrap()
        });
    }
    // With a rank-0 step key operand (a training step's `ck.step` argument):
    // the key mixes in the step value's bits (`ckopt_ir::random::dropout_key`).
    case("dropout_step", &[t(&[8, 16]), t(&[])], &|f, a| {
        f.push(OpKind::Dropout, &[a[0], a[1]], attrs([("rate", Attr::F32(0.4)), ("seed", Attr::Int(77))]), None, "y", u()).unwrap()
    });
    out
}

fn ty(s: &[u64], dt: DType) -> TensorType {
    TensorType::new(s.to_vec(), dt)
}

/// One function per mixed element-type op (indexing, comparisons, logic,
/// select, cast between every pair of element types, iota, the
/// integer-label loss) and a few fused mixes: what the backends lower
/// beyond f32 (cpu and cuda run every one against the interpreter). Index and
/// label operands are meant to be filled with values in `[0, 3)` (every
/// bound here is at least 3), labels with some `-100` (ignored).
/// Whether a case convolves bf16/f16 values: the cuda lowering refuses
/// those at the op (its im2col + GEMM convolutions are f32); the cpu
/// backend widens them.
pub fn is_lowp_conv(f: &Func) -> bool {
    f.body.iter().any(|o| {
        matches!(o.kind, OpKind::Conv2d | OpKind::Conv2dGradInput | OpKind::Conv2dGradFilter)
            && matches!(f.ty(o.operands[0]).dtype, DType::BF16 | DType::F16)
    })
}

pub fn mixed_op_cases() -> Vec<Func> {
    use DType::*;
    let mut out = Vec::new();
    let mut case = |name: &str, args: &[TensorType], build: &dyn Fn(&mut Func, &[ValueId]) -> ValueId| {
        let mut f = Func::new(name, Loc::unknown());
        let vs: Vec<ValueId> = args.iter().enumerate().map(|(i, ty)| f.add_param(format!("a{i}"), ty.clone(), false)).collect();
        let r = build(&mut f, &vs);
        f.push_return(&[r], Loc::unknown());
        out.push(f);
    };
    let u = Loc::unknown;
    let ax = |a: i64| attrs([("axis", Attr::Int(a))]);
    for (nm, idx_dt) in [("gather_i64", I64), ("gather_i32", I32)] {
        case(nm, &[ty(&[4, 3, 5], F32), ty(&[2, 3], idx_dt)], &|f, a| {
            f.push(OpKind::Gather, &[a[0], a[1]], ax(1), None, "y", u()).unwrap()
        });
    }
    case("gather_embedding", &[ty(&[6, 16], BF16), ty(&[2, 5], I64)], &|f, a| {
        f.push(OpKind::Gather, &[a[0], a[1]], ax(0), None, "y", u()).unwrap()
    });
    case("gather_grad", &[ty(&[2, 7], I64), ty(&[4, 2, 7, 5], F32)], &|f, a| {
        f.push(OpKind::GatherGrad, &[a[0], a[1]], ax(1), Some(ty(&[4, 3, 5], F32)), "y", u()).unwrap()
    });
    case("take_along", &[ty(&[3, 4, 5], F32), ty(&[3, 2, 5], I64)], &|f, a| {
        f.push(OpKind::TakeAlong, &[a[0], a[1]], ax(1), None, "y", u()).unwrap()
    });
    case("take_along_grad", &[ty(&[3, 6, 5], I32), ty(&[3, 6, 5], F32)], &|f, a| {
        f.push(OpKind::TakeAlongGrad, &[a[0], a[1]], ax(1), Some(ty(&[3, 4, 5], F32)), "y", u()).unwrap()
    });
    for k in [OpKind::Ge, OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt] {
        case(&format!("{}_f32", k.name()), &[ty(&[3, 11], F32), ty(&[3, 11], F32)], &|f, a| {
            f.push(k, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap()
        });
        case(&format!("{}_i64", k.name()), &[ty(&[3, 11], I64), ty(&[3, 11], I64)], &|f, a| {
            f.push(k, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap()
        });
    }
    case("ne_i1", &[ty(&[19], I1), ty(&[19], I1)], &|f, a| f.push(OpKind::Ne, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    for k in [OpKind::Or, OpKind::And] {
        case(k.name(), &[ty(&[2, 13], I1), ty(&[2, 13], I1)], &|f, a| f.push(k, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    }
    case("not", &[ty(&[2, 13], I1)], &|f, a| f.push(OpKind::Not, &[a[0]], Attrs::new(), None, "y", u()).unwrap());
    for (nm, dt) in [("select_f32", F32), ("select_i32", I32), ("select_bf16", BF16)] {
        case(nm, &[ty(&[3, 9], I1), ty(&[3, 9], dt), ty(&[3, 9], dt)], &|f, a| {
            f.push(OpKind::Select, &[a[0], a[1], a[2]], Attrs::new(), None, "y", u()).unwrap()
        });
    }
    let all = [F32, BF16, F16, I64, I32, I1];
    for from in all {
        for to in all {
            case(&format!("cast_{}_{}", from.name(), to.name()), &[ty(&[2, 17], from)], &|f, a| {
                f.push(OpKind::Cast, &[a[0]], Attrs::new(), Some(ty(&[2, 17], to)), "y", u()).unwrap()
            });
        }
    }
    for (nm, dt, dim) in [("iota_i64", I64, 1), ("iota_f32", F32, 0), ("iota_i32", I32, 2), ("iota_bf16", BF16, 1)] {
        case(nm, &[], &|f, _| f.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(dim))]), Some(ty(&[3, 20, 4], dt)), "y", u()).unwrap());
    }
    case("cross_entropy", &[ty(&[6, 5], F32), ty(&[6], I64)], &|f, a| {
        f.push(OpKind::CrossEntropy, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap()
    });
    case("cross_entropy_grad", &[ty(&[6, 5], F32), ty(&[6], I32), ty(&[], F32)], &|f, a| {
        f.push(OpKind::CrossEntropyGrad, &[a[0], a[1], a[2]], Attrs::new(), None, "y", u()).unwrap()
    });
    // Rows wider than the cpu's 16-lane exps: two vectors and a scalar tail of 5.
    for (nm, dt) in [("cross_entropy_wide", F32), ("cross_entropy_wide_bf16", BF16)] {
        case(nm, &[ty(&[4, 37], dt), ty(&[4], I64)], &|f, a| f.push(OpKind::CrossEntropy, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    }
    case("cross_entropy_grad_wide", &[ty(&[4, 37], F32), ty(&[4], I64), ty(&[], F32)], &|f, a| {
        f.push(OpKind::CrossEntropyGrad, &[a[0], a[1], a[2]], Attrs::new(), None, "y", u()).unwrap()
    });
    // A causal mask built from iotas, used by a select inside one loop (fuse's groups keep it unstored).
    case("causal_mask_select", &[ty(&[2, 9, 9], F32)], &|f, a| {
        let i = f.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(1))]), Some(ty(&[2, 9, 9], I64)), "i", u()).unwrap();
        let j = f.push(OpKind::Iota, &[], attrs([("dim", Attr::Int(2))]), Some(ty(&[2, 9, 9], I64)), "j", u()).unwrap();
        let m = f.push(OpKind::Le, &[j, i], Attrs::new(), None, "m", u()).unwrap();
        let ninf =
            f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(f32::NEG_INFINITY))]), Some(ty(&[2, 9, 9], F32)), "n", u()).unwrap();
        f.push(OpKind::Select, &[m, a[0], ninf], Attrs::new(), None, "y", u()).unwrap()
    });
    // Logic on comparisons, then a cast, in one function.
    case("mask_logic", &[ty(&[4, 7], F32), ty(&[4, 7], F32)], &|f, a| {
        let g = f.push(OpKind::Gt, &[a[0], a[1]], Attrs::new(), None, "g", u()).unwrap();
        let l = f.push(OpKind::Lt, &[a[0], a[1]], Attrs::new(), None, "l", u()).unwrap();
        let n = f.push(OpKind::Not, &[l], Attrs::new(), None, "n", u()).unwrap();
        let both = f.push(OpKind::And, &[g, n], Attrs::new(), None, "b", u()).unwrap();
        f.push(OpKind::Cast, &[both], Attrs::new(), Some(ty(&[4, 7], F32)), "y", u()).unwrap()
    });
    for (nm, dt, v) in [("fill_i64", I64, -3.0f32), ("fill_i32", I32, 7.0), ("fill_i1", I1, 1.0), ("fill_bf16", BF16, 0.1)] {
        case(nm, &[], &|f, _| f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(v))]), Some(ty(&[3, 11], dt)), "y", u()).unwrap());
    }
    // Integer arithmetic (ONNX's negative-index wrap: `i < 0 ? i + n : i`), wrapping in the type.
    for (nm, dt) in [("int_arith_i64", I64), ("int_arith_i32", I32)] {
        case(nm, &[ty(&[2, 9], dt), ty(&[2, 9], dt)], &|f, a| {
            let s = f.push(OpKind::Sub, &[a[0], a[1]], Attrs::new(), None, "s", u()).unwrap();
            let m = f.push(OpKind::Mul, &[s, a[0]], Attrs::new(), None, "m", u()).unwrap();
            let n = f.push(OpKind::Neg, &[m], Attrs::new(), None, "n", u()).unwrap();
            let x = f.push(OpKind::Max, &[n, a[1]], Attrs::new(), None, "x", u()).unwrap();
            f.push(OpKind::Add, &[x, a[0]], Attrs::new(), None, "y", u()).unwrap()
        });
    }
    // A GEMM on low-precision operands (f32 accumulation, then rounded): another summation order than the interpreter's.
    for (nm, dt) in [("matmul_bf16", BF16), ("matmul_f16", F16)] {
        case(nm, &[ty(&[2, 5, 12], dt), ty(&[2, 12, 7], dt)], &|f, a| f.push(OpKind::Matmul, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    }
    // Convolutions on low-precision values (f32 library convolution on widened copies, rounded once).
    let conv = || attrs([("stride", Attr::IntArray(vec![2, 1])), ("padding", Attr::IntArray(vec![1, 1]))]);
    for (nm, dt) in [("conv2d_bf16", BF16), ("conv2d_f16", F16)] {
        case(nm, &[ty(&[2, 3, 6, 5], dt), ty(&[4, 3, 3, 3], dt)], &|f, a| f.push(OpKind::Conv2d, &[a[0], a[1]], conv(), None, "y", u()).unwrap());
    }
    for (nm, dt) in [("conv2d_grad_input_bf16", BF16), ("conv2d_grad_input_f16", F16)] {
        case(nm, &[ty(&[2, 4, 3, 5], dt), ty(&[4, 3, 3, 3], dt)], &|f, a| {
            f.push(OpKind::Conv2dGradInput, &[a[0], a[1]], conv(), Some(ty(&[2, 3, 6, 5], dt)), "y", u()).unwrap()
        });
    }
    for (nm, dt) in [("conv2d_grad_filter_bf16", BF16), ("conv2d_grad_filter_f16", F16)] {
        case(nm, &[ty(&[2, 3, 6, 5], dt), ty(&[2, 4, 3, 5], dt)], &|f, a| {
            f.push(OpKind::Conv2dGradFilter, &[a[0], a[1]], conv(), Some(ty(&[4, 3, 3, 3], dt)), "y", u()).unwrap()
        });
    }
    // Depthwise and grouped in bf16: the widened copies have the grouped filter's size.
    let dw = || attrs([("stride", Attr::IntArray(vec![2, 1])), ("padding", Attr::IntArray(vec![1, 1])), ("groups", Attr::Int(3))]);
    case("conv2d_depthwise_bf16", &[ty(&[2, 3, 6, 5], BF16), ty(&[6, 1, 3, 3], BF16)], &|f, a| {
        f.push(OpKind::Conv2d, &[a[0], a[1]], dw(), None, "y", u()).unwrap()
    });
    case("conv2d_grad_filter_depthwise_f16", &[ty(&[2, 3, 6, 5], F16), ty(&[2, 6, 3, 5], F16)], &|f, a| {
        f.push(OpKind::Conv2dGradFilter, &[a[0], a[1]], dw(), Some(ty(&[6, 1, 3, 3], F16)), "y", u()).unwrap()
    });
    let g2 = || attrs([("padding", Attr::IntArray(vec![1, 1])), ("groups", Attr::Int(2))]);
    case("conv2d_grad_input_groups2_bf16", &[ty(&[2, 6, 4, 4], BF16), ty(&[6, 2, 3, 3], BF16)], &|f, a| {
        f.push(OpKind::Conv2dGradInput, &[a[0], a[1]], g2(), Some(ty(&[2, 4, 4, 4], BF16)), "y", u()).unwrap()
    });
    case("bf16_arith", &[ty(&[3, 10], BF16), ty(&[3, 10], BF16)], &|f, a| {
        let p = f.push(OpKind::Mul, &[a[0], a[1]], Attrs::new(), None, "p", u()).unwrap();
        let e = f.push(OpKind::Exp, &[p], Attrs::new(), None, "e", u()).unwrap();
        f.push(OpKind::Add, &[e, a[0]], Attrs::new(), None, "y", u()).unwrap()
    });
    case("f16_sum", &[ty(&[4, 33], F16)], &|f, a| {
        f.push(OpKind::ReduceSum, &[a[0]], attrs([("dims", Attr::IntArray(vec![1]))]), None, "y", u()).unwrap()
    });
    out
}
