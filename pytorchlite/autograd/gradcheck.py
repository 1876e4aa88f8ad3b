"""gradcheck / gradgradcheck: backward compared with central finite differences.

For each differentiable output o, a random direction u (the same shape as o) is drawn;
backward with grad_output u gives the analytical J^T u for every input element, and
for each element j of each input, (u . (f(x + eps e_j) - f(x - eps e_j))) / (2 eps) gives
the numerical one. A mismatch names the output, the argument, the element index, the
analytical value (got) and the numerical one (expected). Use float64 inputs.

    >>> x = pytorchlite.tensor([1., 2.], dtype=pytorchlite.float64, requires_grad=True)
    >>> pytorchlite.autograd.gradcheck(lambda t: (t * t).exp(), (x,))
    True
"""

import warnings

import numpy as np

from pytorchlite._core import TensorBase as Tensor
from pytorchlite.autograd import grad_mode

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when backward and finite differences disagree."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _values(t):
    """A float64 NumPy copy of t's values."""
    return np.array(t.detach()._values_f64(), dtype=np.float64)


def _writable(t):
    """A NumPy array over t's memory (perturbations go through it without touching the
    version counter, so graphs built from t stay valid)."""
    return t.detach()._numpy_view()


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


def _index(shape, flat):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True,
              fast_mode=False, masked=None, seed=0, _record_numerical=False):
    """Check the gradients of func at `inputs` against finite differences (see the module
    docstring). Returns True, or raises GradcheckError (False with raise_exception=False)."""
    from pytorchlite.autograd.engine import grad as _grad
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of the them "
                         "have requires_grad=True.")
    for i in diff:
        t = inputs[i]
        if t._dtype.name != "float64":
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating point "
                          "or complex.")
        for n, s in zip(t._shape, t._stride):
            if s == 0 and n > 1:
                raise RuntimeError(f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                                   "that are non-overlapping to be able to compute the numerical gradients "
                                   "correctly. You should call .contiguous on the input before passing it to "
                                   "gradcheck.")
    rng = np.random.default_rng(seed)
    if check_forward_ad and not _check_forward(func, inputs, diff, eps, atol, rtol, rng, raise_exception):
        return False
    if not check_backward_ad:
        return True
    outputs = _as_tuple(func(*inputs))
    diff_inputs = [inputs[i] for i in diff]
    for k, o in enumerate(outputs):
        if not isinstance(o, Tensor) or not o._dtype.is_floating_point:
            continue
        u_np = rng.standard_normal(o._shape) if o._shape else np.array(rng.standard_normal())
        from pytorchlite._creation import tensor as _tensor
        u = _tensor(u_np, dtype=o._dtype, device=o._device)
        # analytical: J^T u for every input
        if o._requires_grad:
            got = _grad(o, diff_inputs, grad_outputs=u, retain_graph=True, allow_unused=True)
        else:
            got = [None] * len(diff)
        for i, g, t in zip(diff, got, diff_inputs):
            if g is not None and g._shape != t._shape:
                return _fail(f"Gradient for argument {i} has shape {list(g._shape)}, but the argument has shape "
                             f"{list(t._shape)}", raise_exception)
            if check_grad_dtypes and g is not None and g._dtype is not t._dtype:
                return _fail(f"Gradient for argument {i} has dtype {g._dtype}, but the argument has dtype "
                             f"{t._dtype}", raise_exception)
            ana = np.zeros(t._shape) if g is None else _values(g)
            num = _numerical(func, inputs, i, k, u_np, eps, _record_numerical)
            ana_f, num_f = ana.reshape(-1), num.reshape(-1)
            j = _first_mismatch(ana_f, num_f, atol, rtol)
            if j is not None:
                return _fail(f"Jacobian mismatch for output {k} with respect to argument {i} at index "
                             f"{_index(t._shape, j)}: got {ana_f[j]!r} (backward), expected {num_f[j]!r} "
                             f"(finite differences, eps={eps}) along a random output direction", raise_exception)
    return True


def _first_mismatch(got, want, atol, rtol):
    """The first flat index where `got` is not within atol + rtol * |want| of `want` (or
    only one of them is nan), or None."""
    bad = np.abs(got - want) > atol + rtol * np.abs(want)
    bad |= np.isnan(got) != np.isnan(want)
    return int(np.argmax(bad)) if bad.any() else None


def _check_forward(func, inputs, diff, eps, atol, rtol, rng, raise_exception):
    """Forward mode: for each differentiable input i and a random tangent v, the tangent
    forward AD gives each output (J_i v) against (f(x_i + eps v) - f(x_i - eps v)) / 2 eps."""
    from pytorchlite._creation import tensor as _tensor
    from pytorchlite.autograd import forward_ad as fwAD
    for i in diff:
        t = inputs[i]
        v_np = rng.standard_normal(t._shape) if t._shape else np.array(rng.standard_normal())
        v = _tensor(v_np, dtype=t._dtype, device=t._device)
        with fwAD.dual_level():
            duals = list(inputs)
            duals[i] = fwAD.make_dual(t, v)
            outs = _as_tuple(func(*duals))
            got = []
            for o in outs:
                if isinstance(o, Tensor) and o._dtype.is_floating_point:
                    tan = fwAD.unpack_dual(o).tangent
                    got.append(np.zeros(o._shape) if tan is None else _values(tan))
                else:
                    got.append(None)
        arr = _writable(t)
        orig = arr.copy()
        with grad_mode.no_grad():
            arr[...] = orig + eps * v_np
            plus = _as_tuple(func(*inputs))
            plus = [_values(o) if g is not None else None for o, g in zip(plus, got)]
            arr[...] = orig - eps * v_np
            minus = _as_tuple(func(*inputs))
            minus = [_values(o) if g is not None else None for o, g in zip(minus, got)]
            arr[...] = orig
        for k, g in enumerate(got):
            if g is None:
                continue
            num = ((plus[k] - minus[k]) / (2 * eps)).reshape(-1)
            g = g.reshape(-1)
            if g.shape != num.shape:
                return _fail(f"Forward AD tangent of output {k} has {g.size} elements, the output has {num.size}",
                             raise_exception)
            j = _first_mismatch(g, num, atol, rtol)
            if j is not None:
                return _fail(f"Jacobian mismatch for output {k} with respect to argument {i} at output index "
                             f"{j}: got {g[j]!r} (forward AD), expected {num[j]!r} (finite differences, eps={eps}) "
                             f"along a random input direction", raise_exception)
    return True


def _numerical(func, inputs, i, k, u, eps, record):
    """u . d(output k)/d(input i)[j] for every element j, by central differences (func
    runs without recording unless it differentiates itself, as gradgradcheck's does)."""
    t = inputs[i]
    arr = _writable(t)
    out = np.zeros(t._shape)
    flat_out = out.reshape(-1)
    with grad_mode.set_grad_enabled(record):
        for j, idx in enumerate(np.ndindex(*t._shape) if t._shape else [()]):
            orig = arr[idx].copy()
            arr[idx] = orig + eps
            plus = _values(_as_tuple(func(*inputs))[k])
            arr[idx] = orig - eps
            minus = _values(_as_tuple(func(*inputs))[k])
            arr[idx] = orig
            flat_out[j] = np.sum(u * (plus - minus)) / (2 * eps)
    return out


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False, seed=0):
    """Check second derivatives: gradcheck of (inputs, grad_outputs) -> the gradients
    backward computes with create_graph=True."""
    from pytorchlite.autograd.engine import grad as _grad
    from pytorchlite._creation import tensor as _tensor
    inputs = _as_tuple(inputs)
    diff = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t._requires_grad]
    outputs = _as_tuple(func(*inputs))
    diff_out = [k for k, o in enumerate(outputs) if isinstance(o, Tensor) and o._requires_grad]
    if grad_outputs is None:
        rng = np.random.default_rng(seed + 1)
        grad_outputs = tuple(_tensor(rng.standard_normal(outputs[k]._shape) if outputs[k]._shape
                                     else np.array(rng.standard_normal()), dtype=outputs[k]._dtype,
                                     device=outputs[k]._device, requires_grad=True) for k in diff_out)
    else:
        grad_outputs = _as_tuple(grad_outputs)
    n_in = len(inputs)

    def first_order(*args):
        ins, gos = args[:n_in], args[n_in:]
        outs = _as_tuple(func(*ins))
        grads = _grad([outs[k] for k in diff_out], [ins[i] for i in diff], grad_outputs=list(gos),
                      create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    return gradcheck(first_order, inputs + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, seed=seed + 2, _record_numerical=True)
