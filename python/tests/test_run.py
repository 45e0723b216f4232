"""Compiled functions: cpu results equal the interpreter's, arrays in and
out (dtypes, layouts, __array__/__dlpack__), argument errors, reports."""

import re

import numpy as np
import pytest
from conftest import close

import ckopt

MODELS = [
    ("mlp", dict(depth=3, width=8, batch=4)),
    ("resmlp", dict(depth=3, width=8, batch=2)),
    ("lstm", dict(depth=2, seq=3, width=8, batch=2)),
    ("resnet", dict(depth=1, channels=3, image=6, batch=2, classes=3)),
    ("transformer", dict(depth=1, seq=4, width=8, heads=2, batch=2)),
]


@pytest.mark.parametrize("name,sizes", MODELS, ids=[m for m, _ in MODELS])
@pytest.mark.parametrize("pipeline", ["autodiff", "autodiff,inplace,fuse,remat{mode=sqrt},memplan"])
def test_cpu_equals_interp(name, sizes, pipeline):
    m = ckopt.gen(name, **sizes).optimize(pipeline)
    for f in m.functions:
        interp = m.compile(f, target="interp")
        cpu = m.compile(f, target="cpu")
        inputs = interp.random_inputs(3)
        want = interp.run(*inputs)
        got = cpu.run(*inputs)
        assert len(got) == len(want) > 0
        for g, w in zip(got, want):
            close(g, w)
        assert cpu.report["backend"] == "cpu" and interp.report["backend"] == "interp"


def test_outputs_are_new_arrays_that_own_their_memory(mlp):
    c = mlp.optimize("autodiff").compile("mlp_grad", "cpu")
    ins = c.random_inputs(0)
    a = c.run(*ins)
    b = c.run(*ins)
    for x, y in zip(a, b):
        assert x.base is None and x.flags.owndata and x.flags.writeable and x.flags.c_contiguous
        assert x.dtype == np.float32
        assert x is not y and not np.shares_memory(x, y)
        np.testing.assert_array_equal(x, y)
    assert a[0].shape == () and a[1].shape == (8, 8)
    a[1][:] = 7.0  # writing an output changes nothing in the backend
    np.testing.assert_array_equal(c.run(*ins)[1], b[1])


def test_inputs_of_every_kind_numpy_takes(mlp):
    c = mlp.compile("mlp", "cpu")
    ins = c.random_inputs(1)
    want = c.run(*ins)[0]

    class ArrayLike:  # __array__ only
        def __init__(self, a):
            self.a = a

        def __array__(self, dtype=None, copy=None):
            return self.a

    class DLPack:  # __dlpack__ only (as a torch tensor or a JAX array offers)
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    variants = [
        [a.astype(np.float64) for a in ins],
        [np.asfortranarray(a) for a in ins],
        [np.repeat(a, 2, axis=-1)[..., ::2] for a in ins],  # strided views
        [ArrayLike(a) for a in ins],
        [DLPack(a) for a in ins],
        [a.tolist() for a in ins],
        [a.astype(">f4") for a in ins],  # big-endian
    ]
    for v in variants:
        close(c.run(*v)[0], want, tol=0)
    f16 = c.run(*[a.astype(np.float16) for a in ins])[0]
    close(f16, want, tol=1e-2)


def test_float32_inputs_are_not_modified(mlp):
    c = mlp.optimize("autodiff,inplace,sgd{lr=0.5},memplan").compile("mlp_step", "cpu")
    ins = c.random_inputs(0)
    copies = [a.copy() for a in ins]
    c.run(*ins)  # the step writes its donated parameters in place, in the backend's buffers
    for a, b in zip(ins, copies):
        np.testing.assert_array_equal(a, b)


def test_argument_errors_name_the_argument(mlp):
    c = mlp.compile("mlp", "cpu")
    ins = c.random_inputs(0)
    with pytest.raises(TypeError, match=r"@mlp takes 8 arrays \(%x: tensor<4x8xf32>, %target: tensor<4x8xf32>, %w0: tensor<8x8xf32>.*\), 7 given"):
        c.run(*ins[:-1])
    with pytest.raises(ValueError, match=re.escape("argument 1 (%target) of @mlp must have shape (4, 8) (tensor<4x8xf32>), got (8, 4)")):
        c.run(ins[0], ins[1].T, *ins[2:])
    with pytest.raises(TypeError, match=re.escape("argument 0 (%x) of @mlp must be a float array for tensor<4x8xf32>, got dtype int64")):
        c.run(ins[0].astype(np.int64), *ins[1:])
    with pytest.raises(TypeError, match=re.escape("argument 0 (%x) of @mlp must be a float array for tensor<4x8xf32>, got dtype bool")):
        c.run(ins[0] > 0, *ins[1:])
    with pytest.raises(TypeError, match=r"argument 2 \(%w0\) of @mlp must be an array \(numpy.ndarray, or anything with __array__ or __dlpack__\) for tensor<8x8xf32>, got str"):
        c.run(ins[0], ins[1], "w", *ins[3:])
    with pytest.raises(TypeError, match=r"argument 0 \(%x\) of @mlp \(tensor<4x8xf32>\): cannot read a Bad as an array"):

        class Bad:
            def __array__(self, dtype=None, copy=None):
                raise RuntimeError("no")

        c.run(Bad(), *ins[1:])


def test_report_and_properties(mlp):
    c = mlp.optimize("autodiff").compile("mlp_grad", "cpu")
    assert c.report is None
    c.run(*c.random_inputs(0))
    r = c.report
    assert r["backend"] == "cpu" and r["function"] == "mlp_grad" and r["steps"] == 1
    assert r["arena_allocated_bytes"] == r["arena_bytes"] > 0 and r["step_ms"] > 0 and r["compile_ms"] > 0
    assert c.memory_report()["arena_bytes"] == r["arena_bytes"], "planned by Module.compile for cpu"
    assert c.function == "mlp_grad" and c.target == "cpu"
    assert c.arguments[0] == ("x", [4, 8], "f32")
    assert repr(c) == "<ckopt.Compiled @mlp_grad for cpu: 8 arguments, 7 results>"
    i = mlp.compile("mlp", "interp")
    i.run(*i.random_inputs(0))
    assert i.report["backend"] == "interp" and i.report["steps"] == 1
    np.testing.assert_array_equal(c.random_inputs(5)[0], i.random_inputs(5)[0])


def test_compile_errors(mlp):
    with pytest.raises(ValueError, match="target must be 'interp', 'cpu' or 'cuda'"):
        mlp.compile("mlp", target="tpu")
    with pytest.raises(ckopt.CompileError, match="no function @nope"):
        mlp.compile("nope")
    # a GEMM beyond the backends' 32-bit sizes (a batch of 2^31 matrices) is
    # refused at the op, before any buffer is allocated
    t = "tensor<2147483648x1x1xf32>"
    m = ckopt.parse(
        f"module {{\n  func.func @h(%x: {t}, %w: {t}) -> {t} {{\n"
        f'    %y = "ck.matmul"(%x, %w) : ({t}, {t}) -> {t}\n'
        f'    "ck.return"(%y) : ({t}) -> ()\n  }}\n}}\n',
        "h.ck",
    )
    with pytest.raises(ckopt.CompileError) as e:
        m.compile("h", "cpu")
    assert "'ck.matmul' op" in str(e.value) and "batch = 2147483648" in str(e.value)
    assert e.value.diagnostics[0].file == "h.ck" and e.value.diagnostics[0].line == 3
    assert '%y = "ck.matmul"(%x, %w)' in str(e.value), "rendered with the source line"


@pytest.mark.parametrize("target", ["cpu", "interp"])
def test_run_into_reads_inputs_in_place_and_writes_outputs(mlp, target):
    c = mlp.optimize("autodiff").compile("mlp_grad", target)
    ins = c.random_inputs(2)
    want = c.run(*ins)
    outs = [np.full(shape, np.nan, dtype=np.float32) for shape, dt in c.results]
    assert [dt for _, dt in c.results] == ["f32"] * len(outs)
    c.run_into(ins, outs)
    for o, w in zip(outs, want):
        np.testing.assert_array_equal(o, w)
    # The same call again on the same memory: the same bits (nothing kept from the last call).
    again = [np.zeros_like(o) for o in outs]
    c.run_into(ins, again)
    for o, w in zip(again, want):
        np.testing.assert_array_equal(o, w)


def test_run_into_integer_and_half_arguments():
    text = """module {
  func.func @f(%x: tensor<3x2xbf16>, %i: tensor<2xi64>, %m: tensor<2x2xi1>) -> (tensor<2x2xbf16>, tensor<2x2xi1>) {
    %g = "ck.gather"(%x, %i) {axis = 0 : i64} : (tensor<3x2xbf16>, tensor<2xi64>) -> tensor<2x2xbf16>
    %n = "ck.not"(%m) : (tensor<2x2xi1>) -> tensor<2x2xi1>
    "ck.return"(%g, %n) : (tensor<2x2xbf16>, tensor<2x2xi1>) -> ()
  }
}"""
    c = ckopt.parse(text).compile("f", "cpu")
    x = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    xbits = (x.view(np.uint32) >> 16).astype(np.uint16)  # exact in bf16
    i = np.array([2, 0], np.int64)
    m = np.array([[True, False], [False, True]])
    g, n = np.zeros((2, 2), np.uint16), np.zeros((2, 2), bool)
    c.run_into([xbits, i, m], [g, n])
    np.testing.assert_array_equal((g.astype(np.uint32) << 16).view(np.float32), x[[2, 0]])
    np.testing.assert_array_equal(n, ~m)


def test_run_into_errors_name_the_argument(mlp):
    c = mlp.optimize("autodiff").compile("mlp_grad", "cpu")
    ins = c.random_inputs(0)
    outs = [np.zeros(shape, np.float32) for shape, _ in c.results]
    with pytest.raises(TypeError, match="takes 8 inputs and 7 outputs, got 7 and 7"):
        c.run_into(ins[:-1], outs)
    with pytest.raises(TypeError, match=r"argument 0 \(%x\) of @mlp_grad is tensor<4x8xf32>: got a numpy array of dtype float64"):
        c.run_into([ins[0].astype(np.float64)] + ins[1:], outs)
    with pytest.raises(ValueError, match=r"argument 0 \(%x\) of @mlp_grad is tensor<4x8xf32>: got shape \(8, 4\)"):
        c.run_into([np.ascontiguousarray(ins[0].T)] + ins[1:], outs)
    with pytest.raises(ValueError, match="must be C-contiguous"):
        c.run_into([np.asfortranarray(np.zeros((4, 8), np.float32))] + ins[1:], outs)
    with pytest.raises(TypeError, match="must be a numpy.ndarray"):
        c.run_into([ins[0].tolist()] + ins[1:], outs)
    ro = outs[1].copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="result 1 of @mlp_grad must be writable"):
        c.run_into(ins, outs[:1] + [ro] + outs[2:])
    with pytest.raises(ValueError, match="result 1 of @mlp_grad: its output array overlaps"):
        c.run_into(ins, outs[:1] + [ins[2]] + outs[2:])


def test_run_into_with_a_shared_arena(mlp):
    g = mlp.optimize("autodiff,inplace,remat{mode=sqrt},fuse,memplan")
    c = g.compile("mlp_grad", "cpu")
    f = g.compile("mlp", "cpu")
    assert c.arena_bytes > 0 and f.arena_bytes > 0
    ins = c.random_inputs(4)
    want = c.run(*ins)
    want_f = f.run(*ins[: len(f.arguments)])
    raw = np.zeros(max(c.arena_bytes, f.arena_bytes) + 64, np.uint8)
    arena = raw[(-raw.ctypes.data) % 64 :][: max(c.arena_bytes, f.arena_bytes)]
    outs = [np.zeros(shape, np.float32) for shape, _ in c.results]
    outs_f = [np.zeros(shape, np.float32) for shape, _ in f.results]
    for _ in range(2):  # the two functions take turns in one buffer
        c.run_into(ins, outs, arena)
        f.run_into(ins[: len(f.arguments)], outs_f, arena)
        for o, w in zip(outs + outs_f, want + want_f):
            np.testing.assert_array_equal(o, w)
    with pytest.raises(ckopt.Error, match=f"the arena for @mlp_grad needs {c.arena_bytes} bytes"):
        c.run_into(ins, outs, arena[: c.arena_bytes - 1])
    with pytest.raises(ckopt.Error, match="64-byte aligned"):
        c.run_into(ins, outs, raw[((-raw.ctypes.data) % 64) + 1 :][: c.arena_bytes])
    with pytest.raises(ValueError, match="uint8"):
        c.run_into(ins, outs, np.zeros(c.arena_bytes, np.float32))
