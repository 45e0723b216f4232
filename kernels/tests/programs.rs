//! Step programs of the generated models: kernels are shared across layers
//! (the cache grows with distinct kernels, not depth), every slot lies in
//! its buffer, and fusion turns LayerNorm and softmax into 3 kernels each.

use ckopt_kernels::{BufId, KernelCache, Step, StepProgram, build_program};
use ckopt_models::{GenOptions, ModelKind, generate};
use ckopt_passes::PassManager;

fn planned(kind: ModelKind, depth: u64, pipeline: &str) -> ckopt_ir::Module {
    let mut o = GenOptions::default();
    o.depth = Some(depth);
    let mut m = generate(kind, &o).expect("generates");
    PassManager::parse(pipeline).expect("pipeline").run(&mut m).unwrap_or_else(|e| panic!("{pipeline}: {e}"));
    m
}

fn programs(m: &ckopt_ir::Module) -> (Vec<StepProgram>, KernelCache) {
    let mut cache = KernelCache::new();
    let progs = m.funcs.iter().map(|f| build_program(f, &mut cache).unwrap_or_else(|e| panic!("@{}: {e}", f.name))).collect();
    (progs, cache)
}

const FULL: &str = "autodiff,inplace,sgd,fuse,remat{mode=sqrt},memplan";

#[test]
fn distinct_kernels_do_not_grow_with_depth() {
    for kind in [ModelKind::Mlp, ModelKind::Resmlp] {
        let (p20, c20) = programs(&planned(kind, 20, FULL));
        let (p80, c80) = programs(&planned(kind, 80, FULL));
        let steps = |p: &[StepProgram]| p.iter().map(|p| p.steps.len()).sum::<usize>();
        assert!(steps(&p80) > 3 * steps(&p20), "{kind:?}: more layers, more steps");
        // (a remat segment boundary can add an aliasing variant or two)
        assert!(c80.len() <= c20.len() + 2, "{kind:?}: {} distinct kernels at depth 20, {} at 80", c20.len(), c80.len());
        assert!(c80.len() < 60, "{kind:?}: {} distinct kernels", c80.len());
    }
}

#[test]
fn every_slot_lies_inside_its_buffer() {
    for kind in [ModelKind::Mlp, ModelKind::Resmlp, ModelKind::Lstm, ModelKind::Resnet, ModelKind::Transformer] {
        for pipeline in [FULL, "autodiff,memplan", "autodiff,inplace,fuse,remat{mode=log},memplan"] {
            let m = planned(kind, 2, pipeline);
            let (progs, cache) = programs(&m);
            for (p, f) in progs.iter().zip(&m.funcs) {
                let size = |b: BufId| match b {
                    BufId::Arena => p.arena_bytes,
                    BufId::Workspace => p.workspace_bytes,
                    BufId::Arg(i) => f.ty(f.params[i as usize].value).bytes(),
                };
                for s in &p.steps {
                    let slots = match s {
                        Step::Kernel { kernel, args, .. } => {
                            assert_eq!(args.len(), cache.kernels[*kernel as usize].num_ptrs());
                            args.clone()
                        }
                        Step::Gemm { gemm, .. } => vec![gemm.a, gemm.b, gemm.c],
                        Step::Conv { conv, .. } => vec![conv.x, conv.wt, conv.y],
                    };
                    for sl in slots {
                        assert!(sl.offset + sl.bytes <= size(sl.buf), "{kind:?} {pipeline} @{}: {sl:?} in {s:?}", p.func);
                    }
                }
            }
        }
    }
}

/// LayerNorm (12 ops) and softmax (7 ops) run as 3 kernels each.
#[test]
fn layernorm_and_softmax_are_three_kernels() {
    let m = planned(ModelKind::Transformer, 1, "fuse,memplan");
    let (progs, _) = programs(&m);
    let p = &progs[0];
    let f = &m.funcs[0];
    let kernels_touching = |prefix: &str| {
        p.steps
            .iter()
            .filter(|s| {
                let i = s.op().index as usize;
                let (a, b) = ckopt_ir::fusion::analyze(f).span(i);
                (a..=b).any(|j| f.body[j].result.is_some_and(|r| f.name_of(r).starts_with(prefix)))
            })
            .count()
    };
    assert_eq!(kernels_touching("ln0a_"), 3, "LayerNorm");
    assert_eq!(kernels_touching("sm0_"), 3, "softmax");
}
