//! The MLIR side: a context with every upstream dialect, parsing the emitted
//! text, running a pass pipeline with diagnostics captured as errors, and
//! translation to LLVM IR.
//!
//! Invariant: MLIR diagnostics never reach stderr directly; they are collected
//! and returned in the `Err` of the call that produced them, so a failure is a
//! value. Pass registration happens once per process (`std::sync::Once`).

use melior::{
    Context,
    dialect::DialectRegistry,
    ir::{Module, operation::OperationLike},
    pass::PassManager,
    utility::{parse_pass_pipeline, register_all_dialects, register_all_llvm_translations, register_all_passes},
};
use crate::error::LowerError;
use std::sync::{Arc, Mutex, Once};

/// A context plus the diagnostics it has produced since the last `take_diags`.
pub struct Mlir {
    pub ctx: Context,
    diags: Arc<Mutex<Vec<String>>>,
}

static PASSES: Once = Once::new();

impl Mlir {
    pub fn new() -> Mlir {
        PASSES.call_once(register_all_passes);
        let registry = DialectRegistry::new();
        register_all_dialects(&registry);
        let ctx = Context::new();
        ctx.append_dialect_registry(&registry);
        ctx.load_all_available_dialects();
        register_all_llvm_translations(&ctx);
        let diags = Arc::new(Mutex::new(Vec::new()));
        let sink = diags.clone();
        ctx.attach_diagnostic_handler(move |d| {
            if let Ok(mut v) = sink.lock() {
                v.push(format!("{} {}", d.location(), d));
            }
            true
        });
        Mlir { ctx, diags }
    }

    pub fn take_diags(&self) -> String {
        match self.diags.lock() {
            Ok(mut v) => std::mem::take(&mut *v).join("\n"),
            Err(_) => String::new(),
        }
    }

    /// Parses MLIR text; the error carries MLIR's diagnostics.
    pub fn parse<'c>(&'c self, text: &str) -> Result<Module<'c>, LowerError> {
        match Module::parse(&self.ctx, text) {
            Some(m) => Ok(m),
            None => Err(LowerError::Parse { diags: self.take_diags() }),
        }
    }

    /// Runs a textual pass pipeline (`builtin.module(...)`) on `module`.
    pub fn run(&self, module: &mut Module, pipeline: &str) -> Result<(), LowerError> {
        let pm = PassManager::new(&self.ctx);
        // The module is verified once at the end instead of after every
        // pass (25% of the pipeline's time on large modules).
        pm.enable_verifier(false);
        parse_pass_pipeline(pm.as_operation_pass_manager(), pipeline)
            .map_err(|e| LowerError::BadPipeline { pipeline: pipeline.to_string(), error: e.to_string(), diags: self.take_diags() })?;
        pm.run(module).map_err(|_| LowerError::PipelineFailed { diags: self.take_diags() })?;
        if !module.as_operation().verify() {
            return Err(LowerError::Verify { diags: self.take_diags() });
        }
        Ok(())
    }
}

impl Default for Mlir {
    fn default() -> Self {
        Mlir::new()
    }
}

unsafe extern "C" {
    #[link_name = "free"]
    fn libc_free(p: *mut std::ffi::c_void);
}

/// Translates a module in the LLVM dialect to LLVM IR text.
pub fn to_llvm_ir(m: &Mlir, module: &Module) -> Result<String, LowerError> {
    // SAFETY: the module is valid for the call; the returned C string is
    // malloc'ed by the C API and freed here after copying.
    unsafe {
        let p = mlir_sys::mlirTranslateModuleToLLVMIRToString(module.as_operation().to_raw());
        if p.is_null() {
            return Err(LowerError::Translate { diags: m.take_diags() });
        }
        let s = std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned();
        libc_free(p as *mut _);
        Ok(s)
    }
}
