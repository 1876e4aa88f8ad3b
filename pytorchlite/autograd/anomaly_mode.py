"""Anomaly detection: remember where each node was created in the forward pass, and
when its backward fails or produces NaN, say which forward operation it was.

    >>> x = pytorchlite.tensor([0.], requires_grad=True)
    >>> with pytorchlite.autograd.detect_anomaly():       # doctest: +SKIP
    ...     (x.log() * 0).sum().backward()
    RuntimeError: Function 'LogBackward0' returned nan values in its 0th output.

The forward traceback is printed as a warning ("Error detected in LogBackward0.
Traceback of forward call that caused the error: ...").
"""

import traceback
import warnings

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled"]

# Read by the generated bindings (to record forward stacks) and by the engine: a module
# global rather than a thread-local, as in PyTorch (AnomalyMode is process-wide).
_enabled = False
_check_nan = True


def is_anomaly_enabled():
    return _enabled


def is_anomaly_check_nan_enabled():
    return _check_nan


def _set(mode, check_nan):
    global _enabled, _check_nan
    _enabled, _check_nan = mode, check_nan


class detect_anomaly:
    """Context manager (and decorator) that turns anomaly detection on.

    Backward then names the forward operation whose backward raised or returned NaN."""

    def __init__(self, check_nan=True):
        self.prev = _enabled
        self.check_nan = check_nan
        self.prev_check_nan = _check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only "
                      "be enabled for debugging.", stacklevel=2)

    def __enter__(self):
        _set(True, self.check_nan)

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self:
                return func(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """Turn anomaly detection on or off (at once, and as a context manager)."""

    def __init__(self, mode, check_nan=True):
        self.prev = _enabled
        self.prev_check_nan = _check_nan
        _set(bool(mode), check_nan)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _set(self.prev, self.prev_check_nan)
        return False


def record(node):
    """Remember the forward stack that created node (called when anomaly mode is on)."""
    node._anomaly = traceback.format_stack()[:-2]


def _report(node):
    stack = node._anomaly
    if stack:
        warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n"
                      + "".join(stack), stacklevel=3)


def run_node(node, buf, mask):
    """Run a node's backward; on an error or NaN, print where its forward was called."""
    try:
        outs = node._apply(buf, mask)
    except Exception:
        _report(node)
        raise
    if _check_nan:
        for i, g in enumerate(outs):
            if g is not None and _has_nan(g):
                _report(node)
                raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th output.")
    return outs


def _has_nan(t):
    if not t._dtype.is_floating_point or t.numel() == 0:
        return False
    import numpy as np
    return bool(np.isnan(t.detach()._values_f64()).any())
