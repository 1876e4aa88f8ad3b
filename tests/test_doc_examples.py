"""Every `>>>` example in an operator's docstring (generated from ops.yaml `doc:`) and in
the hand-written public functions runs and prints what it says."""

import doctest

import numpy as np
import pytest

import pytorchlite
from pytorchlite.generated import functions as F


def _documented():
    seen = {}
    for namespace, items in F.EXPORTS.items():
        for name, fn in items.items():
            if fn.__doc__ and ">>>" in fn.__doc__:
                seen[f"{namespace or 'pytorchlite'}.{name}"] = fn
    for name in ("tensor", "from_numpy", "from_dlpack", "result_type", "promote_types", "can_cast"):
        fn = getattr(pytorchlite, name)
        if fn.__doc__ and ">>>" in fn.__doc__:
            seen[f"pytorchlite.{name}"] = fn
    return sorted(seen.items())


@pytest.mark.parametrize("name, fn", _documented(), ids=[n for n, _ in _documented()])
def test_docstring_example(name, fn):
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS)
    globs = {"pytorchlite": pytorchlite, "np": np, "torch": pytorchlite}
    for test in finder.find(fn, name, globs=globs):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{name}: {result.failed} docstring example(s) failed"


def test_most_operators_have_examples():
    documented = {n for n, _ in _documented()}
    assert len(documented) >= 10
