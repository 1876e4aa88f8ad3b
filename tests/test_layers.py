"""The import structure of docs/architecture.md, checked by reading the sources (nothing
is imported): no module-level import cycle, core modules never import a backend or the
package facade, and the bottom layer imports nothing above it."""

import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# the bottom layer and the only modules it may import (at any level)
BOTTOM = {"pytorchlite._core", "pytorchlite._C", "pytorchlite._dtype", "pytorchlite._device",
          "pytorchlite._storage", "pytorchlite._backends", "pytorchlite.generated._C", "pytorchlite.generated.abi"}
# backends plug into the device registry; core code never imports them
BACKENDS = ("pytorchlite.cuda", "pytorchlite.multiprocessing")


def _modules():
    mods = {}
    for top, pkg in (("pytorchlite", "pytorchlite"), ("generated", "pytorchlite.generated")):
        base = os.path.join(ROOT, top)
        for d, _, files in os.walk(base):
            for f in files:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(d, f)
                rel = os.path.relpath(path, base)[:-3].replace(os.sep, ".")
                name = pkg if rel == "__init__" else pkg + "." + (rel[:-9] if rel.endswith(".__init__") else rel)
                mods[name] = path
    return mods


MODULES = _modules()


def _is_core(name):
    """Everything below the facade and the libraries built on the public API."""
    return (name.startswith(("pytorchlite._", "pytorchlite.autograd", "pytorchlite.generated"))
            and not name.startswith(BACKENDS))


def _targets(node, module, is_pkg):
    """The pytorchlite modules an import statement loads (a submodule when a name is one)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = module.split(".")
        parts = parts if is_pkg else parts[:-1]
        parts = parts[:len(parts) - (node.level - 1)]
        base = ".".join(parts + ([node.module] if node.module else []))
    out = []
    for a in node.names:
        sub = f"{base}.{a.name}"
        out.append(sub if sub in MODULES else base)
    return out


def _imports(name, module_level_only):
    path = MODULES[name]
    tree = ast.parse(open(path, encoding="utf-8").read())
    is_pkg = path.endswith("__init__.py")
    found = []

    def visit(stmts):
        for n in stmts:
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                found.extend((t, n.lineno) for t in _targets(n, name, is_pkg))
            elif isinstance(n, (ast.If, ast.Try, ast.With)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(n, field, []))
                for h in getattr(n, "handlers", []):
                    visit(h.body)
            elif not module_level_only:
                visit([c for c in ast.iter_child_nodes(n) if isinstance(c, ast.stmt)])

    if module_level_only:
        visit(tree.body)
    else:
        for n in ast.walk(tree):
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                found.extend((t, n.lineno) for t in _targets(n, name, is_pkg))
    return [(t, line) for t, line in found if t.startswith("pytorchlite")]


def _module_graph():
    graph = {}
    for name in MODULES:
        # The facade (pytorchlite/__init__.py) imports everything; the libraries on top
        # (nn, optim, utils, ...) use the public API through it, as user code does, which the
        # facade has finished defining before it imports them. Edges into the facade are
        # therefore not cycles of the layering; core modules may not have them at all
        # (test_core_never_imports_the_facade).
        graph[name] = {t for t, _ in _imports(name, True) if t in MODULES and t != name and t != "pytorchlite"}
    return graph


def _cycles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def test_modules_are_found():
    assert "pytorchlite._core" in MODULES and "pytorchlite.generated.functions" in MODULES, \
        "generated/ is missing: run `python -m codegen`"


def test_no_module_level_import_cycles():
    cycles = _cycles(_module_graph())
    assert not cycles, "module-level import cycles: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_core_never_imports_a_backend():
    bad = [f"{name}:{line} imports {t}" for name in sorted(MODULES) if _is_core(name)
           for t, line in _imports(name, False) if t.startswith(BACKENDS)]
    assert not bad, "core modules import a backend (register it in pytorchlite/_backends.py instead):\n" + \
        "\n".join(bad)


def test_core_never_imports_the_facade():
    bad = [f"{name}:{line}" for name in sorted(MODULES) if _is_core(name)
           for t, line in _imports(name, True) if t == "pytorchlite"]
    assert not bad, "core modules import the pytorchlite facade at module level:\n" + "\n".join(bad)


@pytest.mark.parametrize("name", sorted(BOTTOM - {"pytorchlite.generated._C", "pytorchlite.generated.abi"}))
def test_bottom_layer_imports_nothing_above_it(name):
    above = sorted({f"{t} (line {line})" for t, line in _imports(name, False) if t not in BOTTOM})
    assert not above, f"{name} is in the bottom layer but imports " + ", ".join(above)


def test_a_cycle_is_detected():
    """The checker itself: a planted cycle is found."""
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
