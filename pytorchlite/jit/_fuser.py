"""The JIT's pointwise fuser: a group of pointwise nodes becomes one generated C kernel.

A `FusionSpec` names the group: the dtypes of its tensor inputs, its nodes (ops.yaml
pointwise operators with their arguments as references) and the nodes it returns.
`compile_group(spec)` turns it into a `FusedKernel` that runs the whole group in one pass
over memory, with eager's broadcasting, type promotion and values.

Where the pieces come from:

* the expressions: `generated/fuser_ops.py`, written by codegen from the same ops.yaml
  bodies (and the same `codegen/cexpr.py` emitter) as the eager C loops, one C expression
  per operator and dtype; so a node computes bit for bit what the eager kernel computes
  when it evaluates the same expression in the same dtype;
* the iteration: the eager kernels' runtime (`ptl_run_pointwise`, `ptl_run_contiguous` in
  kernels/runtime.c) coalesces dimensions and splits the work over OpenMP threads; the
  generated loop function sees one run of elements with a byte stride per operand;
* the compiler: codegen/build.py's toolchain (flags, target clones), found beside the
  package as pytorchlite.env finds it; the library is cached on disk by a hash of its
  source (PYTORCHLITE_JIT_CACHE) and in memory by spec.

The generated loop works in tiles of TILE elements (small enough that every intermediate
stays in L1): each node is its own loop over the tile, reading `restrict` arrays (an input
read in place when it is contiguous, else gathered into a tile buffer), which GCC
vectorises; float32 exp/log/tanh/sigmoid use the branch-free ptl_vexpf family of
kernels/ptl_common.h, as the eager loops do. One loop holding the whole chain is slower
for transcendental chains (REFERENCE.md section 10): its dependency chain is long.
"""

from __future__ import annotations

import math
import os
import re
import threading
from dataclasses import dataclass

from pytorchlite import _core, _dtype as D
from pytorchlite._device import CPU as _CPU
from pytorchlite._promotion import result_type_of
from pytorchlite._storage import Storage

_alloc = Storage.allocate
_make = _core.make
from pytorchlite.generated import fuser_ops as _table

__all__ = ["FusionSpec", "FusedKernel", "can_fuse", "compile_group", "cache_dir", "cuda_source"]

TILE = 512
# the iterator (kernels/runtime.c) takes at most 8 operands: outputs plus inputs
MAX_OPERANDS = 8
CACHE_ENV = "PYTORCHLITE_JIT_CACHE"

# what the process has done, for tests and logging: kernels compiled by gcc, libraries
# loaded from the disk cache
stats = {"compiled": 0, "loaded": 0}


@dataclass(frozen=True)
class FusionSpec:
    """A group of pointwise nodes (see the module docstring).

    inputs:  per tensor input, its dtype (shapes are not part of the spec);
    nodes:   per node, (op_name, args), args in the operator's schema order, each
             ("in", i), ("node", j) with j earlier, or ("const", Python number or bool);
    outputs: the node indices whose results the group returns.
    """
    inputs: tuple
    nodes: tuple
    outputs: tuple


def can_fuse(op_name):
    """Whether `op_name` is an ops.yaml pointwise operator the fuser can put in a group."""
    return op_name in _table.OPS


def cache_dir():
    """Where fused libraries are kept: $PYTORCHLITE_JIT_CACHE, else pytorchlite/jit under
    the user's cache folder ($XDG_CACHE_HOME or ~/.cache)."""
    d = os.environ.get(CACHE_ENV)
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pytorchlite", "jit")


# --- the plan: each node's dtypes, as eager would pick them -----------------------------------

@dataclass(frozen=True)
class _Node:
    op: str
    args: tuple          # the spec's refs
    common: object       # the dtype the expression is evaluated in
    out: object          # the dtype of its result
    zero_dim: bool       # its result is 0-d when the inputs it depends on all are
    expr: str            # the C expression, {iK}/{sK} still to fill
    divisor: int         # index into args of the divisor checked for zero, or -1


def _fail(exc, j, op, msg):
    return exc(f"fused node {j} ({op}): {msg}")


_DISPATCH = {}


def _pointwise_op(name):
    """The dispatch entry (a PointwiseOp) of a pointwise operator, for its argument check."""
    if not _DISPATCH:
        from pytorchlite._ops import PointwiseOp
        from pytorchlite.generated import dispatch
        for v in vars(dispatch).values():
            if isinstance(v, PointwiseOp):
                _DISPATCH[v.name] = v
    return _DISPATCH[name]


def _check_spec(spec):
    if not isinstance(spec, FusionSpec):
        raise TypeError(f"compile_group(): argument 'spec' must be FusionSpec, not {type(spec).__name__}")
    for i, d in enumerate(spec.inputs):
        if not isinstance(d, D.dtype):
            raise TypeError(f"FusionSpec: inputs[{i}] must be a pytorchlite.dtype, not {type(d).__name__}")
    if not spec.nodes:
        raise ValueError("FusionSpec: a group needs at least one node")
    if not spec.outputs:
        raise ValueError("FusionSpec: a group needs at least one output")
    for k, o in enumerate(spec.outputs):
        if type(o) is not int or not 0 <= o < len(spec.nodes):
            raise ValueError(f"FusionSpec: outputs[{k}] = {o!r} is not a node index (0 to {len(spec.nodes) - 1})")
    if len(spec.outputs) + len(spec.inputs) > MAX_OPERANDS:
        raise ValueError(f"FusionSpec: {len(spec.inputs)} inputs and {len(spec.outputs)} outputs; a fused kernel "
                         f"takes at most {MAX_OPERANDS} tensors in all (split the group)")
    for j, node in enumerate(spec.nodes):
        if not (isinstance(node, tuple) and len(node) == 2 and isinstance(node[0], str) and isinstance(node[1], tuple)):
            raise ValueError(f"fused node {j}: expected (op_name, args tuple), got {node!r}")
        op, args = node
        if op not in _table.OPS:
            raise ValueError(f"fused node {j} ({op}): not a pointwise operator the fuser can compile "
                             "(ops.yaml `pointwise:` operators only)")
        _promo, ins, scalars, *_ = _table.OPS[op]
        if len(args) != len(ins) + len(scalars):
            names = ", ".join(ins + scalars)
            raise ValueError(f"fused node {j} ({op}): expected {len(ins) + len(scalars)} arguments ({names}), "
                             f"got {len(args)}")
        for a, ref in enumerate(args):
            name = (ins + scalars)[a]
            if not (isinstance(ref, tuple) and len(ref) == 2 and ref[0] in ("in", "node", "const")):
                raise ValueError(f"fused node {j} ({op}): argument '{name}' must be ('in', i), ('node', j) or "
                                 f"('const', number), got {ref!r}")
            kind, v = ref
            if kind == "const":
                if type(v) not in (bool, int, float):
                    raise TypeError(f"fused node {j} ({op}): constant argument '{name}' must be a Python number "
                                    f"or bool, not {type(v).__name__}")
                if type(v) is int and not -2 ** 63 <= v < 2 ** 63:
                    raise ValueError(f"fused node {j} ({op}): constant argument '{name}' = {v} does not fit int64")
            elif a >= len(ins):
                raise ValueError(f"fused node {j} ({op}): argument '{name}' is a Scalar and must be ('const', "
                                 f"number), got {ref!r}")
            elif kind == "in" and (type(v) is not int or not 0 <= v < len(spec.inputs)):
                raise ValueError(f"fused node {j} ({op}): argument '{name}' refers to input {v!r}; the group has "
                                 f"{len(spec.inputs)}")
            elif kind == "node" and (type(v) is not int or not 0 <= v < j):
                raise ValueError(f"fused node {j} ({op}): argument '{name}' refers to node {v!r}; only earlier "
                                 f"nodes (0 to {j - 1}) can be used")


def _stand_in(dtype, zero_dim):
    return _core.empty(() if zero_dim else (0,), dtype, _CPU)


def _plan(spec, zero_dims):
    """Each node's dtypes for inputs that are 0-d where `zero_dims` says (PyTorch's
    promotion ranks tensors with dimensions above 0-d ones above Python numbers)."""
    default = D.get_default_dtype()
    nodes = []
    for j, (op, args) in enumerate(spec.nodes):
        promo, ins, scalars, int_div, check, exprs = _table.OPS[op]
        operands = []
        for ref in args[:len(ins)]:
            kind, v = ref
            if kind == "in":
                operands.append(_stand_in(spec.inputs[v], zero_dims[v]))
            elif kind == "node":
                operands.append(_stand_in(nodes[v].out, nodes[v].zero_dim))
            else:
                operands.append(v)
        if not any(isinstance(x, _core.TensorBase) for x in operands):
            raise ValueError(f"fused node {j} ({op}): needs at least one tensor argument (constants alone are "
                             "folded before fusion)")
        if promo == "where":
            cond = operands[0]
            if not isinstance(cond, _core.TensorBase) or cond._dtype is not D.bool:
                got = cond._dtype if isinstance(cond, _core.TensorBase) else type(cond).__name__
                raise TypeError(f"fused node {j} ({op}): argument 'condition' must be a bool tensor, got {got}")
            common = result_type_of(operands[1:])
        else:
            common = result_type_of(operands)
        if promo == "int_to_float" and not common.is_floating_point:
            common = default
        out = D.bool if promo == "bool_out" else common
        if common.name not in exprs:
            raise TypeError(f"fused node {j} ({op}): dtype {common} is not accepted (the operator takes "
                            f"{', '.join(exprs)})")
        if check:
            from pytorchlite._kernels import pointwise_checks
            fn = getattr(pointwise_checks, check.rpartition(".")[2])
            try:
                fn(_pointwise_op(op), operands, [v for _k, v in args[len(ins):]], common)
            except (RuntimeError, NotImplementedError) as e:
                raise _fail(TypeError, j, op, str(e)) from None
        zero = all(not x._shape if isinstance(x, _core.TensorBase) else True for x in operands)
        divisor = len(ins) - 1 if int_div and not common.is_floating_point and common is not D.bool else -1
        nodes.append(_Node(op, args, common, out, zero, exprs[common.name], divisor))
    return tuple(nodes)


# --- the C source --------------------------------------------------------------------------------

def _ctype(dt):
    return _table.C_TYPES[dt.name][0]


def _storage(dt):
    return _table.C_TYPES[dt.name][2]


def _is_half(dt):
    return dt.name in ("float16", "bfloat16")


def _round_half(dt, expr):
    """A float value rounded to float16/bfloat16, as storing and loading it would."""
    if dt.name == "float16":
        return f"ptl_h2f(ptl_f2h({expr}))"
    return f"ptl_bf2f(ptl_f2bf({expr}))"


def _convert(src, dst, expr):
    """A value of compute type src (already rounded to src) as dtype dst, as eager's cast."""
    if src is dst:
        return expr
    if dst is D.bool:
        return f"(({expr}) != 0)"
    c = f"(({_ctype(dst)})({expr}))"
    return _round_half(dst, c) if _is_half(dst) else c


def _load(dt, addr):
    raw = f"*(const {_storage(dt)} *)({addr})"
    if dt.name == "float16":
        return f"ptl_h2f({raw})"
    if dt.name == "bfloat16":
        return f"ptl_bf2f({raw})"
    if dt is D.bool:
        return f"({raw} != 0)"
    return raw


def _store(dt, addr, expr):
    s = _storage(dt)
    if dt.name == "float16":
        return f"*({s} *)({addr}) = ptl_f2h({expr})"
    if dt.name == "bfloat16":
        return f"*({s} *)({addr}) = ptl_f2bf({expr})"
    if dt is D.bool:
        return f"*({s} *)({addr}) = (uint8_t)({expr})"
    return f"*({s} *)({addr}) = {expr}"


def _double_literal(v):
    v = float(v)
    if v != v:
        return "PTL_NAN_D"
    if math.isinf(v):
        return "PTL_INF_D" if v > 0 else "(-PTL_INF_D)"
    return repr(v)


def _int_literal(v):
    v = int(v)
    return "(-9223372036854775807LL - 1)" if v == -2 ** 63 else f"{v}LL"


def _const(dt, v):
    """A Python number as the operand eager makes of it: a 0-d tensor of dtype dt."""
    if dt is D.bool:
        return "((bool)1)" if v else "((bool)0)"
    if dt.is_floating_point:
        c = f"(({_ctype(dt)}){_double_literal(v)})"
        return _round_half(dt, c) if _is_half(dt) else c
    return f"(({_ctype(dt)}){_int_literal(v)})"


def _scalar(dt, v):
    """A Scalar argument (alpha, ...) as the eager kernel loads it from its ptl_scalar."""
    if dt is D.bool:
        return "((bool)1)" if v else "((bool)0)"
    if dt.is_floating_point:
        return f"(({_ctype(dt)}){_double_literal(v)})"
    return f"(({_ctype(dt)}){_int_literal(v)})"


def _operand_dtypes(spec, nodes, ref):
    kind, v = ref
    if kind == "in":
        return spec.inputs[v]
    if kind == "node":
        return nodes[v].out
    return None


def _node_fill(spec, nodes, j, value_of):
    """The C text of node j's arguments in its computation dtype, by placeholder."""
    node = nodes[j]
    _promo, ins, scalars, *_ = _table.OPS[node.op]
    fill = {}
    for a, ref in enumerate(node.args):
        if a < len(ins):
            if ref[0] == "const":
                fill[f"i{a}"] = _const(node.common, ref[1])
            else:
                fill[f"i{a}"] = _convert(_operand_dtypes(spec, nodes, ref), node.common, value_of(ref))
        else:
            fill[f"s{a - len(ins)}"] = _scalar(node.common, ref[1])
    return fill


def _node_expr(spec, nodes, j, value_of, template=None):
    """Node j's expression over per-element values: value_of(ref) is the C text of a
    tensor argument's value (in its own dtype); constants and scalars are literals."""
    node = nodes[j]
    expr = (template or node.expr).format(**_node_fill(spec, nodes, j, value_of))
    if node.out is D.bool:
        return f"(({expr}) != 0)"
    if _is_half(node.out):
        return _round_half(node.out, f"(float)({expr})")
    return f"({_ctype(node.out)})({expr})"


# Calls that cost tens of cycles (libm, the polynomial exp/log/tanh): a node with one gets
# a loop of its own over the tile; runs of cheap nodes share one loop, their intermediates
# kept in registers (per-node loops would load and store every intermediate: twice the
# time of one loop for add/mul chains, REFERENCE.md section 10)
_HEAVY = re.compile(r"\bptl_(exp|exp2|expm1|log|log2|log10|log1p|sin|cos|tan|asin|acos|atan|sinh|cosh|tanh|asinh|"
                    r"acosh|atanh|sigmoid|erf|erfc|erfinv|lgamma|digamma|pow|atan2|hypot|logaddexp|logaddexp2|"
                    r"xlogy|round_decimals|nextafter|fmod|remainder|floordiv|truncdiv)_")


# float32 sin/cos (and float16/bfloat16, computed in float32): vectorisable versions
_VECTOR_TRIG = {"ptl_sin_f32({i0})": "ptl_vsin_f32({i0})", "ptl_cos_f32({i0})": "ptl_vcos_f32({i0})"}


def _stages(nodes):
    """The nodes split into loops: each heavy node alone, runs of cheap nodes together."""
    stages = []
    closed = True
    for j, node in enumerate(nodes):
        heavy = bool(_HEAVY.search(node.expr))
        if heavy or closed:
            stages.append([])
        stages[-1].append(j)
        closed = heavy
    return stages


def _product(expr):
    """Whether a body's C text (codegen/cexpr.py's fully parenthesised form) is a product
    at the top, possibly negated: the value a following add could contract with."""
    while expr.startswith("(-") and expr.endswith(")"):
        expr = expr[2:-1]
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    for k, ch in enumerate(expr[1:-1]):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False     # the first parenthesis closes early: not one group
        elif depth == 0 and ch == "*" and expr[k:k + 3] == " * ":
            return True
    return False


def render_c(spec, nodes):
    """The C source of a group: `ptl_fused_s` (descriptors, any strides) and `ptl_fused_c`
    (contiguous operands of one shape), both over one tiled loop function."""
    nout, nin = len(spec.outputs), len(spec.inputs)
    out_of = {}                     # node -> its first output slot
    for k, o in enumerate(spec.outputs):
        out_of.setdefault(o, k)
    used_in = sorted({ref[1] for _op, args in spec.nodes for ref in args if ref[0] == "in"})
    stages = _stages(nodes)
    stage_of = {j: s for s, js in enumerate(stages) for j in js}
    # a node's value leaves its loop (as a tile array) when an output or a later loop reads it
    stored = set(spec.outputs)
    for j, (_op, args) in enumerate(spec.nodes):
        stored |= {ref[1] for ref in args if ref[0] == "node" and stage_of[ref[1]] != stage_of[j]}
    # GCC contracts a product and a sum into one fused multiply-add across statements (GCC
    # 12 has no -ffp-contract=on), rounding once where eager's two kernels round twice;
    # it never does so for a product that is also stored (a use that is not an add). So a
    # floating node whose value is a product and is read in its own loop is also written
    # to a tile array, which an empty asm statement after the loop reads (so the store is
    # never dead), keeping eager's numbers bit for bit.
    keep = set()
    for j, (_op, args) in enumerate(spec.nodes):
        for ref in args:
            if ref[0] == "node" and stage_of[ref[1]] == stage_of[j] and ref[1] not in stored and \
                    nodes[ref[1]].common.is_floating_point and _product(nodes[ref[1]].expr):
                keep.add(ref[1])
    stored |= keep
    L = [f"/* fused pointwise group (pytorchlite/jit/_fuser.py): "
         f"{'; '.join(f'{j}: {n.op} {n.common}->{n.out}' for j, n in enumerate(nodes))} */",
         '#include "ptl_jit.h"', "", f"#define TILE {TILE}", "",
         "typedef struct { int zero_div; } fused_state;", ""]
    # one function per loop, over restrict arrays, which GCC vectorises
    calls = []
    for s, js in enumerate(stages):
        reads = []
        for j in js:
            for ref in nodes[j].args:
                if (ref[0] == "in" or (ref[0] == "node" and stage_of[ref[1]] != s)) and ref not in reads:
                    reads.append(ref)
        writes = [j for j in js if j in stored]
        divides = any(nodes[j].divisor >= 0 for j in js)
        names = {ref: (f"x{ref[1]}" if ref[0] == "in" else f"y{ref[1]}") for ref in reads}
        params = [f"{_ctype(nodes[j].out)} *restrict y{j}" for j in writes]
        params += [f"const {_ctype(_operand_dtypes(spec, nodes, ref))} *restrict {names[ref]}" for ref in reads]
        if divides:
            params.append("int *zero_div")

        def value(ref, _names=names):
            return f"{_names[ref]}[i]" if ref in _names else f"v{ref[1]}"

        body, fixups = [], []
        for j in js:
            vector = _VECTOR_TRIG.get(nodes[j].expr)
            if vector and j in writes:
                # the vectorisable sin/cos of kernels/ptl_jit.h, and libm (eager's) where
                # its reduction does not reach: large arguments, inf, nan
                body.append(f"        const {_ctype(nodes[j].out)} v{j} = {_node_expr(spec, nodes, j, value, vector)};")
                arg = _node_fill(spec, nodes, j, value)["i0"]
                fixups += ["    for (int64_t i = 0; i < m; i++)",
                           f"        if (!(fabsf({arg}) <= PTL_VTRIG_MAX)) y{j}[i] = {_node_expr(spec, nodes, j, value)};"]
                continue
            body.append(f"        const {_ctype(nodes[j].out)} v{j} = {_node_expr(spec, nodes, j, value)};")
            if nodes[j].divisor >= 0:
                ref = nodes[j].args[nodes[j].divisor]
                d = _const(nodes[j].common, ref[1]) if ref[0] == "const" else value(ref)
                body.append(f"        z |= ({d}) == 0;")
        body += [f"        y{j}[i] = v{j};" for j in writes]
        L += [f"static inline __attribute__((always_inline)) void stage{s}(int64_t m{''.join(', ' + p for p in params)}) {{"]
        if divides:
            L.append("    int z = 0;")
        L += ["    for (int64_t i = 0; i < m; i++) {"] + body + ["    }"] + fixups
        if divides:
            L.append("    if (z && m) *zero_div = 1;")
        L += ["}", ""]
        calls.append((s, writes, reads, divides))
    L += ["PTL_HOT static void fused_loop(char **data, const int64_t *st, int64_t n, const ptl_scalar *sc) {",
          "    fused_state *state = (fused_state *)(void *)sc;"]
    for i in used_in:
        dt = spec.inputs[i]
        L += [f"    {_ctype(dt)} bi{i}[TILE];", f"    int filled{i} = 0;"]
    for j in sorted(stored):
        L.append(f"    {_ctype(nodes[j].out)} bn{j}[TILE];")
    L += ["    for (int64_t base = 0; base < n; base += TILE) {",
          "        const int64_t m = n - base < TILE ? n - base : TILE;"]
    for i in used_in:
        dt, k = spec.inputs[i], nout + i
        ct = _ctype(dt)
        direct = ct == _storage(dt)
        L.append(f"        const {ct} *x{i};")
        cond = f"st[{k}] == (int64_t)sizeof({ct})"
        if direct:
            L.append(f"        if ({cond}) x{i} = (const {ct} *)(void *)data[{k}] + base;")
            L.append(f"        else if (st[{k}] == 0) {{")
        else:
            L.append(f"        if (st[{k}] == 0) {{")
        L += [f"            if (!filled{i}) {{",
              f"                const {ct} v = {_load(dt, f'data[{k}]')};",
              f"                for (int64_t i = 0; i < TILE; i++) bi{i}[i] = v;",
              f"                filled{i} = 1;", "            }", f"            x{i} = bi{i};",
              "        } else {",
              f"            const char *p = data[{k}] + base * st[{k}];",
              f"            for (int64_t i = 0; i < m; i++) bi{i}[i] = {_load(dt, f'p + i * st[{k}]')};",
              f"            x{i} = bi{i};", "        }"]
    for j in sorted(stored):
        ct = _ctype(nodes[j].out)
        k = out_of.get(j)
        if k is not None and ct == _storage(nodes[j].out):
            L.append(f"        {ct} *y{j} = st[{k}] == (int64_t)sizeof({ct}) ? ({ct} *)(void *)data[{k}] + base "
                     f": bn{j};")
        else:
            L.append(f"        {ct} *y{j} = bn{j};")
    for s, writes, reads, divides in calls:
        args = [f"y{j}" for j in writes] + [f"x{ref[1]}" if ref[0] == "in" else f"y{ref[1]}" for ref in reads]
        if divides:
            args.append("&state->zero_div")
        L.append(f"        stage{s}(m{''.join(', ' + a for a in args)});")
    for k, o in enumerate(spec.outputs):
        dt = nodes[o].out
        L += [f"        if (y{o} != ({_ctype(dt)} *)(void *)data[{k}] + base) {{",
              f"            char *p = data[{k}] + base * st[{k}];",
              f"            for (int64_t i = 0; i < m; i++) {_store(dt, f'p + i * st[{k}]', f'y{o}[i]')};",
              "        }"]
    L.append("    }")
    if keep:
        escaped = ", ".join('"r"(bn%d)' % j for j in sorted(keep))
        L.append('    __asm__ volatile("" : : %s : "memory");' % escaped)
    L += ["}", ""]
    nt = nout + nin
    L += ["int ptl_fused_s(int ntensors, const void *ts) {",
          "    fused_state state = {0};",
          "    int status = ptl_run_pointwise(ntensors, (const ptl_tensor *)ts, fused_loop, "
          "(const ptl_scalar *)(void *)&state);",
          "    return status ? status : (state.zero_div ? -1 : 0);", "}", "",
          "int ptl_fused_c(int64_t n" + "".join(f", intptr_t p{k}" for k in range(nt)) + ") {",
          "    fused_state state = {0};",
          f"    char *data[{nt}] = {{" + ", ".join(f"(char *)p{k}" for k in range(nt)) + "};",
          f"    const int64_t sizes[{nt}] = {{"
          + ", ".join([f"(int64_t)sizeof({_storage(nodes[o].out)})" for o in spec.outputs]
                      + [f"(int64_t)sizeof({_storage(d)})" for d in spec.inputs]) + "};",
          f"    int status = ptl_run_contiguous({nt}, data, sizes, n, fused_loop, "
          "(const ptl_scalar *)(void *)&state);",
          "    return status ? status : (state.zero_div ? -1 : 0);", "}", ""]
    return "\n".join(L)


CDEF = """
int ptl_fused_s(int ntensors, const void *ts);
int ptl_fused_c(int64_t n%s);
"""


# --- the CUDA source -------------------------------------------------------------------------------

def _cu_load(dt, element):
    if dt.name == "float16":
        return f"ptl_h2f({element})"
    if dt.name == "bfloat16":
        return f"ptl_bf2f({element})"
    if dt is D.bool:
        return f"({element} != 0)"
    return element


def _cu_store(dt, expr):
    if dt.name == "float16":
        return f"ptl_f2h((float)({expr}))"
    if dt.name == "bfloat16":
        return f"ptl_f2bf((float)({expr}))"
    if dt is D.bool:
        return f"(uint8_t)(({expr}) != 0)"
    return f"({_storage(dt)})({expr})"


def cuda_source(spec, name="ptl_cu_fused"):
    """The CUDA source of a group (for inputs with dimensions): one grid-stride kernel
    `<name>_s64` over the broadcast shape (ptl_iter64 offsets, outputs first) that keeps
    every node's value in registers, from the same expressions as the C kernel (the math
    functions are ptl_common.h's on both sides). Compiled by pytorchlite/cuda/_nvrtc.py."""
    _check_spec(spec)
    nodes = _plan(spec, (False,) * len(spec.inputs))
    nout, nin = len(spec.outputs), len(spec.inputs)
    nt = nout + nin
    params = [f"{_storage(nodes[o].out)} *o{k}" for k, o in enumerate(spec.outputs)]
    params += [f"const {_storage(d)} *p{i}" for i, d in enumerate(spec.inputs)]
    L = ['#include "ptl_cuda.cuh"', "",
         f"extern \"C\" __global__ void __launch_bounds__(256) {name}_s64(int64_t n, {', '.join(params)}, "
         f"const ptl_iter64<{nt}> it, int *zero_div) {{",
         "    PTL_GRID_LOOP(int64_t, i, n) {",
         f"        int64_t off[{nt}];",
         f"        ptl_offsets<{nt}>(it, i, off);"]
    used = sorted({ref[1] for _op, args in spec.nodes for ref in args if ref[0] == "in"})
    for i in used:
        dt = spec.inputs[i]
        L.append(f"        const {_ctype(dt)} x{i} = {_cu_load(dt, f'p{i}[off[{nout + i}]]')};")
    for j, node in enumerate(nodes):
        if node.divisor >= 0:
            ref = node.args[node.divisor]
            v = _const(node.common, ref[1]) if ref[0] == "const" else (f"x{ref[1]}" if ref[0] == "in" else f"y{ref[1]}")
            L.append(f"        if ({v} == 0) *zero_div = 1;")
        expr = _node_expr(spec, nodes, j, lambda ref: f"x{ref[1]}" if ref[0] == "in" else f"y{ref[1]}")
        L.append(f"        const {_ctype(node.out)} y{j} = {expr};")
    for k, o in enumerate(spec.outputs):
        L.append(f"        o{k}[off[{k}]] = {_cu_store(nodes[o].out, f'y{o}')};")
    L += ["    }", "}", ""]
    return "\n".join(L)


# --- compiling and loading ---------------------------------------------------------------------------

_BUILD = []


def _build():
    """codegen/build.py of the checkout (loaded by path, as pytorchlite.env does)."""
    if not _BUILD:
        from pytorchlite.env import _load_codegen_build
        b = _load_codegen_build()
        if b is None:
            raise RuntimeError("the JIT fuser compiles C at run time with codegen/build.py's toolchain, which an "
                               "installed wheel does not ship: use a source checkout (pip install -e .)")
        _BUILD.append(b)
    return _BUILD[0]


_LOCK = threading.Lock()
_LIBS = {}        # library path -> cffi lib


def _load_library(source, nt):
    import cffi
    path, compiled = _build().compile_jit(source, cache_dir())
    with _LOCK:
        lib = _LIBS.get(path)
        if lib is None:
            ffi = cffi.FFI()
            ffi.cdef(CDEF % "".join(f", intptr_t p{k}" for k in range(nt)))
            lib = _LIBS[path] = ffi.dlopen(path)
            stats["compiled" if compiled else "loaded"] += 1
    return lib


class FusedKernel:
    """A compiled group: call it with the tensor inputs in spec order; returns a tuple of
    fresh contiguous tensors, one per spec output, with eager's dtypes and values."""

    def __init__(self, spec, device="cpu"):
        self.spec = spec
        self.device = device
        self._nt = len(spec.outputs) + len(spec.inputs)
        self._dims = (False,) * len(spec.inputs)
        nodes = _plan(spec, self._dims)
        self.source = render_c(spec, nodes)
        self._lib = _load_library(self.source, self._nt)
        self._variants = {self._dims: (nodes, self._lib)}
        self._out_dtypes = tuple(nodes[o].out for o in spec.outputs)
        self._geometry = {}

    def __repr__(self):
        return f"<FusedKernel {' -> '.join(op for op, _ in self.spec.nodes)} ({len(self.spec.inputs)} inputs)>"

    def _variant(self, dims):
        v = self._variants.get(dims)
        if v is None:
            nodes = _plan(self.spec, dims)
            base_nodes, base_lib = self._variants[self._dims]
            if [(n.common, n.out) for n in nodes] == [(n.common, n.out) for n in base_nodes]:
                v = (nodes, base_lib)
            else:   # a 0-d input that changes a dtype: a kernel of its own
                v = (nodes, _load_library(render_c(self.spec, nodes), self._nt))
            self._variants[dims] = v
        return v

    def __call__(self, *tensors, out=None):
        # ---- fast path: contiguous CPU tensors of the spec's dtypes and one shape (not
        # 0-d), so the default plan holds; a call is then one allocation per output and one
        # C call, which is what a small group costs
        spec = self.spec
        if out is None and len(tensors) == len(spec.inputs) and tensors:
            shape = tensors[0]._shape
            if shape:
                ptrs = []
                for t, dt in zip(tensors, spec.inputs):
                    if t.__class__ is not _core.Tensor or t._dtype is not dt or t._shape != shape or \
                            t._device is not _CPU or not (t._contig or t.is_contiguous()):
                        break
                    ptrs.append(t._storage.ptr + t._offset * dt.itemsize)
                else:
                    n = 1
                    for s in shape:
                        n *= s
                    stride = tensors[0]._stride
                    outs = []
                    optrs = []
                    for dt in self._out_dtypes:
                        st = _alloc(n * dt.itemsize, _CPU)
                        outs.append(_make(st, shape, stride, 0, dt, None, True))
                        optrs.append(st.ptr)
                    if n:
                        status = self._lib.ptl_fused_c(n, *optrs, *ptrs)
                        if status:
                            self._raise(status)
                    return tuple(outs)
        return self._call_general(tensors, out)

    def _call_general(self, tensors, out):
        spec = self.spec
        if out is not None:
            raise TypeError("FusedKernel(): out= is not supported; the results are fresh tensors")
        if len(tensors) != len(spec.inputs):
            raise TypeError(f"FusedKernel(): expected {len(spec.inputs)} tensor inputs, got {len(tensors)}")
        dims = []
        for i, (t, dt) in enumerate(zip(tensors, spec.inputs)):
            if not isinstance(t, _core.TensorBase):
                raise TypeError(f"FusedKernel(): input {i} must be Tensor, not {type(t).__name__}")
            if t._dtype is not dt:
                raise TypeError(f"FusedKernel(): input {i} must have dtype {dt}, got {t._dtype}")
            if t._device is not _CPU:
                raise RuntimeError(f"FusedKernel(): input {i} is on {t._device}; this kernel runs on the CPU")
            dims.append(not t._shape)
        dims = tuple(dims)
        nodes, lib = self._variants.get(dims) or self._variant(dims)
        key = tuple((t._shape, t._stride) for t in tensors)
        geo = self._geometry.get(key)
        if geo is None:
            geo = self._geometry[key] = self._shapes(tensors, nodes)
        shape, out_shapes = geo
        outs = [_core.empty(s, nodes[o].out, _CPU) for s, o in zip(out_shapes, spec.outputs)]
        if _core.numel(shape):
            descs = _core.descriptors(outs + list(tensors), shape)
            status = lib.ptl_fused_s(self._nt, descs)
            if status:
                self._raise(status)
        return tuple(outs)

    def _shapes(self, tensors, nodes):
        """The broadcast shape of the whole group and of each output node (as eager gives
        each node the broadcast shape of its own arguments)."""
        shapes = []
        for j, (op, args) in enumerate(self.spec.nodes):
            parts = [tensors[v]._shape if k == "in" else shapes[v] for k, v in args if k in ("in", "node")]
            shapes.append(_core.broadcast_shapes(op, parts))
        whole = _core.broadcast_shapes("fused", [t._shape for t in tensors] + shapes)
        if len(self._geometry) >= 64:
            self._geometry.clear()
        return whole, [shapes[o] for o in self.spec.outputs]

    def _raise(self, status):
        if status == -1:
            from pytorchlite._kernels.pointwise import IntegerDivisionByZero
            raise IntegerDivisionByZero("ZeroDivisionError")
        from pytorchlite._C import check
        check(status, "fused kernel")


_KERNELS = {}


def compile_group(spec, device="cpu"):
    """The FusedKernel of `spec` (cached in memory by spec, on disk by source hash)."""
    dev = str(device)
    if dev != "cpu":
        raise NotImplementedError(f"compile_group(): no fused kernels for device '{dev}' yet (CPU only; "
                                  "cuda_source() gives the CUDA source of a group)")
    key = (spec, dev, D.get_default_dtype())
    k = _KERNELS.get(key)
    if k is None:
        _check_spec(spec)
        k = _KERNELS[key] = FusedKernel(spec, dev)
    return k

