//! Pass trait, pipeline parsing and the PassManager.
//!
//! A pipeline is a flat comma-separated list of passes, each with optional
//! options in braces, separated by spaces or commas:
//! `autodiff,inplace,remat{mode=greedy budget=48MiB},memplan`.
//! Unknown pass or option names are errors that list the valid ones.
//! MLIR's anchored form is accepted too and means the same (every ck pass
//! works on the whole module): `builtin.module(cse,func.func(dce))`.
//! With verify-each on (the default), the module is verified after every
//! pass and errors are labelled "after pass X" (as rustc's MIR validator).

use crate::registry::{OptionInfo, OptionValue, PassInfo, pass_info, registry};
use ckopt_ir::{Diag, Diags, Loc, Module, verify_module};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// An error of a pass pipeline or of a pass's options: the pipeline's
/// syntax, an unknown pass or option, a value its option's kind rejects, an
/// option read as another kind, or a pass's own check of its options. The
/// text is what the tools print after `error: `.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum OptionError {
    #[error("unknown pass '{0}'")]
    UnknownPass(String),
    #[error("unknown pass '{pass}'; valid passes: {valid}")]
    UnknownPassOf { pass: String, valid: String },
    #[error("pass '{pass}' has no option '{key}'")]
    NoOption { pass: String, key: String },
    #[error("pass '{pass}' has no option '{key}' (it takes no options)")]
    TakesNoOptions { pass: String, key: String },
    #[error("pass '{pass}' has no option '{key}'; valid options: {valid}")]
    NoOptionOf { pass: String, key: String, valid: String },
    #[error("option '{key}' of pass '{pass}' is declared {kind}, not read as {want}")]
    WrongKind { pass: String, key: String, kind: String, want: &'static str },
    #[error("option '{key}' of pass '{pass}' has no default and was not given")]
    Unset { pass: String, key: String },
    /// A value the option rejects: `option 'k' of pass 'remat' must be at least 1`.
    #[error("option '{key}' of pass '{pass}' {problem}")]
    BadValue { pass: String, key: String, problem: String },
    #[error("option '{key}' of pass '{pass}': {source}")]
    BadBytes { pass: String, key: String, source: BytesError },
    #[error("option '{key}' given twice to pass '{pass}'")]
    GivenTwice { pass: String, key: String },
    #[error("expected a pass name at position {pos} of '{text}'")]
    ExpectedPassName { pos: usize, text: String },
    #[error("expected ',' after pass '{pass}' at position {pos} of '{text}'")]
    ExpectedComma { pass: String, pos: usize, text: String },
    #[error("unterminated '{{' in options of pass '{0}'")]
    Unterminated(String),
    #[error("unbalanced '{paren}' in pipeline '{text}'")]
    Unbalanced { paren: char, text: String },
    /// A pass's own check of its options: `remat: mode 'x' has no plan`.
    #[error("{pass}: {message}")]
    Pass { pass: String, message: String },
}

/// A byte count `parse_bytes` rejects.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BytesError {
    #[error("unknown byte unit '{unit}' in '{text}' (use B, KiB, MiB, GiB, KB, MB, GB)")]
    UnknownUnit { unit: String, text: String },
    #[error("'{0}' is not a byte count")]
    NotBytes(String),
    #[error("'{0}' is out of range")]
    OutOfRange(String),
}

/// Options given to one pass instance, as written (`key=value`).
///
/// Passes read them with the typed getters (`int`, `flag`, `number`,
/// `bytes`, `choice`, `func_name`, `indices`), which parse the value given
/// or else the default declared in the pass's record (`registry.rs`, the
/// one place a default is written). Values are checked against their
/// option's kind when the pipeline is parsed (`parse_pipeline`); a getter
/// parses again, so an error is the same if a pass is built directly.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PassOptions {
    pub pass: String,
    pub values: BTreeMap<String, String>,
}

impl PassOptions {
    /// No options given to `pass`: every getter returns the record's default.
    pub fn new(pass: &str) -> Self {
        PassOptions { pass: pass.to_string(), values: BTreeMap::new() }
    }
    /// The value as written, if given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }
    /// The declared option `key` of this pass.
    pub fn info(&self, key: &str) -> Result<&'static OptionInfo, OptionError> {
        let p = pass_info(&self.pass).ok_or_else(|| OptionError::UnknownPass(self.pass.clone()))?;
        p.options
            .iter()
            .find(|o| o.name == key)
            .ok_or_else(|| OptionError::NoOption { pass: self.pass.clone(), key: key.to_string() })
    }
    /// The value given, or the declared default (`None` when that is unset),
    /// parsed with the option's kind.
    pub fn value(&self, key: &str) -> Result<Option<OptionValue>, OptionError> {
        let info = self.info(key)?;
        let text = self.get(key).unwrap_or(info.default);
        if self.get(key).is_none() && text.is_empty() {
            return Ok(None);
        }
        info.kind.parse(&self.pass, key, text).map(Some)
    }
    fn wrong_kind(&self, key: &str, want: &'static str) -> OptionError {
        let kind = self.info(key).map(|o| o.kind.to_string()).unwrap_or_default();
        OptionError::WrongKind { pass: self.pass.clone(), key: key.to_string(), kind, want }
    }
    fn unset(&self, key: &str) -> OptionError {
        OptionError::Unset { pass: self.pass.clone(), key: key.to_string() }
    }
    /// A `Bool` option.
    pub fn flag(&self, key: &str) -> Result<bool, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Bool(b)) => Ok(b),
            None => Err(self.unset(key)),
            Some(_) => Err(self.wrong_kind(key, "a bool")),
        }
    }
    /// An `Int` or `PowerOfTwo` option.
    pub fn int(&self, key: &str) -> Result<u64, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Int(n)) => Ok(n),
            None => Err(self.unset(key)),
            Some(_) => Err(self.wrong_kind(key, "an integer")),
        }
    }
    /// A `Number` option.
    pub fn number(&self, key: &str) -> Result<f64, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Number(x)) => Ok(x),
            None => Err(self.unset(key)),
            Some(_) => Err(self.wrong_kind(key, "a number")),
        }
    }
    /// A `Number` option used as f32: the rounded value is checked against
    /// the declared range too (`momentum=0.999999999` rounds to 1).
    pub fn number_f32(&self, key: &str) -> Result<f32, OptionError> {
        let x = self.number(key)? as f32;
        self.info(key)?.kind.parse(&self.pass, key, &x.to_string())?;
        Ok(x)
    }
    /// A `Bytes` option (`None` when unset): `1048576`, `64KiB`, `48MiB`, `2GiB`, `10MB`.
    pub fn bytes(&self, key: &str) -> Result<Option<u64>, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Bytes(n)) => Ok(Some(n)),
            None => Ok(None),
            Some(_) => Err(self.wrong_kind(key, "a byte count")),
        }
    }
    /// A `Choice` option: the word, as declared.
    pub fn choice(&self, key: &str) -> Result<&'static str, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Choice(w)) => Ok(w),
            None => Err(self.unset(key)),
            Some(_) => Err(self.wrong_kind(key, "a choice")),
        }
    }
    /// A `FuncName` option, without `@` (`None` when unset).
    pub fn func_name(&self, key: &str) -> Result<Option<String>, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Func(f)) => Ok(Some(f)),
            None => Ok(None),
            Some(_) => Err(self.wrong_kind(key, "a function name")),
        }
    }
    /// An `Indices` option: `None` for `all`.
    pub fn indices(&self, key: &str) -> Result<Option<Vec<usize>>, OptionError> {
        match self.value(key)? {
            Some(OptionValue::Indices(v)) => Ok(Some(v)),
            Some(OptionValue::All) => Ok(None),
            None => Err(self.unset(key)),
            Some(_) => Err(self.wrong_kind(key, "indices")),
        }
    }
}

/// Parses `123`, `4KiB`, `48MiB`, `1GiB`, `10MB`, `5B`.
pub fn parse_bytes(s: &str) -> Result<u64, BytesError> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let mult: u64 = match unit.trim() {
        "" | "B" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        "KB" | "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        u => return Err(BytesError::UnknownUnit { unit: u.to_string(), text: s.to_string() }),
    };
    let v: f64 = num.parse().map_err(|_| BytesError::NotBytes(s.to_string()))?;
    let bytes = v * mult as f64;
    if !bytes.is_finite() || bytes < 0.0 || bytes > u64::MAX as f64 {
        return Err(BytesError::OutOfRange(s.to_string()));
    }
    Ok(bytes.round() as u64)
}

/// Statistics reported by passes (`--pass-statistics`).
///
/// Every statistic a pass reports is declared in its record
/// (`registry::StatInfo`): a kebab-case name and a help text, rendered as
/// MLIR does, `(S) VALUE NAME - HELP`. A statistic of one function has the
/// function as its scope (`add_func`), shown before the name:
/// `(S) 123 @f temp-peak-bytes-before - temp peak before the rewrite`.
/// Reports of the same (pass, scope, name) are summed when numeric (a
/// pipeline run over several `--split-input-file` cases gives one total).
#[derive(Clone, Debug, Default)]
pub struct Statistics {
    /// Everything reported, in order.
    pub entries: Vec<StatEntry>,
    /// Passes that ran, in order of their first run (listed even without statistics).
    pub passes: Vec<String>,
    current: String,
}

/// One report of a statistic.
#[derive(Clone, Debug, PartialEq)]
pub struct StatEntry {
    pub pass: String,
    /// The function it is about (without `@`); `None` for the whole module.
    pub func: Option<String>,
    /// The declared name, possibly with a `[qualifier]`.
    pub name: String,
    pub value: String,
}

impl StatEntry {
    /// `@f name`, or `name` for a module statistic.
    pub fn label(&self) -> String {
        match &self.func {
            Some(f) => format!("@{f} {}", self.name),
            None => self.name.clone(),
        }
    }
}

impl Statistics {
    /// A statistic of the whole module.
    pub fn add(&mut self, name: &str, value: impl ToString) {
        self.push(None, name, value.to_string());
    }
    /// A statistic of function `func` (shown `@func name`).
    pub fn add_func(&mut self, func: &str, name: &str, value: impl ToString) {
        self.push(Some(func.to_string()), name, value.to_string());
    }
    fn push(&mut self, func: Option<String>, name: &str, value: String) {
        self.entries.push(StatEntry { pass: self.current.clone(), func, name: name.to_string(), value });
    }
    pub fn set_pass(&mut self, pass: &str) {
        self.current = pass.to_string();
        if !self.passes.iter().any(|p| p == pass) {
            self.passes.push(pass.to_string());
        }
    }
    /// The entries of one pass, summed over its runs where numeric.
    pub fn summed(&self, pass: &str) -> Vec<StatEntry> {
        let mut out: Vec<StatEntry> = Vec::new();
        for e in self.entries.iter().filter(|e| e.pass == pass) {
            match out.iter_mut().find(|o| o.func == e.func && o.name == e.name) {
                Some(o) => {
                    if let (Ok(a), Ok(b)) = (o.value.parse::<u64>(), e.value.parse::<u64>()) {
                        o.value = a.saturating_add(b).to_string();
                    } else {
                        o.value = e.value.clone();
                    }
                }
                None => out.push(e.clone()),
            }
        }
        out
    }
    /// (`@f name` or `name`, value) of one pass, summed over its runs where numeric.
    pub fn summary(&self, pass: &str) -> Vec<(String, String)> {
        self.summed(pass).into_iter().map(|e| (e.label(), e.value)).collect()
    }
    /// Reports whose name the pass's record does not declare, as `pass: name`
    /// (statistics of passes outside the registry are not checked).
    pub fn undeclared(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for e in &self.entries {
            if let Some(p) = pass_info(&e.pass)
                && p.statistic(&e.name).is_none()
            {
                let s = format!("{}: {}", e.pass, e.name);
                if !out.contains(&s) {
                    out.push(s);
                }
            }
        }
        out
    }
    /// Text like mlir-opt's `--mlir-pass-statistics`: per pass,
    /// `(S) VALUE [@FUNC ]NAME - HELP` with the declared help.
    pub fn render(&self) -> String {
        let mut out = String::from("===-------------------------------------------------------------------------===\n                         ... Pass statistics report ...\n===-------------------------------------------------------------------------===\n");
        let mut passes = self.passes.clone();
        for e in &self.entries {
            if !passes.contains(&e.pass) {
                passes.push(e.pass.clone());
            }
        }
        for p in &passes {
            out.push_str(&format!("{p}\n"));
            let info = pass_info(p);
            for e in self.summed(p) {
                match info.and_then(|i| i.statistic(&e.name)) {
                    Some(s) => out.push_str(&format!("  (S) {} {} - {}\n", e.value, e.label(), s.help)),
                    None => out.push_str(&format!("  (S) {} {}\n", e.value, e.label())),
                }
            }
        }
        out
    }
}

/// A transformation over a module. Passes are plain functions; this is the shell.
pub trait Pass {
    fn run(&self, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags>;
}

/// Parses `name{a=1 b=2},name2` into pass names with options (no lookup).
pub fn split_pipeline(text: &str) -> Result<Vec<PassOptions>, OptionError> {
    let mut out = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        while i < chars.len() && (chars[i] == ',' || chars[i].is_whitespace()) {
            i += 1;
        }
        if i >= chars.len() {
            break;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '-') {
            i += 1;
        }
        let name: String = chars[start..i].iter().collect();
        if name.is_empty() {
            return Err(OptionError::ExpectedPassName { pos: i + 1, text: text.to_string() });
        }
        let mut opts = PassOptions { pass: name, values: BTreeMap::new() };
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i < chars.len() && chars[i] == '{' {
            let close =
                chars[i..].iter().position(|&c| c == '}').map(|p| p + i).ok_or_else(|| OptionError::Unterminated(opts.pass.clone()))?;
            let body: String = chars[i + 1..close].iter().collect();
            let mut last_key: Option<String> = None;
            for item in body.split(|c: char| c == ',' || c.is_whitespace()).filter(|s| !s.is_empty()) {
                // A bare number continues the previous option's list: `wrt=0,2` (MLIR list options).
                if !item.contains('=')
                    && item.starts_with(|c: char| c.is_ascii_digit())
                    && let Some(v) = last_key.as_ref().and_then(|k| opts.values.get_mut(k))
                {
                    v.push(',');
                    v.push_str(item);
                    continue;
                }
                let (k, v) = item.split_once('=').unwrap_or((item, "true"));
                last_key = Some(k.to_string());
                if opts.values.insert(k.to_string(), v.to_string()).is_some() {
                    return Err(OptionError::GivenTwice { pass: opts.pass.clone(), key: k.to_string() });
                }
            }
            i = close + 1;
        }
        while i < chars.len() && chars[i].is_whitespace() {
            i += 1;
        }
        if i < chars.len() && chars[i] != ',' {
            return Err(OptionError::ExpectedComma { pass: opts.pass.clone(), pos: i + 1, text: text.to_string() });
        }
        out.push(opts);
    }
    Ok(out)
}

/// Removes MLIR op anchors (`builtin.module(`, `func.func(` and their
/// closing parentheses), checking that parentheses balance. Braces (pass
/// options) are copied verbatim.
pub fn strip_anchors(text: &str) -> Result<String, OptionError> {
    const ANCHORS: [&str; 3] = ["builtin.module(", "func.func(", "module("];
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut in_braces = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if !in_braces {
            if let Some(a) = ANCHORS.iter().find(|a| rest.starts_with(**a)) {
                let prev_ok = out.trim_end().is_empty() || out.trim_end().ends_with([',', '(']);
                if prev_ok {
                    depth += 1;
                    rest = &rest[a.len()..];
                    out.push(',');
                    continue;
                }
            }
            if c == ')' {
                depth = depth.checked_sub(1).ok_or_else(|| OptionError::Unbalanced { paren: ')', text: text.to_string() })?;
                out.push(',');
                rest = &rest[1..];
                continue;
            }
        }
        match c {
            '{' => in_braces = true,
            '}' => in_braces = false,
            _ => {}
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    if depth != 0 {
        return Err(OptionError::Unbalanced { paren: '(', text: text.to_string() });
    }
    Ok(out)
}

/// One pass instance ready to run.
pub struct PipelineEntry {
    pub info: &'static PassInfo,
    pub options: PassOptions,
    pub pass: Box<dyn Pass>,
}

/// Looks every pass up in the registry and checks option names and values.
pub fn parse_pipeline(text: &str) -> Result<Vec<PipelineEntry>, OptionError> {
    let mut out = Vec::new();
    for opts in split_pipeline(&strip_anchors(text)?)? {
        let info = registry().iter().find(|p| p.name == opts.pass).ok_or_else(|| {
            let names: Vec<&str> = registry().iter().map(|p| p.name).collect();
            OptionError::UnknownPassOf { pass: opts.pass.clone(), valid: names.join(", ") }
        })?;
        for k in opts.values.keys() {
            if !info.options.iter().any(|o| o.name == k) {
                let names: Vec<&str> = info.options.iter().map(|o| o.name).collect();
                let (pass, key) = (info.name.to_string(), k.clone());
                return Err(if names.is_empty() {
                    OptionError::TakesNoOptions { pass, key }
                } else {
                    OptionError::NoOptionOf { pass, key, valid: names.join(", ") }
                });
            }
        }
        // Every value given is checked against its option's kind here, once.
        for (k, v) in &opts.values {
            if let Some(o) = info.option(k) {
                o.kind.parse(info.name, k, v)?;
            }
        }
        let pass = (info.build)(&opts)?;
        out.push(PipelineEntry { info, options: opts, pass });
    }
    Ok(out)
}

/// Runs a pipeline with verification, IR dumps, statistics and timing.
pub struct PassManager {
    pub entries: Vec<PipelineEntry>,
    pub verify_each: bool,
    pub stats: Statistics,
    /// Wall time of each pipeline entry (same order), summed over runs.
    pub timings: Vec<(String, Duration)>,
}

impl PassManager {
    pub fn new(entries: Vec<PipelineEntry>) -> Self {
        let timings = entries.iter().map(|e| (e.info.name.to_string(), Duration::ZERO)).collect();
        PassManager { entries, verify_each: true, stats: Statistics::default(), timings }
    }
    pub fn parse(text: &str) -> Result<Self, OptionError> {
        Ok(Self::new(parse_pipeline(text)?))
    }
    /// Runs every pass; `after` is called with (pass name, module) after each.
    pub fn run_with(&mut self, module: &mut Module, mut after: impl FnMut(&str, &Module)) -> Result<(), Diags> {
        self.run_observed(module, |name, m, failed| {
            if !failed {
                after(name, m)
            }
        })
    }
    /// Like `run_with`, but `observe(pass, module, failed)` is also called
    /// when a pass fails or its output does not verify (`failed == true`,
    /// the module as the pass left it), before the error is returned.
    pub fn run_observed(&mut self, module: &mut Module, observe: impl FnMut(&str, &Module, bool)) -> Result<(), Diags> {
        self.run_core(module, |_| false, observe)
    }
    /// Runs the passes, asking `stop(next pass)` before each one: when it
    /// says true the remaining passes do not run and the module is as the
    /// ones before left it (`Ok`: the caller knows that it stopped). What
    /// lets a frontend honour Ctrl-C between passes.
    pub fn run_until(&mut self, module: &mut Module, stop: impl FnMut(&str) -> bool) -> Result<(), Diags> {
        self.run_core(module, stop, |_, _, _| {})
    }
    fn run_core(
        &mut self,
        module: &mut Module,
        mut stop: impl FnMut(&str) -> bool,
        mut observe: impl FnMut(&str, &Module, bool),
    ) -> Result<(), Diags> {
        for (i, e) in self.entries.iter().enumerate() {
            if stop(e.info.name) {
                return Ok(());
            }
            self.stats.set_pass(e.info.name);
            let t = Instant::now();
            let result = run_keeping_fusion(e, module, &mut self.stats);
            if let Some(slot) = self.timings.get_mut(i) {
                slot.1 += t.elapsed();
            }
            if let Err(d) = result {
                observe(e.info.name, module, true);
                return Err(d);
            }
            if self.verify_each
                && let Err(ds) = verify_module(module)
            {
                observe(e.info.name, module, true);
                let mut out = Diags::new();
                for mut d in ds.0 {
                    d.message = format!("after pass {}: {}", e.info.name, d.message);
                    out.push(d);
                }
                return Err(out);
            }
            observe(e.info.name, module, false);
        }
        Ok(())
    }
    pub fn run(&mut self, module: &mut Module) -> Result<(), Diags> {
        self.run_with(module, |_, _| {})
    }
    /// Text like mlir-opt's `--mlir-timing`.
    pub fn render_timing(&self) -> String {
        let total: Duration = self.timings.iter().map(|(_, d)| *d).sum();
        let mut out = String::from("===-------------------------------------------------------------------------===\n                         ... Execution time report ...\n===-------------------------------------------------------------------------===\n");
        out.push_str(&format!("  Total Execution Time: {:.4} seconds\n\n  ----Wall Time----  ----Name----\n", total.as_secs_f64()));
        let tot = total.as_secs_f64().max(1e-12);
        for (n, d) in &self.timings {
            out.push_str(&format!("  {:>8.4} ({:5.1}%)  {n}\n", d.as_secs_f64(), 100.0 * d.as_secs_f64() / tot));
        }
        out.push_str(&format!("  {:>8.4} (100.0%)  Total\n", total.as_secs_f64()));
        out
    }
}

/// Passes that understand `ck.fusion` marks: every other pass runs on the
/// unfused module, which is then fused again (`fuse::fuse_func`), so a pass
/// that clones, removes or rewrites ops never leaves a broken group.
/// `remat` does that itself per function, measuring its plans fused.
const FUSION_AWARE: &[&str] = &["fuse", "memplan", "remat"];

fn run_keeping_fusion(e: &PipelineEntry, module: &mut Module, stats: &mut Statistics) -> Result<(), Diags> {
    if FUSION_AWARE.contains(&e.info.name) {
        return e.pass.run(module, stats);
    }
    let mut fused = false;
    for f in &mut module.funcs {
        fused |= ckopt_ir::fusion::strip_fusion(f);
    }
    let r = e.pass.run(module, stats);
    if fused {
        crate::fuse::fuse_module(module);
    }
    r
}

/// Convenience for a pass error without a better location.
pub fn pass_error(pass: &str, loc: Loc, msg: impl Into<String>) -> Diags {
    Diags::from(Diag::error(loc, format!("{pass}: {}", msg.into())))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn options_split_by_spaces_or_commas_mean_the_same() {
        let a = split_pipeline("remat{mode=greedy budget=48MiB},memplan").unwrap();
        let b = split_pipeline("remat{mode=greedy,budget=48MiB}, memplan").unwrap();
        assert_eq!(a, b);
        assert_eq!(a[0].get("budget"), Some("48MiB"));
        assert_eq!(a[1].pass, "memplan");
    }
    #[test]
    fn list_option_values_keep_their_commas() {
        let a = split_pipeline("autodiff{wrt=0,2 func=f}").unwrap();
        assert_eq!(a[0].get("wrt"), Some("0,2"));
        assert_eq!(a[0].get("func"), Some("f"));
        let b = split_pipeline("autodiff{func=f,wrt=1,3,4}").unwrap();
        assert_eq!(b[0].get("wrt"), Some("1,3,4"));
    }
    #[test]
    fn statistics_sum_over_runs_and_list_silent_passes() {
        let mut s = Statistics::default();
        s.set_pass("cse");
        s.add("num-cse'd", 2);
        s.set_pass("dce");
        s.set_pass("cse");
        s.add("num-cse'd", 3);
        assert_eq!(s.summary("cse"), vec![("num-cse'd".to_string(), "5".to_string())]);
        let r = s.render();
        assert!(r.contains("cse\n  (S) 5 num-cse'd - ops merged into an identical earlier op\n"), "{r}");
        assert!(r.contains("dce\n"), "{r}");
    }
    /// A pass that breaks the IR is caught by verify-each, and the error
    /// names the pass; with verify-each off the broken module comes back.
    #[test]
    fn verify_each_labels_errors_with_the_pass() {
        struct Breaker;
        impl Pass for Breaker {
            fn run(&self, m: &mut Module, _: &mut Statistics) -> Result<(), Diags> {
                for f in &mut m.funcs {
                    f.body.clear();
                }
                Ok(())
            }
        }
        static INFO: PassInfo = PassInfo {
            name: "breaker",
            summary: "test pass",
            options: &[],
            statistics: &[],
            build: |_| Ok(Box::new(Breaker)),
        };
        let mk = || PipelineEntry { info: &INFO, options: PassOptions::default(), pass: Box::new(Breaker) };
        let mut f = ckopt_ir::Func::new("f", Loc::unknown());
        f.push_return(&[], Loc::unknown());
        let m = Module { funcs: vec![f] };
        let mut pm = PassManager::new(vec![mk()]);
        let err = pm.run(&mut m.clone()).expect_err("verify-each catches the broken body");
        assert!(err.0[0].message.starts_with("after pass breaker: "), "{err}");
        let mut pm = PassManager::new(vec![mk()]);
        pm.verify_each = false;
        let mut m2 = m.clone();
        assert!(pm.run(&mut m2).is_ok());
        assert!(m2.funcs[0].body.is_empty());
        assert_eq!(pm.timings.len(), 1);
    }
    /// MLIR's anchored syntax means the same flat pipeline.
    #[test]
    fn mlir_anchors_are_accepted() {
        let flat = |t: &str| -> Vec<String> {
            let stripped = strip_anchors(t).expect("balanced");
            split_pipeline(&stripped).expect("splits").into_iter().map(|o| format!("{}{:?}", o.pass, o.values)).collect()
        };
        assert_eq!(flat("builtin.module(cse,func.func(dce))"), flat("cse,dce"));
        assert_eq!(flat("builtin.module(remat{mode=greedy budget=1MiB})"), flat("remat{mode=greedy,budget=1MiB}"));
        assert!(strip_anchors("builtin.module(cse").is_err());
        assert!(strip_anchors("cse)").is_err());
        assert_eq!(parse_pipeline("builtin.module(func.func(cse), dce)").map(|p| p.len()).ok(), Some(2));
    }
    /// Unknown passes and options are errors that list the valid names.
    #[test]
    fn unknown_names_list_the_valid_ones() {
        let e = parse_pipeline("cse,nope").err().expect("unknown pass").to_string();
        assert!(e.contains("unknown pass 'nope'") && e.contains("canonicalize") && e.contains("dce"), "{e}");
        let e = parse_pipeline("dce{x=1}").err().expect("unknown option").to_string();
        assert!(e.contains("pass 'dce' has no option 'x'"), "{e}");
        assert!(parse_pipeline("").map(|p| p.is_empty()).unwrap_or(false));
    }
    /// The getters read the record's defaults, and the given values.
    #[test]
    fn getters_read_given_values_or_the_declared_defaults() {
        let d = PassOptions::new("remat");
        let info = pass_info("remat").expect("remat is registered");
        assert_eq!(d.choice("mode"), Ok(info.option("mode").map(|o| o.default).unwrap_or_default()));
        assert_eq!(d.bytes("budget"), Ok(None));
        assert!(d.flag("search").is_ok() && d.int("k").is_ok());
        assert!(d.int("mode").is_err(), "a choice is not an integer");
        assert!(d.int("fanout").is_err(), "undeclared option");
        let o = &split_pipeline("remat{mode=log k=3 budget=1KiB search=false}").unwrap()[0];
        assert_eq!((o.choice("mode"), o.int("k"), o.bytes("budget"), o.flag("search")), (Ok("log"), Ok(3), Ok(Some(1024)), Ok(false)));
        let o = &split_pipeline("autodiff{wrt=0,2 func=@f}").unwrap()[0];
        assert_eq!((o.indices("wrt"), o.func_name("func")), (Ok(Some(vec![0, 2])), Ok(Some("f".to_string()))));
        assert_eq!(PassOptions::new("autodiff").indices("wrt"), Ok(None));
        assert_eq!(PassOptions::new("sgd").func_name("func"), Ok(None));
        let sgd = pass_info("sgd").expect("sgd is registered");
        let lr: f64 = sgd.option("lr").map(|o| o.default).unwrap_or_default().parse().unwrap();
        assert_eq!(PassOptions::new("sgd").number("lr"), Ok(lr));
        let o = &split_pipeline("sgd{lr=1e40 momentum=0.999999999}").unwrap()[0];
        assert_eq!(o.number_f32("lr").map_err(|e| e.to_string()), Err("option 'lr' of pass 'sgd' must be a positive number, got inf".to_string()));
        assert_eq!(o.number_f32("momentum").map_err(|e| e.to_string()), Err("option 'momentum' of pass 'sgd' must be in [0, 1), got 1".to_string()));
    }
    /// Values are checked against their kind when the pipeline is parsed.
    #[test]
    fn pipeline_parse_checks_values_against_their_kind() {
        let err = |p: &str| parse_pipeline(p).err().unwrap_or_else(|| panic!("{p} parses")).to_string();
        assert_eq!(err("remat{k=0}"), "option 'k' of pass 'remat' must be at least 1");
        assert_eq!(err("remat{k=x}"), "option 'k' of pass 'remat' expects a non-negative integer, got 'x'");
        assert_eq!(err("memplan{align=48}"), "option 'align' of pass 'memplan' must be a power of two, got 48");
        assert_eq!(err("memplan{check=maybe}"), "option 'check' of pass 'memplan' expects true or false, got 'maybe'");
        assert_eq!(err("sgd{momentum=1}"), "option 'momentum' of pass 'sgd' must be in [0, 1), got 1");
        assert_eq!(err("sgd{lr=0}"), "option 'lr' of pass 'sgd' must be a positive number, got 0");
        assert_eq!(err("sgd{func=}"), "option 'func' of pass 'sgd' is empty");
        assert_eq!(err("remat{mode=fast}"), "option 'mode' of pass 'remat' must be none, sqrt, greedy, log or optimal, got 'fast'");
        assert_eq!(err("remat{budget=3parsecs}"), "option 'budget' of pass 'remat': unknown byte unit 'parsecs' in '3parsecs' (use B, KiB, MiB, GiB, KB, MB, GB)");
        assert_eq!(err("autodiff{wrt=x}"), "option 'wrt' of pass 'autodiff' expects 'all' or argument indices like 0,2; got 'x'");
        assert_eq!(err("inplace{nodes=1}"), "pass 'inplace' has no option 'nodes'; valid options: node-limit, iter-limit, time-limit-ms");
        assert!(parse_pipeline("remat{mode=greedy search budget=48MiB k=2},sgd{lr=0.5 momentum=0.9},memplan{align=16 check=0}").is_ok());
    }
    #[test]
    fn statistics_render_scope_and_declared_help() {
        let mut s = Statistics::default();
        s.set_pass("remat");
        s.add_func("f", "temp-peak-bytes-before", 123);
        s.add_func("f", "temp-peak-bytes-before", 1);
        s.set_pass("inplace");
        s.add_func("g", "rewrite-applied[mul-one]", 2);
        s.add("not-declared", 1);
        let r = s.render();
        assert!(r.contains("remat\n  (S) 124 @f temp-peak-bytes-before - temp peak before the rewrite\n"), "{r}");
        assert!(r.contains("  (S) 2 @g rewrite-applied[mul-one] - times a rewrite rule (in brackets) was applied\n"), "{r}");
        assert_eq!(s.undeclared(), vec!["inplace: not-declared".to_string()]);
    }
    #[test]
    fn byte_units() {
        assert_eq!(parse_bytes("48MiB"), Ok(48 << 20));
        assert_eq!(parse_bytes("1GiB"), Ok(1 << 30));
        assert_eq!(parse_bytes("100"), Ok(100));
        assert!(parse_bytes("3 parsecs").is_err());
    }
}
