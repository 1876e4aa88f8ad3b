"""How much of pytorchlite is declared, and how the code is layered: the figures issue 11
asks for, from the sources alone (nothing is imported or built).

    python tools/declaration_report.py            # this checkout
    python tools/declaration_report.py --root DIR # another checkout, to compare

Printed: operators by kind (pointwise, composite, structured, hand-written kernel) and by
device, hand-written code lines of the kernel entries (pytorchlite/_kernels/, without
blank lines, comments and docstrings) per kernel operator, import cycles at module level
and at any level, and imports of a backend from core modules (tests/test_layers.py's
definitions).
"""

import argparse
import importlib.util
import io
import os
import sys
import tokenize
from collections import Counter

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_lines(path):
    """Lines holding code: not blank, not comments, not docstring statements."""
    lines = set()
    prev = None
    with open(path, encoding="utf-8") as f:
        src = f.read()
    for t in tokenize.generate_tokens(io.StringIO(src).readline):
        if t.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                      tokenize.ENCODING, tokenize.ENDMARKER):
            continue
        if t.type == tokenize.STRING and (prev is None or prev.type in (tokenize.NEWLINE, tokenize.INDENT,
                                                                        tokenize.DEDENT, tokenize.NL)):
            prev = t
            continue
        lines.update(range(t.start[0], t.end[0] + 1))
        prev = t
    return len(lines)


def _layers_module(root):
    spec = importlib.util.spec_from_file_location("_layers", os.path.join(HERE, "tests", "test_layers.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.ROOT = root
    mod.MODULES = mod._modules()
    return mod


def report(root):
    sys.path.insert(0, root)
    try:
        from codegen.model import load_ops
        ops = load_ops(os.path.join(root, "ops.yaml"))
    finally:
        sys.path.remove(root)
        for name in [m for m in sys.modules if m == "codegen" or m.startswith("codegen.")]:
            del sys.modules[name]
    kinds = Counter()
    devices = Counter()
    for op in ops:
        kind = op.kind
        if kind == "kernel" and getattr(op, "structured", None) is not None:
            kind = "structured"
        kinds[kind] += 1
        if op.kind == "kernel":
            devices[", ".join(sorted(d for d, _ in op.kernels))] += 1
    kernel_ops = kinds["kernel"] + kinds["structured"]
    print(f"operators: {len(ops)} ({', '.join(f'{k} {n}' for k, n in sorted(kinds.items()))})")
    print(f"kernel operators by device: {', '.join(f'{d}: {n}' for d, n in sorted(devices.items()))}")
    # getattr: the report also reads older trees, whose operators have no `onnx:` forms
    with_onnx = sum(1 for op in ops if getattr(op.impl, "onnx", None) is not None)
    print(f"operators with an ONNX form (`onnx:`): {with_onnx} of {len(ops)} "
          "(`python -m codegen --onnx-report` lists the others)")
    kdir = os.path.join(root, "pytorchlite", "_kernels")
    total = 0
    for name in sorted(os.listdir(kdir)):
        if name.endswith(".py"):
            n = code_lines(os.path.join(kdir, name))
            total += n
            print(f"  pytorchlite/_kernels/{name}: {n} code lines")
    print(f"hand-written kernel-entry code: {total} lines, {total / max(kernel_ops, 1):.1f} per kernel operator "
          f"({kernel_ops} kernel operators, {kinds['structured']} of them structured)")

    layers = _layers_module(root)
    for label, module_level in (("module-level", True), ("any level (function-level imports too)", False)):
        graph = {n: {t for t, _ in layers._imports(n, module_level)
                     if t in layers.MODULES and t != n and t != "pytorchlite"} for n in layers.MODULES}
        cycles = layers._cycles(graph)
        core = sum(1 for c in cycles for m in c if layers._is_core(m))
        print(f"import cycles, {label}: {len(cycles)} ({sum(map(len, cycles))} modules, {core} of them core)")
    backend = [(n, t, line) for n in sorted(layers.MODULES) if layers._is_core(n)
               for t, line in layers._imports(n, False) if t.startswith(layers.BACKENDS)]
    print(f"core modules importing a backend: {len(backend)} import sites")
    for n, t, line in backend:
        print(f"  {n}:{line} -> {t}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=HERE, help="the checkout to measure (default: this one)")
    args = p.parse_args(argv)
    report(os.path.abspath(args.root))


if __name__ == "__main__":
    main()
