/// Only functions at the top level.
// expected-error@+1 {{expected 'module' or 'func.func', found '%x'}}
%x = "ck.fill"() {value = 1.0 : f32} : () -> tensor<2xf32>
