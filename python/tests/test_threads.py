"""The GIL is released while ckopt works; Ctrl-C stops long pipelines
between passes."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import ckopt


def test_two_compilations_in_threads_overlap():
    m = ckopt.gen("resmlp", depth=8, width=32, batch=8).optimize("autodiff,inplace,fuse,memplan")
    started = threading.Event()
    times = {}

    def first():
        times["a0"] = time.perf_counter()
        started.set()
        m.compile("resmlp_grad", "cpu")
        times["a1"] = time.perf_counter()

    def second():
        started.wait()
        time.sleep(0.01)
        # With the GIL held by the first compile, this line could not run
        # before that compile returned.
        times["b0"] = time.perf_counter()
        m.compile("resmlp", "cpu")
        times["b1"] = time.perf_counter()

    ta, tb = threading.Thread(target=first), threading.Thread(target=second)
    ta.start()
    tb.start()
    ta.join()
    tb.join()
    assert times["a1"] - times["a0"] > 0.02, "the compile is long enough to tell"
    assert times["b0"] < times["a1"], f"the second compilation started while the first ran: {times}"
    assert times["a0"] < times["b1"]


def test_python_runs_while_a_step_runs():
    m = ckopt.gen("mlp", depth=16, width=256, batch=64)
    c = m.optimize("autodiff").compile("mlp_grad", "cpu")
    ins = c.random_inputs(0)
    c.run(*ins)
    count = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count[0]
        for _ in range(5):
            c.run(*ins)
        during = count[0] - before
    finally:
        stop.set()
        t.join()
    assert during > 1000, f"the other thread ran {during} iterations during 5 steps"


def test_concurrent_runs_of_one_compiled_function_take_turns():
    m = ckopt.gen("mlp", depth=3, width=8, batch=4).optimize("autodiff")
    c = m.compile("mlp_grad", "cpu")
    ins = c.random_inputs(0)
    want = c.run(*ins)
    results = []

    def work():
        for _ in range(20):
            results.append(c.run(*ins))

    ts = [threading.Thread(target=work) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert len(results) == 80
    for r in results:
        for a, b in zip(r, want):
            np.testing.assert_array_equal(a, b)


def test_ctrl_c_stops_a_long_pipeline_between_passes():
    m = ckopt.gen("mlp", depth=200, width=16, batch=4)
    one = time.perf_counter()
    m.optimize("autodiff,cse")
    one = time.perf_counter() - one
    pipeline = ",".join(["autodiff"] + ["cse,dce"] * 400)  # far longer than the wait below
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    start = time.perf_counter()
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        m.optimize(pipeline)
    elapsed = time.perf_counter() - start
    assert elapsed < 0.5 + 2 + 10 * one, f"interrupted after {elapsed:.2f} s (one pass about {one:.3f} s)"
