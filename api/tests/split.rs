//! `split_gradient` against its oracle: the planned gradient function run
//! whole on the interpreter. Its forward then its backward (with dy = 1)
//! must give the same loss and gradients bit for bit (the same ops run on
//! the same values), under every remat mode, on every ckopt-gen model;
//! the kept set is exactly what crosses the cut (each is read by the
//! backward, none is a recompute clone), and remat shrinks it.

use ckopt::{ErrorKind, GenOptions, ModelKind, Module, SizeOpt, Target, Tensor, compile, gen_model, optimize, parse, split_gradient};

fn small(kind: ModelKind) -> Vec<(&'static str, u64)> {
    kind.options()
        .iter()
        .map(|&(opt, _)| {
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
            (opt.name(), v)
        })
        .collect()
}

fn run(m: &Module, func: &str, inputs: &[Tensor]) -> Vec<Tensor> {
    let mut c = compile(m, func, Target::Interp).unwrap_or_else(|e| panic!("@{func}: {e}"));
    c.run(inputs).unwrap_or_else(|e| panic!("@{func}: {e}"))
}

/// Splits `grad` of `func`, runs both halves and compares with the whole.
/// Returns the kept values' bytes.
fn check_split(m: &Module, func: &str, grad: &str, what: &str) -> u64 {
    let s = split_gradient(m, func, grad).unwrap_or_else(|e| panic!("{what}: {e}"));
    let g = m.func(grad).unwrap();
    let inputs = compile(m, grad, Target::Interp).unwrap().random_inputs(5).unwrap();
    let whole = run(m, grad, &inputs);
    let halves = s.module();
    // Each half is a valid ck function on its own (prints and parses back).
    let reparsed = parse(&ckopt::print(&halves), "<split>").unwrap_or_else(|e| panic!("{what}: {e}"));
    let fwd = run(&reparsed, &s.forward.name, &inputs);
    assert_eq!(fwd.len(), 1 + s.n_aux + s.n_kept, "{what}: forward results");
    assert_eq!(fwd[0], whole[0], "{what}: loss");
    let mut bargs: Vec<Tensor> = s.backward_args.iter().map(|&i| inputs[i].clone()).collect();
    bargs.extend(fwd[1 + s.n_aux..].iter().cloned());
    bargs.push(Tensor::new(vec![], vec![1.0]).unwrap());
    let grads = run(&reparsed, &s.backward.name, &bargs);
    assert_eq!(grads.len(), whole.len() - 1, "{what}: gradient count");
    for (k, (a, b)) in grads.iter().zip(&whole[1..]).enumerate() {
        assert_eq!(a, b, "{what}: gradient {k}");
    }
    assert_eq!(s.wrt.len(), grads.len(), "{what}: wrt");
    // Every argument of the backward is read (the kept set is exact).
    let uses = s.backward.uses();
    let returned = s.backward.returned();
    for p in &s.backward.params {
        assert!(!uses[p.value.index()].is_empty() || returned.contains(&p.value), "{what}: backward argument %{} unused", s.backward.name_of(p.value));
    }
    // The forward has no recompute clone and no seed.
    assert!(s.forward.body.iter().all(|op| !op.has_attr("ck.recompute")), "{what}: recompute clone in the forward");
    assert!(s.forward.body.len() < g.body.len(), "{what}: forward is the whole function");
    s.backward.params[s.backward.params.len() - s.n_kept - 1..s.backward.params.len() - 1]
        .iter()
        .map(|p| s.backward.ty(p.value).bytes())
        .sum()
}

#[test]
fn halves_give_the_whole_gradient_on_every_model_and_mode() {
    for kind in ModelKind::ALL {
        for mode in ["none", "sqrt", "greedy", "log"] {
            let mut m = gen_model(kind.name(), &small(kind)).unwrap();
            let remat = if mode == "none" { String::new() } else { format!(",remat{{mode={mode}}}") };
            optimize(&mut m, &format!("autodiff,inplace{remat}")).unwrap();
            let f = m.funcs[0].name.clone();
            check_split(&m, &f, &format!("{f}_grad"), &format!("{} {mode}", kind.name()));
        }
    }
}

#[test]
fn remat_keeps_fewer_bytes_across_the_cut() {
    let mut o = GenOptions::default();
    o.set(SizeOpt::Depth, Some(8));
    o.set(SizeOpt::Width, Some(16));
    o.set(SizeOpt::Batch, Some(4));
    let base = ckopt::model(ModelKind::from_name("mlp").unwrap(), &o).unwrap();
    let kept = |p: &str| {
        let mut m = base.clone();
        optimize(&mut m, p).unwrap();
        check_split(&m, "mlp", "mlp_grad", p)
    };
    let none = kept("autodiff,inplace");
    let log = kept("autodiff,inplace,remat{mode=log}");
    assert!(log < none, "log keeps {log} bytes, no remat {none}");
}

const AUX: &str = r#"module {
  func.func @f(%x: tensor<4x3xf32>, %w: tensor<3xf32> {ck.param}) -> (tensor<f32>, tensor<3xf32>, tensor<3xf32>) {
    %b = "ck.broadcast"(%w) {dims = [1]} : (tensor<3xf32>) -> tensor<4x3xf32>
    %y = "ck.mul"(%x, %b) : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %t = "ck.tanh"(%y) : (tensor<4x3xf32>) -> tensor<4x3xf32>
    %s = "ck.reduce_sum"(%t) {dims = [0]} : (tensor<4x3xf32>) -> tensor<3xf32>
    %l = "ck.reduce_sum"(%s) {dims = [0]} : (tensor<3xf32>) -> tensor<f32>
    %m = "ck.scale"(%s) {value = 0.25 : f32} : (tensor<3xf32>) -> tensor<3xf32>
    %e = "ck.exp"(%m) : (tensor<3xf32>) -> tensor<3xf32>
    "ck.return"(%l, %m, %e) : (tensor<f32>, tensor<3xf32>, tensor<3xf32>) -> ()
  }
}
"#;

#[test]
fn other_results_reuse_the_forward_and_equal_the_loss_function() {
    for p in ["autodiff{func=f},inplace", "autodiff{func=f},inplace,remat{mode=log}"] {
        let mut m = parse(AUX, "aux.ck").unwrap();
        optimize(&mut m, p).unwrap();
        check_split(&m, "f", "f_grad", p);
        let s = split_gradient(&m, "f", "f_grad").unwrap();
        assert_eq!(s.n_aux, 2);
        assert_eq!(s.wrt, vec![1]);
        let inputs = compile(&m, "f", Target::Interp).unwrap().random_inputs(9).unwrap();
        let want = run(&m, "f", &inputs);
        let got = run(&s.module(), &s.forward.name, &inputs);
        assert_eq!(&got[..3], &want[..], "{p}: loss and the other results");
        // %m and %e are new (2 ops); %s comes from the gradient's forward.
        let cone = s.forward.body.iter().filter(|o| o.kind != ckopt::OpKind::Return).count();
        let reduce_sums = s.forward.body.iter().filter(|o| o.kind == ckopt::OpKind::ReduceSum).count();
        assert_eq!(reduce_sums, 2, "{p}: %s computed twice:\n{}", ckopt::print(&s.module()));
        assert_eq!(cone, 7, "{p}:\n{}", ckopt::print(&s.module()));
        // The backward never reads an argument it does not need: %x and %w
        // feed the tanh gradient only through kept values or directly.
        assert!(s.backward_args.iter().all(|&i| i < 2));
    }
}

#[test]
fn a_function_without_a_seed_is_a_compile_error() {
    let mut m = parse(AUX, "aux.ck").unwrap();
    optimize(&mut m, "autodiff{func=f}").unwrap();
    let e = split_gradient(&m, "f", "f").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Compile);
    assert!(e.to_string().contains("no seed"), "{e}");
    let e = split_gradient(&m, "f", "nope").unwrap_err();
    assert!(e.to_string().contains("no function @nope"), "{e}");
}
