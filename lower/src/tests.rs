//! Tests of the lowering against the interpreter (the oracle): every op on
//! the CPU backend, in-place and overlapping layouts, and PTX for every op.
//! Tolerance: |cpu - interp| <= 1e-4 * max(1, |interp|) per element (NaN
//! must match NaN).

use crate::cpu::compile_cpu;
use crate::gpu::{PtxOptions, compile_ptx};
use ckopt_interp::{random_inputs, run_func};
use ckopt_ir::ops::{ATTR_ARENA_BYTES, ATTR_INPLACE, ATTR_OFFSET};
use ckopt_ir::{Attr, Attrs, Func, Loc, Module, OpKind, TensorType, ValueId, attrs};

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

/// Runs `f` on the CPU backend and on the interpreter with seeded inputs; compares.
pub fn check_cpu_vs_interp(f: &Func) -> Result<(), String> {
    let inputs = random_inputs(f, 7);
    let module = Module { funcs: vec![f.clone()] };
    let want = run_func(&module, &f.name, &inputs).map_err(|d| d.to_string())?;
    let p = compile_cpu(f, 2).map_err(|d| d.to_string())?;
    let mut arena = vec![0u8; p.layout.arena_bytes as usize + 64];
    let off = arena.as_ptr().align_offset(64);
    let arena = &mut arena[off..off + p.layout.arena_bytes as usize];
    let ins: Vec<&[f32]> = inputs.iter().map(|t| t.data.as_slice()).collect();
    p.run(arena, &ins)?;
    let got = p.outputs(arena, &ins);
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        close(g, &w.data).map_err(|e| format!("@{} result {k}: {e}", f.name))?;
    }
    Ok(())
}

fn t(s: &[u64]) -> TensorType {
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
    case("fill", &[], &|f, _| f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(0.75))]), Some(t(&[2, 2])), "y", u()).unwrap());
    case("fill_scalar", &[], &|f, _| f.push(OpKind::Fill, &[], attrs([("value", Attr::F32(3.0))]), Some(t(&[])), "y", u()).unwrap());
    case("broadcast", &[t(&[3, 4])], &|f, a| {
        f.push(OpKind::Broadcast, &[a[0]], attrs([("dims", Attr::IntArray(vec![0, 2]))]), Some(t(&[3, 2, 4])), "y", u()).unwrap()
    });
    case("broadcast_scalar", &[t(&[])], &|f, a| {
        f.push(OpKind::Broadcast, &[a[0]], attrs([("dims", Attr::IntArray(vec![]))]), Some(t(&[2, 3])), "y", u()).unwrap()
    });
    for (nm, dims) in [("reduce_sum", vec![1]), ("reduce_sum_all", vec![0, 1, 2]), ("reduce_sum_02", vec![0, 2])] {
        case(nm, &[t(&[3, 4, 5])], &|f, a| f.push(OpKind::ReduceSum, &[a[0]], attrs([("dims", Attr::IntArray(dims.clone()))]), None, "y", u()).unwrap());
    }
    case("reduce_max", &[t(&[3, 4, 5])], &|f, a| f.push(OpKind::ReduceMax, &[a[0]], attrs([("dims", Attr::IntArray(vec![2]))]), None, "y", u()).unwrap());
    case("transpose", &[t(&[2, 3, 4])], &|f, a| f.push(OpKind::Transpose, &[a[0]], attrs([("perm", Attr::IntArray(vec![2, 0, 1]))]), None, "y", u()).unwrap());
    case("reshape", &[t(&[2, 6])], &|f, a| f.push(OpKind::Reshape, &[a[0]], Attrs::new(), Some(t(&[3, 4])), "y", u()).unwrap());
    case("slice", &[t(&[5, 6])], &|f, a| f.push(OpKind::Slice, &[a[0]], attrs([("offsets", Attr::IntArray(vec![1, 2]))]), Some(t(&[3, 3])), "y", u()).unwrap());
    case("concat", &[t(&[2, 3]), t(&[2, 1]), t(&[2, 2])], &|f, a| {
        f.push(OpKind::Concat, a, attrs([("dim", Attr::Int(1))]), None, "y", u()).unwrap()
    });
    case("concat_single", &[t(&[2, 3])], &|f, a| f.push(OpKind::Concat, a, attrs([("dim", Attr::Int(0))]), None, "y", u()).unwrap());
    case("matmul", &[t(&[3, 4]), t(&[4, 5])], &|f, a| f.push(OpKind::Matmul, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    case("matmul_tt_batched", &[t(&[2, 4, 3]), t(&[2, 5, 4])], &|f, a| {
        f.push(OpKind::Matmul, &[a[0], a[1]], attrs([("transpose_a", Attr::Bool(true)), ("transpose_b", Attr::Bool(true))]), None, "y", u()).unwrap()
    });
    let conv = || attrs([("stride", Attr::IntArray(vec![2, 1])), ("padding", Attr::IntArray(vec![1, 1]))]);
    case("conv2d", &[t(&[2, 3, 6, 5]), t(&[4, 3, 3, 3])], &|f, a| f.push(OpKind::Conv2d, &[a[0], a[1]], conv(), None, "y", u()).unwrap());
    case("conv2d_nopad", &[t(&[1, 2, 5, 5]), t(&[3, 2, 2, 2])], &|f, a| f.push(OpKind::Conv2d, &[a[0], a[1]], Attrs::new(), None, "y", u()).unwrap());
    // conv2d of [2,3,6,5] with [4,3,3,3], stride [2,1], pad [1,1] -> [2,4,3,5]
    case("conv2d_grad_input", &[t(&[2, 4, 3, 5]), t(&[4, 3, 3, 3])], &|f, a| {
        f.push(OpKind::Conv2dGradInput, &[a[0], a[1]], conv(), Some(t(&[2, 3, 6, 5])), "y", u()).unwrap()
    });
    case("conv2d_grad_filter", &[t(&[2, 3, 6, 5]), t(&[2, 4, 3, 5])], &|f, a| {
        f.push(OpKind::Conv2dGradFilter, &[a[0], a[1]], conv(), Some(t(&[4, 3, 3, 3])), "y", u()).unwrap()
    });
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
    out
}

#[test]
fn every_op_kind_has_a_case() {
    let cases = op_cases();
    for &k in OpKind::ALL {
        if k == OpKind::Return {
            continue;
        }
        assert!(cases.iter().any(|f| f.body.iter().any(|o| o.kind == k)), "no test case for ck.{}", k.name());
    }
}

#[test]
fn every_op_on_cpu_matches_the_interpreter() {
    let mut failures = Vec::new();
    for mut f in op_cases() {
        naive_plan(&mut f);
        if let Err(e) = check_cpu_vs_interp(&f) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A chain where elementwise results are written in place over their operand
/// (same ck.offset), and a transpose whose result overlaps its operand (the
/// temporary path): both must still equal the interpreter.
#[test]
fn inplace_and_overlapping_results_match_the_interpreter() {
    let u = Loc::unknown;
    let mut f = Func::new("chain", u());
    let x = f.add_param("x", t(&[4, 4]), false);
    let a = f.push(OpKind::Exp, &[x], Attrs::new(), None, "a", u()).unwrap();
    let b = f.push(OpKind::Tanh, &[a], attrs([(ATTR_INPLACE, Attr::Int(0))]), None, "b", u()).unwrap();
    let c = f.push(OpKind::Transpose, &[b], attrs([("perm", Attr::IntArray(vec![1, 0]))]), None, "c", u()).unwrap();
    let d = f.push(OpKind::Mul, &[c, c], attrs([(ATTR_INPLACE, Attr::Int(0))]), None, "d", u()).unwrap();
    f.push_return(&[d], u());
    for (i, off) in [0i64, 0, 0, 0].iter().enumerate() {
        f.body[i].attrs.insert(ATTR_OFFSET.into(), Attr::Int(*off));
    }
    f.attrs.insert(ATTR_ARENA_BYTES.into(), Attr::Int(64));
    check_cpu_vs_interp(&f).unwrap();
    let mut g = f.clone();
    g.name = "chain_gpu".into();
    let e = compile_ptx(&g, &PtxOptions { libdevice: None, ..Default::default() });
    assert!(e.is_err(), "the overlapping transpose (or missing libdevice) must be refused on cuda");
}

/// Every op compiles to PTX (libdevice from CKOPT_LIBDEVICE when set; ops
/// needing it are skipped otherwise) with one entry per op; when
/// CKOPT_PTXAS is set, ptxas accepts the PTX.
#[test]
fn every_op_compiles_to_ptx_and_ptxas_accepts_it() {
    let have_libdevice = std::env::var_os("CKOPT_LIBDEVICE").is_some();
    let ptxas = std::env::var_os("CKOPT_PTXAS");
    let dir = std::env::temp_dir().join(format!("ckopt-lower-ptx-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    for mut f in op_cases() {
        naive_plan(&mut f);
        let math = f.body.iter().any(|o| matches!(o.kind, OpKind::Exp | OpKind::Log | OpKind::Tanh | OpKind::Sigmoid | OpKind::Sqrt | OpKind::Rsqrt));
        if math && !have_libdevice {
            continue;
        }
        let p = compile_ptx(&f, &PtxOptions::default()).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        assert_eq!(p.ptx.matches(".entry").count(), p.kernels.len(), "@{}", f.name);
        for k in &p.kernels {
            assert!(p.ptx.contains(&format!(".entry {}(", k.name)), "@{}: no entry {}", f.name, k.name);
        }
        if let Some(ptxas) = &ptxas {
            let path = dir.join(format!("{}.ptx", f.name));
            std::fs::write(&path, &p.ptx).unwrap();
            let st = std::process::Command::new(ptxas).arg("-arch=sm_90").arg(&path).arg("-o").arg("/dev/null").status().unwrap();
            assert!(st.success(), "ptxas rejected @{}", f.name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
