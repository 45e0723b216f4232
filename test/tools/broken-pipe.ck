/// A reader that closes the pipe early (`| head`) is not an error: the tools
/// stop writing and exit 0 (lit runs pipelines with pipefail, so a failing
/// ckopt-gen or ckopt-translate would fail this test).
// RUN: ckopt-gen mlp --depth 2000 | head -n 1 | FileCheck %s
// RUN: ckopt-gen mlp --depth 2000 | ckopt-opt | head -n 1 | FileCheck %s
// CHECK: module {
