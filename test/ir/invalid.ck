// RUN: ckopt-opt %s --split-input-file --verify-diagnostics

/// One case per parser and verifier rule (ir/src/parser.rs, ir/src/ops.rs
/// check_attrs/infer_type, ir/src/verify.rs). Each case is an independent
/// chunk; every expected diagnostic must be produced and nothing else.

/// A missing '=' after the result name is a syntax error.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{expected '=' after the result name, found '"ck.relu"'}}
  %y "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Ops must be in generic form; a custom-form return gets a hint.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{expected an op in generic form "ck.name"(...), found 'return' (write the return as "ck.return"(%v)}}
  return %y : tensor<2xf32>
}

// -----

/// An unknown ck op gets a did-you-mean hint.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relux' is not an op of the ck dialect; did you mean 'ck.relu'?}}
  %y = "ck.relux"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An unknown ck op with no close match lists the ops.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.frobnicate' is not an op of the ck dialect (ops: neg, exp, log,}}
  %y = "ck.frobnicate"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Ops of other dialects are rejected.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'arith.negf' is not a ck op: function bodies may only contain ops of the ck dialect}}
  %y = "arith.negf"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Using a value that is never defined.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of undefined value '%nope'}}
  %y = "ck.relu"(%nope) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Using a value before its definition (no forward references).
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of undefined value '%z'}}
  %y = "ck.relu"(%z) : (tensor<2xf32>) -> tensor<2xf32>
  %z = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Redefining an op result.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{redefinition of value '%y' (previously defined at line}}
  %y = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An op result may not redefine an argument.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{redefinition of value '%x'}}
  %x = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// Two arguments with one name.
// expected-error@+1 {{redefinition of value '%x'}}
func.func @f(%x: tensor<2xf32>, %x: tensor<2xf32>) {
  "ck.return"() : () -> ()
}

// -----

/// An operand's type in the op signature must be the value's type.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{use of value '%x' expects different type than prior uses: 'tensor<3xf32>' vs 'tensor<2xf32>'}}
  %y = "ck.relu"(%x) : (tensor<3xf32>) -> tensor<3xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// The signature lists one type per operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{the type lists 2 operand type(s) but the op has 1 operand(s)}}
  %y = "ck.relu"(%x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// ck ops have at most one result.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{ck ops have at most one result, the type lists 2}}
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A bound name needs a result.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{operation defines 0 results but was provided 1 to bind}}
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> ()
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// Op properties are not part of ck's syntax.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{op properties '<{...}>' are not supported}}
  %y = "ck.relu"(%x) <{a = 1}> : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Dynamic dimensions are rejected: shapes are static.
// expected-error@+1 {{dynamic dimensions ('?') are not supported: ck shapes are static}}
func.func @f(%x: tensor<?x2xf32>) {
  "ck.return"() : () -> ()
}

// -----

/// Unranked tensors are rejected.
// expected-error@+1 {{unranked tensors are not supported}}
func.func @f(%x: tensor<*xf32>) {
  "ck.return"() : () -> ()
}

// -----

/// Element types other than the six ck knows are rejected.
// expected-error@+1 {{unsupported element type 'i8' (ck supports f32, bf16, f16, i64, i32, i1)}}
func.func @f(%x: tensor<2xi8>) {
  "ck.return"() : () -> ()
}

// -----

/// Values are tensors, not scalars.
// expected-error@+1 {{expected a tensor type, found 'f32' (ck values are tensors: write tensor<f32>)}}
func.func @f(%x: f32) {
  "ck.return"() : () -> ()
}

// -----

/// A dimension that does not fit in u64.
// expected-error@+1 {{tensor dimension does not fit in u64}}
func.func @f(%x: tensor<18446744073709551616xf32>) {
  "ck.return"() : () -> ()
}

// -----

/// A tensor whose byte size overflows u64 (checked arithmetic).
// expected-error@+1 {{size of tensor<4294967296x4294967296xf32> overflows u64 bytes}}
func.func @f(%x: tensor<4294967296x4294967296xf32>) {
  "ck.return"() : () -> ()
}

// -----

/// An unterminated tensor type.
// expected-error@+1 {{unterminated tensor type (missing '>')}}
func.func @f(%x: tensor<2xf32) {
  "ck.return"() : () -> ()
}

// -----

/// An unterminated string.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unterminated string literal}}
  %y = "ck.relu(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An unknown escape in a string.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unknown escape in string literal}}
  %y = "ck.relu"(%x) {user.s = "a\qb"} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A stray character.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unexpected character '#'}}
  %y = "ck.relu"(%x) # : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A duplicate attribute key.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{duplicate key 'value' in dictionary attribute}}
  %y = "ck.scale"(%x) {value = 1.0 : f32, value = 2.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An integer attribute that does not fit in i64.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{integer 9223372036854775808 does not fit in i64}}
  %y = "ck.relu"(%x) {ck.offset = 9223372036854775808 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A float literal where an i64 is declared.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{floating point literal for an i64 attribute}}
  %y = "ck.relu"(%x) {ck.offset = 1.5 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A decimal integer where an f32 is declared (floats need a '.').
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unexpected decimal integer literal for a floating point value}}
  %y = "ck.scale"(%x) {value = 2 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Attribute types other than i64/f32/f64 are rejected.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unsupported attribute type 'i32'}}
  %y = "ck.scale"(%x) {value = 2 : i32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A float that does not fit in f32.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{float 1.0e39 is out of range for f32}}
  %y = "ck.scale"(%x) {value = 1.0e39 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A hexadecimal float needs 32 bits.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{hexadecimal float 0x1FFFFFFFF does not fit in 32 bits}}
  %y = "ck.scale"(%x) {value = 0x1FFFFFFFF : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Arrays hold integers only.
func.func @f(%x: tensor<2xf32>) -> tensor<f32> {
  // expected-error@+1 {{array attributes must hold integers, found array of integers}}
  %y = "ck.reduce_sum"(%x) {dims = [[0]]} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%y) : (tensor<f32>) -> ()
}

// -----

/// Dictionary attribute values are not supported.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{dictionary attribute values are not supported}}
  %y = "ck.relu"(%x) {user.d = {a = 1}} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Attribute nesting is bounded (no stack overflow on deep input).
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute nesting is deeper than 64 levels}}
  %y = "ck.relu"(%x) {user.a = [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A function without a name.
// expected-error@+1 {{expected a function name '@name', found '('}}
func.func (%x: tensor<2xf32>) {
  "ck.return"() : () -> ()
}

// -----

/// Nested modules are not supported.
module {
  // expected-error@+1 {{nested modules are not supported}}
  module {
  }
}

// -----

/// Only functions at the top level.
// expected-error@+1 {{expected 'module' or 'func.func', found '%x'}}
%x = "ck.fill"() {value = 1.0 : f32} : () -> tensor<2xf32>

// -----

/// Junk after the module.
module {
}
// expected-error@+1 {{expected end of file after the module, found '}'}}
}

// -----

/// A body cut short by the end of the file.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  "ck.return"(%x) : (tensor<2xf32>) -> () // expected-error {{unexpected end of file in the body of @f (missing '}')}}

// -----

/// Several parse errors in one body are all reported (recovery at the next line); uses of a failed definition are not reported again.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.nope' is not an op of the ck dialect}}
  %a = "ck.nope"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %b = "ck.relu"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{use of undefined value '%c'}}
  %y = "ck.relu"(%c) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// Unary ops take one operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op expects 1 operand, got 2}}
  %y = "ck.relu"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Binary ops take two operands.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.add' op expects 2 operands, got 1}}
  %y = "ck.add"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// fill takes no operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.fill' op expects 0 operands, got 1}}
  %y = "ck.fill"(%x) {value = 1.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// concat takes at least one operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.concat' op expects at least 1 operand, got 0}}
  %y = "ck.concat"() {dim = 0 : i64} : () -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A required attribute is missing.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.scale' op requires attribute 'value' (f32 float)}}
  %y = "ck.scale"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An attribute of the wrong kind.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.scale' op attribute 'value' must be f32 float, got i64 integer}}
  %y = "ck.scale"(%x) {value = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An unknown undotted attribute.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op unknown attribute 'bogus' (ck.relu takes none)}}
  %y = "ck.relu"(%x) {bogus} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// An unknown attribute lists the ones the op takes.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{unknown attribute 'valu' (ck.scale takes: value)}}
  %y = "ck.scale"(%x) {value = 1.0 : f32, valu = 2.0 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// ck.mirror is a unit attribute.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'ck.mirror' must be unit, got i64 integer}}
  %y = "ck.relu"(%x) {ck.mirror = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// ck.inplace names an operand index.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.inplace' = 1 is not an operand index (op has 1)}}
  %y = "ck.relu"(%x) {ck.inplace = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// ck.inplace is an integer.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'ck.inplace' must be i64 integer, got bool}}
  %y = "ck.relu"(%x) {ck.inplace = true} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// ck.offset is a non-negative byte offset.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.offset' must be a non-negative byte offset}}
  %y = "ck.relu"(%x) {ck.offset = -8 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// dropout rate is in [0, 1).
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{dropout 'rate' must be in [0, 1), got 1}}
  %y = "ck.dropout"(%x) {rate = 1.0 : f32, seed = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// dropout needs a seed.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{requires attribute 'seed' (i64 integer)}}
  %y = "ck.dropout"(%x) {rate = 0.5 : f32} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// Operand element types must agree.
func.func @f(%x: tensor<2xf32>, %h: tensor<2xf16>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.add' op operand element types differ: tensor<2xf32> and tensor<2xf16>}}
  %y = "ck.add"(%x, %h) : (tensor<2xf32>, tensor<2xf16>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// The result element type is the operands'.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op result element type f16 differs from operand type tensor<2xf32>}}
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf16>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// No implicit broadcasting in elementwise ops.
func.func @f(%x: tensor<2xf32>, %o: tensor<1xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.mul' op operand shapes must be equal (no implicit broadcasting), got tensor<2xf32> and tensor<1xf32>}}
  %y = "ck.mul"(%x, %o) : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// relu_grad operands have equal shapes.
func.func @f(%x: tensor<2xf32>, %o: tensor<1xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu_grad' op operand shapes must be equal}}
  %y = "ck.relu_grad"(%x, %o) : (tensor<2xf32>, tensor<1xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// A declared result type must match the inferred one.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.neg' op result type tensor<3xf32> does not match the inferred type tensor<2xf32>}}
  %y = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// broadcast: one dims entry per operand dim.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dims' has 2 entries but the operand has rank 1}}
  %y = "ck.broadcast"(%x) {dims = [0, 1]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// broadcast: dims index result dims.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dims' entry 2 is out of range for rank 2}}
  %y = "ck.broadcast"(%x) {dims = [2]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// broadcast: operand dims must equal the result dims they map to.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{operand dim 0 (2) does not match result dim 0 (3)}}
  %y = "ck.broadcast"(%x) {dims = [0]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// broadcast needs dims.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{requires attribute 'dims' (array of integers)}}
  %y = "ck.broadcast"(%x) : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// reduce_sum: dims must be in range.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.reduce_sum' op 'dims' entry 1 is out of range for rank 1}}
  %y = "ck.reduce_sum"(%x) {dims = [1]} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// reduce_max: dims must be strictly increasing.
func.func @f(%x: tensor<2xf32>, %m: tensor<2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dims' must be strictly increasing, got [1, 0]}}
  %y = "ck.reduce_max"(%m) {dims = [1, 0]} : (tensor<2x2xf32>) -> tensor<f32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// reduce_sum: dims must be an integer array.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'dims' must be array of integers, got i64 integer}}
  %y = "ck.reduce_sum"(%x) {dims = 0 : i64} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// transpose: perm has one entry per dim.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'perm' has 2 entries but the operand has rank 1}}
  %y = "ck.transpose"(%x) {perm = [0, 1]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// transpose: perm is a permutation.
func.func @f(%x: tensor<2xf32>, %m: tensor<2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'perm' [0, 0] is not a permutation of 0..2}}
  %y = "ck.transpose"(%m) {perm = [0, 0]} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// reshape keeps the element count.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{reshape from tensor<2xf32> to tensor<3xf32> changes the element count}}
  %y = "ck.reshape"(%x) : (tensor<2xf32>) -> tensor<3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// slice: one offset per dim.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{needs 1 offsets and a result of the same rank}}
  %y = "ck.slice"(%x) {offsets = [0, 0]} : (tensor<2xf32>) -> tensor<1xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// slice: the window must lie inside the operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{slice window [1, 1+2) is outside dim 0 of size 2}}
  %y = "ck.slice"(%x) {offsets = [1]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// concat: dim in range.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'dim' = 1 is out of range for rank 1}}
  %y = "ck.concat"(%x) {dim = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// concat: operands agree outside dim.
func.func @f(%x: tensor<2xf32>, %a: tensor<2x2xf32>, %b: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{concat operands tensor<2x2xf32> and tensor<2x3xf32> differ outside dim 0}}
  %y = "ck.concat"(%a, %b) {dim = 0 : i64} : (tensor<2x2xf32>, tensor<2x3xf32>) -> tensor<4x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// concat: a result size that overflows is an error.
func.func @f(%x: tensor<2xf32>, %a: tensor<2305843009213693951xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{has a size that overflows}}
  %y = "ck.concat"(%a, %a, %a) {dim = 0 : i64} : (tensor<2305843009213693951xf32>, tensor<2305843009213693951xf32>, tensor<2305843009213693951xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// matmul: rank >= 2.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{matmul needs operands of equal rank >= 2, got tensor<2xf32> and tensor<2xf32>}}
  %y = "ck.matmul"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// matmul: batch dims equal.
func.func @f(%x: tensor<2xf32>, %a: tensor<2x2x3xf32>, %b: tensor<3x3x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{matmul batch dims differ: tensor<2x2x3xf32> and tensor<3x3x2xf32>}}
  %y = "ck.matmul"(%a, %b) : (tensor<2x2x3xf32>, tensor<3x3x2xf32>) -> tensor<2x2x2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// matmul: contraction dims equal (after transposes).
func.func @f(%x: tensor<2xf32>, %a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{matmul contraction dims differ: 3 vs 2 (tensor<2x3xf32> x tensor<2x3xf32>)}}
  %y = "ck.matmul"(%a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// matmul: transpose flags are bools.
func.func @f(%x: tensor<2xf32>, %a: tensor<3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'transpose_a' must be bool, got i64 integer}}
  %y = "ck.matmul"(%a, %a) {transpose_a = 1 : i64} : (tensor<3x3xf32>, tensor<3x3xf32>) -> tensor<3x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: rank-4 operands.
func.func @f(%x: tensor<2xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d needs rank-4 input (NCHW) and filter (FCHW)}}
  %y = "ck.conv2d"(%x, %w) : (tensor<2xf32>, tensor<4x3x3x3xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: channels agree.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d input channels 3 do not match filter channels 2}}
  %y = "ck.conv2d"(%i, %w) : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: stride has 2 entries.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'stride' must have 2 elements, got 1}}
  %y = "ck.conv2d"(%i, %w) {stride = [1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: stride >= 1.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'stride' elements must be >= 1, got [0, 1]}}
  %y = "ck.conv2d"(%i, %w) {stride = [0, 1]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: padding >= 0.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'padding' elements must be >= 0, got [-1, 0]}}
  %y = "ck.conv2d"(%i, %w) {padding = [-1, 0]} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: with groups, the filter has C / groups channels.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d with groups = 2: filter channels 4 must be input channels / groups = 4 / 2 = 2}}
  %y = "ck.conv2d"(%i, %w) {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>) -> tensor<1x6x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: groups divide the input channels and the filters.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x4x8x8xf32>, %w: tensor<3x2x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d with groups = 2 needs input channels (4) and filters (3) divisible by 2}}
  %y = "ck.conv2d"(%i, %w) {groups = 2 : i64} : (tensor<1x4x8x8xf32>, tensor<3x2x3x3xf32>) -> tensor<1x3x6x6xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d_grad_filter: groups >= 1.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x4x8x8xf32>, %dy: tensor<1x4x6x6xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'groups' must be >= 1, got 0}}
  %y = "ck.conv2d_grad_filter"(%i, %dy) {groups = 0 : i64} : (tensor<1x4x8x8xf32>, tensor<1x4x6x6xf32>) -> tensor<4x4x3x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d_grad_input: groups is an i64.
func.func @f(%x: tensor<2xf32>, %dy: tensor<1x4x6x6xf32>, %w: tensor<4x2x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'groups' must be i64 integer, got}}
  %y = "ck.conv2d_grad_input"(%dy, %w) {groups = [2]} : (tensor<1x4x6x6xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: the filter must fit the (padded) input.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x9x9xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d filter tensor<4x3x9x9xf32> does not fit input tensor<1x3x8x8xf32> with padding [0, 0]}}
  %y = "ck.conv2d"(%i, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x9x9xf32>) -> tensor<1x4x1x1xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d: the declared result must be the convolution's shape.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{result type tensor<1x4x8x8xf32> does not match the inferred type tensor<1x4x6x6xf32>}}
  %y = "ck.conv2d"(%i, %w) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d_grad_input: dy must have the shape conv2d(dx, w) would give.
func.func @f(%x: tensor<2xf32>, %dy: tensor<1x4x5x5xf32>, %w: tensor<4x3x3x3xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d of tensor<1x3x8x8xf32> with tensor<4x3x3x3xf32> gives [1, 4, 6, 6], not the shape of dy tensor<1x4x5x5xf32>}}
  %y = "ck.conv2d_grad_input"(%dy, %w) : (tensor<1x4x5x5xf32>, tensor<4x3x3x3xf32>) -> tensor<1x3x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// conv2d_grad_filter: dy must have the shape conv2d(x, dw) would give.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %dy: tensor<1x4x5x5xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{conv2d of tensor<1x3x8x8xf32> with tensor<4x3x3x3xf32> gives [1, 4, 6, 6], not the shape of dy tensor<1x4x5x5xf32>}}
  %y = "ck.conv2d_grad_filter"(%i, %dy) : (tensor<1x3x8x8xf32>, tensor<1x4x5x5xf32>) -> tensor<4x3x3x3xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// max_pool2d: rank-4 operand.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pooling needs a rank-4 NCHW input, got tensor<2xf32>}}
  %y = "ck.max_pool2d"(%x) {window = [2, 2]} : (tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// avg_pool2d needs a window.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.avg_pool2d' op requires attribute 'window' (array of integers)}}
  %y = "ck.avg_pool2d"(%i) : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// max_pool2d: the window must fit.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pool window [9, 9] does not fit input tensor<1x3x8x8xf32>}}
  %y = "ck.max_pool2d"(%i) {window = [9, 9]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x1x1xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// max_pool2d: window entries >= 1.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{attribute 'window' elements must be >= 1, got [0, 2]}}
  %y = "ck.max_pool2d"(%i) {window = [0, 2]} : (tensor<1x3x8x8xf32>) -> tensor<1x3x4x4xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// max_pool2d_grad: dy has the pooled shape.
func.func @f(%x: tensor<2xf32>, %i: tensor<1x3x8x8xf32>, %dy: tensor<1x3x2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pooling tensor<1x3x8x8xf32> gives [1, 3, 4, 4], not the shape of dy tensor<1x3x2x2xf32>}}
  %y = "ck.max_pool2d_grad"(%i, %dy) {window = [2, 2]} : (tensor<1x3x8x8xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// avg_pool2d_grad: dy has the pooled shape of the declared result.
func.func @f(%x: tensor<2xf32>, %dy: tensor<1x3x2x2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{pooling tensor<1x3x8x8xf32> gives [1, 3, 4, 4], not the shape of dy tensor<1x3x2x2xf32>}}
  %y = "ck.avg_pool2d_grad"(%dy) {window = [2, 2]} : (tensor<1x3x2x2xf32>) -> tensor<1x3x8x8xf32>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// An op without a result where the op defines one.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op has the wrong number of results}}
  "ck.relu"(%x) : (tensor<2xf32>) -> ()
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// ck.return must be the last op.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.return' op must be the last op of the function}}
  "ck.return"(%x) : (tensor<2xf32>) -> ()
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// A function must end with ck.return.
// expected-error@+1 {{function @f must end with 'ck.return'}}
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "ck.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
}

// -----

/// The returned types must be the declared result types.
func.func @f(%x: tensor<2xf32>) -> tensor<3xf32> {
  // expected-error@+1 {{'ck.return' op returns (tensor<2xf32>) but @f is declared to return (tensor<3xf32>)}}
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// The returned count must be the declared count.
func.func @f(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  // expected-error@+1 {{'ck.return' op returns (tensor<2xf32>) but @f is declared to return (tensor<2xf32>, tensor<2xf32>)}}
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// ck.param is a unit argument attribute.
// expected-error@+1 {{@f argument #0: argument attribute 'ck.param' must be unit, got bool}}
func.func @f(%x: tensor<2xf32> {ck.param = true}) {
  "ck.return"() : () -> ()
}

// -----

/// Unknown ck.* argument attributes are rejected.
// expected-error@+1 {{@f argument #0: unknown argument attribute 'ck.parm' (known: ck.param, ck.donate, ck.step, ck.opt_state, ck.name, ck.hyper, ck.hyper_default)}}
func.func @f(%x: tensor<2xf32> {ck.parm}) {
  "ck.return"() : () -> ()
}

// -----

/// ck.arena_bytes is a non-negative byte count.
// expected-error@+1 {{@f: function attribute 'ck.arena_bytes' must be a non-negative i64 byte count}}
func.func @f() attributes {ck.arena_bytes = -1 : i64} {
  "ck.return"() : () -> ()
}

// -----

/// Unknown undotted function attributes are rejected.
// expected-error@+1 {{@f: unknown function attribute 'arena' (known: ck.arena_bytes)}}
func.func @f() attributes {arena = 1 : i64} {
  "ck.return"() : () -> ()
}

// -----

/// Function names are unique.
func.func @f() {
  "ck.return"() : () -> ()
}
// expected-error@+1 {{redefinition of function @f}}
func.func @f() {
  "ck.return"() : () -> ()
}

// -----

/// The verifier reports one error per op, for every bad op.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.relu' op expects 1 operand, got 2}}
  %a = "ck.relu"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{'ck.scale' op requires attribute 'value'}}
  %b = "ck.scale"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  %y = "ck.neg"(%b) : (tensor<2xf32>) -> tensor<3xf32> // expected-error {{does not match the inferred type}}
  "ck.return"(%b) : (tensor<2xf32>) -> ()
}

// -----

/// concat: the concatenated dimension itself overflows u64.
func.func @f(%x: tensor<2xf32>, %a: tensor<4611686018427387903xf16>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.concat' op concat size overflows}}
  %y = "ck.concat"(%a, %a, %a, %a, %a) {dim = 0 : i64} : (tensor<4611686018427387903xf16>, tensor<4611686018427387903xf16>, tensor<4611686018427387903xf16>, tensor<4611686018427387903xf16>, tensor<4611686018427387903xf16>) -> tensor<2xf16>
  "ck.return"(%x) : (tensor<2xf32>) -> ()
}

// -----

/// dropout's optional step key operand is rank 0.
func.func @f(%x: tensor<2xf32>, %s: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'ck.dropout' op dropout's step key operand must be rank 0, got tensor<2xf32>}}
  %y = "ck.dropout"(%x, %s) {rate = 0.5 : f32, seed = 1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%y) : (tensor<2xf32>) -> ()
}

// -----

/// The ops of one fusion group are contiguous in the schedule.
func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %a = "ck.exp"(%x) {ck.fusion = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  %b = "ck.neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  // expected-error@+1 {{'ck.add' op ck.fusion group 1 is not contiguous in the schedule}}
  %c = "ck.add"(%a, %b) {ck.fusion = 1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  "ck.return"(%c) : (tensor<2xf32>) -> ()
}

// -----

/// A fusion group holds only elemental ops and reductions.
func.func @f(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error@+1 {{'ck.matmul' op 'ck.matmul' cannot be fused (only elemental ops and reductions can)}}
  %a = "ck.matmul"(%x, %x) {ck.fusion = 1 : i64} : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = "ck.relu"(%a) {ck.fusion = 1 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  "ck.return"(%b) : (tensor<2x2xf32>) -> ()
}

// -----

/// The outputs of a loop fusion share one shape (the kernel's iteration space).
func.func @f(%x: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3x2xf32>) {
  %a = "ck.exp"(%x) {ck.fusion = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // expected-error@+1 {{'ck.transpose' op loop fusion outputs must share one shape: tensor<2x3xf32> and tensor<3x2xf32>}}
  %b = "ck.transpose"(%a) {ck.fusion = 1 : i64, perm = [1, 0]} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  "ck.return"(%a, %b) : (tensor<2x3xf32>, tensor<3x2xf32>) -> ()
}

// -----

/// A fusion group holds at most one reduction.
func.func @f(%x: tensor<2x3xf32>) -> tensor<f32> {
  %a = "ck.reduce_sum"(%x) {ck.fusion = 1 : i64, dims = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
  // expected-error@+1 {{'ck.reduce_sum' op a fusion group holds at most one reduction}}
  %b = "ck.reduce_sum"(%a) {ck.fusion = 1 : i64, dims = [0]} : (tensor<2xf32>) -> tensor<f32>
  "ck.return"(%b) : (tensor<f32>) -> ()
}

// -----

/// An epilogue op of a reduce fusion computes on the reduction's result shape.
func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %a = "ck.reduce_sum"(%x) {ck.fusion = 1 : i64, dims = [1]} : (tensor<2x3xf32>) -> tensor<2xf32>
  // expected-error@+1 {{'ck.broadcast' op an epilogue op of a reduce fusion must have the reduction's result shape [2]}}
  %b = "ck.broadcast"(%a) {ck.fusion = 1 : i64, dims = [1]} : (tensor<2xf32>) -> tensor<3x2xf32>
  "ck.return"(%b) : (tensor<3x2xf32>) -> ()
}

// -----

/// Math is for floats only.
func.func @f(%x: tensor<2xi64>) -> tensor<2xi64> {
  // expected-error@+1 {{'ck.exp' op computes in a float element type (f32, bf16, f16), got i64}}
  %y = "ck.exp"(%x) : (tensor<2xi64>) -> tensor<2xi64>
  "ck.return"(%y) : (tensor<2xi64>) -> ()
}

// -----

/// No arithmetic on i1.
func.func @f(%x: tensor<2xi1>) -> tensor<2xi1> {
  // expected-error@+1 {{'ck.add' op computes in a float or integer element type (not i1), got i1}}
  %y = "ck.add"(%x, %x) : (tensor<2xi1>, tensor<2xi1>) -> tensor<2xi1>
  "ck.return"(%y) : (tensor<2xi1>) -> ()
}

// -----

/// Operands share one element type.
func.func @f(%x: tensor<2xi32>, %y: tensor<2xi64>) -> tensor<2xi64> {
  // expected-error@+1 {{'ck.add' op operand element types differ: tensor<2xi32> and tensor<2xi64>}}
  %z = "ck.add"(%x, %y) : (tensor<2xi32>, tensor<2xi64>) -> tensor<2xi64>
  "ck.return"(%z) : (tensor<2xi64>) -> ()
}

// -----

/// An integer fill takes an integral value.
func.func @f() -> tensor<2xi64> {
  // expected-error@+1 {{'ck.fill' op fill of i64 needs an integral 'value'}}
  %y = "ck.fill"() {value = 0.5 : f32} : () -> tensor<2xi64>
  "ck.return"(%y) : (tensor<2xi64>) -> ()
}
