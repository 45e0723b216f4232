//! Every statistic a pass reports is declared in its record
//! (`registry::StatInfo`): every registered pass runs on the generated
//! models (and with the options that change what it reports), and a report
//! whose name the record lacks fails the test. Every declared statistic is
//! seen at least once, so the records do not keep dead names either.

use ckopt_models::{GenOptions, ModelKind, SizeOpt, generate};
use ckopt_passes::PassManager;
use ckopt_passes::registry::registry;
use std::collections::BTreeSet;

fn small(kind: ModelKind) -> GenOptions {
    let mut o = GenOptions::default();
    for &(opt, _) in kind.options() {
        let v = match opt {
            SizeOpt::Depth => 3,
            SizeOpt::Width => 8,
            SizeOpt::Batch => 2,
            SizeOpt::Seq => 3,
            SizeOpt::Heads => 2,
            SizeOpt::Channels => 4,
            SizeOpt::Image => 8,
            SizeOpt::Classes => 4,
            SizeOpt::Vocab => 11,
        };
        o.set(opt, Some(v));
    }
    o
}

#[test]
fn every_reported_statistic_is_declared() {
    let pipelines = [
        "autodiff,canonicalize,cse,dce,inplace,sgd{lr=0.1},fuse,remat{mode=greedy},memplan",
        "autodiff,inplace,remat{mode=sqrt},fuse,memplan{align=16}",
        "autodiff,remat{mode=log k=2},memplan",
        "autodiff,inplace,remat{mode=greedy device_budget=64GiB},memplan",
        "autodiff,canonicalize,cse,dce,sgd{momentum=0.9},remat{mode=optimal budget=1GiB},fuse,memplan",
        "autodiff{wrt=0},inplace{iter-limit=1},remat{mode=none}",
        "autodiff,inplace,adamw{lr=0.001 clip_norm=1},fuse,remat{mode=sqrt},memplan",
        "autocast{dtype=bf16},autodiff,inplace,fuse,remat{mode=sqrt},memplan",
    ];
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    let mut ran: BTreeSet<String> = BTreeSet::new();
    let mut problems = Vec::new();
    for kind in [ModelKind::Mlp, ModelKind::Resmlp, ModelKind::Lstm, ModelKind::Resnet, ModelKind::Transformer] {
        let m = generate(kind, &small(kind)).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        for p in pipelines {
            let mut pm = PassManager::parse(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            pm.run(&mut m.clone()).unwrap_or_else(|e| panic!("{kind:?}: {p}: {e}"));
            for u in pm.stats.undeclared() {
                problems.push(format!("{kind:?}, {p}: undeclared statistic {u}"));
            }
            for e in &pm.stats.entries {
                let base = e.name.split_once('[').map_or(e.name.as_str(), |(b, _)| b);
                seen.insert((e.pass.clone(), base.to_string()));
            }
            ran.extend(pm.stats.passes.iter().cloned());
            // Every line of the report carries the declared help.
            for line in pm.stats.render().lines().filter(|l| l.trim_start().starts_with("(S)")) {
                if !line.contains(" - ") {
                    problems.push(format!("{kind:?}, {p}: no help in '{line}'"));
                }
            }
        }
    }
    for p in registry() {
        if !ran.contains(p.name) {
            problems.push(format!("pass {} never ran in this test: add it to a pipeline", p.name));
        }
        for s in p.statistics {
            if !seen.contains(&(p.name.to_string(), s.name.to_string())) {
                problems.push(format!("{}: declared statistic '{}' was never reported", p.name, s.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
