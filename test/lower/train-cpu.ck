/// ckopt-run --train on the cpu backend: @resmlp_step (the sgd pass's step
/// function, or one ckopt-run builds in-process from @resmlp_grad) compiled
/// once, its parameters resident in the backend; the losses equal the
/// interpreter's (1e-5 relative) and are the same bits with and without
/// remat{mode=sqrt}; the report gives the arena it allocated (=
/// ck.arena_bytes) and the distinct kernels compiled. (The input is
/// generated: this file only holds the RUN lines.)
// REQUIRES: lower
// RUN: ckopt-gen resmlp --depth 8 --width 16 --batch 32 > %t.ck
// RUN: ckopt-opt --pass-pipeline='autodiff,memplan' %t.ck -o %t.grad.ck
// RUN: ckopt-opt --pass-pipeline='autodiff,inplace,sgd{lr=0.05},fuse,memplan' %t.ck -o %t.none.ck
// RUN: ckopt-opt --pass-pipeline='autodiff,inplace,sgd{lr=0.05},fuse,remat{mode=sqrt},memplan' %t.ck -o %t.sqrt.ck
// RUN: ckopt-run %t.none.ck --func resmlp --train --steps 4 --lr 0.05 | grep '^step' > %t.interp
// RUN: ckopt-run %t.grad.ck --func resmlp --backend cpu --train --steps 4 --lr 0.05 | grep '^step' > %t.cpu.built
// RUN: ckopt-run %t.none.ck --func resmlp --backend cpu --train --steps 4 --lr 0.05 --report %t.none.json | grep '^step' > %t.cpu.none
// RUN: ckopt-run %t.sqrt.ck --func resmlp --backend cpu --train --steps 4 --lr 0.05 --report %t.sqrt.json | grep '^step' > %t.cpu.sqrt
// RUN: diff %t.cpu.none %t.cpu.sqrt
// RUN: diff %t.cpu.none %t.cpu.built
// RUN: python3 -c "import sys; a=[float(l.split()[-1]) for l in open(sys.argv[1])]; b=[float(l.split()[-1]) for l in open(sys.argv[2])]; assert len(a)==len(b)==4 and all(abs(x-y)<=1e-5*max(1,abs(x)) for x,y in zip(a,b)), (a,b)" %t.interp %t.cpu.none
// RUN: FileCheck %s --check-prefix=STEPS < %t.cpu.sqrt
// RUN: FileCheck %s --check-prefix=NONE < %t.none.json
// RUN: FileCheck %s --check-prefix=SQRT < %t.sqrt.json

// STEPS: step 1/4 loss
// STEPS: step 4/4 loss

// NONE-DAG: "backend": "cpu"
// NONE-DAG: "step_function": "resmlp_step"
// NONE-DAG: "arena_bytes": [[NONE_ARENA:[0-9]+]]
// NONE-DAG: "arena_allocated_bytes": [[NONE_ARENA]]
// NONE-DAG: "distinct_kernels":
// SQRT-DAG: "backend": "cpu"
// SQRT-DAG: "arena_bytes": [[SQRT_ARENA:[0-9]+]]
// SQRT-DAG: "arena_allocated_bytes": [[SQRT_ARENA]]
