/// ckopt-run errors: each prints a clear (located where possible)
/// diagnostic on stderr and exits 1, never a panic.

/// --backend cpu|cuda: covered by test/lower/run-cpu.ck and
/// test/lower/run-cuda-nodriver.ck (they need the `lower` feature; without
/// it ckopt-run says so and exits 1).

// RUN: not ckopt-run %s --backend tpu 2>&1 | FileCheck %s --check-prefix=BACKEND
// BACKEND: invalid value 'tpu' for '--backend <BACKEND>'

// RUN: not ckopt-run %s --func nope 2>&1 | FileCheck %s --check-prefix=FUNC
// FUNC: run-errors.ck: error: no function @nope in the module (functions: @f)

// RUN: not ckopt-run %t.missing.ck 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: ckopt-run: error: cannot read '{{.*}}missing.ck'

// RUN: echo '{"inputs": []}' > %t.count.json
// RUN: not ckopt-run %s --inputs %t.count.json 2>&1 | FileCheck %s --check-prefix=COUNT
// COUNT:      count.json: error: @f takes 1 argument(s) but 0 input(s) were given
// COUNT-NEXT: run-errors.ck:[[@LINE+27]]:3: note: @f is defined here

// RUN: echo '{"inputs": [{"shape": [3], "data": [1.0, 2.0, 3.0]}]}' > %t.shape.json
// RUN: not ckopt-run %s --inputs %t.shape.json 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: shape.json: error: input 0 (%x) of @f has shape [3] with 3 values, expected tensor<2xf32>

// RUN: echo '{"inputs": [{"shape": [2], "data": [1.0]}]}' > %t.len.json
// RUN: not ckopt-run %s --inputs %t.len.json 2>&1 | FileCheck %s --check-prefix=LEN
// LEN: len.json: error: inputs[0]: shape [2] has 2 elements but "data" has 1 values

// RUN: echo '{"inputs": [{"shape": [2], "data": [1.0, "a"]}]}' > %t.syntax.json
// RUN: not ckopt-run %s --inputs %t.syntax.json 2>&1 | FileCheck %s --check-prefix=JSON
// JSON: syntax.json:1:{{[0-9]+}}: error: invalid tensor JSON: invalid type: string "a", expected a number or a boolean

// RUN: not ckopt-run %s --seed 1 --inputs %t.len.json 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: the argument '--seed <N>' cannot be used with '--inputs <FILE.json>'

/// A malformed module is rendered with its source line and a caret.
// RUN: echo 'module { func.func @g() -> () { "ck.bogus"() : () -> () } }' | not ckopt-run - 2>&1 | FileCheck %s --check-prefix=PARSE
// PARSE: <stdin>:1:{{[0-9]+}}: error: 'ck.bogus' is not an op of the ck dialect
// PARSE-NEXT: module { func.func @g()
// PARSE-NEXT: {{ *}}^

// RUN: echo 'module {}' | not ckopt-run - 2>&1 | FileCheck %s --check-prefix=EMPTY
// EMPTY: <stdin>: error: the module has no function to run

module {
  func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "ck.return"(%y) : (tensor<2xf32>) -> ()
  }
}
