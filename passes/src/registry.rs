//! The one list of passes, one declarative record per pass (as MLIR's
//! `Passes.td`): name, summary, options (each with its kind, its default
//! and its help), the statistics it reports, constructor.
//!
//! The record is the only place a default is written: passes read their
//! options through `PassOptions`' typed getters (`int`, `flag`, `number`,
//! `bytes`, `choice`, `func_name`, `indices`), which fall back to the
//! record's default, and the `Default` impls of the option structs parse an
//! empty `PassOptions` of their pass. The registry drives `--list-passes`,
//! pipeline parsing (unknown names, option values checked against their
//! kind), the help text of `--pass-statistics`, and the docs check
//! (`passes/tests/docs.rs`). Adding a pass = one entry here.

use crate::manager::{OptionError, Pass, PassOptions, parse_bytes};
use std::fmt;

/// What values an option takes; `OptionKind::parse` checks a value once, at
/// pipeline parse, and converts it for the getters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptionKind {
    /// `true`/`false`/`1`/`0`; a bare key means `true`.
    Bool,
    /// A non-negative decimal integer, at least `min`.
    Int { min: u64 },
    /// A non-negative decimal integer that is a power of two.
    PowerOfTwo,
    /// A finite number within the bounds.
    Number { min: Bound, max: Bound },
    /// A byte count with an optional unit (`parse_bytes`); "" default = unset.
    Bytes,
    /// One of these words.
    Choice(&'static [&'static str]),
    /// A function name, `@` optional; "" default = unset (every function).
    FuncName,
    /// `all` or a list of argument indices `I,J,..` (0-based).
    Indices,
}

/// One end of a `Number` option's range.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    Unbounded,
    Closed(f64),
    Open(f64),
}

/// A value as its kind reads it.
#[derive(Clone, Debug, PartialEq)]
pub enum OptionValue {
    Bool(bool),
    Int(u64),
    Number(f64),
    Bytes(u64),
    Choice(&'static str),
    Func(String),
    /// `all` of an `Indices` option.
    All,
    Indices(Vec<usize>),
}

fn join_or(words: &[&str]) -> String {
    match words {
        [] => String::new(),
        [one] => one.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

impl OptionKind {
    /// Parses `value` of option `option` of pass `pass`; the error is the
    /// pipeline parser's ("option 'k' of pass 'remat' must be at least 1").
    pub fn parse(&self, pass: &str, option: &str, value: &str) -> Result<OptionValue, OptionError> {
        let bad = |problem: String| OptionError::BadValue { pass: pass.to_string(), key: option.to_string(), problem };
        let uint = |v: &str| v.parse::<u64>().map_err(|_| bad(format!("expects a non-negative integer, got '{v}'")));
        Ok(match *self {
            OptionKind::Bool => match value {
                "true" | "1" => OptionValue::Bool(true),
                "false" | "0" => OptionValue::Bool(false),
                v => return Err(bad(format!("expects true or false, got '{v}'"))),
            },
            OptionKind::Int { min } => {
                let n = uint(value)?;
                if n < min {
                    return Err(bad(format!("must be at least {min}")));
                }
                OptionValue::Int(n)
            }
            OptionKind::PowerOfTwo => {
                let n = uint(value)?;
                if !n.is_power_of_two() {
                    return Err(bad(format!("must be a power of two, got {n}")));
                }
                OptionValue::Int(n)
            }
            OptionKind::Number { min, max } => {
                let x: f64 = value.trim().parse().map_err(|_| bad(format!("expects a number, got '{value}'")))?;
                let above = match min {
                    Bound::Unbounded => true,
                    Bound::Closed(a) => x >= a,
                    Bound::Open(a) => x > a,
                };
                let below = match max {
                    Bound::Unbounded => true,
                    Bound::Closed(b) => x <= b,
                    Bound::Open(b) => x < b,
                };
                if !(x.is_finite() && above && below) {
                    return Err(bad(format!("must be {}, got {x}", self.number_range())));
                }
                OptionValue::Number(x)
            }
            OptionKind::Bytes => OptionValue::Bytes(parse_bytes(value).map_err(|source| OptionError::BadBytes {
                pass: pass.to_string(),
                key: option.to_string(),
                source,
            })?),
            OptionKind::Choice(words) => match words.iter().find(|w| **w == value) {
                Some(w) => OptionValue::Choice(w),
                None => return Err(bad(format!("must be {}, got '{value}'", join_or(words)))),
            },
            OptionKind::FuncName => {
                let name = value.trim_start_matches('@');
                if name.is_empty() {
                    return Err(bad("is empty".into()));
                }
                OptionValue::Func(name.to_string())
            }
            OptionKind::Indices => {
                if value == "all" {
                    return Ok(OptionValue::All);
                }
                let mut v = Vec::new();
                for item in value.split([',', ' ', ':']).filter(|s| !s.is_empty()) {
                    v.push(
                        item.trim()
                            .parse::<usize>()
                            .map_err(|_| bad(format!("expects 'all' or argument indices like 0,2; got '{value}'")))?,
                    );
                }
                if v.is_empty() {
                    return Err(bad("is empty".into()));
                }
                OptionValue::Indices(v)
            }
        })
    }

    /// `a positive number`, `in [0, 1)`, ... (for errors).
    fn number_range(&self) -> String {
        let OptionKind::Number { min, max } = *self else { return String::new() };
        match (min, max) {
            (Bound::Unbounded, Bound::Unbounded) => "a finite number".into(),
            (Bound::Open(a), Bound::Unbounded) => {
                if a == 0.0 { "a positive number".into() } else { format!("a number > {a}") }
            }
            (Bound::Closed(a), Bound::Unbounded) => {
                if a == 0.0 { "a non-negative number".into() } else { format!("a number >= {a}") }
            }
            (Bound::Unbounded, Bound::Open(b)) => format!("a number < {b}"),
            (Bound::Unbounded, Bound::Closed(b)) => format!("a number <= {b}"),
            (lo, hi) => {
                let (l, a) = match lo {
                    Bound::Closed(a) => ('[', a),
                    Bound::Open(a) => ('(', a),
                    Bound::Unbounded => ('(', f64::NEG_INFINITY),
                };
                let (h, b) = match hi {
                    Bound::Closed(b) => (']', b),
                    Bound::Open(b) => (')', b),
                    Bound::Unbounded => (')', f64::INFINITY),
                };
                format!("in {l}{a}, {b}{h}")
            }
        }
    }
}

/// The kind as `--list-passes` and docs/passes.md show it:
/// `bool`, `int`, `int >= 1`, `power of two`, `number > 0`,
/// `number in [0, 1)`, `bytes`, `none, sqrt, .. or optimal`, `function`,
/// `all or I,J,..` (no `|`, so it fits in a markdown table).
impl fmt::Display for OptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            OptionKind::Bool => write!(f, "bool"),
            OptionKind::Int { min: 0 } => write!(f, "int"),
            OptionKind::Int { min } => write!(f, "int >= {min}"),
            OptionKind::PowerOfTwo => write!(f, "power of two"),
            OptionKind::Number { .. } => {
                let r = self.number_range();
                match r.strip_prefix("a ") {
                    Some("positive number") => write!(f, "number > 0"),
                    Some("non-negative number") => write!(f, "number >= 0"),
                    Some(rest) => write!(f, "{rest}"),
                    None => write!(f, "number {r}"),
                }
            }
            OptionKind::Bytes => write!(f, "bytes"),
            OptionKind::Choice(words) => write!(f, "{}", join_or(words)),
            OptionKind::FuncName => write!(f, "function"),
            OptionKind::Indices => write!(f, "all or I,J,.."),
        }
    }
}

/// One option of a pass.
#[derive(Clone, Copy, Debug)]
pub struct OptionInfo {
    pub name: &'static str,
    pub kind: OptionKind,
    /// The default, as it would be written in a pipeline; "" = unset.
    pub default: &'static str,
    pub help: &'static str,
}

/// One statistic a pass reports (`--pass-statistics`). Names are
/// kebab-case; a statistic of one function is shown with the function as
/// its scope (`@f temp-peak-bytes-before`), and a name may carry a
/// qualifier in brackets (`rewrite-applied[mul-one]`) that is not part of
/// the declared name.
#[derive(Clone, Copy, Debug)]
pub struct StatInfo {
    pub name: &'static str,
    pub help: &'static str,
}

pub struct PassInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub options: &'static [OptionInfo],
    pub statistics: &'static [StatInfo],
    pub build: fn(&PassOptions) -> Result<Box<dyn Pass>, OptionError>,
}

impl PassInfo {
    pub fn option(&self, name: &str) -> Option<&OptionInfo> {
        self.options.iter().find(|o| o.name == name)
    }
    /// The declared statistic `name` (a `[qualifier]` suffix ignored).
    pub fn statistic(&self, name: &str) -> Option<&StatInfo> {
        let base = name.split_once('[').map_or(name, |(b, _)| b);
        self.statistics.iter().find(|s| s.name == base)
    }
}

pub fn registry() -> &'static [PassInfo] {
    REGISTRY
}

/// The record of pass `name`.
pub fn pass_info(name: &str) -> Option<&'static PassInfo> {
    REGISTRY.iter().find(|p| p.name == name)
}

const fn opt(name: &'static str, kind: OptionKind, default: &'static str, help: &'static str) -> OptionInfo {
    OptionInfo { name, kind, default, help }
}

const fn stat(name: &'static str, help: &'static str) -> StatInfo {
    StatInfo { name, help }
}

use OptionKind::*;

static REGISTRY: &[PassInfo] = &[
    // One entry per pass, in alphabetical order.
    PassInfo {
        name: "adamw",
        summary: "adds @NAME_step: the loss and the AdamW-updated parameters (PyTorch's AdamW, decoupled weight decay) with both moments as donated ck.opt_state arguments, each parameter updated as soon as its gradient is final; every hyperparameter is a ck.hyper input (these options are its default)",
        options: &[
            opt("lr", Number { min: Bound::Open(0.0), max: Bound::Unbounded }, "0.001", "learning rate"),
            opt("beta1", Number { min: Bound::Closed(0.0), max: Bound::Open(1.0) }, "0.9", "first-moment decay"),
            opt("beta2", Number { min: Bound::Closed(0.0), max: Bound::Open(1.0) }, "0.999", "second-moment decay"),
            opt("eps", Number { min: Bound::Open(0.0), max: Bound::Unbounded }, "1e-8", "added to sqrt(v_hat)"),
            opt("weight_decay", Number { min: Bound::Closed(0.0), max: Bound::Unbounded }, "0.01", "decoupled weight decay: p *= 1 - lr*weight_decay"),
            opt("clip_norm", Number { min: Bound::Closed(0.0), max: Bound::Unbounded }, "0", "global-norm gradient clipping: g *= C/max(||g||, C) before the updates (0: none)"),
            opt("func", FuncName, "", "only this loss function (default: every @NAME with an @NAME_grad)"),
        ],
        statistics: &[stat("step-functions-added", "@NAME_step functions added")],
        build: crate::sgd::build_adamw,
    },
    PassInfo {
        name: "autocast",
        summary: "mixed precision by PyTorch autocast's lists: matmul/conv in the low type, exp/log/rsqrt/reduce_sum/cross_entropy in f32, other ops in their operands' type; parameters stay f32 (casts marked ck.mirror); run before autodiff",
        options: &[
            opt("dtype", Choice(&["bf16", "f16"]), "bf16", "the low-precision type"),
            opt("func", FuncName, "", "only this function (default: every function)"),
        ],
        statistics: &[
            stat("ops-low", "ops that now compute in the low type"),
            stat("casts-inserted", "ck.cast ops inserted"),
        ],
        build: crate::autocast::build,
    },
    PassInfo {
        name: "autodiff",
        summary: "adds @NAME_grad returning (loss, d loss/d each wrt argument) for functions whose first result is a scalar loss",
        options: &[
            opt("wrt", Indices, "all", "arguments to differentiate: all (the {ck.param} ones, every argument if none is marked) or indices I,J,.."),
            opt("func", FuncName, "", "only this function (default: every function returning a scalar loss first)"),
            opt("rebroadcast", Bool, "false", "backward reads of a forward broadcast read a fresh broadcast of its operand (the backward keeps the smaller operand)"),
        ],
        statistics: &[
            stat("gradient-functions-created", "@NAME_grad functions added"),
            stat("forward-ops-kept", "forward ops copied into the gradient functions"),
            stat("backward-ops-emitted", "backward ops added to the gradient functions"),
        ],
        build: crate::autodiff::build,
    },
    PassInfo {
        name: "canonicalize",
        summary: "exact local folds: scale by 1, neg(neg x), identity reshape/transpose/slice/broadcast/reduce/concat, dropout with rate 0, transpose∘transpose and reshape∘reshape merged; erases dead ops",
        options: &[],
        statistics: &[
            stat("num-folded", "ops replaced by an existing value"),
            stat("num-rewritten", "ops rewritten into a simpler op"),
            stat("num-erased", "dead ops erased"),
        ],
        build: crate::canonicalize::build,
    },
    PassInfo {
        name: "cse",
        summary: "merges ops with equal kind, operands, attributes and result type (never ck.inplace/ck.offset ops; ck.recompute only with ck.recompute)",
        options: &[],
        statistics: &[stat("num-cse'd", "ops merged into an identical earlier op")],
        build: crate::cse::build,
    },
    PassInfo {
        name: "dce",
        summary: "removes ops whose results the function's return does not need",
        options: &[],
        statistics: &[stat("num-dce'd", "ops removed")],
        build: crate::dce::build,
    },
    PassInfo {
        name: "fuse",
        summary: "groups ops into kernels (ck.fusion): elemental chains become one loop, a reduction absorbs the elemental ops feeding it and those on its result; values inside a group are never stored",
        options: &[],
        statistics: &[
            stat("kernels-before", "kernels (ops) before fusion"),
            stat("kernels-after", "kernels after fusion (a group is one)"),
            stat("fusion-groups", "fusion groups formed"),
            stat("values-not-materialized", "values internal to a group, never stored"),
            stat("bytes-not-materialized", "bytes of the values never stored"),
            stat("inplace-marks-dropped", "in-place marks a group made unsafe, removed"),
        ],
        build: crate::fuse::build,
    },
    PassInfo {
        name: "inplace",
        summary: "egg equality saturation: safe algebraic simplifications and in-place forms (ck.inplace) for ops whose operand dies there; never overwrites a buffer that is read later",
        options: &[
            opt("node-limit", Int { min: 0 }, "2000000", "stop saturating at this many e-nodes"),
            opt("iter-limit", Int { min: 0 }, "10", "stop saturating after this many iterations"),
            opt("time-limit-ms", Int { min: 0 }, "60000", "stop saturating after this many milliseconds (a safety net: machine-dependent, unlike the other two)"),
        ],
        statistics: &[
            stat("e-graph-stop-reason", "why saturation stopped (saturated, or the limit hit)"),
            stat("e-graph-iterations", "saturation iterations run"),
            stat("e-nodes", "e-nodes in the e-graph at the end"),
            stat("e-classes", "e-classes in the e-graph at the end"),
            stat("rewrite-applied", "times a rewrite rule (in brackets) was applied"),
            stat("ops-simplified-away", "ops removed by the simplifications"),
            stat("ops-replaced", "ops replaced by simpler ones"),
            stat("ops-in-place", "ops marked ck.inplace"),
            stat("inplace-forms-refused", "in-place forms the extraction chose that the side condition refused"),
        ],
        build: crate::inplace::build,
    },
    PassInfo {
        name: "memplan",
        summary: "liveness-based static allocation of every stored value into one arena (best-fit, largest first); writes ck.offset and ck.arena_bytes; the plan is proven by the memplan checker (check=true)",
        options: &[
            opt("align", PowerOfTwo, "64", "alignment of every value in the arena, in bytes"),
            opt("check", Bool, "true", "prove every plan with the independent memplan checker (always on in debug builds)"),
        ],
        statistics: &[
            stat("arena-bytes", "arena size of the plan (best-fit, largest first)"),
            stat("first-fit-arena-bytes", "arena size of a first-fit in schedule order on the same buffers (baseline)"),
            stat("live-peak-bytes", "peak of the bytes live at once"),
            stat("buffers-placed", "buffers placed in the arena"),
            stat("values-placed", "values given a ck.offset"),
        ],
        build: crate::memplan::build,
    },
    PassInfo {
        name: "remat",
        summary: "rematerialization: drop forward values the backward reads and recompute them (ck.recompute) to fit a memory budget; never chooses a plan that recomputes without lowering the peak (or without a limit needing it)",
        options: &[
            opt("mode", Choice(&["none", "sqrt", "greedy", "log", "optimal"]), "sqrt", "the plan: sqrt (~sqrt(n) segments), greedy (paper Algorithm 2), log (recursive, O(log n) memory), optimal (least recompute within budget), none"),
            opt("budget", Bytes, "", "temp_peak_bytes limit (> 0); optimal needs it or device_budget; an infeasible budget is an error naming the smallest feasible one"),
            opt("device_budget", Bytes, "", "limit on device_bytes = argument bytes (parameters, inputs, optimizer state) + arena after memplan (> 0); an infeasible one is an error naming the smallest feasible total"),
            opt("align", PowerOfTwo, "64", "the arena alignment device_budget is measured with (memplan's align)"),
            opt("search", Bool, "true", "greedy: run the budget search (no remat, mirror, B=0 and B=sqrt(x*y)*2^(i/2), i=-6..6), keep the best measured plan"),
            opt("threshold", Bytes, "", "greedy with search=false: the threshold B (default: budget, else sqrt(x*y))"),
            opt("k", Int { min: 1 }, "1", "log: boundaries kept per recursion level (fan-out)"),
            opt("min_gain", Number { min: Bound::Closed(0.0), max: Bound::Open(1.0) }, "0.01", "without budget/device_budget: a plan must lower no remat's temp peak by at least this fraction of it (and by at least align bytes) to be worth its recompute"),
            opt("func", FuncName, "", "only this function (default: every function with a backward)"),
            opt("time_limit", Number { min: Bound::Open(0.0), max: Bound::Unbounded }, "10", "seconds the MILP planner (HiGHS) may search per function, on graphs that are not chains with 9 to 48 values in play"),
        ],
        statistics: &[
            stat("plan", "the plan chosen"),
            stat("stages", "stages the forward was split into (at its cuts)"),
            stat("plans-measured", "candidate plans measured"),
            stat("temp-peak-bytes-before", "temp peak before the rewrite"),
            stat("temp-peak-bytes-after", "temp peak after the rewrite"),
            stat("recomputed-ops", "ops recomputed (ck.recompute clones)"),
            stat("recompute-flops", "flops of the recomputed ops"),
            stat("on-demand-recomputations", "values recomputed on demand, right before their first backward use"),
            stat("inplace-marks-dropped", "in-place marks made illegal by a new reader, removed"),
            stat("inplace-marks-added", "in-place marks added to recompute clones"),
            stat("device-bytes", "device_bytes of the chosen plan (with device_budget)"),
            stat("milp-status", "when the MILP planner ran: optimal, time-limit or infeasible (no keep set fits)"),
            stat("milp-gap", "when the MILP planner ran: (best plan found - lower bound) / best plan, in recompute flops"),
            stat("milp-solves", "when the MILP planner ran: HiGHS solves (one per keep set measured, plus the last)"),
            stat("milp-rejected", "when the MILP planner ran: keep sets it proposed whose measured peak was over the budget"),
        ],
        build: crate::remat::build,
    },
    PassInfo {
        name: "sgd",
        summary: "adds @NAME_step: the loss and the SGD-updated parameters written into the parameters' own (donated) buffers, each updated as soon as its gradient is final; lr and momentum are ck.hyper inputs (these options are their defaults)",
        options: &[
            opt("lr", Number { min: Bound::Open(0.0), max: Bound::Unbounded }, "0.01", "learning rate"),
            opt("momentum", Number { min: Bound::Closed(0.0), max: Bound::Open(1.0) }, "0", "v = momentum*v + g; p -= lr*v (0: plain SGD, no state)"),
            opt("clip_norm", Number { min: Bound::Closed(0.0), max: Bound::Unbounded }, "0", "global-norm gradient clipping: g *= C/max(||g||, C) before the updates (0: none)"),
            opt("func", FuncName, "", "only this loss function (default: every @NAME with an @NAME_grad)"),
        ],
        statistics: &[stat("step-functions-added", "@NAME_step functions added")],
        build: crate::sgd::build,
    },
];

/// `--list-passes` text: each pass with its summary, then each option as
/// `name=default (kind) : help`.
pub fn list_passes() -> String {
    let mut out = String::new();
    for p in registry() {
        out.push_str(&format!("{}: {}\n", p.name, p.summary));
        for o in p.options {
            out.push_str(&format!("    {}={} ({}) : {}\n", o.name, o.default, o.kind, o.help));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every default parses with its option's kind ("" only where unset is allowed).
    #[test]
    fn defaults_parse_with_their_kind() {
        for p in registry() {
            for o in p.options {
                if o.default.is_empty() {
                    assert!(matches!(o.kind, Bytes | FuncName), "{}.{}: only bytes and function options may be unset", p.name, o.name);
                } else if let Err(e) = o.kind.parse(p.name, o.name, o.default) {
                    panic!("default of {}.{}: {e}", p.name, o.name);
                }
            }
        }
    }

    /// Names are unique and statistics kebab-case (MLIR's `num-cse'd` kept).
    #[test]
    fn names_are_unique_and_kebab_case() {
        let kebab = |s: &str| {
            !s.is_empty()
                && s.split('-').all(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '\''))
        };
        for (i, p) in registry().iter().enumerate() {
            assert!(registry()[..i].iter().all(|q| q.name != p.name), "pass {} twice", p.name);
            assert!(i == 0 || registry()[i - 1].name < p.name, "registry not in alphabetical order at {}", p.name);
            for (j, o) in p.options.iter().enumerate() {
                assert!(p.options[..j].iter().all(|q| q.name != o.name), "{}: option {} twice", p.name, o.name);
            }
            for (j, s) in p.statistics.iter().enumerate() {
                assert!(kebab(s.name), "{}: statistic '{}' is not kebab-case", p.name, s.name);
                assert!(p.statistics[..j].iter().all(|q| q.name != s.name), "{}: statistic {} twice", p.name, s.name);
                assert!(!s.help.is_empty(), "{}: statistic {} has no help", p.name, s.name);
            }
        }
    }

    #[test]
    fn kinds_check_and_show_values() {
        let k = Int { min: 1 };
        assert_eq!(k.parse("remat", "k", "0").map_err(|e| e.to_string()), Err("option 'k' of pass 'remat' must be at least 1".into()));
        assert_eq!(k.parse("remat", "k", "3"), Ok(OptionValue::Int(3)));
        assert_eq!(PowerOfTwo.parse("memplan", "align", "48").map_err(|e| e.to_string()), Err("option 'align' of pass 'memplan' must be a power of two, got 48".into()));
        let lr = Number { min: Bound::Open(0.0), max: Bound::Unbounded };
        assert_eq!(lr.parse("sgd", "lr", "-1").map_err(|e| e.to_string()), Err("option 'lr' of pass 'sgd' must be a positive number, got -1".into()));
        assert_eq!(lr.to_string(), "number > 0");
        let m = Number { min: Bound::Closed(0.0), max: Bound::Open(1.0) };
        assert_eq!(m.parse("sgd", "momentum", "1").map_err(|e| e.to_string()), Err("option 'momentum' of pass 'sgd' must be in [0, 1), got 1".into()));
        assert!(m.parse("sgd", "momentum", "nan").is_err());
        assert_eq!(m.to_string(), "number in [0, 1)");
        let c = Choice(&["a", "b", "c"]);
        assert_eq!(c.parse("p", "mode", "d").map_err(|e| e.to_string()), Err("option 'mode' of pass 'p' must be a, b or c, got 'd'".into()));
        assert_eq!(c.to_string(), "a, b or c");
        assert_eq!(Indices.parse("autodiff", "wrt", "0,2"), Ok(OptionValue::Indices(vec![0, 2])));
        assert_eq!(Indices.parse("autodiff", "wrt", "all"), Ok(OptionValue::All));
        assert_eq!(FuncName.parse("sgd", "func", "@f"), Ok(OptionValue::Func("f".into())));
        assert!(FuncName.parse("sgd", "func", "").is_err());
        assert_eq!(Bytes.parse("remat", "budget", "1KiB"), Ok(OptionValue::Bytes(1024)));
    }

    #[test]
    fn list_passes_shows_default_kind_and_help() {
        let l = list_passes();
        assert!(l.contains("\n    k=1 (int >= 1) : log: boundaries"), "{l}");
        assert!(l.contains("\n    mode=sqrt (none, sqrt, greedy, log or optimal) : "), "{l}");
        assert!(l.contains("\n    budget= (bytes) : "), "{l}");
    }
}
