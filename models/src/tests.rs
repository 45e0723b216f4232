//! Unit tests of the model generators: every model verifies at small and
//! medium sizes, op counts grow linearly with depth, parameters are marked,
//! the first result is rank 0, output is deterministic, bad options are errors.

use super::*;
use ckopt_ir::{OpKind, TensorType, print_module, verify_module};

fn opts(pairs: &[(SizeOpt, u64)]) -> GenOptions {
    let mut o = GenOptions::default();
    for &(k, v) in pairs {
        o.set(k, Some(v));
    }
    o
}

fn small(kind: ModelKind) -> GenOptions {
    use SizeOpt::*;
    match kind {
        ModelKind::Mlp | ModelKind::Resmlp => opts(&[(Depth, 2), (Width, 8), (Batch, 4)]),
        ModelKind::Lstm => opts(&[(Depth, 2), (Seq, 3), (Width, 4), (Batch, 2)]),
        ModelKind::Resnet => opts(&[(Depth, 2), (Channels, 4), (Image, 6), (Batch, 2), (Classes, 3)]),
        ModelKind::Transformer => opts(&[(Depth, 2), (Seq, 4), (Width, 8), (Heads, 2), (Batch, 2)]),
        ModelKind::Gpt => opts(&[(Depth, 2), (Seq, 4), (Width, 8), (Heads, 2), (Vocab, 7), (Batch, 2)]),
    }
}

fn gen_ok(kind: ModelKind, o: &GenOptions) -> Module {
    match generate(kind, o) {
        Ok(m) => m,
        Err(e) => panic!("{kind} {o:?}: {e}"),
    }
}

fn num_ops(m: &Module) -> usize {
    m.funcs[0].body.len()
}

#[test]
fn every_model_verifies_at_small_default_and_medium_sizes() {
    for k in ModelKind::ALL {
        let medium = {
            let mut o = small(k);
            o.depth = Some(12);
            o.batch = Some(16);
            o
        };
        for o in [small(k), GenOptions::default(), medium] {
            let m = gen_ok(k, &o);
            assert_eq!(m.funcs.len(), 1);
            assert_eq!(m.funcs[0].name, k.name());
            if let Err(d) = verify_module(&m) {
                panic!("{k} {o:?} does not verify:\n{d}");
            }
        }
    }
}

#[test]
fn signature_is_x_target_then_marked_params_and_a_scalar_loss() {
    for k in ModelKind::ALL {
        let m = gen_ok(k, &small(k));
        let f = &m.funcs[0];
        let (x, target) = if k == ModelKind::Gpt { ("ids", "labels") } else { ("x", "target") };
        assert_eq!(f.name_of(f.params[0].value), x, "{k}");
        assert_eq!(f.name_of(f.params[1].value), target, "{k}");
        assert!(!f.is_trainable(0) && !f.is_trainable(1), "{k}: x/target must not be params");
        assert!(f.params.len() > 2, "{k} has no parameters");
        for i in 2..f.params.len() {
            assert!(f.is_trainable(i), "{k}: argument {i} lacks ck.param");
        }
        assert_eq!(f.result_types.first(), Some(&TensorType::scalar()), "{k}");
        assert_eq!(f.body.last().map(|o| o.kind), Some(OpKind::Return));
    }
}

#[test]
fn op_and_param_counts_grow_linearly_with_depth() {
    for k in ModelKind::ALL {
        let at = |d: u64| {
            let mut o = small(k);
            o.depth = Some(d);
            let m = gen_ok(k, &o);
            (num_ops(&m), m.funcs[0].params.len())
        };
        let (o1, p1) = at(1);
        let (o2, p2) = at(2);
        let (o5, p5) = at(5);
        assert!(o2 > o1, "{k}: ops do not grow with depth");
        assert_eq!(o5 - o1, 4 * (o2 - o1), "{k}: ops not linear in depth");
        assert_eq!(p5 - p1, 4 * (p2 - p1), "{k}: params not linear in depth");
    }
}

#[test]
fn mlp_block_is_matmul_broadcast_add_relu() {
    let m = gen_ok(ModelKind::Mlp, &opts(&[(SizeOpt::Depth, 3), (SizeOpt::Width, 8), (SizeOpt::Batch, 4)]));
    let kinds: Vec<OpKind> = m.funcs[0].body.iter().map(|o| o.kind).collect();
    use OpKind::*;
    let block = [Matmul, Broadcast, Add, Relu];
    let tail = [Sub, Mul, ReduceSum, Scale, Return];
    let want: Vec<OpKind> = block.iter().cycle().take(12).copied().chain(tail).collect();
    assert_eq!(kinds, want);
    // 3·(W·W + W) parameters plus x and target.
    assert_eq!(m.funcs[0].params.len(), 2 + 2 * 3);
}

#[test]
fn lstm_ops_scale_with_seq() {
    let at = |s: u64| {
        let mut o = small(ModelKind::Lstm);
        o.seq = Some(s);
        num_ops(&gen_ok(ModelKind::Lstm, &o))
    };
    assert_eq!(at(7) - at(3), 4 * (at(4) - at(3)));
}

#[test]
fn output_is_deterministic() {
    for k in ModelKind::ALL {
        let a = print_module(&gen_ok(k, &small(k)));
        let b = print_module(&gen_ok(k, &small(k)));
        assert_eq!(a, b, "{k}");
    }
}

#[test]
fn bad_options_are_errors() {
    use SizeOpt::*;
    let cases: Vec<(ModelKind, GenOptions, &str)> = vec![
        (ModelKind::Mlp, opts(&[(Depth, 0)]), "--depth must be between"),
        (ModelKind::Mlp, opts(&[(Width, 0)]), "--width must be between"),
        (ModelKind::Mlp, opts(&[(Heads, 2)]), "does not apply"),
        (ModelKind::Resnet, opts(&[(Width, 2)]), "does not apply"),
        (ModelKind::Transformer, opts(&[(Width, 10), (Heads, 4)]), "must divide"),
        (ModelKind::Resnet, opts(&[(Image, 1)]), "--image must be at least 2"),
        (ModelKind::Mlp, opts(&[(Depth, 100_000_000)]), "ops"),
        (ModelKind::Lstm, opts(&[(Seq, 1 << 30), (Depth, 1 << 30)]), "ops"),
        (ModelKind::Mlp, opts(&[(Width, MAX_DIM + 1)]), "between"),
        // W·W·4 bytes = 2^64: overflows u64.
        (ModelKind::Mlp, opts(&[(Width, 1 << 31), (Depth, 1)]), "overflow"),
        (ModelKind::Transformer, opts(&[(Batch, 1 << 31), (Seq, 1 << 31), (Width, 1 << 31), (Heads, 1)]), "overflow"),
        (ModelKind::Resnet, opts(&[(Channels, 1 << 31), (Image, 1 << 31)]), "overflow"),
    ];
    for (k, o, want) in cases {
        match generate(k, &o) {
            Ok(_) => panic!("{k} {o:?} should fail"),
            Err(e) => assert!(e.to_string().contains(want), "{k} {o:?}: error {e:?} lacks {want:?}"),
        }
    }
}

#[test]
fn errors_are_typed_with_the_cli_messages() {
    use SizeOpt::*;
    let err = |k: ModelKind, o: &[(SizeOpt, u64)]| match generate(k, &opts(o)) {
        Ok(_) => panic!("{k} {o:?} should fail"),
        Err(e) => e,
    };
    let e = err(ModelKind::Mlp, &[(Depth, 0)]);
    assert_eq!(e, GenError::OutOfRange { option: Depth, value: 0 });
    assert_eq!(e.to_string(), format!("--depth must be between 1 and {MAX_DIM}, got 0"));
    let e = err(ModelKind::Mlp, &[(Heads, 4)]);
    assert_eq!(e, GenError::NotApplicable { option: Heads, model: ModelKind::Mlp });
    assert_eq!(e.to_string(), "option --heads does not apply to model 'mlp' (it takes --depth, --width, --batch)");
    let e = err(ModelKind::Transformer, &[(Width, 10), (Heads, 4)]);
    assert_eq!(e, GenError::HeadsNotDividingWidth { heads: 4, width: 10 });
    assert_eq!(e.to_string(), "--heads 4 must divide --width 10");
    let e = err(ModelKind::Resnet, &[(Image, 1)]);
    assert_eq!(e.to_string(), "--image must be at least 2 (the stem pools 2x2), got 1");
    let e = err(ModelKind::Mlp, &[(Depth, 100_000_000)]);
    assert_eq!(e, GenError::TooManyOps { model: ModelKind::Mlp });
    assert_eq!(e.to_string(), format!("model 'mlp' with these sizes would have more than {MAX_OPS} ops; reduce --depth"));
    let e = err(ModelKind::Lstm, &[(Seq, 1 << 30), (Depth, 1 << 30)]);
    assert!(e.to_string().ends_with("reduce --depth or --seq"), "{e}");
    let e = err(ModelKind::Mlp, &[(Width, 1 << 31), (Depth, 1)]);
    match &e {
        GenError::Build { model: ModelKind::Mlp, source: BuildError::ArgTooLarge { name, .. } } => assert_eq!(name, "w0"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        e.to_string(),
        "cannot build model 'mlp': argument %w0 of type tensor<2147483648x2147483648xf32> has a byte size that overflows u64"
    );
    assert_eq!(String::from(e.clone()), e.to_string());
    let e = "vgg".parse::<ModelKind>().map(|k| k.name());
    assert_eq!(e, Err(GenError::UnknownModel { name: "vgg".into() }));
    let Err(e) = e else { unreachable!() };
    assert_eq!(e.to_string(), "unknown model 'vgg' (valid: mlp, resmlp, lstm, resnet, transformer, gpt)");
}

#[test]
fn model_names_parse_and_unknown_lists_valid() {
    for k in ModelKind::ALL {
        assert_eq!(k.name().parse::<ModelKind>(), Ok(k));
    }
    let e = "vgg".parse::<ModelKind>().err().map(|e| e.to_string()).unwrap_or_default();
    assert!(e.contains("mlp, resmlp, lstm, resnet, transformer, gpt"), "{e}");
}

#[test]
fn help_mentions_every_model_and_its_options() {
    let h = help_text();
    for k in ModelKind::ALL {
        assert!(h.contains(&format!("\n  {}\n", k.name())), "{k}");
        for (o, _) in k.options() {
            assert!(h.contains(&format!("--{}", o.name())));
        }
    }
}

#[test]
fn deep_mlp_builds_quickly_enough_to_matter() {
    // 10,000 blocks = 40,000 ops: the planning benchmarks' size.
    let m = gen_ok(ModelKind::Mlp, &opts(&[(SizeOpt::Depth, 10_000), (SizeOpt::Width, 64), (SizeOpt::Batch, 8)]));
    assert_eq!(num_ops(&m), 4 * 10_000 + 5);
}

#[test]
fn mlp_and_resmlp_block_values_are_at_most_one_activation_unit() {
    // The memory benchmarks count in units of batch·width·4 bytes: every
    // value of a block must be one unit (or a small [batch] statistic).
    for k in [ModelKind::Mlp, ModelKind::Resmlp] {
        let m = gen_ok(k, &opts(&[(SizeOpt::Depth, 3), (SizeOpt::Width, 16), (SizeOpt::Batch, 8)]));
        let f = &m.funcs[0];
        let unit = 8 * 16 * 4;
        let mut units = 0;
        for op in &f.body {
            if let Some(r) = op.result {
                let bytes = f.ty(r).bytes();
                assert!(bytes == unit || bytes <= 8 * 4, "{k}: %{} has {bytes} bytes", f.name_of(r));
                units += usize::from(bytes == unit);
            }
        }
        // mlp: 4 per block + diff, sq. resmlp: 13 per block + diff, sq.
        let per_block = if k == ModelKind::Mlp { 4 } else { 13 };
        assert_eq!(units, 3 * per_block + 2, "{k}");
    }
}

#[test]
fn any_option_values_give_a_verified_module_or_an_error_never_a_panic() {
    // Edge values for every option (1, small, odd, the limit, past the limit,
    // and values whose products overflow u64), combined over each model's
    // options two at a time, the rest at small sizes. Huge depths are
    // refused by the op limit before anything is built.
    let values = [0, 1, 2, 3, 7, 1 << 20, MAX_DIM, MAX_DIM + 1, u64::MAX];
    for k in ModelKind::ALL {
        let base = small(k);
        let names: Vec<SizeOpt> = k.options().iter().map(|(o, _)| *o).collect();
        for (ai, &a) in names.iter().enumerate() {
            for &b in &names[ai..] {
                for &va in &values {
                    for &vb in &values {
                        let mut o = base.clone();
                        o.set(a, Some(va));
                        o.set(b, Some(vb));
                        // Keep the big cases cheap: only depth 1 when sizes are huge.
                        if (va > 1000 || vb > 1000) && a != SizeOpt::Depth && b != SizeOpt::Depth {
                            o.depth = Some(1);
                        }
                        if let Ok(m) = generate(k, &o)
                            && let Err(d) = verify_module(&m)
                        {
                            panic!("{k} {o:?} generated but does not verify:\n{d}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn gpt_has_integer_inputs_embeddings_a_causal_mask_and_cross_entropy() {
    let m = gen_ok(ModelKind::Gpt, &small(ModelKind::Gpt));
    let f = &m.funcs[0];
    for i in 0..2 {
        assert_eq!(f.ty(f.params[i].value), &TensorType::new(vec![2, 4], ckopt_ir::DType::I64));
        assert!(!f.is_trainable(i));
    }
    let count = |k: OpKind| f.body.iter().filter(|o| o.kind == k).count();
    // Token and position embeddings; one mask per layer (2 layers); one loss.
    assert_eq!(count(OpKind::Gather), 2);
    assert_eq!((count(OpKind::Ge), count(OpKind::Select), count(OpKind::Iota)), (2, 2, 1 + 2 * 2));
    assert_eq!(count(OpKind::Erf), 2, "one GELU per layer");
    assert_eq!(count(OpKind::CrossEntropy), 1);
    let ret = f.body.last().expect("return");
    let loss = f.body.iter().find(|o| o.result == Some(ret.operands[0])).expect("loss op");
    assert_eq!(loss.kind, OpKind::CrossEntropy);
    // Parameters: wte, wpe, then 8 per layer.
    assert_eq!(f.params.len(), 2 + 2 + 8 * 2);
}
