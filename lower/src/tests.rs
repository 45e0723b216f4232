//! Tests of the lowering against the interpreter (the oracle): every op on
//! the CPU backend, in-place and overlapping layouts, and PTX for every op.
//! Tolerance: |cpu - interp| <= 1e-4 * max(1, |interp|) per element (NaN
//! must match NaN).

use crate::gpu::{CudaOptions, compile_bundle};
use crate::testcases::{naive_plan, op_cases};
use ckopt_ir::OpKind;

/// Every op kind has a test case: the f32 ones in `op_cases`, the mixed
/// element-type ones (indexing, comparisons, logic, select, cast, iota, the
/// integer-label loss) in `mixed_op_cases`; both lists run on the cpu
/// backend and on the cuda path (PTX below, the emulation in
/// runtime/tests/backends/cuda_emu.rs) against the interpreter.
#[test]
fn every_op_kind_has_a_case() {
    let cases = op_cases();
    let mixed = crate::testcases::mixed_op_cases();
    for &k in OpKind::ALL {
        if k == OpKind::Return {
            continue;
        }
        let has = cases.iter().any(|f| f.body.iter().any(|o| o.kind == k));
        let has_mixed = mixed.iter().any(|f| f.body.iter().any(|o| o.kind == k));
        if k.elem_class() == ckopt_ir::ops::ElemClass::Mixed {
            assert!(!has, "ck.{} has an f32 case: move it to mixed_op_cases", k.name());
            assert!(has_mixed, "no mixed test case for ck.{}", k.name());
        } else {
            assert!(has, "no test case for ck.{}", k.name());
        }
    }
}

/// Every mixed element-type case (indexing and their scatter-add
/// gradients, comparisons, logic, select, every cast, iota, the loss and
/// its gradient, integer and bf16/f16 arithmetic, reductions and GEMMs)
/// compiles for cuda, with an entry per launch; GEMMs carry the fallback
/// kernel of their element type; ptxas accepts the PTX when CKOPT_PTXAS is
/// set.
#[test]
fn every_mixed_op_compiles_to_ptx_and_ptxas_accepts_it() {
    let have_libdevice = std::env::var_os("CKOPT_LIBDEVICE").is_some();
    let mut checked = 0;
    let mut compiled = 0;
    let mut refused = 0;
    for mut f in crate::testcases::mixed_op_cases() {
        naive_plan(&mut f);
        let lowp_conv = crate::testcases::is_lowp_conv(&f);
        let b = match compile_bundle(&[&f], &CudaOptions::default()) {
            Ok(_) if lowp_conv => panic!("@{}: a bf16/f16 convolution was accepted by the cuda lowering", f.name),
            Err(e) if lowp_conv => {
                assert!(e.message.contains("convolutions are f32 on cuda"), "@{}: {e}", f.name);
                refused += 1;
                continue;
            }
            Ok(b) => b,
            Err(e) if !have_libdevice && e.message.contains("needs libdevice") => continue,
            Err(e) => panic!("@{}: {e}", f.name),
        };
        compiled += 1;
        for k in &b.kernels {
            for l in &k.launches {
                assert!(b.ptx.contains(&format!(".entry {}(", l.entry)), "@{}: no entry {}", f.name, l.entry);
            }
        }
        for op in f.body.iter().filter(|o| o.kind == OpKind::Matmul) {
            let dt = f.ty(op.operands[0]).dtype;
            let entry = ckopt_kernels::bundle::lib_gemm_entry(dt);
            assert!(b.ptx.contains(&format!(".entry {entry}(")), "@{}: no {entry}", f.name);
        }
        if ptxas_accepts(&b.ptx, &f.name) {
            checked += 1;
        }
    }
    assert!(compiled >= 70, "compiled only {compiled} mixed cases");
    assert_eq!(refused, 9, "the nine bf16/f16 convolution cases (six dense, three grouped) are refused");
    if std::env::var_os("CKOPT_PTXAS").is_some() && have_libdevice {
        assert_eq!(checked, compiled, "ptxas checked only {checked} of {compiled}");
    }
}

/// bf16 and f16 in PTX: loads widened (`cvt.f32.bf16`), results rounded to
/// nearest even (`cvt.rn.bf16.f32`, `cvt.rn.f16.f32`; LLVM may narrow an
/// add or mul of widened values to `add.rn.bf16`, the same bits since f32
/// has more than 2p + 2 bits), i1 stored as a byte.
#[test]
fn low_precision_and_masks_in_ptx() {
    let text = r#"
func.func @f(%x: tensor<300xbf16>, %y: tensor<300xf16>, %z: tensor<300xf32>) -> (tensor<300xbf16>, tensor<300xf16>, tensor<300xi1>, tensor<300xbf16>) {
  %a = "ck.add"(%x, %x) : (tensor<300xbf16>, tensor<300xbf16>) -> tensor<300xbf16>
  %b = "ck.mul"(%y, %y) : (tensor<300xf16>, tensor<300xf16>) -> tensor<300xf16>
  %c = "ck.cast"(%x) : (tensor<300xbf16>) -> tensor<300xf16>
  %m = "ck.lt"(%c, %b) : (tensor<300xf16>, tensor<300xf16>) -> tensor<300xi1>
  %d = "ck.cast"(%z) : (tensor<300xf32>) -> tensor<300xbf16>
  "ck.return"(%a, %b, %m, %d) : (tensor<300xbf16>, tensor<300xf16>, tensor<300xi1>, tensor<300xbf16>) -> ()
}
"#;
    let m = ckopt_ir::parse_and_verify(text, "t.ck").unwrap_or_else(|d| panic!("{d}"));
    let mut f = m.funcs[0].clone();
    naive_plan(&mut f);
    let b = compile_bundle(&[&f], &CudaOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    for want in ["cvt.f32.bf16", "cvt.rn.bf16.f32", "cvt.rn.f16.f32", "st.global.b8", "ld.global.b16"] {
        assert!(b.ptx.contains(want), "no {want} in\n{}", b.ptx);
    }
    ptxas_accepts(&b.ptx, "lowp");
}

/// Elementwise ops through both emitters: the single-op kernel as the
/// backends build it (a loop kernel: `vemit`, vectorized) and the same
/// kernel forced per element (`emit::element`, scalar) both give the
/// interpreter's bits (they share `emit::elementwise`; before, the per-element
/// emitter had `math.rsqrt` and ignored dropout's step key).
#[test]
fn elementwise_ops_of_both_emitters_match_the_interpreter_bit_for_bit() {
    use ckopt_kernels::kernel::extract;
    use ckopt_kernels::{KernelCache, KernelKind};
    let mut checked = Vec::new();
    for f in op_cases() {
        let op = &f.body[0];
        if !(op.kind.is_elementwise() || op.kind == OpKind::Fill) {
            continue;
        }
        let (k, _, _) = extract(&f, 0..=0, &vec![false; f.values.len()]).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        assert!(matches!(k.kind, KernelKind::Loop { .. }), "@{}: {:?}", f.name, k.kind);
        let n = k.func.result_types[0].elems();
        let mut single = k.clone();
        single.kind = KernelKind::Single;
        single.split = n;
        single.key.push_str("// forced per element");
        let mut cache = KernelCache::new();
        let splits = [k.split, n];
        cache.intern(k);
        cache.intern(single);
        let ks = crate::cpu::compile_kernels(&cache, 2).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        let mut inputs = ckopt_interp::random_inputs(&f, 11);
        if let Some(x) = inputs.first_mut() {
            // Special values too: zeros, negatives, tiny and huge magnitudes.
            for (i, v) in [0.0f32, -0.0, -1.5, 1e-30, 3e30, -2.0, 0.5, 4.0].into_iter().enumerate() {
                if i < x.data.len() {
                    x.data[i] = v;
                }
            }
        }
        let module = ckopt_ir::Module { funcs: vec![f.clone()] };
        let want = ckopt_interp::run_func(&module, &f.name, &inputs).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        for (kernel, (split, emitter)) in splits.iter().zip(["vemit", "emit::element"]).enumerate() {
            let mut bufs: Vec<Vec<f32>> = inputs.iter().map(|t| t.data.clone()).collect();
            bufs.push(vec![f32::NAN; n as usize]);
            let ptrs: Vec<*mut f32> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
            // SAFETY: the buffers have the sizes of the kernel's inputs and output.
            unsafe { ks.call(kernel, &ptrs, 0, *split as i64) }.unwrap_or_else(|e| panic!("@{}: {e}", f.name));
            for (i, (g, w)) in bufs[inputs.len()].iter().zip(&want[0].data).enumerate() {
                let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                assert!(
                    same,
                    "@{} by {emitter}: element {i} of x = {:?}: got {g:e}, interp {w:e}",
                    f.name,
                    inputs.first().map(|x| x.data[i])
                );
            }
        }
        checked.push(f.name.clone());
    }
    for name in ["rsqrt", "sigmoid", "dropout", "dropout_step", "fill"] {
        assert!(checked.iter().any(|c| c == name), "{name} not checked: {checked:?}");
    }
}

/// Every op whose kernel is a single-op kernel (`emit::element`, one
/// scalar per result element: pools, convolutions and their gradients,
/// concat, ...), compiled for the cpu and run on its own: the interpreter's
/// bits (both accumulate each window in the same row-major order), within
/// rounding for the convolution gradients. The
/// backends run convolutions as library steps, so this is what exercises
/// `emit::conv`.
#[test]
fn single_op_kernels_match_the_interpreter_bit_for_bit() {
    use ckopt_kernels::kernel::extract;
    use ckopt_kernels::{KernelCache, KernelKind};
    let mut checked = Vec::new();
    for f in op_cases() {
        let Ok((k, _, _)) = extract(&f, 0..=0, &vec![false; f.values.len()]) else {
            continue;
        };
        if !matches!(k.kind, KernelKind::Single) || k.func.result_types.len() != 1 {
            continue;
        }
        let n = k.func.result_types[0].elems();
        let split = k.split;
        let mut cache = KernelCache::new();
        cache.intern(k);
        let ks = crate::cpu::compile_kernels(&cache, 2).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        let inputs = ckopt_interp::random_inputs(&f, 5);
        let module = ckopt_ir::Module { funcs: vec![f.clone()] };
        let want = ckopt_interp::run_func(&module, &f.name, &inputs).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        let mut bufs: Vec<Vec<f32>> = inputs.iter().map(|t| t.data.clone()).collect();
        bufs.push(vec![f32::NAN; n as usize]);
        let ptrs: Vec<*mut f32> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        // SAFETY: the buffers have the sizes of the kernel's inputs and output.
        unsafe { ks.call(0, &ptrs, 0, split as i64) }.unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        // the convolution gradients gather in another order than the
        // interpreter's scatter: equal to rounding
        let exact = !f.name.starts_with("conv2d_grad");
        for (i, (g, w)) in bufs[inputs.len()].iter().zip(&want[0].data).enumerate() {
            let ok = if exact { g.to_bits() == w.to_bits() } else { (g - w).abs() <= 1e-5 * w.abs().max(1.0) };
            assert!(ok, "@{}: element {i}: got {g:e}, interp {w:e}", f.name);
        }
        checked.push(f.name.clone());
    }
    for name in [
        "conv2d",
        "conv2d_nopad",
        "conv2d_grad_input",
        "conv2d_grad_filter",
        "conv2d_groups2",
        "conv2d_grad_input_groups2",
        "conv2d_grad_filter_groups2",
        "conv2d_depthwise",
        "conv2d_grad_input_depthwise",
        "conv2d_grad_filter_depthwise",
        "conv2d_depthwise_wide_pad",
        "max_pool2d",
        "avg_pool2d",
    ] {
        assert!(checked.iter().any(|c| c == name), "{name} not checked: {checked:?}");
    }
}

/// Runs `$CKOPT_PTXAS -arch=sm_90` on `ptx`; panics with ptxas's output
/// when it rejects it. Returns whether ptxas ran.
pub fn ptxas_accepts(ptx: &str, name: &str) -> bool {
    let Some(ptxas) = std::env::var_os("CKOPT_PTXAS") else {
        return false;
    };
    let dir = std::env::temp_dir().join(format!("ckopt-lower-ptx-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.ptx"));
    std::fs::write(&path, ptx).unwrap();
    let out = std::process::Command::new(ptxas).arg("-arch=sm_90").arg(&path).arg("-o").arg("/dev/null").output().unwrap();
    assert!(out.status.success(), "ptxas rejected {name}: {}", String::from_utf8_lossy(&out.stderr));
    let _ = std::fs::remove_file(&path);
    true
}

/// Every op compiles to PTX (libdevice from CKOPT_LIBDEVICE when set; ops
/// needing it are skipped otherwise) with an entry per launch of every
/// kernel; when CKOPT_PTXAS is set, ptxas accepts the PTX.
#[test]
fn every_op_compiles_to_ptx_and_ptxas_accepts_it() {
    let have_libdevice = std::env::var_os("CKOPT_LIBDEVICE").is_some();
    let mut checked = 0;
    for mut f in op_cases() {
        naive_plan(&mut f);
        let math = f.body.iter().any(|o| {
            matches!(o.kind, OpKind::Exp | OpKind::Log | OpKind::Tanh | OpKind::Sigmoid | OpKind::Sqrt | OpKind::Rsqrt | OpKind::Erf)
        });
        if math && !have_libdevice {
            continue;
        }
        let b = compile_bundle(&[&f], &CudaOptions::default()).unwrap_or_else(|e| panic!("@{}: {e}", f.name));
        for k in &b.kernels {
            for l in &k.launches {
                assert!(b.ptx.contains(&format!(".entry {}(", l.entry)), "@{}: no entry {}", f.name, l.entry);
                assert!(l.grid[0] >= 1 && (l.grid[0] as u64) <= ckopt_kernels::bundle::GRID_X_LIMIT);
            }
        }
        let gemm =
            f.body.iter().any(|o| matches!(o.kind, OpKind::Matmul | OpKind::Conv2d | OpKind::Conv2dGradInput | OpKind::Conv2dGradFilter));
        assert_eq!(b.ptx.contains(".entry ck_lib_gemm("), gemm, "@{}: the GEMM fallback is there exactly when needed", f.name);
        if ptxas_accepts(&b.ptx, &f.name) {
            checked += 1;
        }
    }
    if std::env::var_os("CKOPT_PTXAS").is_some() {
        assert!(checked > 30, "ptxas checked only {checked} cases");
    }
}

/// Reductions of every scheme: one block per row, rows cut into chunks
/// (two stages), columns in one and two stages; 32-bit and 64-bit indices.
#[test]
fn reduction_schemes_and_index_widths() {
    use ckopt_ir::{Attr, Func, Loc, TensorType, attrs};
    let case = |name: &str, shape: &[u64], dims: Vec<i64>| {
        let mut f = Func::new(name, Loc::unknown());
        let x = f.add_param("x", TensorType::f32(shape.to_vec()), false);
        let y = f.push(OpKind::ReduceSum, &[x], attrs([("dims", Attr::IntArray(dims))]), None, "y", Loc::unknown()).unwrap();
        f.push_return(&[y], Loc::unknown());
        naive_plan(&mut f);
        f
    };
    let rows = case("rows", &[512, 1024], vec![1]);
    let full = case("full", &[256, 1024], vec![0, 1]);
    let cols = case("cols", &[256, 1024], vec![0]);
    let wide_cols = case("wide_cols", &[4, 65536], vec![0]);
    let huge = case("huge", &[3, 1 << 30], vec![1]);
    for (f, stages, what) in [
        (&rows, 1, "512 rows of 1024, 256 threads per row"),
        (&full, 2, "1 rows of 262144"),
        (&cols, 2, "1024 results of 256 elements, 16 chunks"),
        (&wide_cols, 1, "65536 results of 4 elements"),
        (&huge, 2, "3 rows of 1073741824"),
    ] {
        let (progs, cache) = crate::gpu::programs_of(&[f]).unwrap();
        let (_, ks) = crate::gpu::cuda_kernels_mlir(&cache, &progs).unwrap();
        assert_eq!(ks[0].launches.len(), stages, "@{}: {}", f.name, ks[0].what);
        assert!(ks[0].what.contains(what), "@{}: {}", f.name, ks[0].what);
        assert_eq!(ks[0].scratch_bytes > 0, stages == 2);
        let b = compile_bundle(&[f], &CudaOptions::default()).unwrap();
        assert_eq!(b.kernels[0].what.contains("32-bit indices"), f.name != "huge", "{}", b.kernels[0].what);
        ptxas_accepts(&b.ptx, &f.name);
    }
}
