//! Sanity of the generated models under the reference interpreter:
//! every model at a small size (and at its defaults) evaluates to one finite rank-0 loss on
//! `random_inputs`, and with all parameters zero each model reduces to a
//! closed form (checked against values computed here by hand):
//! - mlp, lstm: the output is 0, so loss = mean(target²);
//! - resmlp, transformer: every block adds 0, so loss = mean((x - target)²);
//! - resnet: the logits are 0, so the cross-entropy of a one-hot target is ln(classes);
//! - gpt: the embeddings are 0, so the logits are 0 and the loss is ln(vocab).

use ckopt_interp::{Tensor, random_inputs, run_func};
use ckopt_models::{GenOptions, ModelKind, SizeOpt, generate};

fn small(kind: ModelKind) -> GenOptions {
    use SizeOpt::*;
    let pairs: &[(SizeOpt, u64)] = match kind {
        ModelKind::Mlp | ModelKind::Resmlp => &[(Depth, 3), (Width, 8), (Batch, 4)],
        ModelKind::Lstm => &[(Depth, 2), (Seq, 3), (Width, 4), (Batch, 2)],
        ModelKind::Resnet => &[(Depth, 2), (Channels, 4), (Image, 6), (Batch, 2), (Classes, 3)],
        ModelKind::Transformer => &[(Depth, 2), (Seq, 4), (Width, 8), (Heads, 2), (Batch, 2)],
        ModelKind::Gpt => &[(Depth, 2), (Seq, 4), (Width, 8), (Heads, 2), (Vocab, 5), (Batch, 2)],
    };
    let mut o = GenOptions::default();
    for &(k, v) in pairs {
        o.set(k, Some(v));
    }
    o
}

fn loss_of(kind: ModelKind, inputs: &[Tensor]) -> f32 {
    let m = generate(kind, &small(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
    let out = run_func(&m, kind.name(), inputs).unwrap_or_else(|d| panic!("{kind}: {d}"));
    assert_eq!(out.len(), 1, "{kind} returns only the loss");
    assert!(out[0].shape.is_empty(), "{kind}: loss has shape {:?}", out[0].shape);
    out[0].data[0]
}

fn mean_sq(a: &[f32], b: Option<&[f32]>) -> f64 {
    let n = a.len() as f64;
    a.iter()
        .enumerate()
        .map(|(i, &v)| {
            let d = v as f64 - b.map_or(0.0, |b| b[i] as f64);
            d * d
        })
        .sum::<f64>()
        / n
}

#[test]
fn every_model_gives_a_finite_loss_on_random_inputs() {
    for kind in ModelKind::ALL {
        let m = generate(kind, &small(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
        for seed in [0, 7] {
            let inputs = random_inputs(&m.funcs[0], seed);
            let l = loss_of(kind, &inputs);
            assert!(l.is_finite(), "{kind} seed {seed}: loss {l}");
            if kind != ModelKind::Resnet {
                // MSE: strictly positive for random targets.
                assert!(l > 0.0, "{kind} seed {seed}: loss {l}");
            }
        }
    }
}

#[test]
fn default_sizes_give_a_finite_loss() {
    for kind in ModelKind::ALL {
        let m = generate(kind, &GenOptions::default()).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let out = run_func(&m, kind.name(), &random_inputs(&m.funcs[0], 0)).unwrap_or_else(|d| panic!("{kind}: {d}"));
        assert!(out[0].shape.is_empty() && out[0].data[0].is_finite(), "{kind}: {:?}", out[0].data);
    }
}

#[test]
fn zero_parameters_give_the_closed_form_loss() {
    for kind in ModelKind::ALL {
        let m = generate(kind, &small(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
        let f = &m.funcs[0];
        let mut inputs = random_inputs(f, 3);
        for (i, t) in inputs.iter_mut().enumerate() {
            if f.is_trainable(i) {
                t.data.iter_mut().for_each(|v| *v = 0.0);
            }
        }
        if kind == ModelKind::Resnet {
            // One-hot target: sample b has class b mod classes.
            let t = &mut inputs[1];
            let classes = t.shape[1];
            t.data.iter_mut().for_each(|v| *v = 0.0);
            for b in 0..t.shape[0] {
                t.data[b * classes + b % classes] = 1.0;
            }
        }
        let (x, target) = (&inputs[0].data, &inputs[1].data);
        let want = match kind {
            ModelKind::Mlp | ModelKind::Lstm => mean_sq(target, None),
            ModelKind::Resmlp | ModelKind::Transformer => mean_sq(x, Some(target)),
            ModelKind::Resnet => (inputs[1].shape[1] as f64).ln(),
            // Zero embeddings give h = 0, LN(0) = 0 and zero logits: a uniform softmax.
            ModelKind::Gpt => (m.funcs[0].ty(m.funcs[0].params[2].value).shape[0] as f64).ln(),
        };
        let got = loss_of(kind, &inputs) as f64;
        assert!((got - want).abs() <= 1e-5 * want.abs().max(1.0), "{kind}: loss {got}, closed form {want}");
    }
}
