//! Generates the ONNX protobuf message types from the vendored
//! `proto/onnx.proto` (ONNX 1.23.2, proto2) with protox (a protobuf compiler
//! in Rust) and prost-build: no system `protoc` is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    let fds = protox::compile(["onnx.proto"], ["proto"])?;
    prost_build::Config::new().compile_fds(fds)?;
    Ok(())
}
