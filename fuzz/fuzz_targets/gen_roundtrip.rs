//! Structure-aware fuzz target: the input bytes drive THE shared random graph
//! generator (`ckopt_ir::testgen::build_module`: 8 bytes of argument seed,
//! then one step per 8 bytes, at most 64 steps), so every op of the table
//! appears in well-typed graphs.
//!
//! Properties: the generated module verifies; its printed text parses,
//! verifies and prints identically; and the printed text with one byte
//! overwritten (position and byte taken from the input) never panics the
//! parser/verifier and, when it parses, round-trips through the printer.
#![no_main]
use ckopt_ir::testgen::{GenConfig, build_module};
use ckopt_ir::{parse_and_verify, parse_module_bytes, print_module, verify_module};
use libfuzzer_sys::fuzz_target;

fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..b.len().min(8)].copy_from_slice(&b[..b.len().min(8)]);
    u64::from_le_bytes(w)
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 16 {
        return;
    }
    let arg_seed = word(&data[..8]);
    let steps: Vec<u64> = data[8..].chunks(8).take(64).map(word).collect();
    let cfg = GenConfig { max_ops: 64, ..GenConfig::default() }.annotated();
    let m = build_module(&cfg, arg_seed, &steps);
    if let Err(d) = verify_module(&m) {
        panic!("generated module does not verify:\n{d}\n{}", print_module(&m));
    }
    let p = print_module(&m);
    let m2 = match parse_and_verify(&p, "gen.ck") {
        Ok(m2) => m2,
        Err(d) => panic!("printed generated module rejected:\n{}", d.render(Some(&p))),
    };
    assert_eq!(print_module(&m2), p);
    // One overwritten byte of the printed text.
    let mut bytes = p.into_bytes();
    if !bytes.is_empty() {
        let at = (arg_seed as usize) % bytes.len();
        bytes[at] = data[data.len() - 1];
        if let Ok(m3) = parse_module_bytes(&bytes, "mut.ck") {
            let _ = verify_module(&m3);
            let p3 = print_module(&m3);
            let m4 = parse_module_bytes(p3.as_bytes(), "p3").expect("printed text re-parses");
            assert_eq!(print_module(&m4), p3);
        }
    }
});
