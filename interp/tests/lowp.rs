//! bf16/f16 arithmetic against an independent reference: every float op on
//! low-precision operands, evaluated by the interpreter, equals numpy's
//! float32 result rounded to the low type by ml_dtypes/numpy
//! (`lowp/gen_lowp.py` wrote `lowp/cases.json`). Exact for arithmetic and
//! data movement; within one low-type ulp where numpy's float32 math or
//! summation order may differ from the interpreter's by an f32 ulp before
//! rounding (each case says which). Ops across element types (cast between
//! f32, bf16, f16, i64, i32 and i1, with round-to-nearest-even ties;
//! comparisons, select, gather, take_along on low-precision data) are
//! checked too, exactly.

use ckopt_interp::{Tensor, eval_kind};
use ckopt_ir::{Attr, Attrs, DType, OpKind, TensorType};
use serde_json::Value;

fn shape(v: &Value) -> Vec<usize> {
    v["shape"].as_array().expect("shape").iter().map(|d| d.as_u64().expect("dim") as usize).collect()
}

fn bits(v: &Value) -> Vec<u16> {
    v["bits"].as_array().expect("bits").iter().map(|b| b.as_u64().expect("bit pattern") as u16).collect()
}

/// A tensor's own element type ("dtype"), else the case's.
fn dtype_of(v: &Value, dt: DType) -> DType {
    v.get("dtype").and_then(Value::as_str).map(|n| DType::from_name(n).expect("dtype name")).unwrap_or(dt)
}

/// The little-endian bytes of a tensor's elements: bit patterns for floats,
/// values for integers (i1 as 0/1).
fn le_bytes(v: &Value, dt: DType) -> Vec<u8> {
    let raw = v["bits"].as_array().expect("bits").iter().map(|b| b.as_i64().expect("element"));
    raw.flat_map(|b| match dt.bytes() {
        1 => vec![b as u8],
        2 => (b as u16).to_le_bytes().to_vec(),
        4 => (b as u32).to_le_bytes().to_vec(),
        _ => b.to_le_bytes().to_vec(),
    })
    .collect()
}

fn tensor(v: &Value, dt: DType) -> Tensor {
    let dt = dtype_of(v, dt);
    Tensor::from_le_bytes(shape(v), dt, &le_bytes(v, dt)).expect("case tensor")
}

fn attr(v: &Value) -> Attr {
    match v {
        Value::Bool(b) => Attr::Bool(*b),
        Value::Array(a) => Attr::IntArray(a.iter().map(|i| i.as_i64().expect("int")).collect()),
        Value::Number(n) if n.is_f64() => Attr::F32(n.as_f64().expect("float") as f32),
        Value::Number(n) => Attr::Int(n.as_i64().expect("int")),
        other => panic!("attribute {other}"),
    }
}

/// A 16-bit float pattern as an integer that is monotone in the value (so
/// ulp distances are differences).
fn ordered(b: u16) -> i32 {
    if b & 0x8000 != 0 { -((b & 0x7fff) as i32) } else { b as i32 }
}

#[test]
fn every_float_op_rounds_bf16_and_f16_results_like_numpy() {
    let text = include_str!("lowp/cases.json");
    let file: Value = serde_json::from_str(text).expect("cases.json");
    let cases = file["cases"].as_array().expect("cases");
    let mut ops = std::collections::BTreeSet::new();
    let mut off_by_one = 0;
    let mut mixed = 0;
    for c in cases {
        let op = c["op"].as_str().expect("op");
        let kind = OpKind::from_name(op).unwrap_or_else(|| panic!("unknown op {op}"));
        let dt = DType::from_name(c["dtype"].as_str().expect("dtype")).expect("dtype name");
        let attrs: Attrs = c["attrs"].as_object().expect("attrs").iter().map(|(k, v)| (k.clone(), attr(v))).collect();
        let inputs: Vec<Tensor> = c["inputs"].as_array().expect("inputs").iter().map(|v| tensor(v, dt)).collect();
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let want = &c["result"];
        let rdt = dtype_of(want, dt);
        let ty = TensorType::new(shape(want).iter().map(|&d| d as u64).collect::<Vec<_>>(), rdt);
        let got = eval_kind(kind, &attrs, &refs, &ty).unwrap_or_else(|e| panic!("{op} {dt:?}: {}", e.message));
        assert_eq!(got.dtype, rdt, "{op}");
        ops.insert(kind);
        if rdt.bytes() != 2 {
            // f32, integer and i1 results (casts up, comparisons): exact.
            assert_eq!(got.to_le_bytes(), le_bytes(want, rdt), "{op} {dt:?} -> {rdt:?}");
            mixed += 1;
            continue;
        }
        // The interpreter holds the rounded value itself (what the next op reads),
        // not an f32 that only the byte encoding would round.
        assert!(got.data.iter().all(|&v| v.is_nan() || ckopt_interp::tensor::round_to(dt, v) == v), "{op} {dt:?}: unrounded result");
        let got_bits: Vec<u16> = got.to_le_bytes().chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect();
        let ulps = c["ulps"].as_i64().expect("ulps") as i32;
        for (i, (&g, &w)) in got_bits.iter().zip(&bits(want)).enumerate() {
            let d = (ordered(g) - ordered(w)).abs();
            assert!(d <= ulps, "{op} {dt:?} element {i}: got {g:#06x}, numpy {w:#06x} ({d} ulps, {ulps} allowed)");
            off_by_one += usize::from(d == 1);
        }
        assert_eq!(got_bits.len(), bits(want).len(), "{op}");
    }
    // Every float op (and the data movement ops) has a case.
    let missing: Vec<&str> = OpKind::ALL
        .iter()
        .filter(|k| k.elem_class().accepts(DType::BF16) && **k != OpKind::Return && !ops.contains(k))
        .map(|k| k.name())
        // constant's elements are f32 by definition (its type rule).
        .filter(|n| *n != "constant")
        .collect();
    assert!(missing.is_empty(), "ops without a low-precision case: {missing:?}");
    for k in [OpKind::Cast, OpKind::Select, OpKind::Gather, OpKind::TakeAlong, OpKind::Eq, OpKind::Lt] {
        assert!(ops.contains(&k), "no low-precision case of ck.{}", k.name());
    }
    assert!(mixed > 0);
    eprintln!("{} cases over {} ops ({mixed} with f32/integer/i1 results); {off_by_one} elements one ulp off numpy", cases.len(), ops.len());
}
