"""`jit.save` / `jit.load`: a traced graph as JSON plus its tensors (constants, and a
module's parameters and buffers) in one safetensors file written by `pytorchlite.save`
(no pickle). Loading needs no Python source of the traced code: each node names its
binding by (operator, overload, form), found again in the generated bindings.
"""

import json
import math

from pytorchlite import _dtype as D
from pytorchlite import _intercept as _ix
from pytorchlite._device import device as _device
from pytorchlite._memory_format import memory_format as _memory_format
from pytorchlite.jit._ir import Graph, Node, Value
from pytorchlite.jit._traced import TracedFunction, TracedModule

FORMAT = "pytorchlite.jit"
VERSION = 1
_SITES = None


def _sites():
    global _SITES
    if _SITES is None:
        from pytorchlite import _tensor
        from pytorchlite.generated import functions
        _SITES = {}
        for mod in (functions, _tensor):
            for s in vars(mod).values():
                if isinstance(s, _ix.Site):
                    _SITES.setdefault((s.name, s.overload, s.form), s)
    return _SITES


def _enc(ref):
    if isinstance(ref, Value):
        return {"value": ref.name}
    if ref is None or isinstance(ref, (bool, int, str)):
        return ref
    if isinstance(ref, float):
        return ref if math.isfinite(ref) else {"float": repr(ref)}
    if isinstance(ref, tuple):
        return {"tuple": [_enc(r) for r in ref]}
    if isinstance(ref, list):
        return [_enc(r) for r in ref]
    if isinstance(ref, slice):
        return {"slice": [_enc(ref.start), _enc(ref.stop), _enc(ref.step)]}
    if ref is Ellipsis:
        return {"ellipsis": True}
    if isinstance(ref, D.dtype):
        return {"dtype": ref.name}
    if isinstance(ref, _device):
        return {"device": str(ref)}
    if isinstance(ref, _memory_format):
        return {"memory_format": str(ref).split(".")[-1]}
    raise TypeError(f"jit.save: a graph argument of type {type(ref).__name__} ({ref!r}) cannot be saved")


def _dec(obj, values):
    if isinstance(obj, list):
        return [_dec(o, values) for o in obj]
    if not isinstance(obj, dict):
        return obj
    (k, v), = obj.items()
    if k == "value":
        return values[v]
    if k == "float":
        return float(v)
    if k == "tuple":
        return tuple(_dec(o, values) for o in v)
    if k == "slice":
        return slice(*(_dec(o, values) for o in v))
    if k == "ellipsis":
        return Ellipsis
    if k == "dtype":
        return getattr(D, v)
    if k == "device":
        return _device(v)
    if k == "memory_format":
        import pytorchlite
        return getattr(pytorchlite, v)
    raise ValueError(f"jit.load: unknown encoded argument {obj!r}")


def _meta(v):
    return {"name": v.name, "kind": v.kind, "dtype": v.dtype.name if v.dtype else None,
            "shape": list(v.shape or ()), "stride": list(v.stride or ()), "device": str(v.device),
            "requires_grad": v.requires_grad}


def _value(m):
    v = Value(m["name"], m["kind"])
    v.dtype = getattr(D, m["dtype"]) if m["dtype"] else None
    v.shape, v.stride = tuple(m["shape"]), tuple(m["stride"])
    v.device = _device(m["device"])
    v.requires_grad = m["requires_grad"]
    return v


def _enc_output(spec):
    kind = spec[0]
    if kind in ("value", "literal"):
        return [kind, _enc(spec[1])]
    if kind == "namedtuple":
        return [kind, spec[1].__name__, [_enc_output(s) for s in spec[2]]]
    if kind == "dict":
        return [kind, {k: _enc_output(s) for k, s in spec[1].items()}]
    return [kind, [_enc_output(s) for s in spec[1]]]


def _dec_output(obj, values):
    kind = obj[0]
    if kind in ("value", "literal"):
        return (kind, _dec(obj[1], values))
    if kind == "namedtuple":
        from pytorchlite import return_types
        return (kind, getattr(return_types, obj[1]), [_dec_output(s, values) for s in obj[2]])
    if kind == "dict":
        return (kind, {k: _dec_output(s, values) for k, s in obj[1].items()})
    return (kind, [_dec_output(s, values) for s in obj[1]])


def save(traced, f):
    """save(traced, f): write a `jit.trace` result (function or module) to a file, with its
    parameters' current values."""
    if not isinstance(traced, TracedFunction):
        raise TypeError(f"jit.save: expected a TracedFunction or TracedModule (from jit.trace), "
                        f"got {type(traced).__name__}")
    g = traced.graph
    tensors = {"const/" + c.name: c.data.detach() for c in g.constants}
    if isinstance(traced, TracedModule):
        for (nm, t) in zip(traced._state_names, traced._state()):
            tensors["param/" + nm] = t.detach()
    nodes = []
    for n in g.nodes:
        nodes.append({"op": [n.site.name, n.site.overload, n.site.form], "args": [_enc(a) for a in n.args],
                      "outputs": [_meta(v) for v in n.outputs],
                      "result": n.result.__name__ if isinstance(n.result, type) else n.result,
                      "mutates": n.mutates, "random": n.random})
    doc = {"inputs": [_meta(v) for v in g.inputs], "constants": [_meta(c) for c in g.constants],
           "nodes": nodes, "output": _enc_output(g.output), "arg_kinds": list(g.arg_kinds),
           "name": traced.__name__}
    import pytorchlite
    pytorchlite.save({"format": FORMAT, "version": VERSION, "graph": json.dumps(doc), "tensors": tensors}, f)


class LoadedGraph(TracedFunction):
    """A graph read by `jit.load`: callable with the traced function's arguments; the
    parameters and buffers of a traced module are held here (`state_dict()`)."""

    def __init__(self, graph, name, state):
        self._state_tensors = state
        super().__init__(graph, name)

    def __call__(self, *args):
        self._check(args)
        return self._forward(*args, *self._state_tensors.values())

    def state_dict(self):
        return dict(self._state_tensors)

    def parameters(self):
        return iter(t for t in self._state_tensors.values() if t.dtype.is_floating_point)


def load(f):
    """load(f) -> a callable graph saved by `jit.save` (no Python source of the traced code needed)."""
    import pytorchlite
    blob = pytorchlite.load(f)
    if not isinstance(blob, dict) or blob.get("format") != FORMAT:
        raise RuntimeError(f"jit.load: {f!r} is not a file written by pytorchlite.jit.save")
    if blob.get("version") != VERSION:
        raise RuntimeError(f"jit.load: {f!r} has format version {blob.get('version')}; this pytorchlite reads "
                           f"version {VERSION}")
    doc = json.loads(blob["graph"])
    tensors = blob["tensors"]
    g = Graph()
    values = {}
    for m in doc["inputs"]:
        v = _value(m)
        g.inputs.append(v)
        values[v.name] = v
    for m in doc["constants"]:
        v = _value(m)
        v.data = tensors["const/" + v.name]
        g.constants.append(v)
        values[v.name] = v
    sites = _sites()
    for nd in doc["nodes"]:
        key = tuple(nd["op"])
        if key not in sites:
            raise RuntimeError(f"jit.load: the graph calls operator {key[0]!r} (overload {key[1]!r}, {key[2]}) "
                               "which this pytorchlite does not have")
        args = tuple(_dec(a, values) for a in nd["args"])
        r = nd["result"]
        if r not in ("tensor", "tuple", "list", "none"):
            from pytorchlite import return_types
            r = getattr(return_types, r)
        node = Node(sites[key], args, [], r, nd["mutates"], nd["random"])
        for i, m in enumerate(nd["outputs"]):
            v = _value(m)
            v.node, v.index = node, i
            node.outputs.append(v)
            values[v.name] = v
        g.nodes.append(node)
        g._count = max(g._count, *(int(v.name) for v in node.outputs if v.name.isdigit()), 0)
    g.output = _dec_output(doc["output"], values)
    g.arg_kinds = tuple(doc["arg_kinds"])
    state = {v.name: tensors["param/" + v.name] for v in g.inputs if v.kind == "param"}
    return LoadedGraph(g, doc["name"], state)
