// RUN: ckopt-opt %s | FileCheck %s --check-prefix=PRINT
// RUN: ckopt-run %s --func ints --inputs %S/Inputs/ints.json --outputs - | FileCheck %s --check-prefix=OUT
// RUN: ckopt-opt %s --pass-pipeline=memplan --memory-report=- -o /dev/null | FileCheck %s --check-prefix=BYTES
// RUN: echo '{"inputs": [{"shape": [2, 3], "data": [1, 2, 3, 4, 5.5, 6]}, {"shape": [3], "data": [1, 0, 1]}]}' > %t.float.json
// RUN: not ckopt-run %s --func ints --inputs %t.float.json 2>&1 | FileCheck %s --check-prefix=FLOAT
// FLOAT: float.json: error: inputs[0]: "data"[4] is 5.5, but i64 data must be integers
// RUN: echo '{"inputs": [{"shape": [2, 3], "dtype": "f32", "data": [1, 2, 3, 4, 5, 6]}, {"shape": [3], "data": [1, 0, 1]}]}' > %t.kind.json
// RUN: not ckopt-run %s --func ints --inputs %t.kind.json 2>&1 | FileCheck %s --check-prefix=KIND
// KIND: kind.json: error: input 0 (%ids) of @ints has element type f32, expected tensor<2x3xi64>

/// Integer and bool element types parse, verify and print; integer
/// arithmetic wraps, data movement keeps any type; their values are placed
/// and counted at their real sizes (i64: 8 bytes, i1: 1 byte).

// PRINT-LABEL: func.func @ints(%ids: tensor<2x3xi64>, %mask: tensor<3xi1>) -> (tensor<3x2xi64>, tensor<2x3xi1>)
// PRINT-NEXT: %t = "ck.transpose"(%ids) {perm = [1, 0]} : (tensor<2x3xi64>) -> tensor<3x2xi64>
// OUT: "dtype": "i64", "data": [-100, 4, 1, 5, 2, 6]
// OUT: "dtype": "i1", "data": [true, false, true, true, false, true]
// BYTES: "function": "ints"
// BYTES: "total_bytes": 150
func.func @ints(%ids: tensor<2x3xi64>, %mask: tensor<3xi1>) -> (tensor<3x2xi64>, tensor<2x3xi1>) {
  %t = "ck.transpose"(%ids) {perm = [1, 0]} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<3x2xi64>
  %s = "ck.add"(%t, %one) : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
  %m = "ck.broadcast"(%mask) {dims = [1]} : (tensor<3xi1>) -> tensor<2x3xi1>
  "ck.return"(%s, %m) : (tensor<3x2xi64>, tensor<2x3xi1>) -> ()
}
