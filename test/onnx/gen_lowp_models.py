#!/usr/bin/env python3
"""Writes the low-precision ONNX models that ckopt's ONNX tests import, with
their reference outputs, to test/onnx/models/<name>/:

  model.onnx     the model, built with onnx.helper (opset 17)
  input_0.pb     a seeded random input (TensorProto of the graph input's type)
  output_0.pb    the reference output (TensorProto of the graph output's type)

Models (an MLP 6 -> 12 -> 3, batch 4, static shapes):
- `mlp_f16`: float16 end to end: a float16 input, float16 weight and bias
  initializers, MatMul + Add + Relu, MatMul + Add, a float16 output. The
  reference is onnxruntime's (CPUExecutionProvider, its float16 kernels).
- `mlp_bf16`: a float input Cast to bfloat16, bfloat16 initializers,
  MatMul + Add + Relu, MatMul + Add, Cast back to float. onnxruntime's CPU
  provider has no bfloat16 MatMul, so the reference is numpy with
  ml_dtypes: each op computed in float32 (MatMul accumulating in float32)
  and its result rounded to bfloat16 (nearest even), as ONNX defines each
  op's bfloat16 result.

Needs onnx, onnxruntime, numpy, ml_dtypes (scripts/onnx-env.sh). Run from
the repository root: ~/.cache/ckopt/onnx-venv/bin/python test/onnx/gen_lowp_models.py
"""
import os

import ml_dtypes
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
OPSET = 17
B, I, H, O = 4, 6, 12, 3


def weights(rng):
    return {
        "fc1.weight": rng.standard_normal((I, H)).astype(np.float32) * 0.5,
        "fc1.bias": rng.standard_normal((H,)).astype(np.float32) * 0.1,
        "fc2.weight": rng.standard_normal((H, O)).astype(np.float32) * 0.5,
        "fc2.bias": rng.standard_normal((O,)).astype(np.float32) * 0.1,
    }


def mlp_nodes(x, y):
    return [
        helper.make_node("MatMul", [x, "fc1.weight"], ["h0"]),
        helper.make_node("Add", ["h0", "fc1.bias"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "fc2.weight"], ["h3"]),
        helper.make_node("Add", ["h3", "fc2.bias"], [y]),
    ]


def write(name, graph, x, y):
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="gen_lowp_models.py")
    onnx.checker.check_model(m)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(m, os.path.join(d, "model.onnx"))
    with open(os.path.join(d, "input_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    with open(os.path.join(d, "output_0.pb"), "wb") as f:
        f.write(numpy_helper.from_array(y, "y").SerializeToString())
    print(f"{name}: {os.path.getsize(os.path.join(d, 'model.onnx'))} bytes, output {y.dtype} {y.shape}")
    return m


def mlp_f16(rng):
    w = {k: v.astype(np.float16) for k, v in weights(rng).items()}
    x = rng.standard_normal((B, I)).astype(np.float16)
    g = helper.make_graph(
        mlp_nodes("x", "y"),
        "mlp_f16",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [B, I])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [B, O])],
        [numpy_helper.from_array(v, k) for k, v in w.items()],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
    sess = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == np.float16
    write("mlp_f16", g, x, y)


def bf16(a):
    return np.asarray(a, dtype=np.float32).astype(ml_dtypes.bfloat16)


def mlp_bf16(rng):
    w = {k: bf16(v) for k, v in weights(rng).items()}
    x = rng.standard_normal((B, I)).astype(np.float32)
    nodes = [helper.make_node("Cast", ["x"], ["xb"], to=TensorProto.BFLOAT16)]
    nodes += mlp_nodes("xb", "yb")
    nodes += [helper.make_node("Cast", ["yb"], ["y"], to=TensorProto.FLOAT)]
    inits = []
    for k, v in w.items():
        t = helper.make_tensor(k, TensorProto.BFLOAT16, v.shape, v.tobytes(), raw=True)
        inits.append(t)
    g = helper.make_graph(
        nodes,
        "mlp_bf16",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, I])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, O])],
        inits,
    )
    f = {k: v.astype(np.float32) for k, v in w.items()}
    xb = bf16(x).astype(np.float32)
    h = bf16(xb @ f["fc1.weight"]).astype(np.float32)
    h = bf16(h + f["fc1.bias"]).astype(np.float32)
    h = np.maximum(h, 0.0)
    h = bf16(h @ f["fc2.weight"]).astype(np.float32)
    y = bf16(h + f["fc2.bias"]).astype(np.float32)
    try:
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)])
        ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        print("mlp_bf16: onnxruntime accepted the model (the reference is still numpy + ml_dtypes)")
    except Exception as e:  # noqa: BLE001 - report why onnxruntime is not the reference
        print(f"mlp_bf16: onnxruntime refuses it: {str(e).splitlines()[0][:160]}")
    write("mlp_bf16", g, x, y)


def main():
    mlp_f16(np.random.default_rng(23))
    mlp_bf16(np.random.default_rng(24))


if __name__ == "__main__":
    main()
