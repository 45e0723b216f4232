/// ckopt-gen rejects bad options with a clear message and exit code 1.

// RUN: not ckopt-gen vgg 2>&1 | FileCheck %s --check-prefix=MODEL
// MODEL: unknown model 'vgg' (valid: mlp, resmlp, lstm, resnet, transformer, gpt)

// RUN: not ckopt-gen mlp --depth 0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: ckopt-gen: error: --depth must be between 1 and 2147483648, got 0

// RUN: not ckopt-gen mlp --heads 2 2>&1 | FileCheck %s --check-prefix=APPLY
// APPLY: ckopt-gen: error: option --heads does not apply to model 'mlp' (it takes --depth, --width, --batch)

// RUN: not ckopt-gen transformer --width 10 --heads 4 2>&1 | FileCheck %s --check-prefix=HEADS
// HEADS: ckopt-gen: error: --heads 4 must divide --width 10

// RUN: not ckopt-gen mlp --width 2147483648 --depth 1 2>&1 | FileCheck %s --check-prefix=OVF
// OVF: ckopt-gen: error: cannot build model 'mlp': argument %w0 of type tensor<2147483648x2147483648xf32> has a byte size that overflows u64

// RUN: not ckopt-gen mlp --depth 100000000 2>&1 | FileCheck %s --check-prefix=OPS
// OPS: ckopt-gen: error: model 'mlp' with these sizes would have more than 4000000 ops; reduce --depth

// RUN: not ckopt-gen mlp --depth=-3 2>&1 | FileCheck %s --check-prefix=NEG
// NEG: error: invalid value '-3' for '--depth <DEPTH>'

// RUN: not ckopt-gen mlp -o %t.missing-dir/x.ck 2>&1 | FileCheck %s --check-prefix=WRITE
// WRITE: ckopt-gen: error: cannot write '{{.*}}x.ck'

// RUN: ckopt-gen --help | FileCheck %s --check-prefix=HELP
// HELP: Usage: ckopt-gen [OPTIONS] <MODEL>
// HELP: MODELS
// HELP: mlp
// HELP: resmlp
// HELP: lstm
// HELP: resnet
// HELP: transformer
