//! The ONNX protobuf messages (`onnx.ModelProto`, `GraphProto`, `NodeProto`,
//! `TensorProto`, ...), generated at build time by prost-build from the
//! vendored `proto/onnx.proto` (see `build.rs`). Field names follow the
//! proto file; proto2 optional scalars are `Option`s.

#![allow(clippy::all, missing_docs)]

include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
