"""The JIT's user-facing examples run: the README section and the docstrings of
`pytorchlite.jit.trace`, `pytorchlite.compile` and `pytorchlite.jit.script`."""

import doctest
import os
import re

import pytorchlite
from pytorchlite import jit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_readme_example_runs(tmp_path, monkeypatch, capsys):
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    code = re.search(r"<!-- jit-readme-example -->\n```python\n(.*?)```", text, re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "README.md", "exec"), {})
    assert "aten::sigmoid(" in capsys.readouterr().out
    assert (tmp_path / "gelu_ish.ptl").exists()


def test_docstring_examples():
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    for fn in (jit.trace, pytorchlite.compile, jit.script):
        for t in doctest.DocTestFinder(recurse=False).find(fn, fn.__name__, globs={}):
            runner.run(t)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted >= 6
