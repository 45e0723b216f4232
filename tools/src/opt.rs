//! The `ckopt-opt` driver: what mlir-opt does, for ck IR.
//!
//! For each case of the input (the whole file, or each `// -----` chunk with
//! `--split-input-file`): parse (locations are those of the whole file),
//! verify, run the pass pipeline (verifying after each pass unless
//! `verify_each` is off; errors say "after pass X"), then print the module.
//! Printed cases are joined by `// -----` lines, as mlir-opt does.
//!
//! With `verify_diagnostics`, the diagnostics a case produces are matched
//! against its `// expected-error@+N {{...}}` comments (`ckopt_ir::expect`)
//! instead of being printed; a case succeeds when they match exactly. A case
//! that fails does not stop the next ones; the run fails if any case failed.
//!
//! Invariants: never panics on any input; every failure yields rendered
//! diagnostics in `stderr` and `success == false`. Complexity: linear in the
//! input plus the passes' own cost.

use crate::input::Source;
use ckopt_ir::{Diags, Module, print_module, verify_module};
use ckopt_passes::analysis::{MemoryReport, module_report};
use ckopt_passes::manager::{OptionError, PassManager, parse_pipeline};

/// What to do (the flags of `ckopt-opt` that concern processing).
#[derive(Clone, Debug)]
pub struct OptConfig {
    /// `--pass-pipeline` text; empty runs no pass.
    pub pipeline: String,
    pub split_input_file: bool,
    pub verify_diagnostics: bool,
    pub verify_each: bool,
    pub print_ir_after_all: bool,
    pub pass_statistics: bool,
    pub timing: bool,
    /// Compute the memory report of every function after the pipeline.
    pub memory_report: bool,
    /// Draw the memory timeline SVG of every function after the pipeline.
    pub memory_timeline: bool,
    /// Measure the memory/recompute curve of every gradient function after the pipeline.
    pub memory_curve: bool,
    /// Free each module once printed (default). `ckopt-opt` exits right
    /// after and skips it: freeing a 1M-op module is millions of `free`s.
    pub free_modules: bool,
}

impl Default for OptConfig {
    fn default() -> Self {
        OptConfig {
            pipeline: String::new(),
            split_input_file: false,
            verify_diagnostics: false,
            verify_each: true,
            print_ir_after_all: false,
            pass_statistics: false,
            timing: false,
            memory_report: false,
            memory_timeline: false,
            memory_curve: false,
            free_modules: true,
        }
    }
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct OptOutput {
    /// The printed IR (for `-o` or stdout).
    pub output: String,
    /// Diagnostics, IR dumps, statistics and timing, in order.
    pub stderr: String,
    /// One report per function of every successfully processed case.
    pub reports: Vec<MemoryReport>,
    /// `--memory-timeline`: the SVG (one panel per function of every
    /// successfully processed case), when asked for.
    pub timeline_svg: Option<String>,
    /// `--memory-curve`: one curve per gradient function of every
    /// successfully processed case.
    pub curves: Vec<ckopt_passes::remat::curve::Curve>,
    pub success: bool,
}

/// The line that separates cases in input and output.
pub const SPLIT_MARKER: &str = "// -----";

/// Header of an `--print-ir-after-all` dump, as MLIR prints it.
pub fn dump_header(pass: &str) -> String {
    format!("// -----// IR Dump After {pass} //----- //\n")
}

/// Header of the dump of a pass that failed (or whose output did not verify).
pub fn dump_header_failed(pass: &str) -> String {
    format!("// -----// IR Dump After {pass} Failed //----- //\n")
}

/// Whether the printer can print `m` (every value id in range), which a
/// broken pass may not leave it in; such a module is not dumped.
fn printable(m: &Module) -> bool {
    m.funcs.iter().all(|f| {
        let ok = |v: ckopt_ir::ValueId| v.index() < f.values.len();
        f.params.iter().all(|p| ok(p.value)) && f.body.iter().all(|o| o.operands.iter().all(|&v| ok(v)) && o.result.is_none_or(ok))
    })
}

/// Runs the driver over `src`. `Err` is a pipeline error (unknown pass or
/// option, bad option value): a message that lists the valid names.
pub fn run_opt(cfg: &OptConfig, src: &Source) -> Result<OptOutput, OptionError> {
    // Validate the pipeline before reading any case, as mlir-opt does.
    let mut pm = PassManager::new(parse_pipeline(&cfg.pipeline)?);
    pm.verify_each = cfg.verify_each;
    let chunks: Vec<(String, u32)> = if cfg.split_input_file {
        ckopt_ir::split::split_input_file(&src.text)
    } else {
        vec![(src.text.clone(), 1)]
    };
    let mut out = OptOutput { success: true, ..OptOutput::default() };
    let mut timeline = ckopt_ir::Module::default();
    for (i, (chunk, first_line)) in chunks.iter().enumerate() {
        if i > 0 {
            out.output.push_str(SPLIT_MARKER);
            out.output.push('\n');
        }
        let mut dumps = String::new();
        let result = process_case(&mut pm, cfg, src, chunk, *first_line, &mut dumps);
        out.stderr.push_str(&dumps);
        let diags = match result {
            Ok(module) => {
                out.output.push_str(&print_module(&module));
                if cfg.memory_report {
                    out.reports.extend(module_report(&module));
                }
                if cfg.memory_timeline {
                    timeline.funcs.extend(module.funcs.iter().cloned());
                }
                if cfg.memory_curve {
                    out.curves.extend(ckopt_passes::remat::curve::module_curves(&module));
                }
                if !cfg.free_modules {
                    std::mem::forget(module);
                }
                Diags::new()
            }
            Err(d) => d,
        };
        if cfg.verify_diagnostics {
            let mismatch = ckopt_ir::expect::check_diagnostics(chunk, &src.name, *first_line, &diags.0);
            if !mismatch.is_empty() {
                out.stderr.push_str(&mismatch.render(Some(&src.text)));
                out.success = false;
            }
        } else if !diags.is_empty() {
            out.stderr.push_str(&diags.render(Some(&src.text)));
            out.success = false;
        }
    }
    if cfg.memory_timeline {
        out.timeline_svg = Some(ckopt_passes::analysis::memory_timeline_svg(&timeline));
    }
    if cfg.pass_statistics {
        out.stderr.push_str(&pm.stats.render());
    }
    if cfg.timing {
        out.stderr.push_str(&pm.render_timing());
    }
    Ok(out)
}

/// Parses, verifies and transforms one case.
fn process_case(
    pm: &mut PassManager,
    cfg: &OptConfig,
    src: &Source,
    chunk: &str,
    first_line: u32,
    dumps: &mut String,
) -> Result<Module, Diags> {
    let mut module = ckopt_ir::parse_module_at(chunk, &src.name, first_line)?;
    verify_module(&module)?;
    let print_after = cfg.print_ir_after_all;
    pm.run_observed(&mut module, |pass, m, failed| {
        if print_after && (!failed || printable(m)) {
            dumps.push_str(&if failed { dump_header_failed(pass) } else { dump_header(pass) });
            dumps.push_str(&print_module(m));
            dumps.push('\n');
        }
    })?;
    Ok(module)
}

/// The memory reports as a JSON array (the keys of docs/memory.md),
/// pretty-printed: the passes' one serializer of that schema.
pub use ckopt_passes::analysis::report::reports_json;

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn src(text: &str) -> Source {
        Source { name: Arc::from("t.ck"), text: text.to_string() }
    }

    const GOOD: &str = "module {\n  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {\n    %a = \"ck.exp\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n    %b = \"ck.neg\"(%x) : (tensor<2xf32>) -> tensor<2xf32>\n    \"ck.return\"(%a) : (tensor<2xf32>) -> ()\n  }\n}\n";

    /// A bad case fails the run but the cases after it still run and print;
    /// outputs are joined by the marker; reports come from good cases only.
    #[test]
    fn split_cases_are_independent() {
        let text = format!("{GOOD}// -----\nmodule {{ garbage\n// -----\n{GOOD}");
        let cfg = OptConfig { pipeline: "dce".into(), split_input_file: true, memory_report: true, ..OptConfig::default() };
        let out = run_opt(&cfg, &src(&text)).expect("pipeline parses");
        assert!(!out.success);
        assert_eq!(out.output.matches("func.func @f").count(), 2);
        assert_eq!(out.output.matches(SPLIT_MARKER).count(), 2);
        assert!(!out.output.contains("ck.neg"), "dce ran on every good case");
        assert!(out.stderr.starts_with("t.ck:9:"), "error located in the whole file: {}", out.stderr);
        assert_eq!(out.reports.len(), 2);
    }

    /// IR dumps come after each pass, in order, with MLIR's header.
    #[test]
    fn print_ir_after_all_dumps_each_pass() {
        let cfg = OptConfig { pipeline: "cse,dce".into(), print_ir_after_all: true, ..OptConfig::default() };
        let out = run_opt(&cfg, &src(GOOD)).expect("pipeline parses");
        assert!(out.success);
        let cse_at = out.stderr.find(&dump_header("cse")).expect("cse dump");
        let dce_at = out.stderr.find(&dump_header("dce")).expect("dce dump");
        assert!(cse_at < dce_at);
        assert!(out.stderr[cse_at..dce_at].contains("ck.neg"));
        assert!(!out.stderr[dce_at..].contains("ck.neg"));
    }

    /// A bad pipeline is rejected before any input is read.
    #[test]
    fn bad_pipeline_is_an_error() {
        let cfg = OptConfig { pipeline: "nope".into(), ..OptConfig::default() };
        let e = run_opt(&cfg, &src("not even ir")).expect_err("unknown pass");
        assert!(e.to_string().contains("unknown pass 'nope'"));
    }
}
