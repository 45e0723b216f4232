//! Arbitrary bytes as an ONNX model: `ckopt_onnx::import_bytes` must return
//! a module that verifies and prints, or a diagnostic; never panic, hang or
//! allocate without bound. Seeds: test/onnx models and node cases.
#![no_main]
use ckopt_onnx::{ImportOptions, Loss, import_bytes};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the options so every loss and --batch path is reached.
    let (opt, bytes) = data.split_first().map_or((0, data), |(o, r)| (*o, r));
    let loss = match opt % 3 {
        0 => Loss::None,
        1 => Loss::Mse,
        _ => Loss::CrossEntropy,
    };
    let opts = ImportOptions { loss, batch: if opt & 4 != 0 { Some(2) } else { None }, name: None };
    if let Ok((m, params)) = import_bytes(bytes, "fuzz.onnx", None, &opts) {
        ckopt_ir::verify_module(&m).expect("an imported module verifies");
        let text = ckopt_ir::print_module(&m);
        let back = ckopt_ir::parse_and_verify(&text, "printed.ck").expect("the printed import re-parses");
        assert_eq!(ckopt_ir::print_module(&back), text);
        let n_params = m.funcs[0].params.iter().filter(|p| p.attrs.contains_key("ck.param")).count();
        assert_eq!(n_params, params.len());
    }
});
