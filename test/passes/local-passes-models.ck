/// canonicalize, cse and dce on every generated model's gradient graph keep
/// the interpreter's outputs bit for bit (the JSON files are identical), and
/// cse finds the duplicated constants/broadcasts autodiff leaves behind.

// RUN: ckopt-gen mlp --depth 2 --batch 2 | ckopt-opt --pass-pipeline=autodiff -o %t.mlp.ck
// RUN: ckopt-opt %t.mlp.ck --pass-pipeline=canonicalize,cse,dce -o %t.mlp.opt.ck
// RUN: ckopt-run %t.mlp.ck --func mlp_grad --outputs %t.mlp.a.json > /dev/null
// RUN: ckopt-run %t.mlp.opt.ck --func mlp_grad --outputs %t.mlp.b.json > /dev/null
// RUN: diff %t.mlp.a.json %t.mlp.b.json

// RUN: ckopt-gen resmlp --depth 2 --batch 2 | ckopt-opt --pass-pipeline=autodiff -o %t.resmlp.ck
// RUN: ckopt-opt %t.resmlp.ck --pass-pipeline=canonicalize,cse,dce -o %t.resmlp.opt.ck --pass-statistics 2>&1 | FileCheck %s --check-prefix=RESMLP
// RESMLP: cse
// RESMLP-NEXT: (S) {{[1-9][0-9]*}} num-cse'd
// RUN: ckopt-run %t.resmlp.ck --func resmlp_grad --outputs %t.resmlp.a.json > /dev/null
// RUN: ckopt-run %t.resmlp.opt.ck --func resmlp_grad --outputs %t.resmlp.b.json > /dev/null
// RUN: diff %t.resmlp.a.json %t.resmlp.b.json

// RUN: ckopt-gen lstm --depth 1 --seq 3 --batch 2 | ckopt-opt --pass-pipeline=autodiff -o %t.lstm.ck
// RUN: ckopt-opt %t.lstm.ck --pass-pipeline=canonicalize,cse,dce -o %t.lstm.opt.ck
// RUN: ckopt-run %t.lstm.ck --func lstm_grad --outputs %t.lstm.a.json > /dev/null
// RUN: ckopt-run %t.lstm.opt.ck --func lstm_grad --outputs %t.lstm.b.json > /dev/null
// RUN: diff %t.lstm.a.json %t.lstm.b.json

// RUN: ckopt-gen resnet --depth 2 --batch 2 | ckopt-opt --pass-pipeline=autodiff -o %t.resnet.ck
// RUN: ckopt-opt %t.resnet.ck --pass-pipeline=canonicalize,cse,dce -o %t.resnet.opt.ck
// RUN: ckopt-run %t.resnet.ck --func resnet_grad --outputs %t.resnet.a.json > /dev/null
// RUN: ckopt-run %t.resnet.opt.ck --func resnet_grad --outputs %t.resnet.b.json > /dev/null
// RUN: diff %t.resnet.a.json %t.resnet.b.json

// RUN: ckopt-gen transformer --depth 2 --batch 2 | ckopt-opt --pass-pipeline=autodiff -o %t.tf.ck
// RUN: ckopt-opt %t.tf.ck --pass-pipeline=canonicalize,cse,dce -o %t.tf.opt.ck
// RUN: ckopt-run %t.tf.ck --func transformer_grad --outputs %t.tf.a.json > /dev/null
// RUN: ckopt-run %t.tf.opt.ck --func transformer_grad --outputs %t.tf.b.json > /dev/null
// RUN: diff %t.tf.a.json %t.tf.b.json
