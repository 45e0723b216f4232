//! The generated models are differentiable end to end: `autodiff` adds
//! `@MODEL_grad` for every model, its loss equals the forward loss exactly,
//! and its gradients agree with central finite differences of the forward
//! loss (interpreter, f32) on sampled entries of every parameter.

use ckopt_interp::{Tensor, random_inputs, run_func};
use ckopt_models::{GenOptions, ModelKind, SizeOpt, generate};
use ckopt_passes::autodiff::{AutodiffOptions, autodiff};

fn small(kind: ModelKind) -> GenOptions {
    use SizeOpt::*;
    let pairs: &[(SizeOpt, u64)] = match kind {
        ModelKind::Mlp | ModelKind::Resmlp => &[(Depth, 2), (Width, 6), (Batch, 3)],
        ModelKind::Lstm => &[(Depth, 2), (Seq, 3), (Width, 3), (Batch, 2)],
        ModelKind::Resnet => &[(Depth, 1), (Channels, 2), (Image, 4), (Batch, 2), (Classes, 3)],
        ModelKind::Transformer => &[(Depth, 1), (Seq, 3), (Width, 4), (Heads, 2), (Batch, 2)],
        ModelKind::Gpt => &[(Depth, 1), (Seq, 3), (Width, 4), (Heads, 2), (Vocab, 5), (Batch, 2)],
    };
    let mut o = GenOptions::default();
    for &(k, v) in pairs {
        o.set(k, Some(v));
    }
    o
}

#[test]
fn autodiff_gradients_of_every_model_match_finite_differences() {
    for kind in ModelKind::ALL {
        let mut m = generate(kind, &small(kind)).unwrap_or_else(|e| panic!("{kind}: {e}"));
        autodiff(&mut m, &AutodiffOptions::default()).unwrap_or_else(|d| panic!("{kind}: {d}"));
        let name = kind.name();
        let grad = format!("{name}_grad");
        let f = m.func(name).unwrap_or_else(|| panic!("{kind}: forward function lost"));
        let params = f.trainable_indices();
        let mut inputs: Vec<Tensor> = random_inputs(f, 11);
        if kind == ModelKind::Resnet {
            // A one-hot target, as the model documents.
            let t = &mut inputs[1];
            let k = t.shape[1];
            t.data.iter_mut().for_each(|v| *v = 0.0);
            for b in 0..t.shape[0] {
                t.data[b * k + (b + 1) % k] = 1.0;
            }
        }
        let loss = |inp: &[Tensor]| -> f64 {
            let out = run_func(&m, name, inp).unwrap_or_else(|d| panic!("{kind}: {d}"));
            out[0].data[0] as f64
        };
        let out = run_func(&m, &grad, &inputs).unwrap_or_else(|d| panic!("{kind} grad: {d}"));
        assert_eq!(out.len(), 1 + params.len(), "{kind}: (loss, one gradient per param)");
        assert_eq!(out[0].data[0].to_bits(), (loss(&inputs) as f32).to_bits(), "{kind}: grad loss differs");
        // One-sided differences too: a relu sitting within eps of its kink
        // makes the central difference meaningless but one side still agrees.
        let eps = 2e-3f32;
        let base = loss(&inputs);
        let (mut checked, mut central_ok) = (0, 0);
        for (gi, &pi) in params.iter().enumerate() {
            let g = &out[1 + gi];
            assert_eq!(g.shape, inputs[pi].shape, "{kind}: gradient {gi} shape");
            let n = g.data.len();
            // Up to 3 entries per parameter, spread over the tensor.
            for j in [0, n / 2, n - 1] {
                let mut plus = inputs.clone();
                plus[pi].data[j] += eps;
                let mut minus = inputs.clone();
                minus[pi].data[j] -= eps;
                let (lp, lm) = (loss(&plus), loss(&minus));
                let e = eps as f64;
                let ad = g.data[j] as f64;
                let close = |fd: f64| (fd - ad).abs() <= 3e-2 * fd.abs().max(ad.abs()) + 2e-3;
                let central = (lp - lm) / (2.0 * e);
                assert!(
                    close(central) || close((lp - base) / e) || close((base - lm) / e),
                    "{kind}: d loss / d arg{pi}[{j}]: autodiff {ad}, finite differences {central} (central), {} (+), {} (-)",
                    (lp - base) / e,
                    (base - lm) / e
                );
                checked += 1;
                central_ok += usize::from(close(central));
            }
        }
        assert!(central_ok * 10 >= checked * 8, "{kind}: only {central_ok} of {checked} central differences agree");
    }
}
