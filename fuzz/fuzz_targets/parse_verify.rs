//! Fuzz target: arbitrary bytes through the parser, verifier and printer.
//!
//! Properties checked (a failure is a crash): nothing panics, overflows the
//! stack or allocates without bound; every diagnostic renders; a module that
//! parses prints to text that re-parses and prints identically
//! (print(parse(print(m))) == print(m)) and verifies iff the original does;
//! the split-input-file and --verify-diagnostics helpers accept any text.
#![no_main]
use ckopt_ir::{expect, parse_module, parser, print_module, split, verify_module};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = std::str::from_utf8(data).ok();
    match parser::parse_module_bytes(data, "fuzz.ck") {
        Err(d) => {
            assert!(!d.is_empty(), "a failed parse must say why");
            let _ = d.render(text);
        }
        Ok(m) => {
            let verified = verify_module(&m);
            if let Err(d) = &verified {
                let _ = d.render(text);
            }
            let p = print_module(&m);
            let m2 = match parse_module(&p, "printed.ck") {
                Ok(m2) => m2,
                Err(d) => panic!("printed module does not re-parse:\n{}\n{p}", d.render(Some(&p))),
            };
            assert_eq!(print_module(&m2), p, "print(parse(print(m))) != print(m)");
            assert_eq!(verify_module(&m2).is_ok(), verified.is_ok(), "verification changed by a round trip:\n{p}");
        }
    }
    if let Some(t) = text {
        for (chunk, first) in split::split_input_file(t) {
            let produced = match parser::parse_module_at(&chunk, "fuzz.ck", first) {
                Ok(_) => Vec::new(),
                Err(d) => d.0,
            };
            let _ = expect::check_diagnostics(&chunk, "fuzz.ck", first, &produced).render(Some(t));
        }
    }
});
