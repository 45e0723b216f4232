//! `ckopt-opt`: parse ck IR, run a pass pipeline, verify, print (like mlir-opt).
//!
//! Thin: flags are parsed here, the work is `ckopt_tools::opt::run_opt`.
//! Exit status: 0 on success, 1 on any error (bad flag, unknown pass or
//! option, unreadable input, diagnostics, unmet expectations). Never panics.

use ckopt_passes::registry::list_passes;
use ckopt_tools::opt::{OptConfig, reports_json, run_opt};
use ckopt_tools::input::{read_source, write_text};
use clap::{ArgAction, CommandFactory, Parser};
use std::process::ExitCode;

/// Parse ck IR, run a pass pipeline, verify and print the result.
#[derive(Parser, Debug)]
#[command(name = "ckopt-opt", version, about, long_about = None)]
struct Cli {
    /// Input file (`-` for stdin).
    #[arg(default_value = "-", value_name = "FILE")]
    input: String,

    /// Comma-separated passes with options in braces, e.g.
    /// 'autodiff,remat{mode=greedy budget=48MiB},memplan' (MLIR's
    /// 'builtin.module(...)' anchors are accepted and ignored).
    #[arg(long = "pass-pipeline", value_name = "PIPELINE")]
    pass_pipeline: Option<String>,

    /// Output file for the IR (default: stdout).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<String>,

    /// Process each `// -----` separated case of the input on its own and join
    /// the outputs with `// -----`.
    #[arg(long)]
    split_input_file: bool,

    /// Check diagnostics against `// expected-error@+N {{...}}` (also `@-N`,
    /// same line, `expected-note`/`-warning`) comments instead of printing them;
    /// exit 0 when they match exactly.
    #[arg(long)]
    verify_diagnostics: bool,

    /// Verify the module after each pass (errors say "after pass X");
    /// `--verify-each=false` turns it off.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = ArgAction::Set,
          num_args = 0..=1, require_equals = true, default_missing_value = "true")]
    verify_each: bool,

    /// Print the module to stderr after every pass.
    #[arg(long)]
    print_ir_after_all: bool,

    /// Print the statistics each pass reported to stderr.
    #[arg(long)]
    pass_statistics: bool,

    /// Print the wall time of each pass to stderr.
    #[arg(long)]
    timing: bool,

    /// Write the memory report (docs/memory.md: a JSON array with one object per
    /// function, after the pipeline) to FILE, or to stdout after the IR for `-`.
    #[arg(long, value_name = "FILE|-")]
    memory_report: Option<String>,

    /// Draw live bytes over the schedule of every function after the
    /// pipeline (forward, backward and recompute in their own colours, y axis
    /// in MiB, temp peak marked) as an SVG picture in FILE.
    #[arg(long, value_name = "FILE.svg")]
    memory_timeline: Option<String>,

    /// Measure the memory/recompute trade-off of every gradient function
    /// after the pipeline: every plan remat can make (none, sqrt, log, the
    /// greedy search and its thresholds, optimal swept over budgets) and
    /// their Pareto front of (temp peak bytes, recompute flops), each point
    /// with the pass option text that reproduces it. FILE.svg draws it (MiB
    /// against forward passes of recompute); any other name (or `-`, stdout
    /// after the IR) gets the JSON of docs/memory.md.
    #[arg(long, value_name = "FILE.json|FILE.svg|-")]
    memory_curve: Option<String>,

    /// List the passes with their summary and options, then exit.
    #[arg(long)]
    list_passes: bool,
}

fn main() -> ExitCode {
    let cmd = Cli::command().after_long_help(format!("Passes (--list-passes):\n{}", indent(&list_passes())));
    let cli: Cli = match ckopt_tools::cli::parse(cmd) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match run(cli) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            to_stderr(&format!("ckopt-opt: error: {e:#}\n"));
            ExitCode::FAILURE
        }
    }
}

/// Writes to stderr, ignoring a closed pipe (`eprint!` would panic).
fn to_stderr(text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// Prints a write error; true when there was none.
fn report(r: Result<(), ckopt_tools::input::ToolError>) -> bool {
    match r {
        Ok(()) => true,
        Err(e) => {
            to_stderr(&e.render("ckopt-opt"));
            false
        }
    }
}

/// Returns Ok(false) when diagnostics were printed.
fn run(cli: Cli) -> anyhow::Result<bool> {
    if cli.list_passes {
        return Ok(report(write_text("-", &list_passes())));
    }
    let cfg = OptConfig {
        pipeline: cli.pass_pipeline.clone().unwrap_or_default(),
        split_input_file: cli.split_input_file,
        verify_diagnostics: cli.verify_diagnostics,
        verify_each: cli.verify_each,
        print_ir_after_all: cli.print_ir_after_all,
        pass_statistics: cli.pass_statistics,
        timing: cli.timing,
        memory_report: cli.memory_report.is_some(),
        memory_timeline: cli.memory_timeline.is_some(),
        memory_curve: cli.memory_curve.is_some(),
        // The process ends right after: leave the modules to the OS.
        free_modules: false,
    };
    // Reject a bad pipeline before touching the input.
    ckopt_passes::manager::parse_pipeline(&cfg.pipeline).map_err(|e| anyhow::anyhow!("{e}"))?;
    let src = match read_source(&cli.input) {
        Ok(s) => s,
        Err(e) => {
            to_stderr(&e.render("ckopt-opt"));
            return Ok(false);
        }
    };
    let out = run_opt(&cfg, &src).map_err(|e| anyhow::anyhow!("{e}"))?;
    to_stderr(&out.stderr);
    let mut ok = out.success && report(write_text(cli.output.as_deref().unwrap_or("-"), &out.output));
    if let Some(path) = cli.memory_report.as_deref() {
        ok &= report(write_text(path, &reports_json(&out.reports)));
    }
    if let (Some(path), Some(svg)) = (cli.memory_timeline.as_deref(), out.timeline_svg.as_ref()) {
        ok &= report(write_text(path, svg));
    }
    if let Some(path) = cli.memory_curve.as_deref() {
        use ckopt_passes::remat::curve::{curves_json, curves_svg};
        let text = if path.ends_with(".svg") { curves_svg(&out.curves) } else { curves_json(&out.curves) };
        ok &= report(write_text(path, &text));
    }
    Ok(ok)
}
