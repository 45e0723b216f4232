//! Checks the text test files of test/ir/ from Rust (independently of lit and
//! ckopt-opt): roundtrip.ck is in canonical printed form and verifies;
//! every `// -----` case of invalid.ck produces exactly its expected
//! diagnostics (the --verify-diagnostics semantics of ir::expect); printed
//! output is accepted by upstream mlir-opt (when LLVM 22 is installed) and
//! what mlir-opt prints parses back to the same ops.

use ckopt_ir::{expect, parse_and_verify, parse_module, parser, print_module, split, verify_module, Diag};
use std::path::PathBuf;

fn test_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../test/ir")
}

fn read(name: &str) -> String {
    std::fs::read_to_string(test_dir().join(name)).expect("test file exists")
}

/// Diagnostics the way `ckopt-opt --verify-diagnostics` produces them for a chunk.
fn chunk_diags(chunk: &str, file: &str, first: u32) -> Vec<Diag> {
    match parser::parse_module_at(chunk, file, first) {
        Err(d) => d.0,
        Ok(m) => verify_module(&m).err().map(|d| d.0).unwrap_or_default(),
    }
}

#[test]
fn roundtrip_file_is_canonical() {
    let text = read("roundtrip.ck");
    let m = parse_and_verify(&text, "roundtrip.ck").unwrap_or_else(|d| panic!("{}", d.render(Some(&text))));
    let printed = print_module(&m);
    let stripped: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//") && !l.trim().is_empty())
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(printed, stripped);
    let again = print_module(&parse_module(&printed, "p").expect("reparses"));
    assert_eq!(again, printed);
}

#[test]
fn invalid_file_cases_produce_exactly_their_expected_diagnostics() {
    let text = read("invalid.ck");
    let chunks = split::split_input_file(&text);
    assert!(chunks.len() > 50, "one case per rule");
    let mut failures = String::new();
    for (chunk, first) in &chunks {
        assert!(chunk.contains("expected-error"), "case at line {first} expects nothing");
        let produced = chunk_diags(chunk, "invalid.ck", *first);
        let bad = expect::check_diagnostics(chunk, "invalid.ck", *first, &produced);
        failures.push_str(&bad.render(Some(&text)));
    }
    assert!(failures.is_empty(), "{failures}");
}

#[test]
fn invalid_file_checker_catches_a_wrong_expectation() {
    let text = read("invalid.ck").replacen("did you mean 'ck.relu'?", "did you mean 'ck.neg'?", 1);
    let bad: usize = split::split_input_file(&text)
        .iter()
        .map(|(c, f)| expect::check_diagnostics(c, "invalid.ck", *f, &chunk_diags(c, "invalid.ck", *f)).0.len())
        .sum();
    assert_eq!(bad, 2, "one unexpected error and one expected error not produced");
}

#[test]
fn mlir_opt_accepts_printed_output_and_its_output_parses_back() {
    let mlir_opt = std::path::Path::new("/usr/lib/llvm-22/bin/mlir-opt");
    if !mlir_opt.exists() {
        eprintln!("skipping: {} not installed", mlir_opt.display());
        return;
    }
    let text = read("roundtrip.ck");
    let m = parse_and_verify(&text, "roundtrip.ck").expect("valid");
    let printed = print_module(&m);
    let dir = std::env::temp_dir().join(format!("ckopt-ir-mlir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let path = dir.join("in.mlir");
    std::fs::write(&path, &printed).expect("write");
    let out = std::process::Command::new(mlir_opt)
        .arg("--allow-unregistered-dialect")
        .arg(&path)
        .output()
        .expect("run mlir-opt");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(out.status.success(), "mlir-opt rejected:\n{}", String::from_utf8_lossy(&out.stderr));
    let back = String::from_utf8(out.stdout).expect("utf8");
    let m2 = parse_and_verify(&back, "mlir-opt-output").unwrap_or_else(|d| panic!("{}", d.render(Some(&back))));
    assert_eq!(m.funcs.len(), m2.funcs.len());
    for (a, b) in m.funcs.iter().zip(&m2.funcs) {
        assert_eq!(a.name, b.name);
        assert_eq!(a.result_types, b.result_types);
        assert_eq!(a.attrs, b.attrs);
        assert_eq!(a.params.len(), b.params.len());
        for (pa, pb) in a.params.iter().zip(&b.params) {
            assert_eq!(a.ty(pa.value), b.ty(pb.value));
            assert_eq!(pa.attrs, pb.attrs);
        }
        assert_eq!(a.body.len(), b.body.len());
        for (oa, ob) in a.body.iter().zip(&b.body) {
            assert_eq!(oa.kind, ob.kind);
            assert_eq!(format!("{:?}", oa.attrs), format!("{:?}", ob.attrs), "attrs of {:?}", oa.kind);
            assert_eq!(oa.result.map(|r| a.ty(r).clone()), ob.result.map(|r| b.ty(r).clone()));
        }
    }
}
