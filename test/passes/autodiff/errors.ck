/// Bad uses of autodiff: located errors that name the function, exit 1.

/// func= on a function whose first result is not a scalar loss.
// RUN: not ckopt-opt %s --pass-pipeline='autodiff{func=vec}' 2>&1 | FileCheck %s --check-prefix=VEC
// VEC:      errors.ck:[[@LINE+28]]:3: error: autodiff: function @vec does not return a scalar loss first: its first result has type tensor<3xf32> (expected tensor<f32>)
// VEC-NEXT: func.func @vec(
// VEC-NEXT: ^
// VEC-NEXT: errors.ck:[[@LINE+27]]:5: note: the loss would be the first value returned here

/// A missing function: the message lists the module's functions.
// RUN: not ckopt-opt %s --pass-pipeline='autodiff{func=nope}' 2>&1 | FileCheck %s --check-prefix=MISSING
// MISSING: errors.ck:1:1: error: autodiff: no function @nope in the module (functions: @vec, @loss)

/// A wrt index out of range (without func=, every scalar-loss function is checked; @vec is skipped).
// RUN: not ckopt-opt %s --pass-pipeline='autodiff{wrt=0,3}' 2>&1 | FileCheck %s --check-prefix=WRT
// WRT: errors.ck:[[@LINE+21]]:3: error: autodiff: wrt index 3 is out of range: @loss has 1 argument

/// A bad wrt value and an unknown option are pipeline errors.
// RUN: not ckopt-opt %s --pass-pipeline='autodiff{wrt=x}' 2>&1 | FileCheck %s --check-prefix=BADWRT
// BADWRT: error: option 'wrt' of pass 'autodiff' expects 'all' or argument indices like 0,2; got 'x'
// RUN: not ckopt-opt %s --pass-pipeline='autodiff{by=1}' 2>&1 | FileCheck %s --check-prefix=OPT
// OPT: error: pass 'autodiff' has no option 'by'; valid options: wrt, func

/// Differentiating the same function twice with func= is refused; without func= it is a no-op.
// RUN: not ckopt-opt %s --pass-pipeline='autodiff{func=loss},autodiff{func=loss}' 2>&1 | FileCheck %s --check-prefix=TWICE
// TWICE: error: autodiff: function @loss_grad already exists; cannot create the gradient of @loss
// RUN: ckopt-opt %s --pass-pipeline='autodiff,autodiff' | FileCheck %s --check-prefix=IDEM
// IDEM-COUNT-1: func.func @loss_grad(
// IDEM-NOT: func.func @vec_grad
// IDEM-NOT: _grad_grad

module {
  func.func @vec(%x: tensor<3xf32> {ck.param}) -> tensor<3xf32> {
    %y = "ck.relu"(%x) : (tensor<3xf32>) -> tensor<3xf32>
    "ck.return"(%y) : (tensor<3xf32>) -> ()
  }
  func.func @loss(%x: tensor<3xf32> {ck.param}) -> tensor<f32> {
    %s = "ck.reduce_sum"(%x) {dims = [0]} : (tensor<3xf32>) -> tensor<f32>
    "ck.return"(%s) : (tensor<f32>) -> ()
  }
}
