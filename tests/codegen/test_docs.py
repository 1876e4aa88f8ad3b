"""Every ```yaml snippet in README.md and docs/*.md is valid input: each document's
snippets go, in order, into a copy of derivatives.yaml (entries with `name:`) or ops.yaml
(the others), replacing the entry of the same operator, and codegen must accept the
result and generate the operators they declare. The first thing a user copies must work."""

import glob
import os
import re
import shutil

import pytest
import yaml

from codegen.gen import render_all
from codegen.model import CodegenError
from codegen.schema import parse_schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_BLOCK = re.compile(r"^```yaml[ \t]*\n(.*?)^```", re.M | re.S)


def _read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        return f.read()


def snippets(text):
    """(line, text) of each ```yaml block of a document."""
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)]


# the documents that have snippets (README.md and docs/ops_yaml.md must: tested below)
DOCS = [rel for rel in ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, "docs", "*.md")))
        if snippets(_read(rel))]


def _name(schema):
    return parse_schema(schema).name


def _merge(entries, new, key):
    """`entries` with each of `new` replacing the entry of the same operator (by its `key`
    schema), or appended."""
    index = {_name(e[key]): i for i, e in enumerate(entries) if key in e}
    for e in new:
        i = index.get(_name(e[key])) if key in e else None
        if i is None:
            if key in e:
                index[_name(e[key])] = len(entries)
            entries.append(e)
        else:
            entries[i] = e
    return entries


def _load(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return yaml.safe_load(f)




def test_the_docs_have_yaml_snippets():
    assert snippets(_read("README.md")), "README.md lost its 'Adding an operator' example"
    assert len(snippets(_read("docs/ops_yaml.md"))) >= 5


class SnippetError(Exception):
    pass


def run_snippets(doc, text, tmp_path):
    """Put a document's snippets into copies of the YAML files under tmp_path and run
    codegen on them; SnippetError names the snippet that is wrong."""
    ops, derivs = _load("ops.yaml"), _load("derivatives.yaml")
    declared = []
    for line, block in snippets(text):
        where = f"{doc}:{line}"
        try:
            entries = yaml.safe_load(block)
        except yaml.YAMLError as e:
            raise SnippetError(f"{where}: the snippet is not valid YAML: {e}") from None
        if not (isinstance(entries, list) and entries and all(isinstance(e, dict) for e in entries)):
            raise SnippetError(f"{where}: a snippet is a list of whole ops.yaml or derivatives.yaml entries")
        # derivatives.yaml entries are keyed by `name:`; everything else is ops.yaml's
        _merge(ops, [e for e in entries if "name" not in e], "func")
        _merge(derivs, [e for e in entries if "name" in e], "name")
        declared += [_name(e["func"]) for e in entries if "func" in e]
    for name, data in (("ops.yaml", ops), ("derivatives.yaml", derivs)):
        (tmp_path / name).write_text(yaml.safe_dump(data, sort_keys=False, width=1000), encoding="utf-8")
    if not (tmp_path / "kernels").exists():   # the C prototypes that structured kernels are checked against
        shutil.copytree(os.path.join(ROOT, "kernels"), tmp_path / "kernels")
    try:
        files = render_all(str(tmp_path))
    except CodegenError as e:
        raise SnippetError(f"{doc}: codegen rejects its snippets: {e}") from None
    missing = [name for name in declared if f"OP_{name} = " not in files["generated/dispatch.py"]]
    if missing:
        raise SnippetError(f"{doc}: not in the generated dispatch table: {', '.join(missing)}")
    return declared


@pytest.mark.parametrize("doc", DOCS)
def test_yaml_snippets_go_through_codegen(doc, tmp_path):
    declared = run_snippets(doc, _read(doc), tmp_path)
    if doc == "README.md":
        assert "softshrink_like" in declared


def test_a_snippet_that_is_not_yaml_is_caught(tmp_path):
    """The README's example before it was quoted: `: ` inside a plain `pointwise:` value."""
    doc = ("# Adding an operator\n\n```yaml\n- func: softshrink_like(Tensor self, *, Scalar lambd=0.5) -> Tensor\n"
           "  pointwise: self > lambd ? self - lambd : (self < -lambd ? self + lambd : 0)\n  dtypes: floating\n```\n")
    with pytest.raises(SnippetError, match=r"^README.md:4: the snippet is not valid YAML: mapping values"):
        run_snippets("README.md", doc, tmp_path)


def test_a_snippet_codegen_rejects_is_caught(tmp_path):
    doc = "```yaml\n- func: f(Tensor self) -> Tensor\n  pointwise: exp(self)\n  dtypes: all\n```\n"
    with pytest.raises(SnippetError, match="codegen rejects its snippets: .*function 'exp' has no"):
        run_snippets("doc.md", doc, tmp_path)
