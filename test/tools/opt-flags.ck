/// ckopt-opt's flags (docs/tools.md): pass list, pipeline errors, split input,
/// IR dumps, statistics, timing, -o, stdin, --verify-each, exit codes.

// RUN: ckopt-opt --list-passes | FileCheck %s --check-prefix=LIST
// LIST-DAG: canonicalize: {{.+}}
// LIST-DAG: cse: {{.+}}
// LIST-DAG: dce: {{.+}}

/// --help shows the same pass list (one source: the registry).
// RUN: ckopt-opt --help | FileCheck %s --check-prefix=HELP
// HELP: --pass-pipeline <PIPELINE>
// HELP: --verify-each[=<BOOL>]
// HELP: --memory-report <FILE|->
// HELP: Passes (--list-passes):
// HELP: dce: {{.+}}

/// An unknown pass is an error that lists the valid passes; exit 1.
// RUN: not ckopt-opt %s --pass-pipeline=cse,bogus 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// UNKNOWN: error: unknown pass 'bogus'; valid passes: {{.*}}canonicalize{{.*}}cse{{.*}}dce

/// An unknown option is an error naming the pass; exit 1.
// RUN: not ckopt-opt %s '--pass-pipeline=dce{depth=3}' 2>&1 | FileCheck %s --check-prefix=OPTION
// OPTION: error: pass 'dce' has no option 'depth'

/// A malformed pipeline is an error too.
// RUN: not ckopt-opt %s '--pass-pipeline=cse{' 2>&1 | FileCheck %s --check-prefix=MALFORMED
// MALFORMED: error: unterminated '{' in options of pass 'cse'

/// An unknown flag exits 1 (not clap's 2).
// RUN: not ckopt-opt %s --no-such-flag 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: error: unexpected argument '--no-such-flag'

/// --split-input-file processes each case and joins outputs with `// -----`.
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce | FileCheck %s --check-prefix=SPLIT
// SPLIT:      func.func @first
// SPLIT-NEXT:   %a = "ck.exp"(%x)
// SPLIT-NEXT:   %s = "ck.add"(%a, %a)
// SPLIT-NEXT:   "ck.return"(%s)
// SPLIT-NEXT: }
// SPLIT-NEXT: }
// SPLIT-NEXT: // -----
// SPLIT-NEXT: module {
// SPLIT-NEXT:   func.func @second
// SPLIT-NEXT:   "ck.return"(%y)

/// MLIR's anchored pipeline syntax means the same.
// RUN: ckopt-opt %s --split-input-file '--pass-pipeline=builtin.module(cse,func.func(dce))' | FileCheck %s --check-prefix=SPLIT
// RUN: not ckopt-opt %s '--pass-pipeline=builtin.module(cse' 2>&1 | FileCheck %s --check-prefix=PAREN
// PAREN: error: unbalanced '(' in pipeline

/// Without --split-input-file the markers are plain comments, so the file
/// holds two modules: a located error with the source line and a caret.
// RUN: not ckopt-opt %s 2>&1 | FileCheck %s --check-prefix=NOSPLIT
// NOSPLIT:      opt-flags.ck:{{[0-9]+}}:1: error: {{.+}}
// NOSPLIT-NEXT: module {
// NOSPLIT-NEXT: ^

/// --print-ir-after-all dumps the module after each pass to stderr, with MLIR's header.
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce --print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP:      // -----// IR Dump After cse //----- //
// DUMP-NEXT: module {
// DUMP-NEXT:   func.func @first
// DUMP:      %b = "ck.neg"(%a)
// DUMP:      // -----// IR Dump After dce //----- //
// DUMP-NEXT: module {
// DUMP-NOT:  "ck.neg"
// DUMP:      IR Dump After cse
// DUMP:      func.func @second

/// A failing pass is dumped with MLIR's "Failed" header before the error
/// (here remat on a generated model's gradient, given a budget no plan can meet).
// RUN: ckopt-gen mlp --depth 2 --width 4 --batch 2 | not ckopt-opt - '--pass-pipeline=autodiff,remat{mode=optimal budget=1B}' --print-ir-after-all -o /dev/null 2>&1 | FileCheck %s --check-prefix=FAILDUMP
// FAILDUMP:      // -----// IR Dump After autodiff //----- //
// FAILDUMP:      // -----// IR Dump After remat Failed //----- //
// FAILDUMP-NEXT: module {
// FAILDUMP:      error: remat

/// --pass-statistics reports per pass, summed over the cases.
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce --pass-statistics -o /dev/null 2>&1 | FileCheck %s --check-prefix=STATS
// STATS:      ... Pass statistics report ...
// STATS:      cse
// STATS-NEXT:   (S) 1 num-cse'd
// STATS-NEXT: dce
// STATS-NEXT:   (S) 2 num-dce'd

/// --timing prints a time report with one line per pipeline entry and a total.
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce --timing -o /dev/null 2>&1 | FileCheck %s --check-prefix=TIMING
// TIMING:      ... Execution time report ...
// TIMING:      Total Execution Time: {{[0-9.]+}} seconds
// TIMING:      ----Wall Time----  ----Name----
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  cse
// TIMING-NEXT: {{[0-9.]+}} ({{ *[0-9.]+}}%)  dce
// TIMING-NEXT: {{[0-9.]+}} (100.0%)  Total

/// -o writes the IR to a file; stdin is read for `-`; the output re-parses.
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce -o %t.out.ck
// RUN: cat %t.out.ck | ckopt-opt - --split-input-file | FileCheck %s --check-prefix=SPLIT
// RUN: ckopt-opt --split-input-file < %t.out.ck | FileCheck %s --check-prefix=STDIN
// STDIN: func.func @second

/// --verify-each is on by default and can be turned off; both accept valid IR.
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce --verify-each=false | FileCheck %s --check-prefix=SPLIT
// RUN: ckopt-opt %s --split-input-file --pass-pipeline=cse,dce --verify-each=true | FileCheck %s --check-prefix=SPLIT
// RUN: not ckopt-opt %s --verify-each=maybe 2>&1 | FileCheck %s --check-prefix=VEBAD
// VEBAD: error: invalid value 'maybe'

/// A missing file is an error with exit 1.
// RUN: not ckopt-opt %t.does-not-exist 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: error: cannot read '{{.*}}does-not-exist'

module {
  func.func @first(%x: tensor<4xf32>) -> tensor<4xf32> {
    %a = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %a2 = "ck.exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    %b = "ck.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %s = "ck.add"(%a, %a2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    "ck.return"(%s) : (tensor<4xf32>) -> ()
  }
}

// -----

module {
  func.func @second(%y: tensor<2xf32>) -> tensor<2xf32> {
    %dead = "ck.relu"(%y) : (tensor<2xf32>) -> tensor<2xf32>
    "ck.return"(%y) : (tensor<2xf32>) -> ()
  }
}
