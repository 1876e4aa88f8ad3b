"""How much of PyTorch's public API pytorchlite has: `python -m pytorchlite.coverage`.

For each torch namespace the report lists the public names torch 2.x defines and whether
pytorchlite has the same name in the same place. It needs torch installed (it is the
measure); without it the command says so and exits with status 2.

What is counted, per namespace (`NAMESPACES`):

- `functions`: callables that are not classes (`torch.*`, `nn.functional`, `linalg`, ...);
- `classes`: classes (`torch.nn` modules, optimizers, schedulers);
- `callables`: both (`torch.autograd`, `torch.distributions`, `torch.func`, ...);
- `attributes`: every public attribute (Tensor's methods and properties).

A name is only counted when torch defines it (its `__module__` is torch's, so `typing`
and `math` names a module happens to import are left out) and when it is in scope: the
families in `EXCLUDED` (private names, quantization, sparse layouts, vendor backend
internals, symbolic-shape helpers, TorchScript's IR and futures) are out of scope for
pytorchlite and are reported apart (`--excluded`). A name pytorchlite has counts as
present; that it behaves as PyTorch's is what the tests check, not this report.

    python -m pytorchlite.coverage              # the Markdown table
    python -m pytorchlite.coverage --missing    # and the names lacking, per namespace
    python -m pytorchlite.coverage --write-readme README.md   # refresh the README's table
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from dataclasses import dataclass, field

# (label, torch path, pytorchlite path, kind). A path is a module, or `Tensor` for the
# methods of the tensor class.
NAMESPACES = [
    ("torch.*", "torch", "pytorchlite", "functions"),
    ("Tensor methods", "torch.Tensor", "pytorchlite.Tensor", "attributes"),
    ("torch.nn", "torch.nn", "pytorchlite.nn", "classes"),
    ("nn.functional", "torch.nn.functional", "pytorchlite.nn.functional", "functions"),
    ("nn.init", "torch.nn.init", "pytorchlite.nn.init", "functions"),
    ("nn.utils", "torch.nn.utils", "pytorchlite.nn.utils", "callables"),
    ("torch.autograd", "torch.autograd", "pytorchlite.autograd", "callables"),
    ("torch.linalg", "torch.linalg", "pytorchlite.linalg", "functions"),
    ("torch.special", "torch.special", "pytorchlite.special", "functions"),
    ("torch.fft", "torch.fft", "pytorchlite.fft", "functions"),
    ("torch.optim", "torch.optim", "pytorchlite.optim", "classes"),
    ("optim.lr_scheduler", "torch.optim.lr_scheduler", "pytorchlite.optim.lr_scheduler", "classes"),
    ("torch.distributions", "torch.distributions", "pytorchlite.distributions", "callables"),
    ("torch.func", "torch.func", "pytorchlite.func", "callables"),
    ("torch.amp", "torch.amp", "pytorchlite.amp", "callables"),
]

# Out-of-scope families: (family, name pattern, why). A name matching any pattern is not
# counted. The patterns are searched (re.search) in the name.
EXCLUDED = [
    ("private", r"^_", "not public API"),
    ("quantized", r"quantiz|^q_|^qint|^quint|^int_repr$|^qscheme$|^per_(tensor|channel)|^Quant|^fake_quant",
     "quantized tensors and quantization-aware training"),
    ("sparse", r"^sparse_(coo|csr|csc|bsr|bsc|compressed)_tensor$|^to_sparse|^is_sparse|^sparse_(mask|resize_"
     r"|resize_and_clear_|dim)$|^resize_as_sparse_$|^(crow|col|ccol|row)_indices$|^(indices|values)$|coalesce"
     r"|^dense_dim$|^(smm|sspaddmm|hspmm|saddmm|spmm)$",
     "sparse layouts (COO/CSR/CSC/BSR/BSC)"),
    ("backend internals", r"mkldnn|cudnn|miopen|fbgemm|nnpack|xnnpack|vulkan",
     "vendor-library internals (oneDNN, cuDNN, MIOpen, FBGEMM, NNPACK, Vulkan)"),
    ("symbolic shapes", r"^sym_|^Sym[A-Z]|^constrain_range|guard_size_oblivious",
     "symbolic-shape helpers of torch.compile/export"),
    ("TorchScript internals", r"^(import_ir_module|import_ir_module_from_buffer|merge_type_from_type_comment"
     r"|parse_ir|parse_schema|parse_type_comment|unify_type_list|fork|wait|get_file_path"
     r"|prepare_multiprocessing_environment|init_num_threads|compiled_with_cxx11_abi)$",
     "TorchScript's IR, parser and futures, and build-time introspection"),
]

_EXCLUDED_RE = [(family, re.compile(pattern), why) for family, pattern, why in EXCLUDED]


def excluded_family(name):
    """The out-of-scope family a public name belongs to, or None when it is in scope."""
    for family, rx, _ in _EXCLUDED_RE:
        if rx.search(name):
            return family
    return None


@dataclass
class Row:
    label: str
    have: list = field(default_factory=list)
    lack: list = field(default_factory=list)
    excluded: dict = field(default_factory=dict)   # name -> family

    @property
    def total(self):
        return len(self.have) + len(self.lack)

    @property
    def percent(self):
        return 100.0 * len(self.have) / self.total if self.total else 100.0


def _resolve(path):
    """The module or class at a dotted path, or None when pytorchlite has none there."""
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


def _defined_by_torch(obj):
    module = getattr(obj, "__module__", None)
    if isinstance(obj, (staticmethod, classmethod)):
        return True
    return module is None or module == "torch" or module.startswith("torch.")


def _counted(name, obj, kind):
    import types
    if isinstance(obj, types.ModuleType):
        return False
    if kind == "attributes":
        return True
    if not callable(obj) or not _defined_by_torch(obj):
        return False
    if kind == "functions":
        return not isinstance(obj, type)
    if kind == "classes":
        return isinstance(obj, type)
    return True


def torch_names(torch_path, kind):
    """{public name: out-of-scope family or None} of one torch namespace. A class another
    namespace imports from `torch` (`lr_scheduler.Tensor`) is torch's, not this one's."""
    import torch
    ns = _resolve(torch_path)
    out = {}
    for name in dir(ns):
        if name.startswith("__"):
            continue
        try:
            obj = getattr(ns, name)
        except Exception:
            continue
        if (ns is not torch and isinstance(obj, type) and getattr(torch, name, None) is obj
                and not obj.__module__.startswith(torch_path)):
            continue
        if _counted(name, obj, kind):
            out[name] = excluded_family(name)
    return out


def measure(namespaces=NAMESPACES):
    """One Row per namespace. Raises ImportError (with the reason) when torch is absent."""
    try:
        import torch  # noqa: F401
    except ImportError as e:
        raise ImportError("pytorchlite.coverage compares pytorchlite's API with PyTorch's: "
                          f"install torch to run it ({e})") from e
    rows = []
    for label, torch_path, ptl_path, kind in namespaces:
        row = Row(label)
        ours = _resolve(ptl_path)
        for name, family in sorted(torch_names(torch_path, kind).items()):
            if family is not None:
                row.excluded[name] = family
            elif ours is not None and hasattr(ours, name):
                row.have.append(name)
            else:
                row.lack.append(name)
        rows.append(row)
    return rows


def markdown_table(rows):
    import torch
    lines = [f"| namespace (torch {torch.__version__.split('+')[0]}) | have | in scope | % |",
             "| --- | ---: | ---: | ---: |"]
    for r in rows:
        lines.append(f"| `{r.label}` | {len(r.have)} | {r.total} | {r.percent:.0f}% |")
    have = sum(len(r.have) for r in rows)
    total = sum(r.total for r in rows)
    lines.append(f"| **all** | {have} | {total} | {100.0 * have / total:.0f}% |")
    return "\n".join(lines)


BEGIN = "<!-- coverage table: generated by `python -m pytorchlite.coverage --write-readme README.md` -->"
END = "<!-- end of coverage table -->"


def replace_table(text, table):
    """text with the part between the BEGIN and END markers replaced by table."""
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"the coverage table markers are missing: add\n{BEGIN}\n{END}\nwhere the table goes")
    return text[:start] + BEGIN + "\n" + table + "\n" + text[stop:]


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m pytorchlite.coverage",
                                description="pytorchlite's coverage of PyTorch's public API, per namespace")
    p.add_argument("--missing", action="store_true", help="list the in-scope names pytorchlite lacks")
    p.add_argument("--excluded", action="store_true", help="list the out-of-scope names, by family")
    p.add_argument("--write-readme", metavar="PATH", help="replace the table between the README's markers")
    args = p.parse_args(argv)
    try:
        rows = measure()
    except ImportError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    table = markdown_table(rows)
    print(table)
    if args.missing:
        for r in rows:
            if r.lack:
                print(f"\n{r.label} lacks ({len(r.lack)}): " + ", ".join(r.lack))
    if args.excluded:
        print("\nout of scope:")
        for family, pattern, why in EXCLUDED:
            names = sorted(f"{r.label}:{n}" for r in rows for n, f in r.excluded.items() if f == family)
            print(f"\n{family} ({why}): {len(names)}" + ("\n  " + ", ".join(names) if names and family != "private"
                                                          else ""))
    if args.write_readme:
        with open(args.write_readme, encoding="utf-8") as f:
            text = f.read()
        with open(args.write_readme, "w", encoding="utf-8") as f:
            f.write(replace_table(text, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
