//! The training job of `ckopt-run --train` (ckopt-train): datasets,
//! AdamW and schedules as step inputs, exact resume, atomic checkpoints,
//! evaluation, and the errors that protect a run before it starts.

#![allow(clippy::unwrap_used)]

use safetensors::tensor::{Dtype, TensorView};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_ckopt-run")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("ckopt-train-job-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn model_file(dir: &Path, model: &str, args: &[&str]) -> PathBuf {
    let m = ckopt_models::ModelKind::from_name(model).unwrap();
    let mut o = ckopt_models::GenOptions::default();
    let mut it = args.iter();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        let v: u64 = v.parse().unwrap();
        match *k {
            "depth" => o.depth = Some(v),
            "width" => o.width = Some(v),
            "batch" => o.batch = Some(v),
            "channels" => o.channels = Some(v),
            "image" => o.image = Some(v),
            "classes" => o.classes = Some(v),
            _ => panic!("{k}"),
        }
    }
    let module = ckopt_models::generate(m, &o).unwrap();
    let p = dir.join(format!("{model}.ck"));
    std::fs::write(&p, ckopt_ir::print_module(&module)).unwrap();
    p
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A dataset of `n` examples for an MSE model of width `w`: target = 0.5 x.
fn mse_data(path: &Path, n: usize, w: usize, seed: u64) {
    let mut s = seed;
    let x: Vec<f32> = (0..n * w)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect();
    let t: Vec<f32> = x.iter().map(|v| 0.5 * v).collect();
    write(path, &[("x", vec![n, w], f32_bytes(&x)), ("target", vec![n, w], f32_bytes(&t))], Dtype::F32);
}

fn write(path: &Path, ts: &[(&str, Vec<usize>, Vec<u8>)], dtype: Dtype) {
    let views: Vec<(String, TensorView)> =
        ts.iter().map(|(n, s, b)| (n.to_string(), TensorView::new(dtype, s.clone(), b).unwrap())).collect();
    safetensors::serialize_to_file(views, None, path).unwrap();
}

fn run(args: &[&str]) -> Output {
    Command::new(bin()).args(args).output().unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = run(args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(args: &[&str]) -> String {
    let o = run(args);
    assert!(!o.status.success(), "{args:?} should fail: {}", String::from_utf8_lossy(&o.stdout));
    assert!(!String::from_utf8_lossy(&o.stdout).contains("step 1/"), "{args:?}: no step may run before the error");
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn report(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn loss_bits(v: &Value) -> Vec<u32> {
    v["losses"].as_array().unwrap().iter().map(|x| (x.as_f64().unwrap() as f32).to_bits()).collect()
}

/// N + M steps in one run == N steps, save, resume M: the same losses bit
/// for bit (AdamW, cosine schedule with warmup, shuffled data over several
/// epochs, on the interpreter).
#[test]
fn resume_continues_bit_for_bit() {
    let d = tmp("resume");
    let ck = model_file(&d, "mlp", &["depth", "2", "width", "8", "batch", "4"]);
    let data = d.join("train.safetensors");
    mse_data(&data, 22, 8, 1); // 5 batches per epoch, 2 examples dropped
    let (ck, data) = (ck.to_str().unwrap(), data.to_str().unwrap());
    let common = ["--train", "--data", data, "--optimizer", "adamw", "--lr", "0.01", "--schedule", "cosine", "--warmup", "2", "--shuffle-seed", "7"];
    let full = d.join("full.json");
    let mut a = vec![ck];
    a.extend(common);
    a.extend(["--steps", "12", "--report", full.to_str().unwrap()]);
    ok(&a);
    let ckpt = d.join("ckpt");
    let half = d.join("half.json");
    let mut b = vec![ck];
    b.extend(common);
    b.extend(["--steps", "5", "--schedule-steps", "12", "--save", ckpt.to_str().unwrap(), "--report", half.to_str().unwrap()]);
    ok(&b);
    let rest = d.join("rest.json");
    let out = ok(&[ck, "--train", "--data", data, "--optimizer", "adamw", "--lr", "0.01", "--resume", ckpt.to_str().unwrap(), "--steps", "7", "--report", rest.to_str().unwrap()]);
    assert!(out.contains("resumed at step 5"), "{out}");
    let (full, half, rest) = (report(&full), report(&half), report(&rest));
    let mut joined = loss_bits(&half);
    joined.extend(loss_bits(&rest));
    assert_eq!(joined.len(), 12);
    assert_eq!(joined, loss_bits(&full), "resumed losses equal the uninterrupted run's");
    assert_eq!(rest["start_step"], 5);
    let lrs: Vec<f64> = full["lrs"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
    assert_eq!((lrs[0] as f32, lrs[1] as f32), (0.005, 0.01), "linear warmup");
    assert!(lrs[11] < 1e-3 && lrs[2] > lrs[11], "cosine decay: {lrs:?}");
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(ckpt.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!((meta["step"].as_u64(), meta["data"]["epoch"].as_u64(), meta["data"]["batch_in_epoch"].as_u64()), (Some(5), Some(1), Some(0)));
}

/// A process killed with SIGKILL in the middle of writing a checkpoint
/// leaves the previous one intact: it loads and training resumes from it.
#[test]
fn sigkill_mid_save_leaves_the_previous_checkpoint_loadable() {
    let d = tmp("kill");
    let ck = model_file(&d, "mlp", &["depth", "6", "width", "16", "batch", "4"]);
    let data = d.join("train.safetensors");
    mse_data(&data, 40, 16, 2);
    let ckpt = d.join("ckpt");
    let mut child = Command::new(bin())
        .args([ck.to_str().unwrap(), "--train", "--data", data.to_str().unwrap(), "--steps", "1000", "--save", ckpt.to_str().unwrap(), "--save-every", "1"])
        .env("CKOPT_TEST_SAVE_DELAY_MS", "40")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let (done, partial) = (ckpt.join("checkpoint.safetensors"), ckpt.join(".checkpoint.safetensors.tmp"));
    let t = std::time::Instant::now();
    // Wait for a first checkpoint, then for the next save to be under way.
    while !done.exists() && t.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    while !(partial.exists() && std::fs::metadata(&partial).map(|m| m.len() > 64).unwrap_or(false)) && t.elapsed().as_secs() < 120 {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    assert!(partial.exists(), "a save was under way");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = std::fs::read(&done).unwrap();
    let rep = d.join("r.json");
    ok(&[ck.to_str().unwrap(), "--train", "--data", data.to_str().unwrap(), "--resume", ckpt.to_str().unwrap(), "--steps", "1", "--report", rep.to_str().unwrap()]);
    let r = report(&rep);
    assert!(r["start_step"].as_u64().unwrap() >= 1);
    assert_eq!(r["losses"].as_array().unwrap().len(), 1);
    assert!(before.len() > 1000);
}

/// A dataset that does not fit the function, is not safetensors, or is
/// truncated: an error naming the argument and the expected type, before
/// any step. A foreign or damaged checkpoint is refused.
#[test]
fn bad_datasets_and_checkpoints_are_refused_before_any_step() {
    let d = tmp("bad");
    let ck = model_file(&d, "mlp", &["depth", "1", "width", "4", "batch", "2"]);
    let ck = ck.to_str().unwrap();
    let p = |n: &str| d.join(n).to_str().unwrap().to_string();
    let x = f32_bytes(&[0.5; 6 * 4]);
    write(Path::new(&p("noname.safetensors")), &[("x", vec![6, 4], x.clone()), ("tgt", vec![6, 4], x.clone())], Dtype::F32);
    let e = err(&[ck, "--train", "--data", &p("noname.safetensors")]);
    assert!(e.contains("'tgt'") && e.contains("'target'"), "{e}");
    write(Path::new(&p("shape.safetensors")), &[("x", vec![6, 4], x.clone()), ("target", vec![4, 6], x.clone())], Dtype::F32);
    let e = err(&[ck, "--train", "--data", &p("shape.safetensors")]);
    assert!(e.contains("tensor 'target' is F32 [4, 6]") && e.contains("F32 [N, 4]") && e.contains("%target") && e.contains("tensor<2x4xf32>"), "{e}");
    let xi: Vec<u8> = (0..24).flat_map(|i: i32| i.to_le_bytes()).collect();
    write(Path::new(&p("dtype.safetensors")), &[("x", vec![6, 4], xi.clone()), ("target", vec![6, 4], xi)], Dtype::I32);
    let e = err(&[ck, "--train", "--data", &p("dtype.safetensors")]);
    assert!(e.contains("I32") && e.contains("expected F32"), "{e}");
    std::fs::write(p("junk.safetensors"), b"this is not a safetensors file").unwrap();
    let e = err(&[ck, "--train", "--data", &p("junk.safetensors")]);
    assert!(e.contains("not a safetensors file"), "{e}");
    write(Path::new(&p("good.safetensors")), &[("x", vec![6, 4], x.clone()), ("target", vec![6, 4], x.clone())], Dtype::F32);
    let good = std::fs::read(p("good.safetensors")).unwrap();
    std::fs::write(p("trunc.safetensors"), &good[..good.len() - 10]).unwrap();
    let e = err(&[ck, "--train", "--data", &p("trunc.safetensors")]);
    assert!(e.contains("not a safetensors file (or truncated)"), "{e}");
    // Checkpoints: of another model (other shapes), damaged, not one at all.
    let other = tmp("bad-other");
    let ck2 = model_file(&other, "mlp", &["depth", "1", "width", "4", "batch", "2"]);
    let big = model_file(&d, "resmlp", &["depth", "1", "width", "4", "batch", "2"]);
    let _ = big;
    let save = p("ckpt");
    ok(&[ck2.to_str().unwrap(), "--train", "--data", &p("good.safetensors"), "--steps", "2", "--save", &save]);
    let wide = tmp("bad-wide");
    let ck3 = model_file(&wide, "mlp", &["depth", "1", "width", "8", "batch", "2"]);
    let x8 = f32_bytes(&[0.5; 6 * 8]);
    write(&wide.join("d.safetensors"), &[("x", vec![6, 8], x8.clone()), ("target", vec![6, 8], x8)], Dtype::F32);
    let e = err(&[ck3.to_str().unwrap(), "--train", "--data", wide.join("d.safetensors").to_str().unwrap(), "--resume", &save]);
    assert!(e.contains("this model needs F32 [8, 8]"), "{e}");
    let e = err(&[ck, "--train", "--resume", &p("nowhere")]);
    assert!(e.contains("cannot open"), "{e}");
    let f = Path::new(&save).join("checkpoint.safetensors");
    let bytes = std::fs::read(&f).unwrap();
    std::fs::write(&f, &bytes[..bytes.len() / 2]).unwrap();
    let e = err(&[ck, "--train", "--data", &p("good.safetensors"), "--resume", &save]);
    assert!(e.contains("damaged"), "{e}");
    std::fs::copy(p("good.safetensors"), &f).unwrap();
    let e = err(&[ck, "--train", "--data", &p("good.safetensors"), "--resume", &save]);
    assert!(e.contains("not a ckopt checkpoint"), "{e}");
}

/// `--lr` applies to a file's own step function (it used to be ignored:
/// after `sgd{lr=0.1}`, `--lr 1e30` trained as `--lr 0.1`).
#[test]
fn lr_applies_to_an_existing_step_function() {
    let d = tmp("lr");
    let ck = model_file(&d, "mlp", &["depth", "2", "width", "8", "batch", "4"]);
    let step = d.join("step.ck");
    let o = Command::new(env!("CARGO_BIN_EXE_ckopt-opt"))
        .args([ck.to_str().unwrap(), "--pass-pipeline=autodiff,inplace,sgd{lr=0.1}", "-o", step.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = step.to_str().unwrap();
    let r = |lr: &str| {
        let rep = d.join(format!("r{lr}.json"));
        ok(&[s, "--func", "mlp", "--train", "--steps", "3", "--lr", lr, "--report", rep.to_str().unwrap()]);
        report(&rep)
    };
    let (a, b, dflt) = (r("0.1"), r("0.3"), {
        let rep = d.join("default.json");
        ok(&[s, "--func", "mlp", "--train", "--steps", "3", "--report", rep.to_str().unwrap()]);
        report(&rep)
    });
    assert_eq!(loss_bits(&a)[0], loss_bits(&b)[0], "same start");
    assert_ne!(loss_bits(&a)[1], loss_bits(&b)[1], "another lr, another second loss");
    assert_eq!(loss_bits(&a), loss_bits(&dflt), "without --lr: the step's own default, 0.1");
    assert_eq!(dflt["lr"].as_f64().map(|x| x as f32), Some(0.1));
    // The case: --lr 1e30 no longer trains as the built-in 0.1 does.
    let huge = r("1e30");
    assert_ne!(loss_bits(&huge)[1], loss_bits(&a)[1]);
    assert_eq!(huge["lr"].as_f64().map(|x| x as f32), Some(1e30));
}

/// Evaluation of a classifier: mean loss and accuracy every N steps and at
/// the end, in the report; the plot draws both curves.
#[test]
fn eval_reports_loss_and_accuracy_and_the_plot_draws_them() {
    let d = tmp("eval");
    let ck = model_file(&d, "resnet", &["depth", "1", "channels", "4", "image", "4", "classes", "3", "batch", "4"]);
    // Class k: images filled with k - 1 (plus the class's channel pattern).
    let n = 24;
    let mut x = Vec::new();
    let mut t = Vec::new();
    for e in 0..n {
        let k = e % 3;
        for _ in 0..3 * 16 {
            x.push(k as f32 - 1.0);
        }
        for j in 0..3 {
            t.push(if j == k { 1.0 } else { 0.0 });
        }
    }
    let data = d.join("d.safetensors");
    write(&data, &[("x", vec![n, 3, 4, 4], f32_bytes(&x)), ("target", vec![n, 3], f32_bytes(&t))], Dtype::F32);
    let (rep, plot) = (d.join("r.json"), d.join("loss.svg"));
    let out = ok(&[
        ck.to_str().unwrap(),
        "--train",
        "--data",
        data.to_str().unwrap(),
        "--eval-data",
        data.to_str().unwrap(),
        "--eval-every",
        "4",
        "--steps",
        "8",
        "--optimizer",
        "adamw",
        "--lr",
        "0.05",
        "--report",
        rep.to_str().unwrap(),
        "--plot",
        plot.to_str().unwrap(),
    ]);
    assert!(out.contains("eval step 4: loss") && out.contains("accuracy"), "{out}");
    let r = report(&rep);
    let ev = r["eval"].as_array().unwrap();
    assert_eq!(ev.iter().map(|e| e["step"].as_u64().unwrap()).collect::<Vec<_>>(), vec![4, 8]);
    let acc = ev[1]["accuracy"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&acc) && ev[1]["examples"] == 24);
    assert_eq!(r["optimizer"], "adamw");
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.contains("train loss") && svg.contains("eval loss") && svg.matches("<polyline").count() == 2);
}

/// Ctrl-C (SIGINT) with `--save`: the run finishes the step under way,
/// writes a checkpoint of the step it reached and exits at once with an
/// error naming it; `--resume` from that checkpoint continues exactly as
/// an uninterrupted run does (AdamW moments, shuffled data over epochs).
#[test]
fn ctrl_c_writes_a_last_checkpoint_that_resumes_bit_for_bit() {
    use std::io::{BufRead, BufReader};
    let d = tmp("sigint");
    let ck = model_file(&d, "mlp", &["depth", "3", "width", "16", "batch", "4"]);
    let data = d.join("train.safetensors");
    mse_data(&data, 30, 16, 3); // 7 batches per epoch
    let ckpt = d.join("ckpt");
    let (ck, data, ckpt_s) = (ck.to_str().unwrap(), data.to_str().unwrap(), ckpt.to_str().unwrap());
    let common = ["--train", "--data", data, "--optimizer", "adamw", "--lr", "0.01", "--shuffle-seed", "5"];
    let mut child = Command::new(bin())
        .args([ck].iter().chain(&common).chain(&["--steps", "1000000", "--save", ckpt_s]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let it run some steps (a plain line per step: stdout is not a terminal).
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut printed = Vec::new();
    while printed.iter().filter(|l: &&String| l.starts_with("step ")).count() < 9 {
        printed.push(lines.next().expect("the run printed its steps").unwrap());
    }
    assert!(!ckpt.join("checkpoint.safetensors").exists(), "no checkpoint before the interrupt (no --save-every)");
    let sent = std::time::Instant::now();
    let k = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(k.success());
    printed.extend(lines.map(|l| l.unwrap()));
    let out = child.wait_with_output().unwrap();
    let waited = sent.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "an interrupted run exits with an error");
    assert!(waited.as_secs() < 20, "exited {waited:?} after SIGINT");
    // "error: interrupted after step K; checkpoint of step K in DIR/checkpoint.safetensors"
    let at = stderr.find("interrupted after step ").unwrap_or_else(|| panic!("{stderr}"));
    let k: usize = stderr[at + 23..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
    assert!(stderr.contains(&format!("checkpoint of step {k} in")), "{stderr}");
    assert!((9..1000000).contains(&k), "stopped at step {k}");
    eprintln!("interrupted at step {k}, {waited:?} after SIGINT");
    assert!(printed.iter().any(|l| l.starts_with(&format!("step {k}/"))), "step {k} ran: {printed:?}");
    let meta: Value = serde_json::from_str(&std::fs::read_to_string(ckpt.join("checkpoint.json")).unwrap()).unwrap();
    assert_eq!(meta["step"].as_u64(), Some(k as u64));
    assert_eq!(meta["data"]["epoch"].as_u64(), Some((k / 7) as u64));
    // The uninterrupted run of k + 6 steps against 6 resumed ones.
    let (full, resumed) = (d.join("full.json"), d.join("resumed.json"));
    let total = (k + 6).to_string();
    ok(&[[ck].as_slice(), &common, &["--steps", &total, "--report", full.to_str().unwrap()]].concat());
    let o = ok(&[[ck].as_slice(), &common, &["--resume", ckpt_s, "--steps", "6", "--report", resumed.to_str().unwrap()]].concat());
    assert!(o.contains(&format!("resumed at step {k}")), "{o}");
    let (full, resumed) = (loss_bits(&report(&full)), loss_bits(&report(&resumed)));
    assert_eq!(full.len(), k + 6);
    assert_eq!(resumed, full[k..].to_vec(), "the resumed losses are the uninterrupted run's, bit for bit");
}

/// Accuracy for integer labels (`ckopt-gen gpt`: cross_entropy of the
/// logits against the reshaped `labels`): a copy task (labels = ids) that
/// the tied embedding learns within 20 AdamW steps; the eval entries carry
/// the per-token accuracy, low at first and (near) 1 at the end.
#[test]
fn eval_accuracy_for_integer_label_cross_entropy() {
    let d = tmp("gpt");
    let g = Command::new(env!("CARGO_BIN_EXE_ckopt-gen"))
        .args(["gpt", "--depth", "1", "--width", "16", "--batch", "8", "--seq", "8", "--heads", "2", "--vocab", "16"])
        .output()
        .unwrap();
    assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
    let ck = d.join("gpt.ck");
    std::fs::write(&ck, &g.stdout).unwrap();
    let n = 256;
    let mut s = 1u64;
    let ids: Vec<i64> = (0..n * 8)
        .map(|_| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 33) % 16) as i64
        })
        .collect();
    let bytes: Vec<u8> = ids.iter().flat_map(|x| x.to_le_bytes()).collect();
    let data = d.join("copy.safetensors");
    write(&data, &[("ids", vec![n, 8], bytes.clone()), ("labels", vec![n, 8], bytes)], Dtype::I64);
    let rep = d.join("r.json");
    let data = data.to_str().unwrap();
    let out = ok(&[
        ck.to_str().unwrap(), "--train", "--data", data, "--eval-data", data, "--eval-every", "1", "--steps", "20",
        "--optimizer", "adamw", "--lr", "0.03", "--report", rep.to_str().unwrap(),
    ]);
    assert!(out.contains("eval step 1: loss") && out.contains("accuracy"), "{out}");
    let r = report(&rep);
    let acc: Vec<f64> = r["eval"].as_array().unwrap().iter().map(|e| e["accuracy"].as_f64().unwrap()).collect();
    assert_eq!(acc.len(), 20);
    assert!(acc[0] < 0.6 && acc[19] > 0.95, "per-token accuracy {} -> {}", acc[0], acc[19]);
}

/// `--params` is read one tensor at a time into the backend (the file is
/// mapped, not read whole): the parameters `--params-out` wrote for a seed
/// train exactly as that seed's own (the other arguments from the same
/// seed), on the interpreter and on cpu.
#[test]
fn params_file_trains_as_the_seed_that_wrote_it() {
    let d = tmp("params");
    let ck = model_file(&d, "resmlp", &["depth", "2", "width", "8", "batch", "4"]);
    let (ck, st) = (ck.to_str().unwrap(), d.join("p.safetensors"));
    let st = st.to_str().unwrap();
    ok(&[ck, "--seed", "3", "--params-out", st]);
    let mut backends = vec!["interp"];
    if cfg!(feature = "lower") {
        backends.push("cpu");
    }
    for b in backends {
        let (a, p) = (d.join(format!("{b}-seed.json")), d.join(format!("{b}-params.json")));
        ok(&[ck, "--backend", b, "--train", "--optimizer", "adamw", "--seed", "3", "--steps", "4", "--report", a.to_str().unwrap()]);
        let out = ok(&[ck, "--backend", b, "--train", "--optimizer", "adamw", "--params", st, "--seed", "3", "--steps", "4", "--report", p.to_str().unwrap()]);
        assert!(out.contains("parameters from"), "{out}");
        let (a, p) = (loss_bits(&report(&a)), loss_bits(&report(&p)));
        assert_eq!(a.len(), 4);
        assert_eq!(a, p, "{b}: the same losses, bit for bit");
    }
    // A file for another model is refused before any step.
    let other = model_file(&d, "mlp", &["depth", "1", "width", "8", "batch", "4"]);
    let e = err(&[other.to_str().unwrap(), "--train", "--params", st]);
    assert!(e.contains("match no {ck.param} argument") || e.contains("no tensor for {ck.param}"), "{e}");
}

/// On cpu the evaluation borrows the training step's parameter buffers (no
/// second copy) and gives them back: a run that evaluates every 2 steps
/// trains exactly as one that does not, and its eval figures are the
/// interpreter's (to float rounding).
#[cfg(feature = "lower")]
#[test]
fn cpu_evaluation_borrows_the_parameters_and_gives_them_back() {
    let d = tmp("cpu-eval");
    let ck = model_file(&d, "resnet", &["depth", "1", "channels", "4", "image", "4", "classes", "3", "batch", "4"]);
    let n = 24;
    let (mut x, mut t) = (Vec::new(), Vec::new());
    for e in 0..n {
        let k = e % 3;
        x.extend((0..3 * 16).map(|j| k as f32 - 1.0 + 0.01 * (j % 5) as f32));
        t.extend((0..3).map(|j| if j == k { 1.0f32 } else { 0.0 }));
    }
    let data = d.join("d.safetensors");
    write(&data, &[("x", vec![n, 3, 4, 4], f32_bytes(&x)), ("target", vec![n, 3], f32_bytes(&t))], Dtype::F32);
    let (ck, data) = (ck.to_str().unwrap(), data.to_str().unwrap());
    let run = |backend: &str, eval: bool| {
        let rep = d.join(format!("{backend}-{eval}.json"));
        let mut a = vec![ck, "--backend", backend, "--train", "--data", data, "--steps", "6", "--optimizer", "adamw", "--lr", "0.05", "--report", rep.to_str().unwrap()];
        if eval {
            a.extend(["--eval-data", data, "--eval-every", "2"]);
        }
        ok(&a);
        report(&rep)
    };
    let (with, without, interp) = (run("cpu", true), run("cpu", false), run("interp", true));
    assert_eq!(loss_bits(&with), loss_bits(&without), "evaluating in between changes no parameter");
    let ev = |r: &Value| r["eval"].as_array().unwrap().iter().map(|e| (e["loss"].as_f64().unwrap(), e["accuracy"].as_f64().unwrap())).collect::<Vec<_>>();
    let (c, i) = (ev(&with), ev(&interp));
    assert_eq!(c.len(), 3);
    for ((cl, ca), (il, ia)) in c.iter().zip(&i) {
        assert!((cl - il).abs() <= 1e-4 * il.abs().max(1.0), "eval loss cpu {cl} vs interp {il}");
        assert!((ca - ia).abs() <= 1.0 / 24.0 + 1e-9, "accuracy cpu {ca} vs interp {ia}");
    }
}
