//! The ONNX project's own node test cases (onnx.backend.test, written to
//! test/onnx/node by test/onnx/gen_node_fixtures.py) through the importer
//! and ckopt's interpreter.
//!
//! Property pinned: every case either imports and reproduces ONNX's
//! expected outputs (element types included; integers and bools exactly,
//! floats within |got - want| <= 1e-5 |want| + 1e-6 per element),
//! or is listed in UNSUPPORTED with the diagnostic it must give (a clean
//! error naming the node; never a panic, never a wrong result). A listed
//! case that starts importing fails the test too, so the list stays exact.

#![allow(clippy::unwrap_used)]

mod common;

use ckopt_interp::{Tensor, run_func};
use ckopt_onnx::{ImportOptions, import_file};

pub const RTOL: f32 = 1e-5;
pub const ATOL: f32 = 1e-6;

/// Cases the importer rejects, with a fragment of the expected error.
const UNSUPPORTED: &[(&str, &str)] = &[
    ("test_averagepool_1d_default", "only 2-D pooling (NCHW input) is supported, got [1, 3, 32]"),
    ("test_averagepool_2d_ceil", "ceil_mode=1 is not supported"),
    ("test_averagepool_2d_ceil_last_window_starts_on_pad", "ceil_mode=1 is not supported"),
    ("test_averagepool_2d_dilations", "dilations [2, 2] are not supported (only 1)"),
    ("test_averagepool_3d_dilations_small", "only 2-D pooling (NCHW input) is supported, got [1, 1, 4, 4, 4]"),
    ("test_batchnorm_epsilon_training_mode", "training_mode=1 is not supported"),
    ("test_batchnorm_example_training_mode", "training_mode=1 is not supported"),
    ("test_castlike_BFLOAT16_to_FLOAT_expanded", "graph input 'like' has dimension 0 of size 0"),
    ("test_castlike_FLOAT16_to_FLOAT_expanded", "graph input 'like' has dimension 0 of size 0"),
    ("test_castlike_FLOAT_to_BFLOAT16_expanded", "graph input 'like' has dimension 0 of size 0"),
    ("test_castlike_FLOAT_to_FLOAT16_expanded", "graph input 'like' has dimension 0 of size 0"),
    ("test_causal_conv_with_state_decode_step_expanded", "only 2-D convolutions (NCHW input, 4-D filter) are supported, got [2, 4, 4] and [4, 1, 4]"),
    ("test_causal_conv_with_state_with_bias_and_past_state_expanded", "only 2-D convolutions (NCHW input, 4-D filter) are supported, got [2, 4, 11] and [4, 1, 4]"),
    ("test_causal_conv_with_state_with_past_state_expanded", "only 2-D convolutions (NCHW input, 4-D filter) are supported, got [2, 4, 11] and [4, 1, 4]"),
    ("test_div_int32_trunc", "'ck.div' op computes in a float element type (f32, bf16, f16), got i32"),
    ("test_maxpool_1d_default", "only 2-D pooling (NCHW input) is supported, got [1, 3, 32]"),
    ("test_maxpool_2d_ceil", "ceil_mode=1 is not supported"),
    ("test_maxpool_2d_ceil_output_size_reduce_by_one", "ceil_mode=1 is not supported"),
    ("test_maxpool_2d_dilations", "dilations [2, 2] are not supported (only 1)"),
    ("test_maxpool_3d_dilations", "only 2-D pooling (NCHW input) is supported, got [1, 1, 4, 4, 4]"),
    ("test_maxpool_3d_dilations_use_ref_impl", "only 2-D pooling (NCHW input) is supported, got [1, 1, 4, 4, 4]"),
    ("test_maxpool_with_argmax_2d_precomputed_pads", "MaxPool's Indices output is not supported"),
    ("test_maxpool_with_argmax_2d_precomputed_strides", "MaxPool's Indices output is not supported"),
    ("test_mod_broadcast", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_float16_mixed_sign_fmod_0", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_float32_mixed_sign_fmod_0", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_float_edge_cases_fmod_0_float16", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_float_edge_cases_fmod_0_float32", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_int64_fmod", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_mixed_sign_float16", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_mixed_sign_float32", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_mixed_sign_int32", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_mod_mixed_sign_int64", "Mod on a computed (non-constant) tensor is not supported"),
    ("test_not_2d", "opset 1 is older than 7, the oldest ckopt imports"),
    ("test_not_3d", "opset 1 is older than 7, the oldest ckopt imports"),
    ("test_not_4d", "opset 1 is older than 7, the oldest ckopt imports"),
    ("test_pow", "Pow needs a constant exponent (one number)"),
    ("test_pow_bcast_array", "Pow needs a constant exponent (one number)"),
    ("test_pow_example", "Pow needs a constant exponent (one number)"),
    ("test_pow_types_float32_int32", "Pow needs a constant exponent (one number)"),
    ("test_pow_types_float32_int64", "Pow needs a constant exponent (one number)"),
    ("test_pow_types_int32_float32", "Pow needs a constant exponent (one number)"),
    ("test_pow_types_int32_int32", "Pow needs a constant exponent (one number)"),
    ("test_pow_types_int64_float32", "Pow needs a constant exponent (one number)"),
    ("test_pow_types_int64_int64", "Pow needs a constant exponent (one number)"),
    ("test_reduce_log_sum_empty_set_expanded", "graph input \'data\' has dimension 1 of size 0"),
    ("test_reduce_max_bool_inputs", "'ck.reduce_max' op computes in a float element type (f32, bf16, f16), got i1"),
    ("test_reduce_max_empty_set", "graph input \'data\' has dimension 1 of size 0"),
    ("test_reduce_max_empty_set_bool", "graph input 'data' has dimension 1 of size 0"),
    ("test_reduce_sum_empty_set", "graph input \'data\' has dimension 1 of size 0"),
    ("test_reduce_sum_empty_set_non_reduced_axis_zero", "graph input \'data\' has dimension 1 of size 0"),
    ("test_reduce_sum_square_empty_set_expanded", "graph input \'data\' has dimension 1 of size 0"),
    ("test_reshape_allowzero_reordered", "graph input \'data\' has dimension 0 of size 0"),
    ("test_rotary_embedding_3d_input_expanded", "an empty slice (size [2, 3, 4, 0]) is not supported"),
    ("test_rotary_embedding_expanded", "an empty slice (size [2, 3, 4, 0]) is not supported"),
    ("test_rotary_embedding_interleaved_expanded", "an empty slice (size [2, 3, 4, 0]) is not supported"),
    ("test_rotary_embedding_no_position_ids_expanded", "an empty slice (size [2, 3, 4, 0]) is not supported"),
    ("test_rotary_embedding_no_position_ids_interleaved_expanded", "an empty slice (size [2, 3, 4, 0]) is not supported"),
    ("test_rotary_embedding_with_interleaved_rotary_dim_expanded", "Slice with step 2 is not supported (step 1 is)"),
    ("test_slice_neg_steps", "Slice with step -1 is not supported (step 1 is)"),
    ("test_slice_start_out_of_bounds", "an empty slice (size [20, 0, 5]) is not supported"),
    ("test_split_zero_size_splits_opset13", "graph input \'input\' has dimension 0 of size 0"),
    ("test_split_zero_size_splits_opset18", "graph input \'input\' has dimension 0 of size 0"),
    ("test_training_dropout_zero_ratio_mask", "Dropout's mask output is not supported in training mode"),
    ("test_tril_zero", "graph input 'x' has dimension 1 of size 0"),
    ("test_triu_zero", "graph input 'x' has dimension 0 of size 0"),
];

#[test]
fn onnx_node_cases_match_their_expected_outputs_on_the_interpreter() {
    let cases = common::node_cases();
    assert!(cases.len() > 250, "only {} cases found", cases.len());
    let mut failures = Vec::new();
    let mut passed = 0;
    for dir in &cases {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let expected_err = UNSUPPORTED.iter().find(|(n, _)| *n == name).map(|(_, e)| *e);
        let imported = import_file(&dir.join("model.onnx"), &ImportOptions::default());
        let (module, params) = match (imported, expected_err) {
            (Err(e), Some(frag)) if e.to_string().contains(frag) => continue,
            (Err(e), _) => {
                failures.push(format!("{name}: import error: {e}"));
                continue;
            }
            (Ok(_), Some(frag)) => {
                failures.push(format!("{name}: listed as unsupported ({frag}) but imports"));
                continue;
            }
            (Ok(x), None) => x,
        };
        let f = &module.funcs[0];
        let mut inputs: Vec<Tensor> = common::typed_tensors(dir, "input").into_iter().map(typed).collect();
        inputs.extend(params.into_iter().map(|t| Tensor::new(t.shape.iter().map(|&d| d as usize).collect(), t.data).unwrap()));
        let outs = match run_func(&module, &f.name, &inputs) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{name}: run error: {e}"));
                continue;
            }
        };
        let want = common::typed_tensors(dir, "output");
        if outs.len() != want.len() {
            failures.push(format!("{name}: {} outputs, expected {}", outs.len(), want.len()));
            continue;
        }
        let mut ok = true;
        for (k, (g, w)) in outs.iter().zip(&want).enumerate() {
            let shape: Vec<usize> = w.shape.iter().map(|&d| d as usize).collect();
            if g.shape != shape {
                failures.push(format!("{name}: output {k} has shape {:?}, expected {shape:?}", g.shape));
                ok = false;
                continue;
            }
            match common::compare(g.dtype, &g.data, &g.ints, w, RTOL, ATOL) {
                Ok(0.0) => {}
                Ok(e) => {
                    failures.push(format!("{name}: output {k} off by {e:e} beyond tolerance"));
                    ok = false;
                }
                Err(m) => {
                    failures.push(format!("{name}: output {k}: {m}"));
                    ok = false;
                }
            }
        }
        if ok {
            passed += 1;
        }
    }
    for (n, _) in UNSUPPORTED {
        if !cases.iter().any(|d| d.file_name().is_some_and(|f| f == *n)) {
            failures.push(format!("{n}: listed as unsupported but not a fixture"));
        }
    }
    eprintln!("{passed} of {} ONNX node cases match; {} listed as unsupported", cases.len(), UNSUPPORTED.len());
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
}

/// An interpreter tensor of a test-data tensor's element type.
fn typed(t: ckopt_onnx::TypedTensor) -> Tensor {
    let shape: Vec<usize> = t.shape.iter().map(|&d| d as usize).collect();
    if t.dtype.is_float() { Tensor::from_floats(shape, t.dtype, t.floats).unwrap() } else { Tensor::from_ints(shape, t.dtype, t.ints).unwrap() }
}
