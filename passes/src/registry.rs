//! The one list of passes: name, summary, options, constructor.
//! It drives `--list-passes`, pipeline parsing and the unknown-name error.
//! Adding a pass = one entry here.

use crate::manager::{Pass, PassOptions};

/// One option of a pass, for `--list-passes` and validation.
#[derive(Clone, Copy, Debug)]
pub struct OptionInfo {
    pub name: &'static str,
    pub help: &'static str,
    pub default: &'static str,
}

pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionInfo],
    pub build: fn(&PassOptions) -> Result<Box<dyn Pass>, String>,
}

pub fn registry() -> &'static [PassInfo] {
    REGISTRY
}

static REGISTRY: &[PassInfo] = &[
    // One entry per pass, in alphabetical order.
    PassInfo {
        name: "autodiff",
        summary: "adds @NAME_grad returning (loss, d loss/d each wrt argument) for functions whose first result is a scalar loss",
        options: &[
            OptionInfo {
                name: "wrt",
                help: "arguments to differentiate: all (the {ck.param} ones, every argument if none is marked) or indices I,J,..",
                default: "all",
            },
            OptionInfo { name: "func", help: "only this function (default: every function returning a scalar loss first)", default: "" },
        ],
        build: crate::autodiff::build,
    },
    PassInfo {
        name: "canonicalize",
        summary: "exact local folds: scale by 1, neg(neg x), identity reshape/transpose/slice/broadcast/reduce/concat, dropout with rate 0, transpose∘transpose and reshape∘reshape merged; erases dead ops",
        options: &[],
        build: crate::canonicalize::build,
    },
    PassInfo {
        name: "cse",
        summary: "merges ops with equal kind, operands, attributes and result type (never ck.inplace/ck.offset ops; ck.recompute only with ck.recompute)",
        options: &[],
        build: crate::cse::build,
    },
    PassInfo {
        name: "dce",
        summary: "removes ops whose results the function's return does not need",
        options: &[],
        build: crate::dce::build,
    },
    PassInfo {
        name: "fuse",
        summary: "groups ops into kernels (ck.fusion): elemental chains become one loop, a reduction absorbs the elemental ops feeding it and those on its result; values inside a group are never stored",
        options: &[],
        build: crate::fuse::build,
    },
    PassInfo {
        name: "inplace",
        summary: "egg equality saturation: safe algebraic simplifications and in-place forms (ck.inplace) for ops whose operand dies there; never overwrites a buffer that is read later",
        options: &[
            OptionInfo { name: "node-limit", help: "stop saturating at this many e-nodes", default: "2000000" },
            OptionInfo { name: "iter-limit", help: "stop saturating after this many iterations", default: "10" },
            OptionInfo { name: "time-limit-ms", help: "stop saturating after this many milliseconds (a safety net: machine-dependent, unlike the other two)", default: "60000" },
        ],
        build: crate::inplace::build,
    },
    PassInfo {
        name: "memplan",
        summary: "liveness-based static allocation of every stored value into one arena (best-fit, largest first); writes ck.offset and ck.arena_bytes; the plan is proven by the memplan checker (check=true)",
        options: &[
            OptionInfo { name: "align", help: "alignment of every value in the arena, in bytes (a power of two)", default: "64" },
            OptionInfo { name: "check", help: "prove every plan with the independent memplan checker (always on in debug builds)", default: "true" },
        ],
        build: crate::memplan::build,
    },
    PassInfo {
        name: "remat",
        summary: "rematerialization: drop forward values the backward reads and recompute them (ck.recompute) to fit a memory budget; never chooses a plan that recomputes without lowering the peak (or without a limit needing it)",
        options: &[
            OptionInfo { name: "mode", help: "none | sqrt (~sqrt(n) segments) | greedy (paper Algorithm 2) | log (recursive, O(log n) memory) | optimal (least recompute within budget)", default: "sqrt" },
            OptionInfo { name: "budget", help: "temp_peak_bytes limit (B, KiB, MiB, GiB; > 0); optimal needs it or device_budget; an infeasible budget is an error naming the smallest feasible one", default: "none" },
            OptionInfo { name: "device_budget", help: "limit on device_bytes = argument bytes (parameters, inputs, optimizer state) + arena after memplan; an infeasible one is an error naming the smallest feasible total", default: "none" },
            OptionInfo { name: "align", help: "the arena alignment device_budget is measured with (memplan's align; a power of two)", default: "64" },
            OptionInfo { name: "search", help: "greedy: run the budget search (no remat, mirror, B=0 and B=sqrt(x*y)*2^(i/2), i=-6..6), keep the best measured plan", default: "true" },
            OptionInfo { name: "threshold", help: "greedy with search=false: the threshold B (default: budget, else sqrt(x*y))", default: "none" },
            OptionInfo { name: "k", help: "log: boundaries kept per recursion level (fan-out)", default: "1" },
        ],
        build: crate::remat::build,
    },
    PassInfo {
        name: "sgd",
        summary: "adds @NAME_step: the loss and the SGD-updated parameters written into the parameters' own (donated) buffers, each updated as soon as its gradient is final",
        options: &[
            OptionInfo { name: "lr", help: "learning rate (> 0)", default: "0.01" },
            OptionInfo { name: "momentum", help: "momentum in [0, 1): v = momentum*v + g; p -= lr*v (0: plain SGD, no state)", default: "0" },
            OptionInfo { name: "func", help: "only this loss function (default: every @NAME with an @NAME_grad)", default: "" },
        ],
        build: crate::sgd::build,
    },
];

/// `--list-passes` text.
pub fn list_passes() -> String {
    let mut out = String::new();
    for p in registry() {
        out.push_str(&format!("{}: {}\n", p.name, p.summary));
        for o in p.options {
            out.push_str(&format!("    {}={} : {}\n", o.name, o.default, o.help));
        }
    }
    out
}
