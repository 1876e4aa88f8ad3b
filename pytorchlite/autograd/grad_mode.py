"""Grad mode: the per-thread switch that decides whether operators record a graph.

`no_grad`, `enable_grad`, `set_grad_enabled` and `inference_mode` work as context
managers and as decorators (the mode is set on entry and restored on exit, exceptions
included). The state lives in one `threading.local` object whose class attributes are
the defaults, so a new thread starts with grad mode on without any initialisation, and
the generated bindings read it with a single attribute access (`_state.grad`).
"""

import functools
import inspect
import threading

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled",
           "is_inference_mode_enabled"]


class _State(threading.local):
    grad = True          # operators record the graph
    inference = False    # inside inference_mode


_state = _State()


def is_grad_enabled():
    """Whether operators record the autograd graph on this thread."""
    return _state.grad


def is_inference_mode_enabled():
    """Whether this thread is inside an `inference_mode` block."""
    return _state.inference


class _DecoratorContextManager:
    """A context manager that also decorates functions (and generators), re-entering
    itself around every call, as torch.autograd.grad_mode's helpers do."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise RuntimeError(f"{type(self).__name__} cannot decorate a class")
        if inspect.isgeneratorfunction(func):
            return self._wrap_generator(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return wrapper

    def clone(self):
        return type(self)()


class _NoParamDecoratorContextManager(_DecoratorContextManager):
    """Also usable as a bare decorator: `@no_grad` as well as `@no_grad()`."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoParamDecoratorContextManager):
    """Disable gradient recording: results of operators have `requires_grad=False` and no
    `grad_fn`. In-place updates of leaves that require grad are allowed (optimizers).

    >>> x = pytorchlite.ones(2, requires_grad=True)
    >>> with pytorchlite.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _state.grad
        _state.grad = False

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False


class enable_grad(_NoParamDecoratorContextManager):
    """Enable gradient recording (inside a `no_grad` block, for example).

    >>> x = pytorchlite.ones(2, requires_grad=True)
    >>> with pytorchlite.no_grad():
    ...     with pytorchlite.enable_grad():
    ...         y = x * 2
    >>> y.requires_grad
    True
    """

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _state.grad
        _state.grad = True

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set grad mode on or off. Takes effect at once when called (like PyTorch), and as a
    context manager restores the previous mode on exit.

    >>> x = pytorchlite.ones(2, requires_grad=True)
    >>> with pytorchlite.set_grad_enabled(False):
    ...     (x * 2).requires_grad
    False
    """

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'mode' must be bool, not {type(mode).__name__}")
        self.prev = _state.grad
        self.mode = mode
        _state.grad = mode

    def __call__(self, func):
        # used as a decorator: the constructor already switched the mode; undo that
        _state.grad = self.prev
        return super().__call__(func)

    def __enter__(self):
        _state.grad = self.mode

    def __exit__(self, *exc):
        _state.grad = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)


class inference_mode(_DecoratorContextManager):
    """Like `no_grad`, for code that will never be differentiated (`mode=False` makes it a
    no-op). Inside it, `is_inference_mode_enabled()` is True.

    >>> x = pytorchlite.ones(2, requires_grad=True)
    >>> with pytorchlite.inference_mode():
    ...     y = x * 2
    >>> y.requires_grad
    False
    """

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        return cls()(mode)             # bare @inference_mode on a function

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            return                     # __new__ already returned the decorated function
        self.mode = mode
        self.prev = None

    def __enter__(self):
        self.prev = (_state.grad, _state.inference)
        if self.mode:
            _state.grad = False
            _state.inference = True

    def __exit__(self, *exc):
        _state.grad, _state.inference = self.prev
        return False

    def clone(self):
        return type(self)(self.mode)
