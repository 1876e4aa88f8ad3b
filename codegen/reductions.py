"""Reductions and scans declared in ops.yaml: the model, and the C and CUDA instances.

A reduction is declared by what happens to one element and how two partial results meet,
as CuPy's `ReductionKernel('T x', 'T y', 'x', 'a + b', 'y = a', '0')` declares one:

    - reduction: sum
      dtypes: all
      acc: {floating: double, 'integral, bool': uint64}
      map: x
      combine: a + b
      identity: 0
      finish: a
      out: {floating: input, 'integral, bool': int64}

From the declarations this module writes
  generated/reductions.h   the reduction and scan codes (one enum shared with Python), the
                           accumulator records and the map / combine / finish functions
                           (C and CUDA alike), the fast-path prototypes
  generated/reductions.c   per reduction and dtype: the row, column, merge and finish
                           functions the hand-written engine (kernels/reduce.c) calls, and
                           per scan and dtype the row and lane loops of kernels/sort.c
  generated/reduce.cu      per reduction and dtype: block-per-output and thread-per-output
                           CUDA kernels (pytorchlite/cuda/_reduce.py plans and launches them)
  generated/reductions.py  the codes and what the CUDA planner needs to know of each

Parsing is strict like codegen/model.py: frozen dataclasses, known keys popped, leftovers
and bad expressions are errors that start `ops.yaml:LINE: reduction 'sum':`. The language
is documented in docs/ops_yaml.md ("Reductions and scans").
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from . import cexpr
from .model import ALL_DTYPES, DTYPE_CLASS, CodegenError, parse_dtypes

KINDS = ("reduction", "scan")
# what an accumulator may be; `value` is the input's own compute type
ACC_TYPES = ("double", "float", "int64", "uint64", "value")
RECORD_FIELD_TYPES = ("double", "int64")
CLASS_KEYS = {"all": "bfi", "floating": "f", "integral": "i", "bool": "b"}
CONSTANTS = {"NAN": ("PTL_NAN_D", "double"), "INFINITY": ("PTL_INF_D", "double")}
# names the engine gives expressions; a declared `arg` or aux name may not shadow them
RESERVED = {"x", "a", "b", "n", "index", "aux", "parg", "auxv"} | set(CONSTANTS)

_KEYS = {
    "reduction": ("reduction", "dtypes", "accumulate", "acc", "map", "combine", "prefer", "identity", "index",
                  "arg", "aux_in", "finish", "aux_out", "out", "fast", "special", "doc"),
    "scan": ("scan", "dtypes", "acc", "map", "combine", "prefer", "identity", "index", "doc"),
}
# what an entry that reuses another one's accumulation (`accumulate:`) may not restate
_ACCUMULATION_KEYS = ("acc", "map", "combine", "prefer", "identity", "index", "aux_in", "fast")

# per dtype: kernel suffix, storage type, compute type, load of a stored value
DTYPES = {
    "bool": ("b8", "uint8_t", "int64_t", "((int64_t)(({v}) != 0))"),
    "uint8": ("u8", "uint8_t", "int64_t", "((int64_t)({v}))"),
    "int8": ("i8", "int8_t", "int64_t", "((int64_t)({v}))"),
    "int16": ("i16", "int16_t", "int64_t", "((int64_t)({v}))"),
    "int32": ("i32", "int32_t", "int64_t", "((int64_t)({v}))"),
    "int64": ("i64", "int64_t", "int64_t", "((int64_t)({v}))"),
    "float16": ("f16", "uint16_t", "float", "ptl_h2f({v})"),
    "bfloat16": ("bf16", "uint16_t", "float", "ptl_bf2f({v})"),
    "float32": ("f32", "float", "float", "({v})"),
    "float64": ("f64", "double", "double", "({v})"),
}
PTL_CODES = {d: "PTL_" + {"bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32",
                          "int64": "I64", "float16": "F16", "bfloat16": "BF16", "float32": "F32",
                          "float64": "F64"}[d] for d in ALL_DTYPES}
DTYPE_CODES = {d: i for i, d in enumerate(ALL_DTYPES)}
_C_TYPE = {"double": "double", "float": "float", "int64": "int64_t", "uint64": "uint64_t", "int": "int"}
_RANK = {"int": 0, "int64": 1, "uint64": 2, "float": 3, "double": 4}
_VALUE_TYPE = {"int64_t": "int64", "float": "float", "double": "double"}


# --- the model --------------------------------------------------------------------------

@dataclass(frozen=True)
class Expr:
    tree: tuple
    src: str


@dataclass(frozen=True)
class Reduction:
    """One `- reduction:` or `- scan:` entry. Class-keyed values are tuples of
    (dtype classes as a string of b/i/f, value), searched in order."""
    name: str
    kind: str
    file: str
    line: int
    dtypes: tuple
    accumulate: str = ""        # another reduction whose accumulation this one finishes
    acc: tuple = ()             # ((classes, type), ...) for a scalar accumulator
    fields: tuple = ()          # ((field, type), ...) for a record accumulator
    map: tuple = ()             # ((classes, Expr or ((field, Expr), ...)), ...)
    combine: tuple = ()
    prefer: tuple = ()
    identity: tuple = ()
    index: bool = False
    arg: str = ""
    aux_in: tuple = ()          # (name, Expr over `aux`)
    finish: tuple = ()
    aux_out: tuple = ()         # (Expr, dtype or "" for the input's)
    out: tuple = ()             # ((dtype, "input" or output dtype), ...)
    fast_row: tuple = ()        # ((dtype, symbol), ...)
    fast_col: tuple = ()
    special: tuple = ()         # ((arg value, reduction name), ...)
    doc: str = ""

    @property
    def where(self):
        return f"{self.file}:{self.line}: {self.kind} '{self.name}'"


def _pick(by_class, dtype):
    cls = DTYPE_CLASS[dtype]
    for classes, value in by_class:
        if cls in classes:
            return value
    raise KeyError(dtype)


# --- parsing ------------------------------------------------------------------------------

def _classes_of(key, fail, what):
    out = set()
    for part in str(key).split(","):
        part = part.strip()
        if part not in CLASS_KEYS:
            raise fail(f"{what}: key '{part}' must be all, floating, integral or bool")
        out |= set(CLASS_KEYS[part])
    return "".join(sorted(out))


def _plain(raw):
    """A mapping without the loader's __line__ key (anything else as it is)."""
    return {k: v for k, v in raw.items() if k != "__line__"} if isinstance(raw, dict) else raw


def _is_class_mapping(raw):
    raw = _plain(raw)
    return isinstance(raw, dict) and bool(raw) and all(
        all(p.strip() in CLASS_KEYS for p in str(k).split(",")) for k in raw)


def _by_class(raw, what, dtypes, fail, convert):
    """A value, or a mapping of dtype classes to values, covering every declared dtype."""
    if _is_class_mapping(raw):
        items = [(_classes_of(k, fail, what), convert(v)) for k, v in _plain(raw).items()]
    else:
        items = [("bfi", convert(raw))]
    for d in dtypes:
        if not any(DTYPE_CLASS[d] in c for c, _ in items):
            raise fail(f"'{what}' has nothing for {d}")
    return tuple(items)


_FIELD_REF = re.compile(r"\b([ab])\.([A-Za-z_]\w*)")


def _expr(src, what, fail):
    if isinstance(src, bool) or not isinstance(src, (str, int, float)):
        raise fail(f"'{what}' must be a C expression")
    text = str(src)
    if isinstance(src, float) and src in (float("inf"), float("-inf")):
        text = "INFINITY" if src > 0 else "-INFINITY"
    try:
        tree = cexpr.parse_body(_FIELD_REF.sub(r"\1__\2", text))
    except cexpr.BodyError as exc:
        raise fail(f"'{what}' does not parse: {exc}: {text!r}") from None
    return Expr(tree, text)


def _fields_expr(raw, fields, what, fail):
    """A record's per-field expressions: a mapping with exactly the record's fields."""
    if not isinstance(raw, dict):
        raise fail(f"'{what}' of a record accumulator maps each field ({', '.join(f for f, _ in fields)}) "
                   "to an expression")
    raw = {k: v for k, v in raw.items() if k != "__line__"}
    names = [f for f, _ in fields]
    if sorted(raw) != sorted(names):
        missing, extra = sorted(set(names) - set(raw)), sorted(set(raw) - set(names))
        raise fail(f"'{what}' must give every field of the accumulator"
                   + (f"; missing {', '.join(missing)}" if missing else "")
                   + (f"; unknown {', '.join(extra)}" if extra else ""))
    return tuple((f, _expr(raw[f], f"{what}.{f}", fail)) for f in names)


def _ident(value, what, fail):
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z_]\w*", value):
        raise fail(f"'{what}' must be a name, got {value!r}")
    if value in RESERVED:
        raise fail(f"'{what}' may not be '{value}', a name the generated code uses")
    return value


def _special_value(key, fail):
    if isinstance(key, bool):
        raise fail(f"special: key {key!r} is not a number")
    if isinstance(key, (int, float)):
        return float(key)
    try:
        return float(str(key).strip())
    except ValueError:
        raise fail(f"special: key {key!r} is not a number (inf and -inf are spelled .inf / -.inf or 'inf')") from None


def _parse(raw, file):
    kind = "reduction" if "reduction" in raw else "scan"
    e = dict(raw)
    line = e.pop("__line__")
    name = e.pop(kind)
    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
        raise CodegenError(f"{file}:{line}: {kind} name must be a lower-case identifier, got {name!r}")

    def fail(msg):
        return CodegenError(f"{file}:{line}: {kind} '{name}': {msg}")

    left = [k for k in e if k not in _KEYS[kind]]
    if left:
        hint = difflib.get_close_matches(left[0], _KEYS[kind], n=1)
        raise fail(f"unknown key '{left[0]}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
    dtypes = parse_dtypes(e.pop("dtypes", "all"), fail)
    if not dtypes:
        raise fail("'dtypes' is empty")
    doc = e.pop("doc", "")
    if not isinstance(doc, str):
        raise fail("'doc' must be a string")
    kw = dict(name=name, kind=kind, file=file, line=line, dtypes=dtypes, doc=doc.strip())

    accumulate = e.pop("accumulate", "")
    if accumulate:
        given = [k for k in _ACCUMULATION_KEYS if k in e]
        if given:
            raise fail(f"'{given[0]}' belongs to the accumulation, which 'accumulate: {accumulate}' takes "
                       f"from '{accumulate}'")
        kw["accumulate"] = _ident(accumulate, "accumulate", fail)
    else:
        kw.update(_parse_accumulation(e, kind, dtypes, fail))

    if kind == "reduction":
        if "arg" in e:
            kw["arg"] = _ident(e.pop("arg"), "arg", fail)
        kw["finish"] = _by_class(e.pop("finish", "a"), "finish", dtypes, fail, lambda v: _expr(v, "finish", fail))
        if "aux_out" in e:
            aux = e.pop("aux_out")
            if isinstance(aux, dict):
                aux = {k: v for k, v in aux.items() if k != "__line__"}
                unknown = sorted(set(aux) - {"value", "dtype"})
                if unknown or "value" not in aux:
                    raise fail("'aux_out' is an expression, or {value: <expression>, dtype: <dtype>}")
                dt = aux.get("dtype", "")
                if dt and dt not in ALL_DTYPES:
                    raise fail(f"aux_out: unknown dtype '{dt}'")
                kw["aux_out"] = (_expr(aux["value"], "aux_out", fail), dt)
            else:
                kw["aux_out"] = (_expr(aux, "aux_out", fail), "")
        kw["out"] = _out_table(e.pop("out", "input"), dtypes, fail)
        if "special" in e:
            sp = e.pop("special")
            if not isinstance(sp, dict):
                raise fail("'special' maps values of the argument to other reductions")
            sp = {k: v for k, v in sp.items() if k != "__line__"}
            if not kw.get("arg"):
                raise fail("'special' needs an 'arg' to look at")
            kw["special"] = tuple((_special_value(k, fail), _ident(v, f"special.{k}", fail)) for k, v in sp.items())
    return Reduction(**kw)


def _out_table(raw, dtypes, fail):
    """((dtype, output dtype), ...) for every declared dtype: `input`, a dtype, or a mapping
    whose keys are dtype classes or dtype names (a name wins over its class)."""
    def value(v):
        if v != "input" and v not in ALL_DTYPES:
            raise fail(f"'out' must be 'input' or a dtype, got {v!r}")
        return v
    if not isinstance(raw, dict):
        return tuple((d, value(raw)) for d in dtypes)
    by_class, by_name = {}, {}
    for key, v in raw.items():
        if key == "__line__":
            continue
        for part in str(key).split(","):
            part = part.strip()
            if part in CLASS_KEYS:
                for c in CLASS_KEYS[part]:
                    by_class[c] = value(v)
            elif part in ALL_DTYPES:
                by_name[part] = value(v)
            else:
                raise fail(f"out: key '{part}' is neither a dtype class (all, floating, integral, bool) nor a dtype")
    table = []
    for d in dtypes:
        v = by_name.get(d, by_class.get(DTYPE_CLASS[d]))
        if v is None:
            raise fail(f"'out' has nothing for {d}")
        table.append((d, v))
    return tuple(table)


def _parse_accumulation(e, kind, dtypes, fail):
    kw = {}
    if "acc" not in e:
        raise fail("'acc' (the accumulator type) is required")
    acc = e.pop("acc")
    record = isinstance(acc, dict) and not _is_class_mapping(acc)
    if record:
        fields = []
        for f, t in acc.items():
            if f == "__line__":
                continue
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9]*", str(f)):
                raise fail(f"acc: bad field name {f!r}")
            if t not in RECORD_FIELD_TYPES:
                raise fail(f"acc: field '{f}' must be {' or '.join(RECORD_FIELD_TYPES)}, got {t!r}")
            fields.append((f, t))
        if kind == "scan":
            raise fail("a scan's accumulator is one value (no record)")
        kw["fields"] = tuple(fields)
    else:
        def acc_type(t):
            if t not in ACC_TYPES:
                raise fail(f"acc: unknown type {t!r} (known: {', '.join(ACC_TYPES)}, or a record of fields)")
            return t
        kw["acc"] = _by_class(acc, "acc", dtypes, fail, acc_type)

    def exprs(key, default=None):
        raw = e.pop(key, default)
        if record:
            return (("bfi", _fields_expr(raw, kw["fields"], key, fail)),)
        return _by_class(raw, key, dtypes, fail, lambda v: _expr(v, key, fail))

    kw["map"] = exprs("map", "x") if not record or "map" in e else None
    if kw["map"] is None:
        raise fail("'map' of a record accumulator must be given per field")
    has_combine, has_prefer = "combine" in e, "prefer" in e
    if has_combine == has_prefer:
        raise fail("give exactly one of 'combine:' (an associative, commutative operation with an identity) "
                   "or 'prefer:' (when b replaces a; no identity)")
    if has_combine:
        kw["combine"] = exprs("combine")
        if "identity" not in e:
            raise fail("'combine' needs an 'identity'")
        kw["identity"] = exprs("identity")
    else:
        if record:
            raise fail("'prefer' selects one element: its accumulator is one value, not a record")
        kw["prefer"] = exprs("prefer")
        if "identity" in e:
            raise fail("'prefer' reductions start from their first element: no 'identity'")
    index = e.pop("index", False)
    if not isinstance(index, bool):
        raise fail("'index' must be true or false")
    if index and not has_prefer:
        raise fail("'index: true' carries the position of the element 'prefer' selects: it needs 'prefer'")
    kw["index"] = index
    if kind == "reduction":
        if "aux_in" in e:
            aux = e.pop("aux_in")
            if not isinstance(aux, dict) or len([k for k in aux if k != "__line__"]) != 1:
                raise fail("'aux_in' is {name: <expression over aux>}: the per-output input and how it is read")
            (aname, src), = [(k, v) for k, v in aux.items() if k != "__line__"]
            kw["aux_in"] = (_ident(aname, "aux_in", fail), _expr(src, "aux_in", fail))
        fast = e.pop("fast", {})
        if not isinstance(fast, dict):
            raise fail("'fast' is {row: {<dtypes>: <C function>}, col: {<dtypes>: <C colpath>}}")
        for path, spec in fast.items():
            if path == "__line__":
                continue
            if path not in ("row", "col"):
                raise fail(f"fast: unknown path '{path}' (row or col)")
            if not isinstance(spec, dict):
                raise fail(f"fast.{path} maps dtypes to the name of a hand-written C function")
            table = []
            for key, sym in spec.items():
                if key == "__line__":
                    continue
                if not isinstance(sym, str) or not re.fullmatch(r"ptl_red_fast_\w+", sym):
                    raise fail(f"fast.{path}: {sym!r} is not a C name starting 'ptl_red_fast_'")
                for d in parse_dtypes(key, fail, f"fast.{path}"):
                    if d not in dtypes:
                        raise fail(f"fast.{path}: {d} is not one of the reduction's dtypes")
                    table.append((d, f"{sym}_{DTYPES[d][0]}"))
            kw["fast_" + path] = tuple(table)
    return kw


def is_declaration(raw):
    """Whether an ops.yaml item is a reduction or scan (rather than an operator)."""
    return isinstance(raw, dict) and any(k in raw for k in KINDS)


def load_reductions(path, display_name="ops.yaml"):
    """(reductions, scans) declared in ops.yaml, in file order, checked."""
    from .model import load_yaml
    reds, scans = [], []
    for raw in load_yaml(path, display_name):
        if is_declaration(raw):
            if all(k in raw for k in KINDS):
                raise CodegenError(f"{display_name}:{raw['__line__']}: an entry is a reduction or a scan, not both")
            r = _parse(raw, display_name)
            (reds if r.kind == "reduction" else scans).append(r)
    _check(reds, scans)
    return reds, scans


def _check(reds, scans):
    for group in (reds, scans):
        seen = {}
        for r in group:
            if r.name in seen:
                raise CodegenError(f"{r.where}: declared twice (first at line {seen[r.name]})")
            seen[r.name] = r.line
    by_name = {r.name: r for r in reds}
    for r in reds:
        if r.accumulate:
            owner = by_name.get(r.accumulate)
            if owner is None:
                hint = difflib.get_close_matches(r.accumulate, list(by_name), n=1)
                raise CodegenError(f"{r.where}: accumulate: no reduction '{r.accumulate}'"
                                   + (f" (did you mean '{hint[0]}'?)" if hint else ""))
            if owner.accumulate:
                raise CodegenError(f"{r.where}: accumulate: '{owner.name}' itself reuses '{owner.accumulate}'; "
                                   f"name '{owner.accumulate}'")
            missing = [d for d in r.dtypes if d not in owner.dtypes]
            if missing:
                raise CodegenError(f"{r.where}: '{owner.name}' has no instance for {', '.join(missing)}")
        for _v, target in r.special:
            t = by_name.get(target)
            if t is None:
                raise CodegenError(f"{r.where}: special: no reduction '{target}'")
            if set(r.dtypes) - set(t.dtypes):
                raise CodegenError(f"{r.where}: special: '{target}' does not cover every dtype of '{r.name}'")
        own = owner_of(r, by_name)
        if r.aux_out and own.aux_in:
            raise CodegenError(f"{r.where}: one aux tensor: 'aux_in' and 'aux_out' exclude each other")
    # every expression is checked by emitting it for every dtype once
    accs = []
    for r in reds:
        for d in r.dtypes:
            accs.append(ReductionInstance(r, owner_of(r, by_name), d).acc)
    accs += [ScanInstance(s, d).acc for s in scans for d in s.dtypes]
    for a in accs:
        a.identity_body(), a.map_body(), a.combine_body(), a.prefer_body()


def owner_of(r, by_name):
    return by_name[r.accumulate] if r.accumulate else r


# --- expressions -> C (the same text compiles as CUDA) ----------------------------------------

def _promote(*types):
    return max(types, key=lambda t: _RANK[t])


def emit(tree, env, fail, what):
    """(C text, type) of an expression tree. env: name -> (C text, type). Function calls
    take the suffix of their widest argument (f64, f32, or i64 for integer arguments where
    the function has an integer version), as kernels/ptl_common.h names them."""
    tag = tree[0]
    if tag == "num":
        text = tree[1]
        return text, ("int" if re.fullmatch(r"\d+", text) else "double")
    if tag == "name":
        n = tree[1]
        if n in env:
            return env[n]
        if n in CONSTANTS:
            return CONSTANTS[n]
        shown = sorted(k.replace("__", ".") for k in env)
        raise fail(f"{what}: unknown name '{n.replace('__', '.')}' (known here: {', '.join(shown) or 'none'})")
    if tag == "call":
        fn, args = tree[1], [emit(a, env, fail, what) for a in tree[2]]
        if fn not in cexpr.FUNCTIONS:
            hint = difflib.get_close_matches(fn, cexpr.FUNCTIONS, n=1)
            raise fail(f"{what}: unknown function '{fn}'" + (f" (did you mean '{hint[0]}'?)" if hint else ""))
        arity, classes = cexpr.FUNCTIONS[fn]
        if arity != len(args):
            raise fail(f"{what}: function '{fn}' takes {arity} argument(s), given {len(args)}")
        widest = _promote(*(t for _, t in args)) if args else "double"
        if widest in ("double", "float") or "i" not in classes:
            sfx, rtype = ("f32", "float") if widest == "float" else ("f64", "double")
            if "f" not in classes:
                raise fail(f"{what}: function '{fn}' has no floating version")
        else:
            sfx, rtype = "i64", "int64"
        return f"ptl_{fn}_{sfx}({', '.join(t for t, _ in args)})", rtype
    if tag == "un":
        text, t = emit(tree[2], env, fail, what)
        if tree[1] == "!":
            return f"(!{text})", "int"
        if tree[1] == "~" and t in ("float", "double"):
            raise fail(f"{what}: '~' of a floating value")
        return f"({tree[1]}{text})", t
    if tag == "bin":
        op = tree[1]
        (lt, ltype), (rt, rtype) = emit(tree[2], env, fail, what), emit(tree[3], env, fail, what)
        if op in ("==", "!=", "<", "<=", ">", ">=", "&&", "||"):
            return f"({lt} {op} {rt})", "int"
        if op in ("%", "&", "|", "^", "<<", ">>") and ({ltype, rtype} & {"float", "double"}):
            raise fail(f"{what}: '{op}' of a floating value")
        return f"({lt} {op} {rt})", _promote(ltype, rtype)
    if tag == "?:":
        (c, _), (a, at), (b, bt) = (emit(t, env, fail, what) for t in tree[1:])
        return f"({c} ? {a} : {b})", _promote(at, bt)
    raise AssertionError(tag)


def _store(dtype, rtype, v):
    """The stored form of value v (of type rtype) in dtype: what ptl_red_store_d / _i of
    kernels/ptl_reduce.h do, typed (a floating value goes to an integer through int64)."""
    from .gen import _cu_convert      # (gen imports this module)
    if rtype in ("float", "double") and DTYPE_CLASS[dtype] == "i":
        v = f"(int64_t)({v})"
    return _cu_convert(dtype, v)


def _store_class(rtype):
    return "d" if rtype in ("float", "double") else "i"


class _Accumulation:
    """An accumulation (acc, map, combine or prefer, identity) for one dtype: C text."""

    def __init__(self, r, dtype, prefix):
        self.r = r
        self.dtype = dtype
        self.sfx, self.st, self.vt, load = DTYPES[dtype]
        self.load = load.replace("{v}", "{}")
        self.key = f"{r.name}_{self.sfx}"
        self.prefix = prefix                                  # ptl_red / ptl_scan
        self.is_prefer = bool(r.prefer)
        self.index = r.index
        self.record = bool(r.fields)
        where = f"{r.where}, {dtype}"

        def fail(msg):
            return CodegenError(f"{where}: {msg}")
        self.fail = fail
        if self.record:
            self.acc_c = f"{prefix}_acc_{r.name}"
            self.acc_t = "record"
            floating = any(t == "double" for _, t in r.fields)
            self.x_t = "double" if floating else _VALUE_TYPE[self.vt]
        else:
            t = _pick(r.acc, dtype)
            self.acc_t = _VALUE_TYPE[self.vt] if t == "value" else t
            self.acc_c = _C_TYPE[self.acc_t]
            self.x_t = self.acc_t if self.acc_t in ("float", "double") else _VALUE_TYPE[self.vt]
        self.x_c = _C_TYPE[self.x_t]
        self.aux_name = r.aux_in[0] if getattr(r, "aux_in", ()) else ""
        self.arg = getattr(r, "arg", "")

    # names the expressions see -------------------------------------------------------
    def ab_env(self):
        if self.record:
            env = {}
            for f, t in self.r.fields:
                env[f"a__{f}"] = (f"a.{f}", t)
                env[f"b__{f}"] = (f"b.{f}", t)
            return env
        return {"a": ("a", self.acc_t), "b": ("b", self.acc_t)}

    def map_env(self):
        env = {"x": ("x", self.x_t)}
        if self.arg:
            env[self.arg] = ("parg", "double")
        if self.aux_name:
            env[self.aux_name] = ("auxv", "double")
        return env

    def _value(self, exprs, env, what):
        """C statements returning the accumulator built from per-field (or one) expressions."""
        picked = _pick(exprs, self.dtype)
        if self.record:
            parts = [f"{self.acc_c} r_;"]
            for f, e in picked:
                text, _ = emit(e.tree, env, self.fail, f"{what}.{f}")
                ftype = dict(self.r.fields)[f]
                parts.append(f"r_.{f} = ({_C_TYPE[ftype]})({text});")
            parts.append("return r_;")
            return " ".join(parts)
        text, _ = emit(picked.tree, env, self.fail, what)
        return f"return ({self.acc_c})({text});"

    def identity_body(self):
        return self._value(self.r.identity, {}, "identity") if self.r.identity else None

    def map_body(self):
        return self._value(self.r.map, self.map_env(), "map")

    def combine_body(self):
        return self._value(self.r.combine, self.ab_env(), "combine") if self.r.combine else None

    def prefer_body(self):
        if not self.r.prefer:
            return None
        text, _ = emit(_pick(self.r.prefer, self.dtype).tree, self.ab_env(), self.fail, "prefer")
        return f"return {text};"

    @property
    def acc_bytes(self):
        """Bytes per column of the generic tile: accumulators, then indices, then aux values
        (each array starts at a multiple of 8 bytes per column)."""
        return 8 * (self.acc_words + int(self.index) + int(bool(self.aux_name)))

    @property
    def acc_words(self):
        if self.record:
            return len(self.r.fields)
        return 1

    # CUDA shuffles: one per field
    def shfl(self, var, d):
        if self.record:
            parts = [f"{self.acc_c} o_;"]
            for f, _t in self.r.fields:
                parts.append(f"o_.{f} = __shfl_down_sync(0xffffffffu, {var}.{f}, {d});")
            parts.append("return o_;")
            return " ".join(parts)
        return f"return __shfl_down_sync(0xffffffffu, {var}, {d});"


class ReductionInstance:
    """One reduction for one dtype: its accumulation (possibly another reduction's), the
    finish, the declared output dtype and fast paths."""

    def __init__(self, r, owner, dtype):
        self.r = r
        self.owner = owner
        self.dtype = dtype
        self.code = f"R_{r.name.upper()}"
        self.acc = _Accumulation(owner, dtype, "ptl_red")
        self.sfx = self.acc.sfx
        self.key = f"{r.name}_{self.sfx}"
        out = dict(r.out)[dtype]
        self.out_dtype = dtype if out == "input" else out
        self.out_code = PTL_CODES[self.out_dtype]
        self.out_st = DTYPES[self.out_dtype][1]
        acc = self.acc
        env = {"n": ("n", "int64")}
        env.update({k: v for k, v in acc.ab_env().items() if k == "a" or k.startswith("a__")})
        if owner.index:
            env["index"] = ("index", "int64")
        if r.arg:
            env[r.arg] = ("parg", "double")
        if acc.aux_name:
            env[acc.aux_name] = ("auxv", "double")
        fail = acc.fail
        self.finish_text, self.rtype = emit(_pick(r.finish, dtype).tree, env, fail, "finish")
        self.rtype_c = _C_TYPE[self.rtype]
        self.store_cls = _store_class(self.rtype)
        self.typed_store = _store(self.out_dtype, self.rtype, "v")
        self.aux_text = self.aux_t = None
        self.aux_dtype = ""
        if r.aux_out:
            self.aux_text, self.aux_t = emit(r.aux_out[0].tree, env, fail, "aux_out")
            self.aux_c = _C_TYPE[self.aux_t]
            self.aux_st = DTYPES[r.aux_out[1] or dtype][1]
            self.aux_dtype = r.aux_out[1] or dtype
            self.aux_store_cls = _store_class(self.aux_t)
            self.aux_typed_store = _store(self.aux_dtype, self.aux_t, "w")
            self.aux_code = PTL_CODES[self.aux_dtype]
        self.aux_required = PTL_CODES[r.aux_out[1]] if r.aux_out and r.aux_out[1] else "-1"
        # the tile of the CUDA kernels' aux pointer: the aux output's dtype, or the input's
        cu_aux = self.aux_dtype or dtype
        self.cu_aux_st = DTYPES[cu_aux][1]
        self.cu_aux_load = DTYPES[cu_aux][3].replace("{v}", "{}")
        if acc.aux_name:
            self.aux_load_text, _ = emit(owner.aux_in[1].tree, {"aux": ("aux", "double")}, fail, "aux_in")
        self.fast_row = dict(owner.fast_row).get(dtype)
        self.fast_col = dict(owner.fast_col).get(dtype)
        flags = []
        if owner.prefer:
            flags.append("PTL_RED_NO_IDENTITY")
        if acc.aux_name:
            flags.append("PTL_RED_AUX_IN")
        if r.aux_out:
            flags.append("PTL_RED_AUX_OUT")
        self.flags = " | ".join(flags) or "0"

    @property
    def owns_accumulation(self):
        return self.r is self.owner


class ScanInstance:
    def __init__(self, s, dtype):
        self.s = s
        self.dtype = dtype
        self.acc = _Accumulation(s, dtype, "ptl_scan")
        self.sfx = self.acc.sfx
        self.key = f"{s.name}_{self.sfx}"
        self.store = _store(dtype, self.acc.acc_t, "{}")


# --- rendering --------------------------------------------------------------------------------

class _View:
    """What the templates see."""

    def __init__(self, reds, scans):
        by_name = {r.name: r for r in reds}
        self.reductions = reds
        self.scans = scans
        self.instances = []            # every (reduction, dtype)
        self.accumulations = []        # the ReductionInstance that owns each accumulation
        for r in reds:
            for d in r.dtypes:
                inst = ReductionInstance(r, owner_of(r, by_name), d)
                self.instances.append(inst)
                if inst.owns_accumulation:
                    self.accumulations.append(inst)
        self.scan_instances = [ScanInstance(s, d) for s in scans for d in s.dtypes]
        self.records = [r for r in reds if r.fields]
        self.dtypes = ALL_DTYPES
        self.dtype_info = DTYPES
        self.ptl_codes = PTL_CODES
        # per reduction: {dtype: instance}
        self.table = {r.name: {i.dtype: i for i in self.instances if i.r is r} for r in reds}
        self.scan_table = {s.name: {i.dtype: i for i in self.scan_instances if i.s is s} for s in scans}
        self.fast_rows = [i for i in self.accumulations if i.fast_row]
        self.fast_cols = sorted({i.fast_col for i in self.accumulations if i.fast_col})

    @staticmethod
    def special_cond(value):
        if value == float("inf"):
            return "arg == PTL_INF_D"
        if value == float("-inf"):
            return "arg == -PTL_INF_D"
        return f"arg == {value!r}"

    def python_table(self):
        """name, dtype codes, {in code: out code}, aux dtype code (-1: the input's; None: no
        aux), flags, special ((value, code), ...) -- per reduction code."""
        rows = []
        codes = {r.name: i for i, r in enumerate(self.reductions)}
        for r in self.reductions:
            insts = self.table[r.name]
            out = {DTYPE_CODES[d]: DTYPE_CODES[i.out_dtype] for d, i in insts.items()}
            first = next(iter(insts.values()))
            aux = None
            if r.aux_out:
                aux = DTYPE_CODES[r.aux_out[1]] if r.aux_out[1] else -1
            elif first.acc.aux_name:
                aux = -1
            rows.append((r.name, tuple(DTYPE_CODES[d] for d in r.dtypes), out, aux,
                         bool(first.owner.prefer), bool(first.acc.aux_name), bool(r.aux_out),
                         tuple((v, codes[t]) for v, t in r.special)))
        return rows


def _pyrepr(value):
    """repr, with infinities spelled as the generated module's INF."""
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return "INF" if value > 0 else "-INF"
    if isinstance(value, tuple):
        inner = ", ".join(_pyrepr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_pyrepr(k)}: {_pyrepr(v)}" for k, v in value.items()) + "}"
    return repr(value)


def render(env, header, ops_path):
    """{relative path: text} of the generated reduction files."""
    reds, scans = load_reductions(ops_path)
    view = _View(reds, scans)
    ctx = dict(header=header, v=view)
    env = env.overlay()
    env.filters["pyrepr"] = _pyrepr
    return {
        "generated/reductions.h": env.get_template("reductions.h.j2").render(**ctx),
        "generated/reductions.c": env.get_template("reductions.c.j2").render(**ctx),
        "generated/reduce.cu": env.get_template("reduce.cu.j2").render(**ctx),
        "generated/reductions.py": env.get_template("reductions.py.j2").render(**ctx),
    }
