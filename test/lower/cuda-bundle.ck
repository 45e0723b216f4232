/// --to=cuda-bundle writes one binary file (magic CKOPTCB, format version,
/// sm, payload length and checksum, then the PTX, launches, step programs
/// and training signatures) for ckopt-exec, which rejects damaged bundles
/// each with its own message (before it looks for a GPU).
// REQUIRES: lower
// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | ckopt-opt --pass-pipeline='autodiff,inplace,sgd{lr=0.1},fuse,remat{mode=sqrt},memplan' > %t.ck
// RUN: ckopt-translate --to=cuda-bundle %t.ck -o %t.ckb
// RUN: head -c 7 %t.ckb | FileCheck %s --check-prefix=MAGIC
// MAGIC: CKOPTCB
// RUN: ckopt-translate --to=cuda-bundle --func mlp_step %t.ck -o %t.step.ckb
// RUN: not ckopt-translate --to=cuda-bundle %t.ck 2>&1 | FileCheck %s --check-prefix=NOOUT
// NOOUT: ckopt-translate: error: --to=cuda-bundle writes a binary file: give it with -o OUT.ckb
// RUN: not ckopt-translate --to=cuda-bundle --func nope %t.ck -o %t.x 2>&1 | FileCheck %s --check-prefix=NOFUNC
// NOFUNC: error: no function @nope in the module (it has @mlp, @mlp_grad, @mlp_step)
// RUN: printf 'hello' > %t.bad
// RUN: not ckopt-exec %t.bad 2>&1 | FileCheck %s --check-prefix=BADMAGIC
// BADMAGIC: ckopt-exec: error: {{.*}}.bad: not a ckopt cuda bundle (wrong magic bytes); make one with `ckopt-translate --to=cuda-bundle FILE -o OUT.ckb`
// RUN: head -c 1000 %t.ckb > %t.trunc
// RUN: not ckopt-exec %t.trunc 2>&1 | FileCheck %s --check-prefix=TRUNC
// TRUNC: ckopt-exec: error: {{.*}}.trunc: truncated bundle: the header announces {{[0-9]+}} bytes of payload, the file has 968
// RUN: cp %t.ckb %t.v2 && printf '\002' | dd of=%t.v2 bs=1 seek=8 conv=notrunc 2>/dev/null
// RUN: not ckopt-exec %t.v2 2>&1 | FileCheck %s --check-prefix=VERSION
// VERSION: bundle format version 2, but this runtime reads version 1; re-create the bundle with the ckopt-translate of this ckopt
// RUN: cp %t.ckb %t.flip && printf 'X' | dd of=%t.flip bs=1 seek=100 conv=notrunc 2>/dev/null
// RUN: not ckopt-exec %t.flip 2>&1 | FileCheck %s --check-prefix=FLIP
// FLIP: corrupted bundle: the payload's checksum does not match the header
// RUN: not ckopt-exec %t.step.ckb --func mlp 2>&1 | FileCheck %s --check-prefix=NOPROG
// NOPROG: ckopt-exec: error: the bundle has no function @mlp; it has @mlp_step
// RUN: not ckopt-exec %t.ckb --train --func mlp_grad --lr=-1 2>&1 | FileCheck %s --check-prefix=LR
// LR: ckopt-exec: error: --lr must be a positive number, got -1
// RUN: echo '{"inputs": []}' > %t.json
// RUN: not ckopt-exec %t.ckb --func mlp --inputs %t.json 2>&1 | FileCheck %s --check-prefix=INPUTS
// INPUTS: error: @mlp takes 6 argument(s) but 0 input(s) were given
// RUN: not ckopt-exec %t.ckb --frobnicate 2>&1 | FileCheck %s --check-prefix=FLAG
// FLAG: error: unexpected argument '--frobnicate'
// RUN: ckopt-exec --help | FileCheck %s --check-prefix=HELP
// HELP: Runs or trains a function of a cuda bundle on the GPU (no LLVM, no MLIR)
// HELP: --train
// HELP: --tf32
