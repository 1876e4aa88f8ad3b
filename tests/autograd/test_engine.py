"""The autograd engine and its traps: fan-out, diamonds, retain_graph, broadcasting,
version counters (also through views), in-place history, hooks, grad modes, double
backward, autograd.Function, anomaly mode and PyTorch's error messages."""

import gc
import threading
import warnings
import weakref

import numpy as np
import pytest

import pytorchlite as P
from pytorchlite.autograd import Function, grad as agrad

torch = None
try:
    import torch  # noqa: F811
except ImportError:   # the oracle is optional
    pass

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


def leaf(values, dtype=P.float64):
    return P.tensor(values, dtype=dtype, requires_grad=True)


def close(t, expected, **kw):
    np.testing.assert_allclose(t.detach().numpy(), np.asarray(expected, dtype=np.float64), rtol=1e-6, atol=1e-9, **kw)


# --- basics ---------------------------------------------------------------------------------

def test_x_times_x_gives_2x():
    x = leaf([1., 2., 3.])
    (x * x).sum().backward()
    close(x.grad, [2., 4., 6.])


def test_grad_fn_names_and_next_functions():
    x = leaf([1., 2.])
    y = x * 2
    assert y.grad_fn.name() == "MulBackward0" and not y.is_leaf and x.is_leaf and x.grad_fn is None
    (fn, nr), (none, _) = y.grad_fn.next_functions
    assert type(fn).__name__ == "AccumulateGrad" and fn.variable is x and nr == 0 and none is None
    assert repr(y).endswith("grad_fn=<MulBackward0>)")
    z = x + 1
    assert z.grad_fn.name() == "AddBackward0"


def test_diamond_runs_each_node_once_and_sums():
    x = leaf([1., 2.])
    calls = []
    a = x * 3
    a.grad_fn.register_hook(lambda gi, go: calls.append("a"))
    b = a.exp()
    c = a * a
    (b + c).sum().backward()
    xv = np.array([1., 2.])
    close(x.grad, 3 * np.exp(3 * xv) + 2 * 9 * xv)
    assert calls == ["a"]


def test_unused_branch_and_partial_graph():
    x = leaf([1., 2.])
    y = leaf([3., 4.])
    z = x * 2
    _ = y * 3          # not part of the loss
    z.sum().backward()
    close(x.grad, [2., 2.])
    assert y.grad is None


def test_accumulates_across_calls():
    x = leaf([1., 2.])
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    close(x.grad, [5., 5.])


def test_backward_twice():
    x = leaf([1., 2.])
    y = x.exp().sum()
    y.backward(retain_graph=True)
    y.backward()
    close(x.grad, 2 * np.exp([1., 2.]))
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_backward_twice_without_saved_tensors_works():
    # AddBackward saves nothing, so PyTorch lets it run again
    x = leaf([1., 2.])
    y = (x + 1).sum()
    y.backward()
    y.backward()
    close(x.grad, [2., 2.])


def test_broadcast_gradients_are_reduced():
    a = leaf(np.ones((3, 1)))
    b = leaf(np.ones(4))
    (a + b * 2).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,)
    close(a.grad, np.full((3, 1), 4.))
    close(b.grad, np.full(4, 6.))


def test_python_scalar_gets_no_edge():
    x = leaf([1., 2.])
    y = x * 2.5
    assert y.grad_fn.next_functions[1] == (None, 0)
    y.sum().backward()
    close(x.grad, [2.5, 2.5])


def test_grad_cast_to_input_dtype():
    a = leaf([1., 2.], P.float32)
    b = leaf([3., 4.], P.float64)
    c = a * b
    assert c.dtype == P.float64
    c.sum().backward()
    assert a.grad.dtype == P.float32 and b.grad.dtype == P.float64
    close(a.grad, [3., 4.])


def test_expand_view_gradient_sums():
    x = leaf([[1.], [2.], [3.]])
    x.expand(3, 4).sum().backward()
    assert x.grad.shape == (3, 1)
    close(x.grad, np.full((3, 1), 4.))


def test_views_and_indexing_gradients():
    x = leaf(np.arange(12.).reshape(3, 4))
    (x[1:, ::2] * 2).sum().backward()
    expected = np.zeros((3, 4))
    expected[1:, ::2] = 2
    close(x.grad, expected)
    x.grad = None
    x.t()[2].sum().backward()
    expected = np.zeros((3, 4))
    expected[:, 2] = 1
    close(x.grad, expected)
    x.grad = None
    x[None, ..., 1].sum().backward()
    expected = np.zeros((3, 4))
    expected[:, 1] = 1
    close(x.grad, expected)


def test_advanced_indexing_gradient_accumulates_repeats():
    x = leaf(np.arange(5.))
    idx = P.tensor([0, 2, 2, 4])
    x[idx].sum().backward()
    close(x.grad, [1., 0., 2., 0., 1.])
    x.grad = None
    x[x > 2].sum().backward() if hasattr(x, "__gt__") and hasattr(P, "gt") else None


def test_non_scalar_backward_needs_gradient():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(P.tensor([1., 10.], dtype=P.float64))
    close(x.grad, [2., 20.])


def test_gradient_shape_mismatch():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match=r"Mismatch in shape: grad_output\[0\] has a shape of "
                                           r"pytorchlite.Size\(\[3\]\) and output\[0\] has a shape of "
                                           r"pytorchlite.Size\(\[2\]\)"):
        (x * 2).backward(P.ones(3, dtype=P.float64))


def test_backward_on_tensor_without_grad():
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and does not have a grad_fn"):
        P.tensor([1.]).sum().backward()


def test_requires_grad_only_for_floating():
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        P.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        P.tensor([1, 2], requires_grad=True)


@needs_torch
def test_requires_grad_message_matches_torch():
    with pytest.raises(RuntimeError) as ours:
        P.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError) as theirs:
        torch.tensor([1, 2]).requires_grad_()
    assert str(ours.value) == str(theirs.value)


def test_integer_outputs_do_not_require_grad():
    x = leaf([[1., 5.], [7., 2.]])
    values, indices = x.max(1)
    assert values.requires_grad and not indices.requires_grad and indices.grad_fn is None
    assert not x.to(P.int64).requires_grad


def test_grad_setter_checks():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match="assigned grad has data of a different size"):
        x.grad = P.zeros(3, dtype=P.float64)
    with pytest.raises(RuntimeError, match="assigned grad has data of a different type"):
        x.grad = P.zeros(2, dtype=P.float32)
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None"):
        x.grad = 3
    x.grad = P.ones(2, dtype=P.float64)
    (x * 2).sum().backward()
    close(x.grad, [3., 3.])


# --- version counter -----------------------------------------------------------------------

def test_inplace_on_saved_input_trips_version_check():
    w = leaf([1., 2.])
    a = w * 1
    y = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"one of the variables needed for gradient computation has been modified "
                                           r"by an inplace operation: \[pytorchlite.DoubleTensor \[2\]\], which is "
                                           r"output 0 of MulBackward0, is at version 1; expected version 0"):
        y.sum().backward()


def test_inplace_on_saved_output_message():
    x = leaf([1., 2., 3.], P.float32)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError) as e:
        y.sum().backward()
    msg = str(e.value)
    assert ("one of the variables needed for gradient computation has been modified by an inplace operation: "
            "[pytorchlite.FloatTensor [3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 "
            "instead. Hint:") in msg


def test_inplace_through_view_trips_version_check():
    x = leaf([1., 2., 3.])
    y = x.exp()
    v = y[1:]
    v.mul_(2)     # views share the version counter with their base
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_detach_shares_version_counter_data_does_not():
    x = leaf([1., 2.])
    y = x.exp()
    y.detach().zero_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    y2 = x.exp()
    y2.data.zero_()    # .data is outside autograd's version tracking
    y2.sum().backward()


def test_leaf_inplace_errors():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match="^a leaf Variable that requires grad is being used in an in-place "
                                           "operation.$"):
        x.add_(1)
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is being used in an "
                                           "in-place operation.$"):
        x[0].mul_(2)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable"):
        x[0] = 5.
    with P.no_grad():
        v = x._version
        x.mul_(2)
        assert x._version == v + 1
    close(x, [2., 4.])


def test_inplace_rebase_history():
    x = leaf([-1., 2., 3.])
    y = x * 2
    y.mul_(y.detach().clone())  # y = 2x * 2x (the second factor a constant)
    assert y.grad_fn.name() == "MulBackward0"
    y.sum().backward()
    close(x.grad, 4 * np.array([-1., 2., 3.]))


def test_inplace_other_requires_grad_uses_original_self():
    x = leaf([1., 2.])
    w = leaf([3., 5.])
    a = x * 1
    a.mul_(w)
    a.sum().backward()
    close(x.grad, [3., 5.])
    close(w.grad, [1., 2.])   # d(a*w)/dw uses a before the in-place multiply


def test_inplace_on_tensor_not_requiring_grad_gains_history():
    b = P.zeros(2, dtype=P.float64)
    w = leaf([3., 5.])
    b.add_(w)
    assert b.requires_grad and b.grad_fn.name() == "AddBackward0"
    (b * b).sum().backward()
    close(w.grad, [6., 10.])


def test_inplace_through_view_copyslices():
    x = leaf([1., 2., 3.])
    y = x * 2
    y[1:].mul_(3)
    assert y.grad_fn.name() == "CopySlices"
    y.sum().backward()
    close(x.grad, [2., 6., 6.])


def test_setitem_records_copyslices():
    x = leaf([1., 2., 3.])
    w = leaf([10.])
    y = x * 1
    y[0] = w[0] * 2
    y[2] = 7.
    (y * P.tensor([1., 2., 3.], dtype=P.float64)).sum().backward()
    close(x.grad, [0., 2., 0.])
    close(w.grad, [2.])
    buf = P.zeros(3, dtype=P.float64)
    v = leaf([4., 5.])
    buf[1:] = v
    (buf * buf).sum().backward()
    close(v.grad, [8., 10.])


def test_advanced_setitem_gradients():
    x = leaf(np.arange(4.))
    w = leaf([7., 8.])
    y = x * 1
    y[P.tensor([0, 3])] = w
    (y * P.tensor([1., 2., 3., 4.], dtype=P.float64)).sum().backward()
    close(x.grad, [0., 2., 3., 0.])
    close(w.grad, [1., 4.])


def test_view_grad_fn_regenerates_after_base_inplace():
    x = leaf([1., 2., 3.])
    b = x * 1
    v = b[:2]
    b.mul_(4)
    assert v.grad_fn.name() == "AsStridedBackward0"
    v.sum().backward()
    close(x.grad, [4., 4., 0.])


# --- graph lifetime ------------------------------------------------------------------------

def test_graph_freed_without_reference_cycles():
    gc.disable()
    try:
        x = leaf([1., 2.])
        y = x.exp()
        z = (y * y).sum()
        ref = weakref.ref(z.grad_fn)
        ref_y = weakref.ref(y.grad_fn)
        del y, z
        assert ref() is None and ref_y() is None
    finally:
        gc.enable()


def test_saved_tensors_released_after_backward():
    x = leaf([1., 2.])
    y = x.exp()
    fn = y.grad_fn
    assert fn._saved_result is not None
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        fn._saved_result


def test_saved_output_has_no_cycle_and_rewraps():
    x = leaf([1., 2.])
    y = x.exp()
    r = y.grad_fn._saved_result
    assert r.grad_fn is y.grad_fn and r is not y
    close(r, np.exp([1., 2.]))


# --- hooks ----------------------------------------------------------------------------------

def test_hook_return_replaces_grad_and_handle_removes():
    x = leaf([1., 2.])
    y = x * 2
    seen = []
    h = y.register_hook(lambda g: g * 10)
    y.register_hook(lambda g: seen.append(g.detach().numpy().copy()))
    y.sum().backward()
    close(x.grad, [20., 20.])
    np.testing.assert_allclose(seen[0], [10., 10.])
    h.remove()
    x.grad = None
    y2 = x * 2
    y2.sum().backward()
    close(x.grad, [2., 2.])


def test_leaf_hook_runs_before_accumulation():
    x = leaf([1., 2.])
    order = []
    x.register_hook(lambda g: order.append(("hook", x.grad is None)) or g * 3)
    x.register_post_accumulate_grad_hook(lambda t: order.append(("post", t.grad is not None)))
    (x * 2).sum().backward()
    assert order == [("hook", True), ("post", True)]
    close(x.grad, [6., 6.])


def test_hook_on_tensor_not_requiring_grad():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        P.tensor([1.]).register_hook(lambda g: g)


def test_retain_grad():
    x = leaf([1., 2.])
    y = x * 3
    z = y * y
    y.retain_grad()
    assert y.retains_grad and not x.retains_grad
    z.sum().backward()
    close(y.grad, 2 * 3 * np.array([1., 2.]))
    w = x * 3
    (w * w).sum().backward()
    assert w.grad is None
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad=False"):
        P.tensor([1.]).retain_grad()


# --- grad modes --------------------------------------------------------------------------------

def test_no_grad_context_and_decorator():
    x = leaf([1., 2.])
    with P.no_grad():
        y = x * 2
    assert not y.requires_grad and y.grad_fn is None

    @P.no_grad()
    def f(t):
        return t * 2
    assert not f(x).requires_grad
    assert P.is_grad_enabled()


def test_enable_grad_inside_no_grad_and_set_grad_enabled():
    x = leaf([1.])
    with P.no_grad():
        with P.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad
    with P.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert P.is_grad_enabled()
    P.set_grad_enabled(False)
    try:
        assert not P.is_grad_enabled()
    finally:
        P.set_grad_enabled(True)

    @P.enable_grad()
    def g():
        return (x * 2).requires_grad
    with P.no_grad():
        assert g()


def test_grad_mode_restored_on_exception():
    with pytest.raises(ValueError):
        with P.no_grad():
            raise ValueError("boom")
    assert P.is_grad_enabled()


def test_grad_mode_is_thread_local():
    out = {}

    def worker():
        out["enabled"] = P.is_grad_enabled()
        out["requires"] = (P.ones(1, requires_grad=True) * 2).requires_grad
    with P.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert out == {"enabled": True, "requires": True}


def test_inference_mode():
    x = leaf([1.])
    with P.inference_mode():
        assert P.is_inference_mode_enabled() and not P.is_grad_enabled()
        assert not (x * 2).requires_grad
    assert not P.is_inference_mode_enabled()
    with P.inference_mode(False):
        assert (x * 2).requires_grad


def test_out_with_requires_grad_raises():
    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match=r"^add\(\): functions with out=... arguments don't support automatic "
                                           r"differentiation, but one of the arguments requires grad.$"):
        P.add(x, x, out=P.empty(2, dtype=P.float64))
    with P.no_grad():
        P.add(x, x, out=P.empty(2, dtype=P.float64))


# --- higher order ----------------------------------------------------------------------------

def test_double_backward_cube():
    x = leaf([2., -1.])
    y = x * x * x
    (g,) = agrad(y.sum(), x, create_graph=True)
    close(g, 3 * np.array([4., 1.]))
    assert g.requires_grad
    (gg,) = agrad(g.sum(), x)
    close(gg, 6 * np.array([2., -1.]))


def test_create_graph_grad_has_grad_fn():
    x = leaf([2.])
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.grad_fn is not None
    close(x.grad, [12.])
    g = x.grad
    x.grad = None
    g.sum().backward()
    close(x.grad, [12.])


def test_autograd_grad_allow_unused_and_errors():
    x = leaf([1., 2.])
    w = leaf([3.])
    y = (x * 2).sum()
    with pytest.raises(RuntimeError, match="The differentiated Tensor at index 1 appears to not have been used in "
                                           "the graph. Set allow_unused=True if this is the desired behavior."):
        agrad(y, [x, w], retain_graph=True)
    gx, gw = agrad(y, [x, w], allow_unused=True, retain_graph=True)
    close(gx, [2., 2.])
    assert gw is None and x.grad is None
    gx, gw = agrad(y, [x, w], materialize_grads=True)
    close(gw, [0.])


def test_grad_of_intermediate_and_grad_outputs():
    x = leaf([1., 2.])
    h = x * 3
    y = h * h
    (gh,) = agrad(y, h, grad_outputs=P.tensor([1., 0.5], dtype=P.float64))
    close(gh, [6., 6.])


def test_backward_inputs_only_accumulates_there():
    x = leaf([1., 2.])
    w = leaf([3., 4.])
    h = x * w
    (h * h).sum().backward(inputs=[w])
    assert x.grad is None
    close(w.grad, 2 * np.array([1., 2.]) ** 2 * np.array([3., 4.]))
    h2 = x * w
    h2.sum().backward(inputs=[h2])
    close(h2.grad, [1., 1.])


# --- autograd.Function --------------------------------------------------------------------------

class Cube(Function):
    @staticmethod
    def forward(ctx, x, k):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * x * x * k

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        assert ctx.needs_input_grad == (True, False)
        return g * 3 * x * x * ctx.k, None


def test_function_forward_backward_and_double_backward():
    x = leaf([1., 2.])
    y = Cube.apply(x, 2.)
    assert y.grad_fn.name() == "CubeBackward"
    (g,) = agrad(y.sum(), x, create_graph=True)
    close(g, 6 * np.array([1., 4.]))
    (gg,) = agrad(g.sum(), x)
    close(gg, 12 * np.array([1., 2.]))


def test_function_non_differentiable_output_and_materialize():
    class TwoOut(Function):
        @staticmethod
        def forward(ctx, x):
            idx = x.detach().to(P.int64)
            ctx.mark_non_differentiable(idx)
            return x * 2, idx

        @staticmethod
        def backward(ctx, g, gi):
            # PyTorch: a non-differentiable output's gradient is always zeros
            assert not gi.detach().numpy().any()
            return g * 2

    x = leaf([1., 2.])
    y, i = TwoOut.apply(x)
    assert y.requires_grad and not i.requires_grad
    y.sum().backward()
    close(x.grad, [2., 2.])

    class Materialized(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1, x * 2

        @staticmethod
        def backward(ctx, g1, g2):
            assert g2 is not None          # zeros by default
            return g1 + g2

    x.grad = None
    a, _ = Materialized.apply(x)
    a.sum().backward()
    close(x.grad, [1., 1.])


def test_function_wrong_gradient_count_and_shape():
    class Bad(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = leaf([1., 2.])
    with pytest.raises(RuntimeError, match=r"function BadBackward returned an incorrect number of gradients "
                                           r"\(expected 1, got 2\)"):
        Bad.apply(x).sum().backward()

    class BadShape(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return P.ones(4, dtype=P.float64)

    with pytest.raises(RuntimeError, match=r"Function BadShapeBackward returned an invalid gradient at index 0 - got "
                                           r"\[4\] but expected shape compatible with \[2\]"):
        BadShape.apply(x).sum().backward()


def test_function_setup_context_style_and_mark_dirty():
    class Double(Function):
        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.n = 2

        @staticmethod
        def backward(ctx, g):
            return g * ctx.n

    x = leaf([1., 2.])
    Double.apply(x).sum().backward()
    close(x.grad, [2., 2.])

    class AddOneInplace(Function):
        @staticmethod
        def forward(ctx, t):
            t.add_(1)
            ctx.mark_dirty(t)
            return t

        @staticmethod
        def backward(ctx, g):
            return g

    x.grad = None
    y = x * 1
    z = AddOneInplace.apply(y)
    assert z is y and y.grad_fn.name() == "AddOneInplaceBackward"
    z.sum().backward()
    close(x.grad, [1., 1.])


def test_function_saved_tensors_freed():
    x = leaf([1., 2.])
    y = Cube.apply(x, 1.)
    fn = y.grad_fn
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        fn.saved_tensors


# --- anomaly mode and gradcheck ------------------------------------------------------------

def test_detect_anomaly_names_forward_op():
    x = leaf([0., 1.])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with P.autograd.detect_anomaly():
            y = (x.exp() * 0 + 1) * x      # finite
            y.sum().backward()

            class NanBack(Function):
                @staticmethod
                def forward(ctx, t):
                    return t * 1

                @staticmethod
                def backward(ctx, g):
                    return g * float("nan")

            z = NanBack.apply(x) * 2
            with pytest.raises(RuntimeError, match="Function 'NanBackBackward' returned nan values in its 0th output."):
                z.sum().backward()
    messages = [str(m.message) for m in w]
    assert any("Error detected in NanBackBackward. Traceback of forward call that caused the error" in m
               and "test_engine.py" in m for m in messages)
    assert not P.autograd.is_anomaly_enabled()


def test_gradcheck_reports_argument_index_got_expected():
    class Wrong(Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            gb = g * a
            return g * b, gb * 1.5       # wrong for b

    a = leaf([1., 2.])
    b = leaf([3., 4.])
    assert P.autograd.gradcheck(lambda a, b: a * b, (a, b))
    with pytest.raises(P.autograd.GradcheckError, match=r"with respect to argument 1 at index \(0,\): got .* "
                                                       r"expected"):
        P.autograd.gradcheck(Wrong.apply, (a, b))
    assert not P.autograd.gradcheck(Wrong.apply, (a, b), raise_exception=False)
    assert P.autograd.gradgradcheck(lambda a, b: (a * b * a).exp(), (a, b))


# --- comparisons with PyTorch --------------------------------------------------------------

@needs_torch
def test_matches_torch_on_small_network():
    rng = np.random.default_rng(0)
    xs = rng.standard_normal((5, 3))
    ws = rng.standard_normal((3, 4))
    bs = rng.standard_normal(4)

    def run(lib):
        x = lib.tensor(xs, requires_grad=True)
        w = lib.tensor(ws, requires_grad=True)
        b = lib.tensor(bs, requires_grad=True)
        h = (x.mm(w) + b).exp()
        loss = (h * h).mean() + h.amax(1).sum() + h[1:, ::2].sum()
        loss.backward()
        return [t.grad.detach().numpy() for t in (x, w, b)]

    for ours, theirs in zip(run(P), run(torch)):
        np.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


@needs_torch
def test_error_messages_match_torch():
    cases = [
        lambda L: L.tensor([1., 2.], requires_grad=True).add_(1),
        lambda L: L.tensor([1., 2.], requires_grad=True)[0].add_(1),
        lambda L: (L.tensor([1., 2.], requires_grad=True) * 2).backward(),
        lambda L: L.tensor([1.]).sum().backward(),
        lambda L: L.add(L.tensor([1.], requires_grad=True), 1, out=L.empty(1)),
    ]
    for case in cases:
        with pytest.raises(RuntimeError) as ours:
            case(P)
        with pytest.raises(RuntimeError) as theirs:
            case(torch)
        assert str(ours.value) == str(theirs.value)


@needs_torch
def test_node_order_and_values_match_torch():
    def run(L):
        order = []
        x = L.tensor([1., 2.], requires_grad=True)
        w = L.tensor([3., 4.], requires_grad=True)
        a = x * w
        b = a.exp()
        c = a * 2
        d = (b + c) * x
        e = d.sum() + a.sum()
        for t in (a, b, c, d, e):
            fn = t.grad_fn
            fn.register_hook(lambda gi, go, n=fn.name(), k=id(fn): order.append(n))
        e.backward()
        return order, x.grad.tolist(), w.grad.tolist()
    assert run(P) == run(torch)


def test_relu_inplace_on_non_leaf():
    x = leaf([-1., 2., 3.])
    y = x * 2
    y.relu_()
    assert y.grad_fn.name() == "ReluBackward0"
    y.sum().backward()
    close(x.grad, [0., 2., 2.])


def test_pow_double_backward_via_operator():
    x = leaf([2., -1.5])
    (g,) = agrad((x ** 3).sum(), x, create_graph=True)
    close(g, 3 * np.array([2., -1.5]) ** 2)
    (gg,) = agrad(g.sum(), x)
    close(gg, 6 * np.array([2., -1.5]))


@needs_torch
def test_inplace_and_view_gradients_match_torch():
    def run(L):
        x = L.tensor([[1., -2., 3.], [4., 5., -6.]], dtype=L.float64, requires_grad=True)
        w = L.tensor([0.5, -1., 2.], dtype=L.float64, requires_grad=True)
        y = x * w
        y[:, 1].mul_(3)
        y[0] = y[1] * 2
        z = y.t().relu().pow(2)
        z = z.sum(0) + y.max(1).values
        (z * L.tensor([1., 2.], dtype=L.float64)).sum().backward()
        return x.grad.tolist(), w.grad.tolist()
    assert run(P) == run(torch)


def test_retain_grad_follows_inplace():
    x = leaf([1., 2.])
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    (y * y).sum().backward()
    close(y.grad, [12., 24.])       # the gradient of y's latest value, as in PyTorch
    close(x.grad, [72., 144.])


def test_reflected_operators_with_a_number_first_record_gradients():
    """`2 / x`, `2 ** x`: the number-first forms go through the generated bindings."""
    import numpy as np
    import pytorchlite as P
    x = P.tensor([1.0, 2.0, 4.0], dtype=P.float64, requires_grad=True)
    (2 / x + 2 ** x).sum().backward()
    xs = np.array([1.0, 2.0, 4.0])
    np.testing.assert_allclose(x.grad.numpy(), -2 / xs ** 2 + np.log(2) * 2 ** xs)
    assert (3 / x).grad_fn is not None and (7 // x).dtype == P.float64


def test_linear_gradients_land_in_grad_without_a_copy():
    """AccumulateGrad takes the gradient buffers themselves (PyTorch steals them too): the
    weight's through weight.t() is computed in that layout, the bias's is a fresh sum."""
    import pytorchlite as P
    import pytorchlite.nn as nn
    from pytorchlite.autograd import engine
    m = nn.Linear(5, 3)
    copies = []
    orig = engine._clone_for
    engine._clone_for = lambda var, g: copies.append(var) or orig(var, g)
    try:
        m(P.randn(4, 2, 5)).sum().backward()
    finally:
        engine._clone_for = orig
    assert copies == []
    for p in (m.weight, m.bias):
        assert p.grad.is_contiguous() and p.grad._base is None and p.grad.stride() == p.stride()
