"""Integer and bool tensors (i64, i32, i1) in and out, on the interpreter;
bf16/f16 arguments; and their errors."""

import re

import numpy as np
import pytest

import ckopt

INTS = """module {
  func.func @ints(%ids: tensor<2x3xi64>, %mask: tensor<3xi1>, %n: tensor<3xi32>) -> (tensor<3x2xi64>, tensor<2x3xi1>, tensor<3xi32>) {
    %t = "ck.transpose"(%ids) {perm = [1, 0]} : (tensor<2x3xi64>) -> tensor<3x2xi64>
    %one = "ck.fill"() {value = 1.0 : f32} : () -> tensor<3x2xi64>
    %s = "ck.add"(%t, %one) : (tensor<3x2xi64>, tensor<3x2xi64>) -> tensor<3x2xi64>
    %m = "ck.broadcast"(%mask) {dims = [1]} : (tensor<3xi1>) -> tensor<2x3xi1>
    %nn = "ck.mul"(%n, %n) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
    "ck.return"(%s, %m, %nn) : (tensor<3x2xi64>, tensor<2x3xi1>, tensor<3xi32>) -> ()
  }
}
"""


@pytest.fixture(scope="module")
def ints():
    return ckopt.parse(INTS, "ints.ck").compile("ints", "interp")


def test_integer_and_bool_arrays_in_and_out(ints):
    ids = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    mask = np.array([True, False, True])
    n = np.array([3, -4, 65536], dtype=np.int32)
    s, m, nn = ints.run(ids, mask, n)
    assert s.dtype == np.int64 and m.dtype == np.bool_ and nn.dtype == np.int32
    np.testing.assert_array_equal(s, ids.T + 1)
    np.testing.assert_array_equal(m, np.broadcast_to(mask, (2, 3)))
    np.testing.assert_array_equal(nn, (n.astype(np.int64) ** 2).astype(np.int32)), "i32 arithmetic wraps as numpy's"
    for a in (s, m, nn):
        assert a.base is None and a.flags.owndata
    # other integer dtypes convert safely; 0/1 integers are bools
    s2, m2, _ = ints.run(ids.astype(np.int16), mask.astype(np.uint8), n.astype(np.int64))
    np.testing.assert_array_equal(s2, s)
    np.testing.assert_array_equal(m2, m)
    assert ints.arguments == [("ids", [2, 3], "i64"), ("mask", [3], "i1"), ("n", [3], "i32")]


def test_integer_argument_errors(ints):
    ids = np.zeros((2, 3), np.int64)
    mask = np.zeros(3, bool)
    n = np.zeros(3, np.int32)
    with pytest.raises(TypeError, match=re.escape("argument 0 (%ids) of @ints must be an integer array for tensor<2x3xi64>, got dtype float32")):
        ints.run(ids.astype(np.float32), mask, n)
    with pytest.raises(TypeError, match=re.escape("argument 1 (%mask) of @ints must be a bool (or 0/1 integer) array for tensor<3xi1>, got dtype float64")):
        ints.run(ids, mask.astype(float), n)
    with pytest.raises(ValueError, match=re.escape("argument 1 (%mask) of @ints (tensor<3xi1>): element 0 = 2 is out of range for i1")):
        ints.run(ids, np.array([2, 0, 1]), n)
    with pytest.raises(ValueError, match=re.escape("argument 2 (%n) of @ints (tensor<3xi32>): element 1 = 4294967296 is out of range for i32")):
        ints.run(ids, mask, np.array([1, 2**32, 3]))
    with pytest.raises(TypeError, match=r"argument 0 \(%ids\) of @ints \(tensor<2x3xi64>\): Cannot cast"):
        ints.run(ids.astype(np.uint64), mask, n)
    with pytest.raises(ValueError, match=re.escape("argument 0 (%ids) of @ints must have shape (2, 3)")):
        ints.run(np.zeros((3, 2), np.int64), mask, n)
    with pytest.raises(TypeError, match=re.escape("argument 0 (%x) of @mlp must be a float array for tensor<4x8xf32>, got dtype int64")):
        m = ckopt.gen("mlp", depth=3, width=8, batch=4).compile("mlp", "interp")
        m.run(np.zeros((4, 8), np.int64), *m.random_inputs(0)[1:])


def test_integers_on_cpu_equal_the_interpreter(ints):
    cpu = ckopt.parse(INTS, "ints.ck").compile("ints", "cpu")
    ids = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int64)
    mask = np.array([True, False, True])
    n = np.array([3, -4, 65536], dtype=np.int32)
    for a, b in zip(cpu.run(ids, mask, n), ints.run(ids, mask, n)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_low_precision_float_arguments_are_rounded():
    m = ckopt.parse(
        "module {\n  func.func @h(%x: tensor<3xbf16>) -> tensor<3xbf16> {\n"
        '    %y = "ck.neg"(%x) : (tensor<3xbf16>) -> tensor<3xbf16>\n'
        '    "ck.return"(%y) : (tensor<3xbf16>) -> ()\n  }\n}\n',
        "h.ck",
    ).compile("h", "interp")
    (y,) = m.run(np.array([1.0, 1 + 2**-10, 3.0], np.float32))
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [-1.0, -1.0, -3.0])  # 1 + 2^-10 rounds to 1 in bf16
