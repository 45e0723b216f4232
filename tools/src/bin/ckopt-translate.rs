//! ckopt-translate: a planned ck module to upstream MLIR, LLVM IR or PTX,
//! and ONNX models to ck (like mlir-translate's import and export).
//!
//! `ckopt-translate --from=onnx MODEL.onnx [--loss=none|mse|cross-entropy]
//! [--batch=N] [--name=NAME] [-o OUT.ck] [--params-out=PARAMS.safetensors]`
//! imports an ONNX model (`ckopt_onnx`): one function, initializers as
//! `{ck.param}` arguments named by `ck.name`, their values written to
//! `--params-out`.
//!
//! `ckopt-translate [FILE|-] --to=mlir|llvm|ptx [--target=cpu|cuda] [--sm=90]
//! [--libdevice=PATH] [-o FILE]`. Every function of the module is
//! translated; each must have been planned by memplan (`ck.offset`,
//! `ck.arena_bytes`), else an error names it. `--to=mlir` prints, for the
//! cpu backend, each function's step program (`//` comments: kernel calls
//! with their buffer slots, GEMM and convolution calls) and the module's
//! distinct kernels as one upstream-dialect module (scf/vector/memref/arith/
//! math), or, with `--target=cuda`, the gpu-dialect kernels; `--to=llvm` the
//! cpu kernels as LLVM IR after the step programs (`;` comments); `--to=ptx` one PTX module with every kernel,
//! preceded by the launch table (kernel, grid, block, arguments) as `//`
//! comment lines holding one JSON object. Errors: rendered diagnostics on
//! stderr, exit code 1.

use ckopt_ir::{Diags, parse_and_verify};
use clap::{CommandFactory, Parser, ValueEnum};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Clone, Copy, Debug, ValueEnum)]
enum To {
    /// Upstream MLIR dialects.
    Mlir,
    /// LLVM IR (the cpu backend's kernels).
    Llvm,
    /// NVPTX assembly with the launch table.
    Ptx,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum From {
    /// An ONNX model (ModelProto).
    Onnx,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum LossArg {
    /// Return the graph outputs.
    None,
    /// Mean squared error against a %target argument.
    Mse,
    /// Softmax cross-entropy of [N, C] logits against one-hot %labels.
    CrossEntropy,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Target {
    Cpu,
    Cuda,
}

/// Translates a planned ck module to MLIR, LLVM IR or PTX.
#[derive(Parser, Debug)]
#[command(name = "ckopt-translate", version)]
struct Cli {
    /// Input file (`-` = stdin).
    #[arg(default_value = "-")]
    input: String,
    /// Output form.
    #[arg(long, value_enum, required_unless_present = "from", conflicts_with = "from")]
    to: Option<To>,
    /// Import: the input is a model in this format (prints ck IR).
    #[arg(long, value_enum)]
    from: Option<From>,
    /// With --from=onnx: the loss the function returns.
    #[arg(long, value_enum, default_value = "none", requires = "from")]
    loss: LossArg,
    /// With --from=onnx: the size of the inputs' symbolic leading (batch) dimension.
    #[arg(long, value_name = "N", requires = "from")]
    batch: Option<u64>,
    /// With --from=onnx: the function name (default: the graph name).
    #[arg(long, value_name = "NAME", requires = "from")]
    name: Option<String>,
    /// With --from=onnx: write the parameters (initializers) to this safetensors file.
    #[arg(long, value_name = "PARAMS.safetensors", requires = "from")]
    params_out: Option<PathBuf>,
    /// Backend whose MLIR `--to=mlir` prints.
    #[arg(long, value_enum, default_value = "cpu")]
    target: Target,
    /// Compute capability for PTX (90 = sm_90).
    #[arg(long, default_value_t = 90)]
    sm: u32,
    /// libdevice.10.bc for math functions on cuda (default: $CKOPT_LIBDEVICE).
    #[arg(long)]
    libdevice: Option<PathBuf>,
    /// Output file (default stdout).
    #[arg(short = 'o')]
    output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let cli: Cli = match ckopt_tools::cli::parse(Cli::command()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if cli.from.is_some() {
        return import_onnx(&cli);
    }
    let (name, src) = match read_input(&cli.input) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("ckopt-translate: {e}");
            return ExitCode::FAILURE;
        }
    };
    match translate(&cli, &name, &src) {
        Ok(text) => {
            let r = match &cli.output {
                Some(p) => std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display())),
                None => ckopt_tools::input::write_stdout(&text).map_err(|e| format!("cannot write to stdout: {e}")),
            };
            if let Err(e) = r {
                eprintln!("ckopt-translate: {e}");
                return ExitCode::FAILURE;
            }
            ExitCode::SUCCESS
        }
        Err(d) => {
            eprint!("{}", d.render(Some(&src)));
            ExitCode::FAILURE
        }
    }
}

/// `--from=onnx`: the model to ck text (stdout or -o) and its parameters to --params-out.
fn import_onnx(cli: &Cli) -> ExitCode {
    let loss = match cli.loss {
        LossArg::None => ckopt_onnx::Loss::None,
        LossArg::Mse => ckopt_onnx::Loss::Mse,
        LossArg::CrossEntropy => ckopt_onnx::Loss::CrossEntropy,
    };
    let opts = ckopt_onnx::ImportOptions { loss, batch: cli.batch, name: cli.name.clone() };
    let imported = if cli.input == "-" {
        let mut b = Vec::new();
        match std::io::stdin().read_to_end(&mut b) {
            Ok(_) => ckopt_onnx::import_bytes(&b, "<stdin>", None, &opts),
            Err(e) => {
                eprintln!("ckopt-translate: error: cannot read stdin: {e}");
                return ExitCode::FAILURE;
            }
        }
    } else {
        ckopt_onnx::import_file(std::path::Path::new(&cli.input), &opts)
    };
    let (m, params) = match imported {
        Ok(x) => x,
        Err(d) => {
            eprint!("{}", d.render(None));
            return ExitCode::FAILURE;
        }
    };
    let text = ckopt_ir::print_module(&m);
    let r = match &cli.output {
        Some(p) => std::fs::write(p, text).map_err(|e| format!("cannot write {}: {e}", p.display())),
        None => ckopt_tools::input::write_stdout(&text).map_err(|e| format!("cannot write to stdout: {e}")),
    };
    let r = r.and_then(|()| match &cli.params_out {
        Some(p) => ckopt_onnx::write_safetensors(&params)
            .and_then(|b| std::fs::write(p, b).map_err(|e| format!("cannot write {}: {e}", p.display()))),
        None => Ok(()),
    });
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ckopt-translate: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn read_input(path: &str) -> Result<(String, String), String> {
    if path == "-" {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map_err(|e| format!("cannot read stdin: {e}"))?;
        Ok(("<stdin>".into(), s))
    } else {
        let s = std::fs::read_to_string(path).map_err(|e| format!("cannot read {path}: {e}"))?;
        Ok((path.to_string(), s))
    }
}

fn translate(cli: &Cli, name: &str, src: &str) -> Result<String, Diags> {
    let m = parse_and_verify(src, name)?;
    let opts = ckopt_lower::PtxOptions { sm: cli.sm, libdevice: cli.libdevice.clone(), ..Default::default() };
    let Some(to) = cli.to else { return Ok(String::new()) };
    Ok(match (to, cli.target) {
        (To::Mlir, Target::Cpu) => ckopt_lower::cpu_module_mlir(&m)?,
        (To::Mlir, Target::Cuda) => ckopt_lower::gpu_mlir_module(&m, &opts)?,
        (To::Llvm, _) => ckopt_lower::cpu_module_llvm_ir(&m)?,
        (To::Ptx, _) => {
            let progs = ckopt_lower::compile_ptx_funcs(&m.funcs, &opts)?;
            ckopt_lower::annotated(&progs)
        }
    })
}
