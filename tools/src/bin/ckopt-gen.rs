//! ckopt-gen: prints a benchmark model as ck IR.
//!
//! `ckopt-gen MODEL [--depth N] [--width N] [--batch N] [--seq N] [--heads N]
//! [--channels N] [--image N] [--classes N] [--vocab N] [-o FILE]`. The
//! module has one function `@MODEL(%x, %target, params... {ck.param}) ->
//! tensor<f32>` (gpt: `@gpt(%ids, %labels, params...)`, i64 token ids and
//! labels) returning the loss. The models live in `ckopt-models`; this is only
//! argument parsing and printing. Bad options: a message on stderr and exit
//! code 1 (never a panic); `--help` exits 0.

use ckopt_models::{GenOptions, ModelKind, SizeOpt, generate, help_text};
use clap::{CommandFactory, Parser};
use std::process::ExitCode;

/// Prints one of ckopt's benchmark models as ck IR (MLIR generic syntax).
#[derive(Parser, Debug)]
#[command(name = "ckopt-gen", version)]
struct Cli {
    /// The model: mlp, resmlp, lstm, resnet, transformer or gpt.
    model: ModelKind,
    /// Blocks / layers (all models; lstm: stacked layers).
    #[arg(long)]
    depth: Option<u64>,
    /// Feature width (mlp, resmlp, lstm hidden size, transformer and gpt d_model).
    #[arg(long)]
    width: Option<u64>,
    /// Batch size (all models).
    #[arg(long)]
    batch: Option<u64>,
    /// Sequence length / time steps (lstm, transformer, gpt).
    #[arg(long)]
    seq: Option<u64>,
    /// Attention heads; must divide --width (transformer, gpt).
    #[arg(long)]
    heads: Option<u64>,
    /// Convolution channels (resnet).
    #[arg(long)]
    channels: Option<u64>,
    /// Input image height = width in pixels, >= 2 (resnet).
    #[arg(long)]
    image: Option<u64>,
    /// Number of classes of the classifier head (resnet).
    #[arg(long)]
    classes: Option<u64>,
    /// Vocabulary size: token ids and labels lie in [0, vocab) (gpt).
    #[arg(long)]
    vocab: Option<u64>,
    /// Write the IR to FILE instead of stdout (`-` means stdout).
    #[arg(short = 'o', value_name = "FILE")]
    output: Option<String>,
}

fn run(cli: &Cli) -> Result<(), String> {
    let mut opts = GenOptions::default();
    let given = [
        (SizeOpt::Depth, cli.depth),
        (SizeOpt::Width, cli.width),
        (SizeOpt::Batch, cli.batch),
        (SizeOpt::Seq, cli.seq),
        (SizeOpt::Heads, cli.heads),
        (SizeOpt::Channels, cli.channels),
        (SizeOpt::Image, cli.image),
        (SizeOpt::Classes, cli.classes),
        (SizeOpt::Vocab, cli.vocab),
    ];
    for (o, v) in given {
        opts.set(o, v);
    }
    let module = generate(cli.model, &opts)?;
    let text = ckopt_ir::print_module(&module);
    match &cli.output {
        Some(path) if path != "-" => std::fs::write(path, text).map_err(|e| format!("cannot write '{path}': {e}")),
        _ => {
            ckopt_tools::input::write_stdout(&text).map_err(|e| format!("cannot write to stdout: {e}"))
        }
    }
}

fn main() -> ExitCode {
    let cmd = Cli::command().after_help(help_text());
    let cli: Cli = match ckopt_tools::cli::parse(cmd) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ckopt-gen: error: {e}");
            ExitCode::FAILURE
        }
    }
}
