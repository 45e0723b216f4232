//! ckopt-translate: a planned ck module to upstream MLIR, LLVM IR, PTX or a
//! cuda bundle, and ONNX models to ck (like mlir-translate's export and
//! import).
//!
//! `ckopt-translate --from=onnx MODEL.onnx [--loss=none|mse|cross-entropy]
//! [--batch=N] [--name=NAME] [-o OUT.ck] [--params-out=PARAMS.safetensors]`
//! imports an ONNX model (`ckopt_onnx`): one function, initializers as
//! `{ck.param}` arguments named by `ck.name`, their values written to
//! `--params-out`.
//!
//! `ckopt-translate [FILE|-] --to=mlir|llvm|ptx|cuda-bundle [--target=cpu|cuda]
//! [--sm=90] [--libdevice=PATH] [--func NAME]... [-o FILE]`. Every function
//! of the module (or those named by `--func`) is translated; each must have
//! been planned by memplan (`ck.offset`, `ck.arena_bytes`), else an error
//! names it. `--to=mlir` prints each function's step program (`//`
//! comments: kernel calls with their buffer slots, GEMM and convolution
//! calls) and the module's distinct kernels: for the cpu backend as one
//! upstream-dialect module (scf/vector/memref/arith/math), with
//! `--target=cuda` as gpu-dialect kernels; `--to=llvm` the cpu kernels as
//! LLVM IR after the step programs (`;` comments); `--to=ptx` the cuda
//! kernels as one PTX module after `//` comments describing each kernel's
//! launches and the step programs; `--to=cuda-bundle` one binary file (`-o`
//! required) with the PTX, the launches, the step programs and the training
//! signatures of the `@X_step` functions, for `ckopt-exec` (format:
//! `ckopt_kernels::bundle`). Errors: rendered diagnostics on stderr, exit
//! code 1.

use ckopt_ir::{Diag, Diags, Func, Module, parse_and_verify};
use ckopt_kernels::TrainSig;
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
    /// NVPTX assembly of the cuda kernels, after their launches and the step programs as comments.
    Ptx,
    /// A cuda bundle for ckopt-exec (binary; needs -o).
    CudaBundle,
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
    /// Softmax cross-entropy of logits (classes last) against integer (i64) %labels, ignore_index -100.
    CrossEntropyIndex,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Target {
    Cpu,
    Cuda,
}

/// Translates a planned ck module to MLIR, LLVM IR, PTX or a cuda bundle; imports ONNX models.
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
    /// Translate only this function (repeatable; default: every function).
    #[arg(long, value_name = "NAME")]
    func: Vec<String>,
    /// Output file (default stdout; `-` is stdout).
    #[arg(short = 'o')]
    output: Option<PathBuf>,
}

fn main() -> ExitCode {
    let mut cli: Cli = match ckopt_tools::cli::parse(Cli::command()) {
        Ok(c) => c,
        Err(code) => return code,
    };
    // `-o -` is stdout, as in ckopt-opt and ckopt-gen
    if cli.output.as_deref() == Some(std::path::Path::new("-")) {
        cli.output = None;
    }
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
    if matches!(cli.to, Some(To::CudaBundle)) && cli.output.is_none() {
        eprintln!("ckopt-translate: error: --to=cuda-bundle writes a binary file: give it with -o OUT.ckb");
        return ExitCode::FAILURE;
    }
    match translate(&cli, &name, &src) {
        Ok(bytes) => {
            let r = match &cli.output {
                Some(p) => std::fs::write(p, bytes).map_err(|e| format!("cannot write {}: {e}", p.display())),
                None => ckopt_tools::input::write_stdout(&String::from_utf8_lossy(&bytes)).map_err(|e| format!("cannot write to stdout: {e}")),
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
        LossArg::CrossEntropyIndex => ckopt_onnx::Loss::CrossEntropyIndex,
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
            .map_err(|e| e.to_string())
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

/// The functions to translate (`--func`, default all), in module order.
fn selected<'m>(cli: &Cli, m: &'m Module) -> Result<Vec<&'m Func>, Diags> {
    if cli.func.is_empty() {
        return Ok(m.funcs.iter().collect());
    }
    for name in &cli.func {
        if m.func(name).is_none() {
            let names: Vec<&str> = m.funcs.iter().map(|f| f.name.as_str()).collect();
            let loc = m.funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
            return Err(Diag::error(loc, format!("no function @{name} in the module (it has @{})", names.join(", @"))).into());
        }
    }
    Ok(m.funcs.iter().filter(|f| cli.func.contains(&f.name)).collect())
}

/// Training signatures of the selected `@X_step` functions whose `@X` is in the module.
fn train_sigs(m: &Module, funcs: &[&Func]) -> Result<Vec<TrainSig>, Diags> {
    let mut out = Vec::new();
    for f in funcs {
        let Some(base) = f.name.strip_suffix(ckopt_passes::sgd::STEP_SUFFIX) else { continue };
        let Some(loss) = m.func(base) else { continue };
        let mut copy = m.clone();
        let sig = ckopt_passes::train::prepare(&mut copy, base, &Default::default())?;
        out.push(TrainSig {
            loss_func: sig.loss_func,
            grad_func: sig.grad_func,
            step_func: sig.step_func,
            loss_args: loss.params.len(),
            params: sig.params,
            state: sig.state,
            step_key: sig.step_key,
            hypers: sig.hypers,
        });
    }
    Ok(out)
}

fn translate(cli: &Cli, name: &str, src: &str) -> Result<Vec<u8>, Diags> {
    let m = parse_and_verify(src, name)?;
    let funcs = selected(cli, &m)?;
    let sub = Module { funcs: funcs.iter().map(|f| (*f).clone()).collect() };
    let opts = ckopt_lower::CudaOptions { sm: cli.sm, libdevice: cli.libdevice.clone(), ..Default::default() };
    let Some(to) = cli.to else { return Ok(Vec::new()) };
    Ok(match (to, cli.target) {
        (To::Mlir, Target::Cpu) => ckopt_lower::cpu_module_mlir(&sub)?.into_bytes(),
        (To::Mlir, Target::Cuda) => ckopt_lower::cuda_module_mlir(&sub)?.into_bytes(),
        (To::Llvm, _) => ckopt_lower::cpu_module_llvm_ir(&sub)?.into_bytes(),
        (To::Ptx, _) => ckopt_lower::bundle_ptx_text(&ckopt_lower::compile_bundle(&funcs, &opts)?).into_bytes(),
        (To::CudaBundle, _) => {
            let mut b = ckopt_lower::compile_bundle(&funcs, &opts)?;
            b.trains = train_sigs(&m, &funcs)?;
            let loc = funcs.first().map(|f| f.loc.clone()).unwrap_or_default();
            b.to_bytes().map_err(|e| Diags::from(Diag::error(loc, e.0)))?
        }
    })
}
