/// Every remat mode on every generated model gives gradients bit-identical
/// to no remat: the remat output runs in ONE arena at its memplan offsets
/// (`ckopt-run --arena`, so an overlap or an illegal in-place write would
/// change the bits) and its outputs equal the plain run without remat. The
/// memplan checker runs inside memplan. The optimal budgets lie between the
/// log plan's peak and no remat's on these sizes, so they force recompute.

// RUN: ckopt-gen mlp --depth 12 --width 8 --batch 4 -o %t.mlp.ck
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline='autodiff,inplace,memplan' -o %t.mlp.base.ck
// RUN: ckopt-run %t.mlp.base.ck --func mlp_grad --seed 5 --outputs %t.mlp.base.json
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' -o %t.mlp.sqrt.ck
// RUN: ckopt-run %t.mlp.sqrt.ck --func mlp_grad --seed 5 --arena --outputs %t.mlp.sqrt.json
// RUN: diff %t.mlp.base.json %t.mlp.sqrt.json
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline='autodiff,inplace,remat{mode=log},memplan' -o %t.mlp.log.ck
// RUN: ckopt-run %t.mlp.log.ck --func mlp_grad --seed 5 --arena --outputs %t.mlp.log.json
// RUN: diff %t.mlp.base.json %t.mlp.log.json
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline='autodiff,inplace,remat{mode=log k=2},memplan' -o %t.mlp.log2.ck
// RUN: ckopt-run %t.mlp.log2.ck --func mlp_grad --seed 5 --arena --outputs %t.mlp.log2.json
// RUN: diff %t.mlp.base.json %t.mlp.log2.json
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline='autodiff,inplace,remat{mode=greedy},memplan' -o %t.mlp.greedy.ck
// RUN: ckopt-run %t.mlp.greedy.ck --func mlp_grad --seed 5 --arena --outputs %t.mlp.greedy.json
// RUN: diff %t.mlp.base.json %t.mlp.greedy.json
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline='autodiff,inplace,remat{mode=optimal budget=1200B},memplan' -o %t.mlp.optimal.ck
// RUN: ckopt-run %t.mlp.optimal.ck --func mlp_grad --seed 5 --arena --outputs %t.mlp.optimal.json
// RUN: diff %t.mlp.base.json %t.mlp.optimal.json

// RUN: ckopt-gen resmlp --depth 6 --width 8 --batch 4 -o %t.resmlp.ck
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline='autodiff,inplace,memplan' -o %t.resmlp.base.ck
// RUN: ckopt-run %t.resmlp.base.ck --func resmlp_grad --seed 5 --outputs %t.resmlp.base.json
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' -o %t.resmlp.sqrt.ck
// RUN: ckopt-run %t.resmlp.sqrt.ck --func resmlp_grad --seed 5 --arena --outputs %t.resmlp.sqrt.json
// RUN: diff %t.resmlp.base.json %t.resmlp.sqrt.json
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline='autodiff,inplace,remat{mode=log},memplan' -o %t.resmlp.log.ck
// RUN: ckopt-run %t.resmlp.log.ck --func resmlp_grad --seed 5 --arena --outputs %t.resmlp.log.json
// RUN: diff %t.resmlp.base.json %t.resmlp.log.json
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline='autodiff,inplace,remat{mode=log k=2},memplan' -o %t.resmlp.log2.ck
// RUN: ckopt-run %t.resmlp.log2.ck --func resmlp_grad --seed 5 --arena --outputs %t.resmlp.log2.json
// RUN: diff %t.resmlp.base.json %t.resmlp.log2.json
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline='autodiff,inplace,remat{mode=greedy},memplan' -o %t.resmlp.greedy.ck
// RUN: ckopt-run %t.resmlp.greedy.ck --func resmlp_grad --seed 5 --arena --outputs %t.resmlp.greedy.json
// RUN: diff %t.resmlp.base.json %t.resmlp.greedy.json
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline='autodiff,inplace,remat{mode=optimal budget=2KiB},memplan' -o %t.resmlp.optimal.ck
// RUN: ckopt-run %t.resmlp.optimal.ck --func resmlp_grad --seed 5 --arena --outputs %t.resmlp.optimal.json
// RUN: diff %t.resmlp.base.json %t.resmlp.optimal.json

// RUN: ckopt-gen lstm --depth 2 --width 4 --batch 2 --seq 5 -o %t.lstm.ck
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline='autodiff,inplace,memplan' -o %t.lstm.base.ck
// RUN: ckopt-run %t.lstm.base.ck --func lstm_grad --seed 5 --outputs %t.lstm.base.json
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' -o %t.lstm.sqrt.ck
// RUN: ckopt-run %t.lstm.sqrt.ck --func lstm_grad --seed 5 --arena --outputs %t.lstm.sqrt.json
// RUN: diff %t.lstm.base.json %t.lstm.sqrt.json
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline='autodiff,inplace,remat{mode=log},memplan' -o %t.lstm.log.ck
// RUN: ckopt-run %t.lstm.log.ck --func lstm_grad --seed 5 --arena --outputs %t.lstm.log.json
// RUN: diff %t.lstm.base.json %t.lstm.log.json
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline='autodiff,inplace,remat{mode=log k=2},memplan' -o %t.lstm.log2.ck
// RUN: ckopt-run %t.lstm.log2.ck --func lstm_grad --seed 5 --arena --outputs %t.lstm.log2.json
// RUN: diff %t.lstm.base.json %t.lstm.log2.json
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline='autodiff,inplace,remat{mode=greedy},memplan' -o %t.lstm.greedy.ck
// RUN: ckopt-run %t.lstm.greedy.ck --func lstm_grad --seed 5 --arena --outputs %t.lstm.greedy.json
// RUN: diff %t.lstm.base.json %t.lstm.greedy.json
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline='autodiff,inplace,remat{mode=optimal budget=2600B},memplan' -o %t.lstm.optimal.ck
// RUN: ckopt-run %t.lstm.optimal.ck --func lstm_grad --seed 5 --arena --outputs %t.lstm.optimal.json
// RUN: diff %t.lstm.base.json %t.lstm.optimal.json

// RUN: ckopt-gen resnet --depth 3 --batch 2 -o %t.resnet.ck
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline='autodiff,inplace,memplan' -o %t.resnet.base.ck
// RUN: ckopt-run %t.resnet.base.ck --func resnet_grad --seed 5 --outputs %t.resnet.base.json
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' -o %t.resnet.sqrt.ck
// RUN: ckopt-run %t.resnet.sqrt.ck --func resnet_grad --seed 5 --arena --outputs %t.resnet.sqrt.json
// RUN: diff %t.resnet.base.json %t.resnet.sqrt.json
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline='autodiff,inplace,remat{mode=log},memplan' -o %t.resnet.log.ck
// RUN: ckopt-run %t.resnet.log.ck --func resnet_grad --seed 5 --arena --outputs %t.resnet.log.json
// RUN: diff %t.resnet.base.json %t.resnet.log.json
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline='autodiff,inplace,remat{mode=log k=2},memplan' -o %t.resnet.log2.ck
// RUN: ckopt-run %t.resnet.log2.ck --func resnet_grad --seed 5 --arena --outputs %t.resnet.log2.json
// RUN: diff %t.resnet.base.json %t.resnet.log2.json
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline='autodiff,inplace,remat{mode=greedy},memplan' -o %t.resnet.greedy.ck
// RUN: ckopt-run %t.resnet.greedy.ck --func resnet_grad --seed 5 --arena --outputs %t.resnet.greedy.json
// RUN: diff %t.resnet.base.json %t.resnet.greedy.json
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline='autodiff,inplace,remat{mode=optimal budget=40KiB},memplan' -o %t.resnet.optimal.ck
// RUN: ckopt-run %t.resnet.optimal.ck --func resnet_grad --seed 5 --arena --outputs %t.resnet.optimal.json
// RUN: diff %t.resnet.base.json %t.resnet.optimal.json

// RUN: ckopt-gen transformer --depth 2 --width 8 --batch 2 --seq 4 --heads 2 -o %t.transformer.ck
// RUN: ckopt-opt %t.transformer.ck --pass-pipeline='autodiff,inplace,memplan' -o %t.transformer.base.ck
// RUN: ckopt-run %t.transformer.base.ck --func transformer_grad --seed 5 --outputs %t.transformer.base.json
// RUN: ckopt-opt %t.transformer.ck --pass-pipeline='autodiff,inplace,remat{mode=sqrt},memplan' -o %t.transformer.sqrt.ck
// RUN: ckopt-run %t.transformer.sqrt.ck --func transformer_grad --seed 5 --arena --outputs %t.transformer.sqrt.json
// RUN: diff %t.transformer.base.json %t.transformer.sqrt.json
// RUN: ckopt-opt %t.transformer.ck --pass-pipeline='autodiff,inplace,remat{mode=log},memplan' -o %t.transformer.log.ck
// RUN: ckopt-run %t.transformer.log.ck --func transformer_grad --seed 5 --arena --outputs %t.transformer.log.json
// RUN: diff %t.transformer.base.json %t.transformer.log.json
// RUN: ckopt-opt %t.transformer.ck --pass-pipeline='autodiff,inplace,remat{mode=log k=2},memplan' -o %t.transformer.log2.ck
// RUN: ckopt-run %t.transformer.log2.ck --func transformer_grad --seed 5 --arena --outputs %t.transformer.log2.json
// RUN: diff %t.transformer.base.json %t.transformer.log2.json
// RUN: ckopt-opt %t.transformer.ck --pass-pipeline='autodiff,inplace,remat{mode=greedy},memplan' -o %t.transformer.greedy.ck
// RUN: ckopt-run %t.transformer.greedy.ck --func transformer_grad --seed 5 --arena --outputs %t.transformer.greedy.json
// RUN: diff %t.transformer.base.json %t.transformer.greedy.json
// RUN: ckopt-opt %t.transformer.ck --pass-pipeline='autodiff,inplace,remat{mode=optimal budget=7KiB},memplan' -o %t.transformer.optimal.ck
// RUN: ckopt-run %t.transformer.optimal.ck --func transformer_grad --seed 5 --arena --outputs %t.transformer.optimal.json
// RUN: diff %t.transformer.base.json %t.transformer.optimal.json

/// The optimal budgets force recompute: at least one op is recomputed.
// RUN: grep -c ck.recompute %t.mlp.optimal.ck
// RUN: grep -c ck.recompute %t.resmlp.optimal.ck
// RUN: grep -c ck.recompute %t.lstm.optimal.ck
// RUN: grep -c ck.recompute %t.resnet.optimal.ck
// RUN: grep -c ck.recompute %t.transformer.optimal.ck

/// At least one op is recomputed in each model under sqrt.
// RUN: grep -c ck.recompute %t.mlp.sqrt.ck
// RUN: grep -c ck.recompute %t.resmlp.sqrt.ck
// RUN: grep -c ck.recompute %t.lstm.sqrt.ck
// RUN: grep -c ck.recompute %t.resnet.sqrt.ck
// RUN: grep -c ck.recompute %t.transformer.sqrt.ck
