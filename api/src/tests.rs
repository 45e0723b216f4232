//! End-to-end tests of the cpu backend against the interpreter (the
//! oracle): every ckopt-gen model at a small size through autodiff and
//! memplan, with and without remat (and with inplace when registered), and
//! random graphs of `ckopt_ir::testgen`. Also the Trainer: remat{mode=sqrt}
//! gives the no-remat losses step for step.
//! Tolerance: |cpu - interp| <= 1e-4 * max(1, |interp|) per element.

use super::*;
use ckopt_ir::testgen::{GenConfig, gen_module};

fn close(got: &[f32], want: &[f32]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("length {} vs {}", got.len(), want.len()));
    }
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if !((g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= 1e-4 * w.abs().max(1.0)) {
            return Err(format!("element {i}: cpu {g}, interp {w}"));
        }
    }
    Ok(())
}

/// Runs every function of `m` on interp and cpu with seeded inputs and compares.
fn check_module(m: &Module, what: &str) -> Result<(), String> {
    for f in &m.funcs {
        let mut interp = compile(m, &f.name, Target::Interp).map_err(|e| format!("{what} @{}: {e}", f.name))?;
        let mut cpu = compile(m, &f.name, Target::Cpu).map_err(|e| format!("{what} @{}: {e}", f.name))?;
        let inputs = interp.random_inputs(3).map_err(|e| e.to_string())?;
        let want = interp.run(&inputs).map_err(|e| format!("{what} @{} interp: {e}", f.name))?;
        let got = cpu.run(&inputs).map_err(|e| format!("{what} @{} cpu: {e}", f.name))?;
        let rep = cpu.report().ok_or("no report")?;
        if rep.arena_allocated_bytes != rep.arena_bytes {
            return Err(format!("{what} @{}: arena {} allocated for {}", f.name, rep.arena_allocated_bytes, rep.arena_bytes));
        }
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            close(&g.data, &w.data).map_err(|e| format!("{what} @{} result {k}: {e}", f.name))?;
        }
    }
    Ok(())
}

fn small(kind: ModelKind) -> GenOptions {
    let mut o = GenOptions::default();
    for &(opt, _) in kind.options() {
        let v = match opt {
            SizeOpt::Depth => 3,
            SizeOpt::Width => 8,
            SizeOpt::Batch => 2,
            SizeOpt::Seq => 3,
            SizeOpt::Heads => 2,
            SizeOpt::Channels => 3,
            SizeOpt::Image => 6,
            SizeOpt::Classes => 3,
            SizeOpt::Vocab => 11,
        };
        o.set(opt, Some(v));
    }
    o
}

fn has_pass(name: &str) -> bool {
    ckopt_passes::registry().iter().any(|p| p.name == name)
}

#[test]
fn every_model_forward_and_gradient_on_cpu_match_interp_with_and_without_remat() {
    let pipelines = ["autodiff,memplan", "autodiff,remat{mode=sqrt},memplan", "autodiff,inplace,remat{mode=sqrt},memplan", "autodiff,inplace,fuse,remat{mode=sqrt},memplan"];
    let mut failures = Vec::new();
    for kind in ModelKind::ALL {
        for p in pipelines {
            let mut m = model(kind, &small(kind)).unwrap();
            if let Err(e) = optimize(&mut m, p) {
                failures.push(format!("{} with {p}: {e}", kind.name()));
                continue;
            }
            assert_eq!(m.funcs.len(), 2, "{} with {p}: the model and its gradient", kind.name());
            if let Err(e) = check_module(&m, &format!("{} with {p}", kind.name())) {
                failures.push(e);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn random_graphs_on_cpu_match_interp_planned_and_rematerialized() {
    let mut failures = Vec::new();
    let cfg = GenConfig { max_ops: 25, ..Default::default() };
    for seed in 0..24u64 {
        let base = gen_module(&cfg, seed);
        let mut m = base.clone();
        if let Err(e) = optimize(&mut m, "memplan") {
            failures.push(format!("seed {seed} memplan: {e}"));
            continue;
        }
        if let Err(e) = check_module(&m, &format!("seed {seed}")) {
            failures.push(e);
        }
        // With gradients and sqrt remat, when the function returns a scalar loss first.
        let mut g = base.clone();
        if optimize(&mut g, "autodiff,remat{mode=sqrt},memplan").is_ok() {
            if let Err(e) = check_module(&g, &format!("seed {seed} (autodiff, remat)")) {
                failures.push(e);
            }
        }
        // Fused, with the training step, in place and rematerialized.
        let mut s = base.clone();
        if optimize(&mut s, "autodiff,inplace,sgd,fuse,remat{mode=sqrt},memplan").is_ok() {
            if let Err(e) = check_module(&s, &format!("seed {seed} (autodiff, inplace, sgd, fuse, remat)")) {
                failures.push(e);
            }
        }
        let mut fz = base.clone();
        if let Err(e) = optimize(&mut fz, "fuse,memplan") {
            failures.push(format!("seed {seed} fuse: {e}"));
        } else if let Err(e) = check_module(&fz, &format!("seed {seed} (fuse)")) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn sgd_losses_with_sqrt_remat_equal_the_no_remat_run_step_for_step() {
    let opts = GenOptions { depth: Some(6), width: Some(8), batch: Some(4), ..Default::default() };
    let base = model(ModelKind::Resmlp, &opts).unwrap();
    let mut losses = Vec::new();
    for remat in ["none", "sqrt"] {
        let mut m = base.clone();
        let opts = Options { inplace: true, sgd: Some(0.05), fuse: true, remat: remat.into(), ..Default::default() };
        optimize(&mut m, &opts.pipeline()).unwrap();
        let mut t = Trainer::new(&m, "resmlp", Target::Cpu, 0.05).unwrap();
        let args = t.random_inputs(1).unwrap();
        t.load(&args).unwrap();
        let l: Vec<f32> = (0..4).map(|_| t.step().unwrap()).collect();
        assert_ne!(t.args()[2], args[2], "the first weight was trained");
        losses.push(l);
    }
    assert!(losses[0][3] < losses[0][0], "training lowers the loss: {:?}", losses[0]);
    // Recomputation repeats the same kernels: the cpu losses are the same bits.
    assert_eq!(losses[0], losses[1]);
}

#[test]
fn bad_input_is_an_error_value() {
    let e = parse("module { func.func @f(", "bad.ck").unwrap_err();
    assert!(e.to_string().contains("bad.ck:1:"), "{e}");
    // A GEMM beyond the backends' 32-bit sizes (a batch of 2^31 matrices)
    // is refused at the op, before any buffer is allocated.
    let m = parse(
        "module {\n  func.func @h(%x: tensor<2147483648x1x1xf32>, %w: tensor<2147483648x1x1xf32>) -> tensor<2147483648x1x1xf32> {\n    %y = \"ck.matmul\"(%x, %w) : (tensor<2147483648x1x1xf32>, tensor<2147483648x1x1xf32>) -> tensor<2147483648x1x1xf32>\n    \"ck.return\"(%y) : (tensor<2147483648x1x1xf32>) -> ()\n  }\n}\n",
        "h.ck",
    )
    .unwrap();
    let e = compile(&m, "h", Target::Cpu).err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("'ck.matmul' op") && e.contains("batch = 2147483648") && e.contains("h.ck:3:"), "{e}");
    assert!(compile(&m, "nope", Target::Cpu).is_err());
}

/// With libdevice (CKOPT_LIBDEVICE), every model's functions after
/// autodiff, inplace and sqrt remat compile to one PTX module with an entry
/// per kernel launch (and the library kernels), and ptxas (CKOPT_PTXAS)
/// accepts it.
#[test]
fn every_model_compiles_to_ptx_that_ptxas_accepts() {
    if std::env::var_os("CKOPT_LIBDEVICE").is_none() {
        return;
    }
    let ptxas = std::env::var_os("CKOPT_PTXAS");
    let pipeline = if has_pass("inplace") { "autodiff,inplace,remat{mode=sqrt},memplan" } else { "autodiff,remat{mode=sqrt},memplan" };
    for kind in ModelKind::ALL {
        let mut m = model(kind, &small(kind)).unwrap();
        optimize(&mut m, pipeline).unwrap();
        let b = ckopt_lower::compile_module_bundle(&m, &PtxOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", kind.name()));
        let launches: usize = b.kernels.iter().map(|k| k.launches.len()).sum();
        let lib = b.ptx.matches(".entry ck_lib_").count();
        assert_eq!(b.ptx.matches(".entry").count(), launches + lib, "{}", kind.name());
        if let Some(ptxas) = &ptxas {
            let path = std::env::temp_dir().join(format!("ckopt-api-{}-{}.ptx", kind.name(), std::process::id()));
            std::fs::write(&path, ckopt_lower::bundle_ptx_text(&b)).unwrap();
            let st = std::process::Command::new(ptxas).arg("-arch=sm_90").arg(&path).arg("-o").arg("/dev/null").status().unwrap();
            let _ = std::fs::remove_file(&path);
            assert!(st.success(), "ptxas rejected the PTX of {}", kind.name());
        }
    }
}

/// "Does it fit?" through the API: the curve of a model's gradient, a
/// device budget between the smallest plan's total and no remat's, met by
/// the pipeline `Options` builds (device_bytes measured by memplan).
#[test]
fn memory_curve_and_device_budget_through_the_api() {
    let mut m = model(ModelKind::Mlp, &GenOptions { depth: Some(24), width: Some(16), batch: Some(64), ..Default::default() }).unwrap();
    optimize(&mut m, "autodiff,inplace").unwrap();
    let curves = memory_curves(&m);
    assert_eq!(curves.len(), 1);
    let c = &curves[0];
    assert_eq!(c.function, "mlp_grad");
    assert!(c.points.len() >= 2 && c.points[0].peak_bytes < c.points[c.points.len() - 1].peak_bytes);
    let mut none = m.clone();
    optimize(&mut none, "memplan").unwrap();
    let rep = memory_report(&none).into_iter().find(|r| r.function == "mlp_grad").unwrap();
    let total = rep.device_bytes.unwrap();
    assert_eq!(total, rep.argument_bytes + rep.arena_bytes.unwrap());
    let budget = total - (c.points.last().unwrap().peak_bytes - c.points[0].peak_bytes) / 2;
    let opts = Options { autodiff: false, remat: "optimal".into(), device_budget: Some(budget), ..Default::default() };
    assert!(opts.pipeline().contains(&format!("device_budget={budget}")), "{}", opts.pipeline());
    let mut fit = m.clone();
    optimize(&mut fit, &opts.pipeline()).unwrap();
    let r = memory_report(&fit).into_iter().find(|r| r.function == "mlp_grad").unwrap();
    assert!(r.device_bytes.unwrap() <= budget, "{:?} > {budget}", r.device_bytes);
    assert!(r.recompute_flops > 0);
}

#[test]
fn gen_model_by_names_and_its_errors() {
    let m = gen_model("mlp", &[("depth", 2), ("width", 4), ("batch", 2)]).unwrap();
    assert_eq!(m, model(ModelKind::Mlp, &GenOptions { depth: Some(2), width: Some(4), batch: Some(2), ..Default::default() }).unwrap());
    let e = gen_model("nope", &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Gen);
    assert!(e.to_string().contains("mlp, resmlp"), "{e}");
    let e = gen_model("mlp", &[("dpth", 2)]).unwrap_err();
    assert!(e.to_string().contains("unknown size 'dpth'") && e.to_string().contains("depth, width, batch"), "{e}");
    assert_eq!(gen_model("mlp", &[("seq", 2)]).unwrap_err().kind, ErrorKind::Gen);
}

#[test]
fn error_kinds_say_what_failed() {
    assert_eq!(parse("module {", "x.ck").unwrap_err().kind, ErrorKind::Parse);
    let mut m = gen_model("mlp", &[("depth", 2), ("width", 4), ("batch", 2)]).unwrap();
    assert_eq!(optimize(&mut m.clone(), "nope").unwrap_err().kind, ErrorKind::Pipeline);
    let e = optimize(&mut m.clone(), "autodiff,remat{mode=greedy budget=1}").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Pass, "{e}");
    assert_eq!(compile(&m, "nope", Target::Interp).err().map(|e| e.kind), Some(ErrorKind::Compile));
    let mut c = compile(&m, "mlp", Target::Interp).unwrap();
    assert_eq!(c.run(&[]).unwrap_err().kind, ErrorKind::Input);
    assert_eq!(load("/nonexistent/x.ck").unwrap_err().kind, ErrorKind::Io);
    optimize(&mut m, "autodiff").unwrap();
    assert_eq!(memory_curve(&m, "mlp").unwrap_err().kind, ErrorKind::Compile);
    assert_eq!(memory_curve(&m, "mlp_grad").unwrap().function, "mlp_grad");
    assert_eq!(memory_report_of(&m, "mlp_grad").unwrap(), memory_report(&m)[1]);
    assert_eq!(reports_json(&memory_report(&m)), ckopt_passes::analysis::reports_json(&memory_report(&m)));
}

/// The hook is asked before each pass; stopping leaves the passes run so far.
#[test]
fn optimize_interruptible_stops_between_passes() {
    let base = gen_model("mlp", &[("depth", 2), ("width", 4), ("batch", 2)]).unwrap();
    let mut asked = 0;
    let mut m = base.clone();
    let e = optimize_interruptible(&mut m, "autodiff,memplan", || {
        asked += 1;
        asked == 2
    })
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Interrupted);
    assert!(e.to_string().contains("before pass memplan"), "{e}");
    let mut want = base.clone();
    optimize(&mut want, "autodiff").unwrap();
    assert_eq!(m, want);
    let mut n = 0;
    let mut all = base.clone();
    optimize_interruptible(&mut all, "autodiff,memplan", || {
        n += 1;
        false
    })
    .unwrap();
    assert_eq!(n, 2);
}

/// `step_with` on a sequence of new batches equals loading each batch with
/// the trained parameters and stepping, and the interpreter's trainer.
#[test]
fn trainer_step_with_new_batches_equals_the_interpreter() {
    let m = gen_model("mlp", &[("depth", 3), ("width", 8), ("batch", 4)]).unwrap();
    let mut cpu = Trainer::new(&m, "mlp", Target::Cpu, 0.1).unwrap();
    let mut interp = Trainer::new(&m, "mlp", Target::Interp, 0.1).unwrap();
    let init = cpu.random_inputs(0).unwrap();
    cpu.load(&init).unwrap();
    interp.load(&init).unwrap();
    let batch = cpu.batch_indices();
    assert_eq!(batch, vec![0, 1], "x and the target");
    for seed in 1..5 {
        let fresh = cpu.random_inputs(seed).unwrap();
        let b: Vec<Tensor> = batch.iter().map(|&i| fresh[i].clone()).collect();
        let (lc, li) = (cpu.step_with(&b).unwrap(), interp.step_with(&b).unwrap());
        assert!((lc - li).abs() <= 1e-4 * li.abs().max(1.0), "step {seed}: cpu {lc} interp {li}");
    }
    for (c, i) in cpu.args().iter().zip(interp.args()) {
        close(&c.data, &i.data).unwrap();
    }
    assert_eq!(cpu.args()[0], cpu.random_inputs(4).unwrap()[0], "the last batch is resident");
    assert_eq!(cpu.step_with(&[]).unwrap_err().kind, ErrorKind::Input);
}

/// The API's training job: AdamW with a schedule on a safetensors dataset
/// (`fit`), a checkpoint (`save`), and `resume` continuing exactly: on the
/// cpu backend, 4 + 4 steps with a save and a resume in a new trainer give
/// the losses of 8 uninterrupted steps, bit for bit; `set_hyper` refuses an
/// input the step does not have.
#[test]
fn trainer_fits_adamw_on_a_dataset_and_resumes_exactly() {
    let m = gen_model("mlp", &[("depth", 2), ("width", 8), ("batch", 4)]).unwrap();
    let dir = std::env::temp_dir().join(format!("ckopt-api-fit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("d.safetensors");
    let x: Vec<f32> = (0..20 * 8).map(|i| ((i * 37 % 17) as f32 / 8.5) - 1.0).collect();
    let t: Vec<f32> = x.iter().map(|v| 0.5 * v).collect();
    let bytes = |v: &[f32]| v.iter().flat_map(|f| f.to_le_bytes()).collect::<Vec<u8>>();
    let (xb, tb) = (bytes(&x), bytes(&t));
    let views = vec![
        ("x".to_string(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![20, 8], &xb).unwrap()),
        ("target".to_string(), safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![20, 8], &tb).unwrap()),
    ];
    safetensors::serialize_to_file(views, None, &data).unwrap();
    let data = data.to_str().unwrap();
    let rule = StepRule::AdamW(AdamWOptions { lr: 0.01, ..Default::default() });
    let make = || {
        let mut tr = Trainer::with_rule(&m, "mlp", Target::Cpu, &rule, Hyper::default()).unwrap();
        let init = tr.random_inputs(0).unwrap();
        tr.load(&init).unwrap();
        tr.set_schedule(Some(Schedule { kind: ScheduleKind::Cosine, lr: 0.01, warmup: 2, total: 8 }));
        tr
    };
    let mut full = make();
    let all = full.fit(data, 8, Some(3), Some(data), Some(4), None).unwrap();
    assert_eq!(all.losses.len(), 8);
    assert_eq!(all.eval.iter().map(|e| e.step).collect::<Vec<_>>(), vec![4, 8]);
    assert!(all.eval[1].loss < all.eval[0].loss + 1.0 && all.eval[1].accuracy.is_none());
    let mut a = make();
    let first = a.fit(data, 4, Some(3), None, None, None).unwrap();
    let ck = dir.join("ck");
    a.save(ck.to_str().unwrap()).unwrap();
    let mut b = make();
    assert_eq!(b.resume(ck.to_str().unwrap()).unwrap(), 4);
    let second = b.fit(data, 4, Some(3), None, None, None).unwrap();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let mut joined = bits(&first.losses);
    joined.extend(bits(&second.losses));
    assert_eq!(joined, bits(&all.losses));
    assert_eq!(b.set_hyper("momentum", 0.9).unwrap_err().kind, ErrorKind::Input);
    assert!(b.hyperparameters().iter().any(|(n, _)| n == "beta2"));
}
