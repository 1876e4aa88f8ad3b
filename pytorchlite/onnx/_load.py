"""`pytorchlite.onnx.load`: an ONNX model back as a runnable pytorchlite module.

The module's forward runs the ONNX graph's nodes in order, each as pytorchlite operators
(`_OPS` below: the ONNX operators the exporter writes, and a few more), with the
initializers as buffers. Since it is made of pytorchlite operators, it runs on any device
the operators do, and `pytorchlite.jit.trace(loaded, inputs)` gives its pytorchlite graph.
"""

import math

import numpy as np

import pytorchlite
from pytorchlite import nn
from pytorchlite.onnx._builder import FROM_ONNX_TYPE, OnnxExportError

class OnnxImportError(RuntimeError):
    """An ONNX model that pytorchlite.onnx.load cannot run."""


def _ints(t):
    return [int(v) for v in t.tolist()]


def _dtype(onnx_type):
    name = FROM_ONNX_TYPE.get(onnx_type)
    if name is None:
        raise OnnxImportError(f"onnx.load(): ONNX data type {onnx_type} is not supported")
    return getattr(pytorchlite, name)


def _reduce(fn):
    def run(x, *rest, keepdims=1, axes=None, noop_with_empty_axes=0):
        ax = _ints(rest[0]) if rest and rest[0] is not None else axes
        if not ax:
            if noop_with_empty_axes:
                return x
            ax = list(range(x.dim()))
        return fn(x, ax, bool(keepdims))
    return run


def _slice(x, starts, ends, axes=None, steps=None):
    starts, ends = _ints(starts), _ints(ends)
    axes = _ints(axes) if axes is not None else list(range(len(starts)))
    steps = _ints(steps) if steps is not None else [1] * len(starts)
    index = [slice(None)] * x.dim()
    flips = []
    for s, e, a, st in zip(starts, ends, axes, steps):
        a %= x.dim()
        n = x.shape[a]
        if st > 0:
            index[a] = slice(max(-n, min(s, n)), max(-n, min(e, n)), st)
        elif st == -1 and s in (-1, n - 1) and e <= -n - 1:
            flips.append(a)      # a whole dim reversed (the exporter's flip)
        else:
            raise OnnxImportError(f"onnx.load(): Slice with step {st} is not supported")
    out = x[tuple(index)]
    return out.flip(flips) if flips else out


def _pool_args(x, kernel_shape, strides=None, pads=None, dilations=None):
    k = len(kernel_shape)
    pads = pads or [0] * (2 * k)
    if pads[:k] != pads[k:]:
        raise OnnxImportError("onnx.load(): asymmetric pads are not supported")
    return list(kernel_shape), list(strides or [1] * k), pads[:k], list(dilations or [1] * k)


def _conv(x, w, b=None, strides=None, pads=None, dilations=None, group=1, kernel_shape=None, auto_pad="NOTSET"):
    k = w.dim() - 2
    _, s, p, d = _pool_args(x, w.shape[2:], strides, pads, dilations)
    return pytorchlite.convolution(x, w, b, s, p, d, False, [0] * k, group)


def _conv_t(x, w, b=None, strides=None, pads=None, dilations=None, group=1, output_padding=None, kernel_shape=None):
    k = w.dim() - 2
    _, s, p, d = _pool_args(x, w.shape[2:], strides, pads, dilations)
    return pytorchlite.convolution(x, w, b, s, p, d, True, list(output_padding or [0] * k), group)


def _max_pool(x, kernel_shape, strides=None, pads=None, dilations=None, ceil_mode=0, storage_order=0):
    k, s, p, d = _pool_args(x, kernel_shape, strides, pads, dilations)
    return nn.functional.max_pool2d(x, k, s, p, d, bool(ceil_mode))


def _avg_pool(x, kernel_shape, strides=None, pads=None, ceil_mode=0, count_include_pad=0):
    k, s, p, _ = _pool_args(x, kernel_shape, strides, pads)
    return nn.functional.avg_pool2d(x, k, s, p, bool(ceil_mode), bool(count_include_pad))


def _gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    a = a.t() if transA else a
    b = b.t() if transB else b
    out = pytorchlite.matmul(a, b)
    if alpha != 1.0:
        out = out * alpha
    if c is not None:
        out = out + (c * beta if beta != 1.0 else c)
    return out


def _layer_norm(x, scale, bias=None, axis=-1, epsilon=1e-5, stash_type=1):
    axis %= x.dim()
    return nn.functional.layer_norm(x, tuple(x.shape[axis:]), scale, bias, epsilon)


def _batch_norm(x, scale, bias, mean, var, epsilon=1e-5, momentum=0.9, training_mode=0):
    return nn.functional.batch_norm(x, mean, var, scale, bias, False, 0.0, epsilon)


def _split(x, split=None, axis=0, num_outputs=None, _n=1):
    sizes = _ints(split) if split is not None else None
    if sizes is None:
        n = num_outputs or _n
        sizes = [math.ceil(x.shape[axis] / n)] * n
    return tuple(pytorchlite.split(x, sizes, axis))


def _cast_to(x, to):
    return x.to(_dtype(to))


def _clip(x, lo=None, hi=None):
    if lo is not None:
        x = pytorchlite.maximum(x, lo)
    if hi is not None:
        x = pytorchlite.minimum(x, hi)
    return x


def _shape(x, start=0, end=None):
    return pytorchlite.tensor(list(x.shape)[start:end], dtype=pytorchlite.int64)


def _expand(x, shape):
    shape = _ints(shape)
    out = list(pytorchlite.broadcast_shapes(tuple(x.shape), tuple(shape)))
    return x.expand(out)


def _reshape(x, shape, allowzero=0):
    shape = _ints(shape)
    shape = [x.shape[i] if s == 0 and not allowzero else s for i, s in enumerate(shape)]
    return x.reshape(shape)


def _squeeze(x, axes=None):
    if axes is None:
        return x.squeeze()
    out = x
    for a in sorted((a % x.dim() for a in _ints(axes)), reverse=True):
        out = out.squeeze(a)
    return out


def _unsqueeze(x, axes):
    axes = _ints(axes)
    n = x.dim() + len(axes)
    out = x
    for a in sorted(a % n for a in axes):
        out = out.unsqueeze(a)
    return out


def _arg(fn):
    def run(x, axis=0, keepdims=1, select_last_index=0):
        return fn(x, axis, bool(keepdims))
    return run


def _const(value=None, **kw):
    from onnx import numpy_helper
    if value is None:
        raise OnnxImportError(f"onnx.load(): Constant with {sorted(kw)} is not supported")
    return pytorchlite.from_numpy(np.array(numpy_helper.to_array(value)))


def _constant_of_shape(shape, value=None):
    fill = 0.0 if value is None else _const(value).reshape(())
    dtype = pytorchlite.float32 if value is None else fill.dtype
    out = pytorchlite.zeros(_ints(shape), dtype=dtype)
    return out if value is None else out + fill


_P = pytorchlite
_OPS = {
    "Add": _P.add, "Sub": _P.sub, "Mul": _P.mul, "Div": lambda a, b: _P.div(a, b, rounding_mode="trunc")
    if not a.dtype.is_floating_point else _P.div(a, b),
    "Pow": _P.pow, "Neg": _P.neg, "Abs": _P.abs, "Exp": _P.exp, "Log": _P.log, "Sqrt": _P.sqrt,
    "Reciprocal": _P.reciprocal, "Sin": _P.sin, "Cos": _P.cos, "Tan": _P.tan, "Asin": _P.asin, "Acos": _P.acos,
    "Atan": _P.atan, "Sinh": _P.sinh, "Cosh": _P.cosh, "Asinh": _P.asinh, "Acosh": _P.acosh, "Atanh": _P.atanh,
    "Tanh": _P.tanh, "Sigmoid": _P.sigmoid, "Erf": _P.erf, "Relu": _P.relu, "Floor": _P.floor, "Ceil": _P.ceil,
    "Round": _P.round, "Sign": _P.sign, "Max": _P.maximum, "Min": _P.minimum, "Equal": _P.eq, "Less": _P.lt,
    "LessOrEqual": _P.le, "Greater": _P.gt, "GreaterOrEqual": _P.ge, "Not": _P.logical_not,
    "And": _P.logical_and, "Or": _P.logical_or, "Xor": _P.logical_xor, "IsNaN": _P.isnan,
    "IsInf": lambda x, detect_negative=1, detect_positive=1: (
        _P.isinf(x) if detect_negative and detect_positive else _P.isposinf(x) if detect_positive
        else _P.isneginf(x)),
    "Where": lambda c, a, b: _P.where(c, a, b), "Clip": _clip,
    "Elu": lambda x, alpha=1.0: nn.functional.elu(x, alpha),
    "LeakyRelu": lambda x, alpha=0.01: nn.functional.leaky_relu(x, alpha),
    "HardSigmoid": lambda x, alpha=0.2, beta=0.5: _P.clamp(x * alpha + beta, 0, 1),
    "HardSwish": lambda x: nn.functional.hardswish(x),
    "Softplus": lambda x: _P.log1p(_P.exp(-x.abs())) + x.clamp(min=0),
    "Mod": lambda a, b, fmod=0: _P.fmod(a, b) if fmod else _P.remainder(a, b),
    "Identity": lambda x: x, "Cast": _cast_to, "Shape": _shape,
    "Gather": lambda x, i, axis=0: _P.index_select(x, axis, i.reshape(-1)).reshape(
        tuple(x.shape[:axis % x.dim()]) + tuple(i.shape) + tuple(x.shape[axis % x.dim() + 1:])),
    "GatherElements": lambda x, i, axis=0: _P.gather(x, axis, i),
    "Reshape": _reshape, "Transpose": lambda x, perm=None: x.permute(perm if perm is not None
                                                                    else list(range(x.dim()))[::-1]),
    "Expand": _expand, "Squeeze": _squeeze, "Unsqueeze": _unsqueeze, "Slice": _slice, "Split": _split,
    "Concat": lambda *xs, axis=0: _P.cat(list(xs), axis),
    "Tile": lambda x, r: x.repeat(_ints(r)),
    "Trilu": lambda x, k=None, upper=1: (x.triu if upper else x.tril)(0 if k is None else int(k.item())),
    "CumSum": lambda x, axis, exclusive=0, reverse=0: _P.cumsum(x, int(axis.item())),
    "ReduceSum": _reduce(lambda x, ax, k: _P.sum(x, ax, k)),
    "ReduceMean": _reduce(lambda x, ax, k: _P.mean(x, ax, k)),
    "ReduceMax": _reduce(lambda x, ax, k: _P.amax(x, ax, k)),
    "ReduceMin": _reduce(lambda x, ax, k: _P.amin(x, ax, k)),
    "ReduceProd": _reduce(lambda x, ax, k: _reduce_prod(x, ax, k)),
    "ReduceLogSumExp": _reduce(lambda x, ax, k: _P.logsumexp(x, ax, k)),
    "ArgMax": _arg(_P.argmax), "ArgMin": _arg(_P.argmin),
    "MatMul": _P.matmul, "Gemm": _gemm,
    "Softmax": lambda x, axis=-1: _P.softmax(x, axis), "LogSoftmax": lambda x, axis=-1: _P.log_softmax(x, axis),
    "Conv": _conv, "ConvTranspose": _conv_t, "MaxPool": _max_pool, "AveragePool": _avg_pool,
    "GlobalAveragePool": lambda x: x.mean(list(range(2, x.dim())), keepdim=True),
    "LayerNormalization": _layer_norm, "BatchNormalization": _batch_norm,
    "Constant": _const, "ConstantOfShape": _constant_of_shape,
}


def _reduce_prod(x, axes, keepdim):
    for a in sorted((a % x.dim() for a in axes), reverse=True):
        x = _P.prod(x, a, keepdim)
    return x


class OnnxModule(nn.Module):
    """An ONNX graph run with pytorchlite operators (what `pytorchlite.onnx.load` returns).
    Called with the graph's inputs in order; returns its one output, or a tuple."""

    def __init__(self, proto):
        super().__init__()
        from onnx import helper, numpy_helper
        g = proto.graph
        self.domain_opset = {o.domain: o.version for o in proto.opset_import}
        init_names = {t.name for t in g.initializer}
        self.input_names = [i.name for i in g.input if i.name not in init_names]
        self.output_names = [o.name for o in g.output]
        self._buffer_of = {}
        self._static = {}       # integer and bool initializers (sizes, axes, indices): constants
        for i, t in enumerate(g.initializer):
            arr = np.array(numpy_helper.to_array(t))
            if arr.dtype.kind in "biu":
                # kept out of the module's state, so reading one (a Reshape's size) is reading a
                # constant, which jit.trace allows, not a traced buffer
                self._static[t.name] = arr
                continue
            key = f"init_{i}"
            self.register_buffer(key, pytorchlite.from_numpy(arr))
            self._buffer_of[t.name] = key
        self.nodes = []
        for n in g.node:
            if n.domain not in ("", "ai.onnx"):
                raise OnnxImportError(f"onnx.load(): node {n.name or n.op_type} is in domain '{n.domain}'; only the "
                                      "default ONNX domain is supported")
            if n.op_type not in _OPS:
                raise OnnxImportError(f"onnx.load(): the ONNX operator {n.op_type} (node '{n.name}') is not "
                                      f"supported (supported: {', '.join(sorted(_OPS))})")
            attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
            attrs = {k: (v.decode() if isinstance(v, bytes) else list(v) if isinstance(v, (list, tuple)) else v)
                     for k, v in attrs.items()}
            self.nodes.append((n.op_type, list(n.input), list(n.output), attrs))

    def forward(self, *inputs):
        if len(inputs) != len(self.input_names):
            raise TypeError(f"OnnxModule.forward(): the graph takes {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}), got {len(inputs)}")
        env = {name: getattr(self, key) for name, key in self._buffer_of.items()}
        env.update((name, pytorchlite.from_numpy(arr.copy())) for name, arr in self._static.items())
        env.update(zip(self.input_names, inputs))
        for op_type, ins, outs, attrs in self.nodes:
            args = [env[i] if i else None for i in ins]
            while args and args[-1] is None:
                args.pop()
            kw = dict(attrs)
            if op_type == "Split":
                kw["_n"] = len(outs)
            try:
                result = _OPS[op_type](*args, **kw)
            except (OnnxImportError, OnnxExportError):
                raise
            except TypeError as e:
                raise OnnxImportError(f"onnx.load(): {op_type} with attributes {sorted(attrs)}: {e}") from None
            if len(outs) == 1:
                env[outs[0]] = result[0] if isinstance(result, tuple) else result
            else:
                for name, r in zip(outs, result):
                    if name:
                        env[name] = r
        out = tuple(env[n] for n in self.output_names)
        return out[0] if len(out) == 1 else out


def load(f):
    """Read an ONNX model (a path, a file-like or a ModelProto) as an `OnnxModule`: a
    pytorchlite module that runs the graph with pytorchlite operators.

    >>> import pytorchlite
    >>> m = pytorchlite.nn.Linear(3, 2)
    >>> back = pytorchlite.onnx.load(pytorchlite.onnx.export(m, (pytorchlite.ones(1, 3),), None))
    >>> bool((back(pytorchlite.ones(1, 3)) - m(pytorchlite.ones(1, 3))).abs().max() < 1e-6)
    True
    """
    from pytorchlite.onnx._export import _onnx
    onnx = _onnx()
    proto = f if isinstance(f, onnx.ModelProto) else onnx.load(f)
    return OnnxModule(proto)
