#!/usr/bin/env python3
"""Writes the ONNX project's own node test cases for the ops ckopt imports
as fixtures under test/onnx/node/<case>/ (model.onnx, input_N.pb,
output_N.pb: the layout of onnx/backend/test/data/node).

The cases, their inputs and their expected outputs come from the `onnx`
package (onnx.backend.test.case.node, reference outputs computed by numpy);
nothing here computes an expected value. Selection: every case of at most 64 KiB of data (including
the `_expanded` function-body variants) whose nodes all have op types from
SUPPORTED and whose inputs and outputs are all float32 (ck computes in f32).

One change to the models, which is how exporters write them anyway: inputs
that ckopt needs to know at import time (integer inputs such as shapes,
axes, indices and split sizes; BatchNormalization's running mean and
variance; Pow's exponent; Dropout's ratio) are moved from graph inputs to
initializers holding the test's data. Every other input stays a graph
input and is fed from input_N.pb.

Run from the repository root with the fixture environment
(scripts/onnx-env.sh): ~/.cache/ckopt/onnx-venv/bin/python test/onnx/gen_node_fixtures.py
"""
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node as node_cases

# The op types ckopt's importer converts or folds (onnx/src/lib.rs SUPPORTED_OPS).
SUPPORTED = {
    "Add", "AveragePool", "BatchNormalization", "Cast", "Concat", "Constant", "ConstantOfShape", "Conv", "Div",
    "Dropout", "Equal", "Erf", "Exp", "Expand", "Flatten", "Gather", "Gelu", "Gemm", "GlobalAveragePool",
    "GlobalMaxPool", "HardSigmoid", "HardSwish", "Identity", "LayerNormalization", "Log", "LogSoftmax", "MatMul", "MaxPool", "Mod", "Mul", "Neg",
    "Pow", "Range", "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Size", "Slice",
    "Softmax", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze", "Where",
}
# Float inputs that must be constants for ckopt (op type -> input indices).
CONST_FLOAT_INPUTS = {"BatchNormalization": {3, 4}, "Pow": {1}, "Dropout": {1}}

# Cases whose data exceed this are left out (only a few 3-D pooling cases).
MAX_CASE_BYTES = 64 * 1024
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "node")


def is_f32(a):
    return isinstance(a, np.ndarray) and a.dtype == np.float32


def main():
    if os.path.isdir(OUT):
        shutil.rmtree(OUT)
    os.makedirs(OUT)
    written = 0
    for case in sorted(node_cases.collect_testcases(), key=lambda c: c.name):
        model = case.model
        ops = {n.op_type for n in model.graph.node}
        if not ops <= SUPPORTED or any(n.domain not in ("", "ai.onnx") for n in model.graph.node):
            continue
        inputs, outputs = case.data_sets[0]
        if not all(isinstance(a, np.ndarray) for a in list(inputs) + list(outputs)):
            continue
        if not all(is_f32(a) for a in outputs):
            continue
        graph = model.graph
        consumers = {}
        for n in graph.node:
            for k, name in enumerate(n.input):
                consumers.setdefault(name, []).append((n.op_type, k))
        keep_vi, keep_data, inits = [], [], []
        for vi, arr in zip(graph.input, inputs):
            const = not is_f32(arr) or any(k in CONST_FLOAT_INPUTS.get(op, ()) for op, k in consumers.get(vi.name, []))
            if const:
                inits.append(numpy_helper.from_array(arr, vi.name))
            else:
                keep_vi.append(vi)
                keep_data.append(arr)
        if not keep_vi:
            continue  # nothing left to feed: the whole case folds at import
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
