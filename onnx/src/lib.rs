//! ckopt-onnx: ONNX models (as PyTorch, JAX and Keras export them) become ck
//! functions, and their weights safetensors files.
//!
//! `import_file(path, &ImportOptions)` reads a `ModelProto` and returns a
//! module with ONE function `@NAME` (the graph name, made a valid symbol)
//! plus the parameters' values:
//!
//! - graph inputs become arguments in graph order (their ONNX names kept in
//!   `ck.name`), of element type f32, f16, bf16, i64, i32 or i1 (ONNX float,
//!   float16, bfloat16, int64, int32, bool); symbolic dims of an input take `--batch` at position 0 and
//!   are an error elsewhere (ck shapes are static);
//! - float initializers that feed computation become `{ck.param}` arguments
//!   after the inputs, in initializer order, with `ck.name = "<onnx name>"`;
//!   their values come back as `NamedTensor`s (safetensors via `weights`);
//!   initializers read only as constants (shapes, BatchNormalization's
//!   running statistics, exponents) are folded, not parameters;
//! - `Constant` nodes and everything computed only from constants (the
//!   Shape/Gather/Unsqueeze/Concat/Cast subgraphs that compute shapes) are
//!   evaluated at import (`fold`); a float constant used as data becomes
//!   `ck.fill` (all elements equal) or `ck.constant`;
//! - each supported node becomes a few ck ops (`ops`: ONNX broadcasting is
//!   explicit `ck.broadcast`, Softmax is max/exp/sum, Gemm is matmul plus
//!   scale and a broadcast add, ...);
//! - the loss (`Loss`): `None` returns the graph outputs; `Mse` adds a
//!   `%target` argument and returns `mean((y - target)^2)`; `CrossEntropy`
//!   adds one-hot `%labels [N, C]` and returns
//!   `-sum(labels * log_softmax(y, 1)) / N`; `CrossEntropyIndex` adds
//!   integer `%labels` (i64, the output's shape without its last, class,
//!   dim) and returns their mean cross-entropy (`ck.cross_entropy`,
//!   ignore_index -100). Then `autodiff` gives `@NAME_grad`.
//!
//! Anything else (an op or attribute value outside the supported set, a
//! graph input of another element type, a dynamic shape without `--batch`, a truncated or
//! non-ONNX file, missing external data) is a `Diag` naming the file and,
//! for a node, its name, op type and opset. No input makes this crate panic.
//!
//! Parsing: prost types generated from the vendored `proto/onnx.proto` by
//! protox + prost-build at build time (pure Rust, no system protoc); see
//! docs/onnx.md for why not burn's `onnx-ir`.

pub mod fold;
mod import;
mod ops;
pub mod proto;
pub mod tensor;
pub mod weights;

pub use import::{ck_dtype, import_bytes, import_file, read_tensor_file, read_typed_tensor_file};
pub use weights::{read_safetensors, write_safetensors};

/// The loss the imported function returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Loss {
    /// Return the graph outputs unchanged.
    #[default]
    None,
    /// Mean squared error against a `%target` argument of the output's shape.
    Mse,
    /// Softmax cross-entropy of the `[N, C]` output against one-hot `%labels`.
    CrossEntropy,
    /// Softmax cross-entropy against integer class indices: the output's
    /// last dim is the classes, `%labels` (i64) has the other dims; the mean
    /// over labels other than -100 (PyTorch's `ignore_index`) of
    /// `-log_softmax(y)[.., label]`, one `ck.cross_entropy`.
    CrossEntropyIndex,
}

impl Loss {
    /// Parses `none`, `mse`, `cross-entropy` or `cross-entropy-index`.
    pub fn from_name(s: &str) -> Option<Loss> {
        match s {
            "none" => Some(Loss::None),
            "mse" => Some(Loss::Mse),
            "cross-entropy" => Some(Loss::CrossEntropy),
            "cross-entropy-index" => Some(Loss::CrossEntropyIndex),
            _ => None,
        }
    }
}

/// How to import.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportOptions {
    pub loss: Loss,
    /// The size of symbolic leading (batch) dims of the graph inputs.
    pub batch: Option<u64>,
    /// Function name (default: the graph name, sanitized; `model` if empty).
    pub name: Option<String>,
}

/// A named f32 tensor: a parameter's value (ONNX initializer name, shape, row-major data).
#[derive(Clone, Debug, PartialEq)]
pub struct NamedTensor {
    pub name: String,
    pub shape: Vec<u64>,
    pub data: Vec<f32>,
}

/// A tensor with its element type (ONNX test data: `read_typed_tensor_file`).
#[derive(Clone, Debug, PartialEq)]
pub struct TypedTensor {
    pub name: String,
    pub shape: Vec<u64>,
    pub dtype: ckopt_ir::DType,
    /// The elements of a float tensor (f32 values; empty otherwise).
    pub floats: Vec<f32>,
    /// The elements of an integer or bool tensor (empty otherwise).
    pub ints: Vec<i64>,
}

/// The values of the `{ck.param}` arguments, in argument order.
pub type Params = Vec<NamedTensor>;

/// The ONNX op types the importer converts (besides constant folding).
pub const SUPPORTED_OPS: &[&str] = &[
    "Add", "And", "AveragePool", "BatchNormalization", "Cast", "Concat", "Constant", "ConstantOfShape", "Conv", "Div",
    "Dropout", "Equal", "Erf", "Exp", "Expand", "Flatten", "Gather", "GatherElements", "Gelu", "Gemm",
    "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "HardSigmoid", "HardSwish", "Identity",
    "LayerNormalization", "Less", "LessOrEqual", "Log", "LogSoftmax", "MatMul", "MaxPool", "Mod", "Mul", "Neg", "Not",
    "Or", "Pow", "Range", "ReduceMax", "ReduceMean", "ReduceSum", "Relu", "Reshape", "Shape", "Sigmoid", "Size",
    "Slice", "Softmax", "SoftmaxCrossEntropyLoss", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Trilu",
    "Unsqueeze", "Where", "Xor",
];
