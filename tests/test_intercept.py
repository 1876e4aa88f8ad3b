"""Operator interception (pytorchlite/_intercept.py): every generated binding hands its
call to the installed handlers, which the profiler and the JIT tracer build on."""

import threading

import numpy as np
import pytest

import pytorchlite as ptl
from pytorchlite import _intercept as ix


class Recorder:
    def __init__(self, suspend=False):
        self.calls = []
        self.suspend = suspend

    def __call__(self, site, args, run):
        self.calls.append((site.qualified_name, site.form, site.names, args))
        if self.suspend:
            with ix.suspended():
                return run(args)
        return run(args)

    @property
    def names(self):
        return [c[0] for c in self.calls]


@pytest.fixture
def recorder():
    rec = Recorder()
    ix.install(rec)
    try:
        yield rec
    finally:
        ix.uninstall(rec)
    assert not ix.on


def test_nothing_installed_means_off():
    assert ix.installed() == ()
    assert ix.on is False


def test_a_handler_sees_each_form_with_checked_arguments(recorder):
    a = ptl.ones(3)
    b = ptl.tensor([1.0, 2.0, 3.0])
    c = ptl.add(a, b, alpha=2)
    a.mul_(2)
    out = ptl.empty(3)
    ptl.sub(a, b, out=out)
    assert np.allclose(c.numpy(), [3, 5, 7])
    assert np.allclose(out.numpy(), [1, 0, -1])
    by_name = {c[0]: c for c in recorder.calls}
    name, form, names, args = by_name["add"]
    assert form == "function" and names == ("input", "other", "alpha", "out")
    assert args[0] is a and args[1] is b and args[2] == 2 and args[3] is None
    assert by_name["mul_"][1] == "inplace"
    assert by_name["sub"][2][-1] == "out" and by_name["sub"][3][-1] is out


def test_python_operators_leave_their_fast_path_when_intercepted(recorder):
    a = ptl.ones(4)
    b = ptl.ones(4)
    r = a + b
    assert r.tolist() == [2.0] * 4
    assert "add" in recorder.names


def test_varargs_factories_are_called_again_with_their_list(recorder):
    z = ptl.zeros(2, 3)
    assert z.shape == (2, 3)
    (name, _, names, args), = [c for c in recorder.calls if c[0] == "zeros"]
    assert names[0] == "size" and list(args[0]) == [2, 3]


def test_overloads_are_named_by_their_overload(recorder):
    values, indices = ptl.max(ptl.tensor([[1.0, 5.0], [7.0, 2.0]]), 1)
    assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
    assert "max.dim" in recorder.names


def test_nested_calls_are_seen_unless_the_handler_suspends():
    x = ptl.randn(4, 3, requires_grad=True)
    outer = Recorder()
    ix.install(outer)
    try:
        ptl.nn.functional.log_softmax(x, 1).sum().backward()
    finally:
        ix.uninstall(outer)
    # the backward formulas' operators are calls too
    assert "log_softmax" in outer.names and "_log_softmax_backward_data" in outer.names
    flat = Recorder(suspend=True)
    ix.install(flat)
    try:
        ptl.nn.functional.log_softmax(x, 1).sum()
    finally:
        ix.uninstall(flat)
    assert flat.names == ["log_softmax", "sum"]


def test_handlers_nest_last_installed_first():
    order = []

    def make(tag):
        def h(site, args, run):
            order.append(tag)
            return run(args)
        return h

    first, second = make("first"), make("second")
    ix.install(first)
    ix.install(second)
    try:
        ptl.ones(2).neg()
    finally:
        ix.uninstall(second)
        ix.uninstall(first)
    assert order[:2] == ["second", "first"]


def test_a_handler_may_replace_arguments_and_results():
    def h(site, args, run):
        if site.name == "neg":
            return run((ptl.full((2,), 5.0),))
        return run(args)

    ix.install(h)
    try:
        r = ptl.ones(2).neg()
    finally:
        ix.uninstall(h)
    assert r.tolist() == [-5.0, -5.0]


def test_an_error_inside_the_operator_reaches_the_caller_and_leaves_no_state(recorder):
    with pytest.raises(RuntimeError, match="size of tensor a"):
        ptl.add(ptl.ones(2), ptl.ones(3))
    assert not ix._tls.reentry
    assert ptl.ones(2).add(1).tolist() == [2.0, 2.0]
    assert recorder.names[-1] == "add"


def test_argument_errors_come_before_the_handlers(recorder):
    with pytest.raises(TypeError, match="add"):
        ptl.add(ptl.ones(2), "x")
    assert "add" not in recorder.names


def test_other_threads_are_intercepted_and_suspension_is_per_thread(recorder):
    seen = []

    def work():
        ptl.ones(2).exp()
        seen.append(True)

    with ix.suspended():
        t = threading.Thread(target=work)
        t.start()
        t.join()
        ptl.ones(2).sin()
    assert seen and "exp" in recorder.names and "sin" not in recorder.names


def test_uninstalling_what_is_not_installed_is_an_error():
    with pytest.raises(ValueError, match="not installed"):
        ix.uninstall(lambda s, a, r: r(a))
