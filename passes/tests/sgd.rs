//! The `sgd` pass: `@X_step` computes exactly the SGD update of `@X_grad`'s
//! gradients, in the parameters' own (donated) buffers, and keeps doing so
//! through inplace, fuse, remat and memplan (arena interpreter).

use ckopt_interp::{Tensor, random_inputs, run_func, run_func_in_arena};
use ckopt_ir::ops::{ATTR_DONATE, ATTR_OFFSET, ATTR_STEP};
use ckopt_ir::{Attr, Module, OpKind, attrs};
use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::PassManager;
use ckopt_passes::autodiff::{AutodiffOptions, autodiff};
use ckopt_passes::sgd::{SgdOptions, sgd};

fn bits(ts: &[Tensor]) -> Vec<Vec<u32>> {
    ts.iter().map(|t| t.data.iter().map(|v| v.to_bits()).collect()).collect()
}

/// The step's arguments for the loss function's `inputs`: zero state and the
/// hyperparameters' defaults (what a trainer passes without options).
fn step_args(m: &Module, s: &str, inputs: &[Tensor]) -> Vec<Tensor> {
    let s = m.func(s).expect("step");
    let mut copy = m.clone();
    let base = s.name.strip_suffix("_step").expect("a step function");
    let sig = ckopt_passes::train::prepare(&mut copy, base, &Default::default()).expect("a step signature");
    ckopt_passes::train::initial_args(s, &sig, inputs)
}

fn model(kind: ModelKind, depth: u64) -> Module {
    let mut o = GenOptions::default();
    o.depth = Some(depth);
    let mut m = generate(kind, &o).expect("generates");
    autodiff(&mut m, &AutodiffOptions::default()).expect("differentiates");
    m
}

fn run(m: &Module, pipeline: &str) -> Module {
    let mut m = m.clone();
    PassManager::parse(pipeline).expect("pipeline").run(&mut m).unwrap_or_else(|e| panic!("{pipeline}: {e}"));
    m
}

/// `@X_step` returns the loss and `p - lr*g` for every parameter, bit for
/// bit what the gradient function and a host update give (the same f32 ops).
#[test]
fn step_equals_grad_then_update_bit_for_bit() {
    for kind in [ModelKind::Mlp, ModelKind::Resmlp, ModelKind::Resnet] {
        let name = kind.name();
        let m = run(&model(kind, 2), "sgd{lr=0.05}");
        let g = m.func(&format!("{name}_grad")).expect("grad");
        let s = m.func(&format!("{name}_step")).expect("step");
        let inputs = random_inputs(g, 3);
        let grads = run_func(&m, &g.name, &inputs).expect("grad runs");
        let stepped = run_func(&m, &s.name, &step_args(&m, &s.name, &inputs)).expect("step runs");
        assert_eq!(bits(&stepped[..1]), bits(&grads[..1]), "{name}: same loss");
        let trained = m.func(name).expect("loss fn").trainable_indices();
        assert_eq!(stepped.len(), 1 + trained.len());
        for (k, &i) in trained.iter().enumerate() {
            let want: Vec<f32> = inputs[i].data.iter().zip(&grads[1 + k].data).map(|(p, d)| p - 0.05 * d).collect();
            assert_eq!(stepped[1 + k].data, want, "{name}: parameter {i}");
        }
        assert!(trained.iter().all(|&i| s.params[i].attrs.contains_key(ATTR_DONATE)));
    }
}

/// With momentum: v' = m*v + g, p' = p - lr*v'; two steps on the interpreter.
#[test]
fn momentum_state_is_an_argument_and_a_result() {
    let m = run(&model(ModelKind::Mlp, 2), "sgd{lr=0.1 momentum=0.9}");
    let s = m.func("mlp_step").expect("step");
    let f = m.func("mlp").expect("loss");
    let k = f.trainable_indices().len();
    // The velocities, then the hyperparameters lr and momentum.
    assert_eq!(s.params.len(), f.params.len() + k + 2);
    assert_eq!(s.result_types.len(), 1 + 2 * k);
    let args = step_args(&m, "mlp_step", &random_inputs(f, 1));
    let g = run_func(&m, "mlp_grad", &args[..f.params.len()]).expect("grad");
    let out = run_func(&m, "mlp_step", &args).expect("step");
    // First step from v = 0: v' = g, p' = p - lr*g.
    for (j, &i) in f.trainable_indices().iter().enumerate() {
        assert_eq!(out[1 + k + j].data, g[1 + j].data, "v' = g");
        let want: Vec<f32> = args[i].data.iter().zip(&g[1 + j].data).map(|(p, d)| p - 0.1 * d).collect();
        assert_eq!(out[1 + j].data, want);
    }
}

/// Through the whole pipeline the updated parameters live in the donated
/// argument buffers (no ck.offset), the arena interpreter agrees with the
/// plain one bit for bit, and the step's arena holds no gradients: it is far
/// smaller than the gradient function's.
#[test]
fn planned_step_updates_in_place_and_needs_a_small_arena() {
    let mut o = GenOptions::default();
    o.depth = Some(12);
    o.width = Some(32);
    o.batch = Some(4);
    let mut m = generate(ModelKind::Mlp, &o).expect("generates");
    autodiff(&mut m, &AutodiffOptions::default()).expect("grad");
    for pipeline in
        ["inplace,sgd{lr=0.01},fuse,memplan", "inplace,sgd{lr=0.01},fuse,remat{mode=sqrt},memplan", "sgd{lr=0.01},inplace,memplan"]
    {
        let p = run(&m, pipeline);
        let s = p.func("mlp_step").expect("step");
        let g = p.func("mlp_grad").expect("grad");
        for &r in &s.returned()[1..] {
            let def = s.body.iter().find(|o| o.result == Some(r)).expect("defined");
            assert!(!def.has_attr(ATTR_OFFSET), "{pipeline}: updated %{} is not in its parameter's buffer", s.name_of(r));
        }
        let inputs = random_inputs(s, 5);
        let plain = run_func(&p, "mlp_step", &inputs).expect("runs");
        let (arena, arena_bytes) = run_func_in_arena(&p, "mlp_step", &inputs).expect("arena run");
        assert_eq!(bits(&plain), bits(&arena), "{pipeline}");
        let grad_arena = g.attrs.get("ck.arena_bytes").and_then(Attr::as_int).expect("planned") as u64;
        let param_bytes: u64 = g.result_types[1..].iter().map(|t| t.bytes()).sum();
        assert!(grad_arena >= param_bytes, "{pipeline}: the gradient arena holds the gradients");
        // Without fuse the broadcast learning rate is one parameter-sized buffer more.
        assert!(arena_bytes < grad_arena / 3, "{pipeline}: step arena {arena_bytes} vs grad arena {grad_arena}");
    }
}

/// Dropout inside a step hashes the step key: other key, other mask; the
/// backward uses the same mask as the forward (the gradient stays exact).
#[test]
fn dropout_masks_follow_the_step_key() {
    let src = r#"module {
  func.func @d(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {ck.param}) -> tensor<f32> {
    %h = "ck.matmul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = "ck.dropout"(%h) {rate = 0.5 : f32, seed = 9 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %s = "ck.reduce_sum"(%y) {dims = [0, 1]} : (tensor<4x8xf32>) -> tensor<f32>
    "ck.return"(%s) : (tensor<f32>) -> ()
  }
}"#;
    let mut m = ckopt_ir::parse_and_verify(src, "d.ck").expect("parses");
    autodiff(&mut m, &AutodiffOptions::default()).expect("grad");
    sgd(&mut m, &SgdOptions { lr: 1.0, ..Default::default() }).expect("sgd");
    let s = m.func("d_step").expect("step");
    let key = s.params.iter().position(|p| p.attrs.contains_key(ATTR_STEP)).expect("step key argument");
    assert!(s.body.iter().filter(|o| o.kind == OpKind::Dropout).all(|o| o.operands.len() == 2));
    let mut a = random_inputs(s, 2);
    a[key] = Tensor::new(vec![], vec![f32::from_bits(1)]).expect("scalar");
    let mut b = a.clone();
    b[key] = Tensor::new(vec![], vec![f32::from_bits(2)]).expect("scalar");
    let (ra, rb) = (run_func(&m, "d_step", &a).expect("runs"), run_func(&m, "d_step", &b).expect("runs"));
    assert_ne!(bits(&ra), bits(&rb), "a new step key drops other units");
    assert_eq!(bits(&ra), bits(&run_func(&m, "d_step", &a).expect("runs")), "the same key repeats the mask");
    // d loss / dw = x^T (mask/(1-rate)): the update used the forward's mask.
    let fwd = attrs([("rate", Attr::F32(0.5)), ("seed", Attr::Int(9))]);
    let h = ckopt_interp::eval_kind(OpKind::Matmul, &Default::default(), &[&a[0], &a[1]], &ckopt_ir::TensorType::f32(vec![4, 8]))
        .expect("matmul");
    let y = ckopt_interp::eval_kind(OpKind::Dropout, &fwd, &[&h, &a[key]], &ckopt_ir::TensorType::f32(vec![4, 8])).expect("dropout");
    let loss: f32 = y.data.iter().fold(-0.0, |acc, v| acc + v);
    assert_eq!(ra[0].data[0].to_bits(), loss.to_bits());
}

/// Bad options and missing gradients are errors naming the problem.
#[test]
fn errors_name_the_option_or_function() {
    let e = PassManager::parse("sgd{lr=0}").err().expect("lr 0").to_string();
    assert!(e.contains("'lr'"), "{e}");
    let e = PassManager::parse("sgd{momentum=1.5}").err().expect("momentum").to_string();
    assert!(e.contains("'momentum'"), "{e}");
    let mut m = generate(ModelKind::Mlp, &GenOptions::default()).expect("generates");
    let e = sgd(&mut m, &SgdOptions { func: Some("mlp".into()), ..Default::default() }).expect_err("no grad");
    assert!(e.0[0].message.contains("@mlp_grad"), "{e}");
    assert_eq!(sgd(&mut m, &SgdOptions::default()).expect("nothing to do"), 0);
}

/// With momentum, memplan plans the step (the updated velocity is written
/// into the decayed velocity, itself written into the donated velocity
/// argument: a chain of in-place homes the checker follows) with and
/// without in-place marks and fusion, and the step run in its arena gives
/// the plain interpreter's bits.
#[test]
fn momentum_step_plans_with_memplan() {
    for pipeline in ["sgd{momentum=0.9},memplan", "inplace,sgd{momentum=0.9},memplan", "sgd{momentum=0.9},fuse,memplan"] {
        let p = run(&model(ModelKind::Mlp, 3), pipeline);
        let s = p.func("mlp_step").expect("step");
        let inputs = random_inputs(s, 7);
        let plain = run_func(&p, "mlp_step", &inputs).expect("runs");
        let (arena, _) = run_func_in_arena(&p, "mlp_step", &inputs).expect("arena run");
        assert_eq!(bits(&plain), bits(&arena), "{pipeline}");
    }
}

/// The gpt language model trains on the interpreter: 20 SGD steps on one
/// fixed batch of token ids and next-token labels (one position ignored,
/// -100) bring the cross-entropy well below its start, and the step run
/// after `remat{mode=sqrt}` gives bit-identical losses and parameters.
#[test]
fn gpt_loss_falls_over_20_steps_on_a_fixed_batch() {
    let o = GenOptions {
        depth: Some(2),
        width: Some(16),
        heads: Some(2),
        seq: Some(8),
        vocab: Some(11),
        batch: Some(2),
        ..Default::default()
    };
    let mut m = generate(ModelKind::Gpt, &o).expect("generates");
    autodiff(&mut m, &AutodiffOptions::default()).expect("differentiates");
    let plain = run(&m, "sgd{lr=0.5}");
    let remat = run(&m, "sgd{lr=0.5},remat{mode=sqrt},memplan");
    let s = plain.func("gpt_step").expect("step");
    let mut inputs = random_inputs(s, 5);
    // A repeating sequence (period 3) the model can learn: labels are the next token.
    let ids: Vec<i64> = (0..16).map(|i| [1, 4, 7][i % 3] + (i / 8) as i64).collect();
    let mut labels: Vec<i64> = (0..16).map(|i| if i % 8 == 7 { -100 } else { ids[i + 1] }).collect();
    labels[15] = -100;
    inputs[0] = Tensor::from_ints(vec![2, 8], ckopt_ir::DType::I64, ids).expect("ids");
    inputs[1] = Tensor::from_ints(vec![2, 8], ckopt_ir::DType::I64, labels).expect("labels");
    let trained = plain.func("gpt").expect("gpt").trainable_indices();
    let (mut a, mut b) = (inputs.clone(), inputs);
    let mut losses = Vec::new();
    for step in 0..20 {
        let oa = run_func(&plain, "gpt_step", &a).unwrap_or_else(|d| panic!("step {step}: {d}"));
        let ob = run_func_in_arena(&remat, "gpt_step", &b).unwrap_or_else(|d| panic!("remat step {step}: {d}")).0;
        assert_eq!(bits(&oa), bits(&ob), "step {step}: remat{{mode=sqrt}} changed the step");
        losses.push(oa[0].data[0]);
        for (k, &i) in trained.iter().enumerate() {
            a[i] = oa[1 + k].clone();
            b[i] = ob[1 + k].clone();
        }
    }
    let (first, last) = (losses[0], losses[19]);
    eprintln!("gpt on a fixed batch: loss {first} -> {last} in 20 SGD steps");
    assert!(first > 2.0, "starts near ln(11) = 2.40: {first}");
    assert!(last < 0.5 * first, "loss {first} -> {last} over 20 steps: {losses:?}");
}
