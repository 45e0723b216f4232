//! Arbitrary bytes as a safetensors parameter file: `read_safetensors` and
//! `bind` (against a function with two {ck.param} arguments) must succeed
//! or return a diagnostic; never panic. A successful read must round-trip
//! through `write_safetensors`.
#![no_main]
use ckopt_ir::{Attr, Func, Loc, TensorType};
use ckopt_onnx::weights::{bind, read_safetensors, write_safetensors};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(ts) = read_safetensors(data, "fuzz.safetensors") else { return };
    let bytes = write_safetensors(&ts).expect("tensors that were read can be written");
    // Compare bit patterns: random data holds NaNs, which are unequal as floats.
    let key = |ts: &[ckopt_onnx::NamedTensor]| -> Vec<(String, Vec<u64>, Vec<u32>)> {
        ts.iter().map(|t| (t.name.clone(), t.shape.clone(), t.data.iter().map(|v| v.to_bits()).collect())).collect()
    };
    assert_eq!(key(&read_safetensors(&bytes, "again").expect("written file reads")), key(&ts));
    let mut f = Func::new("f", Loc::unknown());
    f.add_param("x", TensorType::f32(vec![2]), false);
    f.add_param("w", TensorType::f32(vec![2, 2]), true);
    f.add_param("b", TensorType::f32(vec![2]), true);
    f.params[1].attrs.insert("ck.name".into(), Attr::Str("fc.weight".into()));
    let _ = bind(&f, ts, "fuzz.safetensors");
});
