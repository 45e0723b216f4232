//! Bad input gives a diagnostic naming the thing, never a panic: truncated
//! and non-ONNX files, unsupported ops (named with node, op type, opset),
//! missing external data, dynamic shapes without --batch, non-float inputs.

#![allow(clippy::unwrap_used)]

mod common;

use ckopt_onnx::proto::{
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto, TensorProto, TensorShapeProto,
    TypeProto, ValueInfoProto, tensor_shape_proto, type_proto,
};
use ckopt_onnx::{ImportOptions, import_bytes, import_file};
use prost::Message;

fn vi(name: &str, dims: &[Option<i64>], elem: i32) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| tensor_shape_proto::Dimension {
            value: Some(match d {
                Some(v) => tensor_shape_proto::dimension::Value::DimValue(*v),
                None => tensor_shape_proto::dimension::Value::DimParam("batch".into()),
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor { elem_type: Some(elem), shape: Some(TensorShapeProto { dim }) })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn model(nodes: Vec<NodeProto>, input: ValueInfoProto, inits: Vec<TensorProto>) -> ModelProto {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![OperatorSetIdProto { domain: Some(String::new()), version: Some(17) }],
        graph: Some(GraphProto {
            name: Some("g".into()),
            node: nodes,
            input: vec![input],
            output: vec![vi("y", &[Some(2)], 1)],
            initializer: inits,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn node(op: &str, name: &str, ins: &[&str]) -> NodeProto {
    NodeProto {
        op_type: Some(op.into()),
        name: Some(name.into()),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: vec!["y".into()],
        ..Default::default()
    }
}

fn import(m: &ModelProto, opts: &ImportOptions) -> Result<String, String> {
    import_bytes(&m.encode_to_vec(), "m.onnx", None, opts).map(|(m, _)| ckopt_ir::print_module(&m)).map_err(|d| d.to_string())
}

#[test]
fn truncated_and_non_onnx_files_are_errors() {
    let bytes = std::fs::read(common::fixtures().join("models/cnn/model.onnx")).unwrap();
    for cut in (0..bytes.len()).step_by(97) {
        let r = import_bytes(&bytes[..cut], "cut.onnx", None, &ImportOptions { batch: Some(1), ..Default::default() });
        assert!(r.is_err(), "a model cut at {cut} bytes imported");
    }
    let e = import_bytes(b"module {\n}\n", "x.ck", None, &ImportOptions::default()).unwrap_err().to_string();
    assert!(e.starts_with("x.ck: error: ") && e.contains("non-ONNX"), "{e}");
    let e = import_file(std::path::Path::new("/nonexistent/m.onnx"), &ImportOptions::default()).unwrap_err().to_string();
    assert!(e.contains("cannot read '/nonexistent/m.onnx'"), "{e}");
}

#[test]
fn an_unsupported_op_names_the_node_its_type_and_the_opset() {
    let m = model(vec![node("Softplus", "act1", &["x"])], vi("x", &[Some(2)], 1), vec![]);
    let e = import(&m, &ImportOptions::default()).unwrap_err();
    assert!(e.contains("node 'act1' (Softplus, opset 17): unsupported ONNX op 'Softplus'"), "{e}");
    let mut custom = node("Relu", "r", &["x"]);
    custom.domain = Some("com.microsoft".into());
    let e = import(&model(vec![custom], vi("x", &[Some(2)], 1), vec![]), &ImportOptions::default()).unwrap_err();
    assert!(e.contains("op domain 'com.microsoft' is not supported"), "{e}");
}

#[test]
fn dynamic_dims_need_batch_and_only_lead() {
    let m = model(vec![node("Relu", "r", &["x"])], vi("x", &[None], 1), vec![]);
    let e = import(&m, &ImportOptions::default()).unwrap_err();
    assert!(e.contains("graph input 'x' has a dynamic dimension 'batch' at position 0") && e.contains("--batch=N"), "{e}");
    let ok = import(&m, &ImportOptions { batch: Some(2), ..Default::default() }).unwrap();
    assert!(ok.contains("%x: tensor<2xf32> {ck.name = \"x\"}"), "{ok}");
    let m2 = model(vec![node("Relu", "r", &["x"])], vi("x", &[Some(2), None], 1), vec![]);
    let e = import(&m2, &ImportOptions { batch: Some(2), ..Default::default() }).unwrap_err();
    assert!(e.contains("only the leading (batch) dimension may be dynamic"), "{e}");
}

#[test]
fn integer_inputs_import_and_float_only_ops_on_them_are_located_errors() {
    let ok = import(&model(vec![node("Identity", "i", &["ids"])], vi("ids", &[Some(2)], 7), vec![]), &ImportOptions::default()).unwrap();
    assert!(ok.contains("%ids: tensor<2xi64> {ck.name = \"ids\"}"), "{ok}");
    let ok = import(&model(vec![node("Not", "n", &["m"])], vi("m", &[Some(3)], 9), vec![]), &ImportOptions::default()).unwrap();
    assert!(ok.contains("%m: tensor<3xi1>") && ok.contains("ck.not"), "{ok}");
    // An integer tensor where the op needs float: the node and the type.
    let e = import(&model(vec![node("Relu", "r", &["ids"])], vi("ids", &[Some(2)], 7), vec![]), &ImportOptions::default()).unwrap_err();
    assert!(e.contains("node 'r' (Relu, opset 17): cannot express this node in ck") && e.contains("i64"), "{e}");
    // Element types ck does not have: named with the input.
    let e = import(&model(vec![node("Identity", "i", &["b"])], vi("b", &[Some(2)], 2), vec![]), &ImportOptions::default()).unwrap_err();
    assert!(e.contains("graph input 'b' has element type uint8"), "{e}");
    let e = import(&model(vec![node("Identity", "i", &["d"])], vi("d", &[Some(2)], 11), vec![]), &ImportOptions::default()).unwrap_err();
    assert!(e.contains("graph input 'd' has element type double"), "{e}");
}

#[test]
fn missing_external_data_names_the_initializer_and_file() {
    let w = TensorProto {
        name: Some("w".into()),
        dims: vec![2],
        data_type: Some(1),
        data_location: Some(1),
        external_data: vec![StringStringEntryProto { key: Some("location".into()), value: Some("weights.bin".into()) }],
        ..Default::default()
    };
    let m = model(vec![node("Add", "a", &["x", "w"])], vi("x", &[Some(2)], 1), vec![w]);
    let dir = std::env::temp_dir().join(format!("ckopt-onnx-ext-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.onnx");
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let e = import_file(&path, &ImportOptions::default()).unwrap_err().to_string();
    assert!(e.contains("initializer 'w': missing external data file") && e.contains("weights.bin"), "{e}");
    // With the file present (8 bytes: two floats) it imports and w is a parameter.
    std::fs::write(dir.join("weights.bin"), [1f32.to_le_bytes(), 2f32.to_le_bytes()].concat()).unwrap();
    let (_, params) = import_file(&path, &ImportOptions::default()).unwrap();
    assert_eq!(params[0].data, vec![1.0, 2.0]);
    std::fs::write(dir.join("weights.bin"), [0u8; 5]).unwrap();
    let e = import_file(&path, &ImportOptions::default()).unwrap_err().to_string();
    assert!(e.contains("needs 8 bytes"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn loss_options_check_the_outputs() {
    let m = model(vec![node("Relu", "r", &["x"])], vi("x", &[Some(2)], 1), vec![]);
    let e = import(&m, &ImportOptions { loss: ckopt_onnx::Loss::CrossEntropy, ..Default::default() }).unwrap_err();
    assert!(e.contains("--loss=cross-entropy needs a [N, C] output"), "{e}");
    let text = import(&m, &ImportOptions { loss: ckopt_onnx::Loss::Mse, ..Default::default() }).unwrap();
    assert!(text.contains("%target: tensor<2xf32>") && text.contains("-> tensor<f32>"), "{text}");
    let e = import(&m, &ImportOptions { loss: ckopt_onnx::Loss::CrossEntropyIndex, ..Default::default() }).unwrap_err();
    assert!(e.contains("--loss=cross-entropy-index needs float logits [N, C]"), "{e}");
    let m3 = model(vec![node("Relu", "r", &["x"])], vi("x", &[Some(2), Some(3), Some(5)], 1), vec![]);
    let text = import(&m3, &ImportOptions { loss: ckopt_onnx::Loss::CrossEntropyIndex, ..Default::default() }).unwrap();
    assert!(text.contains("%labels: tensor<2x3xi64>") && text.contains("ck.cross_entropy") && text.contains("-> tensor<f32>"), "{text}");
}

/// Pow with a constant integer exponent becomes products by squaring (x^3:
/// two muls, x^5: three); other exponents are located errors.
#[test]
fn pow_takes_small_integer_exponents() {
    let e = |v: f32| TensorProto { name: Some("e".into()), data_type: Some(1), float_data: vec![v], ..Default::default() };
    let pow = |v: f32| import(&model(vec![node("Pow", "p", &["x", "e"])], vi("x", &[Some(2)], 1), vec![e(v)]), &ImportOptions::default());
    for (v, muls) in [(1.0, 0), (2.0, 1), (3.0, 2), (4.0, 2), (5.0, 3), (16.0, 4)] {
        let ok = pow(v).unwrap();
        assert_eq!(ok.matches("\"ck.mul\"").count(), muls, "x^{v}: {ok}");
    }
    assert!(pow(0.5).unwrap().contains("ck.sqrt"));
    let bad = pow(2.5).unwrap_err();
    assert!(bad.contains("node 'p' (Pow, opset 17)") && bad.contains("Pow with exponent 2.5 is not supported"), "{bad}");
}

/// Conv with `group`: a depthwise Conv imports as `ck.conv2d {groups}`; a
/// group that does not fit the shapes, or is < 1, is a located error.
#[test]
fn grouped_conv_imports_and_bad_groups_are_located_errors() {
    let w = |dims: &[i64]| TensorProto {
        name: Some("w".into()),
        dims: dims.to_vec(),
        data_type: Some(1),
        float_data: vec![0.5; dims.iter().product::<i64>() as usize],
        ..Default::default()
    };
    let conv = |group: i64, wd: &[i64]| {
        let mut n = node("Conv", "dw", &["x", "w"]);
        n.attribute.push(ckopt_onnx::proto::AttributeProto { name: Some("group".into()), i: Some(group), ..Default::default() });
        n.attribute.push(ckopt_onnx::proto::AttributeProto { name: Some("pads".into()), ints: vec![1, 1, 1, 1], ..Default::default() });
        import(&model(vec![n], vi("x", &[Some(1), Some(4), Some(5), Some(5)], 1), vec![w(wd)]), &ImportOptions::default())
    };
    let ok = conv(4, &[4, 1, 3, 3]).unwrap();
    assert!(ok.contains("\"ck.conv2d\"") && ok.contains("groups = 4 : i64") && ok.contains("-> tensor<1x4x5x5xf32>"), "{ok}");
    let ok = conv(2, &[6, 2, 3, 3]).unwrap();
    assert!(ok.contains("groups = 2 : i64") && ok.contains("-> tensor<1x6x5x5xf32>"), "{ok}");
    let ok = conv(1, &[3, 4, 3, 3]).unwrap();
    assert!(!ok.contains("groups"), "group 1 is the default: {ok}");
    let e = conv(2, &[4, 1, 3, 3]).unwrap_err();
    assert!(e.contains("node 'dw' (Conv, opset 17)") && e.contains("group 2 does not fit X [1, 4, 5, 5] and W [4, 1, 3, 3]"), "{e}");
    let e = conv(4, &[6, 1, 3, 3]).unwrap_err();
    assert!(e.contains("group 4 does not fit"), "{e}");
    let e = conv(0, &[4, 1, 3, 3]).unwrap_err();
    assert!(e.contains("group 0 must be >= 1"), "{e}");
}
