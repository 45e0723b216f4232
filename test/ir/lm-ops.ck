// RUN: ckopt-opt %s | FileCheck %s --check-prefix=PRINT
// RUN: ckopt-opt %s | %mlir-opt --allow-unregistered-dialect | ckopt-opt | FileCheck %s --check-prefix=BACK
// RUN: ckopt-run %s --func lm --inputs %S/Inputs/lm.json --outputs - | FileCheck %s --check-prefix=OUT
// RUN: echo '{"inputs": [{"shape": [3, 2], "dtype": "f32", "data": [0, 0, 0, 0, 0, 0]}, {"shape": [2], "dtype": "i64", "data": [1, 3]}]}' > %t.oob.json
// RUN: not ckopt-run %s --func lm --inputs %t.oob.json 2>&1 | FileCheck %s --check-prefix=OOB
// RUN: ckopt-opt %s --pass-pipeline=memplan --memory-report=- -o /dev/null | FileCheck %s --check-prefix=BYTES

/// The language-model ops (issue 19) parse, verify, print (also through
/// upstream mlir-opt), run on the interpreter, and report an out-of-range
/// index at run time naming the op, the index and the bound.

// PRINT-LABEL: func.func @lm(%table: tensor<3x2xf32>, %ids: tensor<2xi64>) -> (tensor<f32>, tensor<2x2xf32>, tensor<2x2xi1>)
// PRINT-NEXT: %e = "ck.gather"(%table, %ids) {axis = 0 : i64} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
// PRINT-NEXT: %r = "ck.iota"() {dim = 0 : i64} : () -> tensor<2x2xi64>
// PRINT-NEXT: %c = "ck.iota"() {dim = 1 : i64} : () -> tensor<2x2xi64>
// PRINT-NEXT: %m = "ck.ge"(%r, %c) : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
// PRINT: %y = "ck.select"(%m, %e, %ninf) : (tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
// PRINT: %lab = "ck.cast"(%l64) : (tensor<2xi64>) -> tensor<2xi32>
// PRINT: %loss = "ck.cross_entropy"(%e, %lab) {ignore_index = 0 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>

// ids [1, 2] pick table rows [[2, 3], [4, 5]]; the causal mask keeps (0,0),
// (1,0), (1,1). Labels ids - 1 = [0, 1]; ignore_index 0 drops row 0, so
// loss = -log_softmax([4, 5])[1] = ln(1 + e^-1) = 0.31326169.
// BACK: "ck.gather"(%{{.*}}) {axis = 0 : i64} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
// BACK: "ck.ge"(%{{.*}}) : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
// BACK: "ck.cross_entropy"(%{{.*}}) {ignore_index = 0 : i64} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
// BACK: "ck.take_along_grad"(%{{.*}}) {axis = 1 : i64} : (tensor<2x1xi32>, tensor<2x1xf32>) -> tensor<2x3xf32>
// OUT: "data": [0.31326
// OUT: "data": [2.0, null, 4.0, 5.0]
// OUT: "dtype": "i1", "data": [true, false, true, true]
// OOB: error: 'ck.gather' op index 3 at position [1] of the index operand is out of range [0, 3)
// BYTES: "function": "lm"
func.func @lm(%table: tensor<3x2xf32>, %ids: tensor<2xi64>) -> (tensor<f32>, tensor<2x2xf32>, tensor<2x2xi1>) {
  %e = "ck.gather"(%table, %ids) {axis = 0} : (tensor<3x2xf32>, tensor<2xi64>) -> tensor<2x2xf32>
  %r = "ck.iota"() {dim = 0} : () -> tensor<2x2xi64>
  %c = "ck.iota"() {dim = 1} : () -> tensor<2x2xi64>
  %m = "ck.ge"(%r, %c) : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
  %ninf = "ck.fill"() {value = 0xFF800000 : f32} : () -> tensor<2x2xf32>
  %y = "ck.select"(%m, %e, %ninf) : (tensor<2x2xi1>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<2xi64>
  %l64 = "ck.sub"(%ids, %one) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %lab = "ck.cast"(%l64) : (tensor<2xi64>) -> tensor<2xi32>
  %loss = "ck.cross_entropy"(%e, %lab) {ignore_index = 0} : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
  "ck.return"(%loss, %y, %m) : (tensor<f32>, tensor<2x2xf32>, tensor<2x2xi1>) -> ()
}

func.func @more(%x: tensor<2x3xf32>, %i: tensor<2x1xi32>, %b: tensor<2x3xi1>) -> (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xbf16>) {
  %t = "ck.take_along"(%x, %i) {axis = 1} : (tensor<2x3xf32>, tensor<2x1xi32>) -> tensor<2x1xf32>
  %g = "ck.take_along_grad"(%i, %t) {axis = 1} : (tensor<2x1xi32>, tensor<2x1xf32>) -> tensor<2x3xf32>
  %ids = "ck.cast"(%i) : (tensor<2x1xi32>) -> tensor<2x1xi64>
  %flat = "ck.reshape"(%ids) : (tensor<2x1xi64>) -> tensor<2xi64>
  %gg = "ck.gather_grad"(%flat, %x) {axis = 0} : (tensor<2xi64>, tensor<2x3xf32>) -> tensor<3x3xf32>
  %e = "ck.eq"(%x, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %n = "ck.ne"(%x, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %lt = "ck.lt"(%x, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %le = "ck.le"(%x, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %gt = "ck.gt"(%x, %g) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %a = "ck.and"(%e, %lt) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %o = "ck.or"(%a, %le) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %o2 = "ck.or"(%o, %gt) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %o3 = "ck.and"(%o2, %n) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %nb = "ck.not"(%b) : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %k = "ck.and"(%o3, %nb) : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %h = "ck.cast"(%g) : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %z = "ck.fill"() {value = 0.0 : f32} : () -> tensor<2x2xf32>
  %zl = "ck.fill"() {value = 1.0 : f32} : () -> tensor<2xi64>
  %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<f32>
  %ceg = "ck.cross_entropy_grad"(%z, %zl, %one) : (tensor<2x2xf32>, tensor<2xi64>, tensor<f32>) -> tensor<2x2xf32>
  "ck.return"(%t, %g, %k, %h) : (tensor<2x1xf32>, tensor<2x3xf32>, tensor<2x3xi1>, tensor<2x3xbf16>) -> ()
}
