//! Helpers shared by the runtime's integration tests.

use ckopt_ir::Module;
use ckopt_models::{GenOptions, ModelKind, SizeOpt, generate};
use ckopt_passes::PassManager;

/// Every generated model kind (both backends take them all: gpt has
/// integer token ids and labels and i1 masks).
pub const CPU_KINDS: [ModelKind; 6] = ModelKind::ALL;

/// The sizes a test generates its models at (2 heads, 4 channels, 5 classes always).
#[derive(Clone, Copy)]
pub struct Sizes {
    pub depth: u64,
    pub width: u64,
    pub batch: u64,
    pub seq: u64,
    pub image: u64,
}

/// `kind` at `s`.
pub fn small(kind: ModelKind, s: Sizes) -> Module {
    let mut o = GenOptions::default();
    for &(opt, _) in kind.options() {
        let v = match opt {
            SizeOpt::Depth => s.depth,
            SizeOpt::Width => s.width,
            SizeOpt::Batch => s.batch,
            SizeOpt::Seq => s.seq,
            SizeOpt::Heads => 2,
            SizeOpt::Channels => 4,
            SizeOpt::Image => s.image,
            SizeOpt::Classes => 5,
            SizeOpt::Vocab => 11,
        };
        o.set(opt, Some(v));
    }
    generate(kind, &o).unwrap_or_else(|e| panic!("{kind:?}: {e}"))
}

/// `m` after `pipeline` (panics with the pipeline on error).
pub fn planned(m: &Module, pipeline: &str) -> Module {
    let mut m = m.clone();
    PassManager::parse(pipeline).expect("pipeline").run(&mut m).unwrap_or_else(|e| panic!("{pipeline}: {e}"));
    m
}
