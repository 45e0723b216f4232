/// ckopt-gen: every model prints at a small size, the text parses with
/// upstream mlir-opt (generic syntax, unregistered ck dialect), and the
/// signature of @mlp is (%x, %target, params {ck.param}) -> scalar loss.

// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | FileCheck %s --check-prefix=MLP
// RUN: ckopt-gen mlp --depth 2 --width 8 --batch 4 | %mlir-opt --allow-unregistered-dialect > /dev/null
// RUN: ckopt-gen resmlp --depth 2 --width 8 --batch 4 | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=RES
// RUN: ckopt-gen lstm --depth 2 --seq 3 --width 4 --batch 2 | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=LSTM
// RUN: ckopt-gen resnet --depth 2 --channels 4 --image 6 --batch 2 --classes 3 | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=RESNET
// RUN: ckopt-gen transformer --depth 2 --seq 4 --width 8 --heads 2 --batch 2 | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=TF
// RUN: ckopt-gen gpt --depth 2 --seq 4 --width 8 --heads 2 --vocab 7 --batch 2 | %mlir-opt --allow-unregistered-dialect | FileCheck %s --check-prefix=GPT
// RUN: ckopt-gen gpt --depth 1 --seq 4 --width 8 --heads 2 --vocab 7 --batch 2 | FileCheck %s --check-prefix=GPTNAMES
// RUN: ckopt-gen resmlp -o %t.ck && %mlir-opt --allow-unregistered-dialect %t.ck > /dev/null

// MLP-LABEL: func.func @mlp(%x: tensor<4x8xf32>, %target: tensor<4x8xf32>, %w0: tensor<8x8xf32> {ck.param}, %b0: tensor<8xf32> {ck.param}, %w1: tensor<8x8xf32> {ck.param}, %b1: tensor<8xf32> {ck.param}) -> tensor<f32> {
// MLP-NEXT: %mm0 = "ck.matmul"(%x, %w0)
// MLP-NEXT: %bias0 = "ck.broadcast"(%b0) {dims = [1]} : (tensor<8xf32>) -> tensor<4x8xf32>
// MLP-NEXT: %z0 = "ck.add"(%mm0, %bias0)
// MLP-NEXT: %h0 = "ck.relu"(%z0)
// MLP:      %h1 = "ck.relu"
// MLP:      %loss = "ck.scale"(%sqsum) {value = 0.03125 : f32}
// MLP-NEXT: "ck.return"(%loss) : (tensor<f32>) -> ()

// mlir-opt re-prints in its own (generic) form; check the function types.
// RES-LABEL: func.func @resmlp(
// RES-SAME: {ck.param}
// RES-SAME: -> tensor<f32>
// RES: "ck.rsqrt"
// RES: "ck.return"

// LSTM-LABEL: func.func @lstm(%{{.*}}: tensor<3x2x4xf32>, %{{.*}}: tensor<2x4xf32>, %{{.*}}: tensor<4x16xf32> {ck.param}
// LSTM: "ck.sigmoid"
// LSTM: "ck.tanh"
// LSTM: "ck.return"

// RESNET-LABEL: func.func @resnet(%{{.*}}: tensor<2x3x6x6xf32>, %{{.*}}: tensor<2x3xf32>, %{{.*}}: tensor<4x3x3x3xf32> {ck.param}
// RESNET: "ck.conv2d"
// RESNET: "ck.max_pool2d"
// RESNET: "ck.avg_pool2d"
// RESNET: "ck.reduce_max"
// RESNET: "ck.return"

// TF-LABEL: func.func @transformer(%{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<8x8xf32> {ck.param}
// TF: "ck.matmul"(%{{.*}}, %{{.*}}) {transpose_b = true} : (tensor<4x4x4xf32>, tensor<4x4x4xf32>) -> tensor<4x4x4xf32>
// TF: "ck.div"
// TF: "ck.return"

// GPT-LABEL: func.func @gpt(%{{.*}}: tensor<2x4xi64>, %{{.*}}: tensor<2x4xi64>, %{{.*}}: tensor<7x8xf32> {ck.param}, %{{.*}}: tensor<4x8xf32> {ck.param}
// GPT: "ck.gather"
// GPT: "ck.select"
// GPT: "ck.cross_entropy"

// GPTNAMES: %tok = "ck.gather"(%wte, %ids_flat) {axis = 0 : i64} : (tensor<7x8xf32>, tensor<8xi64>) -> tensor<8x8xf32>
// GPTNAMES: %causal0 = "ck.ge"(%row0, %col0) : (tensor<4x4x4xi64>, tensor<4x4x4xi64>) -> tensor<4x4x4xi1>
// GPTNAMES: %ninf0 = "ck.fill"() {value = 0xFF800000 : f32} : () -> tensor<4x4x4xf32>
// GPTNAMES: %masked0 = "ck.select"(%causal0, %scaled0, %ninf0)
// GPTNAMES: %logits = "ck.matmul"(%lnf, %wte) {transpose_b = true}
// GPTNAMES: %loss = "ck.cross_entropy"(%logits, %labels_flat) : (tensor<8x7xf32>, tensor<8xi64>) -> tensor<f32>
