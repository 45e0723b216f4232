/// ckopt-run --train on the cpu backend: SGD through @resmlp_grad compiled
/// once and run in its arena; the losses equal the interpreter's step for
/// step, with and without remat{mode=sqrt}; the report gives the arena it
/// allocated (= ck.arena_bytes). (The input is generated: this file only
/// holds the RUN lines.)
// REQUIRES: lower
// RUN: ckopt-gen resmlp --depth 8 --width 16 --batch 32 > %t.ck
// RUN: ckopt-opt --pass-pipeline='autodiff,memplan' %t.ck -o %t.none.ck
// RUN: ckopt-opt --pass-pipeline='autodiff,remat{mode=sqrt},memplan' %t.ck -o %t.sqrt.ck
// RUN: ckopt-run %t.none.ck --func resmlp --train --steps 4 --lr 0.05 | grep '^step' > %t.interp
// RUN: ckopt-run %t.none.ck --func resmlp --backend cpu --train --steps 4 --lr 0.05 --report %t.none.json | grep '^step' > %t.cpu.none
// RUN: ckopt-run %t.sqrt.ck --func resmlp --backend cpu --train --steps 4 --lr 0.05 --report %t.sqrt.json | grep '^step' > %t.cpu.sqrt
// RUN: diff %t.interp %t.cpu.none
// RUN: diff %t.interp %t.cpu.sqrt
// RUN: FileCheck %s --check-prefix=STEPS < %t.cpu.sqrt
// RUN: FileCheck %s --check-prefix=NONE < %t.none.json
// RUN: FileCheck %s --check-prefix=SQRT < %t.sqrt.json

// STEPS: step 1/4 loss
// STEPS: step 4/4 loss

// NONE-DAG: "backend": "cpu"
// NONE-DAG: "arena_bytes": [[NONE_ARENA:[0-9]+]]
// NONE-DAG: "arena_allocated_bytes": [[NONE_ARENA]]
// SQRT-DAG: "backend": "cpu"
// SQRT-DAG: "arena_bytes": [[SQRT_ARENA:[0-9]+]]
// SQRT-DAG: "arena_allocated_bytes": [[SQRT_ARENA]]
