/// --memory-curve: the Pareto front of (temp peak, recompute flops) of every
/// gradient function, as JSON (docs/memory.md) or SVG. Forward functions
/// have no curve. Each point's plan reproduces its numbers through the
/// pipeline (checked by rerunning every point); the front ends at no remat.

// RUN: ckopt-gen mlp --depth 16 --width 8 --batch 4 -o %t.ck
// RUN: ckopt-opt %t.ck --pass-pipeline='autodiff,inplace' --memory-curve=%t.json -o /dev/null
// RUN: FileCheck %s < %t.json
// RUN: python3 %S/Inputs/reproduce_curve.py %t.json %t.ck 'autodiff,inplace' | FileCheck %s --check-prefix=REPRO
// RUN: ckopt-opt %t.ck --pass-pipeline='autodiff,inplace' --memory-curve=%t.svg -o /dev/null
// RUN: FileCheck %s --check-prefix=SVG < %t.svg
// RUN: ckopt-opt %t.ck --memory-curve=- -o /dev/null | FileCheck %s --check-prefix=NOGRAD

// CHECK:      [
// CHECK-NEXT:   {
// CHECK-NEXT:     "function": "mlp_grad",
// CHECK-NEXT:     "min_feasible_bytes": [[MIN:[0-9]+]],
// CHECK-NEXT:     "points": [
// CHECK-NEXT:       {
// CHECK-NEXT:         "peak_bytes": [[MIN]],
// CHECK-NEXT:         "recompute_flops": {{[1-9][0-9]*}},
// CHECK-NEXT:         "plan": "remat{mode=
// CHECK:              "recompute_flops": 0,
// CHECK-NEXT:         "plan": "remat{mode=none}"
// CHECK-NEXT:       }
// CHECK-NEXT:     ]
// CHECK-NEXT:   }
// CHECK-NEXT: ]

// REPRO: ok remat{mode=
// REPRO: ok remat{mode=none}

// SVG: <svg
// SVG: @mlp_grad — memory vs recompute (min feasible
// SVG-DAG: temp peak (MiB)
// SVG-DAG: recompute (forward passes)
// SVG-DAG: Pareto front
// SVG: </svg>

// NOGRAD: []
