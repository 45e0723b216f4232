/// Nested modules are not supported.
module {
  // expected-error@+1 {{nested modules are not supported}}
  module {
  }
}
