"""`pytorchlite.onnx.export`: trace a model with `pytorchlite.jit`, lower each graph node
through its ops.yaml `onnx:` form (generated/onnx_table.py), and write an ONNX ModelProto.

Dynamic axes: the model is traced once more per dynamic symbol, with that symbol's axes one
longer (indices repeated, so integer inputs stay valid). The graphs must be the same
operators; every size that differs between them (a value's dim, an int argument such as a
view's size) is `k * (product of the symbols it moved with) + c`, and becomes a `SymDim`,
which the ONNX forms turn into `Shape` arithmetic (builder.ints) instead of a baked-in number.
"""

import io
import math
import os

import numpy as np

import pytorchlite
from pytorchlite import _dtype
from pytorchlite.generated import onnx_table
from pytorchlite.onnx._builder import ONNX_TYPES, Builder, OnnxExportError, OValue, SymDim

SUPPORTED_OPSETS = (17, 18)
DEFAULT_OPSET = 17


def _onnx():
    try:
        import onnx
    except ImportError:
        raise ImportError("pytorchlite.onnx needs the onnx package: pip install 'pytorchlite[onnx]' "
                          "(onnx and onnxruntime)") from None
    return onnx


# --- tracing -------------------------------------------------------------------------------

def _trace(model, args):
    """The traced graph, and the tensors of its parameter inputs by name."""
    from pytorchlite import jit
    from pytorchlite.jit._trace import module_state
    with pytorchlite.no_grad():
        traced = jit.trace(model, args)
    state = dict(zip(*module_state(model))) if isinstance(model, pytorchlite.nn.Module) else {}
    return traced.graph, state


def _normalize_dynamic_axes(dynamic_axes):
    """{input or output name: {axis: symbol name}}."""
    out = {}
    for key, axes in (dynamic_axes or {}).items():
        if isinstance(axes, dict):
            out[key] = {int(a): str(n) for a, n in axes.items()}
        elif isinstance(axes, (list, tuple)):
            out[key] = {int(a): f"{key}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        else:
            raise TypeError(f"onnx.export(): dynamic_axes['{key}'] must be a dict of axis to name or a list of "
                            f"axes, got {type(axes).__name__}")
    return out


def _grown(t, axes):
    """`t` with each of `axes` one longer (its first entries repeated at the end)."""
    arr = t.detach().cpu().numpy()
    for a in axes:
        n = arr.shape[a]
        if n == 0:
            raise ValueError(f"onnx.export(): dynamic axis {a} of an example input has size 0; give a non-empty "
                             "example")
        arr = np.take(arr, np.arange(n + 1) % n, axis=a)
    return pytorchlite.tensor(np.ascontiguousarray(arr), dtype=t.dtype, device=t.device)


def _same_structure(a, b):
    if len(a.nodes) != len(b.nodes):
        return False
    return all(x.site.name == y.site.name and x.site.overload == y.site.overload and len(x.outputs) == len(y.outputs)
               for x, y in zip(a.nodes, b.nodes))


class _Symbols:
    """Turns the sizes that change with the dynamic axes into SymDims. One extra trace per
    symbol (its axes one longer, the others as given) shows which symbols a size follows; a
    size is `k * (product of those symbols) + c` (so `batch * heads`, `batch * seq` and
    `seq + 1` all follow), checked against every trace."""

    def __init__(self, symbols):
        self.symbols = symbols      # [(name, (OValue of a graph input, axis), size as traced)]

    def dim(self, v, others, what):
        if not isinstance(v, int) or isinstance(v, bool) or all(o == v for o in others):
            return v
        moved = [a for a, o in enumerate(others) if o != v]
        sizes = [self.symbols[a][2] for a in moved]
        product = math.prod(sizes)
        ks = set()
        for a, s_a in zip(moved, sizes):
            q, rem = divmod(others[a] - v, product // s_a)
            ks.add(q if rem == 0 else None)
        k = ks.pop() if len(ks) == 1 else None
        if not k:
            raise OnnxExportError(
                f"onnx.export(): {what} changes with the dynamic axes ({v} as traced; "
                + ", ".join(f"{others[a]} with {self.symbols[a][0]} one longer" for a in moved)
                + ") in a way the exporter cannot follow (not k * a product of dynamic axes + c)")
        c = v - k * product
        name = self.symbols[moved[0]][0] if len(moved) == 1 and k == 1 and c == 0 else None
        return SymDim(v, tuple(self.symbols[a][1] for a in moved), k, c, name)

    def refs(self, r, others, what):
        if isinstance(r, (list, tuple)) and all(isinstance(o, (list, tuple)) and len(o) == len(r) for o in others):
            return type(r)(self.refs(x, [o[i] for o in others], what) for i, x in enumerate(r))
        if isinstance(r, int) and not isinstance(r, bool) and all(isinstance(o, int) for o in others):
            return self.dim(r, others, what)
        return r


# --- lowering ------------------------------------------------------------------------------

def _params_of(fn):
    code = fn.__code__
    return code.co_varnames[1:code.co_argcount]


def _promoted(dtypes):
    out = None
    for d in dtypes:
        out = d if out is None else _dtype.promote_types(out, d)
    return out


class _Lowering:
    def __init__(self, graph, builder, sym):
        self.graph, self.g, self.sym = graph, builder, sym
        self.env = {}               # graph Value -> OValue (None: an output without an ONNX form)
        self.missing = {}           # graph Value -> why it has no ONNX value
        self.base_of = {}           # a view result -> the Value it is a view of
        self.views_of = {}          # Value -> the views taken of it
        self.last_use = {}          # Value -> index of the last node that reads it (outputs: len(nodes))
        for i, node in enumerate(graph.nodes):
            for v in node.inputs():
                self.last_use[v] = i
        for v in graph.values_of_output():
            self.last_use[v] = len(graph.nodes)
        self.index = 0

    def shape_of(self, v, others):
        return tuple(self.sym.dim(d, [o.shape[i] for o in others], f"dim {i} of %{v.name}")
                     for i, d in enumerate(v.shape))

    def value(self, v):
        if v not in self.env:
            if v in self.missing:
                raise OnnxExportError(self.missing[v])
            raise OnnxExportError(f"onnx.export(): %{v.name} is used before it is defined")
        return self.env[v]

    def arg(self, r):
        from pytorchlite.jit import Value
        if isinstance(r, Value):
            return self.value(r)
        if isinstance(r, list):
            return [self.arg(x) for x in r]
        if isinstance(r, tuple):
            return tuple(self.arg(x) for x in r)
        if isinstance(r, _dtype.dtype):
            return r.name
        return r

    def node(self, node, others):
        """Lower one node; `others` is the same node in each symbol's trace."""
        site = node.site
        key = site.name + ("." + site.overload if site.overload else "")
        args = self.sym.refs(node.args, [o.args for o in others], f"an argument of {key}")
        results = [OValue(None, v.dtype.name, self.shape_of(v, [o.outputs[i] for o in others]))
                   for i, v in enumerate(node.outputs)]
        self.g.results = results
        if site.name in ("__getitem__", "detach"):
            outs = [self.getitem(args) if site.name == "__getitem__" else self.arg(args[0])]
            self.note_views(node)
        else:
            if site.form == "inplace" or key.endswith("_"):
                self.check_inplace(site, node)
            outs = self.table_node(site, key, args, results)
            if key in onnx_table.OPS and onnx_table.OPS[key].view:
                self.note_views(node)
        self.index += 1
        for o, r, res in zip(node.outputs, outs, results):
            if r is None:
                self.missing[o] = (f"onnx.export(): result {node.outputs.index(o)} of {key} "
                                   f"({onnx_table.OPS[key].where}) has no ONNX form at opset {self.g.opset}")
                continue
            if r.dtype is not None and r.dtype != res.dtype:
                r = self.g.cast(r, res.dtype)
            self.env[o] = OValue(r.name, res.dtype, res.shape)

    def note_views(self, node):
        from pytorchlite.jit import Value
        base = node.args[0]
        if isinstance(base, Value):
            for v in node.outputs:
                self.base_of[v] = base
            self.views_of.setdefault(base, []).extend(node.outputs)

    def _read_later(self, v, seen):
        """A value sharing v's memory (v, its views, theirs) that a later node or the output reads."""
        if v in seen:
            return None
        seen.add(v)
        if self.last_use.get(v, -1) > self.index:
            return v
        for w in self.views_of.get(v, []):
            hit = self._read_later(w, seen)
            if hit is not None:
                return hit
        return None

    def check_inplace(self, site, node):
        """An in-place operator exports as its out-of-place form when nothing can see the
        difference: the tensor it writes is not read afterwards (except through its result),
        is no view of another, and is no input, parameter or constant of the graph."""
        from pytorchlite.jit import Value
        target = node.args[0]
        why = None
        if not isinstance(target, Value):
            why = "it writes no traced tensor"
        elif target.kind != "node":
            why = f"it writes the graph's {target.kind} %{target.name}"
        elif self.last_use.get(target, -1) > self.index:
            why = f"%{target.name} is read again after it is written"
        else:
            # the write reaches every value sharing the memory: the bases it is a view of, and
            # the views taken of them; none of them may be read afterwards
            root = target
            while root in self.base_of:
                root = self.base_of[root]
            seen = {target}
            hit = self._read_later(root, seen) if root is not target else None
            hit = hit or next((h for w in self.views_of.get(target, []) for h in [self._read_later(w, seen)] if h), None)
            if hit is not None:
                why = (f"%{hit.name} shares its memory (a view) and is read after the write")
        if why:
            raise OnnxExportError(f"onnx.export(): the in-place operator {site.qualified_name} cannot be exported: "
                                  f"{why}; use its out-of-place form")

    def table_node(self, site, key, args, results):
        entry = onnx_table.OPS.get(key)
        if key.endswith("_") and entry is None:
            raise OnnxExportError(f"onnx.export(): the in-place operator {site.qualified_name} cannot be exported; "
                                  "use its out-of-place form")
        if entry is None:
            raise OnnxExportError(f"Exporting the operator '{key}' to ONNX opset version {self.g.opset} is not "
                                  "supported: it is not an ops.yaml operator")
        fn, loc, kind, promotion, tensor_args = entry.fn, entry.where, entry.kind, entry.promotion, entry.tensors
        if fn is None:
            raise OnnxExportError(f"Exporting the operator '{key}' to ONNX opset version {self.g.opset} is not "
                                  f"supported: {loc} declares no `onnx:` form for it (docs/ops_yaml.md, "
                                  "'ONNX forms'; `python -m codegen --onnx-report` lists them all)")
        self.g.where = f"onnx.export(): {key} ({loc})"
        params = _params_of(fn)
        kw = {}
        for name, a in zip(site.names, args):
            if name == "out":
                if a is not None:
                    raise OnnxExportError(f"{self.g.where}: out= cannot be exported")
                continue
            if name not in params and name == "input" and "self" in params:
                name = "self"
            kw[name] = self.arg(a)
        if kind == "pointwise" and promotion:
            self.promote(kw, promotion, results, tensor_args)
        out = fn(self.g, **kw)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for o in outs:
            if o is not None and not isinstance(o, OValue):
                raise OnnxExportError(f"{self.g.where}: the onnx form gave {o!r}, not an ONNX value")
        return outs

    def promote(self, kw, promotion, results, tensor_args):
        """Cast the tensor arguments of a pointwise operator to the dtype it computes in."""
        tensors = [k for k, v in kw.items() if isinstance(v, OValue)]
        if promotion == "where":
            tensors = tensors[1:]
        if promotion == "bool_out":
            compute = _promoted([_dtype._by_name(kw[k].dtype) for k in tensors])
            compute = compute.name if compute is not None else None
        else:
            compute = results[0].dtype
        if compute is None:
            return
        for k in tensors:
            kw[k] = self.g.cast(kw[k], compute)
        for k, v in kw.items():
            # a Python number among the operands takes the computation's type
            if k in tensor_args and k not in tensors and isinstance(v, (int, float)) and not isinstance(v, bool) \
                    and k != "condition":
                kw[k] = self.g.const(v, compute)

    def getitem(self, args):
        """Basic indexing (ints, slices, None, Ellipsis, one index tensor) as Slice/Gather/Unsqueeze."""
        from pytorchlite.jit import Value
        g = self.g
        x = self.arg(args[0])
        index = args[1] if isinstance(args[1], tuple) else (args[1],)
        shape = list(x.shape)
        n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
        expanded = []
        for i in index:
            if i is Ellipsis:
                expanded.extend([slice(None)] * (len(shape) - n_real))
            else:
                expanded.append(i)
        dim, out, unsq, squeeze = 0, x, [], []
        starts, ends, axes, steps = [], [], [], []
        final = 0
        for i in expanded:
            if i is None:
                unsq.append(final)
                final += 1
                continue
            if isinstance(i, slice):
                if not (i.start is None and i.stop is None and i.step in (None, 1)):
                    starts.append(0 if i.start is None else i.start)
                    ends.append(9223372036854775807 if i.stop is None else i.stop)
                    axes.append(dim)
                    steps.append(1 if i.step is None else i.step)
                dim += 1
                final += 1
            elif isinstance(i, int):
                starts.append(i)
                ends.append(i + 1 if i != -1 else 9223372036854775807)
                axes.append(dim)
                steps.append(1)
                squeeze.append(dim)
                dim += 1
            elif isinstance(i, Value) and len(expanded) == 1:
                return g.op("Gather", x, g.cast(self.value(i), "int64"), axis=0)
            else:
                raise OnnxExportError(f"onnx.export(): indexing with {i!r} cannot be exported (ints, slices, None, "
                                      "... and one index tensor can)")
        if axes:
            out = g.op("Slice", out, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps))
        if squeeze:
            out = g.op("Squeeze", out, g.ints(squeeze))
        if unsq:
            out = g.op("Unsqueeze", out, g.ints(unsq))
        return out


# --- the ModelProto ----------------------------------------------------------------------------

def _value_info(onnx, name, dtype, shape, symbols):
    dims = []
    for i, d in enumerate(shape):
        sym = symbols.get(i)
        if sym is not None:
            dims.append(sym)
        elif isinstance(d, SymDim):
            dims.append(d.name)      # None (left unnamed) unless it is exactly one named axis
        else:
            dims.append(int(d))
    return onnx.helper.make_tensor_value_info(name, ONNX_TYPES[dtype], dims)


def export(model, args=(), f=None, *, kwargs=None, verbose=None, input_names=None, output_names=None,
           opset_version=None, export_params=True, keep_initializers_as_inputs=False, dynamic_axes=None,
           training=None, do_constant_folding=True, dynamo=False, verify=False):
    """Export `model` (a Module or a function of tensors) to ONNX, as `torch.onnx.export`:
    traced with `pytorchlite.jit.trace` on `args`, each operator lowered through its
    ops.yaml `onnx:` form. `f` is a path or a binary file-like (None: only returned).
    Returns the `onnx.ModelProto` (checked with `onnx.checker.check_model(full_check=True)`).

    - `input_names` / `output_names`: names of the tensor inputs and outputs, in order (the
      rest keep the traced names, `output`, `output_1`, ...); parameters and buffers become
      initializers under their `named_parameters()` / `named_buffers()` names.
    - `dynamic_axes`: `{name: {axis: symbol}}` or `{name: [axes]}`; those dims are symbolic
      in the model, and sizes the model computes from them follow them.
    - `opset_version`: 17 (default) or 18. A Module is exported in eval mode (its mode is put
      back afterwards). `do_constant_folding` is accepted; constant subgraphs (a weight's
      transpose) are left to the runtime, which folds them when it loads the model.
    - `verify=True`: run the model in onnxruntime on `args` and check it matches (1e-5).
    - `dynamo` is accepted for PyTorch's signature; pytorchlite has one exporter (the tracer).

    >>> import pytorchlite
    >>> m = pytorchlite.nn.Linear(3, 2)
    >>> proto = pytorchlite.onnx.export(m, (pytorchlite.ones(1, 3),), None, input_names=["x"],
    ...                                 output_names=["y"], dynamic_axes={"x": {0: "batch"}})
    >>> [n.op_type for n in proto.graph.node]
    ['Transpose', 'Gemm']
    """
    onnx = _onnx()
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    if opset not in SUPPORTED_OPSETS:
        raise ValueError(f"onnx.export(): opset_version {opset} is not supported (supported: "
                         f"{', '.join(map(str, SUPPORTED_OPSETS))})")
    if kwargs:
        raise NotImplementedError("onnx.export(): keyword arguments to the model (kwargs=) are not supported")
    if not export_params:
        raise NotImplementedError("onnx.export(): export_params=False is not supported (weights are initializers)")
    if training not in (None, False) and str(training).split(".")[-1] not in ("EVAL", "0"):
        raise NotImplementedError("onnx.export(): only training=TrainingMode.EVAL is supported")
    if isinstance(args, pytorchlite.Tensor):
        args = (args,)
    args = tuple(args)
    is_module = isinstance(model, pytorchlite.nn.Module)
    was_training = model.training if is_module else False
    if is_module:
        model.eval()
    try:
        proto = _export(onnx, model, args, input_names, output_names, opset, dynamic_axes, export_params,
                        keep_initializers_as_inputs)
    finally:
        if is_module and was_training:
            model.train()
    if verbose:
        print(onnx.printer.to_text(proto.graph))
    if verify:
        _verify(model, args, proto)
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(data)
        elif isinstance(f, io.IOBase) or hasattr(f, "write"):
            f.write(data)
        else:
            raise TypeError(f"onnx.export(): f must be a path or a binary file-like object, not {type(f).__name__}")
    return proto


def _symbol_traces(model, args, graph, names, in_ovalues, dyn_in):
    """One more trace per dynamic symbol, with its axes one longer: ([(symbol, (input OValue,
    axis), size as traced)], [graph])."""
    tensor_inputs = [v for v in graph.inputs if v.kind == "input"]
    symbols, traces = [], []
    for name in dict.fromkeys(sym for axes in dyn_in.values() for sym in axes.values()):
        # one more trace with this symbol's axes one longer
        grown, source, it = [], None, iter(range(len(tensor_inputs)))
        for a in args:
            if not isinstance(a, pytorchlite.Tensor):
                grown.append(a)
                continue
            i = next(it)
            axes = [ax for ax, sym in dyn_in.get(names[i], {}).items() if sym == name]
            for ax in axes:
                if not -a.dim() <= ax < a.dim():
                    raise ValueError(f"onnx.export(): dynamic axis {ax} of input '{names[i]}' is out of range "
                                     f"for its {a.dim()} dims")
            axes = [ax % a.dim() for ax in axes]
            if axes and source is None:
                source = (in_ovalues[i], axes[0])
            grown.append(_grown(a, axes) if axes else a)
        other, _ = _trace(model, tuple(grown))
        if not _same_structure(graph, other):
            raise OnnxExportError(f"onnx.export(): the model's operators change with the size of the dynamic axis "
                                  f"'{name}' (the graph traced with it one longer differs); it cannot be exported "
                                  "with these dynamic_axes")
        symbols.append((name, source, int(source[0].shape[source[1]])))
        traces.append(other)
    return symbols, traces


def _export(onnx, model, args, input_names, output_names, opset, dynamic_axes, export_params,
            keep_initializers_as_inputs):
    graph, state = _trace(model, args)
    tensor_inputs = [v for v in graph.inputs if v.kind == "input"]
    names = list(input_names or [])
    if len(names) > len(tensor_inputs):
        raise ValueError(f"onnx.export(): {len(names)} input_names given for {len(tensor_inputs)} tensor inputs")
    names += [v.name for v in tensor_inputs[len(names):]]
    out_values = graph.values_of_output()
    onames = list(output_names or [])
    if len(onames) > len(out_values):
        raise ValueError(f"onnx.export(): {len(onames)} output_names given for {len(out_values)} tensor outputs")
    onames += [f"output_{i}" if i else "output" for i in range(len(onames), len(out_values))]
    dyn = _normalize_dynamic_axes(dynamic_axes)
    unknown = set(dyn) - set(names) - set(onames)
    if unknown:
        raise ValueError(f"onnx.export(): dynamic_axes names {sorted(unknown)}, which is neither an input nor an "
                         f"output name (inputs: {names}, outputs: {onames})")

    g = Builder(opset)
    g.results = []
    g.reserved = set(names) | set(onames) | {v.name for v in graph.inputs} | {f"const_{c.name}" for c in graph.constants}
    in_ovalues = [OValue(n, v.dtype.name, tuple(v.shape)) for n, v in zip(names, tensor_inputs)]
    dyn_in = {n: axes for n, axes in dyn.items() if n in names}
    symbols, traces = _symbol_traces(model, args, graph, names, in_ovalues, dyn_in)
    sym = _Symbols(symbols)
    low = _Lowering(graph, g, sym)

    # inputs, with symbolic dims
    for ov, v in zip(in_ovalues, tensor_inputs):
        shape = list(ov.shape)
        for ax, symname in dyn_in.get(ov.name, {}).items():
            ax %= len(shape)
            shape[ax] = SymDim(shape[ax], ((ov, ax),), 1, 0, symname)
        ov.shape = tuple(shape)
        low.env[v] = ov
    inits = {}
    for v in graph.inputs:
        if v.kind == "param":
            low.env[v] = OValue(v.name, v.dtype.name, tuple(v.shape))
            inits[v.name] = _numpy(state[v.name])
    for i, c in enumerate(graph.constants):
        name = f"const_{c.name}"
        low.env[c] = OValue(name, c.dtype.name, tuple(c.shape))
        inits[name] = _numpy(c.data)
    for i, node in enumerate(graph.nodes):
        low.node(node, [t.nodes[i] for t in traces])

    # outputs under their names
    outputs = []
    renames = {}
    for v, name in zip(out_values, onames):
        ov = low.value(v)
        produced = any(ov.name in outs for _, _, outs, _ in g.nodes)
        if produced and ov.name not in renames and ov.name not in {o.name for o in in_ovalues}:
            renames[ov.name] = name
        else:
            g.nodes.append(("Identity", [renames.get(ov.name, ov.name)], [name], {}))
        outputs.append((name, ov))
    if renames:
        g.nodes[:] = [(t, [renames.get(i, i) for i in ins], [renames.get(o, o) for o in outs], a)
                      for t, ins, outs, a in g.nodes]

    nodes = [onnx.helper.make_node(t, ins, outs, name=f"{t}_{i}", **{k: _attr(onnx, v) for k, v in a.items()})
             for i, (t, ins, outs, a) in enumerate(g.nodes)]
    initializers = [onnx.numpy_helper.from_array(arr, name) for name, arr in list(inits.items()) +
                    list(g.initializers.items())]
    used = {i for n in nodes for i in n.input} | {name for name, _ in outputs}
    initializers = [t for t in initializers if t.name in used]
    inputs = [_value_info(onnx, ov.name, ov.dtype, ov.shape, dyn_in.get(ov.name, {})) for ov in in_ovalues]
    if keep_initializers_as_inputs:
        inputs += [onnx.helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)) for t in initializers]
    outs = [_value_info(onnx, name, ov.dtype, ov.shape, dyn.get(name, {})) for name, ov in outputs]
    gproto = onnx.helper.make_graph(nodes, "pytorchlite_graph", inputs, outs, initializers)
    proto = onnx.helper.make_model(gproto, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                   producer_name="pytorchlite", producer_version=pytorchlite.__version__)
    proto.ir_version = min(proto.ir_version, 10)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def _verify(model, args, proto):
    """Run the exported model in onnxruntime on the example inputs and compare with pytorchlite."""
    try:
        import onnxruntime
    except ImportError:
        raise ImportError("onnx.export(verify=True) needs onnxruntime: pip install 'pytorchlite[onnx]'") from None
    sess = onnxruntime.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    tensors = [a for a in args if isinstance(a, pytorchlite.Tensor)]
    feeds = {i.name: _numpy(t) for i, t in zip(sess.get_inputs(), tensors)}
    got = sess.run(None, feeds)
    with pytorchlite.no_grad():
        want = model(*args)
    flat = []

    def walk(o):
        if isinstance(o, pytorchlite.Tensor):
            flat.append(o)
        elif isinstance(o, (tuple, list)):
            for x in o:
                walk(x)
        elif isinstance(o, dict):
            for x in o.values():
                walk(x)
    walk(want)
    for name, g, w in zip([o.name for o in proto.graph.output], got, flat):
        w = _numpy(w)
        if g.shape != w.shape or not np.allclose(g, w, rtol=1e-5, atol=1e-5, equal_nan=True):
            diff = float(np.max(np.abs(g.astype(np.float64) - w.astype(np.float64)))) if g.shape == w.shape else None
            raise OnnxExportError(f"onnx.export(verify=True): output '{name}' differs in onnxruntime "
                                  + (f"(largest difference {diff:.3g})" if diff is not None else
                                     f"(shape {g.shape}, pytorchlite {w.shape})"))


def _numpy(t):
    if not isinstance(t, pytorchlite.Tensor):
        t = t.data
    if t.dtype == pytorchlite.bfloat16:
        raise OnnxExportError("onnx.export(): bfloat16 weights are not supported by the exporter")
    return np.ascontiguousarray(t.detach().cpu().numpy())


def _attr(onnx, v):
    if isinstance(v, np.ndarray):
        return onnx.numpy_helper.from_array(v)
    if isinstance(v, float):
        return v
    if isinstance(v, (list, tuple)):
        return [float(x) if isinstance(x, float) else int(x) for x in v]
    if isinstance(v, int):
        return int(v)
    return v
