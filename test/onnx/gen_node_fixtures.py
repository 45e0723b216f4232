#!/usr/bin/env python3
"""Writes the ONNX project's own node test cases for the ops ckopt imports
as fixtures under test/onnx/node/<case>/ (model.onnx, input_N.pb,
output_N.pb: the layout of onnx/backend/test/data/node).

The cases, their inputs and their expected outputs come from the `onnx`
package (onnx.backend.test.case.node, reference outputs computed by numpy);
nothing here computes an expected value. Selection: every case of at most 64 KiB of data (including
the `_expanded` function-body variants) whose nodes all have op types from
SUPPORTED and whose inputs and outputs all have ck element types (float32,
float16, bfloat16, int64, int32, bool).

One change to the models, which is how exporters write them anyway: inputs
that ckopt needs to know at import time (shapes, axes, split sizes, slice
bounds, Range's arguments, Trilu's k; BatchNormalization's running mean and
variance; Pow's exponent; Dropout's ratio and training mode: CONST_INPUTS)
are moved from graph inputs to initializers holding the test's data. Every
other input, integer and bool ones included (Gather's indices, Where's
condition, comparison operands), stays a graph input and is fed from
input_N.pb. A case left with no graph input at all is kept: it checks the
import-time folding (its outputs are constants).

Run from the repository root with the fixture environment
(scripts/onnx-env.sh): ~/.cache/ckopt/onnx-venv/bin/python test/onnx/gen_node_fixtures.py
"""
import os
import shutil
import sys

import ml_dtypes
import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases

# The op types ckopt's importer converts or folds (onnx/src/lib.rs SUPPORTED_OPS).
SUPPORTED = {
    "Add", "And", "AveragePool", "BatchNormalization", "Cast", "Concat", "Constant", "ConstantOfShape", "Conv", "Div",
    "Dropout", "Equal", "Erf", "Exp", "Expand", "Flatten", "Gather", "GatherElements", "Gelu", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity",
    "LayerNormalization", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "MaxPool", "Mod", "Mul", "Neg", "Not",
    "Or", "Pow", "Range", "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Size",
    "Slice", "Softmax", "SoftmaxCrossEntropyLoss", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Trilu",
    "Unsqueeze", "Where", "Xor",
}
# Inputs that must be constants for ckopt (op type -> input indices).
CONST_INPUTS = {
    "BatchNormalization": {3, 4}, "Pow": {1}, "Dropout": {1, 2}, "Reshape": {1}, "Expand": {1},
    "Slice": {1, 2, 3, 4}, "Split": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "ReduceMean": {1}, "ReduceSum": {1},
    "ReduceMax": {1}, "Range": {0, 1, 2}, "Trilu": {1}, "ConstantOfShape": {0},
}
# The element types ck has (numpy dtypes of the test data).
CK_DTYPES = {np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16), np.dtype(np.int64), np.dtype(np.int32),
             np.dtype(np.bool_)}

# Cases whose expected outputs come from numpy's random generator (a
# training-mode Dropout mask), which no other implementation reproduces.
RANDOM = {"test_training_dropout", "test_training_dropout_default", "test_training_dropout_default_mask",
          "test_training_dropout_mask"}
# Cases whose data exceed this are left out (only a few 3-D pooling cases).
MAX_CASE_BYTES = 64 * 1024
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")


def as_array(a):
    """The test data as a numpy array: numpy scalars and TensorProtos (the Cast cases) converted."""
    if isinstance(a, onnx.TensorProto):
        return numpy_helper.to_array(a)
    if isinstance(a, np.generic):
        return np.asarray(a)
    return a


def is_ck(a):
    return isinstance(a, np.ndarray) and a.dtype in CK_DTYPES


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    written = 0
    for case in sorted(node_cases.collect_testcases(), key=lambda c: c.name):
        model = case.model
        if case.name in RANDOM:
            continue
        ops = {n.op_type for n in model.graph.node}
        if not ops <= SUPPORTED or any(n.domain not in ("", "ai.onnx") for n in model.graph.node):
            continue
        inputs, outputs = case.data_sets[0]
        inputs, outputs = [as_array(a) for a in inputs], [as_array(a) for a in outputs]
        if not all(isinstance(a, np.ndarray) for a in list(inputs) + list(outputs)):
            continue
        if not all(is_ck(a) for a in list(inputs) + list(outputs)):
            continue
        graph = model.graph
        consumers = {}
        for n in graph.node:
            for k, name in enumerate(n.input):
                consumers.setdefault(name, []).append((n.op_type, k))
        keep_vi, keep_data, inits = [], [], []
        for vi, arr in zip(graph.input, inputs):
            const = any(k in CONST_INPUTS.get(op, ()) for op, k in consumers.get(vi.name, []))
            if const:
                inits.append(numpy_helper.from_array(arr, vi.name))
            else:
                keep_vi.append(vi)
                keep_data.append(arr)
        if sum(a.nbytes for a in list(inputs) + list(outputs)) > MAX_CASE_BYTES:
            continue  # keep the committed fixtures small
        del graph.input[:]
        graph.input.extend(keep_vi)
        graph.initializer.extend(inits)
        d = os.path.join(OUT, case.name)
        os.makedirs(d)
        onnx.save(model, os.path.join(d, "model.onnx"))
        for i, a in enumerate(keep_data):
            with open(os.path.join(d, f"input_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, graph.input[i].name).SerializeToString())
        for i, a in enumerate(outputs):
            with open(os.path.join(d, f"output_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(a, graph.output[i].name).SerializeToString())
        written += 1
    print(f"wrote {written} node test cases to {OUT} (onnx {onnx.__version__})")


if __name__ == "__main__":
    sys.exit(main())
