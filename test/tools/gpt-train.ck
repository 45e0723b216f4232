// RUN: ckopt-gen gpt --depth 1 --seq 8 --width 16 --heads 2 --vocab 11 --batch 2 -o %t.ck
// RUN: ckopt-run %t.ck --train --steps 20 --lr 0.5 | FileCheck %s
// RUN: ckopt-opt %t.ck --pass-pipeline='autodiff,inplace,sgd{lr=0.5},remat{mode=sqrt},memplan' -o %t.step.ck
// RUN: ckopt-run %t.step.ck --train --steps 20 | FileCheck %s

/// ckopt-gen's gpt (integer token ids and labels, gather embeddings, a
/// causal mask, cross_entropy) trains on the interpreter: from about
/// ln(11) = 2.4 the loss falls below 1 in 20 steps (new random batches of
/// ids and labels in {0, 1} each step), and the step planned with
/// remat{mode=sqrt} and memplan gives the same losses.

// CHECK: step 1/20 loss 2.366562
// CHECK: step 20/20 loss 0.704472
// CHECK: trained @gpt on interp with @gpt_step{{.*}}: 20 steps, {{.*}}first loss 2.366562, last loss 0.704472,
